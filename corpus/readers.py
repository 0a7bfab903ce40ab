"""Readers for the three input layouts; every malformed line becomes a Reject, never an exception.

The readers take iterables of raw byte lines (what any file object yields, or
``corpus.lines.read_lines``, which puts a Reject in place of a line it cannot vouch for), so the
same code serves plain files, gzip streams and tests. Line numbers are 1-based.

Input specifications (``parse_input_spec``), comma-separated:
  * ``path/or/glob`` of CzEng 1.6 plaintext files (gzip or plain): id, filter score, Czech, English;
  * ``x.cs`` (or ``x.ces``; ``x.de``, ``x.deu`` … for ``--source-language de``) alone: line-aligned
    with ``x.en`` (or ``x.eng``) beside it;
  * ``foreign_file::english_file``: an explicit line-aligned pair (e.g. WMT ``src.cs`` with ``ref.A.en``).

Each pair carries its pivot language (the foreign side's, ``pivot``): the one its file's suffix
names, else the run's first source language.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest

from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.ids import line_id

DEFAULT_MAX_LINE_BYTES = 10_000
RAW_KEEP_CHARS = 1_000
# Invisible formatting, removed from the text: zero-width characters (U+FEFF is also the byte
# order mark), bidirectional marks, embeddings, overrides and isolates. They change no word,
# yet make equal sentences differ and can reorder what a reader sees.
INVISIBLE_FORMATTING = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u061c"
                                               "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
# Control characters reject the line (`control_character`): C0 but TAB, DEL and C1. A NUL or a
# stray carriage return inside a line means binary data or a broken export, not text.
CONTROL_CHARACTER = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
# Said of a line holding a CR: lines end at LF (or CRLF) only, so a file whose lines end with a
# CR alone (classic Mac OS) is one long line.
CARRIAGE_RETURN_NOTE = "; it holds a carriage return: lines end with LF or CRLF (convert CR-only line ends: tr '\\r' '\\n')"
# A number as the input formats write it: ASCII digits only (Python's float() also takes
# "1_0", "١", " 1 " and "infinity").
STRICT_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class BitextRecord:
    id: str
    source: str
    line: int
    domain: str
    czeng_score: float | None
    pivot: str
    foreign: str
    en: str


@dataclass(frozen=True, slots=True)
class ParaphraseRecord:
    """One line of the ParaNMT-50M release: reference, its back-translation, a score."""

    id: str
    source: str
    line: int
    reference: str
    translation: str
    score: float


@dataclass(frozen=True, slots=True)
class Reject:
    source: str
    line: int
    reason: str
    detail: str
    raw: str

    @classmethod
    def of(cls, source: str, line: int, reason: str, detail: str, raw: bytes | str) -> Reject:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        return cls(source, line, reason, detail, text[:RAW_KEEP_CHARS])


@dataclass(frozen=True, slots=True)
class InputUnit:
    """One thing to read: a CzEng/ParaNMT file, or a foreign file with its English partner.
    ``name`` tells it from the run's other inputs (see :func:`distinct_names`); it defaults to
    the file name. ``language``: its pivot language (corpus.languages.standard_code)."""

    path: str
    partner: str | None = None
    name: str = ""
    language: str = "cs"

    @property
    def source(self) -> str:
        """The ``source`` column of its rows and rejects."""
        return self.name or os.path.basename(self.path)

    @property
    def stem(self) -> str:
        """Source without the language suffix (and without .gz)."""
        name = self.source.removesuffix(".gz")
        return os.path.splitext(name)[0] if self.partner else name

    @property
    def id_prefix(self) -> str:
        """The ids of aligned input: the stem and the pivot language (``newstest2013.de``), so
        that the foreign sides of one English file (multi-parallel data) have ids of their own."""
        return f"{self.stem}.{self.language}"

    @property
    def domain(self) -> str:
        """Aligned input's domain: its file name up to the first dot (``tatoeba.cs`` → tatoeba)."""
        return os.path.basename(self.stem).split(".", 1)[0]


def distinct_names(paths: Iterable[str]) -> dict[str, str]:
    """Each path's shortest trailing part that no other path ends with: its file name, unless
    several inputs share it (``a/tatoeba.cs`` and ``b/tatoeba.cs`` are two sources, and their
    line ids differ)."""
    components = {path: path.split("/") for path in paths}
    names = {}
    for path, parts in components.items():
        depth = 1
        while depth < len(parts) and sum(other[-depth:] == parts[-depth:] for other in components.values()) > 1:
            depth += 1
        names[path] = "/".join(parts[-depth:])
    return names


def parse_input_spec(spec: str) -> list[tuple[str, str | None]]:
    """Split an input specification into (path or glob, explicit partner or None) items. An item
    ``@FILE`` (FILE existing, and no file named ``@FILE``) is a listing: one item a line, its
    relative paths relative to the listing's folder, blank lines and ``#`` comments aside."""
    items = []
    for item in _listed_items(spec):
        cs_path, sep, en_path = item.partition("::")
        if sep and not (cs_path and en_path):
            raise InputError(f"input {item!r}: write an aligned pair as foreign_file::english_file")
        items.append((cs_path, en_path or None))
    if not items:
        raise InputError("no input given")
    return items


def _listed_items(spec: str) -> Iterator[str]:
    """The comma-separated items of ``spec``, each ``@FILE`` replaced by the items it lists."""
    for item in comma_items(spec):
        listing = item[1:]
        if not item.startswith("@") or os.path.lexists(item) or not os.path.lexists(listing):
            yield item
            continue
        try:  # utf-8-sig: a byte-order mark (Windows Notepad writes one) is not part of the first item
            with open(listing, encoding="utf-8-sig") as handle:
                lines = [line.strip() for line in handle]
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"listing {listing} cannot be read: {error}") from None
        folder = os.path.dirname(listing)
        for line in lines:
            if line and not line.startswith("#"):
                yield _in_folder(folder, line)


def _in_folder(folder: str, item: str) -> str:
    """A listed item as it would be written on the command line from the listing's ``folder``:
    its paths joined to the folder, a translation file's system name (``name=path``, read as
    :func:`named_file` reads it, whatever the name holds) kept as it is."""
    first, sep, partner = item.partition("::")
    joined = os.path.join(folder, first) if first else first
    if not (sep and partner):
        return joined + sep
    name, path = named_file(partner, folder)
    return f"{joined}::{name + '=' if name else ''}{os.path.join(folder, path)}"


def named_file(partner: str, folder: str = "") -> tuple[str, str]:
    """(the name given to a file, its path) of an item's second part: ``name=path`` names the file
    at ``path``, unless the whole part is a file that exists (seen from ``folder``, a listing's, where
    relative paths start): a name that exists is a file, whatever it holds (``a=b.en``); ("", the
    part) otherwise. The one reading of it, on the command line, in a listing or a config file."""
    name, sep, path = partner.partition("=")
    if not sep or os.path.lexists(os.path.join(folder, partner)) or not os.path.lexists(os.path.join(folder, path)):
        return "", partner
    return name, path


def aligned_partner(path: str, foreign_suffixes: dict[str, str]) -> str | None:
    """The English file beside a line-aligned foreign file (``x.cs`` → ``x.en``, ``x.ces.gz`` →
    ``x.eng.gz``, ``x.deu`` → ``x.eng``; the other spelling of English where only it exists), or
    None for CzEng-format files. ``foreign_suffixes``: suffix → language of the run's languages."""
    compressed = ".gz" if path.endswith(".gz") else ""
    stem, suffix = os.path.splitext(path.removesuffix(".gz"))
    if suffix not in foreign_suffixes:
        return None
    two_letters = len(suffix) == len(".cs")
    candidates = [stem + english + compressed for english in ((".en", ".eng") if two_letters else (".eng", ".en"))]
    return next((candidate for candidate in candidates if os.path.lexists(candidate)), candidates[0])


def decode_line(raw: bytes, source: str, line: int, max_line_bytes: int) -> str | Reject:
    """The line's text without invisible formatting (and so without a byte-order mark), or a
    Reject: too long, not UTF-8, or holding a control character."""
    if len(raw) > max_line_bytes:
        note = CARRIAGE_RETURN_NOTE if b"\r" in raw else ""
        return Reject.of(source, line, "too_long", f"{len(raw)} bytes > limit {max_line_bytes}{note}", raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return Reject.of(source, line, "invalid_utf8", f"byte {error.start}: {error.reason}", raw)
    if control := CONTROL_CHARACTER.search(text):
        note = CARRIAGE_RETURN_NOTE if control.group() == "\r" else ""
        return Reject.of(source, line, "control_character", f"U+{ord(control.group()):04X} at character {control.start()}{note}", raw)
    return text.translate(INVISIBLE_FORMATTING)


def split_lines(data: bytes) -> list[bytes]:
    """A whole file's lines, each without its end (without_line_end): the one rule of every
    reader of text files here (inputs, judged sets, STS, transfer tasks, training pairs)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [without_line_end(line) for line in lines]


def without_line_end(raw: bytes) -> bytes:
    """The line without its end: LF, CRLF, or a CR that ends the file. Any other CR stays in the
    line (and rejects it): one line's stray CR never decides how the others end."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw[:-1] if raw.endswith(b"\r") else raw


def _tab_fields(
    lines: Iterable[bytes | Reject], source: str, columns: int, max_line_bytes: int, first_line: int = 1
) -> Iterator[tuple[int, bytes, list[str]] | Reject]:
    """(line number, raw line, fields as read) of tab-separated lines, the first being line
    ``first_line`` of its file; bad lines as Rejects."""
    for number, raw in enumerate(lines, start=first_line):
        if isinstance(raw, Reject):
            yield raw
            continue
        raw = without_line_end(raw)
        if not raw.strip():
            yield Reject.of(source, number, "blank_line", "line holds no pair", raw)
            continue
        text = decode_line(raw, source, number, max_line_bytes)
        if isinstance(text, Reject):
            yield text
            continue
        fields = text.split("\t")
        if len(fields) != columns:
            yield Reject.of(source, number, "column_count", f"{len(fields)} columns, expected {columns}", raw)
            continue
        yield number, raw, fields


def iter_czeng(
    lines: Iterable[bytes | Reject], source: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, pivot: str = "cs", first_line: int = 1
) -> Iterator[BitextRecord | Reject]:
    """CzEng 1.6 plaintext: ``id<TAB>filter score<TAB>foreign (Czech)<TAB>English``."""
    for item in _tab_fields(lines, source, 4, max_line_bytes, first_line):
        if isinstance(item, Reject):
            yield item
            continue
        number, raw, (pair_id, *fields) = item
        score_text, cs, en = (field.strip() for field in fields)
        if not pair_id.strip():
            yield Reject.of(source, number, "empty_id", "the pair id is empty", raw)
            continue
        if pair_id != pair_id.strip():  # stripped, two distinct ids could become one
            yield Reject.of(source, number, "id_whitespace", f"the pair id {pair_id!r} has leading or trailing whitespace", raw)
            continue
        score = _finite_float(score_text)
        if score is None:
            yield Reject.of(source, number, "bad_score", f"filter score {score_text!r} is not a finite number", raw)
            continue
        if empty := _empty_sides(cs, en):
            yield Reject.of(source, number, "empty_side", empty, raw)
            continue
        yield BitextRecord(pair_id, source, number, pair_id.split("-", 1)[0], score, pivot, cs, en)


def _finite_float(text: str) -> float | None:
    """The number ``text`` spells (STRICT_NUMBER), or None."""
    if not STRICT_NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _empty_sides(cs: str, en: str) -> str:
    sides = [name for name, text in (("foreign", cs), ("English", en)) if not text]
    return " and ".join(sides) + " side empty" if sides else ""


def iter_aligned(
    cs_lines: Iterable[bytes | Reject],
    en_lines: Iterable[bytes | Reject],
    unit: InputUnit,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    first_line: int = 1,
) -> Iterator[BitextRecord | Reject]:
    """Two line-aligned files, from their line ``first_line``; lines past the end of the shorter
    file are ``misaligned`` rejects; a Reject in place of a line (either side's) is the pair's."""
    source, domain = unit.source, unit.domain
    partner = os.path.basename(unit.partner or "")
    for number, (cs_raw, en_raw) in enumerate(zip_longest(cs_lines, en_lines), start=first_line):
        if isinstance(cs_raw, Reject) or isinstance(en_raw, Reject):
            yield cs_raw if isinstance(cs_raw, Reject) else en_raw
            continue
        if cs_raw is None or en_raw is None:
            present, missing = (source, partner) if en_raw is None else (partner, source)
            raw = without_line_end(cs_raw if en_raw is None else en_raw)
            yield Reject.of(source, number, "misaligned", f"{present} has line {number}, {missing} has fewer lines", raw)
            continue
        cs_raw, en_raw = without_line_end(cs_raw), without_line_end(en_raw)
        both = cs_raw + b"\t" + en_raw
        cs = decode_line(cs_raw, source, number, max_line_bytes)
        en = decode_line(en_raw, source, number, max_line_bytes)
        if isinstance(cs, Reject) or isinstance(en, Reject):
            bad = cs if isinstance(cs, Reject) else en
            yield Reject.of(source, number, bad.reason, bad.detail, both)
            continue
        cs, en = cs.strip(), en.strip()
        if empty := _empty_sides(cs, en):
            yield Reject.of(source, number, "empty_side", empty, both)
            continue
        yield BitextRecord(line_id(unit.id_prefix, number), source, number, domain, None, unit.language, cs, en)


def iter_paranmt(
    lines: Iterable[bytes | Reject], source: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, first_line: int = 1
) -> Iterator[ParaphraseRecord | Reject]:
    """ParaNMT-50M release layout: ``reference<TAB>translation<TAB>score``. Ids keep the file's
    extension (``para-nmt-5m.txt-000000001``): ``train.tsv`` and ``train.txt`` are two files,
    and neither loses its pairs to the other's ids."""
    stem = source.removesuffix(".gz")  # as InputUnit.stem of a file without a partner
    for item in _tab_fields(lines, source, 3, max_line_bytes, first_line):
        if isinstance(item, Reject):
            yield item
            continue
        number, raw, fields = item
        reference, translation, score_text = (field.strip() for field in fields)
        score = _finite_float(score_text)
        if score is None:
            yield Reject.of(source, number, "bad_score", f"score {score_text!r} is not a finite number", raw)
            continue
        if not reference or not translation:
            side = "reference" if not reference else "translation"
            yield Reject.of(source, number, "empty_side", f"{side} empty", raw)
            continue
        yield ParaphraseRecord(line_id(stem, number), source, number, reference, translation, score)
