"""Ingest benchmark: one generated 1M-pair CzEng file (gzip, as CzEng comes) through the ingest.

Rows, in one run on the same file:
  * pyarrow read + write: the file parsed by pyarrow's CSV reader and written as Parquet
    (no validation, no tokenization): the floor for moving the bytes;
  * plain Python, 1 process: the same readers, Moses tokenization and schema-validated Parquet
    writing as the pipeline, without Beam: the baseline for Beam's overhead;
  * Beam, the gzip file read through by one worker: the shard plan without a plain copy (how the
    stage read one gzip file before 2026-12-04), all cores' DirectRunner;
  * IngestBitext, the real ``luigi`` command, on the gzip file and on the same file decompressed,
    at each of ``--stage-workers``: the stage's seconds (its manifest's), the command's peak memory
    (process tree), gzip ÷ plain at the same workers, and whether both gave the same rows.

    python -m benchmarks ingest --pairs 1000000 --stage-workers 1,2,4
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine, markdown_table, measure_in_subprocess, peak_rss_mib
from benchmarks.size import run_sampled, stage_seconds

WORDS_EN = "the a of to and in is was for on that with as it by at from this be are have not an new year people".split()
WORDS_CS = "a v se na je že s z do o to i k by jako pro tak jsou ale po roce lidé nový který".split()


def generate(path: Path, pairs: int, seed: int = 0) -> None:
    """CzEng-format pairs with realistic lengths (3–40 words) and punctuation."""
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as handle:
        for n in range(pairs):
            length = rng.randint(3, 40)
            cs = " ".join(rng.choices(WORDS_CS, k=length)).capitalize() + rng.choice([".", "?", "!", ", řekl."])
            en = " ".join(rng.choices(WORDS_EN, k=length)).capitalize() + rng.choice([".", "?", "!", ", he said."])
            handle.write(f"news-b{n // 100_000}-00train-f{n // 100:05d}-s{n % 100}\t{rng.random():.4f}\t{cs}\t{en}\n")


def run_pyarrow(source: Path, out: Path) -> int:
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    table = csv.read_csv(
        source,
        read_options=csv.ReadOptions(column_names=["id", "czeng_score", "cs", "en"]),
        parse_options=csv.ParseOptions(delimiter="\t", quote_char=False),
    )
    pq.write_table(table, out / "bitext.parquet", compression="zstd")
    return table.num_rows


def run_plain_python(source: Path, out: Path) -> int:
    import pyarrow as pa

    import schemas
    from corpus.readers import BitextRecord, iter_czeng
    from corpus.text import english_tokens

    with gzip.open(source, "rb") as handle:
        records = [r for r in iter_czeng(handle, source.name) if isinstance(r, BitextRecord)]
    records.sort(key=lambda r: r.id)
    en_tok = english_tokens(r.en for r in records)
    table = pa.table({
        "id": [r.id for r in records], "source": [r.source for r in records], "line": [r.line for r in records],
        "domain": [r.domain for r in records], "czeng_score": [r.czeng_score for r in records],
        "pivot": [r.pivot for r in records], "foreign": [r.foreign for r in records], "en": [r.en for r in records], "en_tok": en_tok,
        "en_n_tokens": [len(t.split()) for t in en_tok],
    })
    return schemas.write_table(table, schemas.BITEXT, str(out / "bitext.parquet"))


def run_beam(source: Path, out: Path, workers: int, shards: int) -> int:
    import apache_beam as beam

    from corpus.inputs import resolve_inputs
    from corpus.readers import DEFAULT_MAX_LINE_BYTES
    from pipelines.ingest import BITEXT_FORMAT
    from pipelines.io import dataset_rows
    from pipelines.options import pipeline_options
    from pipelines.rawshards import DEFAULT_SHARD_ROWS, build_shard_writes, plan_shards

    plan = plan_shards(resolve_inputs(str(source)), DEFAULT_SHARD_ROWS, shards)
    with beam.Pipeline(options=pipeline_options("DirectRunner", workers)) as pipeline:
        build_shard_writes(pipeline, BITEXT_FORMAT, plan, str(out / "bitext"), str(out / "rejects"), DEFAULT_MAX_LINE_BYTES)
    return dataset_rows(str(out / "bitext"))


def measure(mode: str, source: Path, workers: int, shards: int) -> None:
    """Child-process entry: run one mode and print its JSON line."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        if mode == "pyarrow":
            rows = run_pyarrow(source, Path(tmp))
        elif mode == "python":
            rows = run_plain_python(source, Path(tmp))
        else:
            rows = run_beam(source, Path(tmp), workers, shards)
        seconds = time.perf_counter() - started
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_rss_mib": peak_rss_mib()}))


def run_stage(source: Path, workers: int, folder: Path) -> tuple[float, float, Path]:
    """IngestBitext on ``source`` by the ``luigi`` command in ``folder``: (stage seconds, peak GiB
    of the command's process tree, the output)."""
    folder.mkdir()
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler", "--inputs", str(source),
               "--paranmt-direct-num-workers", str(workers)]
    _, peak, _, code = run_sampled(command, folder, {**os.environ}, 0.5)
    if code:
        raise SystemExit(f"IngestBitext failed ({code}); its console: {folder / 'console.log'}")
    return stage_seconds(folder / "work", "ingest"), peak / 2**30, (folder / "work" / "ingest" / "latest").resolve()


def same_rows(packed: Path, plain: Path) -> str:
    """Whether two ingests' bitext and rejects are the same but for ``source`` (the file's name)."""
    import pyarrow.parquet as pq

    for dataset in ("bitext", "rejects"):
        ours, theirs = (pq.read_table(output / dataset).drop_columns(["source"]) for output in (packed, plain))
        if not ours.equals(theirs):
            return f"{dataset.upper()} DIFFER"
    return "same rows"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks ingest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=0, help="DirectRunner processes of the pipeline rows (0 = one per core)")
    parser.add_argument("--shards", type=int, default=0, help="about this many shards (0: shards of IngestBitext's default rows)")
    parser.add_argument("--stage-workers", default="1,2", help="Comma-separated --paranmt-direct-num-workers of the IngestBitext commands.")
    parser.add_argument("--measure", choices=["pyarrow", "python", "beam"], help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.source, args.workers, args.shards)
        return
    print(f"Ingest of {args.pairs:,} generated CzEng pairs, one file, on {machine()}\n", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        source, plain = Path(tmp) / "bench.train.gz", Path(tmp) / "bench.train"
        generate(source, args.pairs)
        with gzip.open(source, "rb") as packed, open(plain, "wb") as out:
            shutil.copyfileobj(packed, out, 1 << 20)
        common = ["--source", str(source), "--workers", str(args.workers), "--shards", str(args.shards)]
        results = {mode: measure_in_subprocess("benchmarks.ingest", "--measure", mode, *common)
                   for mode in ("pyarrow", "python", "beam")}
        base = results["python"]["seconds"]
        rows = [
            [label, r["rows"], f"{r['seconds']:.1f}", f"{r['rows'] / r['seconds']:.0f}", f"{r['peak_rss_mib'] / 1024:.2f} (largest process)",
             f"{r['seconds'] / base:.2f}", "", ""]
            for label, r in (("pyarrow read + write (no tokenization)", results["pyarrow"]),
                             ("plain Python, 1 process (baseline)", results["python"]),
                             ("Beam, the gzip file read through by one worker (before)", results["beam"]))
        ]
        for workers in (int(count) for count in args.stage_workers.split(",")):
            measured = {name: run_stage(path, workers, Path(tmp) / f"{name}-{workers}") for name, path in (("plain", plain), ("gzip", source))}
            for name, (seconds, peak, _) in measured.items():
                ratio = f"{seconds / measured['plain'][0]:.2f}" if name == "gzip" else ""
                rows.append([f"IngestBitext, {name}, {workers} worker(s)", args.pairs, f"{seconds:.1f}", f"{args.pairs / seconds:.0f}",
                             f"{peak:.2f} (process tree)", f"{seconds / base:.2f}", ratio,
                             same_rows(measured["gzip"][2], measured["plain"][2]) if name == "gzip" else ""])
            print(" | ".join(map(str, rows[-1])), flush=True)
    print(markdown_table(["pipeline", "lines", "seconds", "lines/s", "peak GiB", "time vs baseline", "gzip / plain", "rows"], rows))


if __name__ == "__main__":
    main()
