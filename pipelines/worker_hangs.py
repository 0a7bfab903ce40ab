"""Fixes for two hangs of Beam's DirectRunner with worker processes (apache-beam 2.77), where a
failed run never ended instead of exiting non-zero.

1. **A worker still starting when the run stops.** When a bundle fails in one worker process,
   the runner stops every worker at once, by sending an end marker on each worker's control
   stream, but only where that stream is already open (``ControlConnection.close`` checks its
   state). A worker still starting (importing Beam takes seconds on a loaded machine) opens its
   stream afterwards, receives the work queued for it, then waits for the next request forever,
   while the runner waits for it to exit. Seen in this project's suite once per full run on 2
   loaded cores; 5 runs in 18 of a bundle failing at once hung. The fixed ``close`` queues the
   end marker whatever the state, so a late worker reads it after its queued work and exits.
2. **A worker process that dies** (the kernel's out-of-memory killer, a crash in native code):
   the runner waited forever for the answer to the bundle it had sent. Beam's Docker workers
   are watched for this; its subprocess workers were not. Now the worker's exit fails the
   requests waiting for it, and a failed request counts as answered where the runner waits for
   the bundle's output (Beam's ``abort_callback`` asks ``is_done``, which was true only for an
   answer). Before the last, a worker killed as it started (before it connected, so no broken
   connection told the runner) hung the run 3 times in 3
   (docs/2026-11-28-paper-size-end-to-end.md). The run fails and says which exit status
   ended it, or, for workers that never reached the runner (connections to 127.0.0.1 refused
   or dropped: each waits 60 s for its logging and its control connection, then exits with
   status 1), that they could not connect. Before a run's first pipeline with worker processes,
   ``loopback_problem`` tries such a connection itself, so where none can be made the run ends in
   seconds, not after the workers' two minutes.

And one that made a worker's death loud: the runner's threads that read the dead worker's
streams, its data plane and its clean-up each report the broken connection (up to 215 lines of
tracebacks in a 400k-line ingest), and the data plane's error ("Channel closed prematurely") may
reach the pipeline before the worker's exit does. ``one_line_if_a_worker_dies`` makes the run's
error the dead worker's one line whichever comes first, and keeps the rest off the console.
Workers are started with ``exec``, so the process the runner watches is the worker itself (a
shell in between reported the death on its own, and killed alone left the worker running,
orphaned, retrying its logging connection).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import grpc
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import worker_handlers

_Servicer = worker_handlers.BeamFnControlServicer


class WorkerProcessDied(RuntimeError):
    """A DirectRunner worker process ended while the runner waited for its work."""


class RunnerUnreachable(RuntimeError):
    """A worker process could not connect to the runner here (``loopback_problem``)."""


# The deaths of worker processes this process's runners saw, in order (one line each).
_deaths: list[str] = []
# How long an error that a dead worker causes may come before its death is seen.
DEATH_NOTICE_SECONDS = 10.0
# How long a Beam worker waits for each of its connections to the runner (logging, then control)
# before it gives up and exits with status 1 (Beam's ``channel_ready_future(…).result(timeout=60)``
# in ``log_handler.FnApiLogRecordHandler`` and ``sdk_worker.SdkHarness``).
WORKER_CONNECT_SECONDS = 60.0
# How long ``loopback_problem`` waits for its connection (one on loopback is ready in milliseconds).
LOOPBACK_CHECK_SECONDS = 10.0
UNREACHABLE_WHY = ("connections to 127.0.0.1 are refused or dropped here (a firewall, a sandbox, loopback down, or grpc_proxy/http_proxy"
                   " without no_proxy=localhost); --paranmt-direct-num-workers 1 runs each stage in process, without worker processes")


@functools.cache
def loopback_problem() -> str:
    """'' when a gRPC connection from this process to a server in it, addressed as Beam's worker
    processes address the runner (``localhost:PORT``, a server on ``[::]``), is ready within
    LOOPBACK_CHECK_SECONDS; else the one line why the workers could not connect. A worker
    inherits this process's environment (grpc_proxy and the like) and network, so where this
    fails, each worker would wait WORKER_CONNECT_SECONDS twice and then exit. Once a process."""
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("[::]:0")
    server.start()
    try:
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=LOOPBACK_CHECK_SECONDS)
    except grpc.FutureTimeoutError:
        return (f"Beam's worker processes could not connect to the runner: a connection to localhost:{port} in this process was not"
                f" ready after {LOOPBACK_CHECK_SECONDS:.0f} s: {UNREACHABLE_WHY}")
    finally:
        server.stop(grace=None)
    return ""


def _close_even_before_the_worker_connects(self: worker_handlers.ControlConnection) -> None:
    with worker_handlers.ControlConnection._lock:
        self.push(_Servicer._DONE_MARKER)
        if self._state == _Servicer.STARTED_STATE:
            self._read_thread.join()
        self._state = _Servicer.DONE_STATE


def _start_watched_worker(self: worker_handlers.SubprocessSdkWorkerHandler) -> None:
    """Beam's ``start_worker``, with the worker's thread failing its pending requests on exit."""
    command = self._worker_command_line  # bytes, as the runner's provisioning sends it
    command = command if command.startswith(b"exec ") else b"exec " + command
    self.worker = local_job_service.SubprocessSdkWorker(command, self.control_address, self.provision_info, self.worker_id)
    self.worker_thread = threading.Thread(name="run_worker", target=_run_worker, args=(self,))
    self.worker_thread.start()


def _run_worker(handler: worker_handlers.SubprocessSdkWorkerHandler) -> None:
    started = time.monotonic()
    try:
        handler.worker.run()
    except RuntimeError as exited:  # Beam's "Worker subprocess exited with return code N"
        never_connected = getattr(handler.control_conn, "_input", "unknown") is None  # Beam 2.77's: set when the worker's control stream opens
        died = WorkerProcessDied(why_a_worker_ended(never_connected, handler.control_address, str(exited), time.monotonic() - started))
        _deaths.append(str(died))
        handler.control_conn.abort(died)


def why_a_worker_ended(never_connected: bool, control_address: str, exited: str, seconds: float) -> str:
    """The one line for a worker process that ended under the runner at ``control_address``
    (``exited``: Beam's message, after ``seconds``): one that never opened its control stream and
    exited by itself (status 1, not a signal) after Beam's connection timeout could not reach the
    runner (loopback refused or dropped: a firewall, a sandbox, a gRPC proxy setting); any other
    was killed, ran out of memory or crashed."""
    if never_connected and exited.endswith("return code 1") and seconds >= WORKER_CONNECT_SECONDS:
        return (f"a Beam worker process could not connect to the runner at {control_address}"
                f" (it gave up after {seconds:.0f} s): {UNREACHABLE_WHY}")
    return (f"a Beam worker process stopped in the middle of its work ({exited}): killed, out of memory, or crashed;"
            " fewer worker processes (--paranmt-direct-num-workers) need less memory")


def _answered_or_failed(self: worker_handlers.ControlFuture) -> bool:
    return self._response is not None or self._exception is not None


def _caused_by_a_death(error: BaseException | None, died: Callable[[], bool]) -> bool:
    """Whether a worker died, waiting up to DEATH_NOTICE_SECONDS for its death to be seen when
    ``error`` is what a broken connection to a worker gives (it may come first)."""
    deadline = time.monotonic() + DEATH_NOTICE_SECONDS
    while not died() and error is not None and _a_connection_broke(error) and time.monotonic() < deadline:
        time.sleep(0.1)
    return died()


class _QuietAfterDeath(logging.Filter):
    """Drops Beam's records once a worker died: each says the connection to it broke."""

    def __init__(self, died: Callable[[], bool]):
        super().__init__()
        self.died = died

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (record.name.startswith("apache_beam") and _caused_by_a_death(error, self.died))


@contextmanager
def one_line_if_a_worker_dies() -> Iterator[Callable[[], bool]]:
    """Run a pipeline so that a worker process dying in it is one line: the error it ends with
    is WorkerProcessDied (also when another error caused by the death comes first: it waits up
    to DEATH_NOTICE_SECONDS for the death to be seen), and once a worker died, Beam's log records
    and the tracebacks of threads that lost their connection to it are not shown. Yields whether
    a worker died (for the reader of the workers' own output)."""
    seen = len(_deaths)

    def died() -> bool:
        return len(_deaths) > seen

    quiet = _QuietAfterDeath(died)
    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(quiet)
    thread_hook = threading.excepthook
    threading.excepthook = lambda args: None if _caused_by_a_death(args.exc_value, died) else thread_hook(args)
    try:
        yield died
    except Exception as error:  # noqa: BLE001 - whatever a dead worker caused becomes its one line
        if not isinstance(error, WorkerProcessDied) and _caused_by_a_death(error, died):
            raise WorkerProcessDied(_deaths[seen]) from None
        raise
    finally:
        threading.excepthook = thread_hook
        for handler in handlers:
            handler.removeFilter(quiet)


def _a_connection_broke(error: BaseException) -> bool:
    """Whether ``error`` is what a broken connection to a worker gives the runner."""
    return type(error).__name__ == "RpcError" or any(sign in str(error) for sign in ("Channel closed prematurely", "StatusCode.UNAVAILABLE"))


def fix_worker_hangs() -> None:
    """Install both fixes in this process, the runner's (idempotent)."""
    worker_handlers.ControlConnection.close = _close_even_before_the_worker_connects
    worker_handlers.ControlFuture.is_done = _answered_or_failed
    worker_handlers.SubprocessSdkWorkerHandler.start_worker = _start_watched_worker
