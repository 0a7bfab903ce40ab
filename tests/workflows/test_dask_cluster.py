"""Every Beam stage through Luigi on a real dask.distributed cluster (a ``dask scheduler`` and two
``dask worker`` processes on 127.0.0.1, each in a folder of its own): the same Parquet bytes as
the DirectRunner, and each stage's work on both workers."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import luigi
import numpy as np
import pytest
from conftest import REPO, free_port
from distributed import Client
from nmt_fixtures import NOUNS, VERBS, tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

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

BEAM_STAGES = ["ingest", "backtranslate", "pp_train", "score", "corpus", "train", "stats", "import"]
START_SECONDS = 120


@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory):
    """The address of a ``dask scheduler`` with two one-thread ``dask worker`` processes, each
    started in an empty folder with the repository on PYTHONPATH; stopped by their PIDs."""
    folder = tmp_path_factory.mktemp("dask-cluster")
    address = f"tcp://127.0.0.1:{free_port()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    commands = {"scheduler": ["scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"]}
    for name in ("worker-a", "worker-b"):
        commands[name] = ["worker", address, "--nworkers", "1", "--nthreads", "1", "--name", name, "--no-dashboard"]
    processes = []
    try:
        for name, arguments in commands.items():
            (folder / name).mkdir()
            with open(folder / f"{name}.log", "w") as log:
                processes.append(subprocess.Popen([sys.executable, "-m", "dask", *arguments], cwd=folder / name, env=env,
                                                  stdout=log, stderr=subprocess.STDOUT))
        with Client(address, timeout=START_SECONDS) as client:
            client.wait_for_workers(2, timeout=START_SECONDS)
        yield address
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def toy_inputs(folder: Path) -> dict:
    """Two CzEng files of toy pairs, a release file, word vectors and counts of the toy words."""
    pairs = toy_pairs(200, seed=3)
    for part in (0, 1):
        with gzip.open(folder / f"toy{part}.train.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(f"toy-b1-00train-f0000{part}-s{n}\t0.9\t{cs}\t{en}\n" for n, (cs, en) in enumerate(pairs[part::2]))
    words = ["The", "the", ".", *NOUNS.values(), *VERBS.values()]
    rng = np.random.default_rng(1)
    (folder / "vectors.txt").write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=8))}\n" for w in words))
    (folder / "counts.txt").write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(words)))
    (folder / "release.txt").write_text("".join(f"the {a} sees a {b} .\ta {b} is seen by the {a} .\t0.{i % 90 + 10}\n"
                                                for i, (a, b) in enumerate(zip(NOUNS.values(), reversed(NOUNS.values()), strict=True))))
    return {"inputs": f"{folder / 'toy0.train.gz'},{folder / 'toy1.train.gz'}", "vectors": str(folder / "vectors.txt"),
            "counts": str(folder / "counts.txt"), "release": str(folder / "release.txt")}


def every_beam_stage(files: dict, nmt: dict) -> list[luigi.Task]:
    """The Beam stages, each after those it reads (the NMT model stages are not Beam's)."""
    pairs = {"inputs": files["inputs"], "translator": nmt}
    scores = {**pairs, "pp_vectors": files["vectors"]}
    corpus = {**scores, "examples": 2}
    return [IngestBitext(inputs=files["inputs"]), BackTranslate(**pairs), SelectTopHalf(**pairs), ScorePairs(**scores),
            AssignDeciles(**corpus), SelectTrainingSet(**corpus, decile="8,9"), CorpusStats(**corpus, word_counts=files["counts"]),
            ImportParaphrases(files=files["release"])]


def build(task: luigi.Task) -> None:
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")


def parquet_bytes(workdir: Path) -> dict[str, dict[str, bytes]]:
    """Each Beam stage's latest output: its Parquet files' bytes by relative path."""
    return {stage: {str(p.relative_to(workdir / stage / "latest")): p.read_bytes() for p in sorted((workdir / stage / "latest").rglob("*.parquet"))}
            for stage in BEAM_STAGES}


@pytest.mark.slow  # about 75 s on 2 cores, the tiny NMT model's training and the cluster's start-up apart
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
    ran_on = {}
    with Client(dask_scheduler) as client:
        both = set(client.scheduler_info()["workers"])
        client.get_task_stream()  # the scheduler records every task from now on
        for task in every_beam_stage(files, nmt):
            started = time.time()
            build(task)
            ran_on[task.stage] = {record["worker"] for record in client.get_task_stream(start=started)}
    got = parquet_bytes(tmp_path / "on-dask")
    assert {stage: sorted(parquet) for stage, parquet in got.items()} == {stage: sorted(parquet) for stage, parquet in expected.items()}
    assert all(expected.values()) and got == expected
    assert ran_on == {stage: both for stage in BEAM_STAGES}
