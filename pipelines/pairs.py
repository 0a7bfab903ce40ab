"""The ``pairs`` rows of bitext rows and their translations: one builder for every stage that
writes pairs (BackTranslate's own translations, ImportTranslations' translations made elsewhere)."""

from __future__ import annotations

import pyarrow as pa

import schemas
from corpus.text import english_tokens
from corpus.tokenbatch import token_columns
from pipelines.io import write_part_atomically

# The bitext columns a pairs stage reads.
BITEXT_COLUMNS = ["id", "source", "line", "domain", "czeng_score", "pivot", "foreign", "en", "en_tok"]


def pairs_table(rows: pa.Table, translations: list[str], system: list[str], scores: list[float | None],
                n_tokens: list[int | None], truncated: list[bool], ids: list[str] | None = None, made: dict[str, list] | None = None) -> pa.Table:
    """Bitext ``rows`` (BITEXT_COLUMNS) with a translation each, as ``pairs`` rows sorted by id:
    ``system`` says where each translation came from, ``scores`` and ``n_tokens`` are null where
    no model scored it, ``ids`` replace the bitext's (one bitext row has several translations;
    the bitext's stays as ``bitext_id``), ``made`` gives the columns of how each was decoded
    (``variant``, ``diversity``, ``banned``, ``sibling_f1``; none given: each is its row's only
    translation, variant 0, made elsewhere)."""
    pairs = rows.select(["id", "source", "domain", "czeng_score", "pivot", "foreign", "en"]).rename_columns(
        ["id", "source", "domain", "czeng_score", "pivot", "foreign", "reference"])
    pairs = pairs.append_column("bitext_id", pairs.column("id"))
    if ids is not None:
        pairs = pairs.set_column(0, "id", pa.array(ids, pa.string()))
    count = rows.num_rows
    made = made or {"variant": [0] * count, "diversity": [""] * count, "banned": [None] * count, "sibling_f1": [None] * count}
    for name in ("variant", "diversity", "banned", "sibling_f1"):
        pairs = pairs.append_column(name, pa.array(made[name], schemas.PAIRS.field(name).type))
    pairs = pairs.append_column("translation", pa.array(translations, pa.string()))
    pairs = pairs.append_column("system", pa.array(system, pa.string()))
    pairs = pairs.append_column("trans_score", pa.array(scores, pa.float64()))
    pairs = pairs.append_column("trans_n_tokens", pa.array(n_tokens, pa.int32()))
    pairs = pairs.append_column("truncated", pa.array(truncated, pa.bool_()))
    # The reference was tokenized at ingest; the translation is tokenized here, once.
    for name, column in token_columns(rows.column("en_tok"), english_tokens(translations)).items():
        pairs = pairs.append_column(name, column)
    return pairs.sort_by("id")


def write_pairs_part(pairs: pa.Table, rejects: pa.Table, pairs_dir: str, rejects_dir: str, number: int) -> int:
    """Write a unit's rejects (if any), then its pairs part, each whole or not at all: the pairs
    part marks the unit done (a resumed run skips it). Returns the pairs written."""
    if rejects.num_rows:
        write_part_atomically(rejects, schemas.REJECTS, rejects_dir, number)
    return write_part_atomically(pairs, schemas.PAIRS, pairs_dir, number)
