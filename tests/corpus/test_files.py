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


def test_a_failed_write_leaves_the_old_output_and_the_next_write_clears_its_temporary(tmp_path):
    target = tmp_path / "data"
    target.mkdir()

    def half_then_fail(path):
        path.mkdir()
        (path / "half").write_text("x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_atomically(target, half_then_fail)
    assert target.is_dir() and not any(target.iterdir())  # the old output, untouched
    leftover = tmp_path / ".data.writing"
    assert leftover.exists()  # the killed write's temporary, until the same output is written again
    write_atomically(target, lambda p: (p.mkdir(), (p / "whole").write_text("y")))  # onto the empty old one
    assert not leftover.exists() and [p.name for p in target.iterdir()] == ["whole"]
