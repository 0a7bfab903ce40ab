import gzip

import apache_beam as beam
import pandas as pd
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from conftest import in_fresh_process
from raw_reading import read_unit

import schemas
from corpus.errors import InputError
from corpus.inputs import resolve_inputs
from pipelines.ingest import BITEXT_FORMAT
from pipelines.rawshards import (
    build_shard_writes,
    plan_shards,
    shard_lines,
    shard_tables,
)

CZENG_LINES = [
    "news-b1-00train-f00001-s2\t0.9\tPes štěká.\tThe dog barks.",
    "news-b1-00train-f00001-s1\t0.8\tDobrý den, pane Nováku!\tGood morning, Mr Novák!",
    "too\tfew",
    "news-b1-00train-f00001-s1\t0.7\tZnovu.\tAgain.",
    "fiction-b2-00train-f00002-s1\t0.6\tByla tma.\tIt was dark.",
]


@pytest.fixture
def inputs(tmp_path):
    czeng = tmp_path / "00train.gz"
    with gzip.open(czeng, "wb") as handle:
        handle.write(("\n".join(CZENG_LINES) + "\n").encode())
    (tmp_path / "tatoeba.ces").write_text("Mám kočku.\nPrší.\nNavíc.\n")
    (tmp_path / "tatoeba.eng").write_text("I have a cat.\nIt's raining.\n")
    return tmp_path


def test_a_shard_is_read_parsed_and_tokenized(inputs):
    [unit] = resolve_inputs(str(inputs / "tatoeba.ces"))
    [task] = plan_shards([unit]).tasks
    [(shard, lines)] = shard_lines(task)
    rows, rejects = shard_tables(BITEXT_FORMAT, unit, shard, lines, 10_000)
    # English only: lowercased Moses tokens (the form every later stage reads); Czech as read
    assert list(zip(*(rows.column(name).to_pylist() for name in ("id", "foreign", "en_tok", "en_n_tokens")), strict=True)) == [
        ("tatoeba.cs-000000001", "Mám kočku.", "i have a cat .", 5), ("tatoeba.cs-000000002", "Prší.", "it 's raining .", 4)]
    assert list(zip(rejects.column("reason").to_pylist(), rejects.column("line").to_pylist(), strict=True)) == [("misaligned", 3)]


def run_ingest(units, out, shard_rows=2, options=("--runner=DirectRunner",)):
    plan = plan_shards(units, shard_rows)
    with beam.Pipeline(options=PipelineOptions(list(options))) as p:
        build_shard_writes(p, BITEXT_FORMAT, plan, str(out / "bitext"), str(out / "rejects"), 10_000)
    return plan


def test_ingest_writes_sorted_sharded_validated_parquet(inputs, tmp_path):
    out = tmp_path / "out"
    plan = run_ingest(resolve_inputs(f"{inputs}/*.gz,{inputs}/tatoeba.ces"), out)
    assert [(shard.number, shard.first_line, shard.lines) for shard in plan.all_shards()] == [
        (0, 1, 2), (1, 3, 2), (2, 5, 1), (3, 1, 2), (4, 3, 1)]  # runs of 2 lines of each file, numbered in order
    parts = sorted((out / "bitext").glob("part-*.parquet"))
    assert [part.stem.split("-")[1] for part in parts] == ["00000", "00001", "00002", "00003"]  # shard 4: a misaligned line only
    for part in parts:
        table = pq.read_table(part)
        assert table.schema.equals(schemas.BITEXT, check_metadata=True)
        ids = table.column("id").to_pylist()
        assert ids == sorted(ids)
    bitext = pd.read_parquet(out / "bitext")
    assert list(bitext.columns) == schemas.BITEXT.names
    assert sorted(bitext.id) == sorted(["news-b1-00train-f00001-s1", "news-b1-00train-f00001-s2", "fiction-b2-00train-f00002-s1",
                                        "tatoeba.cs-000000001", "tatoeba.cs-000000002"])
    first = bitext.set_index("id").loc["news-b1-00train-f00001-s1"]
    assert (first.en, first.line, first.czeng_score) == ("Good morning, Mr Novák!", 2, 0.8)
    rejects = pd.read_parquet(out / "rejects").sort_values(["source", "line"])
    assert list(zip(rejects.source, rejects.line, rejects.reason, strict=True)) == [
        ("00train.gz", 3, "column_count"), ("00train.gz", 4, "duplicate_id"), ("tatoeba.ces", 3, "misaligned")]
    assert rejects.set_index("line").loc[4].detail == "id 'news-b1-00train-f00001-s1' already read from 00train.gz line 2"


@pytest.mark.parametrize("end", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_line_ends_lf_and_crlf(tmp_path, end, compress):
    data = end.join(line.encode() for line in CZENG_LINES) + end
    path = tmp_path / ("x.gz" if compress else "x.txt")
    path.write_bytes(gzip.compress(data) if compress else data)
    items = list(read_unit(BITEXT_FORMAT, resolve_inputs(str(path))[0], 10_000))
    assert [(item.line, type(item).__name__) for item in items] == [
        (1, "BitextRecord"), (2, "BitextRecord"), (3, "Reject"), (4, "BitextRecord"), (5, "BitextRecord")]
    assert items[4].en == "It was dark."


def test_same_named_files_in_two_folders_are_two_sources(tmp_path):
    for folder, sentence in (("a", "One"), ("b", "Two")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tatoeba.cs").write_text(f"{sentence} cs.\n")
        (tmp_path / folder / "tatoeba.en").write_text(f"{sentence} en.\n")
    run_ingest(resolve_inputs(f"{tmp_path}/*/tatoeba.cs"), tmp_path / "out")
    bitext = pd.read_parquet(tmp_path / "out" / "bitext").sort_values("id")
    assert list(zip(bitext.id, bitext.source, bitext.domain, bitext.en, strict=True)) == [
        ("a/tatoeba.cs-000000001", "a/tatoeba.cs", "tatoeba", "One en."), ("b/tatoeba.cs-000000001", "b/tatoeba.cs", "tatoeba", "Two en.")]
    assert not (tmp_path / "out" / "rejects").exists(), "no duplicate_id rejects"


def test_gzipped_line_aligned_pairs_are_read(tmp_path):
    (tmp_path / "news.cs.gz").write_bytes(gzip.compress("Pes štěká.\nPrší.\n".encode()))
    (tmp_path / "news.en.gz").write_bytes(gzip.compress(b"The dog barks.\nIt rains.\n"))
    run_ingest(resolve_inputs(str(tmp_path / "news.cs.gz")), tmp_path / "out")
    bitext = pd.read_parquet(tmp_path / "out" / "bitext").sort_values("id")
    assert list(zip(bitext.id, bitext.foreign, bitext.en, strict=True)) == [
        ("news.cs-000000001", "Pes štěká.", "The dog barks."), ("news.cs-000000002", "Prší.", "It rains.")]


def test_same_input_gives_byte_identical_parquet(inputs, tmp_path):
    units = resolve_inputs(f"{inputs}/*.gz,{inputs}/tatoeba.ces")
    run_ingest(units, tmp_path / "a")
    run_ingest(units, tmp_path / "b")
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.parquet"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.parquet"))
    assert files_a == files_b and files_a
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_unusable_inputs_are_input_errors_naming_the_file(tmp_path):
    with pytest.raises(InputError, match="no input file matches"):
        resolve_inputs(str(tmp_path / "*.gz"))
    (tmp_path / "lonely.cs").write_text("Sám.\n")
    with pytest.raises(InputError, match="partner"):
        resolve_inputs(str(tmp_path / "lonely.cs"))
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="folder is a directory"):
        resolve_inputs(str(tmp_path / "folder"))
    (tmp_path / "plain.gz").write_text("id\t1\tAhoj.\tHello.\n")
    with pytest.raises(InputError, match="plain.gz is named .gz but is not gzip"):
        resolve_inputs(str(tmp_path / "plain.gz"))
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(InputError, match="empty.txt is empty"):
        resolve_inputs(str(tmp_path / "empty.txt"))
    with pytest.raises(InputError, match="foreign_file::english_file"):
        resolve_inputs("a.cs::")


def test_a_truncated_gzip_member_keeps_none_of_its_lines(tmp_path):
    """The cut member's lines were never checked (its CRC-32 is in the lost end): each is a
    damaged_gzip reject, and one truncated_file reject says where reading stopped."""
    text = "".join(f"news-b1-00train-f00001-s{i}\t0.9\tVěta číslo {i * 7919}.\tSentence {i * 104729}.\n" for i in range(1, 2001))
    whole = gzip.compress(text.encode())
    (tmp_path / "cut.gz").write_bytes(whole[: len(whole) // 2])
    items = list(read_unit(BITEXT_FORMAT, resolve_inputs(str(tmp_path / "cut.gz"))[0], 10_000, 50))
    *damaged, stop = items
    assert {item.reason for item in damaged} == {"damaged_gzip"} and 800 < len(damaged) < 1200
    assert [item.line for item in damaged] == list(range(1, len(damaged) + 1))
    assert stop.reason == "truncated_file" and stop.line == len(damaged) + 1
    assert "the file ends inside gzip member 1" in stop.detail


def test_ingest_runs_on_the_portable_runner(inputs, tmp_path, portable_options):
    units = resolve_inputs(f"{inputs}/*.gz,{inputs}/tatoeba.ces")
    run_ingest(units, tmp_path / "direct")
    in_fresh_process(run_ingest, units, tmp_path / "portable", 2, portable_options)
    direct = sorted(p.name for p in (tmp_path / "direct" / "bitext").iterdir())
    assert direct == sorted(p.name for p in (tmp_path / "portable" / "bitext").iterdir())
    for name in direct:
        assert (tmp_path / "direct" / "bitext" / name).read_bytes() == (tmp_path / "portable" / "bitext" / name).read_bytes()
