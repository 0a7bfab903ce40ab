"""Sentence pairs that people have judged, for checking the corpus's scores against them.

Each reader returns :class:`JudgedSet` objects: the pairs, one judgment per pair (a graded
similarity, or yes/no with 1 = the people call the pair equivalent / the translation valid), and
which side is which in the corpus's terms, so a score is computed as it is for corpus pairs:

* English–English sets: ``reference`` is the first sentence, ``translation`` the second (for WMT21
  the reference and a system's output, as in the corpus);
* sets with a foreign side (ParaCrawl, WMT21): ``source`` is the foreign sentence (in
  ``source_language``) and ``translation`` the English one a translator's score is computed for.

The sets and their files (folders laid out as ../shared/data):

==================  =================================================================  ========
set                 files                                                              judgment
==================  =================================================================  ========
STS 2012 … 2016     ``<sts>/STS<year>-test`` (corpus.sts), each year's datasets pooled  0–5
STS-B               ``<sts>/stsbenchmark/sts-{train,dev,test}.csv``, the splits present 0–5
SICK                ``<sts>/SICK/SICK_{train,trial,test}.txt``, the splits present       1–5
MSRP                ``msr_paraphrase_{train,test}.txt[.gz]`` (corpus.transfer)          yes/no
PAN                 ``pan-{train,test}_s{1,2}.txt[.gz]`` and ``pan-{train,test}.labels``  yes/no
ParaCrawl v3 …      ``paracrawl-*/sorted.en-cs``: label V (valid translation) = yes       yes/no
WMT21 DA xx→en      ``ad-seg-scores-<xx>-en.csv``, the documents in wmt21_documents()     z-score
a user's file       sentence TAB sentence TAB number (0/1 only: yes/no)                 as given
==================  =================================================================  ========

A set whose files are absent, or whose judgments cannot be tied to its lines (a WMT21 direction
without a segment mapping), raises :class:`MissingJudgments` (``gather`` turns it into a one-line
reason); a user's file with a wrong column count, a judgment that is not a number, an empty
sentence or bytes that are not UTF-8 is an :class:`InputError` naming the file and the line.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus.csen_more import lines
from corpus.errors import InputError
from corpus.ids import id_hashes, line_id
from corpus.readers import STRICT_NUMBER
from corpus.sts import MissingStsFiles, load_sick, load_sts_tests, load_stsb
from corpus.transfer import MissingTransferFiles, load_mrpc

GRADED, YES_NO = "graded", "yes/no"
# ParaCrawl's human labels (README of paracrawl-human-evaluations): only V is a valid translation.
PARACRAWL_VALID = "V"
# WMT21's direct assessment of every direction into English. Its segment numbers are not line
# numbers of newstest2021.<xx>-en.*: they count the test set's documents in another order
# (docs/2026-12-01-real-mt-judgments.md). The documents matched to their lines without the
# judgments' help are in wmt21_documents.tsv beside this file (scripts/wmt21_segment_mapping.py
# writes it); a direction without such a mapping says why here.
WMT21_DIRECTIONS = ("cs", "de", "ha", "is", "ja", "ru", "zh")
WMT21_UNMAPPED = {
    "ha": "no segment mapping: its 100 documents stand in 91 runs of the test-suite file and only 13 of its lines "
          "look like headlines, so the 9 cuts between documents, and which document is which, are not known without the scores",
    "zh": "no segment mapping: the WMT21 repository lacks zh-en's judgments by HIT (ad-zhen-good-stnd.csv) "
          "and its XML with document ids, so its documents cannot be told apart without the scores",
}
WMT21_DOCUMENTS_TABLE = Path(__file__).with_name("wmt21_documents.tsv")
# The files' places in ../shared/data/translations/wmt21 (the flat folder of ../shared/data/csen/wmt21 works too).
WMT21_FOLDERS = ("", "humaneval/newstest2021-toen", "sources", "references", "system-outputs")
# Systems the judgments name otherwise than their output files do.
WMT21_SYSTEM_FILES = {"Nemo": "NVIDIA-NeMo"}


class MissingJudgments(FileNotFoundError):
    """A judged set's files are absent: its message is the one line a report shows."""


@dataclass(eq=False)
class JudgedSet:
    """One set of judged pairs; the sides a set lacks are None."""

    name: str
    kind: str  # GRADED or YES_NO
    scale: str  # what the judgment means, for the report
    judgment: np.ndarray
    reference: list[str] | None = None
    translation: list[str] | None = None
    source: list[str] | None = None
    files: list[str] = field(default_factory=list)
    left_out: Counter = field(default_factory=Counter)  # lines not used, by reason
    source_language: str | None = None  # ISO 639 code of ``source``

    def __post_init__(self) -> None:
        sizes = {len(side) for side in (self.reference, self.translation, self.source) if side is not None}
        if sizes != {len(self.judgment)}:
            raise ValueError(f"{self.name}: sides of {sorted(sizes)} sentences for {len(self.judgment)} judgments")

    def __len__(self) -> int:
        return len(self.judgment)

    @property
    def binary(self) -> bool:
        return self.kind == YES_NO

    @property
    def english_pairs(self) -> bool:
        """Both sides English: every English–English score applies."""
        return self.reference is not None and self.translation is not None

    def hashes(self) -> np.ndarray:
        """Each pair's id hash (``<set>-<line>``): the corpus's tie-breaker for deciles."""
        return id_hashes(line_id(self.name, number) for number in range(len(self)))


def _require(paths: list[Path]) -> None:
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise MissingJudgments(f"absent: {', '.join(missing)}")


def _first_present(folder: Path, name: str) -> Path:
    """``name`` or ``name.gz`` in ``folder`` (the shared data gzips files over 1 MB)."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise MissingJudgments(f"absent: {folder / name}")


def sts_years(root: str | Path) -> list[JudgedSet]:
    """STS 2012–2016, each year's test datasets pooled (all are scored 0–5)."""
    try:
        datasets = load_sts_tests(root)
    except MissingStsFiles as missing:
        raise MissingJudgments(f"absent: {' '.join(map(str, missing.missing))}") from None
    years = []
    for year in dict.fromkeys(d.year for d in datasets):
        mine = [d for d in datasets if d.year == year]
        years.append(JudgedSet(f"STS {year}", GRADED, "similarity 0–5", np.concatenate([d.gold for d in mine]),
                               [s for d in mine for s in d.sent1], [s for d in mine for s in d.sent2],
                               files=[f"{root}/STS{year}-test ({', '.join(d.name for d in mine)})"]))
    return years


def _splits(name: str, scale: str, load: Callable, root: str | Path, splits: tuple[str, ...]) -> list[JudgedSet]:
    """Every split of an STS-style set that is present, pooled into one set."""
    found = []
    for split in splits:
        try:
            found.append(load(root, split))
        except MissingStsFiles:
            continue
    if not found:
        raise MissingJudgments(f"absent: {name} ({', '.join(splits)}) under {root}")
    return [JudgedSet(name, GRADED, scale, np.concatenate([d.gold for d in found]), [s for d in found for s in d.sent1],
                      [s for d in found for s in d.sent2], files=[f"{root} ({', '.join(d.name for d in found)})"])]


def stsb(root: str | Path) -> list[JudgedSet]:
    return _splits("STS-B", "similarity 0–5", load_stsb, root, ("train", "dev", "test"))


def sick(root: str | Path) -> list[JudgedSet]:
    return _splits("SICK", "relatedness 1–5", load_sick, root, ("train", "trial", "test"))


def msrp(folder: str | Path) -> list[JudgedSet]:
    """MSRP, train and test pooled: 1 = paraphrase."""
    try:
        loaded = load_mrpc(folder)
    except MissingTransferFiles as missing:
        raise MissingJudgments(f"absent: {' '.join(map(str, missing.missing))}") from None
    splits = list(loaded.splits.values())
    return [JudgedSet("MSRP", YES_NO, "paraphrase yes/no", np.concatenate([s.labels for s in splits]).astype(np.float64),
                      [x for s in splits for x in s.first], [x for s in splits for x in s.second], files=loaded.files,
                      left_out=Counter(loaded.rejects))]


def pan(folder: str | Path) -> list[JudgedSet]:
    """PAN (Madnani et al. 2012's plagiarism pairs), train and test pooled: 1 = paraphrase."""
    folder = Path(folder)
    first, second, labels, files = [], [], [], []
    for split in ("train", "test"):
        paths = [_first_present(folder, f"pan-{split}_s1.txt"), _first_present(folder, f"pan-{split}_s2.txt"),
                 _first_present(folder, f"pan-{split}.labels")]
        a, b, label = (lines(path) for path in paths)
        if not len(a) == len(b) == len(label):
            raise InputError(f"{folder}: pan-{split} files have {len(a)}, {len(b)} and {len(label)} lines; they must be line-aligned")
        first, second, labels, files = first + a, second + b, labels + label, files + [str(path) for path in paths]
    return [JudgedSet("PAN", YES_NO, "paraphrase yes/no", np.array([float(x.strip() == "1") for x in labels]), first, second, files=files)]


def paracrawl(folder: str | Path) -> list[JudgedSet]:
    """Each ParaCrawl release's human-labelled English–Czech sample: 1 = valid translation (V);
    lines without a label are left out and counted."""
    paths = sorted(Path(folder).glob("*/sorted.en-cs"))
    if not paths:
        raise MissingJudgments(f"absent: {folder}/*/sorted.en-cs")
    found = []
    for path in paths:
        label_column = 7 if "v3" in path.parent.name else 5  # release 3 has two more score columns
        english, czech, labels, left_out = [], [], [], Counter()
        for text in lines(path):
            fields = text.split("\t")
            if len(fields) <= label_column or not fields[label_column].strip():
                left_out["no label"] += 1
                continue
            english.append(fields[2])
            czech.append(fields[3])
            labels.append(float(fields[label_column].strip() == PARACRAWL_VALID))
        release = path.parent.name.removeprefix("paracrawl-").split("-valid")[0].replace("-", ".")
        found.append(JudgedSet(f"ParaCrawl {release} cs–en", YES_NO, "valid translation (V) yes/no", np.array(labels),
                               translation=english, source=czech, files=[str(path)], left_out=left_out, source_language="cs"))
    return found


def wmt21_documents(table: Path = WMT21_DOCUMENTS_TABLE) -> dict[str, tuple[tuple[int, int, int], ...]]:
    """Each direction's documents matched to lines: (first segment number, last, first 0-based line)."""
    documents: dict[str, list[tuple[int, int, int]]] = {}
    for text in lines(table)[1:]:
        direction, first, last, first_line = text.split("\t")[:4]
        documents.setdefault(direction, []).append((int(first), int(last), int(first_line)))
    return {direction: tuple(found) for direction, found in documents.items()}


def _wmt21_file(folder: Path, name: str) -> Path:
    """``name`` (or ``name.gz``) in the folder or the subfolder the WMT21 layout puts it in."""
    for sub in WMT21_FOLDERS:
        for candidate in (folder / sub / name, folder / sub / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    raise MissingJudgments(f"absent: {folder / name}")


def wmt21_adequacy(folder: str | Path, direction: str = "cs", documents: tuple[tuple[int, int, int], ...] | None = None) -> list[JudgedSet]:
    """WMT21 <direction>→en direct assessment of the documents matched to lines (``documents``,
    default wmt21_documents()): each judged output of a system (HUMAN: the second reference) with
    the first reference and the source; the judgment is the annotator-standardised z-score of how
    adequately it expresses the reference. Judgments of other segments, and of HUMAN where there is
    no second reference, are left out and counted."""
    if documents is None:
        if direction in WMT21_UNMAPPED:
            raise MissingJudgments(WMT21_UNMAPPED[direction])
        documents = wmt21_documents()[direction]
    folder, stem = Path(folder), f"newstest2021.{direction}-en"
    scores = _wmt21_file(folder, f"ad-seg-scores-{direction}-en.csv")
    texts = {name: _wmt21_file(folder, f"{stem}.{name}") for name in ("ref.A.en", f"src.{direction}")}
    with suppress(MissingJudgments):  # a direction with one reference: HUMAN's judgments are left out
        texts["HUMAN"] = _wmt21_file(folder, f"{stem}.ref.B.en")
    read = {name: lines(path) for name, path in texts.items()}
    line_of = {sid: first_line + sid - first for first, last, first_line in documents for sid in range(first, last + 1)}
    outputs, reference, source, judgment, left_out = [], [], [], [], Counter()
    files = [str(scores), *map(str, texts.values())]
    for text in lines(scores)[1:]:
        system, sid, _raw, z, _n = text.split()
        name = system.rsplit(".", 1)[0]
        if int(sid) not in line_of:
            left_out["segment not matched to a line"] += 1
            continue
        if name == "HUMAN" and name not in read:
            left_out["HUMAN: no second reference"] += 1
            continue
        if name not in read:
            hypotheses = _wmt21_file(folder, f"{stem}.hyp.{WMT21_SYSTEM_FILES.get(name, name)}.en")
            files.append(str(hypotheses))
            read[name] = lines(hypotheses)
        line = line_of[int(sid)]
        outputs.append(read[name][line])
        reference.append(read["ref.A.en"][line])
        source.append(read[f"src.{direction}"][line])
        judgment.append(float(z))
    return [JudgedSet(f"WMT21 DA {direction}→en", GRADED, "adequacy z-score", np.array(judgment), reference, outputs, source, files, left_out,
                      source_language=direction)]


def judgment_file(path: str | Path) -> list[JudgedSet]:
    """A user's file: ``sentence TAB sentence TAB judgment`` a line, UTF-8; yes/no when every
    judgment is 0 or 1. Every problem is an InputError naming the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--judged-file {path}: no such file")
    first, second, judgment = [], [], []
    raw_lines = path.read_bytes().split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}:{number}: not UTF-8 text") from None
        fields = text.split("\t")
        if len(fields) != 3:
            raise InputError(f"{path}:{number}: {len(fields)} tab-separated field(s), need 3 (sentence, sentence, judgment)")
        a, b, value = fields
        if not STRICT_NUMBER.fullmatch(value.strip()) or not math.isfinite(float(value)):
            raise InputError(f"{path}:{number}: the judgment {value!r} is not a number")
        if not a.strip() or not b.strip():
            raise InputError(f"{path}:{number}: an empty sentence")
        first.append(a)
        second.append(b)
        judgment.append(float(value))
    if not judgment:
        raise InputError(f"{path}: no judged pair in it")
    values = np.array(judgment)
    binary = set(np.unique(values)) <= {0.0, 1.0}
    return [JudgedSet(f"file {path.name}", YES_NO if binary else GRADED, "yes/no (1 = yes)" if binary else "as given", values,
                      first, second, files=[str(path)])]


def gather(loaders: dict[str, Callable[[], list[JudgedSet]]]) -> tuple[list[JudgedSet], dict[str, str]]:
    """Every set the loaders find, and for each loader whose files are absent the one-line reason."""
    found, skipped = [], {}
    for name, load in loaders.items():
        try:
            found += load()
        except MissingJudgments as missing:
            skipped[name] = str(missing)
    return found, skipped
