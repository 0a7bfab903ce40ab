"""The SentEval protocol (models.transfer) on small synthetic sets whose answer is known."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from corpus.transfer import Labelled, TransferSet
from models.transfer import TransferConfig, evaluate_set, evaluate_transfer, paper_scores

FAST = TransferConfig(folds=3, inner_folds=2, c_grid=(0.25, 4.0), n_jobs=1)


def keyed_embedding(dim: int = 8, seed: int = 0):
    """An embed function: each sentence "<label> <n>" maps to a fixed random vector, shifted
    along the first axes by its label (separable) or not (``shift`` 0)."""
    rng = np.random.default_rng(seed)
    cache: dict[str, np.ndarray] = {}

    def embed(sentences: list[str]) -> np.ndarray:
        rows = []
        for sentence in sentences:
            if sentence not in cache:
                label = int(sentence.split()[0])
                vector = rng.standard_normal(dim)
                vector[label % dim] += 4.0
                cache[sentence] = vector
            rows.append(cache[sentence])
        return np.array(rows)

    return embed


def classification(n: int, classes: int, shuffled_labels: bool = False, seed: int = 1) -> TransferSet:
    rng = np.random.default_rng(seed)
    true = rng.integers(0, classes, n)
    labels = rng.permutation(true) if shuffled_labels else true
    sentences = [f"{t} sentence {i}" for i, t in enumerate(true)]
    return TransferSet("TOY", {"all": Labelled(sentences, labels)}, tuple(map(str, range(classes))), rejects=Counter({"toy: empty line": 2}))


def test_separable_classes_are_learned_and_random_labels_are_not():
    embed = keyed_embedding()
    learned = evaluate_set(embed, classification(300, 3), FAST)
    chance = evaluate_set(embed, classification(300, 3, shuffled_labels=True), FAST)
    assert learned["accuracy"] > 90
    assert chance["accuracy"] < 50  # three classes: chance is about 33
    assert learned["test"] == 300 and len(learned["C"]) == 3 and learned["rejects"] == {"toy: empty line": 2}


def test_deterministic():
    task = classification(200, 2)
    assert evaluate_set(keyed_embedding(), task, FAST)["accuracy"] == evaluate_set(keyed_embedding(), task, FAST)["accuracy"]


def pairs(n: int, seed: int, relatedness: bool) -> Labelled:
    """Pairs whose second sentence shares the first one's label (class 1, related) or not."""
    rng = np.random.default_rng(seed)
    same = rng.integers(0, 2, n)
    first_labels = rng.integers(0, 4, n)
    second_labels = np.where(same == 1, first_labels, (first_labels + 1 + rng.integers(0, 3, n)) % 4)
    first = [f"{a} first {seed} {i}" for i, a in enumerate(first_labels)]
    second = [f"{b} second {seed} {i}" for i, b in enumerate(second_labels)]
    gold = np.where(same == 1, 4.0 + rng.random(n), 1.0 + rng.random(n)) if relatedness else same
    return Labelled(first, gold, second)


@pytest.mark.parametrize("relatedness", [False, True])
def test_pair_features_find_the_relation(relatedness):
    task = TransferSet("MRPC" if not relatedness else "SICK-R", {"train": pairs(400, 1, relatedness), "test": pairs(200, 2, relatedness)},
                       () if relatedness else ("no", "yes"))
    result = evaluate_set(keyed_embedding(), task, FAST)
    assert result["dim"] == 32  # [u, v, |u - v|, u * v] of 8-d embeddings
    if relatedness:
        assert result["pearson"] > 70
    else:
        assert result["accuracy"] > 80 and result["f1"] > 80


def test_given_dev_split_chooses_c_and_suite_keys_by_name():
    rng = np.random.default_rng(3)
    splits = {}
    for split, n in (("train", 200), ("dev", 100), ("test", 100)):
        labels = rng.integers(0, 2, n)
        splits[split] = Labelled([f"{label} {split} {i}" for i, label in enumerate(labels)], labels)
    results = evaluate_transfer(keyed_embedding(), [TransferSet("SST2", splits, ("negative", "positive"))], FAST)
    assert list(results) == ["SST2"] and results["SST2"]["test"] == 100 and len(results["SST2"]["C"]) == 1
    assert results["SST2"]["accuracy"] > 90


def test_paper_rows():
    name, numbers = paper_scores("word_avg")
    assert name.startswith("Word Avg") and numbers["MR"] == 75.8 and numbers["MRPC"] == (68.6, 80.9)
    assert paper_scores("trigram_word", "add")[1]["TREC"] == 79.0
    assert paper_scores("cnn") is None
