"""Translations benchmark: ImportTranslations on N lines of two systems' translations, gzip against plain.

The text is real English: the 250k reference pairs of ../shared/tools/build_refpairs.py, numbered
into N distinct lines as the size benchmark numbers them (``benchmarks.size.distinct_pairs``).
One line-aligned input (``bitext.de`` foreign side, ``bitext.en`` its reference) and two systems'
translations of it, written once into ``--data`` as plain text and as gzip. Each size runs, as the
real ``luigi`` commands in one fresh folder: ``IngestBitext`` once, then ``ImportTranslations``
with the plain files (the baseline) and with the gzip files (`--formats`), the same bitext; the table gives each
stage's time (its manifest's), the command's wall time and the peak memory of its whole process
tree, the gzip/plain ratio, and whether both gave the same pairs.

    python -m benchmarks translations --sizes 1000000,10000000 --data /scratch/translations-data
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


def measure(lines: int, data: Path, runs: Path, every: float, workers: int, formats: tuple[str, ...]) -> list[list]:
    """The rows of one size: ingest, then the import of each of ``formats`` (plain, gzip)."""
    source = generate(lines, data)
    if "gzip" in formats:
        packed_copies(source)
    folder = Path(tempfile.mkdtemp(prefix=f"translations-{lines}-", dir=runs))
    common = ["--inputs", str(source / "bitext.de"), "--source-language", "de", "--local-scheduler", "--paranmt-direct-num-workers", str(workers)]
    imports = {
        "plain": ["ImportTranslations", *common, "--translations", f"{source}/bitext.de::{source}/hyp.*.en"],
        "gzip": ["ImportTranslations", *common, "--translations", f"{source}/bitext.de::{source}/gz.*.en.gz"],
    }
    commands = {"ingest": ["IngestBitext", *common]} | {name: imports[name] for name in formats}
    compared = len(formats) == 2
    rows, seconds = [], {}
    env = {**os.environ}
    for name, args in commands.items():
        wall, peak, _, code = run_sampled(["luigi", "--module", "workflows", *args], folder, env, every)
        stage = "ingest" if name == "ingest" else "translations"
        seconds[name] = stage_seconds(folder / "work", stage)
        if name != "ingest" and compared:
            pairs = folder / "work" / stage / "latest" / "pairs"
            shutil.copytree(pairs, folder / f"pairs-{name}", symlinks=False)
        ratio = f"{seconds[name] / seconds['plain']:.2f}" if name == "gzip" and seconds.get("plain") else ""
        rows.append([f"{lines:,}", name, f"{seconds[name]:.0f}" if seconds[name] is not None else f"failed ({code})", f"{wall:.0f}",
                     f"{peak / 2**30:.2f}", ratio])
        print(" | ".join(rows[-1]), flush=True)
        if code:
            break
    rows[-1].append(same_pairs(folder / "pairs-plain", folder / "pairs-gzip") if compared and len(rows) == 3 else "")
    return rows


def same_pairs(plain: Path, packed: Path) -> str:
    """Whether the two imports' pairs are the same but for the system's name (in its column and
    id), part by part (both number a unit's part alike): a part of each in memory at a time (the
    two whole imports at 10M lines, 20M pairs, did not fit in 24 GB)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from pipelines.batches import shard_number

    def parts(folder: Path) -> dict[int, Path]:
        return {shard_number(str(path)): path for path in folder.glob("part-*.parquet")}

    def renamed(path: Path):
        table = pq.read_table(path)
        system = pc.replace_substring(table.column("system"), "gz.", "hyp.")
        pair_id = pc.binary_join_element_wise(pc.list_element(pc.split_pattern(table.column("id"), "~", max_splits=1, reverse=True), 0), system, "~")
        return table.set_column(table.schema.get_field_index("id"), "id", pair_id).drop_columns(["system"])

    ours, theirs = parts(plain), parts(packed)
    if ours.keys() != theirs.keys():
        return "PAIRS DIFFER (parts)"
    return "same pairs" if all(renamed(ours[n]).equals(renamed(theirs[n])) for n in sorted(ours)) else "PAIRS DIFFER"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks translations", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="Comma-separated line counts of the input (two systems each).")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "paranmt-translations-data", help="Where the generated files are kept between runs.")
    parser.add_argument("--runs", type=Path, default=Path(tempfile.gettempdir()) / "paranmt-translations-runs", help="Where each run's folder is made.")
    parser.add_argument("--every", type=float, default=0.5, help="Seconds between memory samples.")
    parser.add_argument("--formats", default="plain,gzip", help="Comma-separated: which imports to run (plain is the baseline; both to compare their pairs).")
    parser.add_argument("--workers", type=int, default=0, help="--paranmt-direct-num-workers (0: by input size).")
    args = parser.parse_args()
    formats = tuple(name for name in ("plain", "gzip") if name in args.formats.split(","))
    if not formats or set(args.formats.split(",")) - set(formats):
        parser.error(f"--formats takes plain, gzip or both, not {args.formats!r}")
    args.data.mkdir(parents=True, exist_ok=True)
    args.runs.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    rows = [row for lines in (int(size) for size in args.sizes.split(",")) for row in measure(lines, args.data, args.runs, args.every, args.workers, formats)]
    print(markdown_table(["lines", "command", "stage s", "wall s", "peak GiB (process tree)", "gzip / plain", "pairs"], [row + [""] * (7 - len(row)) for row in rows]))


if __name__ == "__main__":
    main()
