"""A stage whose runner loses rows fails instead of committing: every stage accounts for each row
it read before its output is renamed into place."""

import luigi
import pytest
from nmt_fixtures import tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture
from test_backtranslate_flow import czeng_file, given
from test_corpus_flow import pairs_dir, vectors  # noqa: F401 - fixtures

from corpus.outputs import MANIFEST
from workflows import AssignDeciles, BackTranslate, ScorePairs, SelectTopHalf, SelectTrainingSet
from workflows.base import StageTask


@pytest.fixture
def runner_losing_a_part(monkeypatch, luigi_workdir):
    """A runner that, in the stage named, finishes without one of the parts its pipeline wrote
    (as a runner that never runs one sink branch would)."""
    def lose_in(stage):
        run_pipeline = StageTask.run_pipeline

        def losing(self, build, rows=None, elements=None):
            before = set(luigi_workdir.rglob("part-*.parquet"))
            run_pipeline(self, build, rows, elements)
            if self.stage == stage:
                written = sorted(set(luigi_workdir.rglob("part-*.parquet")) - before, key=lambda path: path.stat().st_mtime_ns)
                written[-1].unlink()

        monkeypatch.setattr(StageTask, "run_pipeline", losing)
    return lose_in


def fails_with_rows_lost(task, caplog):
    assert not luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert "rows written for" in caplog.text and "nothing was committed" in caplog.text
    assert not (task.output_dir / MANIFEST).exists() and not (task.stage_root / "latest").exists()


@pytest.mark.parametrize("task_type", [ScorePairs, AssignDeciles, SelectTrainingSet])
def test_a_corpus_stage_that_loses_rows_fails(runner_losing_a_part, pairs_dir, vectors, task_type, caplog):  # noqa: F811
    task = task_type(pairs=pairs_dir, pp_vectors=vectors)
    runner_losing_a_part(task.stage)
    fails_with_rows_lost(task, caplog)


def test_the_top_half_that_loses_rows_fails(runner_losing_a_part, pairs_dir, caplog):  # noqa: F811
    task = SelectTopHalf(pairs=pairs_dir)
    runner_losing_a_part(task.stage)
    fails_with_rows_lost(task, caplog)


def test_back_translation_that_loses_rows_fails(runner_losing_a_part, tmp_path, tiny_nmt, caplog):
    task = BackTranslate(inputs=czeng_file(tmp_path / "toy.train.gz", toy_pairs(60, seed=4)), nmt=given(tiny_nmt))
    runner_losing_a_part(task.stage)
    fails_with_rows_lost(task, caplog)
