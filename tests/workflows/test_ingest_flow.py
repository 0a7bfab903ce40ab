import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import luigi
import pandas as pd
import pytest

import schemas
from corpus.outputs import read_manifest
from workflows import IngestBitext, base
from workflows.code_identity import CodeIdentity


def test_ingest_task_on_embedded_demo_writes_manifest_and_latest_link(luigi_workdir):
    task = IngestBitext()
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    manifest = read_manifest(task.output_dir)
    bitext = pd.read_parquet(luigi_workdir / "ingest" / "latest" / "bitext")
    assert list(bitext.columns) == schemas.BITEXT.names
    assert manifest["rows"]["bitext"] == len(bitext) == 400
    assert manifest["rejects"]["total"] == 0
    assert manifest["schema"]["bitext"] == "bitext/3"
    assert manifest["input_files"][0].split(":")[0].endswith("czeng_demo.train.gz")
    assert bitext.id.is_unique and (bitext.en_n_tokens > 0).all()


def test_changed_parameters_or_input_give_a_new_output_directory(luigi_workdir, tmp_path):
    data = tmp_path / "x.cs"
    data.write_text("Ahoj.\n")
    (tmp_path / "x.en").write_text("Hi.\n")
    first = IngestBitext(inputs=str(data))
    assert first.fingerprint() != IngestBitext(inputs=str(data), num_shards=3).fingerprint()
    assert luigi.build([first], local_scheduler=True, log_level="WARNING")
    assert first.complete()
    (tmp_path / "x.en").write_text("Hello.\n")
    assert not IngestBitext(inputs=str(data)).complete()


def test_outputs_of_other_code_or_libraries_are_not_reused(luigi_workdir, monkeypatch):
    task = IngestBitext()
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    ran = base.stage_code(IngestBitext)
    assert read_manifest(task.output_dir)["identity"]["code"] == ran.as_record()
    assert "schemas.BITEXT" in ran.definitions and "sacremoses" in ran.libraries
    monkeypatch.setattr(base, "stage_code", lambda _: CodeIdentity({**ran.definitions, "schemas.BITEXT": "another"}, ran.libraries))
    assert not IngestBitext().complete()
    monkeypatch.setattr(base, "stage_code", lambda _: CodeIdentity(ran.definitions, {**ran.libraries, "sacremoses": "9.9"}))
    assert not IngestBitext().complete()
    monkeypatch.setattr(base, "stage_code", lambda _: ran)
    assert IngestBitext().complete()


def write_big_czeng(path: Path, pairs: int) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for n in range(pairs):
            bad = "\tnot-a-score" if n % 997 == 0 else ""
            handle.write(f"news-b1-00train-f{n // 100:05d}-s{n % 100}{bad}\t0.5\tČeská věta číslo {n}, delší o něco.\t"
                         f"English sentence number {n}, a bit longer.\n")


def luigi_command(workdir: Path, inputs: Path) -> list[str]:
    return [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler",
            "--inputs", str(inputs), "--paranmt-workdir", str(workdir), "--paranmt-direct-num-workers", "1"]


def parquet_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def test_killed_run_resumes_without_duplicates_or_missing_rows(tmp_path):
    inputs = tmp_path / "big.train.gz"
    write_big_czeng(inputs, 20_000)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed_dir = tmp_path / "killed"
    process = subprocess.Popen(luigi_command(killed_dir, inputs), start_new_session=True, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list((killed_dir / "ingest").glob(".*.partial")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not list(killed_dir.rglob("_SUCCESS")), "the run finished before it could be killed"
    assert list((killed_dir / "ingest").glob(".*.partial"))

    subprocess.run(luigi_command(killed_dir, inputs), check=True, env=env, capture_output=True)
    clean_dir = tmp_path / "clean"
    subprocess.run(luigi_command(clean_dir, inputs), check=True, env=env, capture_output=True)

    [resumed_out] = [p for p in (killed_dir / "ingest").iterdir() if p.name != "latest"]
    [clean_out] = [p for p in (clean_dir / "ingest").iterdir() if p.name != "latest"]
    assert resumed_out.name == clean_out.name
    bitext = pd.read_parquet(resumed_out / "bitext")
    rejects = pd.read_parquet(resumed_out / "rejects")
    assert bitext.id.is_unique
    assert len(bitext) + len(rejects) == 20_000
    assert set(rejects.reason) == {"column_count"}
    assert parquet_bytes(resumed_out) == parquet_bytes(clean_out)
    manifest = json.loads((resumed_out / "_SUCCESS").read_text())
    assert manifest["rows"]["bitext"] == len(bitext) and manifest["rejects"]["total"] == len(rejects)


def test_two_runs_on_one_work_directory_build_the_output_once(tmp_path):
    inputs = tmp_path / "big.train.gz"
    write_big_czeng(inputs, 30_000)
    # Two different commands that need the same stage (Luigi itself refuses an identical second
    # command with exit status 10, already running).
    commands = [luigi_command(tmp_path / "work", inputs), [*luigi_command(tmp_path / "work", inputs), "--log-level", "INFO"]]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for command in commands]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    stage = tmp_path / "work" / "ingest"
    [built] = [p for p in stage.iterdir() if p.name != "latest"]
    assert read_manifest(built)["rows"]["bitext"] == len(pd.read_parquet(built / "bitext")) > 29_000
    assert sum("another run is building" in output for output in outputs) == 1, outputs
    assert sum("was built by another run meanwhile" in output for output in outputs) == 1


def test_a_gzip_inputs_shards_are_read_apart_from_one_plain_copy_with_the_plain_files_rows(tmp_path):
    """A gzip file cannot be entered in the middle: its shards were one element, read through by
    one worker. Now it is decompressed once into the partial output and every shard is its own
    element; the rows are the plain file's (but for their source, the file's name), and no copy is
    left behind."""
    packed = tmp_path / "big.train.gz"
    write_big_czeng(packed, 3_000)
    plain = tmp_path / "big.train"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    outputs = {}
    for name, inputs in (("gzip", packed), ("plain", plain)):
        subprocess.run([*luigi_command(tmp_path / name, inputs), "--IngestBitext-shard-rows", "1000"], check=True, capture_output=True)
        [outputs[name]] = [p for p in (tmp_path / name / "ingest").iterdir() if p.name != "latest"]
    manifest = read_manifest(outputs["gzip"])
    assert manifest["work_elements_this_run"] == read_manifest(outputs["plain"])["work_elements_this_run"] == 3
    assert not list(outputs["gzip"].rglob("*.txt")) and not (outputs["gzip"] / ".plain-copies").exists()
    for dataset in ("bitext", "rejects"):
        gz, txt = (pd.read_parquet(outputs[name] / dataset) for name in ("gzip", "plain"))
        assert set(gz.source) == {"big.train.gz"} and set(txt.source) == {"big.train"}
        pd.testing.assert_frame_equal(gz.drop(columns="source"), txt.drop(columns="source"))
    assert len(pd.read_parquet(outputs["gzip"] / "rejects")) == 4  # write_big_czeng's bad lines


@pytest.mark.slow
def test_real_wmt21_and_tatoeba_ingest(luigi_workdir, shared_path):
    wmt = shared_path("csen", "wmt21")
    tatoeba = shared_path("csen", "tatoeba")
    inputs = f"{wmt}/newstest2021.cs-en.src.cs::{wmt}/newstest2021.cs-en.ref.A.en,{tatoeba}/tatoeba.ces-eng.ces"
    task = IngestBitext(inputs=inputs)
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    bitext = pd.read_parquet(task.bitext_dir())
    rejects = pd.read_parquet(task.output_dir / "rejects")
    assert len(bitext) + len(rejects) == 2000
    assert set(bitext.domain) == {"newstest2021", "tatoeba"}
    assert bitext.id.is_unique and (bitext.en_n_tokens > 0).all()
