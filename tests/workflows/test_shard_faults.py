"""Faults in the middle of a large raw-input stage, through the ``luigi`` command: a kill -9 loses
only the shards being written (the rerun leaves the others as they were), and a disk that fills
is one line, after which the rerun, with space freed, finishes with the corpus of a clean run."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_work_directory import small_file_system  # noqa: F401 - a fixture

TASK_FAILED = 30  # luigi.cfg [retcode]
LINES = 40_000
SHARD_ROWS = 2_000


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """A plain release file of distinct pairs: cut into 20 shards by byte range."""
    path = tmp_path_factory.mktemp("release") / "para-nmt.txt"
    rng = random.Random(0)
    words = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{n}" for n in range(3_000)]
    with open(path, "w", encoding="utf-8") as out:
        for n in range(LINES):
            sentence = " ".join(rng.choices(words, k=10))
            out.write(f"{sentence} .\tthe {sentence} .\t0.{n % 97:02d}\n")
    return path


def command(workdir: Path, release: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "luigi", "--module", "workflows", "ImportParaphrases", "--files", str(release), "--shard-rows", str(SHARD_ROWS),
            "--local-scheduler", "--paranmt-workdir", str(workdir), "--paranmt-direct-num-workers", "2", *extra]


def parts(workdir: Path) -> dict[str, int]:
    """The written pairs parts of the import being built, with their modification times."""
    return {path.name: path.stat().st_mtime_ns for path in workdir.glob("import/.*.partial/pairs/part-*")}


def finished_pairs(workdir: Path) -> pd.DataFrame:
    return pd.read_parquet(workdir / "import" / "latest" / "pairs").sort_values("id", ignore_index=True)


@pytest.fixture(scope="module")
def clean_run(release, tmp_path_factory) -> pd.DataFrame:
    workdir = tmp_path_factory.mktemp("clean") / "work"
    subprocess.run(command(workdir, release), check=True, capture_output=True, timeout=600)
    return finished_pairs(workdir)


def test_a_killed_import_resumes_from_its_written_shards(release, clean_run, tmp_path):
    workdir = tmp_path / "work"
    run = subprocess.Popen(command(workdir, release), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(parts(workdir)) < 4:
        assert time.monotonic() < deadline and run.poll() is None, "the import wrote no shards before it ended"
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGKILL)  # the command, its runner and its workers, all started here
    run.wait()
    before = parts(workdir)
    assert 4 <= len(before) < LINES // SHARD_ROWS
    rerun = subprocess.run(command(workdir, release), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    after = {path.name: path.stat().st_mtime_ns for path in (workdir / "import" / "latest" / "pairs").glob("part-*")}
    assert {name: after[name] for name in before} == before, "a shard written before the kill was written again"
    assert len(after) == LINES // SHARD_ROWS
    pd.testing.assert_frame_equal(finished_pairs(workdir), clean_run)


def test_a_full_disk_is_one_line_and_the_rerun_with_space_finishes(release, clean_run, small_file_system, tmp_path):  # noqa: F811
    disk = small_file_system("size=1M")
    workdir = disk / "work"
    full = subprocess.run(command(workdir, release), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert full.returncode == TASK_FAILED
    errors = [line for line in (full.stdout + full.stderr).splitlines() if "No space left on device" in line]
    assert len(errors) == 1 and "Traceback" not in full.stdout + full.stderr, full.stdout + full.stderr
    written = parts(workdir)
    assert written, "no shard fitted: the test's disk is too small to see a resume"
    subprocess.run(["mount", "-o", "remount,size=64M", str(disk)], check=True)
    rerun = subprocess.run(command(workdir, release), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    after = {path.name: path.stat().st_mtime_ns for path in (workdir / "import" / "latest" / "pairs").glob("part-*")}
    assert {name: after[name] for name in written} == written
    pd.testing.assert_frame_equal(finished_pairs(workdir), clean_run)
