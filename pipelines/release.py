"""ParaNMT-50M release files → a ``pairs`` dataset, for users who start from existing back-translations.

A release line is ``reference<TAB>back-translation<TAB>score``. The third column is the
authors' PP similarity of the pair, not a translation score: it is stored in ``trans_score``
(the only score a ``pairs`` row carries) so that it is kept and ranked (``decile_trans``), and
the manifest says so. The Czech source is not in the release (``foreign`` is empty), nor is the
NMT token count (``trans_n_tokens`` is 0). Both sides are Moses-tokenized here, once
(``corpus.text.english_tokens``): scoring and training read those tokens. Files are cut into
shards of a bounded number of lines, read and written as ``pipelines.rawshards`` says.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

import schemas
from corpus.ids import line_of_id
from corpus.readers import InputUnit, ParaphraseRecord, Reject, iter_paranmt
from corpus.text import english_tokens
from corpus.tokenbatch import token_columns
from pipelines import stages
from pipelines.progress import Report, RunPipeline
from pipelines.rawshards import RawFormat, ShardPlan, write_shards


def parse_release(unit: InputUnit, lines: Iterable, _partner_lines: Iterable | None, first_line: int,
                  max_line_bytes: int) -> Iterator[ParaphraseRecord | Reject]:
    return iter_paranmt(lines, unit.source, max_line_bytes, first_line)


# The ``system`` of the release's pairs: the authors' back-translation (their own Czech–English model).
RELEASE_SYSTEM = "ParaNMT-50M release"


def release_table(records: list[ParaphraseRecord]) -> pa.Table:
    """``pairs`` rows of release records, both sides tokenized (each the one pair of its row)."""
    n = len(records)
    references, translations = [r.reference for r in records], [r.translation for r in records]
    return schemas.upgraded(pa.table({
        "id": [r.id for r in records],
        "source": [r.source for r in records],
        "domain": [InputUnit(r.source).domain for r in records],  # the file name up to its first dot
        "czeng_score": pa.nulls(n, pa.float64()),
        "pivot": ["cs"] * n,  # ParaNMT-50M was back-translated from CzEng's Czech side, which it does not carry
        "foreign": [""] * n,
        "reference": references,
        "translation": translations,
        "system": [RELEASE_SYSTEM] * n,
        "trans_score": [r.score for r in records],
        "trans_n_tokens": np.zeros(n, np.int32),
        "truncated": np.zeros(n, bool),
        **token_columns(english_tokens(references), english_tokens(translations)),
    }))


def _raw_release(table: pa.Table) -> list[str]:
    columns = [table.column(name).to_pylist() for name in ("reference", "translation", "trans_score")]
    return [f"{reference}\t{translation}\t{score}" for reference, translation, score in zip(*columns, strict=True)]


# A release row's line is in its id (corpus.ids.line_id): the pairs schema has no line column.
RELEASE_FORMAT = RawFormat(stages.IMPORT, schemas.PAIRS, parse_release, release_table, ("id", "source"),
                           lambda table: [line_of_id(pair_id) for pair_id in table.column("id").to_pylist()], _raw_release)


def import_release(run_pipeline: RunPipeline, plan: ShardPlan, pairs_dir: str, rejects_dir: str, max_line_bytes: int, work_dir: str,
                   report: Report | None = None) -> None:
    """Run the import pipeline over ``plan`` (``pipelines.rawshards.plan_shards``); ``report`` gets the lines written so far."""
    write_shards(run_pipeline, RELEASE_FORMAT, plan, pairs_dir, rejects_dir, max_line_bytes, work_dir, report)
