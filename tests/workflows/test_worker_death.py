"""A DirectRunner worker process killed in the middle of a real ingest through Luigi (as the
out-of-memory killer does): the run ends (exit 30) with the one line that says so, whichever of
the runner's connections to the worker notices first, and nothing else."""

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflows.ingest import demo_corpus

TASK_FAILED = 30  # luigi.cfg [retcode]
DIED = "a Beam worker process stopped in the middle of its work"


def worker_processes() -> list[int]:
    """Beam's SDK worker processes (their own, not a shell's: they are started with exec)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"apache_beam.runners.worker.sdk_worker_main" in command and not command[0].endswith(b"sh"):
            found.append(int(pid))
    return sorted(found)


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    """200,000 CzEng lines (the demo's, renumbered): an ingest of several seconds."""
    path = tmp_path_factory.mktemp("big") / "big.train.gz"
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        lines = [line.split("\t", 1)[1] for line in handle]
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for block in range(500):
            out.write("".join(f"news-b{block}-{n}\t{line}" for n, line in enumerate(lines)))
    return path


@pytest.mark.parametrize("victim", [0, -1])
def test_a_killed_worker_process_ends_the_run_in_one_line(big_input, tmp_path, victim):
    before = set(worker_processes())
    run = subprocess.Popen([sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler", "--inputs", str(big_input),
                            "--paranmt-workdir", str(tmp_path / "work"), "--paranmt-direct-num-workers", "2"],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while len(started := [pid for pid in worker_processes() if pid not in before]) < 2:
        assert time.monotonic() < deadline and run.poll() is None, "the two worker processes did not start"
        time.sleep(0.2)
    time.sleep(2)  # in the middle of their work
    os.kill(started[victim], signal.SIGKILL)
    output = run.communicate(timeout=300)[0]
    assert run.returncode == TASK_FAILED, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert DIED in lines[-1] and "--paranmt-direct-num-workers" in lines[-1], output
    assert all(line.split(" ", 1)[1].startswith("ingest: ") for line in lines[:-1]), output  # only the stage's own progress before it
    assert not set(worker_processes()) - before  # none left behind
