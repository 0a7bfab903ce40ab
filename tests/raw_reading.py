"""The records and rejects of one raw input as the ingest pipeline reads them, shard after shard,
without Beam: what the reading tests compare against."""

from collections.abc import Iterator

from corpus.readers import InputUnit
from pipelines.rawshards import DEFAULT_SHARD_ROWS, RawFormat, parse_shard, plan_shards, shard_lines


def read_unit(fmt: RawFormat, unit: InputUnit, max_line_bytes: int, shard_rows: int = DEFAULT_SHARD_ROWS) -> Iterator:
    """Every record and Reject of one input, shard after shard, as the pipeline reads them."""
    for task in plan_shards([unit], shard_rows).tasks:
        for shard, lines in shard_lines(task):
            yield from parse_shard(fmt, task.unit, shard, lines, max_line_bytes)
