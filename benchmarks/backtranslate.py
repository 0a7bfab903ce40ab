"""Back-translation benchmark: the same model and sentences through fairseq-generate and this stage.

Rows, in one run, beam 12, the same length limit and token budget:
  * fairseq-generate (the baseline): fairseq's CLI on the binarized sentences; its own
    generation time (model loading excluded, as for the in-process rows); also with one torch
    thread, which is faster for small models on a busy machine;
  * fairseq engine: this stage's second engine (fairseq's generator, in process);
  * CTranslate2: the default engine, the device's default compute type (float32 on CPU,
    float16 on GPU), and int8 (the CPU option); "on Intel MKL": the same on MKL (ON_MKL), which
    every run used before 2026-12-07, the baseline of a CPU whose library CTranslate2 chose;
  * BackTranslate Beam pipeline: the stage's pipeline on the DirectRunner over 2 shards a worker
    (worker start-up, model loading in each worker, Parquet output included), with CTranslate2
    or the fairseq engine (the GPU engine where CTranslate2 cannot use the GPU);
  * BackTranslate stage: the ``luigi`` command a user runs (the sentences ingested as a bitext
    first, its shards as IngestBitext makes them, or ``--stage-shards``; the worker processes
    and threads as the stage chooses them), its sentences over the stage's own seconds (its
    manifest's: start-up, model loads, the translation check included); also on Intel MKL.
The "× engine" column gives each pipeline or stage row's rate over its engine's in process (the
issue's bar: 0.8).
A row on a GPU also reports the peak GPU memory of its process (``torch.cuda.max_memory_allocated``;
none where the model lives in another process: fairseq-generate, a Beam worker).
Each row runs in a fresh process. Sentences: ``--source`` (a file or a glob, e.g. csen-more's
``work/csen-more/*.cs`` from scripts/prepare_csen_more.py, 97,971 lines), else newstest2021's Czech
side when ../shared/data is there, else the demo corpus. Models: ``--model`` (a folder with ``nmt.json`` from
ConvertTranslator; repeat it to measure several, e.g. the csen-more ``small`` model and a
``base``-size one, the paper's size), by default the newest ``<workdir>/nmt-ct2/latest``, built
from the demo corpus if missing. Each model's rows compare with its own fairseq-generate row; the
last column projects the hours for ParaNMT-50M's 51.4M sentences on this device.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import machine, markdown_table, measure_in_subprocess, peak_gpu_mib

PAPER_SENTENCES, PAPER_GPU_HOURS = 51.4e6, 10_000
WMT21_SOURCE = Path(os.environ.get("PARANMT_SHARED_DATA", "../shared/data")) / "csen" / "wmt21" / "newstest2021.cs-en.src.cs"
MODES = {
    "generate": "fairseq-generate (baseline)",
    "generate-1thread": "fairseq-generate, 1 torch thread",
    "fairseq": "fairseq engine (in process)",
    "ct2": "CTranslate2",
    "ct2-int8": "CTranslate2 int8",
    "ct2-mkl": "CTranslate2 on Intel MKL",
    "beam": "BackTranslate Beam pipeline, CTranslate2",
    "beam-fairseq": "BackTranslate Beam pipeline, fairseq engine",
    "stage": "BackTranslate stage (luigi command), CTranslate2",
    "stage-mkl": "BackTranslate stage (luigi command), CTranslate2 on Intel MKL",
}
ENGINE_OF = {"beam": "ct2", "stage": "ct2", "beam-fairseq": "fairseq", "stage-mkl": "ct2-mkl"}
# The rows run with CTranslate2 on Intel MKL (CT2_USE_MKL=1, which the project set for every run
# before 2026-12-07; CTranslate2's own choice is MKL on Intel's CPUs only, oneDNN elsewhere).
ON_MKL = {"CT2_USE_MKL": "1"}


def sentence_source(source: Path | None) -> Path | None:
    """The given file, else newstest2021's Czech side when present, else None (the demo corpus)."""
    return source or (WMT21_SOURCE if WMT21_SOURCE.exists() else None)


def sentences(source: Path | None, count: int) -> list[str]:
    """The first ``count`` non-empty lines of the source (a glob: its files in name order)."""
    source = sentence_source(source)
    if source is not None:
        files = sorted(glob.glob(str(source))) or [str(source)]
        lines = [line for file in files for line in Path(file).read_text(encoding="utf-8").splitlines()]
    else:
        import gzip

        from workflows.ingest import demo_corpus

        with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
            lines = [line.split("\t")[2] for line in handle]
    return [line for line in lines if line.strip()][:count]


def default_model(workdir: Path) -> Path:
    """The newest converted model, or the demo model (trained now, a few minutes on CPU)."""
    latest = workdir / "nmt-ct2" / "latest"
    if not latest.exists():
        import luigi

        from workflows.nmt import ConvertTranslator

        luigi.configuration.get_config().set("paranmt", "workdir", str(workdir))
        if not luigi.build([ConvertTranslator()], local_scheduler=True, log_level="WARNING"):
            raise SystemExit("could not build the demo model")
    return latest.resolve()


def batch_tokens(options, device: str) -> int:
    """The token budget every row uses: the given one, else the engines' default for the device."""
    from models.nmt.translate import default_batch_tokens

    return options.batch_tokens or default_batch_tokens(device, options.beam_size)


def run_generate(model, texts, device, options, threads=0) -> tuple[int, int, float]:
    """fairseq-generate on the binarized pieces; returns (sentences, tokens, generation seconds).

    ``threads`` > 0 caps torch's threads (on a busy machine spinning threads slow small models down).
    """
    from models.nmt import fairseq_train
    from models.nmt.spm import Codec

    with tempfile.TemporaryDirectory() as tmp:
        pieces = Codec(model.spm_source).encode(texts)
        Path(tmp, "test.cs").write_text("".join(" ".join(p) + "\n" for p in pieces), encoding="utf-8")
        fairseq_train.run_tool("preprocess", [
            "--source-lang", "cs", "--target-lang", "en", "--only-source", "--testpref", f"{tmp}/test",
            "--destdir", f"{tmp}/bin", "--srcdict", f"{model.data_dir}/dict.cs.txt", "--dataset-impl", "mmap"])
        shutil.copy(f"{model.data_dir}/dict.en.txt", f"{tmp}/bin/dict.en.txt")
        output: list[str] = []
        fairseq_train.run_tool("generate", [
            f"{tmp}/bin", "--path", model.checkpoint, "--source-lang", "cs", "--target-lang", "en",
            "--gen-subset", "test", "--beam", str(options.beam_size), "--nbest", "1",
            "--max-tokens", str(batch_tokens(options, device)), "--max-len-a", str(options.max_len_a),
            "--max-len-b", str(options.max_len_b), "--required-batch-size-multiple", "1",
            "--dataset-impl", "mmap", *(["--fp16"] if device == "cuda" else ["--cpu"]),
        ], output.append, threads)
    summary = next(line for line in output if "Translated" in line and "sentences/s" in line)
    found = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s", summary)
    count, tokens, seconds = (float(found.group(i).replace(",", "")) for i in (1, 2, 3))
    return int(count), int(tokens), seconds


def run_engine(model, texts, engine, device, compute_type, options, threads) -> tuple[int, int, float]:
    from models.nmt.translate import load_translator

    translator = load_translator(model, engine, options, device, compute_type, threads or os.cpu_count() or 1)
    translator.translate(texts[:8])  # first-call set-up (allocators, kernels) is not throughput
    started = time.perf_counter()
    hypotheses = translator.translate_many(texts, progress=False)
    seconds = time.perf_counter() - started
    return len(texts), sum(h.n_tokens for h in hypotheses if h), seconds


def run_beam(model, texts, device, options, workers, engine="ctranslate2", compute_type="auto") -> tuple[int, int, float]:
    import apache_beam as beam
    import pandas as pd
    import pyarrow as pa

    import schemas
    from corpus.ids import shard_of
    from pipelines import io
    from pipelines.backtranslate import build_backtranslate
    from pipelines.options import pipeline_options
    from pipelines.translator import TranslatorSpec, pending_units

    workers = workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        ids = [f"bench-{n:09d}" for n in range(len(texts))]
        table = schemas.conform(pa.table({
            "id": ids, "source": ["bench"] * len(texts), "line": range(1, len(texts) + 1), "domain": ["bench"] * len(texts),
            "czeng_score": pa.nulls(len(texts), pa.float64()), "pivot": ["cs"] * len(texts), "foreign": texts, "en": texts, "en_tok": texts,
            "en_n_tokens": [1] * len(texts),
        }), schemas.BITEXT)
        shards = [shard_of(i, 2 * workers) for i in ids]
        for shard in range(2 * workers):
            io.write_part(table.filter(pa.array([s == shard for s in shards])), schemas.BITEXT, f"{tmp}/bitext", shard)
        threads = max(1, (os.cpu_count() or 1) // workers) if device == "cpu" else 0
        spec = TranslatorSpec(model, engine, device, compute_type, threads, options)
        started = time.perf_counter()
        with beam.Pipeline(options=pipeline_options("DirectRunner", workers)) as pipeline:
            build_backtranslate(pipeline, pending_units(io.dataset_files(f"{tmp}/bitext"), f"{tmp}/pairs"), f"{tmp}/pairs", f"{tmp}/rejects", spec)
        seconds = time.perf_counter() - started
        pairs = pd.read_parquet(f"{tmp}/pairs")
    return len(pairs), int(pairs.trans_n_tokens.sum()), seconds


def run_stage(model: Path, texts, device, options, shards: int, compute_type: str = "auto") -> tuple[int, int, float]:
    """The BackTranslate ``luigi`` command on ``texts`` (ingested first as a bitext whose English
    side is the same lines) with the model in the folder ``model``: (sentences, tokens, the
    stage's seconds from its manifest)."""
    run = stage_run(model, texts, texts, device, options, shards, compute_type)
    return run.pairs, run.tokens, run.seconds


@dataclass(frozen=True)
class StageRun:
    """What one BackTranslate command made and cost: its pairs, their target tokens, the stage's
    seconds (its manifest's) and the peak resident memory of the command's process tree."""

    pairs: int
    tokens: int
    seconds: float
    peak_bytes: int


def stage_run(model: Path, texts: list[str], references: list[str], device: str, options, shards: int = 0, compute_type: str = "auto",
              extra: tuple[str, ...] = ()) -> StageRun:
    """The BackTranslate ``luigi`` command on ``texts`` with their English ``references`` (ingested
    first, ``shards`` shards: 0, IngestBitext's default), the model in the folder ``model`` and
    ``extra`` options (``--paraphrases 5 --diversity parabank``), its process tree's memory
    sampled every second. Its translations are accepted whatever the check finds: a benchmark's
    model may be trained for minutes."""
    import pandas as pd

    from benchmarks.size import run_sampled, stage_seconds
    from corpus.translation_check import NAMES

    with tempfile.TemporaryDirectory() as tmp:
        for suffix, lines in (("cs", texts), ("en", references)):
            Path(tmp, f"bench.{suffix}").write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")
        command = [sys.executable, "-m", "luigi", "--module", "workflows", "BackTranslate", "--local-scheduler",
                   "--inputs", f"{tmp}/bench.cs::{tmp}/bench.en", "--source-language", "cs",
                   "--translator", str(model.resolve()),  # the command runs in tmp
                   "--device", device, "--compute-type", compute_type, "--beam-size", str(options.beam_size),
                   "--batch-tokens", str(options.batch_tokens),
                   "--BackTranslate-accept-translations", ",".join(NAMES), "--paranmt-workdir", f"{tmp}/work",
                   *(["--IngestBitext-num-shards", str(shards)] if shards else []), *extra]
        _, peak, _, code = run_sampled(command, Path(tmp), dict(os.environ), every=1.0)
        if code:
            raise SystemExit(f"the BackTranslate command failed ({code}): {Path(tmp, 'console.log').read_text()[-2000:]}")
        pairs = pd.read_parquet(f"{tmp}/work/backtranslate/latest/pairs")
        return StageRun(len(pairs), int(pairs.trans_n_tokens.sum()), stage_seconds(Path(tmp, "work"), "backtranslate"), peak)


def measure(args) -> None:
    """Child-process entry: one mode, one JSON line."""
    from models.nmt.model import NmtModel
    from models.nmt.translate import DecodeOptions

    model = NmtModel.load(args.model[0])  # a child measures one model
    texts = sentences(args.source, args.sentences)
    options = DecodeOptions(beam_size=args.beam, batch_tokens=args.batch_tokens)
    if args.measure.startswith("generate"):
        result = run_generate(model, texts, args.device, options, 1 if args.measure == "generate-1thread" else 0)
    elif args.measure.startswith("stage"):
        result = run_stage(args.model[0], texts, args.device, options, args.stage_shards, args.compute_type)
    elif args.measure.startswith("beam"):
        result = run_beam(model, texts, args.device, options, args.workers, "fairseq" if args.measure == "beam-fairseq" else "ctranslate2",
                          args.compute_type)
    else:
        engine = "fairseq" if args.measure == "fairseq" else "ctranslate2"
        compute_type = "int8" if args.measure == "ct2-int8" else args.compute_type
        result = run_engine(model, texts, engine, args.device, compute_type, options, args.threads)
    print(json.dumps({**dict(zip(("sentences", "tokens", "seconds"), result, strict=True)), "peak_gpu_mib": peak_gpu_mib()}))


def main() -> None:
    from models.nmt.translate import CPU_HYPOTHESIS_TOKENS, GPU_BATCH_TOKENS, DecodeOptions

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, action="append", help="folder with nmt.json (ConvertTranslator output); repeat for several")
    parser.add_argument("--workdir", type=Path, default=Path("work"))
    parser.add_argument("--source", type=Path, help="Czech sentences, one a line (default: newstest2021 or the demo)")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--beam", type=int, default=DecodeOptions.beam_size)
    parser.add_argument("--batch-tokens", type=int, default=DecodeOptions.batch_tokens,
                        help=f"decoder batch token budget (0: {CPU_HYPOTHESIS_TOKENS} ÷ beam on the CPU, {GPU_BATCH_TOKENS} on a GPU)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--compute-type", default="auto",
                        help="CTranslate2's compute type of the ct2, beam and stage rows "
                             "(auto: the device's default; int8 on a CPU is about twice as fast)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads of the in-process engines (0 = all cores)")
    parser.add_argument("--workers", type=int, default=0, help="DirectRunner processes for the Beam row (0 = one per core)")
    parser.add_argument("--stage-shards", type=int, default=0,
                        help="Shards of the stage row's bitext (0: IngestBitext's default, 100,000 lines each)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--measure", choices=list(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    from models.nmt.devices import resolve_device

    models = args.model or [default_model(args.workdir)]
    args.device = resolve_device("ctranslate2", args.device)
    common = ["--sentences", str(args.sentences), "--beam", str(args.beam),
              "--batch-tokens", str(args.batch_tokens), "--device", args.device, "--compute-type", args.compute_type, "--threads", str(args.threads),
              "--workers", str(args.workers), "--stage-shards", str(args.stage_shards), *(["--source", str(args.source)] if args.source else [])]
    modes = [mode for mode in args.modes.split(",") if not (mode in ("ct2-int8", "generate-1thread") and args.device == "cuda")]
    load_before = os.getloadavg()[0]
    rows = []
    for model in models:
        results = {mode: measure_in_subprocess("benchmarks.backtranslate", "--measure", mode, "--model", str(model), *common,
                                               env=ON_MKL if mode.endswith("-mkl") else None)
                   for mode in modes}
        rows += model_rows(model, results)
    load_after = os.getloadavg()[0]
    texts = sentences(args.source, args.sentences)
    print(f"Back-translation, beam {args.beam}, {len(texts)} sentences ({sentence_source(args.source) or 'demo corpus'}), "
          f"device {args.device}, compute type {args.compute_type}, stage shards {args.stage_shards or 'as ingested'}, "
          f"in-process threads {args.threads or 'all cores'}, on {machine()}; "
          f"load average {load_before:.1f} before, {load_after:.1f} after\n")
    print(markdown_table(["model", "engine", "sentences", "seconds", "sentences/s", "target tokens/s", "× fairseq-generate", "× engine",
                          f"hours for {PAPER_SENTENCES / 1e6:.1f}M sentences (paper: {PAPER_GPU_HOURS:,} GPU-h)"], rows))


def model_rows(model: Path, results: dict[str, dict]) -> list[list]:
    """One table row per mode of one model, its speed-up over the model's own fairseq-generate row."""
    base = results.get("generate") or results.get("generate-1thread")
    label = f"{model} ({model_size(model)})"
    rows = []
    for mode, r in results.items():
        rate = r["sentences"] / r["seconds"]
        speedup = f"{rate / (base['sentences'] / base['seconds']):.2f}" if base else ""  # blank: generate not among --modes
        engine = results.get(ENGINE_OF.get(mode, ""))
        of_engine = f"{rate / (engine['sentences'] / engine['seconds']):.2f}" if engine else ""
        rows.append([label, MODES[mode], r["sentences"], r["seconds"], rate, r["tokens"] / r["seconds"], speedup, of_engine,
                     PAPER_SENTENCES / rate / 3600])
    return rows


def model_size(model: Path) -> str:
    """The Transformer's shape, from the converted model's configuration: layers and width."""
    from models.nmt.fairseq_train import checkpoint_config
    from models.nmt.model import NmtModel

    config = checkpoint_config(NmtModel.load(model).checkpoint)
    return f"{config.encoder_layers}+{config.decoder_layers} layers, width {config.encoder_embed_dim}"


if __name__ == "__main__":
    main()
