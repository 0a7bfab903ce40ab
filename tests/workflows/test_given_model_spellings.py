"""One spelling for a user's own fairseq model: ``--translator FOLDER``. The older ones
(``--model-dir``, ``--checkpoint/--dict-dir/--spm-model``) still parse and still name the same
outputs (a parameter is part of an output's identity: hours of translation), but ``--help`` no
longer lists them and their use is one warning line naming ``--translator FOLDER``."""

import pytest
from luigi.cmdline_parser import CmdlineParser

import workflows.nmt
from workflows import BackTranslate, BuildParaNMT, TrainTranslator
from workflows.nmt import GIVEN_MODEL_PARAMETERS

OLD_FLAGS = ["--model-dir", "--checkpoint", "--dict-dir", "--spm-model", "--spm-target-model"]


@pytest.fixture
def warnings_said(monkeypatch):
    """The warning lines workflows.nmt says, from a command that has said none yet."""
    said = []
    monkeypatch.setattr(workflows.nmt, "_warned", set())
    monkeypatch.setattr(workflows.nmt.log, "warning", lambda message, *args: said.append(message % args))
    return said


@pytest.fixture
def fairseq_folder(tmp_path):
    """A folder that --translator takes as a fairseq model (its files are read when a stage runs)."""
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("checkpoint.pt", "dict.cs.txt", "dict.en.txt", "spm.model"):
        (folder / name).write_text(name)
    return folder


@pytest.mark.parametrize("task_name", ["BuildParaNMT", "TrainTranslator"])
def test_help_lists_translator_and_none_of_the_older_spellings(task_name):
    help_text = CmdlineParser._build_parser(root_task=task_name).format_help()
    assert [flag for flag in OLD_FLAGS if f"  {flag} " in help_text] == []
    assert ("  --translator " in help_text) == (task_name == "BuildParaNMT")


def test_the_older_spellings_still_parse_and_stay_in_the_outputs_identity(fairseq_folder):
    with CmdlineParser.global_instance(["BuildParaNMT", "--model-dir", str(fairseq_folder)]) as parser:
        assert parser.get_task_obj().model_dir == str(fairseq_folder)
    assert set(GIVEN_MODEL_PARAMETERS) <= set(TrainTranslator(model_dir=str(fairseq_folder)).to_str_params(only_significant=True))
    assert TrainTranslator(model_dir=str(fairseq_folder)).fingerprint() != TrainTranslator().fingerprint()


def test_an_older_spelling_is_one_warning_line_once_naming_translator(luigi_workdir, fairseq_folder, warnings_said):
    for _ in range(2):
        BackTranslate(nmt={"checkpoint": str(fairseq_folder / "checkpoint.pt"), "dict_dir": str(fairseq_folder)}).model_task("ctranslate2")
    assert len(warnings_said) == 1
    BuildParaNMT(model_dir=str(fairseq_folder)).requires().fingerprint()  # passed down to the stages that load the model, through their requires()
    assert len(warnings_said) == 2
    BackTranslate(nmt={"model_dir": str(fairseq_folder)}).model_task("ctranslate2")
    assert warnings_said == [
        "--checkpoint, --dict-dir: deprecated; give the model's folder (checkpoint.pt, dict.cs.txt, dict.en.txt, spm.model) as --translator FOLDER",
        "--model-dir: deprecated; give the model's folder (checkpoint.pt, dict.cs.txt, dict.en.txt, spm.model) as --translator FOLDER",
    ]


def test_translator_is_the_model_dir_case_without_a_warning(luigi_workdir, fairseq_folder, warnings_said):
    task = BackTranslate(translator=str(fairseq_folder)).model_task("ctranslate2")
    assert task == BackTranslate(nmt={"model_dir": str(fairseq_folder)}).model_task("ctranslate2")  # the same stage, the same output
    assert len(warnings_said) == 1  # the second, older spelling's only
