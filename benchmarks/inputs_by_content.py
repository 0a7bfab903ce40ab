"""What knowing an input by its bytes costs: a stage's fingerprint over a large input, first and
later runs, beside a plain read of the same file in the same run.

A CzEng-format file of ``--gigabytes`` (the demo corpus's lines repeated) is written once; each row
runs in a fresh process:
  * plain read (the baseline): the file read in 4 MiB blocks, nothing done with them;
  * first run: ``IngestBitext(inputs=FILE).fingerprint()`` with an empty per-machine cache (the
    file's SHA-256 is computed);
  * later run: the same, the cache kept (the digest is found by the file's version: one ``stat``);
  * the same bytes at another path (a copy: another mount, another machine): its first run,
    then its fingerprint compared with the original's.
The file is in the page cache when read (just written); ``--cold`` drops the page cache before
each row where the system allows it (root, /proc/sys/vm/drop_caches).

    python -m benchmarks inputs_by_content --gigabytes 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine, markdown_table, measure_in_subprocess

BLOCK = 1 << 22


def write_input(path: Path, gigabytes: float) -> int:
    """A CzEng-format file of about ``gigabytes`` (the demo corpus's lines, their ids numbered on)."""
    from workflows.ingest import demo_corpus

    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        lines = [line.split("\t", 1)[1] for line in handle]
    target, written, number = gigabytes * 1e9, 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while written < target:
            block = "".join(f"news-b{number}-{i}\t{line}" for i, line in enumerate(lines))
            out.write(block)
            written += len(block.encode())
            number += 1
    return path.stat().st_size


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


def measure(mode: str, path: str) -> None:
    """One row, in this process (its imports before the clock starts): prints a JSON line."""
    from workflows.ingest import IngestBitext

    started = time.perf_counter()
    if mode == "read":
        with open(path, "rb") as handle:
            while handle.read(BLOCK):
                pass
        fingerprint = ""
    else:
        fingerprint = IngestBitext(inputs=path).fingerprint()
    print(json.dumps({"seconds": time.perf_counter() - started, "fingerprint": fingerprint}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, default=2.0)
    parser.add_argument("--folder", type=Path, default=None, help="where the input is written (default: a temporary folder)")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each row (root only)")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        first, moved = Path(tmp, "node-a", "czeng.train"), Path(tmp, "mnt", "node-b", "czeng.train")
        first.parent.mkdir(parents=True)
        moved.parent.mkdir(parents=True)
        size = write_input(first, args.gigabytes)
        cache = {"PARANMT_CACHE": str(Path(tmp, "cache"))}

        def row(name: str, mode: str, path: Path) -> list:
            cold = args.cold and drop_page_cache()
            result = measure_in_subprocess("benchmarks.inputs_by_content", "--measure", mode, str(path), env=cache)
            seconds = result["seconds"]
            return [name + (" (page cache dropped)" if cold else ""), seconds, size / seconds / 1e6, result["fingerprint"]]

        rows = [row("plain read (baseline)", "read", first), row("fingerprint, first run (empty cache)", "fingerprint", first),
                row("fingerprint, later run", "fingerprint", first)]
        shutil.copyfile(first, moved)
        rows += [row("the same bytes at another path, first run", "fingerprint", moved),
                 row("the same bytes at another path, later run", "fingerprint", moved)]
    same = len({fingerprint for *_, fingerprint in rows[1:]}) == 1
    print(f"{size / 1e9:.2f} GB input; {machine()}")
    print(markdown_table(["row", "seconds", "MB/s", "IngestBitext fingerprint"], rows))
    print(f"\nthe same fingerprint at both paths: {same}")


if __name__ == "__main__":
    main()
