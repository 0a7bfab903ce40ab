"""BLEU / chrF scoring of the translator against references."""

import pytest

from models.nmt.evaluate import corpus_scores, report_markdown


def test_identical_output_scores_100_and_a_worse_one_less():
    references = ["The dog sees the cat.", "It is raining in Prague today."]
    perfect = corpus_scores(references, references)
    assert perfect["bleu"] == pytest.approx(100) and perfect["chrf"] == pytest.approx(100)
    worse = corpus_scores(["A dog sees a cat.", "Today it rains."], references)
    assert 0 <= worse["bleu"] < 100 and 0 < worse["chrf"] < 100
    assert worse["bleu_signature"].startswith("nrefs:1")
    table = report_markdown("test", {"perfect": perfect, "worse": worse})
    assert "| perfect | 100.00 | 100.00 |" in table and "nrefs:1" in table
    with pytest.raises(ValueError, match="1 hypotheses for 2 references"):
        corpus_scores(["x"], references)
