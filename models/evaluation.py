"""STS evaluation of any sentence encoder (SPEC.md section 7).

An encoder is any `embed(sentences) -> array of shape (len(sentences), dim)`; this module
needs no torch, so SIF, trained torch encoders and baselines are all scored the same way:
cosine of the two embeddings against the gold score, Pearson's r and Spearman's rho x 100
per dataset, the mean per year, and the mean over the 2012-2016 test datasets (the paper
reports plain means, not the competitions' weighted means).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from corpus.sts import STS_TEST_SETS, StsDataset
from corpus.tables import markdown_table

Embed = Callable[[list[str]], np.ndarray]

TEST_YEARS = tuple(STS_TEST_SETS)
_EMPTY = "–"


def paired_cosine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two (n, dim) matrices; a zero vector has cosine 0 with anything."""
    first = np.asarray(first, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    norms = np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1)
    dots = np.einsum("ij,ij->i", first, second)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def _embedded(embed: Embed, sentences: list[str], where: str) -> np.ndarray:
    vectors = np.asarray(embed(sentences))
    if vectors.ndim != 2 or vectors.shape[0] != len(sentences):
        raise ValueError(
            f"{where}: embed returned shape {vectors.shape} for {len(sentences)} sentences; "
            "expected one row per sentence"
        )
    return vectors


@dataclass(frozen=True)
class DatasetScore:
    """Correlations (x 100) of one dataset; NaN when undefined (e.g. constant predictions)."""

    year: str
    name: str
    pairs: int
    pearson: float
    spearman: float


def correlations(predicted: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """(Pearson x 100, Spearman x 100); NaN where a side is constant."""
    if np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        return math.nan, math.nan
    return (
        100.0 * float(stats.pearsonr(predicted, gold).statistic),
        100.0 * float(stats.spearmanr(predicted, gold).statistic),
    )


def score_dataset(embed: Embed, dataset: StsDataset) -> tuple[DatasetScore, int]:
    """Score one dataset with one embed call per side; also returns the embedding width."""
    where = f"{dataset.year} {dataset.name}"
    first = _embedded(embed, dataset.sent1, where)
    second = _embedded(embed, dataset.sent2, where)
    pearson, spearman = correlations(paired_cosine(first, second), dataset.gold)
    return DatasetScore(dataset.year, dataset.name, len(dataset), pearson, spearman), first.shape[1]


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return float(np.mean(values)) if values else math.nan


@dataclass
class StsReport:
    """Per-dataset scores of one encoder, with year means and JSON/Markdown renderings."""

    scores: list[DatasetScore]
    dim: int | None = None
    meta: dict = field(default_factory=dict)

    def years(self) -> list[str]:
        """Groups in first-seen order: "2012" ... "2016", "2017", "STS-B", "SICK"."""
        return list(dict.fromkeys(score.year for score in self.scores))

    def year_mean(self, year: str, metric: str = "pearson") -> float:
        return _mean(getattr(s, metric) for s in self.scores if s.year == year)

    def test_mean(self, metric: str = "pearson") -> float:
        """Mean over all 2012-2016 test datasets (SPEC.md's "mean over all datasets")."""
        return _mean(getattr(s, metric) for s in self.scores if s.year in TEST_YEARS)

    def to_json(self) -> dict:
        """Plain-JSON dict (NaN becomes None); `from_json` reads it back."""
        return _json_safe(
            {
                "dim": self.dim,
                "meta": self.meta,
                "datasets": [asdict(score) for score in self.scores],
                "years": {
                    year: {
                        "pearson": self.year_mean(year),
                        "spearman": self.year_mean(year, "spearman"),
                        "datasets": sum(score.year == year for score in self.scores),
                    }
                    for year in self.years()
                },
                "sts_2012_2016_mean": {
                    "pearson": self.test_mean(),
                    "spearman": self.test_mean("spearman"),
                },
            }
        )

    @classmethod
    def from_json(cls, data: dict) -> StsReport:
        scores = [
            DatasetScore(
                **{
                    **row,
                    "pearson": _number(row["pearson"]),
                    "spearman": _number(row["spearman"]),
                }
            )
            for row in data["datasets"]
        ]
        return cls(scores, data.get("dim"), data.get("meta", {}))

    def to_markdown(self) -> str:
        """Per-dataset table with a mean row after each year and the 2012-2016 mean last."""
        rows = []
        for year in self.years():
            scores = [score for score in self.scores if score.year == year]
            rows += [[year, s.name, s.pairs, _cell(s.pearson), _cell(s.spearman)] for s in scores]
            if len(scores) > 1:
                rows.append([year, "**mean**", sum(s.pairs for s in scores), _cell(self.year_mean(year)), _cell(self.year_mean(year, "spearman"))])
        if any(score.year in TEST_YEARS for score in self.scores):
            tests = [s for s in self.scores if s.year in TEST_YEARS]
            rows.append(["2012–2016", "**mean of all datasets**", sum(s.pairs for s in tests), _cell(self.test_mean()),
                         _cell(self.test_mean("spearman"))])
        return markdown_table(["year", "dataset", "pairs", "Pearson", "Spearman"], rows, align_right=(2, 3, 4))


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _json_safe(value):
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _cell(value: float) -> str:
    return _EMPTY if math.isnan(value) else f"{value:.1f}"


def evaluate(embed: Embed, datasets: Sequence[StsDataset], meta: dict | None = None) -> StsReport:
    """Score `embed` on every dataset (one embed call per side of each dataset)."""
    if not datasets:
        raise ValueError("no STS datasets to evaluate on")
    scored = [score_dataset(embed, dataset) for dataset in datasets]
    return StsReport([score for score, _ in scored], scored[0][1], dict(meta or {}))


def dev_score(embed: Embed, dataset: StsDataset) -> float:
    """Pearson x 100 on one dataset (the STS 2017 development set for model selection)."""
    return score_dataset(embed, dataset)[0].pearson


def sts_table(reports: dict[str, StsReport], metric: str = "pearson") -> str:
    """Models as rows, like the ParaNMT paper's Table 7, plus STS-B test and the 2012-2016 mean.

    The STS-B column is the report's STS-B `test` dataset; "–" marks what a report lacks.
    """
    header = ["model", "dim", *TEST_YEARS, "STS-B test", "2012–2016 mean"]
    rows = []
    for model, report in reports.items():
        stsb = [getattr(s, metric) for s in report.scores if (s.year, s.name) == ("STS-B", "test")]
        rows.append([
            model,
            _EMPTY if report.dim is None else str(report.dim),
            *(_cell(report.year_mean(year, metric)) for year in TEST_YEARS),
            _cell(_mean(stsb)),
            _cell(report.test_mean(metric)),
        ])
    return markdown_table(header, rows, align_right=range(1, len(header)))
