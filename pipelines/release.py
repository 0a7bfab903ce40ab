"""ParaNMT-50M release files → a ``pairs`` dataset, for users who start from existing back-translations.

A release line is ``reference<TAB>back-translation<TAB>score``. The third column is the
authors' PP similarity of the pair, not a translation score: it is stored in ``trans_score``
(the only score a ``pairs`` row carries) so that it is kept and ranked (``decile_trans``), and
the manifest says so. The Czech source is not in the release (``cs`` is empty), nor is the
NMT token count (``trans_n_tokens`` is 0). Both sides are Moses-tokenized here, once
(``corpus.text.english_tokens``): scoring and training read those tokens.
"""

from __future__ import annotations

from collections import defaultdict

import apache_beam as beam
import numpy as np
import pyarrow as pa

import schemas
from corpus.ids import shard_of
from corpus.inputs import read_lines
from corpus.readers import DEFAULT_MAX_LINE_BYTES, InputUnit, ParaphraseRecord, Reject, iter_paranmt
from corpus.text import english_tokens
from corpus.tokenbatch import token_columns
from pipelines.ingest import WriteRejects, chunked
from pipelines.io import write_part

STAGE = "import"
CHUNK_LINES = 10_000


def read_release(unit: InputUnit, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, chunk_lines: int = CHUNK_LINES):
    """Parse one release file (gzip or plain) into lists of ParaphraseRecord / Reject."""
    damage: list[Reject] = []
    return chunked(iter_paranmt(read_lines(unit.path, unit.source, damage), unit.source, max_line_bytes), damage, chunk_lines)


class ShardRecords(beam.DoFn):
    """Group a chunk's records by shard (one element per shard, not per row); rejects aside."""

    REJECTS = "rejects"

    def __init__(self, num_shards: int):
        self.num_shards = num_shards

    def process(self, chunk: list):
        by_shard: dict[int, list[ParaphraseRecord]] = defaultdict(list)
        for item in chunk:
            if isinstance(item, Reject):
                yield beam.pvalue.TaggedOutput(self.REJECTS, item)
            else:
                by_shard[shard_of(item.id, self.num_shards)].append(item)
        yield from sorted(by_shard.items())


class WriteReleaseShard(beam.DoFn):
    """Sort a shard by id; a repeated id (two files with one stem) is rejected after its first."""

    REJECTS = "rejects"

    def __init__(self, pairs_dir: str):
        self.pairs_dir = pairs_dir

    def process(self, keyed):
        shard, lists = keyed
        records = sorted((r for records in lists for r in records), key=lambda r: (r.id, r.source, r.line))
        ids = np.array([r.id for r in records], dtype=object)
        repeated = np.concatenate([[False], ids[1:] == ids[:-1]]) if len(ids) else np.zeros(0, bool)
        for record in (r for r, again in zip(records, repeated, strict=True) if again):
            raw = f"{record.reference}\t{record.translation}\t{record.score}"
            yield beam.pvalue.TaggedOutput(self.REJECTS, Reject.of(record.source, record.line, "duplicate_id", f"id {record.id!r} read twice", raw))
        kept = [r for r, again in zip(records, repeated, strict=True) if not again]
        n = len(kept)
        references, translations = [r.reference for r in kept], [r.translation for r in kept]
        table = pa.table({
            "id": [r.id for r in kept],
            "source": [r.source for r in kept],
            "domain": [InputUnit(r.source).domain for r in kept],  # the file name up to its first dot
            "czeng_score": pa.nulls(n, pa.float64()),
            "pivot": ["cs"] * n,  # ParaNMT-50M was back-translated from CzEng's Czech side, which it does not carry
            "foreign": [""] * n,
            "reference": references,
            "translation": translations,
            "trans_score": [r.score for r in kept],
            "trans_n_tokens": np.zeros(n, np.int32),
            "truncated": np.zeros(n, bool),
            **token_columns(english_tokens(references), english_tokens(translations)),
        })
        yield write_part(table, schemas.PAIRS, self.pairs_dir, shard)


def build_release_import(pipeline: beam.Pipeline, units: list[InputUnit], pairs_dir: str, rejects_dir: str, num_shards: int, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
    """Add the import transforms; returns the PCollection of rows written per shard."""
    sharded = (
        pipeline
        | "Inputs" >> beam.Create(units)
        | "Read" >> beam.FlatMap(read_release, max_line_bytes)
        | "Shard" >> beam.ParDo(ShardRecords(num_shards)).with_outputs(ShardRecords.REJECTS, main="rows")
    )
    written = (
        sharded.rows
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(WriteReleaseShard(pairs_dir)).with_outputs(WriteReleaseShard.REJECTS, main="counts")
    )
    _ = (
        (sharded[ShardRecords.REJECTS], written[WriteReleaseShard.REJECTS])
        | "AllRejects" >> beam.Flatten()
        | "WriteRejects" >> WriteRejects(rejects_dir, STAGE, num_shards)
    )
    return written.counts
