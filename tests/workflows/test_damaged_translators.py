"""A translator folder's damaged file is one line naming it, and nothing is built from it; the
project's own model folders (TrainTranslator's, ConvertTranslator's) are translators.

Every file a library reads is damaged the ways a file is: cut short (a download stopped), its
bytes replaced (a wrong file saved under its name), a few bytes changed inside (a bad disk: found
where the format has checksums, PyTorch's zip files; safetensors and CTranslate2 files have none).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from hf_fixtures import GERMAN, m2m_100, marian
from nmt_fixtures import tiny_nmt_fixture  # noqa: F401 - the tiny_nmt fixture
from test_published_translators import line_aligned

from corpus.errors import InputError
from models.nmt import export, folders, published
from models.nmt.model import NmtModel
from models.nmt.translate import Ct2Translator, DecodeOptions
from workflows.nmt import ImportTranslator, TrainTranslator

NOISE = bytes(range(256)) * 64


def cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def replaced(path: Path) -> None:
    path.write_bytes(NOISE)


def flipped(path: Path) -> None:
    """A run of bytes in the middle inverted: the file's length and its header as they were."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(255 - byte for byte in data[middle : middle + 64])
    path.write_bytes(bytes(data))


DAMAGES = {"cut": cut, "replaced": replaced, "flipped": flipped}


@pytest.fixture(scope="module")
def published_folders(tmp_path_factory):
    """A Marian folder (safetensors), the same with PyTorch weights, an M2M-100 folder and a
    CTranslate2 folder with its tokenizer, made once."""
    root = tmp_path_factory.mktemp("translators")
    made = {"marian": marian(root / "marian"), "m2m_100": m2m_100(root / "m2m_100")}
    from safetensors.torch import load_file

    made["marian-pytorch"] = root / "marian-pytorch"  # as older downloads are
    shutil.copytree(made["marian"], made["marian-pytorch"], ignore=shutil.ignore_patterns("*.safetensors"))
    torch.save(load_file(made["marian"] / "model.safetensors"), made["marian-pytorch"] / "pytorch_model.bin")
    made["ctranslate2"] = published.convert(made["marian"], root / "ctranslate2")
    published.load_tokenizer(made["marian"]).save_pretrained(made["ctranslate2"])
    return made


CASES = [
    ("marian", "model.safetensors", "cut"), ("marian", "model.safetensors", "replaced"),
    ("marian", "source.spm", "replaced"), ("marian", "target.spm", "cut"), ("marian", "vocab.json", "cut"),
    ("marian", "tokenizer_config.json", "replaced"), ("marian", "generation_config.json", "replaced"), ("marian", "config.json", "cut"),
    ("marian-pytorch", "pytorch_model.bin", "cut"), ("marian-pytorch", "pytorch_model.bin", "flipped"),
    ("marian-pytorch", "pytorch_model.bin", "replaced"),
    ("m2m_100", "sentencepiece.bpe.model", "replaced"), ("m2m_100", "sentencepiece.bpe.model", "cut"),
    ("ctranslate2", "model.bin", "cut"), ("ctranslate2", "model.bin", "replaced"), ("ctranslate2", "shared_vocabulary.json", "cut"),
    ("ctranslate2", "source.spm", "replaced"),
]


@pytest.mark.parametrize(("kind", "name", "damage"), CASES, ids=["-".join(case) for case in CASES])
def test_a_damaged_file_of_a_published_translator_is_one_line_naming_it(tmp_path, published_folders, kind, name, damage):
    folder = shutil.copytree(published_folders[kind], tmp_path / kind)
    DAMAGES[damage](folder / name)
    with pytest.raises(InputError) as raised:
        ImportTranslator(translator=str(folder), source_language="de").check_inputs()
    message = str(raised.value)
    assert "\n" not in message and str(folder / name) in message[:200], message
    assert "Traceback" not in message


def test_a_sound_published_translator_passes_every_check(published_folders):
    for folder in published_folders.values():
        ImportTranslator(translator=str(folder), source_language="de").check_inputs()


FAIRSEQ_CASES = [("checkpoint.pt.part-00", "cut"), ("checkpoint.pt.part-00", "flipped"), ("checkpoint.pt.part-00", "replaced"),
                 ("dict.cs.txt", "replaced"), ("dict.en.txt", "flipped"), ("spm.model", "replaced"), ("spm.model", "cut")]


@pytest.mark.parametrize(("name", "damage"), FAIRSEQ_CASES, ids=["-".join(case) for case in FAIRSEQ_CASES])
def test_a_damaged_file_of_a_fairseq_model_folder_is_one_line_naming_it(luigi_workdir, tmp_path, tiny_nmt, name, damage):
    folder = tmp_path / "exported"
    export.export_model(tiny_nmt.model, folder)
    DAMAGES[damage](folder / name)
    task = TrainTranslator(model_dir=str(folder))
    task.check_inputs()  # the files are all there: what is in them is read as the stage starts
    (tmp_path / "partial").mkdir()
    with pytest.raises(InputError) as raised:
        task.build(tmp_path / "partial")
    assert "\n" not in str(raised.value) and str(raised.value).startswith(f"{folder / name}"), raised.value
    assert ": damaged, or not a " in str(raised.value), raised.value


def luigi_from(folder: Path, *args: str) -> subprocess.CompletedProcess:
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "workflows", *args, "--local-scheduler"],
                          cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(("name", "damage"), [("model.safetensors", "cut"), ("source.spm", "replaced")])
def test_build_paranmt_with_a_damaged_translator_is_one_line_and_builds_nothing_from_it(tmp_path, published_folders, name, damage):
    folder = shutil.copytree(published_folders["marian"], tmp_path / "opus-mt")
    DAMAGES[damage](folder / name)
    news = line_aligned(tmp_path, "news", "de", GERMAN)
    result = luigi_from(tmp_path / "empty", "BuildParaNMT", "--inputs", str(news), "--source-language", "de", "--translator", str(folder))
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output, output
    errors = [line for line in output.splitlines() if "ERROR" in line or "WARNING" in line]
    assert len(errors) == 1 and str(folder / name) in errors[0][:120 + len(str(folder / name))], output
    work = tmp_path / "empty" / "work"
    assert not any((work / stage).exists() for stage in ("nmt-import", "backtranslate", "corpus")), sorted(os.listdir(work))


def test_a_mistake_in_the_translator_is_said_first(tmp_path):
    """Found while Luigi reads the stages' requirements: the mistake, then the stage by its name."""
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text('{"model_type": "bert"}')
    for translator, mistake in [(tmp_path / "missing", "not a folder"), (tmp_path, "holds no translator"), (bert, "a bert model")]:
        result = luigi_from(tmp_path / "empty", "BackTranslate", "--translator", str(translator))
        line = next(line for line in (result.stdout + result.stderr).splitlines() if "WARNING" in line or "ERROR" in line)
        assert result.returncode != 0 and f"--translator {translator}: {mistake}" in line[:120], line
        assert line.endswith("[Will not run BackTranslate or any dependencies due to error in deps() method]"), line


def test_the_projects_own_trained_and_converted_models_are_translators(kit_demo, tmp_path):
    """The demo's TrainTranslator and ConvertTranslator outputs, given to another work directory
    from an empty folder, translate as the demo's model does."""
    demo = kit_demo.folder / "work"
    czech = pd.read_parquet(demo / "ingest" / "latest" / "bitext").sort_values("id").foreign.head(20).tolist()
    (tmp_path / "news.cs").write_text("".join(f"{text}\n" for text in czech), encoding="utf-8")
    (tmp_path / "news.en").write_text("".join(f"{number}\n" for number in range(len(czech))), encoding="utf-8")
    demo_model = Ct2Translator(NmtModel.load(demo / "nmt-ct2" / "latest"), DecodeOptions(), device="cpu")
    expected = sorted(hypothesis.text for hypothesis in demo_model.translate(czech))
    for stage in ("nmt-train", "nmt-ct2"):
        translator = demo / stage / "latest"
        assert folders.translator_kind(translator) == "fairseq"
        result = luigi_from(tmp_path / stage, "BackTranslate", "--inputs", str(tmp_path / "news.cs"), "--translator", str(translator))
        assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
        translated = pd.read_parquet(tmp_path / stage / "work" / "backtranslate" / "latest" / "pairs")
        assert sorted(translated.translation) == expected, stage
