"""A small raw input is read in process, through the ``luigi`` command: no Beam worker process
starts for 300 lines (each costs seconds, and needs connections to 127.0.0.1, which some machines
refuse), with the worker count left to the input's size (``--paranmt-direct-num-workers 0``)."""

import os
import subprocess
import sys
import time

import pytest
from test_bad_input_cli import REPO, czeng_text
from test_worker_death import worker_processes

LINES = 300


def release_text(count: int) -> bytes:
    """ParaNMT release lines: reference TAB back-translation TAB score."""
    return "".join(f"Sentence {n} is here .\tthe sentence {n} is here .\t0.{n % 97:02d}\n" for n in range(count)).encode()


def workers_seen_while_running(command: list[str]) -> tuple[subprocess.CompletedProcess, set[int]]:
    """Run ``command``, looking for Beam SDK worker processes among its descendants ten times a
    second (a worker lives for seconds: it imports Beam before it works)."""
    run = subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: set[int] = set()
    deadline = time.monotonic() + 300
    while run.poll() is None and time.monotonic() < deadline:
        seen.update(process.pid for process in worker_processes(run))
        time.sleep(0.1)
    output = run.communicate(timeout=60)[0]
    return subprocess.CompletedProcess(command, run.returncode, output), seen


@pytest.mark.parametrize("task, option, name, text", [("IngestBitext", "--inputs", "small.train", czeng_text(LINES, "s")),
                                                      ("ImportParaphrases", "--files", "para-nmt-small.txt", release_text(LINES))],
                         ids=["ingest", "release import"])
def test_a_small_raw_input_is_read_without_worker_processes(tmp_path, task, option, name, text):
    path = tmp_path / name
    path.write_bytes(text)
    done, workers = workers_seen_while_running([sys.executable, "-m", "luigi", "--module", "workflows", task, option, str(path), "--local-scheduler",
                                                "--paranmt-workdir", str(tmp_path / "work"), "--paranmt-direct-num-workers", "0"])
    assert done.returncode == 0, done.stdout
    assert f"{LINES} lines" in done.stdout, done.stdout  # the plan the size came from
    assert not workers, f"{len(workers)} Beam worker process(es) started for {LINES} lines\n{done.stdout}"
