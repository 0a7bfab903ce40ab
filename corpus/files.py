"""Writing outputs so that a reader, or a run resumed after a kill, never sees half of one."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def write_atomically(path: str | Path, write: Callable[[Path], object], clear_stale: bool = False) -> None:
    """``write(temporary)`` creates a file, directory or symlink beside ``path``, which is then
    renamed onto ``path`` in one step (``os.replace``). Each call writes its own temporary, so
    concurrent writers (parallel Luigi workers moving a ``latest`` link) do not collide; a failed
    write removes it. ``clear_stale``: first remove temporaries of ``path`` left by killed runs,
    for a writer that holds the output alone (a large directory must not linger). (Beam stages
    rename through ``FileSystems`` instead, which also reaches remote storage.)"""
    path = Path(path)
    if clear_stale:
        for stale in path.parent.glob(f".{path.name}.*.writing"):
            _remove(stale)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.writing")
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise


# The link in each stage's folder to the output of the last run that built or found it complete.
LATEST = "latest"


def snapshot(path: str | Path) -> Path:
    """``path`` with every link in it resolved once, e.g. ``work/corpus/latest/corpus`` →
    ``work/corpus/<fingerprint>/corpus``: a fingerprint directory is never rewritten, so a reader
    of the snapshot sees one build, however often ``latest`` moves while it reads (a reader that
    lists the files through ``latest`` and opens them later may mix two builds). FileNotFoundError
    naming ``path`` when it names nothing."""
    resolved = Path(os.path.realpath(path))
    if not resolved.exists():
        raise FileNotFoundError(f"{path}: no such file or dataset (is its stage built?)")
    return resolved
