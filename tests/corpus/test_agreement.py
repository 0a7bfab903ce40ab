"""The statistics of a score against judgments, on numbers made here: the point values against
scipy and scikit-learn, the bootstrap's intervals, deciles."""

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import roc_auc_score

from corpus.agreement import Bootstrap, agreement, decile_means

RNG = np.random.default_rng(7)
GRADED = RNG.uniform(0, 5, 300)


def test_a_score_equal_to_the_judgment_agrees_fully_and_its_interval_holds_one():
    found = agreement(GRADED, GRADED, binary=False, bootstrap=Bootstrap(200, 3))
    assert found["pairs"] == 300 and found["spearman"] == pytest.approx(1) and found["pearson"] == pytest.approx(1)
    for name in ("spearman", "pearson"):
        low, high = found[f"{name}_ci"]
        assert low == pytest.approx(1) and high == pytest.approx(1)


def test_a_reversed_score_disagrees_fully():
    found = agreement(-GRADED, GRADED, binary=False, bootstrap=Bootstrap(100, 3))
    assert found["spearman"] == pytest.approx(-1) and found["pearson"] == pytest.approx(-1)
    assert found["spearman_ci"] == pytest.approx([-1, -1])


def test_auc_of_a_known_case_and_of_random_scores_with_ties_matches_scikit_learn():
    found = agreement(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]), binary=True, bootstrap=Bootstrap(0))
    assert found["auc"] == pytest.approx(0.75) and found["auc_ci"] is None
    labels = (RNG.random(500) < 0.3).astype(float)
    scores = np.round(labels + RNG.normal(0, 1, 500), 1)  # rounded: many ties
    found = agreement(scores, labels, binary=True, bootstrap=Bootstrap(0))
    assert found["auc"] == pytest.approx(roc_auc_score(labels, scores))
    assert found["spearman"] == pytest.approx(spearmanr(scores, labels).statistic)
    assert found["pearson"] == pytest.approx(pearsonr(scores, labels).statistic)
    assert agreement(-scores, labels, binary=True, bootstrap=Bootstrap(0))["auc"] == pytest.approx(1 - found["auc"])


def test_the_interval_holds_the_estimate_is_seeded_and_narrows_with_more_pairs():
    noisy = GRADED + RNG.normal(0, 2, 300)
    first = agreement(noisy, GRADED, binary=False, bootstrap=Bootstrap(300, 5))
    assert first == agreement(noisy, GRADED, binary=False, bootstrap=Bootstrap(300, 5))
    assert first["spearman_ci"] != agreement(noisy, GRADED, binary=False, bootstrap=Bootstrap(300, 6))["spearman_ci"]
    low, high = first["spearman_ci"]
    assert low < first["spearman"] < high and 0.05 < high - low < 0.3
    many = np.tile(GRADED, 10)
    wide = agreement(np.tile(noisy, 10) + RNG.normal(0, 0.01, 3000), many, binary=False, bootstrap=Bootstrap(300, 5))
    assert wide["spearman_ci"][1] - wide["spearman_ci"][0] < (high - low) / 2


def test_undefined_statistics_and_unscored_pairs():
    constant = agreement(np.ones(50), GRADED[:50], binary=False, bootstrap=Bootstrap(50))
    assert constant["spearman"] is None and constant["pearson"] is None and constant["spearman_ci"] is None
    one_class = agreement(GRADED[:50], np.ones(50), binary=True, bootstrap=Bootstrap(0))
    assert one_class["auc"] is None
    with_gaps = GRADED.copy()
    with_gaps[:10] = np.nan  # e.g. no translation score for those pairs
    found = agreement(with_gaps, GRADED, binary=False, bootstrap=Bootstrap(20))
    assert found["pairs"] == 290 and found["spearman"] == pytest.approx(1)


def test_deciles_are_the_corpus_tenths_with_ties_broken_by_the_id_hash():
    hashes = np.arange(100, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rows = decile_means(GRADED[:100], GRADED[:100], hashes)
    assert [row["pairs"] for row in rows] == [10] * 10
    means = [row["mean_judgment"] for row in rows]
    assert means == sorted(means) and rows[0]["score_max"] <= rows[1]["score_min"]
    tied = decile_means(np.zeros(100), GRADED[:100], hashes)  # every score equal: still ten equal bins
    assert [row["pairs"] for row in tied] == [10] * 10
    assert decile_means(np.zeros(100), GRADED[:100], hashes) == tied  # the same bins every time
    few = decile_means(np.arange(4.0), np.arange(4.0), hashes[:4])
    assert sum(row["pairs"] for row in few) == 4 and sum(row["mean_judgment"] is None for row in few) == 6
