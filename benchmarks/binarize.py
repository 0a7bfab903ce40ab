"""Binarization benchmark: csen-more's real pairs into fairseq's ``data-bin``, before and after.

Rows, each run in a fresh process, interleaved over ``--repeats`` rounds on the same shards:
  * text route (the baseline, what TrainTranslator did before): ``export_pieces`` in one
    process, then ``fairseq-preprocess --workers N``; each step is shown too;
  * ``binarize_bitext`` in one process (sentencepiece's own threads);
  * ``binarize_bitext`` with N processes, one shard each: the stage as it runs.
N is the number of cores. Seconds are the median of the rounds, fairseq's import included (in
fairseq-preprocess; shown apart for binarize_bitext). Every data-bin is compared byte for byte with the baseline's (its
``preprocess.log`` aside). The bitext is made as a user makes it: ``scripts/prepare_csen_more.py``,
then IngestBitext and TrainSentencePiece with ``configs/csen-more.cfg`` (16 shards, a 16k joint
vocabulary); ``--workdir`` reuses a work directory that has them. Skipped when ../shared/data
is absent.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import SHARED, machine, markdown_table, measure_in_subprocess

REPO = Path(__file__).resolve().parents[1]
MAX_PIECES = 511  # the small preset's positions, less one
VALID_SIZE = 2000  # configs/csen-more.cfg


def prepare(workdir: Path) -> None:
    """csen-more's pairs, ingested and with their sentencepiece model, as configs/csen-more.cfg makes them."""
    subprocess.run([sys.executable, "scripts/prepare_csen_more.py", "--data", str(SHARED), "--output", str(workdir / "csen-more")],
                   cwd=REPO, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "luigi", "--module", "workflows", "TrainSentencePiece", "--local-scheduler",
                    "--inputs", str(workdir / "csen-more" / "*.cs"), "--paranmt-workdir", str(workdir)],
                   cwd=REPO, env={**os.environ, "LUIGI_CONFIG_PATH": "configs/csen-more.cfg"}, check=True, capture_output=True)


def measure(mode: str, workdir: Path, output: Path, workers: int) -> None:
    """Child-process entry: binarize once by ``mode`` into ``output`` and print its JSON line."""
    from models.nmt import binarize, spm

    files = sorted(str(path) for path in (workdir / "ingest" / "latest" / "bitext").glob("part-*.parquet"))
    model = workdir / "nmt-spm" / "latest" / "spm.model"
    started = time.perf_counter()
    if mode == "text":
        codec = spm.Codec(model)
        counts = binarize.export_pieces(files, codec, codec, output / "text", VALID_SIZE, MAX_PIECES)
        exported = time.perf_counter()
        dictionary = output / "dict.txt"
        dictionary.write_text("".join(line + "\n" for line in spm.fairseq_dictionary(model)))
        binarize.preprocess_pieces(output / "text", dictionary, dictionary, output / "data-bin", workers)
        (output / "data-bin" / "preprocess.log").unlink()
        steps = {"export": exported - started, "preprocess": time.perf_counter() - exported}
    else:
        import fairseq.data  # noqa: F401 - binarize_bitext's own import, timed apart

        imported = time.perf_counter()
        counts = binarize.binarize_bitext(files, {"cs": model, "en": model}, output / "data-bin", VALID_SIZE, MAX_PIECES, workers)
        steps = {"import": imported - started}
    print(json.dumps({"pairs": counts["train"] + counts["valid"], "seconds": time.perf_counter() - started, **steps}))


def same_bytes(first: Path, second: Path) -> bool:
    names = sorted(path.name for path in first.iterdir())
    return names == sorted(path.name for path in second.iterdir()) and \
        sorted(filecmp.cmpfiles(first, second, names, shallow=False)[0]) == names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="a work directory with ingest/latest/bitext and nmt-spm/latest/spm.model")
    parser.add_argument("--measure", choices=["text", "ids"], help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.workdir, args.output, args.workers)
        return
    if not args.workdir and not (SHARED / "csen-more").exists():
        print(f"skipped: the real csen-more pairs are not available ({SHARED / 'csen-more'} is absent)")
        return
    cores = os.cpu_count() or 1
    routes = {"text": ("text", cores), "ids-1": ("ids", 1), "ids-n": ("ids", cores)}
    with tempfile.TemporaryDirectory(prefix="binarize-bench-") as tmp:
        workdir = args.workdir or Path(tmp) / "work"
        if not args.workdir:
            prepare(workdir)
        results: dict[str, list[dict]] = {name: [] for name in routes}
        for repeat in range(args.repeats):
            for name, (mode, workers) in routes.items():
                output = Path(tmp) / f"{name}-{repeat}"
                result = measure_in_subprocess("benchmarks.binarize", "--measure", mode, "--workdir", str(workdir),
                                               "--output", str(output), "--workers", str(workers))
                result["same"] = same_bytes(output / "data-bin", Path(tmp) / f"text-{repeat}" / "data-bin")
                results[name].append(result)
    median = {name: {key: statistics.median(r[key] for r in runs) for key in runs[0] if key != "same"}
              for name, runs in results.items()}
    base = median["text"]["seconds"]
    pairs = int(median["text"]["pairs"])

    def row(label: str, seconds: float, same: str) -> list:
        return [label, f"{pairs:,}", seconds, pairs / seconds, base / seconds if same else "", same]

    identical = {name: "yes" if all(r["same"] for r in runs) else "**no**" for name, runs in results.items()}
    rows = [
        row(f"text route (baseline): export_pieces, 1 process + fairseq-preprocess --workers {cores}", base, "(reference)"),
        row("  of which export_pieces", median["text"]["export"], ""),
        row("  of which fairseq-preprocess", median["text"]["preprocess"], ""),
        row("binarize_bitext, 1 process", median["ids-1"]["seconds"], identical["ids-1"]),
        row(f"binarize_bitext, {cores} processes", median["ids-n"]["seconds"], identical["ids-n"]),
        ["  of which importing fairseq", "", median["ids-n"]["import"], "", "", ""],
    ]
    every = {name: ", ".join(f"{r['seconds']:.2f}" for r in runs) for name, runs in results.items()}
    print(f"Binarization of csen-more ({pairs:,} pairs kept, 16 shards, 16k joint pieces) on {machine()}, "
          f"median of {args.repeats} interleaved rounds\n")
    print(markdown_table(["route", "pairs", "seconds", "pairs/s", "× baseline", "data-bin bytes as the baseline's"], rows))
    print("\nevery round, seconds: " + "; ".join(f"{name}: {times}" for name, times in every.items()))


if __name__ == "__main__":
    main()
