"""IngestBitext: many CzEng / line-aligned files → validated ``bitext`` + ``rejects`` Parquet, in
shards of a bounded number of lines (``pipelines.rawshards``: how files are cut, read and written).

A shard's English side is Moses-tokenized by the worker that reads it (the heavy part: ``en_tok``
is the tokenized form scoring, selection and training read; the foreign side is read by the NMT
model's sentencepiece as it is, so it is not tokenized).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

import schemas
from corpus import readers
from corpus.readers import BitextRecord, InputUnit, Reject
from corpus.text import english_tokens
from corpus.tokenbatch import token_counts
from pipelines import stages
from pipelines.progress import Report, RunPipeline
from pipelines.rawshards import RawFormat, ShardPlan, write_shards


def parse_bitext(unit: InputUnit, lines: Iterable, partner_lines: Iterable | None, first_line: int,
                 max_line_bytes: int) -> Iterator[BitextRecord | Reject]:
    """A unit's lines from ``first_line`` on, as BitextRecords and Rejects (CzEng, or line-aligned with its partner's)."""
    if unit.partner:
        return readers.iter_aligned(lines, partner_lines or (), unit, max_line_bytes, first_line)
    return readers.iter_czeng(lines, unit.source, max_line_bytes, unit.language, first_line)


def bitext_table(records: list[BitextRecord]) -> pa.Table:
    """``bitext`` rows of records, their English side tokenized (``corpus.text.english_tokens``)."""
    en_tok = english_tokens(r.en for r in records)
    return pa.table({
        "id": [r.id for r in records],
        "source": [r.source for r in records],
        "line": [r.line for r in records],
        "domain": [r.domain for r in records],
        "czeng_score": [r.czeng_score for r in records],
        "pivot": [r.pivot for r in records],
        "foreign": [r.foreign for r in records],
        "en": [r.en for r in records],
        "en_tok": en_tok,
        "en_n_tokens": token_counts(en_tok),
    }, schema=schemas.BITEXT)


def _raw_bitext(table: pa.Table) -> list[str]:
    return [f"{foreign}\t{en}" for foreign, en in zip(table.column("foreign").to_pylist(), table.column("en").to_pylist(), strict=True)]


BITEXT_FORMAT = RawFormat(stages.INGEST, schemas.BITEXT, parse_bitext, bitext_table, ("id", "source", "line"),
                          lambda table: table.column("line").to_pylist(), _raw_bitext)


def ingest(run_pipeline: RunPipeline, plan: ShardPlan, bitext_dir: str, rejects_dir: str, max_line_bytes: int, work_dir: str,
           report: Report | None = None) -> None:
    """Run the ingest pipeline over ``plan`` (``pipelines.rawshards.plan_shards``); ``report`` gets the lines written so far."""
    write_shards(run_pipeline, BITEXT_FORMAT, plan, bitext_dir, rejects_dir, max_line_bytes, work_dir, report)
