"""A DirectRunner worker process killed in the middle of a real ingest through Luigi (as the
out-of-memory killer does): the run ends (exit 30) with the one line that says so, whichever of
the runner's connections to the worker notices first, and nothing else; workers that cannot reach
the runner at all end it in the one line that says so."""

import contextlib
import gzip
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pipelines.worker_hangs import WORKER_CONNECT_SECONDS, why_a_worker_ended
from workflows.ingest import demo_corpus

TASK_FAILED = 30  # luigi.cfg [retcode]
DIED = "a Beam worker process stopped in the middle of its work"
UNREACHABLE = "could not connect to the runner"


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


@pytest.fixture
def refusing_port():
    """A local port bound and never listened on: connections to it are refused while the test holds it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_workers_that_cannot_reach_the_runner_end_the_run_in_one_line_saying_so(tmp_path, refusing_port):
    """Where connections to the runner on 127.0.0.1 fail (here through a gRPC proxy that refuses
    them, as a firewall or a sandbox does), the run says before it starts any worker that they
    could not connect, in seconds (each worker would wait Beam's 60 s twice), not that one was
    killed or out of memory."""
    unproxied = {key: value for key, value in os.environ.items() if key.lower() not in ("no_proxy", "no_grpc_proxy")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler",
                           "--paranmt-workdir", str(tmp_path / "work"), "--paranmt-direct-num-workers", "2"],
                          cwd=tmp_path, env={**unproxied, "grpc_proxy": f"http://127.0.0.1:{refusing_port}"}, capture_output=True, text=True,
                          timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == TASK_FAILED, output
    assert time.monotonic() - started < WORKER_CONNECT_SECONDS, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert UNREACHABLE in lines[-1] and "--paranmt-direct-num-workers 1" in lines[-1] and "memory" not in lines[-1], output
    assert all(line.split(" ", 1)[1].startswith("ingest: ") for line in lines[:-1]), output  # Beam's own reports of it kept off the console


def test_a_worker_that_gave_up_connecting_is_told_from_one_that_was_killed():
    """A worker that never opened its control stream and exited with status 1 after Beam's
    connection timeout could not connect (where the check before the run passed but the workers
    still could not: no test makes that happen in less than Beam's two minutes); one killed or
    exiting otherwise was not."""
    gave_up = why_a_worker_ended(True, "localhost:5", "Worker subprocess exited with return code 1", WORKER_CONNECT_SECONDS + 1)
    assert gave_up.startswith(f"a Beam worker process {UNREACHABLE} at localhost:5") and "--paranmt-direct-num-workers 1" in gave_up
    for never_connected, exited, seconds in ((True, "Worker subprocess exited with return code -9", 70),
                                             (True, "Worker subprocess exited with return code 1", 3),
                                             (False, "Worker subprocess exited with return code 1", 70)):
        assert DIED in why_a_worker_ended(never_connected, "localhost:5", exited, seconds)
