"""Readers for the paper's Table 8 transfer tasks (SentEval's classification sets).

MR, CR, SUBJ, MPQA, TREC and SST-2 come from one folder laid out like ../shared/data/transfer;
MRPC from the MSRP folder (``msr_paraphrase_train.txt[.gz]``, ``msr_paraphrase_test.txt``);
SICK-E and SICK-R from the SICK folder of the STS data (``SICK_train.txt`` and the test file, or
``SICK_trial.txt`` when the test file is absent: the set's ``evaluated_on`` says which).

The raw files are as published: MR and SUBJ hold Windows-1252 bytes (0x85 is "…", not a line
end), SST-2 is UTF-8. Each line is decoded as UTF-8, else Windows-1252, else Latin-1 (which
decodes any byte: the five bytes Windows-1252 leaves undefined); lines end at LF only. A line
that cannot be used (empty, no label, an unknown label, too few fields) is counted in the set's
``rejects`` under its reason, never silently dropped; a missing file is one
:class:`MissingTransferFiles` line, a damaged one (unreadable gzip, no usable line, no header)
one :class:`InputError` line.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.evaluation_data import fetch_hint
from corpus.readers import split_lines

# The nine tasks in the paper's Table 8 column order.
TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICK-R", "SICK-E")
# Single-sentence sets scored by 10-fold cross-validation: (file, label) per class.
CV_FILES = {
    "MR": (("rt-polarity.neg", "negative"), ("rt-polarity.pos", "positive")),
    "CR": (("custrev.neg", "negative"), ("custrev.pos", "positive")),
    "SUBJ": (("subj.objective", "objective"), ("subj.subjective", "subjective")),
    "MPQA": (("mpqa.neg", "negative"), ("mpqa.pos", "positive")),
}
SST2_FILES = {"train": "stsa.binary.train", "dev": "stsa.binary.dev", "test": "stsa.binary.test"}
TREC_FILES = {"train": "TREC.train", "test": "TREC.test"}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
MRPC_TRAIN = ("msr_paraphrase_train.txt", "msr_paraphrase_train.txt.gz")
MRPC_TEST = ("msr_paraphrase_test.txt", "msr_paraphrase_test.txt.gz")
SICK_ENTAILMENT = ("CONTRADICTION", "ENTAILMENT", "NEUTRAL")
DECODINGS = ("utf-8", "cp1252", "latin-1")  # tried in order, per line; latin-1 never fails


def missing_data_message(missing: Iterable[Path]) -> str:
    """The one line said when transfer files are absent (every one named)."""
    listed = ", ".join(str(path) for path in missing)
    return f"transfer evaluation data missing: {listed} ({fetch_hint('transfer')}; the layouts: docs/README-transfer.md)"


class MissingTransferFiles(FileNotFoundError, InputError):
    """Transfer files are absent; ``missing`` lists every one, not only the first."""

    def __init__(self, missing: Iterable[Path]):
        self.missing = [Path(path) for path in missing]
        super().__init__(missing_data_message(self.missing))


@dataclass(eq=False)
class Labelled:
    """Sentences (or sentence pairs: ``second`` is set) with one label each: class indices, or
    for SICK-R relatedness scores."""

    first: list[str]
    labels: np.ndarray
    second: list[str] | None = None

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(eq=False)
class TransferSet:
    """One Table 8 task: its splits ("all" alone: cross-validation), class names (empty for
    SICK-R), the split it is scored on, and rejected lines counted by reason."""

    name: str
    splits: dict[str, Labelled]
    classes: tuple[str, ...] = ()
    evaluated_on: str = "test"
    rejects: Counter = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)


def _read_lines(path: Path, rejects: Counter) -> list[tuple[int, str]]:
    """(line number, decoded line without its terminator) of every non-empty line; empty lines
    are counted as rejects. A gzip file is read whole; one that is damaged is an InputError."""
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
    kept = []
    for number, raw in enumerate(split_lines(data), start=1):
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # the MSRP files start with a byte order mark
        if not raw.strip():
            rejects[f"{path.name}: empty line"] += 1
            continue
        kept.append((number, _decode(raw)))
    return kept


def _decode(raw: bytes) -> str:
    for encoding in DECODINGS:
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")


def _require(paths: Iterable[Path]) -> None:
    missing = [path for path in paths if not path.is_file()]
    if missing:
        raise MissingTransferFiles(missing)


def _first_present(folder: Path, names: tuple[str, ...]) -> Path:
    present = [folder / name for name in names if (folder / name).is_file()]
    if not present:
        raise MissingTransferFiles([folder / names[0]])
    return present[0]


def _parsed(path: Path, parse: Callable[[str], tuple | str], rejects: Counter, lines: list[tuple[int, str]] | None = None) -> list:
    """``parse(line)`` of every line (of ``lines`` when given, else of the file); a line it
    answers with a string is a reject of that reason. No usable line: a damaged file (InputError)."""
    rows = []
    for _, line in _read_lines(path, rejects) if lines is None else lines:
        row = parse(line)
        if isinstance(row, str):
            rejects[f"{path.name}: {row}"] += 1
        else:
            rows.append(row)
    if not rows:
        raise InputError(f"{path}: no usable line ({sum(rejects.values())} rejected), is it the right file?")
    return rows


def _sentence(line: str) -> tuple[str] | str:
    return (line.strip(),)


def load_cv_set(folder: str | Path, name: str) -> TransferSet:
    """MR, CR, SUBJ or MPQA: one file of sentences per class, scored by cross-validation."""
    folder = Path(folder)
    files = CV_FILES[name]
    _require(folder / file for file, _ in files)
    rejects: Counter = Counter()
    sentences, labels = [], []
    for index, (file, _) in enumerate(files):
        rows = _parsed(folder / file, _sentence, rejects)
        sentences += [row[0] for row in rows]
        labels += [index] * len(rows)
    return TransferSet(name, {"all": Labelled(sentences, np.array(labels))}, tuple(label for _, label in files), "10-fold cross-validation",
                       rejects, [str(folder / file) for file, _ in files])


def _sst_line(line: str) -> tuple[str, int] | str:
    label, _, sentence = line.strip().partition(" ")
    if label not in ("0", "1"):
        return "label is not 0 or 1"
    if not sentence.strip():
        return "no sentence after the label"
    return sentence.strip(), int(label)


def _trec_line(line: str) -> tuple[str, int] | str:
    label, _, sentence = line.strip().partition(" ")
    coarse = label.partition(":")[0]
    if coarse not in TREC_CLASSES or ":" not in label:
        return f"label is not COARSE:fine with COARSE one of {','.join(TREC_CLASSES)}"
    if not sentence.strip():
        return "no question after the label"
    return sentence.strip(), TREC_CLASSES.index(coarse)


def _split_set(folder: Path, name: str, files: dict[str, str], parse, classes: tuple[str, ...]) -> TransferSet:
    _require(folder / file for file in files.values())
    rejects: Counter = Counter()
    splits = {}
    for split, file in files.items():
        rows = _parsed(folder / file, parse, rejects)
        splits[split] = Labelled([row[0] for row in rows], np.array([row[1] for row in rows]))
    return TransferSet(name, splits, classes, "test", rejects, [str(folder / file) for file in files.values()])


def load_sst2(folder: str | Path) -> TransferSet:
    """SST-2 (binary sentence-level sentiment): ``label sentence`` lines, train/dev/test."""
    return _split_set(Path(folder), "SST2", SST2_FILES, _sst_line, ("negative", "positive"))


def load_trec(folder: str | Path) -> TransferSet:
    """TREC question types: ``COARSE:fine question`` lines, the six coarse classes; train/test."""
    return _split_set(Path(folder), "TREC", TREC_FILES, _trec_line, TREC_CLASSES)


def _columns(path: Path, header: str, wanted: tuple[str, ...]) -> tuple[int, ...]:
    columns = header.split("\t")
    absent = [column for column in wanted if column not in columns]
    if absent:
        raise InputError(f"{path}: the header lacks column(s) {', '.join(absent)} (found: {', '.join(columns)})")
    return tuple(columns.index(column) for column in wanted)


def _table(path: Path, wanted: tuple[str, ...], convert: Callable[[list[str]], tuple | str], rejects: Counter) -> list[tuple]:
    """Rows of a tab-separated file with a header: ``convert`` of the ``wanted`` columns."""
    lines = _read_lines(path, rejects)
    if not lines:
        raise InputError(f"{path}: empty, expected a header line with {', '.join(wanted)}")
    indices = _columns(path, lines[0][1], wanted)

    def parse(line: str) -> tuple | str:
        fields = line.split("\t")
        if len(fields) <= max(indices):
            return f"{len(fields)} tab-separated fields, need {max(indices) + 1}"
        return convert([fields[i].strip() for i in indices])

    return _parsed(path, parse, rejects, lines[1:])


def _pairs(rows: list[tuple], labels: np.ndarray) -> Labelled:
    return Labelled([row[0] for row in rows], labels, [row[1] for row in rows])


def _mrpc_row(fields: list[str]) -> tuple | str:
    quality, first, second = fields
    if quality not in ("0", "1"):
        return "Quality is not 0 or 1"
    if not first or not second:
        return "a sentence is empty"
    return first, second, int(quality)


def load_mrpc(folder: str | Path) -> TransferSet:
    """MRPC (Microsoft Research Paraphrase Corpus): train and test, labels 1 = paraphrase."""
    folder = Path(folder)
    paths = {"train": _first_present(folder, MRPC_TRAIN), "test": _first_present(folder, MRPC_TEST)}
    rejects: Counter = Counter()
    splits = {}
    for split, path in paths.items():
        rows = _table(path, ("Quality", "#1 String", "#2 String"), _mrpc_row, rejects)
        splits[split] = _pairs([row[:2] for row in rows], np.array([row[2] for row in rows]))
    return TransferSet("MRPC", splits, ("not paraphrase", "paraphrase"), "test", rejects, [str(path) for path in paths.values()])


def _sick_row(fields: list[str]) -> tuple | str:
    first, second, score, judgment = fields
    if not first or not second:
        return "a sentence is empty"
    if judgment not in SICK_ENTAILMENT:
        return f"entailment_judgment is not one of {','.join(SICK_ENTAILMENT)}"
    try:
        relatedness = float(score)
    except ValueError:
        return "relatedness_score is not a number"
    if not 1 <= relatedness <= 5:
        return "relatedness_score is outside 1-5"
    return first, second, relatedness, SICK_ENTAILMENT.index(judgment)


def load_sick(folder: str | Path) -> tuple[TransferSet, TransferSet]:
    """SICK-R (relatedness 1-5) and SICK-E (entailment, three classes) from ``SICK_train.txt`` and
    the test split (``SICK_test_annotated.txt`` or ``SICK_test.txt``), or ``SICK_trial.txt``
    when no test file is present (then ``evaluated_on`` is "trial")."""
    folder = Path(folder)
    train = folder / "SICK_train.txt"
    tests = [folder / name for name in ("SICK_test_annotated.txt", "SICK_test.txt")]
    test = next((path for path in tests if path.is_file()), folder / "SICK_trial.txt")
    _require([train, test])
    evaluated_on = "test" if test in tests else "trial"
    rejects: Counter = Counter()
    rows = {split: _table(path, ("sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"), _sick_row, rejects)
            for split, path in (("train", train), ("test", test))}
    files = [str(train), str(test)]
    relatedness = TransferSet("SICK-R", {s: _pairs(r, np.array([row[2] for row in r])) for s, r in rows.items()}, (), evaluated_on, rejects, files)
    entailment = TransferSet("SICK-E", {s: _pairs(r, np.array([row[3] for row in r])) for s, r in rows.items()}, SICK_ENTAILMENT, evaluated_on,
                             rejects, files)
    return relatedness, entailment


def load_transfer_suite(transfer_dir: str | Path, mrpc_dir: str | Path, sick_dir: str | Path) -> list[TransferSet]:
    """The nine tasks in Table 8's order; MissingTransferFiles names every absent file at once."""
    transfer_dir, mrpc_dir, sick_dir = Path(transfer_dir), Path(mrpc_dir), Path(sick_dir)
    expected = [transfer_dir / file for files in CV_FILES.values() for file, _ in files]
    expected += [transfer_dir / file for file in (*SST2_FILES.values(), *TREC_FILES.values())]
    expected += [path for names in (MRPC_TRAIN, MRPC_TEST) if not any((mrpc_dir / name).is_file() for name in names)
                 for path in [mrpc_dir / names[0]]]
    expected += [sick_dir / "SICK_train.txt"]
    if not any((sick_dir / name).is_file() for name in ("SICK_test_annotated.txt", "SICK_test.txt", "SICK_trial.txt")):
        expected.append(sick_dir / "SICK_trial.txt")
    _require(expected)
    relatedness, entailment = load_sick(sick_dir)
    sets = [*(load_cv_set(transfer_dir, name) for name in CV_FILES), load_sst2(transfer_dir), load_trec(transfer_dir), load_mrpc(mrpc_dir),
            relatedness, entailment]
    assert [s.name for s in sets] == list(TRANSFER_TASKS)
    return sets
