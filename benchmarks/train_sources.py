"""Training from several sources: memory and time of ``TrainEncoder --train-data`` at two sizes.

The pairs are the 250k real English paraphrase pairs of ../shared/tools/build_refpairs.py (a seeded
sample of each size). Per size, three ``luigi --module workflows TrainEncoder`` commands, each in
a fresh folder, one epoch of Word Avg (the defaults otherwise, no STS evaluation needed):

* the baseline: every pair in one TSV;
* the same pairs as two TSVs (``a.tsv,b.tsv``): two sources, read one after another;
* the first TSV whole and half of the second (``a.tsv,0.5=b.tsv``): a share drawn while reading.

Each row gives the command's wall time, the pairs it trained on (its ``training.json``) and
the peak memory of its whole process tree, sampled every ``--every`` seconds: several sources are
read in the same bounded batches as one, so the peaks should not grow with the sources or the
size beyond what the model and its token ids take.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.common import BUILD_REFPAIRS, machine, markdown_table, write_reference_pairs
from benchmarks.size import run_sampled, trained_pairs


def layouts(folder: Path, pairs: list[str]) -> dict[str, str]:
    """The ``--train-data`` value of each row, its TSV files written into ``folder``."""
    half = len(pairs) // 2
    for name, lines in (("all.tsv", pairs), ("a.tsv", pairs[:half]), ("b.tsv", pairs[half:])):
        (folder / name).write_text("".join(lines), encoding="utf-8")
    return {"one TSV (baseline)": f"{folder}/all.tsv", "two TSVs": f"{folder}/a.tsv,{folder}/b.tsv",
            "two TSVs, half of the second": f"{folder}/a.tsv,0.5={folder}/b.tsv"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="60000,240000", help="comma-separated numbers of pairs")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between memory samples")
    args = parser.parse_args()
    if not BUILD_REFPAIRS.exists():
        print(f"skipped: {BUILD_REFPAIRS} is absent (the reference pairs need ../shared)")
        return
    print(f"# Training from several sources ({machine()})\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="train-sources-") as scratch:
        for size in (int(text) for text in args.sizes.split(",")):
            folder = Path(scratch) / str(size)
            folder.mkdir()
            write_reference_pairs(folder / "refpairs.tsv", limit=size)
            pairs = (folder / "refpairs.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
            for label, train_data in layouts(folder, pairs).items():
                run = Path(tempfile.mkdtemp(prefix="run-", dir=folder))
                command = ["luigi", "--module", "workflows", "TrainEncoder", "--train-data", train_data, "--epochs", "1", "--local-scheduler"]
                wall, peak, _, code = run_sampled(command, run, dict(os.environ), args.every)
                trained = trained_pairs(run / "work") if not code else 0
                rows.append([f"{size:,}", label, f"{trained:,}", f"{wall:.0f}" if not code else f"failed ({code})", f"{peak / 2**30:.2f}"])
                print(" | ".join(rows[-1]), flush=True)
    print()
    print(markdown_table(["pairs", "training data", "pairs trained", "wall s", "peak GiB (process tree)"], rows))


if __name__ == "__main__":
    main()
