"""Verified outputs benchmark: what recording and checking an output's files costs.

A generated dataset of Parquet shards (incompressible, ``--gib`` GiB in ``--shards`` files) is
written once, then, in the same run and on the same files (warm page cache):
  * read only: every byte read once and thrown away: the floor for any full checksum;
  * BLAKE2b, SHA-256: the two checksums the manifest could record (corpus.outputs uses SHA-256);
  * footers only: rows from each Parquet footer (what a footer-and-size check would cost);
  * manifest (first check): ``corpus.outputs.committed_files``, digests computed;
  * check again: ``corpus.outputs.damage`` with the digests cached per file version: what
    ``complete()`` costs on every later run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine, markdown_table

BLOCK = 1 << 22


def generate(folder: Path, gib: float, shards: int) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_shard, row_bytes = int(gib * 2**30 / shards), 1 << 16
    paths = []
    for shard in range(shards):
        rows = [os.urandom(row_bytes) for _ in range(max(1, per_shard // row_bytes))]
        path = folder / "pairs" / f"part-{shard:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"blob": pa.array(rows, pa.binary())}), path, compression="none")
        paths.append(path)
    return paths


def read_all(paths: list[Path], digest=None) -> None:
    for path in paths:
        with open(path, "rb") as handle:
            while block := handle.read(BLOCK):
                if digest is not None:
                    digest.update(block)


def footers(paths: list[Path]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in paths)


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=2.0, help="Size of the generated dataset in GiB.")
    parser.add_argument("--shards", type=int, default=64, help="Parquet files it is written as.")
    args = parser.parse_args()

    from corpus.outputs import committed_files, damage

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PARANMT_CACHE"] = str(Path(tmp) / "cache")  # digests computed here, not found
        output = Path(tmp) / "output"
        paths = generate(output, args.gib, args.shards)
        size = sum(path.stat().st_size for path in paths) / 2**30
        manifest: dict = {}
        rows = [
            ["read only (baseline)", timed(lambda: read_all(paths))],
            ["BLAKE2b (digest_size 16)", timed(lambda: read_all(paths, hashlib.blake2b(digest_size=16)))],
            ["SHA-256", timed(lambda: read_all(paths, hashlib.sha256()))],
            ["footers only (rows)", timed(lambda: footers(paths))],
            ["manifest: committed_files (first check)", timed(lambda: manifest.update(committed_files(output)))],
            ["check again: damage (digests cached)", timed(lambda: damage(output, manifest))],
        ]
    print(f"Machine: {machine()}; {size:.2f} GiB in {len(paths)} Parquet files, warm page cache\n")
    print(markdown_table(["what", "seconds", "GiB/s"], [[name, seconds, size / seconds] for name, seconds in rows]))


if __name__ == "__main__":
    main()
