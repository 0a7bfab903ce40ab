"""Runs that share Luigi's central scheduler (``luigid``).

The scheduler knows a task by its id, and takes two tasks with one id for one task. Luigi makes the
id from the task's family and significant parameters; the work directory is a setting
(``[paranmt] workdir``), not a parameter, so two runs on two work directories would share the ids
of tasks that build different outputs: the second built nothing, or was refused tasks the other had
just finished. Every task here adds its work directory to its id (``WorkDirectoryTask``).

A run that needs a task another run is running waits for it, and a task it did not run itself
counts as complete when its output exists at the end (``WaitingWorker``): Luigi's worker stopped
(exit 10) or, with ``--worker-keep-alive``, waited but still exited 10.
"""

from __future__ import annotations

import hashlib
import os

import luigi
import luigi.interface
import luigi.worker
from luigi.task_status import DONE, PENDING

from workflows.config import paranmt
from workflows.console import STAGES as log


def work_directory_digest(workdir: str) -> str:
    """A short digest of the work directory's real path: one folder under any of its names."""
    return hashlib.sha256(os.path.realpath(workdir).encode()).hexdigest()[:8]


class WorkDirectoryTask(luigi.Task):
    """A task whose Luigi id names the work directory it builds in.

    The id is Luigi's own (family and significant parameters: ``portable_task_id``, the one the
    manifest records) with a digest of the work directory's real path appended. The command line,
    the parameters and the fingerprints (the output folders' names) do not change, so outputs stay
    relocatable. The id is fixed when the task object is made, and Luigi reuses a task object for
    the same parameters within a process: a process talks to a central scheduler about one work
    directory."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.portable_task_id = self.task_id
        self.task_id = f"{self.portable_task_id}_{work_directory_digest(paranmt().workdir)}"


class WaitingWorker(luigi.worker.Worker):
    """Luigi's worker, waiting for the tasks this run needs that another run is running.

    Luigi's worker stops when no task is left that it may run; one that another run (another
    worker of the same central scheduler) is running stays pending in its summary: exit 10.
    ``--worker-keep-alive`` makes it wait, but also for failed tasks to be retried (15 minutes
    later, without end), and the tasks the other run finished still count as not run by this one.
    This worker waits while a task it needs runs elsewhere, and at the end counts a task still
    pending here whose output now exists as found complete, as it would at the start of a run
    (``latest`` then points at it and the run prints its result). With the local scheduler no
    other run shares the tasks, so nothing changes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._waited_for: set[str] = set()

    def _keep_alive(self, get_work_response) -> bool:
        """Whether to ask again later: while another run runs a task this one needs (said once
        per task), or as Luigi's worker decides."""
        elsewhere = [running for running in get_work_response.running_tasks if running["worker"] != self._id]
        for running in elsewhere:
            if running["task_id"] not in self._waited_for and running["task_id"] in self._scheduled_tasks:
                self._waited_for.add(running["task_id"])
                log.info("waiting for %s, which another run is running (pid %s on %s)",
                         self._scheduled_tasks[running["task_id"]].task_family, running.get("pid"), running.get("host"))
        return bool(elsewhere) or super()._keep_alive(get_work_response)

    def run(self) -> bool:
        succeeded = super().run()
        self._count_found_complete()
        return succeeded

    def _count_found_complete(self) -> None:
        """Tasks still pending in this run's summary whose outputs exist (another run built
        them) become found complete, and no longer count as run by another worker; one this run
        waited for that is still incomplete is said in one line."""
        settled = {task for task, status, _ in self._add_task_history if status != PENDING}
        pending = [task for task, _, _ in self._add_task_history if task not in settled]
        found = {task for task in dict.fromkeys(pending) if task.complete()}
        for task in {self._scheduled_tasks[task_id] for task_id in self._waited_for}.intersection(pending) - found:
            log.warning("%s: the run that was running it stopped without completing it; run the command again to build it", task.task_family)
        if not found:
            return
        self._add_task_history = [(task, DONE if task in found else status, runnable) for task, status, runnable in self._add_task_history]
        found_ids = {task.task_id for task in found}
        for response in self._get_work_response_history:
            response["running_tasks"] = [running for running in response["running_tasks"] if running["task_id"] not in found_ids]
        for task in reversed(dict.fromkeys(pending)):  # the command's own task, scheduled first, last
            if task in found:
                task.trigger_event(luigi.Event.DEPENDENCY_PRESENT, task)


class _WaitingWorkerFactory(luigi.interface._WorkerSchedulerFactory):
    def create_worker(self, scheduler, worker_processes, assistant=False):
        return WaitingWorker(scheduler=scheduler, worker_processes=worker_processes, assistant=assistant)


# What the `luigi` command and luigi.build make their worker with (when not given a factory).
luigi.interface._WorkerSchedulerFactory = _WaitingWorkerFactory
