"""Exact quantile cut points over data that is never sorted in one place (SPEC.md §4).

Items are ordered by the composite key (score, h), h being a 64-bit hash of the pair id, so
ties in the score (trigram overlap is 0.0 for most pairs) are broken the same way on every run
and every machine, and every item has a distinct rank. With N items, the cut for quantile k of
q is the item of 0-based rank r_k = floor(k·N/q); an item belongs to bin d when
r_d ≤ rank < r_{d+1}, so bins differ in size by at most one.

The cut keys are found exactly in three passes over the data, each a commutative combine:
  1. a uniform sample: every item whose mixed hash mix64(h) is below 2⁶⁴·m/N, about m items,
     the same ones on every run. The hash is independent of the score, but not of the order
     inside a tie (that order *is* h), so the sample is drawn on a bijective remix of h: a
     sample of the smallest h would hold only the low end of every run of tied scores;
  2. from the sorted sample, a window of keys around each cut (its sample position ± a few
     standard deviations), cut into at most ``BINS`` bins at sample keys; the pass counts the
     items below the window, in each bin and above it, so the bin that holds rank r_k is known;
  3. that bin is the cut's bracket [lo_k, hi_k]: the pass counts the items strictly below lo_k
     and collects the keys inside it; the cut is the (r_k − below_k)-th smallest of them.
Collecting the whole window in one pass would take about width·N/√m keys a cut (308,000 at
N = 51.4M, m = 1M), a memory that grows with N; with the bins, pass 2 moves B + 2 counts a cut
and pass 3 the keys of one bin. A bin averages width·N/(√m·B) keys, the one that holds a given
rank twice that (a longer gap is likelier to hold it): 136 a cut, 418 at most, at 51.4M.
When the sample keeps every item (N ≤ m), its sorted keys give the cuts and passes 2 and 3 are
skipped. When the cut falls outside its window (about one cut in 10⁸ with the default width),
the passes are repeated with a wider window; the width grows until the window spans every item,
so the method always ends. The write then gives each item the number of cut keys ≤ its key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from corpus.mix import mix64

# The corpus's ranked scores: decile column ``decile_<name>`` ranks column ``SCORERS[name]``.
SCORERS = {"trans": "trans_score", "trigram": "trigram_then_f1", "pp": "pp_sim", "unigram": "unigram_f1", "tau": "kendall_z_then_f1"}
HASH_MAX = 2**64 - 1
# Window half-width in standard deviations of a sample quantile's position (at most √m/2).
DEFAULT_WIDTH = 6.0
# Most bins a window is cut into: pass 2 moves BINS + 2 counts a cut, pass 3 the keys of one bin.
BINS = 4096


@dataclass(frozen=True)
class Key:
    """A composite key (score, hash); LOWEST and HIGHEST bound every finite key."""

    score: float
    hash: int

    def as_tuple(self) -> tuple[float, int]:
        return (self.score, self.hash)


LOWEST = Key(-math.inf, 0)
HIGHEST = Key(math.inf, HASH_MAX)


@dataclass(frozen=True, eq=False)
class Window:
    """Where pass 2 counts around the item of 0-based ``rank``: sorted edge keys e_0 ≤ … ≤ e_B
    (``scores``, ``hashes``), bin i being [e_{i-1}, e_i) and the last one [e_{B-1}, e_B]."""

    rank: int
    scores: np.ndarray
    hashes: np.ndarray

    def edge(self, i: int) -> Key:
        return Key(float(self.scores[i]), int(self.hashes[i]))

    @property
    def unbounded(self) -> bool:
        return self.edge(0) == LOWEST and self.edge(-1) == HIGHEST


@dataclass(frozen=True)
class Bracket:
    """Where pass 3 looks for the item of 0-based ``rank``: keys in [lo, hi]."""

    rank: int
    lo: Key
    hi: Key


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


def windows(sample_scores: np.ndarray, sample_hashes: np.ndarray, n: int, ranks: list[int], width: float = DEFAULT_WIDTH,
            bins: int = BINS) -> list[Window]:
    """Windows around each rank from the sample's own sorted keys (clamped to LOWEST/HIGHEST), each
    with at most ``bins + 1`` edges, sample keys evenly spaced in the window.

    In a uniform sample of m of n items, the item of rank r sits near position r·m/n with a
    standard deviation of at most √m/2; the window reaches ``width`` of those either side.
    """
    scores, hashes = sort_keys(sample_scores, sample_hashes)
    m = len(scores)
    half = width * math.sqrt(m) / 2 + 1
    # sample position -1 stands for LOWEST, m for HIGHEST
    padded_scores = np.concatenate(([-math.inf], scores, [math.inf]))
    padded_hashes = np.concatenate((np.array([0], np.uint64), hashes.astype(np.uint64), np.array([HASH_MAX], np.uint64)))
    result = []
    for rank in ranks:
        position = rank * m / max(n, 1)
        lo, hi = max(math.floor(position - half), -1), min(math.ceil(position + half), m)
        edges = np.unique(np.linspace(lo, hi, bins + 1).round().astype(np.int64)) + 1
        result.append(Window(rank, padded_scores[edges], padded_hashes[edges]))
    return result


def cuts_of_all(scores: np.ndarray, hashes: np.ndarray, ranks: list[int]) -> list[Key]:
    """The cut keys when the keys of every item are at hand (a pass-1 sample that kept them all)."""
    scores, hashes = sort_keys(scores, hashes)
    return [Key(float(scores[rank]), int(hashes[rank])) for rank in ranks]


def count_bins(scores: np.ndarray, hashes: np.ndarray, window: Window) -> np.ndarray:
    """Pass 2 on one batch: the items below the window, in each of its B bins, and above it (B + 2 counts)."""
    edges = len(window.scores)
    below = less(scores, hashes, window.edge(0))
    above = ~less_equal(scores, hashes, window.edge(-1))
    inside = ~below & ~above
    # an inside item's bin is the number of edges ≤ it (edges sort before equal items), but an
    # item equal to e_B is in the last bin, B
    is_edge = np.arange(edges + int(inside.sum())) < edges
    order = np.lexsort((~is_edge, np.concatenate((window.hashes, hashes[inside])), np.concatenate((window.scores, scores[inside]))))
    edges_up_to = np.cumsum(is_edge[order])[~is_edge[order]]
    counts = np.bincount(np.minimum(edges_up_to, edges - 1), minlength=edges + 1)
    counts[0], counts[-1] = below.sum(), above.sum()
    return counts


def locate(window: Window, counts: np.ndarray) -> Bracket | None:
    """Pass 3's bracket, the bin that holds the window's rank (``counts``: pass 2's totals), or
    None when the rank is outside the window. The bracket [e_{i-1}, e_i] holds bin i and e_i's
    item; pass 3 counts the items below it itself."""
    i = int(np.searchsorted(np.cumsum(counts), window.rank, side="right"))  # the first bin that ends after the rank
    if not 0 < i < len(counts) - 1:
        return None
    return Bracket(window.rank, window.edge(i - 1), window.edge(i))


def count_bracket(scores: np.ndarray, hashes: np.ndarray, bracket: Bracket) -> tuple[int, np.ndarray, np.ndarray]:
    """Pass 3 on one batch: (items below lo, scores and hashes of the items inside the bracket)."""
    below = less(scores, hashes, bracket.lo)
    inside = ~below & less_equal(scores, hashes, bracket.hi)
    return int(below.sum()), scores[inside], hashes[inside]


def exact_cut(bracket: Bracket, below: int, scores: np.ndarray, hashes: np.ndarray) -> Key | None:
    """The key of rank ``bracket.rank`` given pass 3's totals, or None when it is outside the bracket."""
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
