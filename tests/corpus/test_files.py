import threading

import pytest

from corpus.files import write_atomically


def test_a_file_directory_or_link_appears_whole_and_replaces_the_old_one(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_atomically(target, lambda p: p.write_text("new"))
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]

    directory = tmp_path / "data"
    write_atomically(directory, lambda p: (p.mkdir(), (p / "part").write_text("x")))
    assert (directory / "part").read_text() == "x"

    (tmp_path / "v1").mkdir(), (tmp_path / "v2").mkdir()
    link = tmp_path / "latest"
    write_atomically(link, lambda p: p.symlink_to("v1"))
    write_atomically(link, lambda p: p.symlink_to("v2"))
    assert link.resolve().name == "v2"


def test_concurrent_writers_of_one_link_do_not_collide(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    errors = []

    def point(name):
        try:
            for _ in range(200):
                write_atomically(tmp_path / "latest", lambda p: p.symlink_to(name))
        except OSError as error:  # pragma: no cover - the failure this test guards against
            errors.append(error)

    threads = [threading.Thread(target=point, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and (tmp_path / "latest").resolve().name in {"a", "b"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "latest"]


def test_a_failed_write_leaves_the_old_output_and_no_temporary(tmp_path):
    target = tmp_path / "data"
    target.mkdir()

    def half_then_fail(path):
        path.mkdir()
        (path / "half").write_text("x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_atomically(target, half_then_fail)
    assert [p.name for p in tmp_path.iterdir()] == ["data"] and not any(target.iterdir())


def test_clear_stale_removes_what_a_killed_run_left(tmp_path):
    stale = tmp_path / ".data.0123.writing"
    stale.mkdir()
    (stale / "half").write_text("x")
    write_atomically(tmp_path / "data", lambda p: p.mkdir(), clear_stale=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
