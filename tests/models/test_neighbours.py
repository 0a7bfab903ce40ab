"""Table 6's negatives on hand-built embeddings: the pool grows, the negative gets closer."""

import numpy as np
import pytest

from models.neighbours import megabatch_negatives, negative_examples
from models.trainer import plan_epoch


def test_larger_pools_offer_closer_negatives():
    # Pair 0 is the probe; its own paraphrase (pair 0, side 2) never counts.
    first = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [1.0, 0.02]])
    second = np.array([[1.0, 0.01], [-1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])
    batches = [np.array([0, 1]), np.array([2]), np.array([3])]
    found = megabatch_negatives(first, second, batches, [1, 2, 3], [0])
    assert [(n.pair, n.side) for n in (found[m][0] for m in (1, 2, 3))] == [(1, 0), (2, 0), (3, 0)]
    assert found[1][0].cosine == pytest.approx(0.0, abs=1e-9)
    assert found[2][0].cosine < found[3][0].cosine <= 1.0
    # a second side can be the negative: with pair 1's side 2 close to the probe
    second[1] = [1.0, 0.0]
    assert (megabatch_negatives(first, second, batches, [1], [0])[1][0].pair,
            megabatch_negatives(first, second, batches, [1], [0])[1][0].side) == (1, 1)
    with pytest.raises(ValueError, match="first mini-batch"):
        megabatch_negatives(first, second, batches, [1], [2])


def test_negative_examples_follow_the_epoch_plan_and_report_pool_sizes():
    words = [f"w{i}" for i in range(12)]
    first, second = words[:6], [w + "'" for w in words[:6]]
    rng = np.random.default_rng(0)
    table = {s: rng.normal(size=4) for s in first + second}
    embed = lambda sentences: np.stack([table[s] for s in sentences])  # noqa: E731
    rows = negative_examples(embed, (first, second), [1, 2], batch_size=2, probes=2, seed=3)
    batches = plan_epoch(6, 2, 3, 0)
    assert [row["sentence"] for row in rows] == [first[i] for i in batches[0]]
    for row in rows:
        assert row["paraphrase"] == row["sentence"] + "'"
        assert [row["negatives"][m]["pool_pairs"] for m in ("1", "2")] == [2, 4]
        pool = {int(i) for b in batches[:2] for i in b}
        candidates = {first[i] for i in pool} | {second[i] for i in pool}
        best = max(candidates - {row["sentence"], row["paraphrase"]},
                   key=lambda s: table[s] @ table[row["sentence"]] / np.linalg.norm(table[s]) / np.linalg.norm(table[row["sentence"]]))
        assert row["negatives"]["2"]["sentence"] == best
