"""Translation files made elsewhere: which foreign file each translates, checked line for line, and their lines read forward."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace

from corpus.errors import InputError
from corpus.inputs import check_content, files_named, regular_file
from corpus.lines import (
    BLOCK_BYTES,
    GzipDamaged,
    LineIndex,
    cut_lines,
    decompressed_blocks,
    decompressed_copy,
    index_lines,
    open_input,
    read_line_range,
)
from corpus.readers import InputUnit, distinct_names, named_file, parse_input_spec

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
        foreign_path = regular_file(foreign)
        if foreign_path not in foreign_files:
            raise InputError(f"--translations: {foreign} is not the foreign file of any input (--inputs)")
        system, pattern = _system_named(pattern)
        for path in files_named(pattern):
            real = regular_file(path)
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
        check_content(path)
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
            raise InputError(f"--translations: {path} and {clash[0]} are both system {systems[path]!r} of {foreign}; "
                             "give each its own name (name=file)")
    return systems


def _head_lines(path: str) -> list[bytes]:
    """The first FORMAT_SAMPLE_LINES non-blank lines of a file (decompressed), without their ends."""
    with open_input(path) as raw:
        _, blocks = decompressed_blocks(raw, path, [], BLOCK_BYTES)
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


def _gzip_lines_from(path: str, start: int) -> Iterator[bytes]:
    """The lines of a gzip file (checked whole when the run began) from decompressed byte
    ``start``, the first byte of a line; InputError when it is damaged now (changed since)."""
    failure: list[str] = []
    with open_input(path) as raw:
        _, blocks = decompressed_blocks(raw, path, failure, BLOCK_BYTES)

        def from_start() -> Iterator[tuple[bytes, bool]]:
            offset = 0
            for block in blocks:
                if offset + len(block) > start:
                    yield block[max(0, start - offset):], True
                offset += len(block)
            if failure:
                raise InputError(f"translation file {path} changed while the run read it: {failure[0]}")

        yield from cut_lines(from_start(), lambda number, line: line)
