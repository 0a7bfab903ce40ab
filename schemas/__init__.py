"""One versioned pyarrow schema per dataset; every writer validates against these.

Column meanings are documented in ``schemas/COLUMNS.md`` (the single place the README links).
Bump a dataset's version whenever its columns change: the version is written into each
Parquet file's metadata and into the stage manifest, so stale outputs are recognisable.
"""

from __future__ import annotations

import pyarrow as pa

VERSION_KEY = b"paranmt.schema"

_BITEXT_FIELDS = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("line", pa.int64(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("czeng_score", pa.float64()),
    pa.field("pivot", pa.string(), nullable=False),
    pa.field("foreign", pa.string(), nullable=False),
    pa.field("en", pa.string(), nullable=False),
    pa.field("en_tok", pa.string(), nullable=False),
    pa.field("en_n_tokens", pa.int32(), nullable=False),
]

# Pair-level provenance carried from the bitext into every later dataset.
_PROVENANCE_FIELDS = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("domain", pa.string(), nullable=False),
    pa.field("czeng_score", pa.float64()),
    pa.field("pivot", pa.string(), nullable=False),
]

_PAIRS_FIELDS = [
    *_PROVENANCE_FIELDS,
    pa.field("foreign", pa.string(), nullable=False),
    pa.field("reference", pa.string(), nullable=False),
    pa.field("translation", pa.string(), nullable=False),
    # where the translation came from: the translator's name, or a translation file's
    pa.field("system", pa.string(), nullable=False),
    # the bitext row translated: the siblings (several paraphrases of one source) share it
    pa.field("bitext_id", pa.string(), nullable=False),
    # 0: the beam's best hypothesis, the one pair of the paper's method; 1…K-1: the other paraphrases
    pa.field("variant", pa.int8(), nullable=False),
    # how the translation was decoded (method and settings); empty for translations made elsewhere
    pa.field("diversity", pa.string(), nullable=False),
    pa.field("banned", pa.string()),  # the words banned while decoding it, null where none were
    pa.field("sibling_f1", pa.float64()),  # highest unigram F1 with a sibling's translation; null without one
    # null for translations made elsewhere that no model scored
    pa.field("trans_score", pa.float64()),
    pa.field("trans_n_tokens", pa.int32()),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("reference_tok", pa.string(), nullable=False),
    pa.field("translation_tok", pa.string(), nullable=False),
    pa.field("reference_n_tokens", pa.int32(), nullable=False),
    pa.field("translation_n_tokens", pa.int32(), nullable=False),
]

_SCORE_FIELDS = [
    # blake2b-64 of ``id``: the tie-breaker of every ranking, hashed once, where the scores are made
    pa.field("id_hash", pa.uint64(), nullable=False),
    pa.field("trigram_overlap", pa.float64(), nullable=False),
    pa.field("pp_sim", pa.float64(), nullable=False),
    pa.field("reference_p_en", pa.float64(), nullable=False),
    pa.field("translation_p_en", pa.float64(), nullable=False),
    pa.field("unigram_f1", pa.float64(), nullable=False),
    pa.field("kendall_tau", pa.float64()),  # null below two shared words (corpus.diversity)
    # the keys decile_trigram and decile_tau rank: trigram_overlap's order with its ties ordered by
    # unigram_f1, and τ weighed by the words it compares (corpus.scoring, corpus.diversity)
    pa.field("trigram_then_f1", pa.float64(), nullable=False),
    pa.field("kendall_z_then_f1", pa.float64()),  # null where kendall_tau is
]

_DECILE_FIELDS = [
    pa.field("decile_trans", pa.int8()),  # null where trans_score is
    pa.field("decile_trigram", pa.int8(), nullable=False),
    pa.field("decile_pp", pa.int8(), nullable=False),
    pa.field("decile_unigram", pa.int8(), nullable=False),
    pa.field("decile_tau", pa.int8()),  # null where kendall_tau is
]

_REJECTS_FIELDS = [
    pa.field("stage", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("line", pa.int64(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string(), nullable=False),
    pa.field("raw", pa.string(), nullable=False),
]


def _schema(name: str, version: int, fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(fields, metadata={VERSION_KEY: f"{name}/{version}".encode()})


BITEXT = _schema("bitext", 3, _BITEXT_FIELDS)
REJECTS = _schema("rejects", 1, _REJECTS_FIELDS)
PAIRS = _schema("pairs", 5, _PAIRS_FIELDS)
# The scores of every pair, keyed by id and in the rows' order of its pairs shard (the corpus joins
# the two); trans_score is copied from the pairs so that every ranked score is here.
SCORED = _schema("scored", 10, [field for field in _PAIRS_FIELDS if field.name in ("id", "trans_score")] + _SCORE_FIELDS)
CORPUS = _schema("corpus", 10, [*_PAIRS_FIELDS, *_SCORE_FIELDS, *_DECILE_FIELDS])
# The corpus is hive-partitioned by decile_pp: that column lives in the directory names
# (decile_pp=<d>/), so each file holds every CORPUS column but it.
CORPUS_FILE = _schema("corpus", 10, [field for field in CORPUS if field.name != "decile_pp"])
# A training selection: corpus rows in plain (unpartitioned) files.
TRAINING = _schema("training", 10, list(CORPUS))

ALL = {"bitext": BITEXT, "rejects": REJECTS, "pairs": PAIRS, "scored": SCORED, "corpus": CORPUS, "training": TRAINING}


# Datasets written by paranmt 0.3 (bitext/2, pairs/2, corpus/4, training/4) name the foreign side
# ``cs`` and have no ``pivot``: read as today's, Czech pivots. Pairs written before pairs/4 (and
# the corpus and training sets made of them) have no ``system``: read with an empty one. Pairs
# before pairs/5 have one pair a bitext row: each is its own row's variant 0, decoded as written.
_RENAMED = {"cs": "foreign"}
# name: (its values in a table of n rows, a column it is put beside, 0 before it / 1 after it)
_ADDED = {
    "pivot": (lambda table: pa.array(["cs"] * table.num_rows, pa.string()), "foreign", 0),
    "system": (lambda table: pa.array([""] * table.num_rows, pa.string()), "translation", 1),
    "bitext_id": (lambda table: table.column("id"), "system", 1),
    "variant": (lambda table: pa.array([0] * table.num_rows, pa.int8()), "bitext_id", 1),
    "diversity": (lambda table: pa.array([""] * table.num_rows, pa.string()), "variant", 1),
    "banned": (lambda table: pa.nulls(table.num_rows, pa.string()), "diversity", 1),
    "sibling_f1": (lambda table: pa.nulls(table.num_rows, pa.float64()), "banned", 1),
}


def upgraded(table: pa.Table) -> pa.Table:
    """``table`` with the columns of an older dataset (paranmt 0.3's, pairs before pairs/4 or
    pairs/5) renamed and added as today's."""
    names = [_RENAMED.get(name, name) if _RENAMED.get(name) not in table.column_names else name for name in table.column_names]
    table = table.rename_columns(names)
    for name, (values, beside, after) in _ADDED.items():
        if name not in table.column_names and beside in table.column_names and (name != "bitext_id" or "id" in table.column_names):
            table = table.add_column(table.column_names.index(beside) + after, name, values(table))
    return table


def upgraded_names(names: list[str]) -> list[str]:
    """The column names an older dataset has once read (``upgraded``)."""
    return upgraded(pa.table({name: pa.nulls(0) for name in names})).column_names


class SchemaError(ValueError):
    """A table does not match the dataset schema it is about to be written as."""


def version_of(schema: pa.Schema) -> str:
    """The ``name/version`` tag stored in a schema's metadata."""
    return schema.metadata[VERSION_KEY].decode()


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` with exactly ``schema``'s columns, order, types and metadata.

    Raises SchemaError naming every missing or extra column, every column whose values
    cannot be cast safely, and every null in a non-nullable column, so a writer never puts
    a malformed shard on disk.
    """
    expected = set(schema.names)
    present = set(table.column_names)
    problems = []
    if missing := sorted(expected - present):
        problems.append(f"missing columns {missing}")
    if extra := sorted(present - expected):
        problems.append(f"unexpected columns {extra}")
    if problems:
        raise SchemaError(f"{version_of(schema)}: " + "; ".join(problems))
    columns = []
    for field in schema:
        column = table.column(field.name)
        try:
            column = column.cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            problems.append(f"column {field.name!r} ({column.type}) is not {field.type}: {error}")
            continue
        if not field.nullable and column.null_count:
            problems.append(f"column {field.name!r} has {column.null_count} nulls")
        columns.append(column)
    if problems:
        raise SchemaError(f"{version_of(schema)}: " + "; ".join(problems))
    return pa.Table.from_arrays(columns, schema=schema)


def write_table(table: pa.Table, schema: pa.Schema, where, row_group_size: int = 64_000) -> int:
    """Validate ``table`` against ``schema`` and write it as one Parquet file.

    ``where`` is a path or a writable binary file object (Beam's FileSystems.create gives
    one for any filesystem). The writer options are fixed, so the same rows give the same
    bytes on every run. Returns the number of rows written.
    """
    with TableWriter(where, schema, row_group_size) as writer:
        writer.write(table)
    return writer.rows


class TableWriter:
    """One Parquet file written a table at a time (memory holds one table, not the file), each
    validated against ``schema``; the fixed options of :func:`write_table`.

    No dictionary encoding: the text columns (ids, sentences, tokens) are nearly all distinct,
    so building a dictionary per column chunk only to drop it costs half the write time, and
    zstd compresses the few repeated columns (source, domain) as well on its own."""

    def __init__(self, where, schema: pa.Schema, row_group_size: int = 64_000):
        import pyarrow.parquet as pq

        self.schema, self.row_group_size, self.rows = schema, row_group_size, 0
        self._writer = pq.ParquetWriter(where, schema, compression="zstd", use_dictionary=False, write_statistics=True)

    def write(self, table: pa.Table) -> None:
        conformed = conform(table, self.schema)
        self._writer.write_table(conformed, row_group_size=self.row_group_size)
        self.rows += conformed.num_rows

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._writer.close()
