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
   requests still waiting for it, so the run fails and says which exit status ended it.
"""

from __future__ import annotations

import threading

from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import worker_handlers

_Servicer = worker_handlers.BeamFnControlServicer


class WorkerProcessDied(RuntimeError):
    """A DirectRunner worker process ended while the runner waited for its work."""


def _close_even_before_the_worker_connects(self: worker_handlers.ControlConnection) -> None:
    with worker_handlers.ControlConnection._lock:
        self.push(_Servicer._DONE_MARKER)
        if self._state == _Servicer.STARTED_STATE:
            self._read_thread.join()
        self._state = _Servicer.DONE_STATE


def _start_watched_worker(self: worker_handlers.SubprocessSdkWorkerHandler) -> None:
    """Beam's ``start_worker``, with the worker's thread failing its pending requests on exit."""
    self.worker = local_job_service.SubprocessSdkWorker(self._worker_command_line, self.control_address, self.provision_info, self.worker_id)
    self.worker_thread = threading.Thread(name="run_worker", target=_run_worker, args=(self,))
    self.worker_thread.start()


def _run_worker(handler: worker_handlers.SubprocessSdkWorkerHandler) -> None:
    try:
        handler.worker.run()
    except RuntimeError as exited:  # Beam's "Worker subprocess exited with return code N"
        handler.control_conn.abort(WorkerProcessDied(
            f"a Beam worker process stopped in the middle of its work ({exited}): killed, out of memory, or crashed;"
            " fewer worker processes (--paranmt-direct-num-workers) need less memory"))


def fix_worker_hangs() -> None:
    """Install both fixes in this process, the runner's (idempotent)."""
    worker_handlers.ControlConnection.close = _close_even_before_the_worker_connects
    worker_handlers.SubprocessSdkWorkerHandler.start_worker = _start_watched_worker
