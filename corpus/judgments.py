"""Sentence pairs that people have judged, for checking the corpus's scores against them.

Each reader returns :class:`JudgedSet` objects: the pairs, one judgment per pair (a graded
similarity, or yes/no with 1 = the people call the pair equivalent / the translation valid), and
which side is which in the corpus's terms, so a score is computed as it is for corpus pairs:

* English–English sets: ``reference`` is the first sentence, ``translation`` the second (for WMT21
  the reference and a system's output, as in the corpus);
* Czech–English sets (ParaCrawl, WMT21): ``source`` is the Czech sentence and ``translation`` the
  English one a translator's score is computed for.

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
WMT21 DA cs→en      ``ad-seg-scores-cs-en.csv``, the documents in WMT21_DOCUMENTS         z-score
a user's file       sentence TAB sentence TAB number (0/1 only: yes/no)                 as given
==================  =================================================================  ========

A set whose files are absent raises :class:`MissingJudgments` (``gather`` turns it into a one-line
reason); a user's file with a wrong column count, a judgment that is not a number, an empty
sentence or bytes that are not UTF-8 is an :class:`InputError` naming the file and the line.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
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
# WMT21 cs→en direct assessment: the documents whose segment numbers are matched to lines of
# newstest2021.cs-en.* without the judgments' help (docs/2026-11-27-scores-vs-judgments.md): the
# segment numbers count the 62 documents in another order than the text files; each of these
# five is the only document of its length in both orders. (first segment number, last, first
# 0-based line of the text files).
WMT21_DOCUMENTS = ((238, 248, 130), (393, 424, 748), (445, 473, 573), (495, 500, 541), (744, 768, 780))
WMT21_SCORES = "ad-seg-scores-cs-en.csv"


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
        paths = [_first_present(folder, f"pan-{split}_s1.txt"), _first_present(folder, f"pan-{split}_s2.txt"), _first_present(folder, f"pan-{split}.labels")]
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
                               translation=english, source=czech, files=[str(path)], left_out=left_out))
    return found


def wmt21_adequacy(folder: str | Path) -> list[JudgedSet]:
    """WMT21 cs→en direct assessment of the documents in WMT21_DOCUMENTS: each judged output of
    a system (HUMAN: the second reference) with the first reference and the Czech source; the
    judgment is the annotator-standardised z-score of how adequately it expresses the reference."""
    folder = Path(folder)
    scores = folder / WMT21_SCORES
    texts = {name: folder / f"newstest2021.cs-en.{name}" for name in ("ref.A.en", "ref.B.en", "src.cs")}
    _require([scores, *texts.values()])
    read = {name: lines(path) for name, path in texts.items()}
    line_of = {sid: first_line + sid - first for first, last, first_line in WMT21_DOCUMENTS for sid in range(first, last + 1)}
    outputs, reference, source, judgment, left_out = [], [], [], [], Counter()
    files = [str(scores), *map(str, texts.values())]
    for text in lines(scores)[1:]:
        system, sid, _raw, z, _n = text.split()
        if int(sid) not in line_of:
            left_out["segment not matched to a line"] += 1
            continue
        name = system.rsplit(".", 1)[0]
        hypotheses = folder / f"newstest2021.cs-en.hyp.{name}.en"
        if name != "HUMAN" and not hypotheses.is_file():
            raise MissingJudgments(f"absent: {hypotheses}")
        if name != "HUMAN" and str(hypotheses) not in files:
            files.append(str(hypotheses))
            read[name] = lines(hypotheses)
        line = line_of[int(sid)]
        outputs.append(read["ref.B.en" if name == "HUMAN" else name][line])
        reference.append(read["ref.A.en"][line])
        source.append(read["src.cs"][line])
        judgment.append(float(z))
    return [JudgedSet("WMT21 DA cs→en", GRADED, "adequacy z-score", np.array(judgment), reference, outputs, source, files, left_out)]


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
