"""Every Beam stage through Luigi on a real dask.distributed cluster (a ``dask scheduler`` and two
``dask worker`` processes on 127.0.0.1, each in a folder of its own, the second declaring a GPU
resource): the same Parquet bytes as the DirectRunner, each stage's work on both workers, and the
translation stages' only where the resource is when [paranmt] dask_translation_resource names it."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import luigi
import numpy as np
import pytest
from distributed import Client
from hf_fixtures import GERMAN, marian
from nmt_fixtures import ACCEPT_ALL, NOUNS, VERBS, tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

from benchmarks.common import local_dask_cluster
from workflows.backtranslate import BackTranslate
from workflows.corpus import (
    AssignDeciles,
    CorpusStats,
    ImportParaphrases,
    ScorePairs,
    SelectTopHalf,
    SelectTrainingSet,
)
from workflows.ingest import IngestBitext
from workflows.translations import ImportTranslations

# Each Beam stage (its output folder) and a transform that works on its input shard by shard (its
# label, as the runner names the transform's tasks): its tasks should run on both workers. Dask
# fuses a chain of transforms into one task named after its ends: the raw-input stages' WriteShards
# runs in the task named after the count that follows it (the step before the lifted combine),
# BackTranslate's in RunInference's first.
WRITE_SHARDS = "AllWritten/CombineGlobally(CountCombineFn)/KeyWithVoid"
SHARD_WORK = {"ingest": WRITE_SHARDS, "backtranslate": "Translate/BatchElements/ParDo(_GlobalWindowsBatchingDoFn)", "pp_train": "WriteKept",
              "score": "Score", "corpus": "SampleParts", "train": "WriteKept", "stats": "Parts", "import": WRITE_SHARDS}
# Input files of IngestBitext and ImportParaphrases: more first tasks than twice the cluster's
# threads, which dask's scheduler queues and hands out as workers free up; fewer it places at once,
# often all on one worker (the toy data's tasks are too short for work stealing to move them).
INPUT_FILES = 5
# The worker that declares the resource GPU=1 (a CPU worker standing for a GPU machine's).
GPU_WORKER = 1


@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory):
    """The address of a ``dask scheduler`` with two one-thread ``dask worker`` processes, each
    started in an empty folder with the repository on PYTHONPATH, worker GPU_WORKER declaring
    GPU=1; stopped by their PIDs."""
    # a one-thread worker takes one of a stage's first tasks (its input files) at a time, not two
    one_at_a_time = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
    with local_dask_cluster(tmp_path_factory.mktemp("dask-cluster"), 2, one_at_a_time, resources={GPU_WORKER: "GPU=1"}) as (address, _):
        yield address


def toy_inputs(folder: Path) -> dict:
    """CzEng files of toy pairs, release files, word vectors and counts of the toy words."""
    pairs = toy_pairs(200, seed=3)
    for part in range(INPUT_FILES):
        with gzip.open(folder / f"toy{part}.train.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(f"toy-b1-00train-f0000{part}-s{n}\t0.9\t{cs}\t{en}\n" for n, (cs, en) in enumerate(pairs[part::INPUT_FILES]))
    words = ["The", "the", ".", *NOUNS.values(), *VERBS.values()]
    rng = np.random.default_rng(1)
    (folder / "vectors.txt").write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=8))}\n" for w in words))
    (folder / "counts.txt").write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(words)))
    for verb in list(VERBS.values())[:INPUT_FILES]:
        (folder / f"release-{verb}.txt").write_text("".join(f"the {a} {verb} a {b} .\ta {b} is what the {a} {verb} .\t0.{i + 10}\n"
                                                            for i, (a, b) in enumerate(zip(NOUNS.values(), reversed(NOUNS.values()), strict=True))))
    return {"inputs": str(folder / "toy*.train.gz"), "vectors": str(folder / "vectors.txt"),
            "counts": str(folder / "counts.txt"), "release": str(folder / "release-*.txt")}


def every_beam_stage(files: dict, nmt: dict) -> list[luigi.Task]:
    """The Beam stages, each after those it reads (the NMT model stages are not Beam's), on a
    corpus of several paraphrases a source (parabank: seeded samples drawn on the workers)."""
    pairs = {"inputs": files["inputs"], "nmt": nmt, "paraphrases": 3, "diversity": "parabank"}
    scores = {**pairs, "pp_vectors": files["vectors"]}
    corpus = {**scores, "examples": 2}
    return [IngestBitext(inputs=files["inputs"]), BackTranslate(**pairs), SelectTopHalf(**pairs), ScorePairs(**scores),
            AssignDeciles(**corpus), SelectTrainingSet(**corpus, decile="8,9"), CorpusStats(**corpus, word_counts=files["counts"]),
            ImportParaphrases(files=files["release"])]


def task_name(record: dict) -> str:
    """A dask task's name: the labels of the transforms it ran (fused ones joined by '-') and a token."""
    return record["key"][0] if isinstance(record["key"], tuple) else record["key"]


def build(task: luigi.Task) -> None:
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")


def parquet_bytes(workdir: Path) -> dict[str, dict[str, bytes]]:
    """Each Beam stage's latest output: its Parquet files' bytes by relative path, less the
    build's fingerprint that every file name carries (the runner is part of the fingerprint)."""
    def shard_bytes(output: Path) -> dict[str, bytes]:
        own = f"-{output.resolve().name}.parquet"
        return {str(path.relative_to(output)).replace(own, ".parquet"): path.read_bytes() for path in sorted(output.rglob("*.parquet"))}

    return {stage: shard_bytes(workdir / stage / "latest") for stage in SHARD_WORK}


def test_every_beam_stage_on_a_dask_cluster_writes_the_direct_runners_bytes(luigi_workdir, tmp_path, tiny_nmt, dask_scheduler, monkeypatch):
    files = toy_inputs(tmp_path)
    nmt = {"checkpoint": tiny_nmt.model.checkpoint, "dict_dir": tiny_nmt.model.data_dir, "spm_model": tiny_nmt.model.spm_source}
    for task in every_beam_stage(files, nmt):
        build(task)
    expected = parquet_bytes(luigi_workdir)

    config = luigi.configuration.get_config()
    config.set("paranmt", "runner", "DaskRunner")
    config.set("paranmt", "dask_scheduler", dask_scheduler)
    monkeypatch.chdir(tmp_path)
    config.set("paranmt", "workdir", "on-dask")  # relative: the workers run in folders of their own
    relative = {name: os.path.relpath(path, tmp_path) for name, path in files.items()}  # so are the inputs, vectors and counts
    ran_on = {}
    with Client(dask_scheduler) as client:
        both = set(client.scheduler_info()["workers"])
        client.get_task_stream()  # the scheduler records every task from now on
        for task in every_beam_stage(relative, {name: os.path.relpath(path, tmp_path) for name, path in nmt.items()}):
            started = time.time()
            build(task)
            ran_on[task.stage] = {(task_name(record), record["worker"]) for record in client.get_task_stream(start=started)}
    got = parquet_bytes(tmp_path / "on-dask")
    assert {stage: sorted(parquet) for stage, parquet in got.items()} == {stage: sorted(parquet) for stage, parquet in expected.items()}
    assert all(expected.values()) and got == expected
    shard_work_on = {stage: {worker for name, worker in ran if SHARD_WORK[stage] in name.split("-")} for stage, ran in ran_on.items()}
    # Every stage's shard work ran on the cluster, and the cluster spread it over both workers; which
    # worker takes a small stage's few tasks is the scheduler's choice (on a loaded machine one
    # worker took all of ingest's once), so no stage is required to use both.
    assert set(shard_work_on) == set(SHARD_WORK) and all(workers and workers <= both for workers in shard_work_on.values()), shard_work_on
    assert set().union(*shard_work_on.values()) == both, shard_work_on


def translation_inputs(folder: Path) -> dict[str, str]:
    """German inputs in three files (a shard each) with their references, and two systems'
    translations of each: the parameters IngestBitext and ImportTranslations take."""
    items, translated = [], []
    for number in range(3):
        german = GERMAN[number::3]
        (folder / f"news{number}.de").write_text("".join(f"{de}\n" for de, _ in german), encoding="utf-8")
        (folder / f"news{number}.en").write_text("".join(f"{en}\n" for _, en in german), encoding="utf-8")
        (folder / f"hyp{number}.lower.en").write_text("".join(f"{en.lower()}\n" for _, en in german), encoding="utf-8")
        (folder / f"hyp{number}.bare.en").write_text("".join(f"{en.rstrip('.?!')}\n" for _, en in german), encoding="utf-8")
        items.append(f"{folder}/news{number}.de::{folder}/news{number}.en")
        translated.append(f"{folder}/news{number}.de::{folder}/hyp{number}.*.en")
    return {"inputs": ",".join(items), "source_language": "de", "translations": ",".join(translated)}


def translation_stages(inputs: dict[str, str], translator: Path) -> list[luigi.Task]:
    """The stages that translate or import: ingest, BackTranslate with a published (random Marian)
    translator, ImportTranslations unscored and scored by it."""
    common = {name: inputs[name] for name in ("inputs", "source_language")}
    return [IngestBitext(**common), BackTranslate(**common, translator=str(translator), accept_translations=ACCEPT_ALL),
            ImportTranslations(**common, translations=inputs["translations"]),
            ImportTranslations(**common, translations=inputs["translations"], translator=str(translator))]


def output_bytes(output: Path) -> dict[str, bytes]:
    """A stage output's Parquet files' bytes by relative path, less the build's fingerprint."""
    own = f"-{output.resolve().name}.parquet"
    return {str(path.relative_to(output)).replace(own, ".parquet"): path.read_bytes() for path in sorted(output.rglob("*.parquet"))}


def test_translation_stages_on_a_cluster_write_the_direct_runners_bytes_translating_only_where_the_resource_is(luigi_workdir, tmp_path,
                                                                                                                 dask_scheduler):
    translator, inputs = marian(tmp_path / "marian"), translation_inputs(tmp_path)
    expected = []
    for task in translation_stages(inputs, translator):
        build(task)
        expected.append(output_bytes(task.output_dir))

    config = luigi.configuration.get_config()
    for key, value in (("runner", "DaskRunner"), ("dask_scheduler", dask_scheduler), ("dask_translation_resource", "GPU"),
                       ("workdir", str(tmp_path / "on-dask"))):
        config.set("paranmt", key, value)
    got, translated_on = [], {}
    with Client(dask_scheduler) as client:
        workers = {info["name"]: address for address, info in client.scheduler_info()["workers"].items()}
        client.get_task_stream()  # the scheduler records every task from now on
        for task in translation_stages(inputs, translator):
            started = time.time()
            build(task)
            got.append(output_bytes(task.output_dir))
            translated_on[task.task_id] = {record["worker"] for record in client.get_task_stream(start=started)
                                           if task_name(record).startswith("Translate/")}
    assert all(expected) and got == expected
    ingest, backtranslate, unscored, scored = (task.task_id for task in translation_stages(inputs, translator))
    gpu = workers[f"worker-{GPU_WORKER}"]
    assert translated_on[backtranslate] == {gpu} and translated_on[scored] == {gpu}, translated_on
    assert not translated_on[ingest] and not translated_on[unscored]  # no translator: no Translate step


def test_with_a_translation_resource_the_device_is_chosen_on_the_workers_not_where_luigi_runs(luigi_workdir, tmp_path):
    """--device cuda where luigi runs without a GPU: an InputError on the DirectRunner; on
    resource workers it is theirs to choose, and each holds its own model (no sharing)."""
    from corpus.errors import InputError
    from models.nmt.devices import gpu_problem

    task = BackTranslate(inputs=str(tmp_path / "any.de"), source_language="de", device="cuda", share_model=True)
    model = object()  # the spec only carries it
    if gpu_problem(task.engine):  # no GPU CTranslate2 can use here
        with pytest.raises(InputError, match="--device cuda"):
            task.translator_spec(model, 1)
    config = luigi.configuration.get_config()
    config.set("paranmt", "runner", "DaskRunner")
    config.set("paranmt", "dask_translation_resource", "GPU")
    spec = task.translator_spec(model, 1)
    assert (spec.device, spec.worker_resource, spec.shares_model) == ("cuda", "GPU", False)
