"""Fixtures the pipeline tests share: Beam's portable job service."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest


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
    """Pipeline options that submit to the job service, the SDK worker in this process."""
    return ("--runner=PortableRunner", f"--job_endpoint={job_server}", "--environment_type=LOOPBACK")
