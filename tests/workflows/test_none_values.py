"""Parameters whose default names something (an outside model, the judged sets, a word-count
file) say "none" with the word ``none``: Luigi takes an empty value on the command line for "not
given", so ``--sentence-transformer ''`` silently kept the default model. An empty value in
luigi.cfg still means none. The deciles' "every decile" is spelled ``all``."""

import json

import luigi
import pytest
from luigi.task_register import Register
from test_bad_input_cli import assert_one_line_error, run_luigi
from test_corpus_flow import vectors  # noqa: F401 - a fixture
from test_judgments_flow import judged_file

from corpus.selection import ALL_DECILES, Rules
from workflows.config import NONE

SAID_BY_NONE = [("ScoresAgainstJudgments", "sentence_transformer"), ("ScoresAgainstJudgments", "judged_sets"),
                ("CorpusStats", "word_counts"), ("EvaluateBaselines", "word_counts"), ("EvaluateBaselinesOnTrainData", "word_counts")]


@pytest.mark.parametrize("task, name", SAID_BY_NONE)
def test_none_on_the_command_line_and_empty_in_luigi_cfg_mean_none(task, name):
    parameter = Register.get_task_cls(task).get_params()
    parameter = dict(parameter)[name]
    assert parameter._default and f"{NONE}: " in parameter.description  # --help says how to say none
    assert parameter.normalize(parameter.parse(NONE)) == "" and parameter.normalize(parameter.parse("None")) == ""
    config = luigi.configuration.get_config()
    config.set(task, name, "")
    try:
        assert parameter.task_value(task, name) == ""
    finally:
        config.remove_option(task, name)


def test_none_names_no_outside_model_and_no_judged_set_through_the_command(tmp_path, vectors):  # noqa: F811
    """Only the user's judged file, and no outside model: neither computed nor listed as unavailable."""
    judged = judged_file(tmp_path / "judged.tsv")
    done = run_luigi(tmp_path / "work", "ScoresAgainstJudgments", "--without-encoders", "--pp-vectors", vectors, "--judged-file", str(judged),
                     "--judged-sets", NONE, "--sentence-transformer", NONE)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "work" / "experiments" / "scores-vs-judgments" / "latest" / "report.json").read_text())["data"]
    assert list(data["sets"]) == ["file judged.tsv"] and data["skipped"] == {}
    assert [name for name in (*data["scores"], *data["unavailable"]) if name.startswith("cosine")] == []


def test_all_selects_every_decile_as_an_empty_value_in_luigi_cfg_does():
    parameter = dict(Register.get_task_cls("SelectTrainingSet").get_params())["decile"]
    assert parameter._default == "8,9" and f"{ALL_DECILES}: " in parameter.description
    assert Rules(decile=ALL_DECILES).deciles == Rules(decile="").deciles == () and Rules(decile="8,9").deciles == (8, 9)


def test_no_judged_set_and_no_judged_file_is_one_line(tmp_path, vectors):  # noqa: F811
    refused = run_luigi(tmp_path / "work", "ScoresAgainstJudgments", "--without-encoders", "--pp-vectors", vectors, "--judged-sets", NONE)
    assert_one_line_error(refused, "--judged-sets none and no --judged-file: there are no judged pairs to score against")
