import random

import numpy as np
import pytest

from corpus.overlap import authors_overlap, trigram_overlap
from corpus.tokenbatch import TokenBatch


def overlaps(pairs):
    batch = TokenBatch.from_token_lists([ref.split() for ref, _ in pairs], [tr.split() for _, tr in pairs])
    return trigram_overlap(batch)


@pytest.mark.parametrize(
    ("reference", "translation", "expected"),
    [
        ("a b c d", "a b c d", 1.0),
        # reference trigrams [abc, bcd], translation [abc, bcx, cxy]: reference is shorter, 1 of 2 found
        ("a b c d", "a b c x y", 0.5),
        # translation has strictly fewer trigrams: it is the start side; 1 of 1 found
        ("x a b c y z", "a b c", 1.0),
        # equal trigram counts: the reference is the start side, duplicates counted in it:
        # reference [aaa, aaa] both occur in translation [aaa, aab] -> 2/2
        ("a a a a", "a a a b", 1.0),
        # ... and the other way round: start [aaa, aab], only aaa occurs in [aaa, aaa] -> 1/2
        ("a a a b", "a a a a", 0.5),
        # no trigram on one side -> 0
        ("a b", "a b c", 0.0),
        ("", "", 0.0),
        ("a b c", "c b a", 0.0),
    ],
)
def test_hand_computed_overlaps(reference, translation, expected):
    assert overlaps([(reference, translation)])[0] == pytest.approx(expected)
    assert authors_overlap(reference.split(), translation.split()) == pytest.approx(expected)


def test_pairs_do_not_see_each_others_trigrams():
    # the second pair's translation trigram occurs only in the first pair
    result = overlaps([("a b c", "a b c"), ("x y z", "a b c")])
    assert result.tolist() == [1.0, 0.0]


def test_vectorized_equals_the_authors_loop_on_random_data():
    rng = random.Random(7)
    words = "a b c d e".split()  # a tiny vocabulary: many repeated and shared trigrams
    pairs = [
        (" ".join(rng.choices(words, k=rng.randint(0, 12))), " ".join(rng.choices(words, k=rng.randint(0, 12))))
        for _ in range(2000)
    ]
    expected = [authors_overlap(ref.split(), tr.split()) for ref, tr in pairs]
    np.testing.assert_array_equal(overlaps(pairs), expected)
    assert 0 < np.mean(np.array(expected) == 0) < 1 and 0 < np.mean(np.array(expected) == 1) < 1


def test_joined_token_strings_give_the_same_batch():
    refs, trs = ["a b c d", "", "x y z"], ["a b c", "q", ""]
    lists = TokenBatch.from_token_lists([r.split() for r in refs], [t.split() for t in trs])
    joined = TokenBatch.from_joined(refs, trs)
    assert joined.reference.lengths.tolist() == [4, 0, 3] and joined.translation.lengths.tolist() == [3, 1, 0]
    np.testing.assert_array_equal(trigram_overlap(lists), trigram_overlap(joined))
    assert [joined.vocabulary[i] for i in joined.reference.ids] == "a b c d x y z".split()
