"""Readers of a dataset while ``latest`` moves between two builds: read through the link (the
baseline) against read through ``corpus.files.snapshot``, counting the reads that failed and those
that returned a mix of the two builds (or a part of one).

Two builds of a small Parquet dataset (8 and 5 shards of 100 rows, a ``build`` column naming
each) sit in fingerprint-like folders, written as stages write them (part names carry the build)
and, for the baseline, with the same part names in both; a thread moves ``latest`` between them the way a stage
does (``write_atomically``: a new link renamed onto the old), every ``--flip-ms`` milliseconds,
while the main thread reads the dataset with pandas for ``--seconds`` seconds each way.

    python -m benchmarks snapshot_reads --seconds 20
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from corpus.files import LATEST, snapshot, write_atomically
from corpus.outputs import partial_dir
from pipelines.io import write_part

SHARDS = {"first": 8, "second": 5}
ROWS_PER_SHARD = 100


def write_builds(root: Path, as_stages_do: bool) -> None:
    """Both builds in ``root``: as a stage writes them (``pipelines.io.write_part`` into the
    partial folder, then renamed: part names carry the build), or with the same part names in
    both builds (``part-NNNNN.parquet``, as every build was named before: the baseline)."""
    for build, shards in SHARDS.items():
        final = root / build
        folder = (partial_dir(final) if as_stages_do else final) / "corpus"
        folder.mkdir(parents=True)
        for shard in range(shards):
            table = pa.table({"build": [build] * ROWS_PER_SHARD, "row": np.arange(ROWS_PER_SHARD)})
            if as_stages_do:
                write_part(table, table.schema, str(folder), shard)
            else:
                pq.write_table(table, folder / f"part-{shard:05d}.parquet")
        if as_stages_do:
            partial_dir(final).rename(final)


def move_latest(root: Path, every: float, stop: threading.Event) -> None:
    """Point ``latest`` at each build in turn until ``stop``."""
    builds = list(SHARDS)
    turn = 0
    while not stop.is_set():
        turn += 1
        write_atomically(root / LATEST, lambda link, build=builds[turn % 2]: link.symlink_to(build))
        time.sleep(every)


def read_while_moving(root: Path, dataset: Callable[[], Path], seconds: float, every: float) -> dict[str, int]:
    """Reads of ``dataset()`` for ``seconds`` while ``latest`` moves: how many; how many raised
    (failed), returned rows of both builds (mixed), some rows of one (partial), or no rows and no
    columns (empty: pyarrow skips the files that vanish while it lists a folder)."""
    counts = {"reads": 0, "failed": 0, "mixed": 0, "partial": 0, "empty": 0}
    stop = threading.Event()
    mover = threading.Thread(target=move_latest, args=(root, every, stop))
    mover.start()
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            counts["reads"] += 1
            try:
                table = pd.read_parquet(dataset())
            except Exception:  # noqa: BLE001 - a failed read is what is counted
                counts["failed"] += 1
                continue
            if "build" not in table:
                counts["empty"] += 1
                continue
            builds = set(table.build)
            if len(builds) != 1:
                counts["mixed"] += 1
            elif len(table) != SHARDS[builds.pop()] * ROWS_PER_SHARD:
                counts["partial"] += 1
    finally:
        stop.set()
        mover.join()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks snapshot_reads", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20, help="reading time each way")
    parser.add_argument("--flip-ms", type=float, default=1, help="milliseconds between two moves of latest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        same_names, per_build = Path(folder) / "same-names", Path(folder) / "per-build"
        for root, as_stages_do in ((same_names, False), (per_build, True)):
            write_builds(root, as_stages_do)
            write_atomically(root / LATEST, lambda link: link.symlink_to("first"))
        ways = {"through latest, the same part names in both builds (baseline)": (same_names, lambda: same_names / LATEST / "corpus"),
                "through latest, part names per build (as stages write them)": (per_build, lambda: per_build / LATEST / "corpus"),
                "snapshot": (per_build, lambda: snapshot(per_build / LATEST / "corpus"))}
        print(f"| read | reads | failed | mixed | partial | empty |  (latest moved every {args.flip_ms:g} ms, {args.seconds:g} s each)")
        print("|---|---:|---:|---:|---:|---:|")
        for way, (root, dataset) in ways.items():
            counts = read_while_moving(root, dataset, args.seconds, args.flip_ms / 1000)
            print(f"| {way} | {' | '.join(str(counts[name]) for name in ('reads', 'failed', 'mixed', 'partial', 'empty'))} |", flush=True)


if __name__ == "__main__":
    main()
