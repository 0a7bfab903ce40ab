"""BackTranslate and BuildParaNMT as Luigi tasks: training, a given checkpoint, the manifest."""

import filecmp
import gzip
import json

import luigi
import pandas as pd
import pytest
from nmt_fixtures import ACCEPT_ALL, tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

import schemas
from corpus.outputs import read_manifest
from models.nmt.devices import ct2_cuda_problem
from workflows import BackTranslate, BuildParaNMT, EvaluateTranslator, TrainTranslator


def czeng_file(path, pairs):
    """The pairs as a CzEng file; the same pairs, the same bytes (no time in the gzip header)."""
    text = "".join(f"toy-b1-00train-f00001-s{n}\t0.9\t{cs}\t{en}\n" for n, (cs, en) in enumerate(pairs))
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return str(path)


def given(tiny_nmt):
    model = tiny_nmt.model
    return {"checkpoint": model.checkpoint, "dict_dir": model.data_dir, "spm_model": model.spm_source}


def test_a_given_checkpoint_skips_training_and_back_translation_writes_pairs(luigi_workdir, tmp_path, tiny_nmt):
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(60, seed=4))
    task = BackTranslate(inputs=inputs, nmt=given(tiny_nmt))
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert not list(luigi_workdir.glob("nmt-spm"))
    manifest = read_manifest(task.output_dir)
    assert manifest["engine"] == "ctranslate2" and manifest["device"] == "cpu"
    assert len(manifest["model_fingerprint"]) == 32
    assert manifest["rows"] == {"pairs": 60, "sources": 60, "truncated": 0} and manifest["rejects"]["total"] == 0
    assert manifest["paraphrases"]["sources_by_paraphrases"] == {"1": 60} and manifest["paraphrases"]["diversity"] is None
    assert manifest["translated_this_run"] == 60 and manifest["sentences_per_second"] > 0
    assert manifest["models_loaded_this_run"] == 1
    pairs = pd.read_parquet(task.output_dir / "pairs")
    assert list(pairs.columns) == schemas.PAIRS.names and len(pairs) == 60
    assert (pairs.domain == "toy").all() and (pairs.czeng_score == 0.9).all()
    given_stage = TrainTranslator(inputs=inputs, **given(tiny_nmt)).output_dir
    trained = json.loads((given_stage / "nmt.json").read_text())
    # copied into the stage's output: it serves wherever the same files are given, and needs none of them
    assert trained["checkpoint"] == "checkpoint.pt" and trained["data_dir"] == "dicts" and trained["spm_source"] == "spm.model"
    assert filecmp.cmp(given_stage / "checkpoint.pt", tiny_nmt.model.checkpoint, shallow=False)


@pytest.mark.skipif(not ct2_cuda_problem(), reason="CTranslate2 can use a GPU here")
def test_cuda_that_ctranslate2_cannot_use_fails_the_task_in_one_line_before_translating(luigi_workdir, tmp_path, tiny_nmt):
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(10, seed=4))
    task = BackTranslate(inputs=inputs, nmt=given(tiny_nmt), device="cuda")
    failures = []
    task.on_failure = lambda error, original=task.on_failure: failures.append(original(error)) or failures[-1]
    assert not luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert len(failures) == 1 and failures[0].startswith("--device cuda: ") and "\n" not in failures[0]
    assert not (luigi_workdir / "backtranslate").exists() or not list((luigi_workdir / "backtranslate").glob("*/pairs/*.parquet"))


def test_build_paranmt_passes_the_given_model_and_engine_to_back_translation(tiny_nmt):
    build = BuildParaNMT(inputs="x.gz", engine="fairseq", **given(tiny_nmt))
    back_translations = [task for task in walk(build) if isinstance(task, BackTranslate)]
    assert back_translations and all(
        task.nmt == given(tiny_nmt) and task.engine == "fairseq" and task.inputs == "x.gz" for task in back_translations)


def test_build_paranmt_passes_the_paraphrases_to_back_translation_and_every_reader_of_the_corpus(tiny_nmt):
    build = BuildParaNMT(inputs="x.gz", paraphrases=5, diversity="constrained", **given(tiny_nmt))
    tasks = list(walk(build))
    back_translations = [task for task in tasks if isinstance(task, BackTranslate)]
    assert back_translations and all(task.paraphrases == 5 and task.diversity == "constrained" for task in back_translations)
    one = {task.task_id for task in walk(BuildParaNMT(inputs="x.gz", **given(tiny_nmt))) if isinstance(task, BackTranslate)}
    assert one.isdisjoint(task.task_id for task in back_translations)


def test_several_paraphrases_on_the_fairseq_engine_stop_in_one_line(luigi_workdir, tmp_path, tiny_nmt):
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(10, seed=4))
    task = BackTranslate(inputs=inputs, nmt=given(tiny_nmt), engine="fairseq", paraphrases=3)
    failures = []
    task.on_failure = lambda error, original=task.on_failure: failures.append(original(error)) or failures[-1]
    assert not luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert len(failures) == 1 and "--engine ctranslate2" in failures[0] and "\n" not in failures[0]


def test_a_corpus_of_several_paraphrases_end_to_end(luigi_workdir, tmp_path, tiny_nmt):
    """BackTranslate with --paraphrases through scoring, deciles and the summary: every pair of
    every variant is ranked, the summary compares the methods, a rerun rebuilds nothing."""
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(80, seed=9))
    build = BuildParaNMT(inputs=inputs, paraphrases=3, diversity="parabank", **given(tiny_nmt))
    assert luigi.build([build], local_scheduler=True, log_level="WARNING")
    back = next(task for task in walk(build) if isinstance(task, BackTranslate))
    pairs = pd.read_parquet(back.output_dir / "pairs")
    corpus = pd.read_parquet(build.requires().corpus_dir())
    assert len(corpus) == len(pairs) > 80 and set(corpus.id) == set(pairs.id)
    assert (corpus.groupby("bitext_id").variant.min() == 0).all() and corpus.bitext_id.nunique() == 80
    summary = json.loads((build.requires().output_dir / "summary.json").read_text())
    assert summary["made"]["beam 12"]["pairs"] == 80 and sum(entry["pairs"] for entry in summary["made"].values()) == len(pairs)
    assert "How the pairs were made" in (build.requires().output_dir / "summary.md").read_text()
    manifest = read_manifest(back.output_dir)
    assert manifest["rows"]["sources"] == 80 and sum(manifest["paraphrases"]["sources_by_paraphrases"].values()) == 80


def walk(task):
    """Every task ``task`` requires, directly or not."""
    for required in luigi.task.flatten(task.requires()):
        yield required
        yield from walk(required)


def test_fairseq_engine_gives_the_same_pairs_as_ctranslate2(luigi_workdir, tmp_path, tiny_nmt):
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(30, seed=8))
    tasks = [BackTranslate(inputs=inputs, nmt=given(tiny_nmt), engine=engine) for engine in ("ctranslate2", "fairseq")]
    assert luigi.build(tasks, local_scheduler=True, log_level="WARNING")
    ct2, fairseq = (pd.read_parquet(task.output_dir / "pairs") for task in tasks)
    assert (ct2.translation == fairseq.translation).mean() >= 0.9
    assert (ct2.trans_score - fairseq.trans_score).abs().max() < 2e-3
    assert read_manifest(tasks[1].output_dir)["engine"] == "fairseq"


def test_training_through_luigi_then_back_translation(luigi_workdir, tmp_path):
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(200, seed=9))
    # two epochs of 200 pairs make no translator: the plumbing is what is tested
    train = TrainTranslator(inputs=inputs, preset="tiny", max_epoch=2, accept_collapse=True)
    build = BackTranslate(inputs=inputs, nmt={"preset": "tiny", "max_epoch": 2, "accept_collapse": True}, beam_size=2,
                          accept_translations=ACCEPT_ALL)
    assert luigi.build([build], local_scheduler=True, log_level="WARNING")
    manifest = read_manifest(train.output_dir)
    assert manifest["device"] == "cpu" and manifest["pairs"]["train"] + manifest["pairs"]["valid"] == 200
    assert (train.output_dir / "checkpoints" / "checkpoint_last.pt").exists()
    assert read_manifest(build.output_dir)["rows"]["pairs"] == 200


@pytest.mark.slow
def test_newstest2021_sources_end_to_end_and_evaluation(luigi_workdir, tiny_nmt):
    from tests.conftest import require_shared

    wmt21 = require_shared("csen", "wmt21")
    source, reference = wmt21 / "newstest2021.cs-en.src.cs", wmt21 / "newstest2021.cs-en.ref.A.en"
    task = BackTranslate(inputs=f"{source}::{reference}", nmt=given(tiny_nmt), accept_translations=ACCEPT_ALL)
    evaluation = EvaluateTranslator(nmt=given(tiny_nmt), source=str(source), reference=str(reference),
                                    baseline=str(wmt21 / "newstest2021.cs-en.hyp.CUNI-Transformer2018.en"))
    assert luigi.build([task, evaluation], local_scheduler=True, log_level="WARNING")
    lines = len(source.read_text().splitlines())
    manifest = read_manifest(task.output_dir)
    assert manifest["rows"]["pairs"] + manifest["rejects"]["total"] == lines
    pairs = pd.read_parquet(task.output_dir / "pairs")
    assert pairs.translation.str.len().gt(0).mean() > 0.9 and pairs.trans_score.lt(0).all()
    scores = read_manifest(evaluation.output_dir)["scores"]
    assert scores["newstest2021.cs-en.hyp.CUNI-Transformer2018.en"]["bleu"] > 20
    assert (evaluation.output_dir / "report.md").exists()


def test_a_collapsed_translator_stops_the_run_in_one_line_and_is_kept_only_when_accepted(luigi_workdir, tmp_path):
    """The toy language's collapsing recipe (tests/models/test_collapse_watch.py): its kept
    checkpoint says one sentence for every source, so nothing is built from it."""
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(2000, seed=1))
    recipe = {"inputs": inputs, "preset": "tiny", "max_epoch": 8, "lr": 1e-2, "warmup_updates": 30}
    task = TrainTranslator(**recipe)
    failures = []
    task.on_failure = lambda error, original=task.on_failure: failures.append(original(error)) or failures[-1]
    assert not luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert len(failures) == 1 and "\n" not in failures[0], failures
    assert "is not a translator: distinct" in failures[0] and "--TrainTranslator-accept-collapse" in failures[0]
    assert not task.complete() and list(luigi_workdir.glob("nmt-train/.*.partial/checkpoints/checkpoint_best.pt"))
    accepted = TrainTranslator(**recipe, accept_collapse=True)
    assert accepted.output_dir == task.output_dir  # a judgement, not what the model is
    assert luigi.build([accepted], local_scheduler=True, log_level="WARNING") and accepted.complete()
