"""Exact quantile cut points over data that is never sorted in one place (SPEC.md §4).

Items are ordered by the composite key (score, h), h being a 64-bit hash of the pair id, so
ties in the score (trigram overlap is 0.0 for most pairs) are broken the same way on every run
and every machine, and every item has a distinct rank. With N items, the cut for quantile k of
q is the item of 0-based rank r_k = floor(k·N/q); an item belongs to bin d when
r_d ≤ rank < r_{d+1}, so bins differ in size by at most one.

The cut keys are found exactly in two passes over the data, each a commutative combine:
  1. a uniform sample: every item whose mixed hash mix64(h) is below 2⁶⁴·m/N, about m items,
     the same ones on every run. The hash is independent of the score, but not of the order
     inside a tie (that order *is* h), so the sample is drawn on a bijective remix of h: a
     sample of the smallest h would hold only the low end of every run of tied scores;
  2. from the sorted sample, a bracket [lo_k, hi_k] of keys around each cut (its sample position
     ± a few standard deviations); the pass counts the items strictly below lo_k and collects
     the keys inside the bracket; the cut is the (r_k − below_k)-th smallest of them.
When the sample keeps every item (N ≤ m), its sorted keys give the cuts and pass 2 is skipped.
When the cut falls outside its bracket (about one cut in 10⁸ with the default width), the second
pass is repeated with a wider bracket; the width grows until the bracket spans every item, so
the method always ends. Pass 3 gives each item the number of cut keys ≤ its key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from corpus.mix import mix64

# The corpus's ranked scores: decile column ``decile_<name>`` ranks column ``SCORERS[name]``.
SCORERS = {"trans": "trans_score", "trigram": "trigram_overlap", "pp": "pp_sim", "unigram": "unigram_f1", "tau": "kendall_tau"}
HASH_MAX = 2**64 - 1
# Bracket half-width in standard deviations of a sample quantile's position (at most √m/2).
DEFAULT_WIDTH = 6.0


@dataclass(frozen=True)
class Key:
    """A composite key (score, hash); LOWEST and HIGHEST bound every finite key."""

    score: float
    hash: int

    def as_tuple(self) -> tuple[float, int]:
        return (self.score, self.hash)


LOWEST = Key(-math.inf, 0)
HIGHEST = Key(math.inf, HASH_MAX)


@dataclass(frozen=True)
class Bracket:
    """Where pass 2 looks for the item of 0-based ``rank``: keys in [lo, hi]."""

    rank: int
    lo: Key
    hi: Key

    @property
    def unbounded(self) -> bool:
        return self.lo == LOWEST and self.hi == HIGHEST


def cut_ranks(n: int, bins: int = 10) -> list[int]:
    """0-based ranks r_1 … r_{bins-1} of the first item of bins 1 … bins-1."""
    return [k * n // bins for k in range(1, bins)]


def keeps_all(n: int, sample_size: int) -> bool:
    """Whether the pass-1 sample of ``n`` items keeps them all (then it holds the cuts: ``cuts_of_all``)."""
    return sample_size >= n


def sample_limit(n: int, sample_size: int) -> int:
    """Largest hash kept in the pass-1 sample: about ``sample_size`` of ``n`` items (all when n is small)."""
    if keeps_all(n, sample_size):
        return HASH_MAX
    return (2**64 * sample_size) // n - 1


def in_sample(hashes: np.ndarray, limit: int) -> np.ndarray:
    """Pass-1 membership: mix64(h) ≤ limit (see ``sample_limit``)."""
    return mix64(hashes) <= np.uint64(limit)


def check_scores(scores: np.ndarray, name: str) -> None:
    """Ranks need a total order: NaN has none."""
    if np.isnan(scores).any():
        raise ValueError(f"{name}: {int(np.isnan(scores).sum())} NaN score(s) cannot be ranked")


def less(scores: np.ndarray, hashes: np.ndarray, key: Key) -> np.ndarray:
    """Element-wise composite comparison (score, hash) < key."""
    return (scores < key.score) | ((scores == key.score) & (hashes < np.uint64(key.hash)))


def less_equal(scores: np.ndarray, hashes: np.ndarray, key: Key) -> np.ndarray:
    return (scores < key.score) | ((scores == key.score) & (hashes <= np.uint64(key.hash)))


def sort_keys(scores: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((hashes, scores))
    return scores[order], hashes[order]


def brackets(sample_scores: np.ndarray, sample_hashes: np.ndarray, n: int, ranks: list[int], width: float = DEFAULT_WIDTH) -> list[Bracket]:
    """Brackets around each rank from the sample's own sorted keys (clamped to LOWEST/HIGHEST).

    In a uniform sample of m of n items, the item of rank r sits near position r·m/n with a
    standard deviation of at most √m/2; the bracket reaches ``width`` of those either side.
    """
    scores, hashes = sort_keys(sample_scores, sample_hashes)
    m = len(scores)
    half = width * math.sqrt(m) / 2 + 1
    result = []
    for rank in ranks:
        position = rank * m / max(n, 1)
        lo, hi = math.floor(position - half), math.ceil(position + half)
        lo_key = LOWEST if lo < 0 else Key(float(scores[lo]), int(hashes[lo]))
        hi_key = HIGHEST if hi >= m else Key(float(scores[hi]), int(hashes[hi]))
        result.append(Bracket(rank, lo_key, hi_key))
    return result


def cuts_of_all(scores: np.ndarray, hashes: np.ndarray, ranks: list[int]) -> list[Key]:
    """The cut keys when the keys of every item are at hand (a pass-1 sample that kept them all)."""
    scores, hashes = sort_keys(scores, hashes)
    return [Key(float(scores[rank]), int(hashes[rank])) for rank in ranks]


def count_bracket(scores: np.ndarray, hashes: np.ndarray, bracket: Bracket) -> tuple[int, np.ndarray, np.ndarray]:
    """Pass 2 on one batch: (items below lo, scores and hashes of the items inside the bracket)."""
    below = less(scores, hashes, bracket.lo)
    inside = ~below & less_equal(scores, hashes, bracket.hi)
    return int(below.sum()), scores[inside], hashes[inside]


def exact_cut(bracket: Bracket, below: int, scores: np.ndarray, hashes: np.ndarray) -> Key | None:
    """The key of rank ``bracket.rank`` given pass 2's totals, or None when it is outside the bracket."""
    position = bracket.rank - below
    if not 0 <= position < len(scores):
        return None
    scores, hashes = sort_keys(scores, hashes)
    return Key(float(scores[position]), int(hashes[position]))


def assign(scores: np.ndarray, hashes: np.ndarray, cuts: list[Key]) -> np.ndarray:
    """Bin of each item (int8): the number of cut keys ≤ its key."""
    bins = np.zeros(len(scores), dtype=np.int8)
    for cut in cuts:
        bins += ~less(scores, hashes, cut)
    return bins
