"""Writing outputs so that a reader, or a run resumed after a kill, never sees half of one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> None:
    """``write(temporary)`` creates a file, directory or symlink beside ``path``, which is then
    renamed onto ``path`` in one step (``os.replace``). A temporary left by a killed run is
    removed first. (Beam stages rename through ``FileSystems`` instead, which also reaches
    remote storage.)"""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.writing")
    if temporary.is_dir() and not temporary.is_symlink():
        shutil.rmtree(temporary)
    else:
        temporary.unlink(missing_ok=True)
    write(temporary)
    os.replace(temporary, path)
