"""Input files: which file each input names, checked before any work.

Every stage that reads the user's raw files resolves them with :func:`resolve_inputs` (and reads
them with ``corpus.lines.read_lines``, whose rules are its own), so each rule here holds for
every input:

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
* **Readable plain or gzip text.** An empty or unreadable file, one compressed other than with
  gzip (``corpus.lines.compression_of``) or one in UTF-16 is refused, before any work.
"""

from __future__ import annotations

import glob
import os
import shlex
import stat
from dataclasses import replace

from corpus import languages
from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.lines import HEAD_BYTES, GzipDamaged, compression_of, decompressed_copy, is_gzip
from corpus.outputs import digest_of
from corpus.readers import (
    InputUnit,
    aligned_partner,
    distinct_names,
    named_file,
    parse_input_spec,
)

ENGLISH_SUFFIXES = languages.file_suffixes(languages.ENGLISH)
FILE_KINDS = {stat.S_IFIFO: "pipe", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device", stat.S_IFSOCK: "socket"}


def source_languages(spec: str) -> tuple[str, ...]:
    """``--source-language``: comma-separated language codes, each as its standard code (the
    first is the pivot of inputs whose name does not say theirs); InputError for one that is not."""
    codes = tuple(dict.fromkeys(languages.standard_code(tag) for tag in comma_items(spec)))
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
        for path in files_named(pattern):
            partner = aligned_partner(path, suffixes)
            if partner and not os.path.lexists(partner):
                raise InputError(f"{path} is line-aligned input but its partner {partner} is missing")
            given.append((path, partner))
    units = {InputUnit(regular_file(path), regular_file(partner) if partner else None, language=language_of(path)): path
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
                check_content(path)
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


def files_named(pattern: str) -> list[str]:
    """The input itself when it exists, whatever characters its name holds; else the files its
    glob matches as in the shell (relative to the current folder; ``**``: any depth), sorted."""
    if os.path.lexists(pattern):
        return [pattern]
    matched = sorted(glob.glob(pattern, recursive=True))
    if not matched:
        raise InputError(f"no input file matches {pattern!r}")
    return matched


def regular_file(path: str) -> str:
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


def check_content(path: str) -> None:
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


def plain_unit(unit: InputUnit, folder: str) -> InputUnit:
    """``unit`` with each of its gzip files read from a decompressed_copy in ``folder``, its
    ``source`` (and so its ids and its rejects' source) the original's; ``unit`` itself when it
    has no gzip file, or when one is damaged: that file is then read through as before, its intact
    members' lines kept and its damage made rejects (read_lines), which a copy could not carry."""
    copies = {}
    try:
        for path in (unit.path, unit.partner):
            if path and is_gzip(path):
                copies[path] = decompressed_copy(path, folder)
    except GzipDamaged:
        return unit
    if not copies:
        return unit
    return replace(unit, path=copies.get(unit.path, unit.path), partner=copies.get(unit.partner, unit.partner), name=unit.source)
