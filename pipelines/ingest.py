"""IngestBitext: many CzEng / line-aligned files → sharded, validated ``bitext`` + ``rejects`` Parquet.

Reading a gzip file cannot be split, so files are read whole, one per worker, and cut into
chunks; chunks are spread over workers for Moses tokenization of the English side (the heavy
part: ``en_tok`` is the tokenized form scoring, selection and training read; the Czech side is
read by the NMT model's sentencepiece as it is, so it is not tokenized); rows are keyed
by the hash of their id, grouped per shard, sorted by id, de-duplicated and written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from itertools import islice

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus import readers
from corpus.ids import id_hash, shard_of
from corpus.inputs import read_lines
from corpus.readers import BitextRecord, InputUnit, Reject
from corpus.text import english_tokens
from corpus.tokenbatch import token_counts
from pipelines.io import write_part
from pipelines.progress import UNWATCHED, Marks, Report, RunPipeline, Tally, marking, run_reporting

STAGE = "ingest"
CHUNK_LINES = 2_000


def read_unit(unit: InputUnit, max_line_bytes: int, chunk_lines: int = CHUNK_LINES) -> Iterator[list]:
    """Parse one input unit, yielding lists of BitextRecord / Reject of at most ``chunk_lines``."""
    damage: list[Reject] = []
    if unit.partner:
        records = readers.iter_aligned(read_lines(unit.path, unit.source, damage), read_lines(unit.partner, unit.source, damage), unit, max_line_bytes)
    else:
        records = readers.iter_czeng(read_lines(unit.path, unit.source, damage), unit.source, max_line_bytes, unit.language)
    return chunked(records, damage, chunk_lines)


def chunked(records: Iterator, damage: list[Reject], chunk_lines: int) -> Iterator[list]:
    """Lists of at most ``chunk_lines`` records, then the file-damage rejects (corpus.inputs.read_lines), if any."""
    while chunk := list(islice(records, chunk_lines)):
        yield chunk
    if damage:
        yield damage


def _marked_read(chunk: list, marks: Marks) -> list:
    marks.add("read", len(chunk))
    return chunk


class TokenizeChunk(beam.DoFn):
    """Moses-tokenize the English side of a chunk (``corpus.text.english_tokens``); group its rows by shard; rejects go to a side
    output; a ``tokenized`` mark counts the chunk's lines."""

    REJECTS = "rejects"

    def __init__(self, num_shards: int, marks: Marks = UNWATCHED):
        self.num_shards, self.marks = num_shards, marks

    def process(self, chunk: list):
        good = [item for item in chunk if isinstance(item, BitextRecord)]
        for item in chunk:
            if isinstance(item, Reject):
                yield beam.pvalue.TaggedOutput(self.REJECTS, item)
        by_shard: dict[int, list[tuple]] = defaultdict(list)
        en_toks = english_tokens(r.en for r in good)
        for record, en_tok, en_n_tokens in zip(good, en_toks, token_counts(en_toks).tolist(), strict=True):
            row = (record.id, record.source, record.line, record.domain, record.czeng_score,
                   record.pivot, record.foreign, record.en, en_tok, en_n_tokens)
            by_shard[shard_of(record.id, self.num_shards)].append(row)
        # One element per (chunk, shard) instead of one per row: the shuffle moves lists.
        yield from sorted(by_shard.items())
        self.marks.add("tokenized", len(chunk))


class WriteBitextShard(beam.DoFn):
    """Sort a shard's rows by id, reject repeated ids (first occurrence kept), write the part."""

    REJECTS = "rejects"

    def __init__(self, dataset_dir: str):
        self.dataset_dir = dataset_dir

    def process(self, keyed_rows):
        shard, row_lists = keyed_rows
        rows = sorted((row for rows in row_lists for row in rows), key=lambda row: (row[0], row[1], row[2]))
        kept = []
        for row in rows:
            if kept and kept[-1][0] == row[0]:
                first = kept[-1]
                detail = f"id {row[0]!r} already read from {first[1]} line {first[2]}"
                yield beam.pvalue.TaggedOutput(self.REJECTS, Reject.of(row[1], row[2], "duplicate_id", detail, f"{row[6]}\t{row[7]}"))
            else:
                kept.append(row)
        columns = list(zip(*kept, strict=True))
        table = pa.Table.from_arrays([pa.array(column) for column in columns], names=schemas.BITEXT.names)
        yield write_part(table, schemas.BITEXT, self.dataset_dir, shard)


def rejects_table(rejects: list[Reject], stage: str) -> pa.Table:
    """Rejects sorted by (source, line, reason): the order is part of the byte-identical output."""
    rejects = sorted(rejects, key=lambda r: (r.source, r.line, r.reason, r.raw))
    return pa.table({
        "stage": [stage] * len(rejects),
        "source": [r.source for r in rejects],
        "line": [r.line for r in rejects],
        "reason": [r.reason for r in rejects],
        "detail": [r.detail for r in rejects],
        "raw": [r.raw for r in rejects],
    })


class WriteRejects(beam.PTransform):
    """Shard rejects by the hash of (source, line) and write each shard as one sorted part."""

    def __init__(self, dataset_dir: str, stage: str, num_shards: int):
        super().__init__()
        self.dataset_dir, self.stage, self.num_shards = dataset_dir, stage, num_shards

    def expand(self, rejects):
        def write(keyed):
            shard, items = keyed
            return write_part(rejects_table(list(items), self.stage), schemas.REJECTS, self.dataset_dir, shard)

        return (
            rejects
            | "KeyByLine" >> beam.Map(lambda r: (id_hash(f"{r.source}:{r.line}") % self.num_shards, r))
            | "GroupRejects" >> beam.GroupByKey()
            | "WriteRejectShards" >> beam.Map(write)
        )


def build_ingest(
    pipeline: beam.Pipeline,
    units: list[InputUnit],
    bitext_dir: str,
    rejects_dir: str,
    num_shards: int,
    max_line_bytes: int = readers.DEFAULT_MAX_LINE_BYTES,
    marks: Marks = UNWATCHED,
):
    """Add the ingest transforms to ``pipeline``; returns the PCollection of written row counts.
    ``marks`` count the lines read (``read``) and tokenized (``tokenized``)."""
    tokenized = (
        pipeline
        | "Inputs" >> beam.Create(units)
        | "Read" >> beam.FlatMap(read_unit, max_line_bytes)
        | "CountRead" >> beam.Map(_marked_read, marks)
        | "SpreadChunks" >> beam.Reshuffle()
        | "Tokenize" >> beam.ParDo(TokenizeChunk(num_shards, marks)).with_outputs(TokenizeChunk.REJECTS, main="rows")
    )
    written = (
        tokenized.rows
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(WriteBitextShard(bitext_dir)).with_outputs(WriteBitextShard.REJECTS, main="counts")
    )
    _ = (
        (tokenized[TokenizeChunk.REJECTS], written[WriteBitextShard.REJECTS])
        | "AllRejects" >> beam.Flatten()
        | "WriteRejects" >> WriteRejects(rejects_dir, STAGE, num_shards)
    )
    return written.counts


def ingest(
    run_pipeline: RunPipeline, units: list[InputUnit], bitext_dir: str, rejects_dir: str, num_shards: int, max_line_bytes: int, work_dir: str, report: Report | None = None
) -> None:
    """Run the ingest pipeline; ``report`` gets the lines tokenized of those read so far while it
    runs (a batch runner reads everything before it tokenizes, so the total is soon the input's)."""
    with marking(FileSystems.join(work_dir, "_ingest-progress")) as marks:
        tally = Tally(marks.counter("tokenized"), marks.counter("read"), "lines tokenized", "lines")
        run_reporting(run_pipeline, lambda p: build_ingest(p, units, bitext_dir, rejects_dir, num_shards, max_line_bytes, marks), tally, report)
