import math

import numpy as np
import pytest
from conftest import squeezed

from corpus.deciles import SCORERS, Key
from corpus.stats import (
    Idf,
    sentence_stats,
    summary_markdown,
    summary_record,
    table2_markdown,
    tied_deciles,
)


def test_idf_from_counts_with_unknown_words_as_rare_as_the_rarest():
    idf = Idf({"the": 80, "cat": 15, "zebra": 5})
    np.testing.assert_allclose(idf.of(["the", "zebra", "unseen"]), [math.log(100 / 80), math.log(100 / 5), math.log(100 / 5)])
    with pytest.raises(ValueError):
        Idf({})


def test_sentence_stats_by_hand():
    idf = Idf({"a": 50, "b": 25, "c": 25})
    stats = sentence_stats(["a b", "a a c c", ""], np.array([0.5, 1.0, 0.0]), idf)
    assert stats["sentences"] == 3
    assert stats["length"] == pytest.approx({"mean": 2.0, "std": math.sqrt(8 / 3)})
    # token distribution a:3, b:1, c:2 of 6
    p = np.array([3, 1, 2]) / 6
    assert stats["vocabulary_entropy"] == pytest.approx(-(p * np.log(p)).sum())
    # sentence IDFs: (ln2 + ln4)/2 and (2 ln2 + 2 ln4)/4 are equal; the empty sentence has none
    assert stats["idf"] == pytest.approx({"mean": (math.log(2) + math.log(4)) / 2, "std": 0.0})
    assert stats["pp_sim"] == pytest.approx({"mean": 0.5, "std": math.sqrt(1 / 6)})
    assert "idf" not in sentence_stats(["a"], np.array([1.0]), None)


def test_markdown_tables():
    stats = {"news": sentence_stats(["a b c"], np.array([0.9]), None), "(all)": sentence_stats(["a b c", "d"], np.array([0.9, 0.1]), None)}
    text = squeezed(table2_markdown(stats))
    assert "| Statistic | news | (all) |" in text and "| Avg. Length | 3.00 (0.00) | 2.00 (1.00) |" in text
    assert "| Avg. IDF | – | – |" in text
    summary = {
        "rows": 20, "corpus_dir": "c", "pp_model": {"kind": "vectors file", "path": "v.txt", "sha256": "ab" * 32}, "scorers": {"pp": "pp_sim"},
        "rejects": {"ingest": {"total": 1, "by_reason": {"column_count": 1}}},
        "deciles": {"pp": {"9": {"rows": 2, "min": 0.9, "max": 1.0, "examples": [{"pp_sim": 0.95, "reference": "a | b", "translation": "c"}]}}},
    }
    text = squeezed(summary_markdown(summary))
    assert "PP model: vectors file: `v.txt` (sha256 abababababababab…)" in text
    assert "| 9 | 2 | 0.9000 | 1.0000 |" in text and "| ingest | 1 | column_count 1 |" in text and "a \\| b" in text


def test_summary_record_counts_the_largest_ranking_and_keeps_deciles_only_with_rows():
    model, rejects = {"kind": "vectors file", "path": "v.txt", "sha256": "ab" * 32}, {"ingest": {"total": 0, "by_reason": {}}}
    deciles = {"pp": {"0": {"rows": 3, "min": 0.1, "max": 0.2, "examples": []}}}
    record = summary_record({"pp": 3, "trans": 2}, {"pp": [Key(0.5, 7)], "trans": []}, deciles, "work/corpus/x/corpus", model, rejects,
                            ranked=("pp", "trans"))
    assert list(record) == ["rows", "corpus_dir", "translated_by", "pp_model", "rejects", "scorers", "not_ranked", "unranked_rows",
                            "tied_deciles", "cuts", "deciles", "made"]  # summary.json's order
    assert record["not_ranked"] == {name: column for name, column in SCORERS.items() if name not in ("pp", "trans")}
    assert record["unranked_rows"] == {"trans": 1} and record["tied_deciles"] == {}
    assert record["rows"] == 3 and record["cuts"] == {"pp": [(0.5, 7)], "trans": []} and record["scorers"] == {"pp": "pp_sim", "trans": "trans_score"}
    assert record["deciles"] == deciles and record["corpus_dir"] == "work/corpus/x/corpus" and record["pp_model"] is model
    assert summary_record({}, {}, deciles, "c", model, rejects)["deciles"] == {}


def test_a_decile_that_is_one_score_shared_with_a_neighbour_is_decided_by_ties():
    """Kendall τ at 1.0 for most pairs made deciles 5-9 one score: each is flagged; a decile of
    one score that no neighbour shares (all pairs tied only among themselves) is not."""
    tied_top = {str(d): {"min": d / 10, "max": d / 10 + 0.05} for d in range(5)} | {str(d): {"min": 1.0, "max": 1.0} for d in range(5, 10)}
    assert tied_deciles(tied_top) == [5, 6, 7, 8, 9]
    alone = {"0": {"min": 0.0, "max": 0.1}, "1": {"min": 0.5, "max": 0.5}, "2": {"min": 0.6, "max": 0.9}}
    assert tied_deciles(alone) == []
    assert tied_deciles({"0": {"min": 0.0, "max": 0.0}, "1": {"min": 0.0, "max": 0.4}}) == [0]
