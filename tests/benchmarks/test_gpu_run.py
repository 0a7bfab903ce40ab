"""``python -m benchmarks gpu_run --tiny``: every step at toy size on the CPU (the demo corpus), what
comes back, and a CPU machine reusing it (``BuildParaNMT --model-dir``, CTranslate2 int8)."""

import os
import re
import subprocess
import sys

import luigi
import pandas as pd
import pytest
from conftest import REPO

from benchmarks.gpu_run import (
    FILE_LIMIT,
    FILES_LIMIT,
    SHARES,
    TINY,
    TOTAL_LIMIT,
    Clock,
    sample,
    sentences_that_fit,
)
from corpus.errors import InputError
from models.nmt import export
from workflows import BuildParaNMT, TrainTranslator
from workflows.base import read_manifest

SECTIONS = ["## Machine", "## Steps", "## Data", "## Model", "## Translation quality", "## Back-translation speed",
            "## The corpus", "## Encoder training speed", "## Files"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The whole --tiny run, once, as on a GPU machine without CTranslate2 (every process of the
    run finds a ``ctranslate2`` that fails to import): its output folder and work directory."""
    root = tmp_path_factory.mktemp("gpu_run")
    out, workdir, without = root / "out", root / "work", root / "without-ctranslate2"
    (without / "ctranslate2").mkdir(parents=True)
    (without / "ctranslate2" / "__init__.py").write_text("raise ImportError('no ctranslate2 on this machine')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(without), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "benchmarks", "gpu_run", "--tiny", "--out", str(out), "--workdir", str(workdir)],
                          cwd=REPO, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, workdir


def test_the_folder_that_comes_back_keeps_the_limits_and_the_report_has_every_section(tiny_run):
    out, _ = tiny_run
    files = sorted(path.name for path in out.iterdir())
    assert files == ["checkpoint.pt.part-00", "corpus.parquet", "dict.cs.txt", "dict.en.txt", "report.md", "spm.model"]
    sizes = [path.stat().st_size for path in out.iterdir()]
    assert len(files) <= FILES_LIMIT and max(sizes) <= FILE_LIMIT and sum(sizes) <= TOTAL_LIMIT
    report = (out / "report.md").read_text()
    positions = [report.index(section) for section in SECTIONS]
    assert positions == sorted(positions)
    for step in SHARES:
        assert re.search(rf"^\| {step} +\|", report, re.MULTILINE), step
    assert "20 of 400 Czech sentences back-translated (a seeded sample: toy size)" in report
    assert "fairseq-generate (baseline)" in report and "BackTranslate Beam pipeline, fairseq engine" in report


def test_the_corpus_reads_with_pandas_and_has_rows_in_deciles(tiny_run):
    out, _ = tiny_run
    corpus = pd.read_parquet(out / "corpus.parquet")
    assert len(corpus) == 20 and corpus.id.is_unique
    assert set(corpus.decile_pp.astype(int)) == set(range(10))
    assert corpus.translation.str.len().gt(0).all()


def test_the_checkpoint_parts_rejoin_to_a_checkpoint_fairseq_loads(tiny_run, tmp_path, monkeypatch):
    out, _ = tiny_run
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # as fairseq runs here (fairseq_train.fairseq_env)
    joined = export.join_checkpoint(out, tmp_path / "checkpoint.pt")
    assert joined.read_bytes() == b"".join(part.read_bytes() for part in export.checkpoint_parts(out))
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(joined)], arg_overrides={"data": str(out)})
    assert len(task.source_dictionary) == len((out / "dict.cs.txt").read_text().splitlines()) + 4
    state = checkpoint_utils.load_checkpoint_to_cpu(str(joined))
    assert state["last_optimizer_state"] is None
    assert {str(value.dtype) for value in state["model"].values() if value.is_floating_point()} == {"torch.float16"}


def test_a_cpu_machine_builds_the_corpus_from_the_folder_with_ctranslate2_int8(tiny_run, luigi_workdir):
    out, workdir = tiny_run
    (inputs,) = workdir.glob("backtranslate-sample-*/sample.cs")
    build = BuildParaNMT(inputs=str(inputs), model_dir=str(out))
    luigi.configuration.get_config().set("BackTranslate", "compute_type", "int8")  # --BackTranslate-compute-type int8
    try:
        assert luigi.build([build], local_scheduler=True, log_level="WARNING")
        corpus = pd.read_parquet(build.requires().corpus_dir())
    finally:
        luigi.configuration.get_config().remove_option("BackTranslate", "compute_type")
    backtranslate = next(path for path in (luigi_workdir / "backtranslate").iterdir() if path.is_dir() and not path.is_symlink())
    manifest = read_manifest(backtranslate)
    assert manifest["engine"] == "ctranslate2" and manifest["compute_type"] == "int8" and manifest["rows"]["pairs"] == 20
    assert len(corpus) == 20
    assert read_manifest(TrainTranslator(inputs=str(inputs), model_dir=str(out)).output_dir)["checkpoint_parts"] == 1


def test_a_model_folder_that_lacks_a_file_is_named_in_one_line(tmp_path):
    (tmp_path / "dict.cs.txt").write_text("a 1\n")
    with pytest.raises(InputError, match=r"^--model-dir .*: no checkpoint.pt or checkpoint.pt.part-\*, dict.en.txt, spm.model \("):
        TrainTranslator(model_dir=str(tmp_path)).check_inputs()
    with pytest.raises(InputError, match="not both"):
        TrainTranslator(model_dir=str(tmp_path), checkpoint=str(tmp_path / "c.pt")).check_inputs()


def test_the_back_translation_takes_what_fits_in_its_share():
    rates = {"fairseq": {"sentences": 2000, "seconds": 2.0}, "beam-fairseq": {"sentences": 2000, "seconds": 12.0}}
    real = type(TINY)(**{**TINY.__dict__, "backtranslate_range": (2000, 0)})
    # 1,000 sentences/s after 10 s of the stage's fixed cost, 90 % of the rest of the share:
    assert sentences_that_fit(rates, 110.0, real) == 90_000
    assert sentences_that_fit(rates, 5.0, real) == 2000  # late: the test sentences' worth still
    assert sentences_that_fit(rates, 110.0, TINY) == 20


def test_the_clock_gives_each_step_the_end_of_its_share_and_those_before_it():
    clock = Clock(10)
    assert clock.deadline("data") == pytest.approx(600 * SHARES["data"])
    assert clock.deadline("encoders") == pytest.approx(600)
    assert sum(SHARES.values()) == pytest.approx(1.0)
    assert sample(list(range(10)), 3) == sorted(sample(list(range(10)), 3)) and len(sample(list(range(10)), 3)) == 3
