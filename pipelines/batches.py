"""Reading datasets as Arrow record batches inside Beam workers, and ranking keys of a batch."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus.deciles import check_scores
from corpus.ids import id_hashes
from corpus.outputs import reading, streamed_parquet

# Rows read from Parquet, and pairs scored, a vectorized batch at a time (the --batch-rows of ScorePairs).
VECTORIZED_BATCH_ROWS = 16_384
_PARTITION = re.compile(r"(?:^|/)([A-Za-z_]\w*)=(-?\d+)(?=/)")
_PART = re.compile(r"part-(\d+)(?:-[^/.]+)?\.parquet$")

Keys = dict[str, tuple[np.ndarray, np.ndarray]]


def shard_number(path: str) -> int:
    """The NNNNN of ``.../part-NNNNN[-<build>].parquet``: outputs keep their input shard's number."""
    match = _PART.search(os.path.basename(path))
    if not match:
        raise ValueError(f"{path}: not a dataset part (part-NNNNN.parquet)")
    return int(match.group(1))


def partition_values(path: str) -> dict[str, int]:
    """Hive partition keys in a file's path, e.g. ``{"decile_pp": 9}`` for ``…/decile_pp=9/part-0.parquet``."""
    return {name: int(value) for name, value in _PARTITION.findall(path.replace(os.sep, "/"))}


def iter_tables(path: str, columns: list[str] | None = None, batch_rows: int = VECTORIZED_BATCH_ROWS) -> Iterator[pa.Table]:
    """A Parquet file as tables of at most ``batch_rows`` rows, with today's columns (a file
    written by 0.3 is read whole and upgraded: ``schemas.upgraded``); hive partition keys from
    the path are added as int8 columns when asked for in ``columns``."""
    partitions = partition_values(path)
    stored = None if columns is None else [c for c in columns if c not in partitions]
    with reading(path), FileSystems.open(path) as handle:
        parquet = streamed_parquet(handle)
        names = parquet.schema_arrow.names
        old = schemas.upgraded_names(names) != names
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=None if old else stored):
            table = pa.Table.from_batches([batch])
            if old:
                table = schemas.upgraded(table)
                table = table if stored is None else table.select([c for c in stored if c in table.column_names])
            for name, value in partitions.items():
                if columns is not None and name in columns:
                    table = table.append_column(name, pa.array(np.full(table.num_rows, value, dtype=np.int8)))
            yield table


def shard_files(paths: list[str]) -> dict[int, str]:
    """Each dataset file by its shard number (``shard_number``)."""
    return {shard_number(path): path for path in paths}


def with_pairs(scored_path: str, pairs_path: str, batch_rows: int = VECTORIZED_BATCH_ROWS) -> Iterator[pa.Table]:
    """A ``scored`` shard's batches joined to their pairs: ``pairs_path``, the ``pairs`` shard of
    the same number, holds the same rows in the same order (ScorePairs writes them so), so
    equal-sized batches of the two files line up; their ids are compared, so a shard scored from
    other pairs fails."""
    pairs = iter_tables(pairs_path, batch_rows=batch_rows)
    for scored in iter_tables(scored_path, batch_rows=batch_rows):
        rows = next(pairs, None)
        if rows is None or not rows.column("id").equals(scored.column("id")):
            raise ValueError(f"{scored_path} does not score the rows of {pairs_path} in their order: score the pairs again")
        for name in scored.column_names:
            if name not in rows.column_names:
                rows = rows.append_column(name, scored.column(name))
        yield rows


@dataclass(frozen=True)
class IdKeys:
    """Ranking keys of a batch: for each name, (score column, 64-bit hash of the id).

    ``score`` None ranks by the hash alone (a seeded random order); a ``salt`` hashes
    ``salt + id`` instead of the id, so different seeds give independent orders. Datasets that
    have scores store the id's hash (``id_hash``); ``stored_hash`` reads it instead of hashing.
    """

    scores: tuple[tuple[str, str | None], ...]
    salt: str = ""
    stored_hash: bool = False

    def __post_init__(self):
        if self.salt and self.stored_hash:
            raise ValueError("a salted hash is not the stored one")

    @property
    def columns(self) -> list[str]:
        return ["id_hash" if self.stored_hash else "id", *(column for _, column in self.scores if column)]

    def __call__(self, table: pa.Table) -> Keys:
        if self.stored_hash:
            hashes = table.column("id_hash").to_numpy()
        else:
            ids = table.column("id").to_pylist()
            hashes = id_hashes(f"{self.salt}{pair_id}" for pair_id in ids) if self.salt else id_hashes(ids)
        keys = {}
        for name, column in self.scores:
            if column is None:
                keys[name] = (np.zeros(len(hashes)), hashes)
                continue
            ranked = ranked_rows(table, column)
            values = table.column(column).to_numpy(zero_copy_only=False).astype(np.float64)[ranked]
            check_scores(values, column)
            keys[name] = (values, hashes[ranked])
        return keys


def ranked_rows(table: pa.Table, column: str) -> np.ndarray:
    """The rows a score ranks: those where it is not null (Kendall τ is null below two shared
    words; such a pair has no rank and no decile of that score)."""
    values = table.column(column)
    return np.ones(len(values), bool) if values.null_count == 0 else values.is_valid().to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class RankingInput:
    """What a ranking pass reads: files, the keys of their rows, and an optional row filter.

    ``row_filter`` is a picklable callable (table → bool mask) with a ``columns`` attribute.
    """

    files: tuple[str, ...]
    keys: IdKeys
    row_filter: Callable[[pa.Table], np.ndarray] | None = None

    def tables(self, path: str, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """Filtered batches of one file with ``columns`` and what the keys and the filter read."""
        wanted = list(dict.fromkeys([*(columns or []), *self.keys.columns, *getattr(self.row_filter, "columns", [])]))
        for table in iter_tables(path, wanted):
            kept = table if self.row_filter is None else table.filter(pa.array(self.row_filter(table)))
            if kept.num_rows:
                yield kept

    def keys_of(self, path: str) -> Iterator[Keys]:
        for table in self.tables(path):
            yield self.keys(table)
