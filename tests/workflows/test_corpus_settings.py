"""A corpus's settings written once in a config file, under [BuildParaNMT], hold for every command
that builds or reads that corpus: with LUIGI_CONFIG_PATH=configs/csen-more.cfg, DecileSweep once
swept the demo corpus, silently, because only BuildParaNMT's own section named the inputs."""

import luigi
import pytest
from luigi.cmdline_parser import CmdlineParser
from luigi.task import flatten
from luigi.task_register import Register

import workflows
from workflows import BuildParaNMT, IngestBitext
from workflows.config import SetOnceForTheCorpus

TASKS = [getattr(workflows, name) for name in workflows.__all__]
CORPUS_SETTINGS = {name for task in TASKS for name, param in task.get_params() if isinstance(param, SetOnceForTheCorpus)}


@pytest.fixture
def config():
    """Luigi's config with the sections this test writes removed again afterwards."""
    config = luigi.configuration.get_config()
    written = [section for section in ("BuildParaNMT", "IngestBitext", "DecileSweep") if not config.has_section(section)]
    Register.clear_instance_cache()
    yield config
    for section in written:
        config.remove_section(section)
    Register.clear_instance_cache()


def ingest_of(task: luigi.Task) -> IngestBitext:
    """The IngestBitext a task's dependency tree reaches."""
    pending = [task]
    while pending:
        task = pending.pop()
        if isinstance(task, IngestBitext):
            return task
        pending += flatten(task.requires())
    raise AssertionError("no IngestBitext")


def test_the_settings_that_name_the_corpus_are_the_inputs_the_translator_and_the_given_pairs():
    assert {"inputs", "source_language", "translator", "nmt", "pairs", "translations", "pp_vectors", "pp_encoder"} <= CORPUS_SETTINGS
    assert {name for name, _ in BuildParaNMT.get_params()} & CORPUS_SETTINGS == {"inputs", "source_language", "translator", "pairs", "translations",
                                                                                 "pp_vectors", "pp_encoder", "paraphrases", "diversity"}


def test_every_task_that_takes_a_corpus_setting_reads_it_from_the_one_section():
    plain = [(task.__name__, name) for task in TASKS for name, param in task.get_params()
             if name in CORPUS_SETTINGS and not isinstance(param, SetOnceForTheCorpus)]
    assert plain == []


def test_a_setting_under_build_paranmt_reaches_every_command_and_the_command_line_and_own_section_come_first(config, tmp_path):
    inputs, other = tmp_path / "set-once.cs", tmp_path / "own.cs"
    config.set("BuildParaNMT", "inputs", str(inputs))
    config.set("BuildParaNMT", "source_language", "de")
    config.set("BuildParaNMT", "translations", "src::A=a.en")  # ImportTranslations has no default
    readers = [task for task in TASKS if "inputs" in dict(task.get_params())]
    assert {"BuildParaNMT", "IngestBitext", "DecileSweep", "TrainOnFiltered", "EvaluateTranslator"} <= {task.__name__ for task in readers}
    for task in readers:
        made = task()
        assert (made.inputs, made.source_language) == (str(inputs), "de"), task.__name__
    with CmdlineParser.global_instance(["DecileSweep"]) as parser:
        assert ingest_of(parser.get_task_obj()).inputs == str(inputs)  # what the sweep actually builds on
    config.set("DecileSweep", "inputs", str(other))
    Register.clear_instance_cache()
    assert workflows.DecileSweep().inputs == str(other) and IngestBitext().inputs == str(inputs)
    with CmdlineParser.global_instance(["DecileSweep", "--inputs", "given.cs"]) as parser:
        assert ingest_of(parser.get_task_obj()).inputs == "given.cs"
