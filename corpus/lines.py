"""An input file's lines: plain or checked gzip, read whole, from a byte offset, or indexed in runs.

Each rule here holds for every file read (the inputs of corpus.inputs, translation files):

* **The bytes decide the format.** gzip is decompressed, whatever the name; bzip2, xz, zstd and
  zip are refused, as is a file named for a compression its bytes do not have.
* **Line ends per line.** A line ends at LF; a CR just before it (CRLF) or at the very end of the
  file belongs to the line end. A CR anywhere else is part of the line, and rejects it
  (``control_character``, corpus.readers): one stray CR never changes how other lines are cut.
* **Only checked gzip text is kept.** A gzip member's CRC-32 and length are checked before any of
  its lines is kept. Reading stops at the first member that fails (or is cut off, or is not
  valid deflate data): its lines are ``damaged_gzip`` rejects, and one ``truncated_file`` reject
  says that nothing after it was read (damage can add or remove line ends, so the line numbers
  after it, and which lines of a line-aligned pair belong together, are not known).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from corpus.errors import InputError
from corpus.files import write_atomically
from corpus.outputs import digest_of
from corpus.readers import Reject

# Compressed formats, known by their first bytes; only gzip is read (it is the one whose
# checksums read_lines checks before keeping a line).
COMPRESSIONS = {
    "gzip": (re.compile(rb"\x1f\x8b"), ".gz"),
    "bzip2": (re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"), ".bz2"),
    "xz": (re.compile(rb"\xfd7zXZ\x00"), ".xz"),
    "zstd": (re.compile(rb"\x28\xb5\x2f\xfd"), ".zst"),
    "zip": (re.compile(rb"PK\x03\x04"), ".zip"),
}
HEAD_BYTES = 10
BLOCK_BYTES = 1 << 16
SCAN_BYTES = 1 << 23  # index_lines reads 8 MB at a time
NEWLINE = ord("\n")
GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib reads the gzip header and checks the trailer


def compression_of(path: str, head: bytes) -> str | None:
    """``"gzip"``, or None for text, from the file's first bytes ``head``; an InputError for
    another compression (never read as text) or for a name that claims one the bytes lack."""
    by_bytes = next((name for name, (signature, _) in COMPRESSIONS.items() if signature.match(head)), None)
    if by_bytes and by_bytes != "gzip":
        raise InputError(f"input {path} is {by_bytes}-compressed; only gzip is read (its checksums are checked "
                         "before its lines are kept): decompress it, or compress it with gzip")
    by_name = next((name for name, (_, suffix) in COMPRESSIONS.items() if path.endswith(suffix)), None)
    if by_name and by_name != by_bytes:
        raise InputError(f"input {path} is named {COMPRESSIONS[by_name][1]} but is not {by_name} "
                         f"(rename it, or compress it with {by_name})")
    return by_bytes


def open_input(path: str) -> BinaryIO:
    """An input file, opened for reading after it was resolved: InputError when it is gone since."""
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as error:
        raise InputError(f"input {path} cannot be read: {error.strerror} (removed or changed while the run read it?)") from None


def _starts_gzip(raw: BinaryIO, path: str) -> bool:
    """Whether the open file ``raw`` is gzip (compression_of its first bytes); read from its start again after."""
    compressed = compression_of(path, raw.read(HEAD_BYTES)) == "gzip"
    raw.seek(0)
    return compressed


def _plain_blocks(raw: BinaryIO, block_bytes: int) -> Iterator[bytes]:
    return iter(lambda: raw.read(block_bytes), b"")


def is_gzip(path: str) -> bool:
    with open_input(path) as raw:
        return _starts_gzip(raw, path)


def read_lines(path: str, source: str, damage: list[Reject]) -> Iterator[bytes | Reject]:
    """A file's lines (gzip or plain, by its first bytes), without their LF. A gzip file is read
    twice: once to check its members, once for its lines. A line holding text of a member that
    failed its check comes as a ``damaged_gzip`` Reject in its place; nothing after that member
    is read, and a ``truncated_file`` Reject, added to ``damage``, says where and why."""
    failure: list[str] = []
    with open_input(path) as raw:  # checked when the run began: InputError if removed or made unreadable since
        if _starts_gzip(raw, path):
            verified = _verified_size(_gunzip(raw, failure))
            raw.seek(0)
            blocks = _checked_blocks(_gunzip(raw, []), verified, damaged=bool(failure))
        else:
            blocks = ((block, True) for block in _plain_blocks(raw, BLOCK_BYTES))
        problem = f"{os.path.basename(path)}: {failure[0]}" if failure else ""
        read = yield from cut_lines(blocks, lambda number, line: Reject.of(
            source, number, "damaged_gzip", f"{problem}: the line is not known to be intact", line))
    if failure:
        stop = f"{problem}; reading stopped: that member's lines are damaged_gzip rejects and nothing after it is read"
        damage.append(Reject.of(source, read + 1, "truncated_file", stop, b""))


def _gunzip(raw, failure: list[str]) -> Iterator[tuple[bytes, bool]]:
    """(decompressed block, whether its member ended right after it, its CRC-32 and length
    checked) of a gzip stream whose members are concatenated (as ``gzip`` writes appends). Ends
    where the stream is damaged or cut, adding what is wrong to ``failure``. zlib directly, not
    GzipFile, whose buffered reader drops what it decompressed before it meets the damage."""
    decompressor, member = zlib.decompressobj(GZIP_WBITS), 1
    try:
        while block := raw.read(BLOCK_BYTES):
            while block:
                if decompressor.eof:
                    decompressor, member = zlib.decompressobj(GZIP_WBITS), member + 1
                yield decompressor.decompress(block), decompressor.eof
                block = decompressor.unused_data
        if not decompressor.eof:
            failure.append(f"the file ends inside gzip member {member}")
    except zlib.error as error:
        failure.append(f"gzip member {member} is damaged ({error})")


def _verified_size(blocks: Iterable[tuple[bytes, bool]]) -> int:
    """Decompressed bytes of the members that passed their check, up to the first that did not."""
    size = verified = 0
    for block, member_checked in blocks:
        size += len(block)
        if member_checked:
            verified = size
    return verified


def _checked_blocks(blocks: Iterable[tuple[bytes, bool]], verified: int, damaged: bool) -> Iterator[tuple[bytes, bool]]:
    """(block, whether it lies in the first ``verified`` bytes); in a ``damaged`` file, then an
    empty unverified block: a line the last verified member leaves unfinished is not kept."""
    size = 0
    for block, _ in blocks:
        size += len(block)
        yield block, size <= verified
    if damaged:
        yield b"", False


def cut_lines(blocks: Iterable[tuple[bytes, bool]], unverified: Callable[[int, bytes], bytes | Reject]) -> Iterator[bytes | Reject]:
    """Lines cut at LF from (block, verified) pairs, in which every block after an unverified
    one is unverified; a line holding unverified bytes comes as ``unverified(line number, line)``.
    Returns the number of lines."""
    pending, number, checked = b"", 0, True
    for block, checked in blocks:
        pending += block
        *lines, pending = pending.split(b"\n")
        if checked:
            yield from lines
        else:
            yield from (unverified(number + offset, line) for offset, line in enumerate(lines, start=1))
        number += len(lines)
    if pending:
        number += 1
        yield pending if checked else unverified(number, pending)
    return number


@dataclass(frozen=True)
class LineIndex:
    """How a file divides into runs of ``every`` lines: its number of lines and the offset at
    which each run starts (line 1, 1 + every, 1 + 2·every …) in its bytes, decompressed for gzip.
    A plain file can be entered at any run; a gzip file (``compressed``) only read from its start,
    the offsets saying how much of it to skip before a run. ``damage``: what is wrong with a gzip
    file (empty when every member passed its check); it is counted to the damage."""

    lines: int
    starts: tuple[int, ...]
    compressed: bool = False
    damage: str = ""

    def runs(self, every: int) -> int:
        return max(1, -(-self.lines // every))


def decompressed_blocks(raw: BinaryIO, path: str, failure: list[str], block_bytes: int) -> tuple[bool, Iterator[bytes]]:
    """Whether the file is gzip, and its bytes (decompressed) in blocks; a gzip file's damage is
    added to ``failure`` when met."""
    if _starts_gzip(raw, path):
        return True, (block for block, _ in _gunzip(raw, failure))
    return False, _plain_blocks(raw, block_bytes)


def index_lines(path: str, every: int) -> LineIndex:
    """One pass over a file (decompressed, for gzip): its lines and where each run of ``every``
    lines starts. Lines are counted as read_lines cuts them (an unfinished last line counts); a
    damaged gzip file is counted to its damage (read_lines reads no further)."""
    failure: list[str] = []
    with open_input(path) as raw:
        compressed, blocks = decompressed_blocks(raw, path, failure, SCAN_BYTES)
        starts, lines, offset, last = [0], 0, 0, b"\n"
        for block in blocks:
            newlines = block.count(b"\n")
            if lines + newlines >= len(starts) * every:
                # The run boundaries in this block: positions just after its every-th newlines.
                ends = np.flatnonzero(np.frombuffer(block, np.uint8) == NEWLINE) + 1
                wanted = np.arange(len(starts) * every - lines, newlines + 1, every)
                starts.extend(offset + int(end) for end in ends[wanted - 1])
            lines, offset = lines + newlines, offset + len(block)
            last = block[-1:] or last
    lines += last != b"\n"
    return LineIndex(lines, tuple(start for start in starts if start < offset) or (0,), compressed, failure[0] if failure else "")


def read_line_range(path: str, start: int, end: int | None) -> Iterator[bytes]:
    """The lines (without their LF) of a plain file's bytes ``start`` to ``end`` (None: to the end
    of the file), ``start`` being the first byte of a line (LineIndex.starts)."""
    with open_input(path) as raw:
        raw.seek(start)
        left = (end - start) if end is not None else None

        def blocks() -> Iterator[tuple[bytes, bool]]:
            nonlocal left
            while left is None or left > 0:
                block = raw.read(BLOCK_BYTES if left is None else min(BLOCK_BYTES, left))
                if not block:
                    return
                left = None if left is None else left - len(block)
                yield block, True

        yield from cut_lines(blocks(), lambda number, line: line)


class GzipDamaged(Exception):
    """A gzip file failed its check while it was copied (decompressed_copy); nothing was kept."""


def decompressed_copy(path: str, folder: str) -> str:
    """A gzip file decompressed once into ``folder`` as a plain file, so that any worker enters it
    at any run and the per-line work of one gzip file (decoding, tokenizing: most of an import)
    is spread over every worker instead of one. Written whole or not at all and named by the
    original's digest, so a resumed run reads the copy it made; it costs the file's decompressed
    size on disk until the stage that made it ends. GzipDamaged, with the damage, when a member
    fails its check."""
    copy = os.path.join(folder, f"{digest_of(path)[:24]}.txt")
    if not os.path.exists(copy):
        os.makedirs(folder, exist_ok=True)

        def decompress(temporary) -> None:
            failure: list[str] = []
            with open_input(path) as raw, open(temporary, "wb") as out:
                for block in decompressed_blocks(raw, path, failure, BLOCK_BYTES)[1]:
                    out.write(block)
            if failure:
                raise GzipDamaged(failure[0])

        write_atomically(copy, decompress, clear_stale=True)
    return copy
