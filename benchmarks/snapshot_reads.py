"""Readers of a dataset while ``latest`` moves between two builds: read through the link (the
baseline) against read through ``corpus.files.snapshot``, counting the reads that failed and those
that returned a mix of the two builds (or a part of one).

Two builds of a small Parquet dataset (8 and 5 shards of 100 rows, a ``build`` column naming
each) sit in fingerprint-like folders; a thread moves ``latest`` between them the way a stage
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

SHARDS = {"first": 8, "second": 5}
ROWS_PER_SHARD = 100


def write_builds(root: Path) -> None:
    for build, shards in SHARDS.items():
        folder = root / build / "corpus"
        folder.mkdir(parents=True)
        for shard in range(shards):
            pq.write_table(pa.table({"build": [build] * ROWS_PER_SHARD, "row": np.arange(ROWS_PER_SHARD)}), folder / f"part-{shard:05d}.parquet")


def move_latest(root: Path, every: float, stop: threading.Event) -> None:
    """Point ``latest`` at each build in turn until ``stop``."""
    builds = list(SHARDS)
    turn = 0
    while not stop.is_set():
        turn += 1
        write_atomically(root / LATEST, lambda link, build=builds[turn % 2]: link.symlink_to(build))
        time.sleep(every)


def read_while_moving(root: Path, dataset: Callable[[], Path], seconds: float, every: float) -> dict[str, int]:
    """Reads of ``dataset()`` for ``seconds`` while ``latest`` moves: how many, failed, mixed."""
    counts = {"reads": 0, "failed": 0, "mixed": 0}
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
            builds = set(table.build)
            if len(builds) != 1 or len(table) != SHARDS[builds.pop()] * ROWS_PER_SHARD:
                counts["mixed"] += 1
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
        root = Path(folder)
        write_builds(root)
        write_atomically(root / LATEST, lambda link: link.symlink_to("first"))
        ways = {"through latest (baseline)": lambda: root / LATEST / "corpus", "snapshot": lambda: snapshot(root / LATEST / "corpus")}
        print(f"| read | reads | failed | mixed or partial |  (latest moved every {args.flip_ms:g} ms, {args.seconds:g} s each)")
        print("|---|---:|---:|---:|")
        for way, dataset in ways.items():
            counts = read_while_moving(root, dataset, args.seconds, args.flip_ms / 1000)
            print(f"| {way} | {counts['reads']} | {counts['failed']} | {counts['mixed']} |", flush=True)


if __name__ == "__main__":
    main()
