"""Raw text files → Parquet shards of a bounded size, streamed (IngestBitext, ImportParaphrases).

A shard is a run of ``shard_rows`` consecutive lines of one input (its last shard takes the rest),
so the number of shards follows from the input's size. A plain file is cut at the byte offsets of
its runs (one scan finds them, ``corpus.lines.index_lines``), so any worker reads any shard of it;
a gzip file cannot be entered in the middle, so one worker reads it through, writing its shards
one after another (the stages give the pipeline a plain copy of each intact gzip input instead,
``corpus.inputs.plain_unit``, so that its shards too go to every worker; a damaged one is read
through, its intact members' lines kept and its damage made rejects). A shard is parsed, tokenized (the format's ``table``), sorted by id and written
by the worker that read it: its rejects first, then its part, each under a temporary name and
renamed, so a part present is a shard done and a rerun skips it (a kill loses the shards being
written, no more). No shuffle moves rows: Beam's local runners hold a shuffle's whole input in
memory, so memory is a shard per worker, whatever the input's size.

An id read twice in one shard is a ``duplicate_id`` reject there; ids repeated across shards (an
id given twice by CzEng files; two inputs with one stem) are found when every shard is written,
by merging the sorted ids of the parts whose id ranges overlap (``repeated_ids``), and removed from
their parts. Either way the first by (id, source, line) is kept. An open part costs its reader
about 1.5 MB of buffers, and CzEng's ids (domain first) make every part overlap every other, so at
most ``MERGE_FAN_IN`` files are merged at once: more parts are first merged that many at a time
into sorted runs of keys (temporary files), and the runs are merged.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus.lines import LineIndex, index_lines, read_line_range, read_lines
from corpus.outputs import reading, streamed_parquet
from corpus.readers import InputUnit, Reject
from pipelines.batches import shard_number
from pipelines.io import dataset_files, part_path, remove_temporaries, write_part_atomically
from pipelines.progress import UNWATCHED, Marks, Report, RunPipeline, Tally, marking, run_reporting

# Lines per shard unless --shard-rows says otherwise: at the paper's 51.4M pairs, 515 shards, each
# minutes of back-translation on a GPU (what a kill loses), and a few hundred MB of one worker's memory.
DEFAULT_SHARD_ROWS = 100_000
# Rows read at a time from each part when the parts' ids are merged to find repeated ones.
MERGE_BATCH_ROWS = 2_048
# Files merged at once (module docstring): all 514 parts of the paper's 51.4M lines took 1.4 GB.
MERGE_FAN_IN = 64
RUN_SCHEMA = pa.schema([("id", pa.string()), ("source", pa.string()), ("line", pa.int64())])


@dataclass(frozen=True)
class RawFormat:
    """What a stage reads from raw files and writes: ``parse(unit, lines, partner_lines, first_line,
    max_line_bytes)`` → records and Rejects; ``table(records)`` → rows of ``schema``; ``order``: the
    columns rows are sorted by (id first); ``lines_of(table)``: each row's input line; ``raw(table)``:
    each row as the input held it, for its reject."""

    stage: str
    schema: pa.Schema
    parse: Callable[..., Iterator]
    table: Callable[[list], pa.Table]
    order: tuple[str, ...]
    lines_of: Callable[[pa.Table], list[int]]
    raw: Callable[[pa.Table], list[str]]


@dataclass(frozen=True)
class Shard:
    """Lines ``first_line`` … ``first_line + lines - 1`` of a unit (``last``: to the end of its
    files), at the byte ``ranges`` (start, end or None) of the unit's files when they are plain
    (None for a file that ends before the shard), or read in sequence (``ranges`` None)."""

    number: int
    first_line: int
    lines: int
    last: bool
    ranges: tuple[tuple[int, int | None] | None, ...] | None = None


@dataclass(frozen=True)
class ReadTask:
    """What one worker reads: one shard of a plain input, or every shard of a gzip input, in order."""

    unit: InputUnit
    shards: tuple[Shard, ...]


@dataclass(frozen=True)
class ShardPlan:
    tasks: tuple[ReadTask, ...]
    lines: int
    shards: int

    def all_shards(self) -> Iterator[Shard]:
        return (shard for task in self.tasks for shard in task.shards)


def unit_files(unit: InputUnit) -> list[str]:
    return [path for path in (unit.path, unit.partner) if path]


def plan_shards(units: list[InputUnit], shard_rows: int = DEFAULT_SHARD_ROWS, num_shards: int = 0) -> ShardPlan:
    """The shards of ``units``, numbered in the units' order: runs of ``shard_rows`` lines, or, when
    ``num_shards`` is given, of the lines that make about that many shards over all inputs."""
    if num_shards:
        total = sum(max(index_lines(path, 1 << 62).lines for path in unit_files(unit)) for unit in units)
        shard_rows = max(1, -(-total // num_shards))
    tasks, number, total = [], 0, 0
    for unit in units:
        indexes = [index_lines(path, shard_rows) for path in unit_files(unit)]
        lines = max(index.lines for index in indexes)
        runs = max(1, -(-lines // shard_rows))
        plain = not any(index.compressed for index in indexes)
        shards = tuple(Shard(number + k, 1 + k * shard_rows, min(shard_rows, lines - k * shard_rows), k == runs - 1,
                             tuple(_byte_range(index, k, k == runs - 1) for index in indexes) if plain else None)
                       for k in range(runs))
        tasks.extend([ReadTask(unit, (shard,)) for shard in shards] if plain else [ReadTask(unit, shards)])
        number, total = number + runs, total + lines
    return ShardPlan(tuple(tasks), total, number)


def _byte_range(index: LineIndex, run: int, last: bool) -> tuple[int, int | None] | None:
    starts = index.starts or ()
    if run >= len(starts):
        return None  # this file has fewer lines than its partner: nothing of it in this run
    return starts[run], None if last or run + 1 >= len(starts) else starts[run + 1]


def shard_lines(task: ReadTask) -> Iterator[tuple[Shard, list[Iterable]]]:
    """(shard, the line iterators of each of the unit's files in it), in order. A gzip input's
    iterators must be used up before the next shard's are taken (WriteShards does, read or skipped);
    its last shard has one more iterable: its files' damage rejects (corpus.lines.read_lines)."""
    unit, files = task.unit, unit_files(task.unit)
    if task.shards[0].ranges is not None:
        for shard in task.shards:
            yield shard, [read_line_range(path, *span) if span else iter(()) for path, span in zip(files, shard.ranges, strict=True)]
        return
    damage: list[Reject] = []
    streams = [read_lines(path, unit.source, damage) for path in files]
    for shard in task.shards:
        # read_lines adds a file's damage once it is read to its end: after the last shard's lines
        yield shard, [stream if shard.last else itertools.islice(stream, shard.lines) for stream in streams] + ([damage] if shard.last else [])


class WriteShards(beam.DoFn):
    """Read, parse, tokenize and write the shards of a ReadTask not written yet; yields (shard
    number, rows written) and marks the lines of each shard written (``lines``)."""

    def __init__(self, fmt: RawFormat, data_dir: str, rejects_dir: str, max_line_bytes: int, marks: Marks = UNWATCHED):
        self.fmt, self.data_dir, self.rejects_dir, self.max_line_bytes, self.marks = fmt, data_dir, rejects_dir, max_line_bytes, marks

    def process(self, task: ReadTask):
        for shard, lines in shard_lines(task):
            if FileSystems.exists(part_path(self.data_dir, shard.number)):
                for stream in lines:
                    for _ in stream:  # a gzip file is read through to the next shard
                        pass
                continue
            rows, rejects = shard_tables(self.fmt, task.unit, shard, lines, self.max_line_bytes)
            if rejects.num_rows:
                write_part_atomically(rejects, schemas.REJECTS, self.rejects_dir, shard.number)
            if rows.num_rows:
                write_part_atomically(rows, self.fmt.schema, self.data_dir, shard.number)
            self.marks.add("lines", shard.lines)
            yield shard.number, rows.num_rows


def parse_shard(fmt: RawFormat, unit: InputUnit, shard: Shard, lines: list[Iterable], max_line_bytes: int) -> Iterator:
    """A shard's records and Rejects (shard_lines gives its ``lines``), then its files' damage rejects."""
    files = len(unit_files(unit))
    return itertools.chain(fmt.parse(unit, lines[0], lines[1] if files > 1 else None, shard.first_line, max_line_bytes), *lines[files:])


def shard_tables(fmt: RawFormat, unit: InputUnit, shard: Shard, lines: list[Iterable], max_line_bytes: int) -> tuple[pa.Table, pa.Table]:
    """A shard's rows sorted by ``fmt.order`` (an id read again: a duplicate_id reject) and its
    rejects sorted by (source, line, reason, raw)."""
    records, rejects = [], []
    for item in parse_shard(fmt, unit, shard, lines, max_line_bytes):
        (rejects if isinstance(item, Reject) else records).append(item)
    rows = fmt.table(records).sort_by([(name, "ascending") for name in fmt.order])
    ids = np.array(rows.column("id").to_pylist(), dtype=object)
    again = np.concatenate([[False], ids[1:] == ids[:-1]]) if len(ids) else np.zeros(0, bool)
    if again.any():
        first = np.maximum.accumulate(np.where(again, 0, np.arange(len(ids))))  # each row's first of its id
        rejects.extend(_duplicates(fmt, rows, np.flatnonzero(again), first[again]))
        rows = rows.filter(pa.array(~again))
    return rows, rejects_table(rejects, fmt.stage)


def _duplicates(fmt: RawFormat, rows: pa.Table, repeated: Iterable[int], firsts: Iterable[int]) -> list[Reject]:
    sources, lines, raws = rows.column("source").to_pylist(), fmt.lines_of(rows), fmt.raw(rows)
    ids = rows.column("id")
    return [_duplicate_id(ids[row].as_py(), sources[row], lines[row], (sources[first], lines[first]), raws[row])
            for row, first in zip(repeated, firsts, strict=True)]


def _duplicate_id(pair_id: str, source: str, line: int, first: tuple[str, int], raw: str) -> Reject:
    """The reject of a row whose id the row at ``first`` (source, line) has already."""
    return Reject.of(source, line, "duplicate_id", f"id {pair_id!r} already read from {first[0]} line {first[1]}", raw)


def rejects_table(rejects: list[Reject], stage: str) -> pa.Table:
    """Rejects sorted by (source, line, reason, raw): the order is part of the byte-identical output."""
    rejects = sorted(rejects, key=lambda r: (r.source, r.line, r.reason, r.raw))
    return pa.table({
        "stage": [stage] * len(rejects),
        "source": [r.source for r in rejects],
        "line": [r.line for r in rejects],
        "reason": [r.reason for r in rejects],
        "detail": [r.detail for r in rejects],
        "raw": [r.raw for r in rejects],
    }, schema=schemas.REJECTS)


def _id_range(path: str) -> tuple[str, str] | None:
    """A sorted part's first and last id (None when it has no row), from its footer's statistics
    when it has them."""
    with reading(path), FileSystems.open(path) as handle:
        parquet = pq.ParquetFile(handle)
        meta, column = parquet.metadata, parquet.schema_arrow.get_field_index("id")
        if not meta.num_rows:
            return None
        first, last = meta.row_group(0).column(column).statistics, meta.row_group(meta.num_row_groups - 1).column(column).statistics
        if first is not None and last is not None and first.has_min_max and last.has_min_max:
            return first.min, last.max
        ids = parquet.read(columns=["id"]).column(0)
        return ids[0].as_py(), ids[-1].as_py()


def overlapping_groups(paths: list[str]) -> list[list[str]]:
    """The parts whose id ranges overlap, in groups of two or more (only they can share an id)."""
    groups: list[list[str]] = []
    high = None
    for low, top, path in sorted((*span, path) for path in paths if (span := _id_range(path))):
        if high is not None and low <= high:
            groups[-1].append(path)
            high = max(high, top)
        else:
            groups.append([path])
            high = top
    return [group for group in groups if len(group) > 1]


def _keys(fmt: RawFormat, path: str) -> Iterator[tuple]:
    """(id, source, line) of a part's rows, in its order, a batch at a time."""
    with reading(path), FileSystems.open(path) as handle:
        for batch in streamed_parquet(handle).iter_batches(batch_size=MERGE_BATCH_ROWS, columns=["id", "source", *fmt.order[2:]]):
            table = pa.Table.from_batches([batch])
            yield from zip(table.column("id").to_pylist(), table.column("source").to_pylist(), fmt.lines_of(table), strict=True)


def _run_keys(path: str) -> Iterator[tuple]:
    """(id, source, line) of a sorted run written by ``_write_run``, a batch at a time."""
    with FileSystems.open(path) as handle:
        for batch in streamed_parquet(handle).iter_batches(batch_size=MERGE_BATCH_ROWS):
            yield from zip(*(batch.column(name).to_pylist() for name in RUN_SCHEMA.names), strict=True)


def _write_run(keys: Iterator[tuple], path: str) -> str:
    with FileSystems.create(path) as handle, pq.ParquetWriter(handle, RUN_SCHEMA, compression="zstd") as writer:
        while chunk := list(itertools.islice(keys, 16 * MERGE_BATCH_ROWS)):
            writer.write_table(pa.table(list(zip(*chunk, strict=True)), schema=RUN_SCHEMA))
    return path


def merged_keys(fmt: RawFormat, paths: list[str], scratch: str) -> Iterator[tuple]:
    """(id, source, line) of the rows of sorted parts, in sorted order, never more than
    ``MERGE_FAN_IN`` files open: more are merged in rounds through runs in ``scratch``
    (``.tmp-merge-*``, deleted when read, or by the next run's ``remove_temporaries`` after a kill)."""
    streams: list[Callable[[], Iterator[tuple]]] = [lambda path=path: _keys(fmt, path) for path in paths]
    runs: list[str] = []
    round_number = 0
    while len(streams) > MERGE_FAN_IN:
        written = [_write_run(heapq.merge(*(stream() for stream in streams[start : start + MERGE_FAN_IN])),
                              FileSystems.join(scratch, f".tmp-merge-{round_number}-{start // MERGE_FAN_IN:05d}"))
                   for start in range(0, len(streams), MERGE_FAN_IN)]
        if runs:
            FileSystems.delete(runs)
        runs, streams = written, [lambda path=path: _run_keys(path) for path in written]
        round_number += 1
    yield from heapq.merge(*(stream() for stream in streams))
    if runs:
        FileSystems.delete(runs)


def repeated_ids(fmt: RawFormat, groups: list[list[str]], scratch: str) -> dict[tuple[str, int], tuple[str, int]]:
    """Rows of sorted parts whose id an earlier row (by id, source, line) has: (source, line) of
    each → (source, line) of the first, merging each group of overlapping parts (overlapping_groups;
    ``scratch``: see ``merged_keys``)."""
    repeated: dict[tuple[str, int], tuple[str, int]] = {}
    for group in groups:
        previous, first = None, None
        for pair_id, source, line in merged_keys(fmt, group, scratch):
            if pair_id == previous:
                repeated[(source, line)] = first
            else:
                previous, first = pair_id, (source, line)
    return repeated


def _read_part(path: str) -> pa.Table:
    with reading(path), FileSystems.open(path) as handle:
        return pq.read_table(handle)


def _removed_rows(fmt: RawFormat, table: pa.Table, removed: set | dict) -> np.ndarray:
    return np.array([key in removed for key in zip(table.column("source").to_pylist(), fmt.lines_of(table), strict=True)], bool)


def remove_repeated_ids(fmt: RawFormat, data_dir: str, rejects_dir: str, number: int) -> int:
    """Remove the rows whose id an earlier shard has (repeated_ids) from their parts. Their
    rejects are part ``number`` of ``rejects_dir``, written before any part changes, so that a run
    killed in between finishes the same removal. Memory: a part at a time. Returns the rows removed."""
    groups = overlapping_groups(dataset_files(data_dir))
    candidates = [path for group in groups for path in group]
    decided = part_path(rejects_dir, number)
    if FileSystems.exists(decided):
        done = _read_part(decided)
        removed = set(zip(done.column("source").to_pylist(), done.column("line").to_pylist(), strict=True))
    else:
        firsts = repeated_ids(fmt, groups, data_dir)
        if not firsts:
            return 0
        rejects = []
        for path in candidates:
            table = _read_part(path)
            dropped = table.filter(pa.array(_removed_rows(fmt, table, firsts)))
            for pair_id, source, line, raw in zip(dropped.column("id").to_pylist(), dropped.column("source").to_pylist(),
                                                  fmt.lines_of(dropped), fmt.raw(dropped), strict=True):
                rejects.append(_duplicate_id(pair_id, source, line, firsts[(source, line)], raw))
        write_part_atomically(rejects_table(rejects, fmt.stage), schemas.REJECTS, rejects_dir, number)
        removed = set(firsts)
    for path in candidates:
        table = _read_part(path)
        gone = _removed_rows(fmt, table, removed)
        if gone.any():
            write_part_atomically(table.filter(pa.array(~gone)), fmt.schema, data_dir, shard_number(path))
    return len(removed)


def build_shard_writes(pipeline: beam.Pipeline, fmt: RawFormat, plan: ShardPlan, data_dir: str, rejects_dir: str,
                       max_line_bytes: int, marks: Marks = UNWATCHED):
    """Add the transforms that write ``plan``'s shards and then remove ids repeated across them;
    returns the PCollection of the rows removed (one number). Parts a killed run left half-written
    are deleted first."""
    remove_temporaries(data_dir)
    remove_temporaries(rejects_dir)
    written = (
        pipeline
        | "Tasks" >> beam.Create(list(plan.tasks))
        | "WriteShards" >> beam.ParDo(WriteShards(fmt, data_dir, rejects_dir, max_line_bytes, marks))
    )
    return (
        written
        | "AllWritten" >> beam.combiners.Count.Globally()
        | "RemoveRepeatedIds" >> beam.Map(lambda _: remove_repeated_ids(fmt, data_dir, rejects_dir, plan.shards))
    )


def write_shards(run_pipeline: RunPipeline, fmt: RawFormat, plan: ShardPlan, data_dir: str, rejects_dir: str,
                 max_line_bytes: int, work_dir: str, report: Report | None = None) -> None:
    """Run the pipeline that writes ``plan``; ``report`` gets the lines written so far (those of
    shards an earlier, interrupted run finished first)."""
    already = sum(shard.lines for shard in plan.all_shards() if FileSystems.exists(part_path(data_dir, shard.number)))
    with marking(FileSystems.join(work_dir, f"_{fmt.stage}-progress")) as marks:
        tally = Tally(lambda: already + marks.count("lines"), plan.lines, "lines read and written", "lines",
                      then="the search of every part for ids repeated across shards")
        run_reporting(run_pipeline, lambda p: build_shard_writes(p, fmt, plan, data_dir, rejects_dir, max_line_bytes, marks), tally, report, already)
