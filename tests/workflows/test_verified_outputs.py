"""Issue 29, part A: an output is trusted only while its files are exactly those its manifest
lists (a damaged one is rebuilt, or refused in one line by a stage reading it); errors reading the
project's own files, and a Beam worker's errors, are one line; the manifest's input record is the
file as read."""

import json
import os
import shutil
import subprocess
import sys

import luigi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bad_input_cli import REPO, assert_one_line_error, czeng_text, run_luigi
from test_work_directory import small_file_system  # noqa: F401 - a fixture

from corpus.outputs import (
    MANIFEST,
    DamagedOutput,
    digest_of,
    output_files,
    read_manifest,
    verified_manifest,
)
from pipelines import io
from workflows import IngestBitext, TrainSentencePiece
from workflows.console_errors import users_mistake
from workflows.fingerprints import file_fingerprint

DAMAGES = ("delete", "truncate", "overwrite", "extra", "manifest")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A work directory holding the demo corpus's ingest, built once for the module."""
    workdir = tmp_path_factory.mktemp("built") / "work"
    result = run_luigi(workdir, "IngestBitext")
    assert result.returncode == 0, result.stdout + result.stderr
    return workdir


@pytest.fixture
def workdir(built, luigi_workdir):
    """A copy of the built work directory, where this test's Luigi runs write."""
    shutil.copytree(built, luigi_workdir, symlinks=True)
    return luigi_workdir


def ingest_output(workdir):
    return (workdir / "ingest" / "latest").resolve()


def damage(output, kind: str, shard: int, offset: float) -> str:
    """Damage the output as a disk problem, a cleanup or a partial copy would; the file damaged."""
    shards = sorted(output.glob("bitext/part-*.parquet"))
    path = shards[shard % len(shards)]
    size = path.stat().st_size
    if kind == "delete":
        path.unlink()
    elif kind == "truncate":
        os.truncate(path, int(offset * (size - 1)))
    elif kind == "overwrite":  # same size, one byte changed
        at = int(offset * (size - 1))
        data = bytearray(path.read_bytes())
        data[at] ^= 0xFF
        path.write_bytes(bytes(data))
    elif kind == "extra":
        path = output / "bitext" / "part-00099.parquet"
        shutil.copy(shards[0], path)
    else:
        path = output / MANIFEST
        path.write_text(path.read_text()[: int(offset * 100)])
    return str(path)


def test_the_manifest_lists_every_file_with_its_bytes_digest_and_rows(built):
    output = ingest_output(built)
    manifest = read_manifest(output)
    assert sorted(manifest["files"]) == output_files(output)
    for name, record in manifest["files"].items():
        assert record["bytes"] == (output / name).stat().st_size and record["sha256"] == digest_of(output / name)
    bitext = [record["rows"] for name, record in manifest["files"].items() if name.startswith("bitext/")]
    assert bitext and sum(bitext) == manifest["rows"]["bitext"] == io.dataset_rows(str(output / "bitext"))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(DAMAGES), shard=st.integers(0, 7), offset=st.floats(0, 1))
def test_a_damaged_output_is_not_complete_and_the_next_run_rebuilds_it(built, luigi_workdir, tmp_path_factory, kind, shard, offset):
    workdir = tmp_path_factory.mktemp("damaged") / "work"
    shutil.copytree(built, workdir, symlinks=True)
    luigi.configuration.get_config().set("paranmt", "workdir", str(workdir))  # luigi_workdir puts it back
    output = ingest_output(workdir)
    recorded = read_manifest(output)["files"]
    damage(output, kind, shard, offset)
    task = IngestBitext()
    assert task.output_dir == output and not task.complete()
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert task.complete() and read_manifest(output)["files"] == recorded  # the same bytes again
    assert not [path for path in output.parent.iterdir() if ".damaged-" in path.name or path.name.endswith(".partial")]
    shutil.rmtree(workdir)


def test_a_stage_reading_a_damaged_upstream_output_refuses_in_one_line_naming_the_file(workdir):
    path = damage(ingest_output(workdir), "delete", 3, 0)
    with pytest.raises(DamagedOutput) as refused:
        TrainSentencePiece(vocab_size=200).run()  # as when the damage happens after Luigi checked it
    assert users_mistake(refused.value) == str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith(f"{path} is missing; run the command again")


def test_the_next_stage_rebuilds_a_deleted_shard_instead_of_reading_the_rest(workdir):
    output = ingest_output(workdir)
    rows = read_manifest(output)["rows"]["bitext"]
    deleted = damage(output, "delete", 5, 0)
    result = run_luigi(workdir, "TrainSentencePiece", "--vocab-size", "200")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{os.path.basename(deleted)} is missing; rebuilding" in result.stderr
    assert verified_manifest(output)["rows"]["bitext"] == rows == io.dataset_rows(str(output / "bitext"))


def test_an_unreadable_manifest_or_shard_is_one_line_naming_the_file(workdir):
    output = ingest_output(workdir)
    shard = damage(output, "truncate", 2, 0.5)
    with pytest.raises(DamagedOutput, match=f"^{shard} cannot be read \\(.*\\); run the command again"):
        io.file_rows([shard])
    damage(output, "manifest", 0, 0.3)
    with pytest.raises(DamagedOutput, match=f"^{output / MANIFEST} cannot be read \\(.*\\); run the command again"):
        read_manifest(output)


def test_a_manifest_without_files_from_an_earlier_release_is_not_trusted(workdir):
    output = ingest_output(workdir)
    manifest = read_manifest(output)
    del manifest["files"]
    (output / MANIFEST).write_text(json.dumps(manifest))
    assert not IngestBitext().complete()
    with pytest.raises(DamagedOutput, match="lists no files"):
        verified_manifest(output)


def worker_reads(path: str) -> None:
    """A pipeline on two DirectRunner worker processes reading ``path`` as the stages do."""
    import apache_beam as beam

    from pipelines.batches import iter_tables
    from pipelines.options import pipeline_options

    with beam.Pipeline(options=pipeline_options("DirectRunner", 2)) as pipeline:
        _ = pipeline | beam.Create([path]) | beam.FlatMap(lambda p: [t.num_rows for t in iter_tables(p)])


def test_a_damaged_shard_met_in_a_worker_process_is_one_line(tmp_path):
    path = tmp_path / "part-00000.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(RuntimeError) as failed:
        worker_reads(str(path))
    assert "Traceback" in str(failed.value)  # the worker's traceback, as text
    assert users_mistake(failed.value).startswith(f"{path} cannot be read (")


def test_a_full_disk_met_in_a_worker_process_is_one_line(small_file_system):  # noqa: F811
    fs = small_file_system("size=128k")
    (fs / "filler").write_bytes(b"\0" * 70_000)
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler",
               "--paranmt-workdir", str(fs / "work"), "--paranmt-direct-num-workers", "2"]
    result = subprocess.run(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert_one_line_error(result, ": No space left on device")
    assert not list((fs / "work").rglob(MANIFEST))


def test_pairs_without_the_pair_columns_are_refused_in_one_line(tmp_path):
    dataset = tmp_path / "notpairs"
    dataset.mkdir()
    pq.write_table(pa.table({"id": ["a"], "text": ["x"]}), dataset / "part-00000.parquet")
    vectors = tmp_path / "v.txt"
    vectors.write_text("x 0.1 0.2\n")
    result = run_luigi(tmp_path / "work", "ScorePairs", "--pairs", str(dataset), "--pp-vectors", str(vectors))
    assert_one_line_error(result, f"--pairs {dataset}: {dataset / 'part-00000.parquet'} has no column source, domain")


def test_the_input_record_is_the_file_as_read(luigi_workdir, tmp_path, monkeypatch, caplog):
    source = tmp_path / "grows.train"
    source.write_bytes(czeng_text(40, "a"))
    task = IngestBitext(inputs=str(source))
    build = IngestBitext.build

    def appended_while_reading(self, partial_dir):
        counts = build(self, partial_dir)
        with open(source, "ab") as handle:  # a writer appends while the stage runs
            handle.write(czeng_text(3, "late"))
        return counts

    monkeypatch.setattr(IngestBitext, "build", appended_while_reading)
    assert not luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert f"input {source} changed while the stage read it; nothing was committed" in caplog.text
    assert not list(luigi_workdir.rglob(MANIFEST))
    monkeypatch.setattr(IngestBitext, "build", build)
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    assert read_manifest(task.output_dir)["input_files"] == [f"{source.resolve()}:{file_fingerprint(str(source))}"]


def test_a_worker_traceback_on_standard_error_is_dropped_when_luigi_says_it_in_one_line():
    from workflows.console_errors import pass_on_all_but_mistakes

    mistake = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nOSError: [Errno 28] No space left on device\n\n"
               "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
               "  File \"y.py\", line 2, in g\nRuntimeError: OSError: [Errno 28] No space left on device [while running 'Write']\n\n")
    bug = "Traceback (most recent call last):\n  File \"z.py\", line 3, in h\nIndexError: list index out of range\n\n"
    read_end, write_end = os.pipe()
    out_read, out_write = os.pipe()
    os.write(write_end, f"09:00:00 ingest: started\n{mistake}{bug}{mistake}09:00:01 done\n".encode())
    os.close(write_end)
    pass_on_all_but_mistakes(read_end, out_write, lambda: False)
    with os.fdopen(out_read) as passed:
        assert passed.read() == f"09:00:00 ingest: started\n{bug}09:00:01 done\n"
