"""Dataset files through Beam's filesystems (local, gs://, hdfs:// …), plus manifest counts."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus.outputs import build_of, reading


def part_path(dataset_dir: str, shard: int) -> str:
    """``part-NNNNN-<build>.parquet``: the shard's number, and the fingerprint of the output being
    built (``corpus.outputs.build_of``), so that no two builds have a file of the same name."""
    build = build_of(dataset_dir)
    return FileSystems.join(dataset_dir, f"part-{shard:05d}{'-' + build if build else ''}.parquet")


def write_part(table: pa.Table, schema: pa.Schema, dataset_dir: str, shard: int) -> int:
    """Write one shard of a dataset; rewriting it (a retried bundle) gives the same bytes."""
    with part_writer(dataset_dir, shard, schema) as writer:
        writer.write(table)
    return writer.rows


def write_part_atomically(table: pa.Table, schema: pa.Schema, dataset_dir: str, shard: int) -> int:
    """Write a shard under a temporary name and rename it, so a ``part-*`` file is always whole."""
    final = part_path(dataset_dir, shard)
    temporary = FileSystems.join(dataset_dir, f".tmp-{uuid.uuid4().hex}-part-{shard:05d}")
    with FileSystems.create(temporary) as handle:
        rows = schemas.write_table(table, schema, handle)
    if FileSystems.exists(final):
        FileSystems.delete([final])
    FileSystems.rename([temporary], [final])
    return rows


def remove_temporaries(dataset_dir: str) -> None:
    """Delete half-written temporary parts left by a killed run (write_part_atomically)."""
    pattern = FileSystems.join(dataset_dir, ".tmp-*")
    stale = [meta.path for match in FileSystems.match([pattern]) for meta in match.metadata_list]
    if stale:
        FileSystems.delete(stale)


@contextmanager
def part_writer(dataset_dir: str, shard: int, schema: pa.Schema) -> Iterator[schemas.TableWriter]:
    """Write one shard a table at a time (``schemas.TableWriter``); same rows, same bytes."""
    with FileSystems.create(part_path(dataset_dir, shard)) as handle, schemas.TableWriter(handle, schema) as writer:
        yield writer


def dataset_files(dataset_dir: str) -> list[str]:
    pattern = FileSystems.join(dataset_dir, "**part-*.parquet")
    return sorted(meta.path for match in FileSystems.match([pattern]) for meta in match.metadata_list)


def ensure_nonempty(dataset_dir: str, schema: pa.Schema) -> None:
    """Give an empty dataset one empty part, so readers see its columns instead of failing."""
    if not dataset_files(dataset_dir):
        write_part(schema.empty_table(), schema, dataset_dir, 0)


def file_rows(paths: list[str] | tuple[str, ...]) -> int:
    """Rows in Parquet files, from their footers alone."""
    return sum(rows_of_files(paths).values())


def rows_of_files(paths: list[str] | tuple[str, ...]) -> dict[str, int]:
    """Each Parquet file's rows, from its footer alone."""
    rows = {}
    for path in paths:
        with reading(path), FileSystems.open(path) as handle:
            rows[path] = pq.ParquetFile(handle).metadata.num_rows
    return rows


def rows_of_parts(dataset_dir: str) -> dict[str, int]:
    """Each part of a dataset with its rows, from the footers alone."""
    return rows_of_files(dataset_files(dataset_dir))


def null_rows(paths: list[str] | tuple[str, ...], column: str) -> int:
    """Rows whose ``column`` is null in Parquet files, from their footers' statistics alone."""
    total = 0
    for path in paths:
        with reading(path), FileSystems.open(path) as handle:
            metadata = pq.ParquetFile(handle).metadata
            index = metadata.schema.to_arrow_schema().get_field_index(column)
            for group in range(metadata.num_row_groups):
                statistics = metadata.row_group(group).column(index).statistics
                total += statistics.null_count if statistics is not None and statistics.has_null_count else metadata.row_group(group).num_rows
    return total


def dataset_rows(dataset_dir: str) -> int:
    """Row count of a dataset, from its parts' footers alone."""
    return file_rows(dataset_files(dataset_dir))


class RowsLost(RuntimeError):
    """A stage wrote other than the rows it read: a runner or a step lost or repeated some."""


def check_rows(stage: str, written: int, expected: int, what: str) -> None:
    """Refuse to commit a stage whose output does not account for every row (RowsLost), so no
    runner, present or future, can finish a stage with rows silently missing."""
    if written != expected:
        raise RowsLost(f"{stage}: {written} rows written for {expected} {what}; some were lost or repeated on the way, "
                       "nothing was committed")


def rejects_by_reason(rejects_dir: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for (_, reason), count in rejects_by_source_and_reason(rejects_dir).items():
        counts[reason] += count
    return dict(sorted(counts.items()))


def rejects_by_source_and_reason(rejects_dir: str) -> dict[tuple[str, str], int]:
    """Rejects counted by (source, reason), a column chunk at a time."""
    counts: Counter[tuple[str, str]] = Counter()
    for path in dataset_files(rejects_dir):
        with reading(path), FileSystems.open(path) as handle:
            table = pq.read_table(handle, columns=["source", "reason"])
        grouped = table.group_by(["source", "reason"]).aggregate([([], "count_all")])
        counts.update(dict(zip(zip(grouped.column("source").to_pylist(), grouped.column("reason").to_pylist(), strict=True),
                               grouped.column("count_all").to_pylist(), strict=True)))
    return dict(sorted(counts.items()))
