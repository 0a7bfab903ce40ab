"""The work directory read-only, full, or a file: one line and a non-zero exit, and nothing left
that looks finished."""

import subprocess

import pytest
from test_bad_input_cli import TASK_FAILED, run_luigi


@pytest.fixture
def small_file_system(tmp_path):
    """A 128 KiB tmpfs mounted for the test (needs root; skipped where mounting is not allowed)."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()

    def mount(options: str):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        return mount_point

    yield mount
    subprocess.run(["umount", str(mount_point)], capture_output=True)


def assert_one_line(result, expected):
    output = result.stdout + result.stderr
    assert result.returncode == TASK_FAILED, output
    assert "Traceback" not in output, output
    assert [line for line in output.splitlines() if "ERROR" in line] == [
        next(line for line in output.splitlines() if expected in line)], output


def test_a_full_disk_is_one_line_and_leaves_nothing_that_looks_finished(small_file_system):
    fs = small_file_system("size=128k")
    (fs / "filler").write_bytes(b"\0" * 70_000)  # the demo's bitext does not fit in what is left
    result = run_luigi(fs / "work", "IngestBitext")
    assert_one_line(result, f"{fs / 'work'}: No space left on device")
    assert not list((fs / "work").rglob("_SUCCESS")) and not (fs / "work" / "ingest" / "latest").exists()
    (fs / "filler").unlink()
    assert run_luigi(fs / "work", "IngestBitext").returncode == 0  # space freed: the stage runs again
    assert (fs / "work" / "ingest" / "latest" / "_SUCCESS").exists()


def test_a_read_only_work_directory_is_one_line(small_file_system):
    fs = small_file_system("size=128k,ro")
    assert_one_line(run_luigi(fs / "work", "IngestBitext"), f"{fs / 'work'}: Read-only file system")


def test_a_file_where_the_work_directory_should_be_is_one_line(tmp_path):
    (tmp_path / "work").write_text("not a folder")
    assert_one_line(run_luigi(tmp_path / "work", "IngestBitext"), f"{tmp_path / 'work' / '.locks'}: Not a directory")
    assert (tmp_path / "work").read_text() == "not a folder"
