"""The per-machine cache of files derived from models (``$PARANMT_CACHE``, default
``~/.cache/paranmt``): langid's rearranged model and parsed word vectors, which every scoring
worker would otherwise rebuild from the originals. Everything in it is derived, so deleting it is
safe, and a cache that cannot be written only costs the rebuilding time."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def cache_root() -> Path:
    return Path(os.environ.get("PARANMT_CACHE") or Path.home() / ".cache" / "paranmt")


def store(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """``write`` the file at ``path`` through a temporary file renamed into place, so a concurrent
    reader sees the whole file or none; when the cache cannot be written, nothing is stored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.replace(temporary, path)
    except OSError:
        pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)  # left only when the write or the rename failed
