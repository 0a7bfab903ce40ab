"""Translations benchmark: ImportTranslations on N lines of one or two systems' translations, gzip against plain.

The text is real English: the 250k reference pairs of ../shared/tools/build_refpairs.py, numbered
into N distinct lines as the size benchmark numbers them (``benchmarks.size.distinct_pairs``).
One line-aligned input (``bitext.de`` foreign side, ``bitext.en`` its reference) and two systems'
translations of it, written once into ``--data`` as plain text and as gzip. Each size runs, as the
real ``luigi`` commands in one fresh folder: ``IngestBitext`` once, then ``ImportTranslations``
with the plain files (the baseline) and with the gzip files (`--formats`), the same bitext, at each
of ``--workers`` (DirectRunner processes; the import's output is removed between runs); the table
gives each stage's time (its manifest's), the command's wall time and the peak memory of its whole
process tree, the gzip/plain ratio at the same workers, and whether both gave the same pairs. A
user's translations usually come as one file (``--systems 1``): a gzip file was read by one worker
from end to end until the stage decompressed it once into a plain copy.

    python -m benchmarks translations --sizes 1000000,10000000 --data /scratch/translations-data
    python -m benchmarks translations --sizes 1000000 --systems 1 --workers 1,2,4
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import shutil
import tempfile
from pathlib import Path

from benchmarks.common import machine, markdown_table
from benchmarks.size import distinct_pairs, read_pairs, run_sampled, stage_seconds

SYSTEMS = ("alpha", "beta")


def generate(lines: int, data: Path) -> Path:
    """The input and both systems' plain translations of ``lines`` lines, written once."""
    target = data / f"translations-{lines}"
    done = target / ".complete"
    if done.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    pairs = read_pairs(data)
    files = {name: open(target / name, "w", encoding="utf-8") for name in ("bitext.de", "bitext.en", *(f"hyp.{s}.en" for s in SYSTEMS))}  # noqa: SIM115
    try:
        for _, english, other, _ in itertools.islice(distinct_pairs(pairs, lines), lines):
            files["bitext.de"].write(f"{other[::-1]}\n")  # a foreign side no system's text repeats
            files["bitext.en"].write(f"{english}\n")
            files["hyp.alpha.en"].write(f"{other}\n")
            files["hyp.beta.en"].write(f"{english.lower()}\n")
    finally:
        for handle in files.values():
            handle.close()
    done.write_text("")
    return target


def packed_copies(source: Path) -> None:
    """Both systems' translations as gzip beside the plain files, written once (only a run that
    measures gzip pays for them: at 25.7M lines they are minutes of one core)."""
    for system in SYSTEMS:
        packed = source / f"gz.{system}.en.gz"
        if packed.exists():
            continue
        partial = packed.with_suffix(".partial")
        with open(source / f"hyp.{system}.en", "rb") as plain, gzip.open(partial, "wb", compresslevel=6) as out:
            shutil.copyfileobj(plain, out, 1 << 20)
        partial.rename(packed)


def measure(lines: int, data: Path, runs: Path, every: float, workers: list[int], formats: tuple[str, ...], systems: tuple[str, ...]) -> list[list]:
    """The rows of one size: ingest, then at each of ``workers`` the import of each of ``formats``
    (plain, gzip) of ``systems``' translation files."""
    source = generate(lines, data)
    if "gzip" in formats:
        packed_copies(source)
    folder = Path(tempfile.mkdtemp(prefix=f"translations-{lines}-", dir=runs))
    common = ["--inputs", str(source / "bitext.de"), "--source-language", "de", "--local-scheduler"]
    files = {"plain": "hyp.{}.en", "gzip": "gz.{}.en.gz"}
    translations = {name: ",".join(f"{source}/bitext.de::{system}={source}/{pattern.format(system)}" for system in systems)
                    for name, pattern in files.items()}
    env = {**os.environ}
    rows = [run_row(lines, "ingest", "", ["IngestBitext", *common], folder, env, every, "ingest", {})]
    compared = len(formats) == 2
    for count in workers:
        seconds: dict[str, float | None] = {}
        for name in formats:
            shutil.rmtree(folder / "work" / "translations", ignore_errors=True)
            args = ["ImportTranslations", *common, "--translations", translations[name], "--paranmt-direct-num-workers", str(count)]
            rows.append(run_row(lines, name, str(count), args, folder, env, every, "translations", seconds))
            if compared:
                shutil.rmtree(folder / f"pairs-{name}", ignore_errors=True)
                shutil.copytree(folder / "work" / "translations" / "latest" / "pairs", folder / f"pairs-{name}", symlinks=False)
        rows[-1].append(same_pairs(folder / "pairs-plain", folder / "pairs-gzip") if compared else "")
    return rows


def run_row(lines: int, name: str, workers: str, args: list[str], folder: Path, env: dict, every: float, stage: str, seconds: dict) -> list[str]:
    """One ``luigi`` command's row: the stage's seconds (its manifest's), the wall time, the peak
    memory of the process tree, and for gzip its ratio to plain's seconds (``seconds``: this
    worker count's so far)."""
    wall, peak, _, code = run_sampled(["luigi", "--module", "workflows", *args], folder, env, every)
    seconds[name] = stage_seconds(folder / "work", stage) if not code else None
    ratio = f"{seconds[name] / seconds['plain']:.2f}" if name == "gzip" and seconds.get("plain") and seconds[name] else ""
    row = [f"{lines:,}", name, workers, f"{seconds[name]:.0f}" if seconds[name] is not None else f"failed ({code})", f"{wall:.0f}",
           f"{peak / 2**30:.2f}", ratio]
    print(" | ".join(row), flush=True)
    if code:
        raise SystemExit(f"{' '.join(args[:1])} failed ({code}); its folder: {folder}")
    return row


def same_pairs(plain: Path, packed: Path) -> str:
    """Whether the two imports' pairs are the same (the systems are named alike), part by part
    (both number a unit's part alike): a part of each in memory at a time (the two whole imports
    at 10M lines, 20M pairs, did not fit in 24 GB)."""
    import pyarrow.parquet as pq

    from pipelines.batches import shard_number

    def parts(folder: Path) -> dict[int, Path]:
        return {shard_number(str(path)): path for path in folder.glob("part-*.parquet")}

    ours, theirs = parts(plain), parts(packed)
    if ours.keys() != theirs.keys():
        return "PAIRS DIFFER (parts)"
    return "same pairs" if all(pq.read_table(ours[n]).equals(pq.read_table(theirs[n])) for n in sorted(ours)) else "PAIRS DIFFER"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks translations", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="Comma-separated line counts of the input.")
    parser.add_argument("--systems", type=int, choices=(1, 2), default=2, help="Translation files: one system's, or two.")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "paranmt-translations-data",
                        help="Where the generated files are kept between runs.")
    parser.add_argument("--runs", type=Path, default=Path(tempfile.gettempdir()) / "paranmt-translations-runs",
                        help="Where each run's folder is made.")
    parser.add_argument("--every", type=float, default=0.5, help="Seconds between memory samples.")
    parser.add_argument("--formats", default="plain,gzip",
                        help="Comma-separated: which imports to run (plain is the baseline; both to compare their pairs).")
    parser.add_argument("--workers", default="0", help="Comma-separated --paranmt-direct-num-workers of the imports (0: by input size).")
    args = parser.parse_args()
    formats = tuple(name for name in ("plain", "gzip") if name in args.formats.split(","))
    if not formats or set(args.formats.split(",")) - set(formats):
        parser.error(f"--formats takes plain, gzip or both, not {args.formats!r}")
    args.data.mkdir(parents=True, exist_ok=True)
    args.runs.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    workers = [int(count) for count in args.workers.split(",")]
    rows = [row for lines in (int(size) for size in args.sizes.split(","))
            for row in measure(lines, args.data, args.runs, args.every, workers, formats, SYSTEMS[:args.systems])]
    print(markdown_table(["lines", "command", "workers", "stage s", "wall s", "peak GiB (process tree)", "gzip / plain", "pairs"],
                         [row + [""] * (8 - len(row)) for row in rows]))


if __name__ == "__main__":
    main()
