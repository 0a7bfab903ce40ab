"""A seeded sample of line-aligned pairs (``x.cs`` with ``x.en`` beside it): the same pairs for the
same files and seed, whatever their order, for experiments that cannot decode a whole bitext.

Usage: ``python scripts/sample_bitext.py 'work/csen-more/*.cs' --count 20000 --seed 1 --output work/csen-sample``
writes ``<output>/sample.cs`` and ``sample.en`` (``--english en``: the English files' suffix). A pair is
kept when its key, BLAKE2b of the seed, the file's name and the line number, is among the ``count``
smallest: memory holds ``count`` pairs, not the bitext.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import heapq
from pathlib import Path


def sample(files: list[Path], english: str, count: int, seed: int) -> list[tuple[str, str]]:
    """The ``count`` pairs of smallest key (see the module), in the files' and lines' order."""
    kept: list[tuple[int, str, int, str, str]] = []  # a max-heap by key: (-key, file, line, foreign, english)
    for file in sorted(files):
        other = file.with_suffix(f".{english}")
        with file.open(encoding="utf-8") as foreign_lines, other.open(encoding="utf-8") as english_lines:
            for number, (foreign, en) in enumerate(zip(foreign_lines, english_lines, strict=True), start=1):
                key = int.from_bytes(hashlib.blake2b(f"{seed}\t{file.name}\t{number}".encode(), digest_size=8).digest(), "big")
                item = (-key, file.name, number, foreign.rstrip("\n"), en.rstrip("\n"))
                if len(kept) < count:
                    heapq.heappush(kept, item)
                elif -key > kept[0][0]:
                    heapq.heapreplace(kept, item)
    return [(foreign, en) for _, _, _, foreign, en in sorted(kept, key=lambda item: (item[1], item[2]))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("foreign", help="the foreign files, a glob (quote it)")
    parser.add_argument("--english", default="en", help="the English files' suffix")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    files = [Path(path) for path in glob.glob(args.foreign)]
    if not files:
        raise SystemExit(f"{args.foreign}: no such files")
    pairs = sample(files, args.english, args.count, args.seed)
    args.output.mkdir(parents=True, exist_ok=True)
    suffix = files[0].suffix
    (args.output / f"sample{suffix}").write_text("".join(f"{foreign}\n" for foreign, _ in pairs), encoding="utf-8")
    (args.output / f"sample.{args.english}").write_text("".join(f"{en}\n" for _, en in pairs), encoding="utf-8")
    print(f"{len(pairs)} pairs of {len(files)} file(s) → {args.output}/sample{suffix}, sample.{args.english}")


if __name__ == "__main__":
    main()
