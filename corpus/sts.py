"""Readers for the STS evaluation sets: SemEval STS 2012-2016 and 2017 track 5, STS-B, SICK.

Every loader takes the same `root`, a directory laid out like ../shared/data/sts:
`STS2012-test/` ... `STS2016-test/`, `STS2017/`, `stsbenchmark/`, `SICK/`. Files are read
as UTF-8 and split on "\\n" only (not `str.splitlines`, which would also split on the
U+2028/U+0085 characters that tweets and forum posts may contain). When expected files are
absent, one `MissingStsFiles` error names all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpus.errors import InputError
from corpus.evaluation_data import fetch_hint
from corpus.readers import split_lines

# The paper's test suite (SPEC.md section 7). 2013 SMT is absent: its input is LDC-licensed and
# only its gold file is distributed. 2012's `surprise.*` sets are reported as OnWN and SMTnews.
STS_TEST_SETS: dict[str, tuple[str, ...]] = {
    "2012": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "2013": ("FNWN", "headlines", "OnWN"),
    "2014": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "2015": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "2016": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STS2017_SET = "track5.en-en"
# Development sets that can select a model's epoch (models.trainer.TrainConfig.dev_set). STS-B
# dev is the default: 1,500 pairs of captions, news and forums; the paper's STS 2017 track 5
# has 250, and on real pairs it falls while STS 2012–2016 and STS-B rise (README, issue 9).
DEV_SETS = ("stsb-dev", "sts2017")


@dataclass(eq=False)
class StsDataset:
    """Scored sentence pairs of one STS dataset; pairs without a gold score are already dropped."""

    name: str
    year: str
    sent1: list[str]
    sent2: list[str]
    gold: np.ndarray

    def __post_init__(self) -> None:
        if not len(self.sent1) == len(self.sent2) == len(self.gold):
            raise ValueError(
                f"{self.year} {self.name}: {len(self.sent1)} first sentences, "
                f"{len(self.sent2)} second sentences, {len(self.gold)} scores"
            )

    def __len__(self) -> int:
        return len(self.gold)


class MissingStsFiles(FileNotFoundError, InputError):
    """Expected STS files are absent; `missing` lists every one, not only the first. The message is
    one line that also says how to get them (`paranmt-data fetch sts`)."""

    def __init__(self, missing: Iterable[Path]):
        self.missing = [Path(path) for path in missing]
        listed = " ".join(str(path) for path in self.missing)
        super().__init__(
            f"{len(self.missing)} STS file(s) or folder(s) missing ({fetch_hint('sts')}; the layout: "
            f"docs/README-sts.md): {listed}"
        )


def _require(paths: Iterable[Path]) -> None:
    """Raise MissingStsFiles naming each absent path, or its topmost absent folder."""
    missing: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            while not path.parent.exists():
                path = path.parent
            missing[path] = None
    if missing:
        raise MissingStsFiles(missing)


def _lines(path: Path) -> list[str]:
    """The file's lines, without line terminators ("\\r\\n" tolerated)."""
    return [line.decode("utf-8") for line in split_lines(path.read_bytes())]


def _fields(line: str, path: Path, number: int, needed: int) -> list[str]:
    fields = line.split("\t")
    if len(fields) < needed:
        raise ValueError(f"{path}:{number}: {len(fields)} tab-separated fields, need {needed}")
    return fields


def _scored(
    name: str, year: str, pairs: list[tuple[str, str]], scores: list[str], where: str
) -> StsDataset:
    """Keep the pairs whose score is not blank (blank means "not scored" in STS 2015-2016)."""
    kept = [(pair, score) for pair, score in zip(pairs, scores, strict=True) if score.strip()]
    try:
        gold = np.array([float(score) for _, score in kept], dtype=np.float64)
    except ValueError as error:
        raise ValueError(f"{where}: a gold score is not a number ({error})") from None
    return StsDataset(
        name, year, [pair[0] for pair, _ in kept], [pair[1] for pair, _ in kept], gold
    )


def _semeval(input_path: Path, gold_path: Path, name: str, year: str) -> StsDataset:
    """One SemEval input file (sentence 1, sentence 2, maybe more fields) and its gold file."""
    pairs = [
        tuple(_fields(line, input_path, number, 2)[:2])
        for number, line in enumerate(_lines(input_path), start=1)
    ]
    scores = _lines(gold_path)
    if len(scores) != len(pairs):
        raise ValueError(
            f"{input_path} has {len(pairs)} lines but {gold_path} has {len(scores)}: "
            "the gold file must have one line per pair (blank for unscored pairs)"
        )
    return _scored(name, year, pairs, scores, str(gold_path))


def _semeval_paths(root: Path, year: str, dataset: str) -> tuple[Path, Path]:
    prefix = "STS2016" if year == "2016" else "STS"
    folder = root / f"STS{year}-test"
    return (
        folder / f"{prefix}.input.{dataset}.txt",
        folder / f"{prefix}.gs.{dataset}.txt",
    )


def load_sts_tests(
    root: str | Path, years: Iterable[str] = tuple(STS_TEST_SETS)
) -> list[StsDataset]:
    """The SemEval STS 2012-2016 test sets, in year order (2013 without SMT, see STS_TEST_SETS)."""
    root = Path(root)
    unknown = set(years) - set(STS_TEST_SETS)
    if unknown:
        raise ValueError(
            f"no STS test sets for year(s) {sorted(unknown)}; known: {list(STS_TEST_SETS)}"
        )
    wanted = [(year, dataset) for year in years for dataset in STS_TEST_SETS[year]]
    paths = [_semeval_paths(root, year, dataset) for year, dataset in wanted]
    _require(path for pair in paths for path in pair)
    return [
        _semeval(input_path, gold_path, dataset.removeprefix("surprise."), year)
        for (year, dataset), (input_path, gold_path) in zip(wanted, paths, strict=True)
    ]


def load_sts2017(root: str | Path) -> StsDataset:
    """SemEval 2017 track 5 (English-English, 250 pairs): the development set."""
    folder = Path(root) / "STS2017"
    input_path = folder / f"STS.input.{STS2017_SET}.txt"
    gold_path = folder / f"STS.gs.{STS2017_SET}.txt"
    _require([input_path, gold_path])
    return _semeval(input_path, gold_path, STS2017_SET, "2017")


def load_stsb(root: str | Path, split: str) -> StsDataset:
    """STS Benchmark `sts-<split>.csv` (train, dev or test) as year "STS-B", name `split`.

    Tab-separated genre, file, year, id, score, sentence 1, sentence 2, with no quoting; some
    lines carry extra columns (the sources of 2016 pairs), which are ignored.
    """
    path = Path(root) / "stsbenchmark" / f"sts-{split}.csv"
    _require([path])
    rows = [
        _fields(line, path, number, 7)
        for number, line in enumerate(_lines(path), start=1)
        if line.strip()
    ]
    return _scored(
        split, "STS-B", [(row[5], row[6]) for row in rows], [row[4] for row in rows], str(path)
    )


def load_sick(root: str | Path, split: str) -> StsDataset:
    """SICK relatedness (1-5) of `SICK/SICK_<split>.txt` (train, trial; test: also
    `SICK_test_annotated.txt`) as year "SICK", name `split`.

    Columns are found by their header names (sentence_A, sentence_B, relatedness_score), so
    the entailment and SemEval_set columns of other releases do not matter.
    """
    folder = Path(root) / "SICK"
    names = [f"SICK_{split}.txt"] + (["SICK_test_annotated.txt"] if split == "test" else [])
    candidates = [folder / name for name in names]
    path = next((path for path in candidates if path.exists()), None)
    if path is None:
        raise MissingStsFiles(candidates)
    header, *lines = _lines(path)
    columns = header.split("\t")
    wanted = ("sentence_A", "sentence_B", "relatedness_score")
    absent = [column for column in wanted if column not in columns]
    if absent:
        raise ValueError(f"{path}: header lacks column(s) {', '.join(absent)}")
    first, second, score = (columns.index(column) for column in wanted)
    rows = [
        _fields(line, path, number, len(columns))
        for number, line in enumerate(lines, start=2)
        if line.strip()
    ]
    return _scored(
        split,
        "SICK",
        [(row[first], row[second]) for row in rows],
        [row[score] for row in rows],
        str(path),
    )


# Beside the required 2012–2016 test sets: the dev set, STS-B and SICK where present.
OPTIONAL_STS = ((load_sts2017, ()), (load_stsb, ("test",)), (load_stsb, ("dev",)), (load_sick, ("test",)), (load_sick, ("trial",)))


def sts_suite(root: str | Path) -> tuple[list[StsDataset], list[str]]:
    """Every STS set an evaluation reports: the 2012–2016 test sets (MissingStsFiles names every
    absent one) and the optional sets that are present; also the paths of the absent optional
    files (reports say why a column is empty)."""
    datasets, absent = load_sts_tests(root), []
    for loader, args in OPTIONAL_STS:
        try:
            datasets.append(loader(root, *args))
        except MissingStsFiles as missing:
            absent += [str(path) for path in missing.missing]
    return datasets, absent


def load_dev_set(root: str | Path, name: str) -> StsDataset:
    """The development set ``name`` (one of DEV_SETS)."""
    if name not in DEV_SETS:
        raise InputError(f"dev set must be one of {DEV_SETS}, got {name!r}")
    return load_stsb(root, "dev") if name == "stsb-dev" else load_sts2017(root)


def require_training_sts(root: str | Path, dev_set: str) -> None:
    """MissingStsFiles naming every absent file of the sets a training run needs: the 2012–2016
    test sets and the development set (checked before hours of training, not after)."""
    missing: list[Path] = []
    for load in (load_sts_tests, lambda root: load_dev_set(root, dev_set)):
        try:
            load(root)
        except MissingStsFiles as absent:
            missing += absent.missing
    if missing:
        raise MissingStsFiles(dict.fromkeys(missing))  # every absent file, once
