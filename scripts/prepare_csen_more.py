"""Gather ../shared/data/csen-more into line-aligned ``<set>.cs`` / ``<set>.en`` files for IngestBitext
(``corpus.csen_more``: newstest2021, Multi30k test 2016/2018 and FLORES-200 devtest held out,
duplicates dropped).

Usage: ``python scripts/prepare_csen_more.py [--data ../shared/data] [--output work/csen-more]``,
then ``LUIGI_CONFIG_PATH=configs/csen-more.cfg luigi --module workflows BuildParaNMT --local-scheduler``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from corpus.csen_more import HELD_OUT_FOLDER, prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("PARANMT_SHARED_DATA", "../shared/data")))
    parser.add_argument("--output", type=Path, default=Path("work/csen-more"))
    args = parser.parse_args()
    counts = prepare(args.data, args.output)
    print(f"{'total':40s} {counts['pairs']:7d}  (dropped: {counts['held_out_overlaps']} held-out overlaps, "
          f"{counts['duplicates']} duplicates)")
    print(f"inputs: {args.output}/*.cs; held out for evaluation: {args.output}/{HELD_OUT_FOLDER}/*.cs and newstest2021")


if __name__ == "__main__":
    main()
