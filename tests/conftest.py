"""Shared fixtures: a throw-away Luigi work directory, the location of ../shared/data and Beam's
portable job service."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

# libgomp (torch's OpenMP) is not fork-safe: once a process has run a multi-threaded torch op, a
# fork of it hangs in its first one. One OpenMP thread here (set before torch loads) for whatever
# a test forks; the tests build in process with one Luigi worker, so Luigi forks none of this one.
os.environ.setdefault("OMP_NUM_THREADS", "1")
from pathlib import Path

import luigi
import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """Real data folder (read-only): $PARANMT_SHARED_DATA or ../shared/data beside the repo."""
    return Path(os.environ.get("PARANMT_SHARED_DATA", REPO.parent / "shared" / "data"))


def squeezed(markdown: str) -> str:
    """A Markdown table with its column padding removed: ``| a | b |`` however wide the columns
    (pandas pads them), so tests can look for whole rows."""
    return "\n".join(re.sub(r"\s*(?<!\\)\|\s*", " | ", line).strip() for line in markdown.splitlines())


def require_shared(*parts: str) -> Path:
    """Path under the shared data folder, or skip the test saying what is missing."""
    path = shared_data().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    return path


@pytest.fixture(scope="session")
def kit_demo(tmp_path_factory):
    """The offline kit installed and the README's main command run from an empty folder, once
    for the session (tests/kit_demo.py)."""
    from kit_demo import kit_demo

    return kit_demo(tmp_path_factory.mktemp("kit-demo"))


# A hung test's own process prints its threads (pytest-timeout); the processes it forked or
# started (Luigi's workers, Beam's) print theirs on SIGUSR1, sent to each shortly before the
# timeout, so the report shows where the child that never answered is.
faulthandler.register(signal.SIGUSR1, all_threads=True)
CHILD_STACKS_BEFORE_TIMEOUT_S = 20


@pytest.fixture(autouse=True)
def child_stacks_before_timeout(request):
    """Ask every descendant process for its stacks ``CHILD_STACKS_BEFORE_TIMEOUT_S`` before the
    test's timeout."""

    def catches_sigusr1(pid: int) -> bool:
        """Whether ``pid`` handles SIGUSR1 (a forked child inherits faulthandler's handler; for a
        process that does not, SIGUSR1 would end it)."""
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGUSR1 - 1) & 1)
        return False

    def ask_descendants():
        for child in psutil.Process().children(recursive=True):
            if catches_sigusr1(child.pid):
                with contextlib.suppress(psutil.Error):
                    child.send_signal(signal.SIGUSR1)

    marker = request.node.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker and marker.args else float(request.config.getini("timeout") or 0)
    if timeout <= CHILD_STACKS_BEFORE_TIMEOUT_S:
        yield
        return
    timer = threading.Timer(timeout - CHILD_STACKS_BEFORE_TIMEOUT_S, ask_descendants)
    timer.daemon = True
    timer.start()
    yield
    timer.cancel()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Undo any test's torch.set_num_threads (the fairseq engine sets it) before the next test."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture
def shared_path():
    """``shared_path("csen", "wmt21")``: a real-data path, or skip the test naming what is absent."""
    return require_shared


@pytest.fixture
def luigi_workdir(tmp_path):
    """Point [paranmt] workdir at a temporary folder and run Beam in process, for one test."""
    config = luigi.configuration.get_config()
    saved = {key: config.get("paranmt", key, None)
             for key in ("workdir", "direct_num_workers", "runner", "beam_args", "dask_scheduler", "dask_translation_resource")}
    config.set("paranmt", "workdir", str(tmp_path / "work"))
    config.set("paranmt", "direct_num_workers", "1")
    config.set("paranmt", "runner", "DirectRunner")
    config.set("paranmt", "beam_args", "")
    config.set("paranmt", "dask_scheduler", "")
    config.set("paranmt", "dask_translation_resource", "")
    yield tmp_path / "work"
    for key, value in saved.items():
        if value is None:
            config.remove_option("paranmt", key)
        else:
            config.set("paranmt", key, value)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


@pytest.fixture
def job_server(tmp_path):
    """Beam's portable job service (what Flink and Spark runners submit to), on a free port."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "-p", str(port),
         "--staging_dir", str(tmp_path / "staging")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("localhost", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("job service did not start")
    yield f"localhost:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def portable_options(job_server):
    """Pipeline options that submit to the job service, the SDK worker in the submitting process
    (run it with :func:`in_fresh_process`)."""
    return ("--runner=PortableRunner", f"--job_endpoint={job_server}", "--environment_type=LOOPBACK")


def in_fresh_process(function, *args):
    """``function(*args)`` in a spawned process. A LOOPBACK pipeline leaves the SDK worker's gRPC
    threads running in the process that submitted it, and a later test that forks (Luigi's
    ``workers=2``) then crashes in the child; a spawned process takes them with it."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args).result()
