"""Costed plan for the full corpus: every stage's rate, measured here on small samples, projected
to 51.4M CzEng pairs on the cores and GPUs you name, with the paper's 10,000 GPU-hours beside
back-translation.

Each stage is measured in fresh processes at two sample sizes; its rate is the extra items per
extra CPU second between them, so the fixed costs that 51.4M pairs amortize (worker start-up,
loading models) are left out, and CPU seconds do not depend on what else the machine runs:
  * ingest: the Beam ingest stage (DirectRunner) on generated CzEng pairs (``benchmarks.ingest``);
  * back-translation on CPU: CTranslate2, one thread, beam 12, on newstest2021's Czech side (or
    the demo corpus) with ``--model`` (default ``<workdir>/nmt-ct2/latest``); not measured when
    there is no model. The figure is for that model: a real-size model is slower;
  * back-translation on GPU: never measured by this command; ``--gpu-sentences-per-s`` takes a
    figure you measured (``python -m benchmarks backtranslate`` on a GPU machine);
  * scoring + deciles: Beam ScorePairs + AssignDeciles on generated pairs (``benchmarks.score``);
  * training: the default encoder (Word Avg, M = 40) on generated pairs, one torch thread,
    featurization included; one training process does not spread over cores, so the projection
    is for one core, ``--train-pairs`` × ``--epochs`` pair-epochs (the paper's 5M pairs × 5).
The projection assumes each stage's work divides perfectly over the units (a lower bound on wall
time): wall hours = items / (rate × units), machine-hours = items / rate. ``--save-rates FILE``
writes the rates used; ``--rates FILE`` reads them back (stages it lacks are measured).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from corpus.errors import InputError

PAPER_PAIRS, PAPER_GPU_HOURS = 51_400_000, 10_000


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    unit: str  # what the work divides over: "core" or "GPU"
    item: str  # what the rate counts


STAGES = (
    Stage("ingest", "ingest (Beam, DirectRunner)", "core", "pairs"),
    Stage("backtranslate-cpu", "back-translation on CPU (CTranslate2, beam 12)", "core", "sentences"),
    Stage("backtranslate-gpu", "back-translation on GPU", "GPU", "sentences"),
    Stage("score", "scoring + deciles (Beam ScorePairs + AssignDeciles)", "core", "pairs"),
    Stage("train", "encoder training (Word Avg, M = 40, 1 process)", "core", "pair-epochs"),
)
BY_KEY = {stage.key: stage for stage in STAGES}


@dataclass(frozen=True)
class Rate:
    """Items per second of one unit; ``per_unit_s`` None: not measured, ``how`` says why."""

    stage: str
    per_unit_s: float | None
    how: str


@dataclass(frozen=True)
class Projection:
    stage: Stage
    rate: Rate
    items: float
    units: int
    wall_hours: float | None
    machine_hours: float | None


def project(rate: Rate, items: float, units: int) -> Projection:
    """Wall hours and unit-hours (core- or GPU-hours) for ``items`` on ``units`` units."""
    if units < 1:
        raise InputError(f"{rate.stage}: need at least one {BY_KEY[rate.stage].unit}, got {units}")
    if rate.per_unit_s is None:
        return Projection(BY_KEY[rate.stage], rate, items, units, None, None)
    if rate.per_unit_s <= 0:
        raise InputError(f"{rate.stage}: a rate must be positive, got {rate.per_unit_s}")
    machine_hours = items / rate.per_unit_s / 3600
    return Projection(BY_KEY[rate.stage], rate, items, units, machine_hours / units, machine_hours)


@dataclass(frozen=True)
class Total:
    wall_hours: float | None  # None when a stage is not measured
    machine_hours: dict[str, float]  # by unit: core-hours, GPU-hours of the measured stages
    missing: tuple[str, ...]  # stages without a rate


def total(projections: list[Projection]) -> Total:
    """Stages run one after the other: their wall hours add up; unit-hours add up per unit."""
    missing = tuple(p.stage.key for p in projections if p.wall_hours is None)
    hours: dict[str, float] = {}
    for p in projections:
        if p.machine_hours is not None:
            hours[p.stage.unit] = hours.get(p.stage.unit, 0.0) + p.machine_hours
    wall = None if missing else sum(p.wall_hours for p in projections)
    return Total(wall, hours, missing)


def marginal_rate(small: dict, large: dict) -> float:
    """Extra items per extra CPU second between two runs ({"items", "cpu_seconds"}); the larger
    run's overall rate when the difference is not positive (noise at tiny sizes)."""
    extra_items, extra_cpu = large["items"] - small["items"], large["cpu_seconds"] - small["cpu_seconds"]
    if extra_items > 0 and extra_cpu > 0:
        return extra_items / extra_cpu
    return large["items"] / large["cpu_seconds"]


def load_rates(path: Path) -> dict[str, Rate]:
    """Rates saved by ``--save-rates``: {stage: {"per_unit_s": float or null, "how": str}}."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        rates = {key: Rate(key, None if value["per_unit_s"] is None else float(value["per_unit_s"]), str(value["how"]))
                 for key, value in saved.items()}
    except FileNotFoundError:
        raise InputError(f"--rates {path}: no such file") from None
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError) as error:
        raise InputError(f"--rates {path}: not a rates file written by --save-rates ({error!r})") from None
    unknown = sorted(set(rates) - set(BY_KEY))
    if unknown:
        raise InputError(f"--rates {path}: unknown stages {', '.join(unknown)}; known: {', '.join(BY_KEY)}")
    return rates


def save_rates(path: Path, rates: dict[str, Rate]) -> None:
    path.write_text(json.dumps({key: {"per_unit_s": r.per_unit_s, "how": r.how} for key, r in rates.items()}, indent=2) + "\n",
                    encoding="utf-8")


def hours_cell(hours: float | None) -> str:
    if hours is None:
        return "not measured"
    return f"{hours:,.3g}" if hours < 100 else f"{hours:,.0f}"


def plan_table(projections: list[Projection]) -> str:
    from benchmarks.common import markdown_table

    rows = []
    for p in projections:
        rate = "not measured" if p.rate.per_unit_s is None else f"{p.rate.per_unit_s:,.1f} {p.stage.item}/s per {p.stage.unit}"
        paper = f"{PAPER_GPU_HOURS:,} GPU-h" if p.stage.key.startswith("backtranslate") else ""
        rows.append([p.stage.label, rate, p.rate.how, f"{p.items:,.0f} {p.stage.item}", f"{p.units} {p.stage.unit}{'s' if p.units > 1 else ''}",
                     hours_cell(p.wall_hours), hours_cell(p.machine_hours) + ("" if p.machine_hours is None else f" {p.stage.unit}-h"), paper])
    return markdown_table(["stage", "rate", "how the rate was obtained", "work", "units", "wall hours", "machine-hours",
                           "paper (Wieting & Gimpel 2018)"], rows)


def total_line(label: str, result: Total) -> str:
    hours = ", ".join(f"{h:,.1f} {unit}-hours" for unit, h in sorted(result.machine_hours.items()))
    if result.missing:
        return f"{label}: incomplete, {', '.join(result.missing)} not measured (measured stages: {hours})."
    return f"{label}: {result.wall_hours:,.2f} h wall, {hours}."


# ---- measurements (each in a fresh process: ``--measure STAGE --size N`` prints one JSON line) ----

def measure_ingest(size: int, tmp: Path) -> tuple:
    from benchmarks import ingest
    from benchmarks.score import clock

    source = tmp / "bench.train.gz"
    ingest.generate(source, size)
    started = clock()
    rows = ingest.run_beam(source, tmp / "out", workers=0, shards=16)
    return rows, started


def measure_backtranslate(size: int, tmp: Path, model: str) -> tuple:
    from benchmarks import backtranslate
    from benchmarks.score import clock
    from models.nmt.model import NmtModel
    from models.nmt.translate import DecodeOptions

    texts = backtranslate.sentences(None, size)
    started = clock()
    count, _, _ = backtranslate.run_engine(NmtModel.load(model), texts, "ctranslate2", "cpu", "auto", DecodeOptions(), threads=1)
    return count, started


def measure_score(size: int, tmp: Path) -> tuple:
    from benchmarks import score

    vectors = tmp / "vectors.txt"
    score.write_vectors(vectors)
    score.write_pairs_dataset(tmp / "pairs", size, 16)
    started = score.run_beam(str(tmp / "pairs"), str(vectors), tmp, workers=0)
    return size, started


def measure_train(size: int, tmp: Path) -> tuple:
    import torch

    from benchmarks.score import clock
    from benchmarks.train import generated_pairs
    from models.configs import TrainConfig
    from models.trainer import Trainer

    torch.set_num_threads(1)
    pairs = generated_pairs(size)
    config = TrainConfig(max_steps=size // TrainConfig().batch_size, checkpoint_every=10**9, device="cpu")
    started = clock()
    Trainer(pairs, tmp / "encoder", config=config).run()
    return config.max_steps * config.batch_size, started


def measure(stage: str, size: int, model: str | None) -> None:
    from benchmarks.score import clock

    with tempfile.TemporaryDirectory() as tmp:
        if stage == "ingest":
            items, started = measure_ingest(size, Path(tmp))
        elif stage == "backtranslate-cpu":
            items, started = measure_backtranslate(size, Path(tmp), model)
        elif stage == "score":
            items, started = measure_score(size, Path(tmp))
        else:
            items, started = measure_train(size, Path(tmp))
        wall, cpu = clock()
    print(json.dumps({"items": items, "seconds": wall - started[0], "cpu_seconds": cpu - started[1]}))


# Sample sizes (the larger run is three times the smaller): about three minutes for all stages on 2 shared cores.
SAMPLES = {"ingest": 20_000, "backtranslate-cpu": 100, "score": 20_000, "train": 8_000}


def measured_rate(stage: str, scale: float, model: str | None) -> Rate:
    from benchmarks.common import measure_in_subprocess

    small_size = max(1, round(SAMPLES[stage] * scale))
    if stage == "train":  # whole megabatches of M = 40 batches of 100
        small_size = max(4_000, small_size // 4_000 * 4_000)
    runs = [measure_in_subprocess("benchmarks.plan", "--measure", stage, "--size", str(size), *(["--model", model] if model else []))
            for size in (small_size, 3 * small_size)]
    sample = f"{runs[0]['items']:,} and {runs[1]['items']:,}"
    how = {
        "ingest": f"measured here: {sample} generated pairs",
        "backtranslate-cpu": f"measured here: {sample} sentences, 1 thread, model {model}",
        "score": f"measured here: {sample} generated pairs",
        "train": f"measured here: {sample} generated pairs, 1 thread",
    }[stage]
    return Rate(stage, marginal_rate(*runs), how + ", per CPU second between the two")


def model_or_reason(model: Path | None, workdir: Path) -> tuple[str | None, str]:
    """The translation model to time, or None and why there is none."""
    chosen = model or workdir / "nmt-ct2" / "latest"
    if (chosen / "nmt.json").exists():
        return str(chosen.resolve()), ""
    return None, f"not measured: no model at {chosen} (pass --model, a ConvertTranslator output)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=PAPER_PAIRS, help="CzEng pairs to plan for (the paper: 51.4M)")
    parser.add_argument("--cores", type=int, default=16, help="CPU cores the Beam stages and CPU back-translation spread over")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs back-translation on GPU spreads over")
    parser.add_argument("--gpu-sentences-per-s", type=float, help="back-translation sentences/s of one GPU, measured by you (not measured here)")
    parser.add_argument("--train-pairs", type=int, help="training pairs (default: SelectTrainingSet's sample, the paper's 5M)")
    parser.add_argument("--epochs", type=int, help="training epochs (default: TrainEncoder's, 5)")
    parser.add_argument("--model", type=Path, help="folder with nmt.json (ConvertTranslator output) to time on CPU")
    parser.add_argument("--workdir", type=Path, default=Path("work"), help="where <workdir>/nmt-ct2/latest is looked for")
    parser.add_argument("--sample-scale", type=float, default=1.0, help="multiply the measurement samples (1: about three minutes on 2 shared cores)")
    parser.add_argument("--rates", type=Path, help="rates written by --save-rates; stages it lacks are measured")
    parser.add_argument("--save-rates", type=Path, help="write the rates used here as JSON")
    parser.add_argument("--measure", choices=sorted(SAMPLES), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.size, str(args.model) if args.model else None)
        return
    try:
        run_plan(args)
    except InputError as error:
        sys.exit(f"error: {error}")


def run_plan(args) -> None:
    from benchmarks.common import machine
    from corpus.selection import Sample
    from models.configs import TrainConfig

    if min(args.pairs, args.cores, args.gpus) < 1 or args.sample_scale <= 0:
        raise InputError("--pairs, --cores, --gpus and --sample-scale must be positive")
    train_pairs = min(args.train_pairs or Sample().n_pairs, args.pairs)
    epochs = args.epochs or TrainConfig().epochs
    rates = load_rates(args.rates) if args.rates else {}
    if args.gpu_sentences_per_s is not None:
        rates["backtranslate-gpu"] = Rate("backtranslate-gpu", args.gpu_sentences_per_s, "given: --gpu-sentences-per-s")
    rates.setdefault("backtranslate-gpu", Rate("backtranslate-gpu", None, "not measured: no GPU here; pass --gpu-sentences-per-s"))
    model, no_model = model_or_reason(args.model, args.workdir)
    load_before = os.getloadavg()[0]
    for stage in ("ingest", "backtranslate-cpu", "score", "train"):
        if stage not in rates:
            if stage == "backtranslate-cpu" and model is None:
                rates[stage] = Rate(stage, None, no_model)
            else:
                rates[stage] = measured_rate(stage, args.sample_scale, model)
    if args.save_rates:
        save_rates(args.save_rates, rates)
    work = {"ingest": args.pairs, "backtranslate-cpu": args.pairs, "backtranslate-gpu": args.pairs, "score": args.pairs,
            "train": train_pairs * epochs}
    units = {"ingest": args.cores, "backtranslate-cpu": args.cores, "backtranslate-gpu": args.gpus, "score": args.cores, "train": 1}
    projections = {stage.key: project(rates[stage.key], work[stage.key], units[stage.key]) for stage in STAGES}
    print(f"Costed plan: {args.pairs:,} CzEng pairs on {args.cores} cores and {args.gpus} GPUs; training on "
          f"{train_pairs:,} pairs × {epochs} epochs. Rates from {machine()}; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after.\n")
    print(plan_table(list(projections.values())))
    print()
    for device in ("cpu", "gpu"):
        chosen = [projections[key] for key in ("ingest", f"backtranslate-{device}", "score", "train")]
        print(total_line(f"Total with back-translation on {device.upper()}", total(chosen)))
    print(f"The paper: {PAPER_GPU_HOURS:,} GPU-hours for back-translating {PAPER_PAIRS / 1e6:.1f}M sentences.")


if __name__ == "__main__":
    main()
