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


def chunked(scores, hashes, chunks):
    return zip(np.array_split(scores, chunks), np.array_split(hashes, chunks), strict=True)


def three_pass_cuts(scores, hashes, sample_size, width=deciles.DEFAULT_WIDTH, chunks=7, bins=deciles.BINS, collected=None):
    """The three passes of the module docstring, with the data split into chunks as shards would;
    ``collected`` gets the number of keys pass 3 collects for each cut it looks for."""
    n = len(scores)
    keep = deciles.in_sample(hashes, deciles.sample_limit(n, sample_size))
    found = []
    for window in deciles.windows(scores[keep], hashes[keep], n, deciles.cut_ranks(n), width, bins):
        bracket = deciles.locate(window, sum(deciles.count_bins(s, h, window) for s, h in chunked(scores, hashes, chunks)))
        if bracket is None:
            found.append(None)
            continue
        parts = [deciles.count_bracket(s, h, bracket) for s, h in chunked(scores, hashes, chunks)]
        inside_s, inside_h = np.concatenate([part[1] for part in parts]), np.concatenate([part[2] for part in parts])
        if collected is not None:
            collected.append(len(inside_s))
        found.append(deciles.exact_cut(bracket, sum(part[0] for part in parts), inside_s, inside_h))
    return found


def test_cut_ranks_and_equal_bins_with_heavy_ties():
    scores, hashes = heavy_ties(10_007)
    cuts = three_pass_cuts(scores, hashes, sample_size=2_000)
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


def test_a_tiny_sample_misses_cuts_and_a_wider_window_finds_them():
    scores, hashes = heavy_ties(5_000, seed=2)
    missed = three_pass_cuts(scores, hashes, sample_size=50, width=0.01)
    assert None in missed
    wide = three_pass_cuts(scores, hashes, sample_size=50, width=1e6)
    assert wide == true_cuts(scores, hashes, deciles.cut_ranks(5_000))


def test_windows_clamp_to_the_extremes():
    scores, hashes = heavy_ties(100, seed=3)
    (first, last) = deciles.windows(scores, hashes, 100, [0, 99], width=2.0)
    assert first.edge(0) == LOWEST and last.edge(-1) == HIGHEST and not first.unbounded
    assert deciles.windows(scores, hashes, 100, [50], width=1e9)[0].unbounded


def test_a_bin_search_over_many_small_bins_collects_one_bin():
    # 2,000 sampled keys, windows of about 270 of them cut into 16 bins: pass 3 collects one bin
    scores, hashes = heavy_ties(60_000, seed=4)
    ranks = deciles.cut_ranks(len(scores))
    keep = deciles.in_sample(hashes, deciles.sample_limit(len(scores), 2_000))
    windows = deciles.windows(scores[keep], hashes[keep], len(scores), ranks, bins=16)
    assert all(len(window.scores) == 17 for window in windows)
    window_keys = [sum(deciles.count_bins(scores, hashes, window)[1:-1]) for window in windows]
    collected = []
    assert three_pass_cuts(scores, hashes, 2_000, bins=16, collected=collected) == true_cuts(scores, hashes, ranks)
    assert len(collected) == 9 and max(collected) < min(window_keys) / 4, (collected, window_keys)
    # every sample key an edge: the same cuts
    assert three_pass_cuts(scores, hashes, 2_000, bins=100_000) == true_cuts(scores, hashes, ranks)


def test_bins_count_every_item_once_and_the_last_bin_holds_its_top_edge():
    scores, hashes = np.full(100, 0.5), np.arange(100, dtype=np.uint64)  # one tie: the order is the hash
    window = deciles.Window(0, np.full(4, 0.5), np.array([10, 20, 30, 40], dtype=np.uint64))
    # below 10, [10, 20), [20, 30), [30, 40] and above 40
    assert deciles.count_bins(scores, hashes, window).tolist() == [10, 10, 10, 11, 59]
    assert sum(deciles.count_bins(s, h, window) for s, h in chunked(scores[::-1], hashes[::-1], 7)).tolist() == [10, 10, 10, 11, 59]


@pytest.mark.parametrize("rank", [9, 10, 19, 20, 29, 30, 39, 40, 41])
def test_a_cut_at_or_beside_a_bin_edge(rank):
    scores, hashes = np.full(100, 0.5), np.random.default_rng(5).permutation(100).astype(np.uint64)
    window = deciles.Window(rank, np.full(4, 0.5), np.array([10, 20, 30, 40], dtype=np.uint64))
    bracket = deciles.locate(window, deciles.count_bins(scores, hashes, window))
    if not 10 <= rank <= 40:  # outside the window: pass 2 says so, the search retries
        assert bracket is None
        return
    assert bracket.lo.hash <= rank <= bracket.hi.hash and bracket.hi.hash - bracket.lo.hash == 10
    assert deciles.exact_cut(bracket, *deciles.count_bracket(scores, hashes, bracket)) == Key(0.5, rank)


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


def test_a_sample_that_keeps_every_item_gives_the_cuts_without_passes_2_and_3():
    scores, hashes = heavy_ties(3_001, seed=3)
    assert deciles.keeps_all(3_001, 3_001) and not deciles.keeps_all(3_002, 3_001)
    keep = deciles.in_sample(hashes, deciles.sample_limit(len(scores), sample_size=3_001))
    assert keep.all()
    ranks = deciles.cut_ranks(len(scores))
    cuts = deciles.cuts_of_all(scores[keep], hashes[keep], ranks)
    assert cuts == three_pass_cuts(scores, hashes, sample_size=300) and len(cuts) == 9
    assert cuts == deciles.cuts_of_all(scores[::-1], hashes[::-1], ranks)  # the order read does not matter
