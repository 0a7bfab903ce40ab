"""A failed DirectRunner run with worker processes ends: a worker that connects after the
runner stopped its workers is told to exit, and a worker process that dies fails the run."""

import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import apache_beam as beam
import pytest
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.portability.fn_api_runner.worker_handlers import (
    BeamFnControlServicer,
    ControlConnection,
)

from pipelines.options import pipeline_options
from pipelines.worker_hangs import WorkerProcessDied
from workflows.console_errors import users_mistake


def test_a_worker_connecting_after_the_close_gets_its_queued_work_then_the_end_marker():
    pipeline_options()  # installs the fixes, as every pipeline of the project does
    connection = ControlConnection()
    work = beam_fn_api_pb2.InstructionRequest(instruction_id="queued before the worker connected")
    connection.push(work)
    connection.close()  # the runner stops its workers: this one has not opened its stream yet
    connection.set_input(iter([]))  # the worker connects
    with ThreadPoolExecutor(1) as reader:
        assert reader.submit(connection.get_req).result(timeout=10) == work
        assert reader.submit(connection.get_req).result(timeout=10) is BeamFnControlServicer._DONE_MARKER


@pytest.mark.timeout(120)  # it hung in about one try of four under load before the fix
def test_a_bundle_failing_at_once_on_two_worker_processes_ends_the_run():
    def fails_at_once(element):  # defined here: the workers unpickle it by value
        raise ValueError(f"element {element} fails")

    with pytest.raises(Exception, match="element 1 fails"), beam.Pipeline(options=pipeline_options("DirectRunner", 2)) as pipeline:
        _ = pipeline | beam.Create([1]) | beam.Map(fails_at_once)


def worker_processes() -> set[int]:
    found = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split()
    return {int(pid) for pid in found}


@pytest.mark.timeout(120)
def test_a_worker_process_killed_in_the_middle_of_its_work_fails_the_run_in_one_line():
    def killed(element):  # as the out-of-memory killer does
        os.kill(os.getpid(), signal.SIGKILL)

    before = worker_processes()
    with pytest.raises(WorkerProcessDied) as died, beam.Pipeline(options=pipeline_options("DirectRunner", 2)) as pipeline:
        _ = pipeline | beam.Create([1, 2, 3, 4]) | beam.Map(killed)
    assert users_mistake(died.value) == str(died.value) and "\n" not in str(died.value)
    assert "out of memory" in str(died.value) and "--paranmt-direct-num-workers" in str(died.value)
    assert worker_processes() <= before  # no worker process is left behind
