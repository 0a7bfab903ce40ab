"""What errors the console shows: a user's mistake in one line, a bug with its traceback.

A user's mistake (an InputError of our checks, a parameter Luigi cannot read, a storage error, a
Beam worker process that died) is said once, in one line naming the task, by the filters that
``install`` puts on Luigi's and Beam's loggers; while a Beam pipeline runs in worker processes,
their tracebacks of such mistakes are dropped from the standard error they share with this one
(``worker_tracebacks_dropped``). After a Ctrl-C nothing more is reported (workflows.console says it).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import luigi
from luigi.task_register import Register

from corpus.errors import InputError
from pipelines.worker_hangs import RunnerUnreachable, WorkerProcessDied
from workflows.config import paranmt
from workflows.console import interrupted


def users_mistake(error: BaseException | None) -> str:
    """The one line for an error that is the user's mistake ('' for a bug): an InputError (our
    checks), and every error Luigi raises while it reads a parameter's value (a number that is
    not one, a choice not offered, a value out of its range, a parameter unknown or missing),
    named by the parameter it was reading; a central scheduler that does not answer; a Beam
    worker process that died (the out-of-memory killer) or could not connect."""
    if isinstance(error, InputError | luigi.parameter.ParameterException | WorkerProcessDied | RunnerUnreachable):
        return str(error)
    if isinstance(error, luigi.rpc.RPCError):
        return f"{error}: is luigid running there? (--local-scheduler runs without it)"
    if storage := _storage_problem(error):
        return storage
    if isinstance(error, RuntimeError) and (in_worker := worker_mistake(str(error))):
        return in_worker
    if (frames := _luigi_frames(error, "parameter.py")) is not None:
        return f"{_parameter_named(frames)}{error}"
    context = error.__cause__ or error.__context__ if error is not None else None
    if (frames := _luigi_frames(error, "task.py")) is not None and (inner := _luigi_frames(context, "parameter.py")) is not None:
        return f"{_parameter_named(inner) or _parameter_named(frames)}{context}"  # Luigi re-raised it
    return ""


# Errors of the place outputs are written, not of the code: a read-only or full file system, a
# quota, no permission, a file where a folder should be.
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR}


def _storage_problem(error: BaseException | None) -> str:
    """``<path>: <reason>`` for a storage error anywhere in ``error``'s chain (a Beam worker's
    error arrives wrapped in the runner's), naming the work directory when the system names no
    file; '' for anything else."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _STORAGE_ERRNOS:
            return f"{error.filename or paranmt().workdir}: {error.strerror}"
        error = error.__cause__ or error.__context__
    return ""


# The line that ends a traceback: ``name: message``, Beam's ``[while running 'step']`` after it.
_ERROR_LINE = re.compile(r"^(?:RuntimeError: )?([A-Za-z_][\w.]*): (.*?)(?: \[while running '[^']*'\])*$", re.MULTILINE)
_OS_ERROR = re.compile(r"^\[Errno (\d+)\] ([^:]+)(?:: '(.*)')?$")


def _mistake_names(kind: type = InputError) -> set[str]:
    return {kind.__name__}.union(*(_mistake_names(sub) for sub in kind.__subclasses__()))


def worker_mistake(text: str) -> str:
    """The one line for a user's mistake or a storage error that a Beam worker process met,
    from the traceback text the runner passes on (its error arrives as a RuntimeError holding
    the worker's traceback, or in a log record): '' when the text's last error is neither."""
    text = text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')  # a log record's escaped traceback
    for name, message in reversed(_ERROR_LINE.findall(text)):
        if name.rsplit(".", 1)[-1] in _mistake_names():
            return message
        if (system := _OS_ERROR.match(message)) and int(system[1]) in _STORAGE_ERRNOS:
            return f"{system[3] or paranmt().workdir}: {system[2]}"
        if not name.endswith("Error"):
            continue  # a line of the traceback that only looks like an error's
        return ""
    return ""


@contextmanager
def worker_tracebacks_dropped(worker_died: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """DirectRunner worker processes print a failing bundle's traceback on the standard error
    they share with this process, besides sending it to the runner; when its error is the
    user's mistake (``worker_mistake``), or follows the death of a worker process
    (``worker_died``: the run's error says it), Luigi's one line says it, so while the pipeline
    runs standard error goes through a pipe whose reader drops those tracebacks and passes every
    other line on."""
    sys.stderr.flush()
    terminal, (read_end, write_end) = os.dup(2), os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    reader = threading.Thread(target=pass_on_all_but_mistakes, args=(read_end, terminal, worker_died), daemon=True)
    reader.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)  # the workers have exited: the pipe's last writer is gone
        reader.join(timeout=10)


_CHAINED = (b"During handling of the above exception", b"The above exception was the direct cause")
# Lines that start a block held back with its traceback: Python's own, a thread's, and a Beam
# worker's report that it could not reach the runner's logging service (its traceback follows).
_BLOCK_STARTS = (b"Traceback (most recent call last):", b"Exception in thread ", b"Failed to set up logging handler")


def pass_on_all_but_mistakes(read_end: int, terminal: int, worker_died: Callable[[], bool]) -> None:
    """Copy lines from ``read_end`` to ``terminal``, leaving out each traceback block (from
    ``Traceback (most recent call last):`` to the blank line after its error, chained ones
    included) whose last error is the user's mistake; after a Ctrl-C, nothing (worker processes
    still importing when it came print their tracebacks interleaved, which no block holds)."""
    block: list[bytes] = []
    with os.fdopen(read_end, "rb") as pipe, os.fdopen(terminal, "wb", buffering=0) as out:
        for line in pipe:
            if interrupted():
                block = []
                continue
            if block and block[-1].strip() == b"" and not line.startswith(_CHAINED) and not block[-2].startswith((b" ", b"\n", *_CHAINED)):
                _said(block, out, worker_died)
                block = []
            if block or line.startswith(_BLOCK_STARTS):
                block.append(line)
            else:
                out.write(line)
        _said(block, out, worker_died)


def _said(block: list[bytes], out, worker_died: Callable[[], bool]) -> None:
    """Pass a traceback block on unless it is a user's mistake, a worker's own report of the
    Ctrl-C that stopped the run (said once, in one line, by workflows.console), or follows the
    death of a worker process."""
    if block and not (interrupted() or worker_died() or worker_mistake(b"".join(block).decode(errors="replace"))):
        out.write(b"".join(block))


def _luigi_frames(error: BaseException | None, module: str) -> list | None:
    """The frames of a ValueError or TypeError raised in Luigi's ``module``, else None."""
    if not isinstance(error, ValueError | TypeError) or error.__traceback__ is None:
        return None
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    return frames if frames[-1].f_code.co_filename.endswith(os.path.join("luigi", module)) else None


def _parameter_named(frames: list) -> str:
    """``--name: `` of the parameter the innermost of Luigi's frames was reading ('' if none)."""
    for frame in reversed(frames):
        names = frame.f_locals
        if isinstance(names.get("param_name"), str):
            return f"--{names['param_name'].replace('_', '-')}: "
        if isinstance(names.get("section"), str) and isinstance(names.get("name"), str):
            return f"--{names['section']}-{names['name'].replace('_', '-')}: "
    return ""


def _task_named_briefly(luigi_line: str) -> str:
    """Luigi's line about a task (``[pid 7] Worker Worker(salt=…) failed    IngestBitext(inputs=…,
    …)``, ``Will not run BackTranslate(…) or any dependencies due to error in deps() method``)
    with each task named by its family alone and no worker: its parameters are hundreds of
    characters the user typed, or did not."""
    families = set(Register._get_reg()) | {"Worker"}
    brief, position = [], 0
    for match in re.finditer(r"\b([A-Z]\w*)\(", luigi_line):
        if match.start() < position or match.group(1) not in families:
            continue
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(luigi_line)):
            depth += {"(": 1, ")": -1}.get(luigi_line[end], 0)
            if depth == 0:
                break
        brief.append(luigi_line[position : match.end() - 1])
        position = end + 1
    brief.append(luigi_line[position:])
    text = re.sub(r"^\[pid \d+\] Worker Worker ", "", "".join(brief).rstrip(":"))
    return " ".join(text.split())


class _UsersMistakesInOneLine(logging.Filter):
    """Luigi logs a failed task, or a failed start or check, with its traceback (attached, or
    written into the message while the error is being handled); the user's mistake is not a
    bug, so it is said in one line, first, with the task Luigi's message names after it.
    Luigi logs an error it re-raises again where it is caught: the mistake is said once. A record
    that asks for the error being handled when there is none (Luigi's retries to reach its
    scheduler) loses the line that would say ``NoneType: None``."""

    def __init__(self):
        super().__init__()
        self._said: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info == (None, None, None):
            record.exc_info = None
        # the record's own error, or the one being handled when the message holds its traceback
        in_message = "Traceback (most recent call last)" in str(record.msg)
        error = record.exc_info[1] if record.exc_info else sys.exc_info()[1] if in_message else None
        if mistake := users_mistake(error):
            if error is self._said:
                return False
            self._said = error
            record.msg, record.args = f"{mistake} [{_task_named_briefly(record.getMessage().split(chr(10), 1)[0])}]", ()
            record.exc_info, record.exc_text = None, None
        return True


class _UsersMistakesOnceOnly(logging.Filter):
    """Beam logs a failing step's error with its traceback before the runner raises it (a
    worker process's, as text, once per bundle); when it is the user's mistake, Luigi's one
    line (above) says it, so Beam's record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            return not users_mistake(record.exc_info[1])
        message = record.getMessage()
        return not ("Traceback (most recent call last)" in message and worker_mistake(message))


class _SilentAfterCtrlC(logging.Filter):
    """After Ctrl-C, the errors of what it stopped (a Beam step, the task) are not reported: the
    interruption is said once, in one line (workflows.console)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not interrupted()


# The loggers through which Luigi and Beam report a failure (with its traceback).
_LUIGI_LOGGER = "luigi-interface"
_BEAM_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.portability.local_job_service")


def install() -> None:
    """Put the filters on Luigi's and Beam's loggers (once, however often it is called):
    workflows/__init__.py calls it, so every ``luigi --module workflows`` command has them."""
    wanted = ({_LUIGI_LOGGER: (_UsersMistakesInOneLine, _SilentAfterCtrlC)}
              | {name: (_UsersMistakesOnceOnly, _SilentAfterCtrlC) for name in _BEAM_LOGGERS})
    for name, kinds in wanted.items():
        logger = logging.getLogger(name)
        for kind in kinds:
            if not any(isinstance(present, kind) for present in logger.filters):
                logger.addFilter(kind())
