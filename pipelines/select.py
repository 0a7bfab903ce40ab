"""Training-set selection over the corpus, and the top-half selection that bootstraps the PP model.

A selection keeps the rows that pass ``corpus.selection.Rules`` and then the ``Sample.n_pairs``
of them with the smallest hash of (seed, id): a seeded random sample whose membership is one exact
cut (``pipelines.deciles.find_cuts``, whose pipeline also writes the rows kept), so it is the
same on any runner and any sharding.

With the release filters, exact duplicates are removed first (the smallest id of each pair is
kept), in one pipeline with no shuffle of rows: Beam's local runners hold a shuffle's whole input
in memory. Pass 1 writes, for each shard number's files, the 128-bit key of each candidate's
token strings and its id, a row group per range of the keys (``corpus.selection.duplicate_keys``);
identical pairs share a range. Then each range's keys from every shard are sorted together and
the rows whose key a smaller id has are written down (``repeated``), and pass 2 writes each
shard's candidates but those as its part. Memory: a shard's keys, a range's keys (about
``RANGE_ROWS``, whatever the corpus's size) and the ids repeated in one shard; the files read
for the ranges are shards × ranges.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import ExitStack

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus.deciles import assign, cut_ranks
from corpus.outputs import reading
from corpus.selection import KEY_SCHEMA, Rules, Sample, by_range, duplicate_keys, repeated
from pipelines.batches import IdKeys, RankingInput, shard_number
from pipelines.deciles import DEFAULT_SAMPLE, AfterCuts, complete_cuts, find_cuts
from pipelines.io import dataset_files, file_rows, part_writer, write_part
from pipelines.progress import (
    Marks,
    Report,
    RunPipeline,
    Tally,
    marking,
    run_reporting,
)

SAMPLE = "sample"
# Corpus rows (before the rules) per range of duplicate keys: the most keys sorted together, in
# expectation (about 60 bytes each with their sort), whatever the corpus's size.
RANGE_ROWS = 500_000
# Rows in a row group of a range's repeated rows: a shard's reader reads one or two of them.
REPEATS_GROUP_ROWS = 8_192


class WriteKept(beam.DoFn):
    """Rows of one input file whose bin under the cuts of ranking ``name`` is ``keep`` → the part
    numbered by the file's place in the sorted input; nothing with an incomplete cut record."""

    def __init__(self, source: RankingInput, name: str, keep: int, schema: pa.Schema, out_dir: str, marks: Marks):
        self.source, self.name, self.keep, self.schema, self.out_dir, self.marks = source, name, keep, schema, out_dir, marks

    def setup(self):
        self.index = {path: index for index, path in enumerate(sorted(self.source.files))}

    def process(self, path: str, record: dict):
        found = complete_cuts(record)
        if found is None:
            return
        cuts, parts = found.get(self.name, []), []
        for table in self.source.tables(path, self.schema.names):
            scores, hashes = self.source.keys(table)[self.name]
            parts.append(table.filter(pa.array(assign(scores, hashes, cuts) == self.keep)).select(self.schema.names))
        table = pa.concat_tables(parts) if parts else None
        if table is not None and table.num_rows:
            write_part(table, self.schema, self.out_dir, self.index[path])
        self.marks.add("file", 1)


def keep_bin(source: RankingInput, name: str, keep: int, schema: pa.Schema, out_dir: str) -> AfterCuts:
    """The cut search's last read: the rows in bin ``keep`` of ranking ``name`` → ``out_dir``."""

    def then(files: beam.PCollection, record: beam.PCollection, marks: Marks):
        return files | "WriteKept" >> beam.ParDo(WriteKept(source, name, keep, schema, out_dir, marks), beam.pvalue.AsSingleton(record))

    return then


def _candidates(paths: list[str], rules: Rules, marks: Marks) -> Iterator[pa.Table]:
    """Batches of the ``training`` rows of ``paths`` that pass ``rules``; a ``file`` mark once a
    file is read to the end."""
    source = RankingInput(tuple(paths), IdKeys(()), rules)
    for path in paths:
        for table in source.tables(path, schemas.TRAINING.names):
            yield table.select(schemas.TRAINING.names)
        marks.add("file", 1)


def _keys_path(keys_dir: str, shard: int) -> str:
    return FileSystems.join(keys_dir, f"keys-{shard:05d}.parquet")


def _write_keys(group: tuple[int, list[str]], rules: Rules, ranges: int, keys_dir: str, marks: Marks) -> tuple[int, int]:
    """Pass 1: the ``duplicate_keys`` of a shard's candidates (its files' rows that pass the
    rules), a row group per range, so that a range is read alone; (shard, rows)."""
    shard, paths = group
    keys = [duplicate_keys(table, ranges) for table in _candidates(paths, rules, marks)]
    if not keys:
        return shard, 0
    with FileSystems.create(_keys_path(keys_dir, shard)) as handle, pq.ParquetWriter(handle, KEY_SCHEMA, compression="zstd") as writer:
        for part in by_range(pa.concat_tables(keys)):
            writer.write_table(part)
    return shard, sum(table.num_rows for table in keys)


def _write_repeats(number: int, written: list[tuple[int, int]], keys_dir: str, repeats_dir: str) -> list[str]:
    """Range ``number``'s keys from every shard, sorted together: the (shard, id) of the rows
    whose key a smaller id has, sorted, in a file whose row groups a shard's reader can pick."""
    parts = []
    for shard, rows in written:
        if rows:
            path = _keys_path(keys_dir, shard)
            with reading(path), FileSystems.open(path) as handle:
                keys = pq.read_table(handle, filters=[("range", "==", number)])
            parts.append(keys.append_column("shard", pa.array(np.full(keys.num_rows, shard, np.int32))))
    keys = pa.concat_tables(parts) if parts else KEY_SCHEMA.empty_table()
    dropped = keys.filter(pa.array(repeated(keys))).select(["shard", "id"]).sort_by([("shard", "ascending"), ("id", "ascending")])
    if not dropped.num_rows:
        return []
    path = FileSystems.join(repeats_dir, f"repeats-{number:05d}.parquet")
    with FileSystems.create(path) as handle:
        pq.write_table(dropped, handle, row_group_size=REPEATS_GROUP_ROWS, compression="zstd")
    return [path]


def _write_unique(group: tuple[int, list[str]], rules: Rules, repeats: list[str], out_dir: str, marks: Marks) -> int:
    """Pass 2: a shard's candidates but the repeated ones, as the part of its number."""
    shard, paths = group
    dropped = []
    for path in repeats:
        with reading(path), FileSystems.open(path) as handle:
            dropped.append(pq.read_table(handle, columns=["id"], filters=[("shard", "==", shard)]).column("id"))
    dropped = pa.chunked_array([chunk for ids in dropped for chunk in ids.chunks], pa.string()).combine_chunks()
    rows = 0
    with ExitStack() as stack:
        writer = None
        for table in _candidates(paths, rules, marks):
            kept = table.filter(pc.invert(pc.is_in(table.column("id"), value_set=dropped)))
            if kept.num_rows:
                writer = writer or stack.enter_context(part_writer(out_dir, shard, schemas.TRAINING))
                writer.write(kept)
                rows += kept.num_rows
    return rows


def build_candidates(pipeline: beam.Pipeline, files: list[str], rules: Rules, out_dir: str, work_dir: str, ranges: int, marks: Marks):
    """Rows passing ``rules`` with exact duplicates removed, as a ``training``-schema dataset of
    a part per shard number of ``files``; ``work_dir`` holds the keys and the repeated rows."""
    keys_dir, repeats_dir = FileSystems.join(work_dir, "keys"), FileSystems.join(work_dir, "repeats")
    by_shard: dict[int, list[str]] = {}
    for path in sorted(files):
        by_shard.setdefault(shard_number(path), []).append(path)
    shards = pipeline | "Shards" >> beam.Create(sorted(by_shard.items()))
    written = shards | "Keys" >> beam.Map(_write_keys, rules, ranges, keys_dir, marks)
    repeats = (
        pipeline
        | "Ranges" >> beam.Create(range(ranges))
        | "Repeats" >> beam.FlatMap(_write_repeats, beam.pvalue.AsList(written), keys_dir, repeats_dir)
    )
    return shards | "Unique" >> beam.Map(_write_unique, rules, beam.pvalue.AsList(repeats), out_dir, marks)


def first_n(n: int, count: int) -> list[int]:
    """One cut at rank n, or none (everything is kept) when n is 0 or at least the count."""
    return [n] if 0 < n < count else []


def select_training_set(
    run_pipeline: RunPipeline,
    corpus_files: list[str],
    rules: Rules,
    sample: Sample,
    out_dir: str,
    work_dir: str,
    sample_size: int = DEFAULT_SAMPLE,
    report: Report | None = None,
) -> dict[str, int]:
    """Write the selection to ``out_dir``; returns how many rows passed the rules and how many were
    kept. ``report`` follows the pipelines as they run."""
    files = rules.files(corpus_files)
    keys = IdKeys(((SAMPLE, None),), salt=f"{sample.sample_seed}:")
    if rules.release_filter:
        candidates = f"{work_dir}/candidates"
        ranges = max(1, -(-file_rows(files) // RANGE_ROWS))
        with marking(f"{work_dir}/_candidates-progress") as marks:
            tally = Tally(marks.counter("file"), 2 * len(files), "corpus file reads for the release filters (two per file)", "files")
            run_reporting(run_pipeline, lambda p: build_candidates(p, files, rules, candidates, f"{work_dir}/duplicates", ranges, marks),
                          tally, report)
        source = RankingInput(tuple(dataset_files(candidates)), keys)
    else:
        source = RankingInput(tuple(files), keys, rules)
    counts, _ = find_cuts(run_pipeline, source, functools.partial(first_n, sample.n_pairs), work_dir, sample_size, report=report,
                          then=keep_bin(source, SAMPLE, 0, schemas.TRAINING, out_dir), then_says="to write the selection")
    available = counts.get(SAMPLE, 0)
    return {"passed_rules": available, "selected": min(sample.n_pairs, available) if sample.n_pairs else available}


def select_top_half(run_pipeline: RunPipeline, pairs_files: list[str], out_dir: str, work_dir: str, sample_size: int = DEFAULT_SAMPLE,
                    report: Report | None = None) -> dict:
    """The pairs whose translation score is in the top half (rank ≥ N/2 by (score, id hash));
    ``report`` follows the pipelines as they run."""
    source = RankingInput(tuple(pairs_files), IdKeys((("trans", "trans_score"),)))
    counts, cuts = find_cuts(run_pipeline, source, functools.partial(cut_ranks, bins=2), work_dir, sample_size, report=report,
                             then=keep_bin(source, "trans", 1, schemas.PAIRS, out_dir), then_says="to write the top half")
    total = counts.get("trans", 0)
    median = cuts["trans"][0].score if cuts.get("trans") else None
    return {"pairs": total, "selected": total - total // 2, "median_trans_score": median}
