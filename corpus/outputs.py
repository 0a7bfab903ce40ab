"""What a stage committed, and the check that an output still holds exactly that.

A stage's manifest (``_SUCCESS``) lists every file of its output directory: its name relative to
the directory, its bytes, its rows (Parquet, from the footer) and the SHA-256 of its contents.
An output is trusted only while its files are exactly those: none missing, none added, none of
another size or other contents. The digest of a file is computed once per version of the file
(device, inode, size, modification and status-change times: every write sets the status-change
time to now) and kept in the per-machine cache, so checking an output again costs a ``stat`` a
file; the first check on another machine (a copied work directory) reads each file once.

Reading a file the project wrote (a manifest, a Parquet shard, a model) goes through
:func:`reading`, so a damaged or vanished one is a :class:`DamagedOutput`: one line naming the
file, never a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from corpus.cache import cache_root, store
from corpus.errors import InputError

MANIFEST = "_SUCCESS"
REBUILD = "run the command again: a damaged output is rebuilt"
# A stage builds ``<stage>/<fingerprint>`` in ``<stage>/.<fingerprint>.partial`` and renames it.
_PARTIAL = re.compile(r"\.(?P<build>[^/\\]+)\.partial")


def partial_dir(final: Path) -> Path:
    """Where the output ``final`` is written before it is renamed to ``final`` when complete."""
    return final.parent / f".{final.name}.partial"


def build_of(path: str) -> str:
    """The fingerprint of the output being built that ``path`` lies in ('' outside one). A
    dataset's part files carry it in their names, so a reader that listed one build's files
    (through ``latest``) and opens them after ``latest`` moved fails instead of mixing builds."""
    for part in reversed(re.split(r"[/\\]", path)):
        if built := _PARTIAL.fullmatch(part):
            return built["build"]
    return ""


class DamagedOutput(InputError):
    """A file the project wrote is missing, changed or unreadable: one line naming it and
    saying how to get a sound one (made by :func:`damaged`; one argument, so that Beam, which
    re-raises a step's error with the step's name appended, can make it again)."""

    problem = ""


def damaged(problem: str, remedy: str = REBUILD) -> DamagedOutput:
    """A DamagedOutput saying ``problem`` (kept as its ``problem``) and ``remedy``."""
    error = DamagedOutput(f"{problem}; {remedy}")
    error.problem = problem
    return error


@contextlib.contextmanager
def reading(path: str | Path, remedy: str = REBUILD, also: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Errors while reading ``path`` (gone, cut short, overwritten, not JSON; ``also``: the
    errors a library raises for a file it cannot parse) as one DamagedOutput line naming it;
    ``remedy`` says what to do."""
    try:
        yield
    except DamagedOutput:
        raise
    except FileNotFoundError:
        raise damaged(f"{path} is missing", remedy) from None
    except (OSError, pa.ArrowException, json.JSONDecodeError, UnicodeDecodeError, *also) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error).splitlines()[0]
        raise damaged(f"{path} cannot be read ({reason})", remedy) from None


def streamed_parquet(source: Any) -> pq.ParquetFile:
    """A Parquet file (path or open file) to read a batch at a time, without pyarrow's default
    pre-buffering: that holds the requested columns' bytes far ahead of the batch read (35 MB
    of a 49 MB file), and IngestBitext's search for repeated ids reads nine such files at once
    at 51.4M lines (+0.3 GB)."""
    return pq.ParquetFile(source, pre_buffer=False)


def read_json(path: str | Path, remedy: str = REBUILD) -> Any:
    """A JSON file the project wrote; DamagedOutput naming it when it is missing or not JSON."""
    with reading(path, remedy):
        return json.loads(Path(path).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=4096)
def content_digest(path: str, *version: int) -> str:
    """SHA-256 of the file's bytes (two to three times BLAKE2b's speed on CPUs with SHA instructions:
    docs/2026-11-26-verified-outputs.md), remembered per ``version`` of the file: device, inode,
    size, modification and status-change times. Tools can put the modification time back, but
    every write sets the status-change time to now, so an edited file is a new version and is
    read again; the per-machine cache (corpus.cache) keeps the digest across runs and renames."""
    key = hashlib.sha256(json.dumps(["sha256", *version]).encode()).hexdigest()
    cached = cache_root() / "file-digests" / key
    with contextlib.suppress(OSError):
        return cached.read_text()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    if file_version(path) == version:  # not changed while it was read: the digest is that version's
        store(cached, lambda handle: handle.write(digest.hexdigest().encode()))
    return digest.hexdigest()


def file_version(path: str | Path) -> tuple[int, ...]:
    """What changes whenever the file's bytes may have: device, inode, size, mtime, ctime."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def digest_of(path: str | Path) -> str:
    return content_digest(str(path), *file_version(path))


def output_files(directory: Path) -> list[str]:
    """Names (relative, ``/``-separated) of every file under ``directory`` but its manifest."""
    names = []
    for folder, subfolders, files in os.walk(directory):
        subfolders.sort()
        relative = Path(folder).relative_to(directory)
        names += [(relative / name).as_posix() for name in sorted(files)]
    return [name for name in names if name != MANIFEST]


def committed_files(directory: Path) -> dict[str, dict[str, Any]]:
    """The manifest's ``files``: each file's bytes and SHA-256, and rows for Parquet."""
    records = {}
    for name in output_files(directory):
        path = directory / name
        record: dict[str, Any] = {"bytes": path.stat().st_size, "sha256": digest_of(path)}
        if name.endswith(".parquet"):
            record["rows"] = pq.ParquetFile(path).metadata.num_rows
        records[name] = record
    return records


def damage(directory: Path, files: dict[str, dict[str, Any]]) -> str:
    """'' when ``directory`` holds exactly the recorded ``files``; else what is wrong, naming the
    first file that is missing, added, or of another size or contents."""
    present = set(output_files(directory))
    if missing := sorted(set(files) - present):
        return f"{directory / missing[0]} is missing" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
    if added := sorted(present - set(files)):
        return f"{directory / added[0]} was not written by the stage" + (f" (nor {len(added) - 1} more)" if len(added) > 1 else "")
    for name, record in sorted(files.items()):
        path = directory / name
        try:
            size = path.stat().st_size
            if size != record["bytes"]:
                return f"{path} has {size} bytes, the stage wrote {record['bytes']}"
            if digest_of(path) != record["sha256"]:
                return f"{path} was changed after the stage wrote it (its SHA-256 differs)"
        except FileNotFoundError:
            return f"{path} is missing"
    return ""


def read_manifest(directory: Path, remedy: str = REBUILD) -> dict[str, Any]:
    """The manifest of an output directory; DamagedOutput when it is unreadable or not JSON."""
    manifest = read_json(Path(directory) / MANIFEST, remedy)
    if not isinstance(manifest, dict):
        raise damaged(f"{Path(directory) / MANIFEST} is not a manifest (not a JSON object)", remedy)
    return manifest


def verified_manifest(directory: Path, remedy: str = REBUILD) -> dict[str, Any]:
    """The manifest of an output whose files are exactly the ones it lists; DamagedOutput
    naming the first file that is not (or a manifest without a list of files)."""
    directory = Path(directory)
    manifest = read_manifest(directory, remedy)
    if not isinstance(manifest.get("files"), dict):
        raise damaged(f"{directory / MANIFEST} lists no files (written by an older release)", remedy)
    if problem := damage(directory, manifest["files"]):
        raise damaged(problem, remedy)
    return manifest


def is_output(directory: Path) -> bool:
    """Whether a stage wrote ``directory``: it has a manifest (Hadoop and Spark leave an empty
    ``_SUCCESS`` in theirs; a manifest is never empty)."""
    try:
        return (Path(directory) / MANIFEST).stat().st_size > 0
    except OSError:
        return False


def outputs_damage(paths: list[str | Path]) -> str:
    """'' when every output (a directory with a manifest) that holds one of ``paths`` holds
    exactly the files its manifest lists; else the first problem. Paths outside any output (a
    given checkpoint) are the user's inputs, identified by the fingerprint instead."""
    holding = {parent for path in paths for parent in Path(path).absolute().parents if is_output(parent)}
    for directory in sorted(holding):
        try:
            verified_manifest(directory)
        except DamagedOutput as error:
            return error.problem
    return ""


def dataset_of(directory: Path, dataset: str, manifest: dict[str, Any]) -> tuple[list[str], int]:
    """The Parquet files of ``dataset`` (a folder of the output) that the manifest records, as
    absolute paths (Beam workers may run in other folders), and their rows as recorded: what a
    reader reads and the rows it must account for."""
    records = {name: record for name, record in manifest["files"].items() if name.startswith(f"{dataset}/") and name.endswith(".parquet")}
    return [os.path.abspath(Path(directory) / name) for name in sorted(records)], sum(record["rows"] for record in records.values())
