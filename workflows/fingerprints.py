"""What a stage's fingerprint knows of its input files (their contents, not their paths), the
checks that they are there and unchanged while read, and the lock a stage holds on its output.
"""

from __future__ import annotations

import fcntl
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from luigi.task_register import Register

from corpus.errors import InputError
from corpus.inputs import content_identity
from corpus.outputs import content_digest, file_version
from workflows.config import AbsolutePath
from workflows.console import STAGES as log

# Parameters that name input files as corpus.inputs specifications (comma-separated, globs, ``a::b``).
SPELLED_INPUTS = {"inputs", "files", "pairs", "translations"}


def file_fingerprint(path: str) -> str:
    """Identity of an input file: its size and a hash of its contents, not its path (the same
    bytes under another mount, on another machine, in another installation are the same input),
    so an edit is never mistaken for the old file, even one of the same size whose modification
    time was put back (``cp -p``, ``rsync -t``, ``tar x``, ``curl -R``). The hash is computed once
    per version of the file (``corpus.outputs.content_digest``). A missing file is reported by
    ``StageTask.run`` in one line, not here (Luigi would print a traceback for an error while it
    checks whether a task is complete)."""
    real = os.path.realpath(path)  # one file under any of its names (``..``, a linked folder)
    try:
        version = file_version(real)
    except FileNotFoundError:
        return "missing"
    if not os.path.isfile(real):  # refused in one line by check_input_file when the task runs
        return "not-a-file"
    return f"{version[2]}:{content_digest(real, *version)}"


@contextmanager
def exclusive_lock(path: Path, waiting_message: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path``, logging ``waiting_message`` and waiting while another
    process holds it, so two runs on one work directory never build the same output. The
    operating system releases the lock when its process dies, so a killed run blocks nothing."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning(waiting_message)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def check_input_file(path: str) -> None:
    """InputError naming ``path`` unless it is an existing regular file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise InputError(f"{path} is a directory or a special file, expected a file")


def input_versions(paths: list[str]) -> dict[str, tuple[int, ...] | None]:
    """Each input file's version (``corpus.outputs.file_version``; None when it is gone)."""
    versions: dict[str, tuple[int, ...] | None] = {}
    for path in paths:
        try:
            versions[path] = file_version(path)
        except OSError:
            versions[path] = None
    return versions


def check_unchanged(stage: str, before: dict[str, tuple[int, ...] | None], after: dict[str, tuple[int, ...] | None]) -> None:
    """InputError naming the first input that changed, appeared or vanished while the stage
    read it: its output would hold the old file's rows under the new file's size and hash."""
    for path in sorted(before.keys() | after.keys()):
        if before.get(path) != after.get(path):
            how = "appeared" if path not in before else "was removed" if after.get(path) is None else "changed"
            raise InputError(f"{stage}: input {path} {how} while the stage read it; nothing was committed: "
                             "run again once it no longer changes")



@functools.cache
def path_parameter_names() -> frozenset[str]:
    """Names of the parameters that name files, of every task: the inputs' and every AbsolutePath."""
    names = set(SPELLED_INPUTS)
    for task_class in Register._reg:
        names.update(name for name, parameter in task_class.get_params() if isinstance(parameter, AbsolutePath))
    return frozenset(names)


def paths_as_contents(value: Any) -> Any:
    """A dictionary parameter's value (another task's parameters: ``nmt``, a DataSourceComparison
    source) with each file-naming parameter in it as the contents it names (content_identity)."""
    if isinstance(value, dict):
        return {key: content_identity(item) if key in path_parameter_names() and isinstance(item, str) and item else paths_as_contents(item)
                for key, item in value.items()}
    return value

