"""The held-out benchmark's sets and baselines: what csen-more's preparation holds out is what it
evaluates on, and the WMT21 systems score as published (CUNI-Transformer2018: 26.19 BLEU)."""

import pytest
from conftest import require_shared

from benchmarks import heldout
from corpus.csen_more import HELD_OUT, prepare


@pytest.mark.slow  # reads ../shared/data
def test_the_sets_are_newstest2021_and_what_the_preparation_held_out(tmp_path):
    data = require_shared("csen-more").parent
    counts = prepare(data, tmp_path, report=lambda line: None)
    sets = heldout.test_sets(tmp_path)
    assert list(sets) == [heldout.NEWSTEST2021, *HELD_OUT]
    assert all(path.exists() for pair in sets.values() for path in pair)
    held_out = {line for name in HELD_OUT for line in sets[name][0].read_text(encoding="utf-8").splitlines()}
    trained_on = {line for path in tmp_path.glob("*.cs") for line in path.read_text(encoding="utf-8").splitlines()}
    assert counts["held_out"] == 1000 + 1071 + 1012 and not held_out & trained_on


@pytest.mark.slow  # reads ../shared/data
def test_the_wmt21_systems_score_as_published():
    require_shared("csen", "wmt21")
    systems = heldout.wmt21_systems()
    assert len(systems) == 8 and systems["CUNI-Transformer2018"]["bleu"] == 26.19
