"""STS evaluation on hand-made encoders whose cosines, and so correlations, are known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import squeezed
from scipy import stats

from corpus.sts import StsDataset
from models.evaluation import (
    StsReport,
    correlations,
    dev_score,
    evaluate,
    paired_cosine,
    sts_table,
)


class AngleEmbed:
    """'deg:<angle>' -> a 2-d vector at that angle (length 3); 'zero' -> the zero vector."""

    def __init__(self):
        self.calls = []

    def __call__(self, sentences):
        self.calls.append(list(sentences))
        rows = []
        for sentence in sentences:
            if sentence == "zero":
                rows.append([0.0, 0.0])
            else:
                angle = math.radians(float(sentence.split(":")[1]))
                rows.append([3 * math.cos(angle), 3 * math.sin(angle)])
        return np.array(rows, dtype=np.float32)


def dataset(name, year, angles, gold):
    return StsDataset(
        name, year, ["deg:0"] * len(angles), [f"deg:{a}" for a in angles], np.array(gold, float)
    )


# cosines -1, 0, 0.5, 1 against gold 0, 2, 1, 5:
# Pearson = 4.5 / sqrt(2.1875 * 14); Spearman = 1 - 6 * 2 / (4 * 15) = 0.8 (hand computed).
HAND = dataset("hand", "2012", [180, 90, 60, 0], [0, 2, 1, 5])
HAND_PEARSON = 100 * 4.5 / math.sqrt(2.1875 * 14)


def test_paired_cosine_with_zero_vectors():
    first = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 2.0], [1.0, 1.0]])
    second = np.array([[0.0, 5.0], [1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
    np.testing.assert_allclose(paired_cosine(first, second), [0.0, 0.0, 1.0, -1.0])


def test_scores_match_hand_computation_and_scipy():
    embed = AngleEmbed()
    report = evaluate(embed, [HAND])
    (score,) = report.scores
    assert score.pearson == pytest.approx(HAND_PEARSON, abs=1e-4)
    assert score.spearman == pytest.approx(80.0, abs=1e-9)
    cosines = [-1, 0, 0.5, 1]
    assert score.pearson == pytest.approx(100 * stats.pearsonr(cosines, HAND.gold)[0], abs=1e-4)
    assert (score.year, score.name, score.pairs) == ("2012", "hand", 4)
    assert report.dim == 2
    # One batched call per side.
    assert embed.calls == [HAND.sent1, HAND.sent2]


def test_zero_vector_counts_as_cosine_zero():
    data = StsDataset(
        "z",
        "2013",
        ["deg:0", "zero", "deg:0"],
        ["deg:0", "deg:0", "deg:180"],
        np.array([5, 3, 1.0]),
    )
    score = evaluate(AngleEmbed(), [data]).scores[0]
    assert score.pearson == pytest.approx(100.0)
    assert score.spearman == pytest.approx(100.0)


def test_constant_predictions_give_nan_not_a_crash():
    assert all(math.isnan(v) for v in correlations(np.zeros(3), np.array([1.0, 2, 3])))
    data = dataset("flat", "2014", [10, 10, 10], [1, 2, 3])
    report = evaluate(AngleEmbed(), [data])
    assert math.isnan(report.scores[0].pearson)
    assert report.to_json()["datasets"][0]["pearson"] is None
    assert "| 2014 | flat | 3 | – | – |" in squeezed(report.to_markdown())


def year_report():
    datasets = [
        HAND,
        dataset("perfect", "2012", [0, 60, 90], [5, 2.5, 0]),
        dataset("inverse", "2013", [0, 60, 90], [0, 2.5, 5]),
        dataset("test", "STS-B", [0, 90, 60], [5, 1, 3]),
    ]
    return evaluate(AngleEmbed(), datasets, meta={"model": "angles"})


def test_year_and_test_means():
    report = year_report()
    assert report.years() == ["2012", "2013", "STS-B"]
    assert report.year_mean("2012") == pytest.approx((HAND_PEARSON + 100) / 2)
    assert report.year_mean("2013") == pytest.approx(-100)
    assert report.year_mean("2013", "spearman") == pytest.approx(-100)
    # STS-B is not one of the 2012-2016 test datasets.
    assert report.test_mean() == pytest.approx((HAND_PEARSON + 100 - 100) / 3)
    assert report.test_mean("spearman") == pytest.approx((80 + 100 - 100) / 3)


def test_json_round_trip():
    report = year_report()
    data = json.loads(json.dumps(report.to_json()))
    assert data["years"]["2012"]["datasets"] == 2
    assert data["sts_2012_2016_mean"]["pearson"] == pytest.approx(report.test_mean())
    assert data["meta"] == {"model": "angles"}
    back = StsReport.from_json(data)
    assert back.scores == report.scores and back.dim == 2


def test_markdown_detail_table():
    lines = squeezed(year_report().to_markdown()).splitlines()
    assert lines[0] == "| year | dataset | pairs | Pearson | Spearman |"
    assert f"| 2012 | hand | 4 | {HAND_PEARSON:.1f} | 80.0 |" in lines
    assert f"| 2012 | **mean** | 7 | {(HAND_PEARSON + 100) / 2:.1f} | 90.0 |" in lines
    assert "| 2013 | inverse | 3 | -100.0 | -100.0 |" in lines
    assert lines[-1].startswith("| 2012–2016 | **mean of all datasets** | 10 |")


def test_markdown_table_rows_are_models():
    report = year_report()
    only_2013 = evaluate(AngleEmbed(), [dataset("inverse", "2013", [0, 60, 90], [0, 2.5, 5])])
    lines = squeezed(sts_table({"angles": report, "other": only_2013})).splitlines()
    assert (
        lines[0]
        == "| model | dim | 2012 | 2013 | 2014 | 2015 | 2016 | STS-B test | 2012–2016 mean |"
    )
    mean_2012 = f"{(HAND_PEARSON + 100) / 2:.1f}"
    mean_all = f"{report.test_mean():.1f}"
    assert lines[2] == f"| angles | 2 | {mean_2012} | -100.0 | – | – | – | 100.0 | {mean_all} |"
    assert lines[3] == "| other | 2 | – | -100.0 | – | – | – | – | -100.0 |"


def test_dev_score_and_shape_check():
    assert dev_score(AngleEmbed(), HAND) == pytest.approx(HAND_PEARSON)
    with pytest.raises(ValueError, match="2012 hand: embed returned shape \\(3, 2\\) for 4"):
        evaluate(lambda sentences: np.ones((3, 2)), [HAND])
    with pytest.raises(ValueError, match="no STS datasets"):
        evaluate(AngleEmbed(), [])
