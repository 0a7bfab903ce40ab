"""How well a score of sentence pairs agrees with people's judgments of the same pairs.

For one score and one set of judged pairs: Spearman's ρ and Pearson's r with the judgment, the
ROC AUC where the judgment is yes/no (1 = the people call the pair equivalent), each with a
bootstrap 95 % percentile interval, and the mean judgment in each decile of the score.

The bootstrap draws ``resamples`` sets of n pairs with replacement, seeded, and computes every
statistic on all of them at once (a resample a row of a matrix, in chunks of ``CHUNK`` rows so
memory stays a few tens of MB for 10⁴ pairs); every score of a set with the same pairs is drawn
the same resamples (same seed, same n), so their intervals are paired. Ranks are average ranks
(ties share one), as scipy's ``spearmanr`` and the Mann–Whitney form of the AUC take them.

Deciles are the corpus's rule (corpus.deciles): the pairs ordered by (score, hash of the pair's
id), cut into ten bins of equal size (±1), so the many ties of trigram overlap are broken the
same way on every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from corpus.deciles import assign, cut_ranks, cuts_of_all
from corpus.settings import setting

CHUNK = 100  # resamples computed at once
LEVEL = 0.95


@dataclass(frozen=True)
class Bootstrap:
    """The bootstrap's settings; ``resamples`` 0 computes the statistics without intervals."""

    resamples: int = setting(1000, "Bootstrap resamples for each 95 % interval (0: no intervals).", minimum=0)
    bootstrap_seed: int = setting(1, "Seed of the bootstrap's resamples.")


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of x with the same row of y; NaN where a row is constant."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    norms = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    dots = (x * y).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, dots / np.where(norms > 0, norms, 1), np.nan)


def _auc_rows(score_ranks: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """ROC AUC of each row (Mann–Whitney U over average ranks); NaN where a row lacks a class."""
    positives = positive.sum(axis=1)
    negatives = positive.shape[1] - positives
    u = (score_ranks * positive).sum(axis=1) - positives * (positives + 1) / 2
    pairs = positives * negatives
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, u / np.where(pairs > 0, pairs, 1), np.nan)


def _statistics(score: np.ndarray, judgment: np.ndarray, binary: bool) -> dict[str, np.ndarray]:
    """Spearman, Pearson (and AUC) of each row of the (resamples × n) arrays."""
    score_ranks = rankdata(score, axis=1)
    found = {
        "spearman": _pearson_rows(score_ranks, rankdata(judgment, axis=1)),
        "pearson": _pearson_rows(score, judgment),
    }
    if binary:
        found["auc"] = _auc_rows(score_ranks, judgment == 1)
    return found


def _interval(values: np.ndarray) -> list[float] | None:
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    tail = 100 * (1 - LEVEL) / 2
    return [float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def agreement(score: np.ndarray, judgment: np.ndarray, binary: bool, bootstrap: Bootstrap = Bootstrap()) -> dict:
    """The statistics of one score against the judgments of the same pairs (NaN scores left out):
    ``{"pairs": n, "spearman": ρ, "spearman_ci": [lo, hi], "pearson": …, "auc": … (binary)}``;
    a statistic is None where it is undefined (a constant score, one class only), an interval
    None without resamples."""
    score, judgment = np.asarray(score, dtype=np.float64), np.asarray(judgment, dtype=np.float64)
    kept = ~np.isnan(score)
    score, judgment = score[kept], judgment[kept]
    whole = _statistics(score[None, :], judgment[None, :], binary)
    found: dict = {"pairs": int(len(score))}
    for name, value in whole.items():
        found[name] = _number(value[0])
    if not bootstrap.resamples or len(score) < 2:
        return {**found, **{f"{name}_ci": None for name in whole}}
    rng = np.random.default_rng(bootstrap.bootstrap_seed)
    drawn: dict[str, list[np.ndarray]] = {name: [] for name in whole}
    for start in range(0, bootstrap.resamples, CHUNK):
        rows = rng.integers(0, len(score), size=(min(CHUNK, bootstrap.resamples - start), len(score)))
        for name, values in _statistics(score[rows], judgment[rows], binary).items():
            drawn[name].append(values)
    return {**found, **{f"{name}_ci": _interval(np.concatenate(values)) for name, values in drawn.items()}}


def decile_means(score: np.ndarray, judgment: np.ndarray, hashes: np.ndarray) -> list[dict]:
    """For each decile of the score (0: the lowest tenth), its pairs, score range and mean
    judgment (NaN scores left out; an empty decile of a set under ten pairs has None)."""
    score, judgment = np.asarray(score, dtype=np.float64), np.asarray(judgment, dtype=np.float64)
    kept = ~np.isnan(score)
    score, judgment, hashes = score[kept], judgment[kept], hashes[kept]
    bins = assign(score, hashes, cuts_of_all(score, hashes, cut_ranks(len(score)))) if len(score) else np.zeros(0, np.int8)
    rows = []
    for decile in range(10):
        inside = bins == decile
        if not inside.any():
            rows.append({"decile": decile, "pairs": 0, "mean_judgment": None, "score_min": None, "score_max": None})
            continue
        rows.append({"decile": decile, "pairs": int(inside.sum()), "mean_judgment": float(judgment[inside].mean()),
                     "score_min": float(score[inside].min()), "score_max": float(score[inside].max())})
    return rows
