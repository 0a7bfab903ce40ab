"""corpus.outputs: the record of an output's files and the check against it, on real files."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.outputs import (
    MANIFEST,
    DamagedOutput,
    committed_files,
    damage,
    is_output,
    outputs_damage,
    read_json,
    verified_manifest,
)


@pytest.fixture
def output(tmp_path):
    """A committed output: a Parquet shard, a model file and its manifest."""
    directory = tmp_path / "stage" / "abc123"
    (directory / "pairs").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a", "b", "c"]}), directory / "pairs" / "part-00000.parquet")
    (directory / "spm.model").write_bytes(b"pieces")
    (directory / MANIFEST).write_text(json.dumps({"files": committed_files(directory)}))
    return directory


def test_the_record_has_bytes_digest_and_parquet_rows(output):
    files = verified_manifest(output)["files"]
    assert sorted(files) == ["pairs/part-00000.parquet", "spm.model"]
    assert files["pairs/part-00000.parquet"]["rows"] == 3 and "rows" not in files["spm.model"]
    assert files["spm.model"]["bytes"] == 6 and len(files["spm.model"]["sha256"]) == 64


def test_each_kind_of_damage_is_named(output):
    files = verified_manifest(output)["files"]
    (output / "spm.model").write_bytes(b"PIECES")  # same size, other bytes
    assert damage(output, files) == f"{output / 'spm.model'} was changed after the stage wrote it (its SHA-256 differs)"
    (output / "spm.model").write_bytes(b"piece")
    assert damage(output, files) == f"{output / 'spm.model'} has 5 bytes, the stage wrote 6"
    (output / "spm.model").unlink()
    assert damage(output, files) == f"{output / 'spm.model'} is missing"
    (output / "spm.model").write_bytes(b"pieces")
    (output / "pairs" / "part-00001.parquet").write_bytes(b"")
    assert damage(output, files) == f"{output / 'pairs' / 'part-00001.parquet'} was not written by the stage"


def test_a_file_pointed_into_an_output_is_checked_with_that_output(output, tmp_path):
    given = tmp_path / "given.pt"
    given.write_bytes(b"weights")
    assert outputs_damage([output / "spm.model", given]) == ""
    os.truncate(output / "pairs" / "part-00000.parquet", 10)
    assert outputs_damage([given, output / "spm.model"]).startswith(f"{output / 'pairs' / 'part-00000.parquet'} has 10 bytes")


def test_an_empty_success_file_of_hadoop_or_spark_is_no_manifest(tmp_path):
    (tmp_path / MANIFEST).write_text("")
    assert not is_output(tmp_path) and outputs_damage([tmp_path / "model.pt"]) == ""


def test_a_json_file_that_is_not_json_is_one_line_naming_it(tmp_path):
    path = tmp_path / "nmt.json"
    path.write_text('{"checkpoint": ')
    with pytest.raises(DamagedOutput, match=f"^{path} cannot be read \\(Expecting value: .*\\); run the command again"):
        read_json(path)

