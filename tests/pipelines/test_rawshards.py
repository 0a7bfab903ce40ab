"""Raw inputs in shards of a bounded number of lines: every line read once whatever the cut, ids
repeated across shards found, a rerun writing only the shards not yet written."""

import gzip
import os
import shutil

import apache_beam as beam
import pandas as pd
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from raw_reading import read_unit

from corpus.inputs import resolve_inputs
from corpus.lines import index_lines
from corpus.readers import InputUnit
from pipelines import rawshards
from pipelines.ingest import BITEXT_FORMAT
from pipelines.io import dataset_files, rejects_by_reason
from pipelines.rawshards import build_shard_writes, plan_shards, remove_repeated_ids
from pipelines.release import RELEASE_FORMAT

# CRLF and LF ends, a blank line, a line with a stray CR, a last line without its end.
LINES = [b"news-a-1\t0.5\tJedna.\tOne.\r\n", b"news-a-2\t0.5\tDva.\tTwo.\n", b"\n", b"news-a-4\t0.5\tCtyri.\tFo\rur.\n",
         *[f"news-b-{n}\t0.1\tVeta {n}.\tSentence {n}.\n".encode() for n in range(5, 30)], b"news-c-30\t0.9\tKonec.\tThe end."]


def write(path, data: bytes, compress: bool):
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_every_line_is_read_once_as_itself_whatever_the_shard_size(tmp_path, compress):
    [unit] = resolve_inputs(str(write(tmp_path / ("x.gz" if compress else "x.txt"), b"".join(LINES), compress)))
    whole = list(read_unit(BITEXT_FORMAT, unit, 10_000, 1_000))
    assert [item.line for item in whole] == list(range(1, len(LINES) + 1))
    for shard_rows in (1, 2, 3, 7, 29, 30, 31):
        assert list(read_unit(BITEXT_FORMAT, unit, 10_000, shard_rows)) == whole, shard_rows


@pytest.mark.parametrize("compress", [(False, False), (True, True), (False, True)], ids=["plain", "gzip", "plain-and-gzip"])
def test_line_aligned_files_of_unequal_lengths_shard_alike(tmp_path, compress):
    foreign = write(tmp_path / ("x.cs.gz" if compress[0] else "x.cs"), "".join(f"Veta {n}.\n" for n in range(1, 12)).encode(), compress[0])
    english = write(tmp_path / ("x.en.gz" if compress[1] else "x.en"), "".join(f"Sentence {n}.\n" for n in range(1, 9)).encode(), compress[1])
    [unit] = resolve_inputs(f"{foreign}::{english}")
    whole = list(read_unit(BITEXT_FORMAT, unit, 10_000, 1_000))
    assert [getattr(item, "reason", "ok") for item in whole] == ["ok"] * 8 + ["misaligned"] * 3
    for shard_rows in (1, 2, 4, 8, 9, 11):
        assert list(read_unit(BITEXT_FORMAT, unit, 10_000, shard_rows)) == whole, shard_rows


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_an_english_file_longer_than_its_foreign_file_gives_misaligned_rejects_of_its_own(tmp_path, compress):
    foreign = write(tmp_path / ("y.cs.gz" if compress else "y.cs"), b"Jedna.\nDva.\n", compress)
    english = write(tmp_path / ("y.en.gz" if compress else "y.en"), b"One.\nTwo.\nThree.\nFour.\n", compress)
    [unit] = resolve_inputs(f"{foreign}::{english}")
    for shard_rows in (1, 3, 100):
        items = list(read_unit(BITEXT_FORMAT, unit, 10_000, shard_rows))
        assert [(getattr(item, "reason", "ok"), item.line) for item in items] == [("ok", 1), ("ok", 2), ("misaligned", 3), ("misaligned", 4)]
        assert [item.raw for item in items[2:]] == ["Three.", "Four."] and items[2].detail.startswith(english.name + " has line 3")


def test_a_plain_file_is_indexed_at_the_start_of_each_run_of_lines(tmp_path):
    path = write(tmp_path / "x.txt", b"".join(LINES), False)
    index = index_lines(str(path), 4)
    data = path.read_bytes()
    assert index.lines == 30
    line_starts = [0, *[i + 1 for i, byte in enumerate(data) if byte == ord("\n")]]
    assert index.starts == tuple(line_starts[0:30:4])
    assert index_lines(str(write(tmp_path / "y.txt", b"a\nb\n", False)), 2).starts == (0,)  # no run after the last line


def run(plan, data_dir, rejects_dir, fmt=BITEXT_FORMAT, workers=1):
    options = PipelineOptions(["--runner=DirectRunner", f"--direct_num_workers={workers}",
                               "--direct_running_mode=" + ("multi_processing" if workers > 1 else "in_memory")])
    with beam.Pipeline(options=options) as pipeline:
        build_shard_writes(pipeline, fmt, plan, str(data_dir), str(rejects_dir), 10_000)


def files_of(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.rglob("*.parquet"))}


def test_ids_repeated_across_shards_and_files_keep_the_first(tmp_path):
    """A release file given plain and gzipped has one stem: the second's ids are the first's."""
    text = "".join(f"a cat {n} .\tthe cat {n} .\t0.{n}\n" for n in range(1, 10)).encode()
    write(tmp_path / "r.txt", text, False)
    write(tmp_path / "r.txt.gz", text, True)
    units = resolve_inputs(f"{tmp_path}/r.txt,{tmp_path}/r.txt.gz")
    run(plan_shards(units, 4), tmp_path / "pairs", tmp_path / "rejects", RELEASE_FORMAT)
    pairs = pd.read_parquet(tmp_path / "pairs")
    assert sorted(pairs.id) == [f"r.txt-{n:09d}" for n in range(1, 10)] and set(pairs.source) == {"r.txt"}
    rejects = pd.read_parquet(tmp_path / "rejects").sort_values("line")
    assert rejects.reason.tolist() == ["duplicate_id"] * 9 and set(rejects.source) == {"r.txt.gz"}
    assert rejects.detail.iloc[0] == "id 'r.txt-000000001' already read from r.txt line 1"
    assert rejects.raw.iloc[0] == "a cat 1 .\tthe cat 1 .\t0.1"


def czeng_input(folder, lines=60):
    """CzEng lines whose ids come back out of order (every shard's id range overlaps the others')
    and repeat: line n has id n mod 45."""
    text = "".join(f"news-{n % 45:03d}\t0.5\tVeta {n}.\tSentence {n}.\n" for n in range(lines)).encode()
    return resolve_inputs(str(write(folder / "c.train.txt", text, False)))


def test_czeng_ids_repeated_anywhere_are_rejected_once_each(tmp_path):
    units = czeng_input(tmp_path)
    run(plan_shards(units, 7), tmp_path / "bitext", tmp_path / "rejects")
    bitext = pd.read_parquet(tmp_path / "bitext")
    assert sorted(bitext.id) == [f"news-{n:03d}" for n in range(45)] and bitext.line.max() == 45
    assert rejects_by_reason(str(tmp_path / "rejects")) == {"duplicate_id": 15}
    run(plan_shards(units, 1000), tmp_path / "one-shard" / "bitext", tmp_path / "one-shard" / "rejects")
    assert pd.read_parquet(tmp_path / "one-shard" / "bitext").sort_values("id").line.tolist() == bitext.sort_values("id").line.tolist()


def test_a_rerun_writes_only_the_missing_shards_and_the_same_bytes(tmp_path):
    units = czeng_input(tmp_path)
    plan = plan_shards(units, 7)
    run(plan, tmp_path / "whole" / "bitext", tmp_path / "whole" / "rejects", workers=2)
    expected = files_of(tmp_path / "whole")
    # a run killed after some shards: the others' parts missing, one half-written, the repeated ids not yet removed
    resumed = tmp_path / "resumed"
    run(plan_shards(units, 7), resumed / "bitext", resumed / "rejects")
    written = dataset_files(str(resumed / "bitext"))
    for path in written[3:]:
        os.remove(path)
    shutil.copy(written[0], resumed / "bitext" / ".tmp-0123-part-00004")
    run(plan, resumed / "bitext", resumed / "rejects")
    assert files_of(resumed) == expected
    assert not list((resumed / "bitext").glob(".tmp-*"))


def test_removing_repeated_ids_again_changes_nothing_and_finishes_a_killed_removal(tmp_path):
    units = czeng_input(tmp_path)
    plan = plan_shards(units, 7)
    bitext, rejects = tmp_path / "bitext", tmp_path / "rejects"
    run(plan, bitext, rejects)
    expected = files_of(tmp_path)
    assert remove_repeated_ids(BITEXT_FORMAT, str(bitext), str(rejects), plan.shards) == 15
    assert files_of(tmp_path) == expected
    # killed after the decision was written, before its parts were rewritten: the parts as first written
    first = tmp_path / "first"
    run(plan, first / "bitext", first / "rejects")
    os.remove(dataset_files(str(first / "rejects"))[-1])  # the repeated ids' rejects, the only rejects
    shutil.rmtree(first / "bitext")
    (first / "bitext").mkdir()
    for shard in plan.all_shards():  # parts with their repeated ids still in them
        one = tmp_path / "single" / str(shard.number)
        run(type(plan)((next(task for task in plan.tasks if shard in task.shards),), shard.lines, 10**6), one / "bitext", one / "rejects")
        for path in (one / "bitext").glob("part-*"):  # numbered as in the whole plan
            shutil.copy(path, first / "bitext")
    shutil.copy(dataset_files(str(rejects))[-1], first / "rejects")
    remove_repeated_ids(BITEXT_FORMAT, str(first / "bitext"), str(first / "rejects"), plan.shards)
    assert files_of(first / "bitext") == files_of(bitext)


def test_a_plan_of_about_n_shards(tmp_path):
    units = czeng_input(tmp_path, 100)
    units.append(InputUnit(str(write(tmp_path / "d.train.gz", b"x-1\t0.5\ta\tb\n" * 10, True))))
    plan = plan_shards(units, num_shards=4)
    assert plan.lines == 110 and [shard.lines for shard in plan.all_shards()] == [28, 28, 28, 16, 10]


def test_repeated_ids_merged_in_rounds_are_those_of_one_merge(tmp_path, monkeypatch):
    """With at most 2 files open (so rounds of runs over the parts), the same repeats are found, and the
    runs of keys written on the way are gone."""
    units = czeng_input(tmp_path)
    plan = plan_shards(units, 7)
    run(plan, tmp_path / "one" / "bitext", tmp_path / "one" / "rejects")
    rounds = tmp_path / "rounds"
    monkeypatch.setattr(rawshards, "MERGE_FAN_IN", 2)
    run(plan, rounds / "bitext", rounds / "rejects")
    assert len(dataset_files(str(rounds / "bitext"))) > 4 and rejects_by_reason(str(rounds / "rejects")) == {"duplicate_id": 15}
    for dataset in ("bitext", "rejects"):
        assert files_of(rounds / dataset) == files_of(tmp_path / "one" / dataset)
    assert not [path for path in rounds.rglob("*") if path.name.startswith(".tmp-")]
    parts = dataset_files(str(rounds / "bitext"))
    keys = pd.concat([pd.read_parquet(path, columns=["id", "source", "line"]) for path in parts])
    merged = list(rawshards.merged_keys(BITEXT_FORMAT, parts, str(tmp_path)))
    assert merged == sorted(keys.itertuples(index=False, name=None)) and not list(tmp_path.glob(".tmp-merge-*"))
