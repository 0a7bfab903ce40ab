import numpy as np
import pytest

from corpus import deciles
from corpus.deciles import HIGHEST, LOWEST, Key


def heavy_ties(n, seed=0):
    rng = np.random.default_rng(seed)
    scores = np.where(rng.random(n) < 0.6, 0.0, rng.integers(1, 20, n) / 20)
    hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
    return scores, hashes


def true_cuts(scores, hashes, ranks):
    s, h = deciles.sort_keys(scores, hashes)
    return [Key(float(s[r]), int(h[r])) for r in ranks]


def two_pass_cuts(scores, hashes, sample_size, width=deciles.DEFAULT_WIDTH, chunks=7):
    """The two passes of the module docstring, with the data split into chunks as shards would."""
    n = len(scores)
    keep = deciles.in_sample(hashes, deciles.sample_limit(n, sample_size))
    ranks = deciles.cut_ranks(n)
    found = []
    for bracket in deciles.brackets(scores[keep], hashes[keep], n, ranks, width):
        below, inside_s, inside_h = 0, [], []
        for s, h in zip(np.array_split(scores, chunks), np.array_split(hashes, chunks), strict=True):
            b, si, hi = deciles.count_bracket(s, h, bracket)
            below, inside_s, inside_h = below + b, [*inside_s, si], [*inside_h, hi]
        found.append(deciles.exact_cut(bracket, below, np.concatenate(inside_s), np.concatenate(inside_h)))
    return found


def test_cut_ranks_and_equal_bins_with_heavy_ties():
    scores, hashes = heavy_ties(10_007)
    cuts = two_pass_cuts(scores, hashes, sample_size=2_000)
    assert cuts == true_cuts(scores, hashes, deciles.cut_ranks(len(scores)))
    bins = deciles.assign(scores, hashes, cuts)
    sizes = np.bincount(bins, minlength=10)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == len(scores)
    # bins are ordered by score: the zeros (60 %) fill the lowest five bins
    assert (scores[bins < 5] == 0).all() and (np.diff([scores[bins == d].mean() for d in range(10)]) >= 0).all()


def test_assignment_is_the_rank_bin():
    scores, hashes = heavy_ties(1_000, seed=1)
    order = np.lexsort((hashes, scores))
    rank = np.empty(len(order), dtype=int)
    rank[order] = np.arange(len(order))
    bins = deciles.assign(scores, hashes, true_cuts(scores, hashes, deciles.cut_ranks(1_000)))
    np.testing.assert_array_equal(bins, rank // 100)


def test_a_tiny_sample_misses_cuts_and_a_wider_bracket_finds_them():
    scores, hashes = heavy_ties(5_000, seed=2)
    missed = two_pass_cuts(scores, hashes, sample_size=50, width=0.01)
    assert None in missed
    wide = two_pass_cuts(scores, hashes, sample_size=50, width=1e6)
    assert wide == true_cuts(scores, hashes, deciles.cut_ranks(5_000))


def test_brackets_clamp_to_the_extremes():
    scores, hashes = heavy_ties(100, seed=3)
    (first, last) = deciles.brackets(scores, hashes, 100, [0, 99], width=2.0)
    assert first.lo == LOWEST and last.hi == HIGHEST
    assert deciles.brackets(scores, hashes, 100, [50], width=1e9)[0].unbounded


def test_sample_limit():
    assert deciles.sample_limit(10, 20) == deciles.HASH_MAX
    limit = deciles.sample_limit(1_000_000, 1_000)
    kept = deciles.in_sample(np.arange(1_000_000, dtype=np.uint64), limit).sum()
    assert 850 < kept < 1150


def test_few_items_leave_some_bins_empty_and_nan_is_refused():
    scores, hashes = np.array([0.3, 0.1, 0.2]), np.array([1, 2, 3], dtype=np.uint64)
    bins = deciles.assign(scores, hashes, true_cuts(scores, hashes, deciles.cut_ranks(3)))
    # r_k = floor(k·3/10) = 0,0,0,1,1,1,2,2,2: ranks 0, 1, 2 open bins 3, 6, 9
    assert bins.tolist() == [9, 3, 6]
    with pytest.raises(ValueError, match="1 NaN"):
        deciles.check_scores(np.array([0.1, np.nan]), "pp_sim")


def test_a_sample_that_keeps_every_item_gives_the_cuts_without_pass_2():
    scores, hashes = heavy_ties(3_001, seed=3)
    assert deciles.keeps_all(3_001, 3_001) and not deciles.keeps_all(3_002, 3_001)
    keep = deciles.in_sample(hashes, deciles.sample_limit(len(scores), sample_size=3_001))
    assert keep.all()
    ranks = deciles.cut_ranks(len(scores))
    cuts = deciles.cuts_of_all(scores[keep], hashes[keep], ranks)
    assert cuts == two_pass_cuts(scores, hashes, sample_size=300) and len(cuts) == 9
    assert cuts == deciles.cuts_of_all(scores[::-1], hashes[::-1], ranks)  # the order read does not matter
