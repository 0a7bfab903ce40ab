"""A DirectRunner worker process killed in the middle of a real ingest through Luigi (as the
out-of-memory killer does): the run ends (exit 30) with the one line that says so, whichever of
the runner's connections to the worker notices first, and nothing else."""

import contextlib
import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from workflows.ingest import demo_corpus

TASK_FAILED = 30  # luigi.cfg [retcode]
DIED = "a Beam worker process stopped in the middle of its work"


def worker_processes(run: subprocess.Popen) -> list[psutil.Process]:
    """The Beam SDK worker processes among ``run``'s descendants (their own, not a shell's: they
    are started with exec), by pid; a Beam job beside the test is none of them."""
    found = []
    for process in psutil.Process(run.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):  # ended since the listing
            command = process.cmdline()
            if "apache_beam.runners.worker.sdk_worker_main" in command and not command[0].endswith("sh"):
                found.append(process)
    return sorted(found, key=lambda process: process.pid)


def left_in_group(group: int) -> list[str]:
    """The command lines of the live processes in process group ``group`` (a zombie has ended: it
    waits for its new parent to reap it)."""
    left = []
    for process in psutil.process_iter(["status", "cmdline"]):
        with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
            if os.getpgid(process.pid) == group and process.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(" ".join(process.info["cmdline"] or []))
    return left


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


@pytest.mark.parametrize("victim, after", [(0, 2.0), (-1, 2.0), (0, 0.0)], ids=["first, working", "last, working", "first, starting"])
def test_a_killed_worker_process_ends_the_run_in_one_line(big_input, tmp_path, victim, after):
    """The worker killed is one of the run's, and what it leaves behind is looked for in its own
    process group: a Beam job running beside the test is neither. Killed as it starts (before it
    connects to the runner), it hung the run before pipelines/worker_hangs.py failed its requests."""
    run = subprocess.Popen([sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler", "--inputs", str(big_input),
                            "--paranmt-workdir", str(tmp_path / "work"), "--paranmt-direct-num-workers", "2"],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(started := worker_processes(run)) < 2:
            assert time.monotonic() < deadline and run.poll() is None, "the two worker processes did not start"
            time.sleep(0.2)
        time.sleep(after)
        started[victim].kill()
        output = run.communicate(timeout=300)[0]
        assert run.returncode == TASK_FAILED, output
        lines = [line for line in output.splitlines() if line.strip()]
        assert DIED in lines[-1] and "--paranmt-direct-num-workers" in lines[-1], output
        assert all(line.split(" ", 1)[1].startswith("ingest: ") for line in lines[:-1]), output  # only the stage's own progress before it
        assert not (left := left_in_group(run.pid)), left  # none left behind
    finally:
        if run.poll() is None:  # the test stopped before the run ended: end it and its workers
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
