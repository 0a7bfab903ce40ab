"""Input files: which file each input names, in which format, and its lines.

Every stage that reads the user's raw files resolves them with :func:`resolve_inputs` and reads
them with :func:`read_lines`, so each rule here holds for every input:

* **One file, read once.** An input is the file it resolves to (``os.path.realpath``): one file
  given in two spellings (``./w.cs`` and ``w.cs``, a path through a symlinked folder, a glob and
  a name) is read once, with the same source name and ids whichever spelling is used. A file
  belongs to one input only (one in two inputs, or on both sides of a pair, is refused).
* **A name before a glob.** An input that exists is that file, whatever characters its name holds
  (``part[1].tsv``); only an input that does not exist is a glob, as in the shell: relative to
  the current folder (``*.tsv``), ``**`` for any depth of folders.
* **English files are partners.** A matched ``x.en`` that is the partner of a foreign input is read
  as that pair's English side only; one that is no foreign file's partner is refused, never read as
  CzEng.
* **The suffix names the language.** ``x.<code>`` is line-aligned input when ``<code>`` is one of
  the run's source languages' codes (``--source-language de``: ``x.de``, ``x.deu``, ``x.ger``) and
  its pairs' pivot is that language; every other input's pivot is the first source language.
* **Regular files only.** A pipe (FIFO, process substitution ``/dev/fd/N``), device or socket is
  refused: an input is read more than once (hashed for the fingerprint, checked here, read by the
  pipeline, read again by a resumed run), and a pipe gives its bytes only once.
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

import glob
import itertools
import json
import os
import re
import shlex
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import BinaryIO

import numpy as np

from corpus import languages
from corpus.errors import InputError
from corpus.files import write_atomically
from corpus.outputs import digest_of
from corpus.readers import (
    InputUnit,
    Reject,
    aligned_partner,
    distinct_names,
    named_file,
    parse_input_spec,
)

ENGLISH_SUFFIXES = languages.file_suffixes(languages.ENGLISH)
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
FILE_KINDS = {stat.S_IFIFO: "pipe", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device", stat.S_IFSOCK: "socket"}


def source_languages(spec: str) -> tuple[str, ...]:
    """``--source-language``: comma-separated language codes, each as its standard code (the
    first is the pivot of inputs whose name does not say theirs); InputError for one that is not."""
    codes = tuple(dict.fromkeys(languages.standard_code(tag) for tag in spec.split(",") if tag.strip()))
    if not codes:
        raise InputError("--source-language is empty; give a language code such as cs or de")
    if languages.ENGLISH in codes:
        raise InputError("--source-language en: the source language is the foreign side, translated into English")
    return codes


def resolve_inputs(spec: str, source_language: str = languages.DEFAULT) -> list[InputUnit]:
    """The files of an input specification (corpus.readers.parse_input_spec) as units over real
    paths, each file in one unit, checked up front: an absent, special, empty or unreadable
    file, or one compressed other than with gzip, is an InputError naming it, before any work.
    ``source_language``: as ``--source-language`` (source_languages)."""
    codes = source_languages(source_language)
    suffixes = {suffix: code for code in codes for suffix in languages.file_suffixes(code)}

    def language_of(path: str) -> str:
        return suffixes.get(os.path.splitext(path.removesuffix(".gz"))[1], codes[0])

    given: list[tuple[str, str | None]] = []
    for pattern, partner in parse_input_spec(spec):
        if partner:
            given.append((pattern, partner))
            continue
        for path in _files_named(pattern):
            partner = aligned_partner(path, suffixes)
            if partner and not os.path.lexists(partner):
                raise InputError(f"{path} is line-aligned input but its partner {partner} is missing")
            given.append((path, partner))
    units = {InputUnit(_regular_file(path), _regular_file(partner) if partner else None, language=language_of(path)): path
             for path, partner in given}
    partners = {unit.partner for unit in units if unit.partner}
    for unit, spelled in list(units.items()):
        if unit.partner is None and unit.path in partners:
            del units[unit]  # the English side of a pair also given (or matched) as a file
        elif unit.partner is None and spelled.removesuffix(".gz").endswith(ENGLISH_SUFFIXES):
            raise InputError(f"input {spelled} is the English side of a line-aligned pair: give its foreign file, "
                             f"or write the pair as foreign_file::{spelled}")
    _each_file_once(units)
    for unit in units:
        for path in (unit.path, unit.partner):
            if path:
                _check_content(path)
    names = distinct_names(sorted({unit.path for unit in units}))
    partners: dict[str, list[str]] = {}
    for unit in units:
        partners.setdefault(unit.path, []).append(unit.partner or "")

    def name_of(unit: InputUnit) -> str:
        """The foreign file's name; with several references, joined to its partner's (their ids differ)."""
        if len(partners[unit.path]) == 1:
            return names[unit.path]
        return f"{names[unit.path]}~{distinct_names(sorted(partners[unit.path]))[unit.partner]}"

    return sorted((replace(unit, name=name_of(unit)) for unit in units), key=lambda unit: (unit.path, unit.partner or ""))


def content_identity(value: str, read: list[str] | None = None) -> str:
    """What a path parameter names, as a fingerprint knows it: each file's name as the data records
    it (corpus.readers.distinct_names: the ``source`` column, the ids) with the SHA-256 of its
    bytes, sorted; a folder's files by their names inside it. Not where they are: the same bytes
    under another mount, on another machine or in another installation are the same input, and
    one changed byte is another. ``read``: the files a task reads (its input files): a folder is
    then known by those of them inside it, not by others that may change beside them (a report
    written into the folder). A name that matches nothing, or a specification that is not one,
    stays as given (reading it is refused in one line)."""
    try:
        items = parse_input_spec(value)
    except InputError:
        return value
    def named_by(pattern: str) -> list[str]:
        return [pattern] if os.path.lexists(pattern) else sorted(glob.glob(pattern, recursive=True)) or [pattern]

    named: set[tuple[str, str, str | None, str]] = set()
    for pattern, partner in items:  # a partner may be a glob too (--translations: one file per system)
        given, pattern = named_file(pattern)  # a training source's share
        given_partner, partner = named_file(partner) if partner else ("", partner)  # a translation file's system
        for path in named_by(pattern):
            named.update((given, os.path.realpath(path), os.path.realpath(other) if other else None, given_partner)
                         for other in (named_by(partner) if partner else [None]))
    names = distinct_names(sorted({path for _, path, _, _ in named}))
    partner_names = distinct_names(sorted({partner for _, _, partner, _ in named if partner}))

    def with_name(name: str) -> str:
        return f"{name}=" if name else ""

    return ",".join(sorted(with_name(given) + _named_contents(names[path], path, read)
                           + (f"::{with_name(given_partner)}{_named_contents(partner_names[partner], partner)}" if partner else "")
                           for given, path, partner, given_partner in named))


def _named_contents(name: str, path: str, read: list[str] | None = None) -> str:
    """``name=digest`` of a file; of a folder (whatever its own name), each file below it as
    ``relative/name=digest`` (hidden ones aside: a download client's bookkeeping), only those in
    ``read`` when any of them is there; ``name=missing`` when there is none."""
    if os.path.isdir(path):
        files = sorted(p for p in glob.glob(os.path.join(glob.escape(path), "**", "*"), recursive=True) if os.path.isfile(p))
        chosen = {os.path.realpath(p) for p in read or []}
        files = [p for p in files if os.path.realpath(p) in chosen] or files
        return " ".join(_named_contents(os.path.relpath(p, path), p) for p in files) or "empty-folder"
    if not os.path.isfile(path):  # a pipe is never opened here: reading it would wait for a writer
        return f"{name}=missing" if not os.path.lexists(path) else f"{name}=not-a-file"
    try:
        return f"{name}={digest_of(path)}"
    except OSError:
        return f"{name}=unreadable"


def _files_named(pattern: str) -> list[str]:
    """The input itself when it exists, whatever characters its name holds; else the files its
    glob matches as in the shell (relative to the current folder; ``**``: any depth), sorted."""
    if os.path.lexists(pattern):
        return [pattern]
    matched = sorted(glob.glob(pattern, recursive=True))
    if not matched:
        raise InputError(f"no input file matches {pattern!r}")
    return matched


def _regular_file(path: str) -> str:
    """The real path of ``path``, a regular file; an InputError saying what it is otherwise. The
    type is checked before anything opens it: opening a pipe waits for a writer, and reading one
    takes its bytes away from the pipeline."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"input file not found: {path}") from None
    except OSError as error:
        raise InputError(f"input {path} cannot be read: {error.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"input {path} is a directory; give the files in it (a glob such as {path}/*.gz)")
    if not stat.S_ISREG(mode):
        kind = FILE_KINDS.get(stat.S_IFMT(mode), "special file")
        raise InputError(f"input {path} is a {kind}, not a regular file: an input is read more than once "
                         "(fingerprint, checks, pipeline, a resumed run); save it to a file and give that")
    return os.path.realpath(path)


def _each_file_once(units: dict[InputUnit, str]) -> None:
    """InputError for a file in two units, or on both sides of one: its lines would be read
    twice, under one source name and the same ids. An English file that is the partner of
    several foreign files is their shared reference; a foreign file with several English partners
    (``src.cs::ref.A.en,src.cs::ref.B.en``) has several references, a pair for each."""
    owner: dict[str, InputUnit] = {}
    for unit in units:
        if unit.path in owner and None in (unit.partner, owner[unit.path].partner):
            raise InputError(f"input {unit.path} is given twice ({_spec(owner[unit.path])} and {_spec(unit)}); give each file once")
        owner.setdefault(unit.path, unit)
    for unit in units:
        if unit.partner in owner:
            raise InputError(f"input {unit.partner} is given twice ({_spec(owner[unit.partner])} and {_spec(unit)}); give each file once")


def _spec(unit: InputUnit) -> str:
    return f"{unit.path}::{unit.partner}" if unit.partner else unit.path


def _check_content(path: str) -> None:
    """InputError unless the file can be read, is not empty and is plain or gzip (compression_of)."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(HEAD_BYTES)
    except OSError as error:
        raise InputError(f"input {path} cannot be read: {error.strerror}") from None
    if not head:
        raise InputError(f"input {path} is empty")
    compression_of(path, head)
    if encoding := utf16_of(head):
        folder = os.path.join(os.path.dirname(path), "utf-8")  # the same name, so a partner still finds it
        raise InputError(f"input {path} is {encoding} text (Windows PowerShell 5 writes it with >), not UTF-8: convert it; "
                         f"run: mkdir -p {shlex.quote(folder)} && iconv -f {encoding} -t UTF-8 {shlex.quote(path)} > "
                         f"{shlex.quote(os.path.join(folder, os.path.basename(path)))}")


def utf16_of(head: bytes) -> str | None:
    """``"UTF-16"`` (with its byte-order mark), ``"UTF-16LE"`` or ``"UTF-16BE"`` (without: a zero
    byte beside each ASCII character) for a file whose first bytes ``head`` are UTF-16, else None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    pairs = len(head) // 2
    if pairs and head[1:2 * pairs:2].count(0) == pairs and 0 not in head[0:2 * pairs:2]:
        return "UTF-16LE"
    if pairs and head[0:2 * pairs:2].count(0) == pairs and 0 not in head[1:2 * pairs:2]:
        return "UTF-16BE"
    return None


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


def read_lines(path: str, source: str, damage: list[Reject]) -> Iterator[bytes | Reject]:
    """A file's lines (gzip or plain, by its first bytes), without their LF. A gzip file is read
    twice: once to check its members, once for its lines. A line holding text of a member that
    failed its check comes as a ``damaged_gzip`` Reject in its place; nothing after that member
    is read, and a ``truncated_file`` Reject, added to ``damage``, says where and why."""
    failure: list[str] = []
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as error:  # checked when the run began: removed or made unreadable since
        raise InputError(f"input {path} cannot be read: {error.strerror} (removed or changed while the run read it?)") from None
    with raw:
        compressed = compression_of(path, raw.read(HEAD_BYTES)) == "gzip"
        raw.seek(0)
        if compressed:
            verified = _verified_size(_gunzip(raw, failure))
            raw.seek(0)
            blocks = _checked_blocks(_gunzip(raw, []), verified, damaged=bool(failure))
        else:
            blocks = ((block, True) for block in iter(lambda: raw.read(BLOCK_BYTES), b""))
        problem = f"{os.path.basename(path)}: {failure[0]}" if failure else ""
        read = yield from _lines(blocks, lambda number, line: Reject.of(
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


def _lines(blocks: Iterable[tuple[bytes, bool]], unverified: Callable[[int, bytes], bytes | Reject]) -> Iterator[bytes | Reject]:
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


def _open_input(path: str) -> BinaryIO:
    """An input file, opened for reading after it was resolved: InputError when it is gone since."""
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as error:
        raise InputError(f"input {path} cannot be read: {error.strerror} (removed or changed while the run read it?)") from None


def _decompressed_blocks(raw: BinaryIO, path: str, failure: list[str], block_bytes: int) -> tuple[bool, Iterator[bytes]]:
    """Whether the file is gzip, and its bytes (decompressed) in blocks; a gzip file's damage is
    added to ``failure`` when met."""
    compressed = compression_of(path, raw.read(HEAD_BYTES)) == "gzip"
    raw.seek(0)
    if compressed:
        return True, (block for block, _ in _gunzip(raw, failure))
    return False, iter(lambda: raw.read(block_bytes), b"")


def index_lines(path: str, every: int) -> LineIndex:
    """One pass over a file (decompressed, for gzip): its lines and where each run of ``every``
    lines starts. Lines are counted as read_lines cuts them (an unfinished last line counts); a
    damaged gzip file is counted to its damage (read_lines reads no further)."""
    failure: list[str] = []
    with _open_input(path) as raw:
        compressed, blocks = _decompressed_blocks(raw, path, failure, SCAN_BYTES)
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
    with _open_input(path) as raw:
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

        yield from _lines(blocks(), lambda number, line: line)


# Lines per run of a translation file's index: a worker enters the file at the run holding the
# first line it needs (a gzip file: skips the bytes before it without cutting them into lines).
TRANSLATION_RUN_LINES = 10_000
# Lines of a translation file looked at to tell JSON lines or a table from plain text.
FORMAT_SAMPLE_LINES = 20


@dataclass(frozen=True)
class TranslationFile:
    """A file of translations made elsewhere: its line i translates line i of ``foreign``, an
    input's foreign file. ``system`` is the ``system`` of its pairs (what differs between the
    names of its foreign file's translation files, or the name the user gave); ``name`` tells the
    file from the run's other translation files (distinct_names), the ``source`` of its rejects."""

    path: str
    foreign: str
    system: str
    name: str
    index: LineIndex


def resolve_translations(spec: str, units: list[InputUnit]) -> list[TranslationFile]:
    """``--translations``: comma-separated ``foreign_file::translation_file`` items, the
    translation file a glob for several systems or ``system=file`` for one named by the user.
    InputError, before any work, for a foreign file that is not one of ``units``' foreign files, a
    translation file that is an input or is given twice, is damaged gzip, holds JSON lines or a
    table instead of text, or whose lines are not as many as its foreign file's (a shifted pair is
    never made)."""
    foreign_files = {unit.path for unit in units}
    inputs = foreign_files | {unit.partner for unit in units if unit.partner}
    given: dict[str, str] = {}
    named: dict[str, str] = {}
    for foreign, pattern in parse_input_spec(spec):
        if pattern is None:
            raise InputError(f"--translations {foreign!r}: write foreign_file::translation_file (a glob for one file per system)")
        foreign_path = _regular_file(foreign)
        if foreign_path not in foreign_files:
            raise InputError(f"--translations: {foreign} is not the foreign file of any input (--inputs)")
        system, pattern = _system_named(pattern)
        for path in _files_named(pattern):
            real = _regular_file(path)
            if real in inputs or real in given:
                raise InputError(f"--translations: {path} is {'an input' if real in inputs else 'given twice'}; "
                                 "a translation file translates one foreign file")
            given[real] = foreign_path
            if system:
                named[real] = system
    names = distinct_names(sorted(given))
    systems = _system_names(given, named)
    foreign_lines: dict[str, int] = {}
    files = []
    for path, foreign in sorted(given.items()):
        _check_content(path)
        index = index_lines(path, TRANSLATION_RUN_LINES)
        if index.damage:
            raise InputError(f"translation file {path} is damaged ({index.damage}, after line {index.lines:,}): which of its "
                             "lines translates which foreign line is not known past it; make it again")
        _check_plain_text(path, foreign)
        lines = foreign_lines.setdefault(foreign, index_lines(foreign, TRANSLATION_RUN_LINES).lines)
        if index.lines != lines:
            raise InputError(f"translation file {path} has {index.lines:,} lines but its foreign file {foreign} has {lines:,}: "
                             "line i of a translation file must translate line i of its foreign file")
        files.append(TranslationFile(path, foreign, systems[path], names[path], index))
    return files


def _system_named(pattern: str) -> tuple[str, str]:
    """(the system name the user gave, the file) of ``system=file`` (corpus.readers.named_file);
    ("", pattern) otherwise."""
    system, path = named_file(pattern)
    if path != pattern and not system.strip():
        raise InputError(f"--translations {pattern!r}: the system's name before '=' is empty")
    return system.strip(), path


def _system_names(given: dict[str, str], named: dict[str, str]) -> dict[str, str]:
    """Each translation file's system: the name the user gave, else what differs between the file
    names of its foreign file's translation files (``newstest2021.cs-en.hyp.Online-A.en.gz``
    among others: ``Online-A``), cut at dots, ``.gz`` aside; the file's distinct name when that is nothing or
    two files would share it (files of one name in two folders)."""
    by_foreign: dict[str, list[str]] = {}
    for path, foreign in sorted(given.items()):
        if path not in named:
            by_foreign.setdefault(foreign, []).append(path)
    systems = dict(named)
    for paths in by_foreign.values():
        stems = [os.path.basename(path).removesuffix(".gz").split(".") for path in paths]
        if len(stems) > 1:
            head = len(os.path.commonprefix(stems))
            tail = len(os.path.commonprefix([stem[::-1] for stem in stems]))
            derived = {path: ".".join(stem[head:len(stem) - tail]) for path, stem in zip(paths, stems, strict=True)}
        else:
            derived = {}
        fallback = distinct_names(paths)
        taken = [name for name in derived.values() if name]
        for path in paths:
            name = derived.get(path, "")
            systems[path] = name if name and taken.count(name) == 1 else fallback[path]
    for path, foreign in given.items():
        clash = [other for other, other_foreign in given.items() if other_foreign == foreign and other != path and systems[other] == systems[path]]
        if clash:
            raise InputError(f"--translations: {path} and {clash[0]} are both system {systems[path]!r} of {foreign}; give each its own name (name=file)")
    return systems


def _head_lines(path: str) -> list[bytes]:
    """The first FORMAT_SAMPLE_LINES non-blank lines of a file (decompressed), without their ends."""
    with _open_input(path) as raw:
        _, blocks = _decompressed_blocks(raw, path, [], BLOCK_BYTES)
        head = next(blocks, b"")
    pieces = head.split(b"\n")  # the last piece: the block's unfinished line, or nothing
    return [line.removesuffix(b"\r") for line in (pieces[:-1] or pieces) if line.strip()][:FORMAT_SAMPLE_LINES]


def _check_plain_text(path: str, foreign: str) -> None:
    """InputError for a translation file whose first lines are all JSON objects or all a table
    (every one holding a tab, as many on each): its lines would be taken for translations whole.
    The error names the candidates for the translations (the fields or columns whose text is not
    the foreign file's) with a command that extracts each, as printed, from where the user is."""
    sample = _head_lines(path)
    sources = {line.strip() for line in _head_lines(foreign)}
    objects = [_json_object(line) for line in sample]
    if sample and all(objects):
        fields = [key for key in objects[0] if all(isinstance(obj.get(key), str) for obj in objects)]
        candidates = [key for key in fields if {obj[key].strip().encode() for obj in objects} - sources] or fields
        commands = [(repr(key), "python3 -c 'import json, sys; [print(json.loads(line)[" + repr(key).replace("'", '"')
                     + "]) for line in sys.stdin]' < " + shlex.quote(path) + " > " + shlex.quote(_beside(path, key))) for key in candidates]
        raise InputError(f"translation file {path} holds JSON lines (fields {', '.join(objects[0])}), not one translation a line: "
                         + _extract_advice("field", commands))
    tabs = {line.count(b"\t") for line in sample}
    if sample and len(tabs) == 1 and 0 not in tabs:
        columns = list(zip(*(line.split(b"\t") for line in sample), strict=True))
        candidates = [n for n, column in enumerate(columns, start=1) if {cell.strip() for cell in column} - sources]
        commands = [(f"{n} ({columns[n - 1][0].decode('utf-8', 'replace')[:40]!r} …)",
                     f"cut -f {n} {shlex.quote(path)} > {shlex.quote(_beside(path, f'column{n}'))}") for n in candidates]
        raise InputError(f"translation file {path} is a table ({len(columns)} tab-separated columns on each of its first lines), "
                         f"not one translation a line: " + _extract_advice("column", commands))


def _json_object(line: bytes) -> dict | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _beside(path: str, part: str) -> str:
    """A file name for one part of ``path``, in its folder: ``hyp.jsonl`` → ``hyp.mt.txt``."""
    stem = os.path.splitext(os.path.basename(path).removesuffix(".gz"))[0]
    return os.path.join(os.path.dirname(path), f"{stem}.{re.sub(r'[^A-Za-z0-9_-]', '_', part)}.txt")


def _extract_advice(kind: str, commands: list[tuple[str, str]]) -> str:
    """What to run: the one command, or each candidate with its own."""
    if len(commands) == 1:
        return f"write the {kind} that holds the translations as text, one a line; run: {commands[0][1]}"
    return f"write the {kind} that holds the translations as text, one a line; the candidates: " + "; ".join(
        f"{kind} {name}, run: {command}" for name, command in commands)


def id_part(system: str) -> str:
    """``system`` as it ends a pair's id (``<bitext id>~<system>``): ``%`` and ``~`` written
    %25 and %7E, so the id's last ``~`` always starts the system's name."""
    return system.replace("%", "%25").replace("~", "%7E")


def translation_lines(file: TranslationFile, first: int) -> Iterator[bytes]:
    """The lines of a translation file from line ``first`` on (1-based), without their LF: a
    plain file entered at the run holding ``first``, a gzip file decompressed from its start once,
    the bytes before that run skipped without being cut into lines."""
    run = (first - 1) // TRANSLATION_RUN_LINES
    start = file.index.starts[run]
    lines = _gzip_lines_from(file.path, start) if file.index.compressed else read_line_range(file.path, start, None)
    return itertools.islice(lines, first - 1 - run * TRANSLATION_RUN_LINES, None)


class TranslationReader:
    """A translation file's lines, asked for in ascending runs of line numbers, read forward: it
    is opened again (translation_lines) only for a line before the one it is at, or, plain, one
    past the next run (entered there rather than read through). So the bitext shards of one gzip
    file, taken in line order, decompress it once in all."""

    def __init__(self, file: TranslationFile):
        self.file = file
        self._lines: Iterator[bytes] | None = None
        self._at = 0  # the number of the line self._lines yields next

    def take(self, numbers: list[int]) -> list[bytes]:
        """Lines ``numbers`` (ascending, 1-based), each without its LF."""
        taken = []
        for number in numbers:
            behind, far = number < self._at, not self.file.index.compressed and number - self._at > TRANSLATION_RUN_LINES
            if self._lines is None or behind or far:
                self._lines, self._at = translation_lines(self.file, number), number
            for _ in range(number - self._at):
                next(self._lines)
            taken.append(next(self._lines))
            self._at = number + 1
        return taken


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
            with _open_input(path) as raw, open(temporary, "wb") as out:
                for block in _decompressed_blocks(raw, path, failure, BLOCK_BYTES)[1]:
                    out.write(block)
            if failure:
                raise GzipDamaged(failure[0])

        write_atomically(copy, decompress, clear_stale=True)
    return copy


def plain_copy(file: TranslationFile, folder: str) -> TranslationFile:
    """``file`` (gzip) read from its decompressed_copy in ``folder``. Its name, system, foreign
    file and line index stay the original's (pairs and rejects name it; the index's offsets are
    the decompressed bytes'): only where its lines are read changes. InputError when the file is
    damaged now (it was checked whole when the run began, so it changed since)."""
    try:
        copy = decompressed_copy(file.path, folder)
    except GzipDamaged as damage:
        raise InputError(f"translation file {file.path} changed while the run read it: {damage}") from None
    return replace(file, path=copy, index=replace(file.index, compressed=False))


def plain_unit(unit: InputUnit, folder: str) -> InputUnit:
    """``unit`` with each of its gzip files read from a decompressed_copy in ``folder``, its
    ``source`` (and so its ids and its rejects' source) the original's; ``unit`` itself when it
    has no gzip file, or when one is damaged: that file is then read through as before, its intact
    members' lines kept and its damage made rejects (read_lines), which a copy could not carry."""
    copies = {}
    try:
        for path in (unit.path, unit.partner):
            if path and _is_gzip(path):
                copies[path] = decompressed_copy(path, folder)
    except GzipDamaged:
        return unit
    if not copies:
        return unit
    return replace(unit, path=copies.get(unit.path, unit.path), partner=copies.get(unit.partner, unit.partner), name=unit.source)


def _is_gzip(path: str) -> bool:
    with _open_input(path) as raw:
        return compression_of(path, raw.read(HEAD_BYTES)) == "gzip"


def _gzip_lines_from(path: str, start: int) -> Iterator[bytes]:
    """The lines of a gzip file (checked whole when the run began) from decompressed byte
    ``start``, the first byte of a line; InputError when it is damaged now (changed since)."""
    failure: list[str] = []
    with _open_input(path) as raw:
        _, blocks = _decompressed_blocks(raw, path, failure, BLOCK_BYTES)

        def from_start() -> Iterator[tuple[bytes, bool]]:
            offset = 0
            for block in blocks:
                if offset + len(block) > start:
                    yield block[max(0, start - offset):], True
                offset += len(block)
            if failure:
                raise InputError(f"translation file {path} changed while the run read it: {failure[0]}")

        yield from _lines(from_start(), lambda number, line: line)
