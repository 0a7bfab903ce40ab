"""The collapse watch (models.nmt.collapse_watch): a model that says one sentence for every source
is seen at the validation where it happens, and a recipe that learns passes.

The toy language (nmt_fixtures) reproduces the first GPU model's failure in seconds: the tiny
post-norm model at a learning rate of 1e-2 learns fluent toy sentences ("The fish has fish.")
and says the same one for every source, while at 3e-3 its translations follow the source
(docs/2026-12-03-cpu-translator.md).
"""

import json

import pytest
from nmt_fixtures import EPOCHS_FIRST, EPOCHS_TOTAL, tiny_nmt_fixture  # noqa: F401 - the tiny_nmt fixture

from models.nmt import collapse_watch, fairseq_train


def translates(entry: dict) -> bool:
    """What a training must show at its last validation: translations that depend on the source."""
    return entry["distinct"] >= 0.9 and not collapse_watch.out_of_bounds(entry)


def test_the_tiny_recipe_translates_at_its_last_validation(tiny_nmt):
    """Fails for a recipe that collapses: the fixture's recipe is the one the demo trains."""
    history = collapse_watch.history(tiny_nmt.root / "checkpoints")
    assert translates(history[-1]), {key: value for key, value in history[-1].items() if key != "examples"}
    assert history[-1]["bleu"] >= 20  # a collapsed toy model: about 2


def test_every_validation_of_a_resumed_training_is_watched_once(tiny_nmt):
    """The fixture trains in two calls; the watch's file holds one record per validation."""
    history = collapse_watch.history(tiny_nmt.root / "checkpoints")
    assert [entry["epoch"] for entry in history] == list(range(1, EPOCHS_TOTAL + 1))
    assert len({entry["sentences"] for entry in history}) == 1 and 0 < history[0]["sentences"] <= collapse_watch.WATCH_SENTENCES
    assert history[0]["updates"] < history[-1]["updates"]
    watch_lines = [line for line in tiny_nmt.resumed_log if fairseq_train.is_watch_line(line)]
    assert len(watch_lines) == EPOCHS_TOTAL - EPOCHS_FIRST and "distinct" in fairseq_train.progress_message(watch_lines[-1])


def test_a_collapsing_recipe_is_seen_while_it_trains(tiny_nmt, tmp_path):
    config = fairseq_train.TrainConfig(preset="tiny", max_epoch=8, lr=1e-2, warmup_updates=30, save_interval_updates=0)
    log: list[str] = []
    fairseq_train.train(tiny_nmt.root / "data-bin", tmp_path, config, True, log.append)
    last = collapse_watch.history(tmp_path)[-1]
    assert not translates(last) and last["distinct"] < 0.5, last
    warned = [line for line in log if fairseq_train.is_watch_line(line) and "WARNING" in line]
    assert warned and "distinct" in warned[-1].split("WARNING")[1]


def test_the_sample_is_the_same_evenly_spread_pairs_at_every_validation():
    assert collapse_watch.watch_indices(2000) == list(range(0, 2000, 20))
    assert collapse_watch.watch_indices(35) == list(range(35))
    assert collapse_watch.watch_indices(0) == []


@pytest.mark.parametrize(("distinct", "warned"), [(1.0, False), (0.3, True)])
def test_the_watch_line_warns_when_a_figure_is_out_of_the_checks_bounds(distinct, warned):
    entry = {"epoch": 3, "updates": 1500, "distinct": distinct, "copies": 0.0, "length": 1.1, "english": 0.9,
             "loops": 0.0, "bleu": 12.5, "chrf": 40.0, "examples": [{"source": "Pes.", "translation": "The dog."}]}
    line = collapse_watch.message(entry)
    assert line.startswith("epoch 003 | num_updates 1500 | distinct")
    assert ("WARNING" in line) == warned and "'The dog.'" in line


def test_history_keeps_the_last_record_of_an_update_count_in_update_order(tmp_path):
    """A resumed run validates again where the killed one last did: one record an update count."""
    records = [{"updates": 1000, "bleu": 1}, {"updates": 500, "bleu": 2}, {"updates": 1000, "bleu": 3}]
    (tmp_path / collapse_watch.WATCH_FILE).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert collapse_watch.history(tmp_path) == [{"updates": 500, "bleu": 2}, {"updates": 1000, "bleu": 3}]
    assert collapse_watch.history(tmp_path / "none") == []
