"""paranmt-data: download the public STS and transfer-task files, check them, lay them out.

For a user without ../shared/data: each file's sha256 is checked and the files are laid out as
`[sts] dir` and `[transfer] dir` expect.

The source table (fetch/fetch_sources.json) names, per dataset, its citation, official
source and licence, and per download a URL, its archive format, and every file laid out: the
archive member it comes from and its sha256 (those of the published files, docs/README-sts.md).
Downloads resume where they stopped (HTTP Range) or restart when the server cannot; every file is
written under a temporary name and renamed once its checksum is right, so an interrupted run
leaves nothing that looks finished, and a rerun skips the files already in place.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import http.client
import json
import sys
import tarfile
import time
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path, PurePosixPath
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

from corpus.errors import InputError
from corpus.evaluation_data import SETTINGS

SOURCES = Path(__file__).with_name("fetch_sources.json")
# Archives are kept here until every file they hold is laid out (a rerun reuses them).
DOWNLOADS = ".downloads"
TIMEOUT_S = 60
# Tries per download within one run; each resumes from the bytes already received.
TRIES = 3
CHUNK = 1 << 16


@dataclass(frozen=True)
class LaidOutFile:
    """One file in the target folder: where it goes, the archive member it comes from (None: the
    download is the file itself) and its sha256."""

    path: str
    sha256: str
    member: str | None = None


@dataclass(frozen=True)
class Download:
    """One URL of the source table and the files laid out from it."""

    url: str
    archive: str | None  # "zip", "tar.gz" or None (a plain file)
    files: tuple[LaidOutFile, ...]
    dataset: str


class FetchError(InputError):
    """A download or a check failed: one line naming the URL and what to do by hand."""


def load_sources(kind: str, table: Path = SOURCES) -> list[Download]:
    """The downloads of `kind` in `table` (the packaged table, or a user's edited copy)."""
    try:
        datasets = json.loads(Path(table).read_text(encoding="utf-8"))[kind]
        downloads = [
            Download(entry["url"], entry.get("archive"), tuple(LaidOutFile(**file) for file in entry["files"]), dataset["name"])
            for dataset in datasets
            for entry in dataset["downloads"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{table}: not a source table with a {kind!r} list ({type(error).__name__}: {error})") from None
    for download in downloads:
        if (download.archive not in ("zip", "tar.gz", None)
                or (download.archive is None) != (len(download.files) == 1 and download.files[0].member is None)):
            raise InputError(f"{table}: {download.url}: archive must be zip or tar.gz with a member per file, or none for one plain file")
        for file in download.files:
            parts = PurePosixPath(file.path).parts
            if not parts or file.path.startswith("/") or ".." in parts or parts[0] == DOWNLOADS:
                raise InputError(f"{table}: {file.path!r} is not a relative path inside the target folder")
    return downloads


def mirrored(url: str, mirror: str) -> str:
    """`url` on a mirror laid out as `wget -x` saves files: MIRROR/host/path."""
    if not mirror:
        return url
    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _in_place(target: Path, file: LaidOutFile) -> bool:
    """True when `target` holds the right bytes; a file with other bytes is the user's: stop."""
    if not target.exists():
        return False
    if (found := sha256_of(target)) != file.sha256:
        raise FetchError(f"{target} exists with sha256 {found}, not the published {file.sha256}: move it away and rerun")
    return True


class _CutShort(OSError):
    """The connection closed before the announced length arrived."""


def _expected_length(response, start: int) -> int | None:
    """The full length of the file, from Content-Range (a resumed download) or Content-Length."""
    if response.status == 206 and (total := response.headers.get("Content-Range", "").rpartition("/")[2]).isdigit():
        return int(total)
    length = response.headers.get("Content-Length")
    return start + int(length) if length and length.isdigit() else None


def _receive(url: str, partial: Path) -> None:
    """Append the rest of `url` to `partial` (resuming with a Range request when it has bytes);
    raises _CutShort, OSError or http.client.HTTPException when the transfer stops early."""
    start = partial.stat().st_size if partial.exists() else 0
    request = Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        response = urlopen(request, timeout=TIMEOUT_S)
    except HTTPError as error:
        if error.code != 416 or not start:  # 416: the partial file is as long as the file or longer
            raise
        partial.unlink()
        return _receive(url, partial)
    with response:
        if start and response.status != 206:  # the server sends the whole file: start again
            start = 0
        expected = _expected_length(response, start)
        with open(partial, "ab" if start else "wb") as out:
            while block := response.read(CHUNK):
                out.write(block)
            size = out.tell()
    if expected is not None and size != expected:
        raise _CutShort(f"the connection closed after {size} of {expected} bytes")


def download(url: str, target: Path) -> Path:
    """`url` saved as `target.part`, resumed across tries and runs (TRIES per run); the partial
    path once complete."""
    partial = target.with_name(target.name + ".part")
    partial.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(TRIES):
        try:
            _receive(url, partial)
            return partial
        except HTTPError as error:
            raise FetchError(f"{url}: HTTP {error.code} {error.reason}: download it by hand to {target} and rerun") from None
        except (OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", None) or error
            if attempt + 1 < TRIES:
                time.sleep(attempt)  # a moment before the next try, longer each time
    kept = f" ({partial.stat().st_size} bytes kept in {partial}; a rerun resumes)" if partial.exists() else ""
    raise FetchError(f"{url}: {reason} after {TRIES} tries{kept}: check the connection, or download it by hand to {target} and rerun")


def _mismatch(file: LaidOutFile, found: str, url: str, target: Path) -> FetchError:
    return FetchError(f"{url}: {file.member or 'the file'} has sha256 {found}, not the published {file.sha256} "
                      f"(the source changed or the download is damaged; it was removed): download {file.path} "
                      f"by hand from its official source (docs/README-sts.md) to {target} and rerun")


def _verified(source, target: Path, file: LaidOutFile, url: str) -> None:
    """Copy `source` (an open binary stream) to `target` atomically if its sha256 is the published one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    digest = hashlib.sha256()
    with open(temporary, "wb") as out:
        while block := source.read(CHUNK):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != file.sha256:
        temporary.unlink()
        raise _mismatch(file, digest.hexdigest(), url, target)
    temporary.replace(target)


def _tar_member(bundle: tarfile.TarFile, name: str):
    """The member `name`, also when the archive stores it as `./name` (tar run on `.`)."""
    try:
        stream = bundle.extractfile(name)
    except KeyError:
        stream = bundle.extractfile(f"./{name}")
    if stream is None:  # a folder or a link, not a file
        raise KeyError(name)
    return stream


@contextmanager
def _members(archive: Path, kind: str):
    """An opener of the archive's members by name (never extractall: only the named members are
    read, and they are written where the table says)."""
    with zipfile.ZipFile(archive) if kind == "zip" else tarfile.open(archive, "r:gz") as bundle:
        yield bundle.open if kind == "zip" else lambda name: _tar_member(bundle, name)


def _lay_out(item: Download, files: list[LaidOutFile], to: Path, mirror: str) -> None:
    url = mirrored(item.url, mirror)
    if item.archive is None:
        target = to / files[0].path
        partial = download(url, target)
        if (found := sha256_of(partial)) != files[0].sha256:
            partial.unlink()
            raise _mismatch(files[0], found, url, target)
        partial.replace(target)
        return
    archive = to / DOWNLOADS / PurePosixPath(urlsplit(item.url).path).name
    if not archive.exists():
        download(url, archive).replace(archive)
    try:
        with _members(archive, item.archive) as open_member:
            for file in files:
                with open_member(file.member) as source:
                    _verified(source, to / file.path, file, url)
    except (KeyError, EOFError, gzip.BadGzipFile, zlib.error, tarfile.TarError, zipfile.BadZipFile) as error:
        archive.unlink()
        raise FetchError(f"{url}: not a {item.archive} archive with the published files ({type(error).__name__}: {error}; "
                         f"it was removed): download it by hand to {archive} and rerun") from None
    except FetchError:
        archive.unlink()
        raise
    archive.unlink()


def fetch(kind: str, to: Path, mirror: str = "", sources: Path = SOURCES, say=print) -> dict[str, int]:
    """Lay out every file of `kind` under `to`, saying so per dataset; the counts of files laid
    out and already in place."""
    to = Path(to)
    counts = {"laid_out": 0, "present": 0}
    for dataset, items in groupby(load_sources(kind, sources), key=lambda item: item.dataset):
        laid_out = present = 0
        for item in items:
            missing = [file for file in item.files if not _in_place(to / file.path, file)]
            if missing:
                _lay_out(item, missing, to, mirror)
            laid_out, present = laid_out + len(missing), present + len(item.files) - len(missing)
        say(f"{dataset}: {laid_out} file(s) laid out, {present} already in place")
        counts["laid_out"] += laid_out
        counts["present"] += present
    downloads = to / DOWNLOADS
    if downloads.is_dir() and not any(downloads.iterdir()):
        downloads.rmdir()
    return counts


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paranmt-data", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_command = commands.add_parser("fetch", help="download, check and lay out the STS or transfer-task files")
    fetch_command.add_argument("kind", choices=sorted(SETTINGS),
                               help="sts: STS 2012-2017, STS-B, SICK; transfer: MR, CR, SUBJ, MPQA, TREC, SST-2, MRPC")
    fetch_command.add_argument("--to", required=True, type=Path,
                               help="the folder to lay the files out in (then set [sts] dir or [transfer] dir to it)")
    fetch_command.add_argument("--mirror", default="",
                               help="fetch from a mirror laid out as `wget -x` saves (MIRROR/host/path) instead of the sources")
    fetch_command.add_argument("--sources", type=Path, default=SOURCES,
                               help="a source table in the format of the packaged one (default: %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; a failed download or check is one line on stderr and exit status 2."""
    args = parser().parse_args(argv)
    try:
        counts = fetch(args.kind, args.to, args.mirror, args.sources)
    except (InputError, OSError) as error:  # OSError: the target folder cannot be written
        print(f"paranmt-data {args.command}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"paranmt-data {args.command}: interrupted; a rerun resumes", file=sys.stderr)
        return 130
    print(f"{counts['laid_out']} file(s) laid out, {counts['present']} already in place (sha256 checked) in {args.to}; "
          f"set {SETTINGS[args.kind].format(dir=args.to.resolve())} in luigi.cfg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
