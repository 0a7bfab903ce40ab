import itertools
from collections import Counter

import numpy as np
import pytest

from corpus.diversity import kendall_tau, unigram_f1
from corpus.tokenbatch import TokenBatch


def scores(*pairs):
    batch = TokenBatch.from_token_lists([a.split() for a, _ in pairs], [b.split() for _, b in pairs])
    return unigram_f1(batch).tolist(), kendall_tau(batch).tolist()


def test_hand_checked_unigram_f1():
    f1, _ = scores(
        ("the cat sat", "the cat sat"),  # same bag: 1
        ("the cat sat on the mat", "the dog sat"),  # |A∩B| = the, sat = 2; P 2/3, R 2/6: F1 = 2·2/(6+3)
        ("the the the", "the"),  # counts kept: min(3, 1) = 1; P 1, R 1/3: F1 = 2/4
        ("a b", "c d"),  # nothing shared
        ("", "a b"),  # an empty side
    )
    assert f1 == pytest.approx([1.0, 4 / 9, 0.5, 0.0, 0.0])


def test_hand_checked_kendall_tau():
    _, tau = scores(
        ("a b c d", "a b c d"),  # same order: 1
        ("a b c d", "d c b a"),  # reversed: every one of the 6 word pairs discordant
        ("a b c", "b a c x"),  # (a,b) discordant, (a,c) and (b,c) concordant: (2 − 1)/3
        ("a b a c", "c b a"),  # a is repeated on side 1: only b, c count, reversed
        ("a b", "b c"),  # one shared word: no order to compare, undefined
        ("a b", "c d"),  # no shared word: undefined
    )
    assert tau[:4] == pytest.approx([1.0, -1.0, 1 / 3, -1.0]) and np.isnan(tau[4:]).all()


def reference_f1(a, b):
    common = sum((Counter(a) & Counter(b)).values())
    return 0.0 if common == 0 else 2 * (common / len(b)) * (common / len(a)) / (common / len(b) + common / len(a))


def reference_tau(a, b):
    count_a, count_b = Counter(a), Counter(b)
    shared = [w for w in a if count_a[w] == 1 and count_b[w] == 1]
    if len(shared) < 2:
        return np.nan
    signs = [np.sign((a.index(y) - a.index(x)) * (b.index(y) - b.index(x))) for x, y in itertools.combinations(shared, 2)]
    return sum(signs) / len(signs)


def test_batch_scores_equal_the_per_pair_definitions():
    rng = np.random.default_rng(3)
    words = list("abcdefgh")
    sides = [[list(rng.choice(words, rng.integers(0, 12))) for _ in range(2_000)] for _ in range(2)]
    batch = TokenBatch.from_token_lists(*sides)
    np.testing.assert_allclose(unigram_f1(batch), [reference_f1(a, b) for a, b in zip(*sides, strict=True)], rtol=1e-12)
    tau = kendall_tau(batch)
    np.testing.assert_array_equal(tau, [reference_tau(a, b) for a, b in zip(*sides, strict=True)])
    assert (tau < 0).any() and (tau == 1.0).any() and np.isnan(tau).any()
