"""Encoder quality benchmark: STS of encoders trained on 250k real English paraphrase pairs.

The training set is what ``../shared/tools/build_refpairs.py`` writes from ``../shared/data``
(58 % Flickr30k/COCO caption pairs, the rest MSRP, PAN, ParaSCI, simplification sets, WMT21
references): real pairs nobody on the team wrote, where several pairs describe one image, so
a large negative pool holds many paraphrases of each anchor. Skipped, with the reason, when
``../shared`` is absent.

Every cell trains with the trainer's defaults (models.trainer.TrainConfig: batch 100, δ 0.4,
5 epochs, the default learning rate and development set) except the settings its row names,
keeps the epoch that scores best on its development set (as TrainEncoder does), and is
evaluated on every STS set after each epoch: the mean over the 24 SemEval 2012–2016 sets,
STS-B dev, STS 2017. The untrained model and in-batch negatives (M = 1) are the baselines
measured in the same run; SIF on GloVe-4k is the untrained-vectors baseline. ``--jobs`` cells
train at once, one torch thread each. ``--mix SOURCES`` adds a row per ``--mix-models`` model
trained on the reference pairs plus other pairs (``TrainEncoder --train-data`` sources: a
corpus's chosen deciles, real MT pairs), beside the same model on the reference pairs alone:

    python -m benchmarks quality --no-rules --mix work/train/latest/pairs --mix-models word_avg,trigram_word --epochs 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from benchmarks.common import (
    BUILD_REFPAIRS,
    STS,
    machine,
    markdown_table,
    sif_glove4k,
    write_reference_pairs,
)


@dataclass(frozen=True)
class Cell:
    """One row: a model and the TrainConfig settings that differ from the defaults."""

    label: str
    model: str = "word_avg"
    train: dict = field(default_factory=dict)
    untrained: bool = False
    more_data: str = ""  # --train-data sources trained on besides the reference pairs (a mix row)


PAPER = {"megabatch": 40, "negative_side": "both", "below_partner": False}  # ParaNMT section 4.2.1
NEGATIVE_RULES = [
    Cell("untrained (baseline)", untrained=True),
    Cell("M = 1, in-batch, MAX (baseline)", train={**PAPER, "megabatch": 1}),
    Cell("M = 10, MAX, both sides", train={**PAPER, "megabatch": 10}),
    Cell("M = 40, MAX, both sides (the paper)", train=PAPER),
    Cell("M = 40, MIX, both sides", train={**PAPER, "negatives": "mix"}),
    Cell("M = 40, MAX, partner side", train={**PAPER, "negative_side": "partner"}),
    Cell("M → 40 annealed +1 per 150 updates, partner side (the authors' 2021 code)",
         train={**PAPER, "negative_side": "partner", "megabatch_anneal": 150}),
    Cell("M = 40, semi-hard, both sides", train={**PAPER, "below_partner": True}),
    Cell("M = 10, semi-hard, partner side", train={"megabatch": 10}),
    Cell("M = 40, semi-hard, partner side (default)"),
    Cell("M = 80, semi-hard, partner side", train={"megabatch": 80}),
    Cell("defaults with the paper's Adam 0.001", train={"lr": 0.001}),
    Cell("defaults with the paper's Adam 0.001 and STS 2017 selecting (the default before)", train={"lr": 0.001, "dev_set": "sts2017"}),
]
OTHER_MODELS = ["trigram_avg", "trigram_word", "bilstm_avg"]


def grid(models: list[str], rules: bool) -> list[Cell]:
    """The negative-rule ablation for Word Avg (``rules``), then each other model untrained,
    with M = 1 and with the defaults."""
    cells = list(NEGATIVE_RULES) if rules else []
    for model in models:
        cells += [Cell("untrained", model, untrained=True), Cell("M = 1, in-batch, MAX", model, {**PAPER, "megabatch": 1}), Cell("defaults", model)]
    return cells


def mix_cells(mixes: list[str], models: list[str], cells: list[Cell]) -> list[Cell]:
    """Per mix (``--train-data`` sources: the corpus's chosen deciles, real MT pairs …) and model,
    the defaults on the reference pairs plus the mix, and the same model on the reference pairs
    alone beside it (its baseline in the same run) unless ``cells`` has it already."""
    added = []
    for model in models:
        if not any(cell.model == model and not cell.untrained and not cell.train and not cell.more_data for cell in cells):
            added.append(Cell("defaults, reference pairs alone (the mixes' baseline)", model))
        added += [Cell(f"defaults, reference pairs + {mix}", model, more_data=mix) for mix in mixes]
    return added


def scores(embed) -> dict:
    """Pearson × 100 of ``embed`` on every STS set present (corpus.sts.sts_suite): the
    2012–2016 mean, STS-B dev and STS 2017, by name."""
    from corpus.sts import sts_suite
    from models.evaluation import evaluate

    report = evaluate(embed, sts_suite(STS)[0])
    named = {(score.year, score.name): score.pearson for score in report.scores}
    return {"sts12_16": report.test_mean(), "stsb_dev": named.get(("STS-B", "dev")), "sts2017": report.year_mean("2017")}


CURVES = ("sts12_16", "stsb_dev", "sts2017")


def curves(per_epoch: list[dict]) -> dict:
    """Each score after every epoch, as text: ``"75.5, 78.1, …"`` under ``<name>_curve``."""
    return {f"{name}_curve": ", ".join(f"{epoch[name]:.1f}" for epoch in per_epoch) or "–" for name in CURVES}


def run_cell(cell: Cell, pairs_path: str, directory: str, epochs: int) -> dict:
    """Train one cell (in a worker process, one thread) and score its dev-selected model."""
    import torch

    from corpus.sts import load_dev_set
    from models.configs import EncoderConfig, TrainConfig
    from models.encode import load_encoder
    from models.evaluation import dev_score
    from models.trainer import Trainer
    from models.training_pairs import read_pairs

    torch.set_num_threads(1)
    first, second = read_pairs(f"{pairs_path},{cell.more_data}" if cell.more_data else pairs_path)
    config = TrainConfig(epochs=epochs, checkpoint_every=10**9, device="cpu", **cell.train)
    dev = load_dev_set(STS, config.dev_set)
    trainer = Trainer((first, second), directory, EncoderConfig(model=cell.model), config)
    per_epoch: list[dict] = []

    def select(embed) -> float:
        per_epoch.append(scores(embed))
        return dev_score(embed, dev)

    row = {"model": cell.model, "negatives": cell.label}
    if cell.untrained:
        return {**row, "dev_set": "–", "lr": None, **scores(trainer.sentence_encoder().encode), **curves([]), "pairs_per_s": None}
    started = time.perf_counter()
    trainer.run(select)
    seconds = time.perf_counter() - started
    return {**row, "dev_set": config.dev_set, "lr": config.lr, **scores(load_encoder(directory, "cpu").encode), **curves(per_epoch),
            "pairs_per_s": len(first) * epochs / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2, help="cells trained at once (one torch thread each)")
    parser.add_argument("--pairs", type=int, default=0, help="use a seeded sample of N reference pairs (0: all 250k)")
    parser.add_argument("--models", default="", help=f"also train these models untrained / M = 1 / defaults (e.g. {','.join(OTHER_MODELS)})")
    parser.add_argument("--no-rules", action="store_true", help="skip the Word Avg negative-rule ablation")
    parser.add_argument("--only", default="", help="run only the cells whose label contains one of these |-separated texts")
    parser.add_argument("--no-captions", action="store_true", help="train without the Flickr30k/COCO caption pairs")
    parser.add_argument("--mix", action="append", default=[], help="a row per --mix-models model trained on the reference pairs plus these "
                        "--train-data sources (e.g. 'work/train/latest/pairs' or '0.5=mt-pairs.tsv'), "
                        "beside the model on the reference pairs alone; repeatable")
    parser.add_argument("--mix-models", default="word_avg", help="comma-separated models of the --mix rows")
    args = parser.parse_args()
    if not (BUILD_REFPAIRS.exists() and STS.exists()):
        print(f"quality: skipped ({BUILD_REFPAIRS} or {STS} absent)")
        return
    cells = [cell for cell in grid([m for m in args.models.split(",") if m], not args.no_rules)
             if any(text in cell.label for text in args.only.split("|"))]
    if args.mix:
        from models.training_pairs import training_sources

        for mix in args.mix:  # a mistyped source stops the run now, not after the other cells trained
            if missing := [str(path) for path, _ in training_sources(mix) if not path.exists()]:
                raise SystemExit(f"quality: --mix {mix!r}: no such file or dataset: {', '.join(missing)}")
        cells += mix_cells(args.mix, [m for m in args.mix_models.split(",") if m], cells)
    print(f"machine: {machine()}; {args.jobs} cells at once, 1 torch thread each; {args.epochs} epochs\n", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        pairs_path = Path(tmp) / "refpairs.tsv"
        pairs = write_reference_pairs(pairs_path, args.pairs, captions=not args.no_captions)
        print(f"{pairs:,} reference pairs{' without the caption pairs' if args.no_captions else ''}\n", flush=True)
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(run_cell, cell, str(pairs_path), str(Path(tmp) / f"cell{i}"), args.epochs) for i, cell in enumerate(cells)]
            rows = [{"model": "SIF GloVe-4k +WR", "negatives": "no training (baseline)", "dev_set": "–", "lr": None,
                     **scores(sif_glove4k().encode), **curves([]), "pairs_per_s": None}]
            for cell, future in zip(cells, futures, strict=True):
                rows.append(future.result())
                print(f"  {cell.model}, {cell.label}: STS12–16 {rows[-1]['sts12_16']:.1f}, STS-B dev {rows[-1]['stsb_dev']:.1f}",
                      file=sys.stderr, flush=True)
    headers = ["model", "negatives", "Adam lr", "selects", "STS12–16", "STS-B dev", "STS 2017", "STS12–16 per epoch", "STS-B dev per epoch",
               "STS 2017 per epoch", "pairs/s (1 thread)"]
    keys = ["model", "negatives", "lr", "dev_set", "sts12_16", "stsb_dev", "sts2017", "sts12_16_curve", "stsb_dev_curve", "sts2017_curve",
            "pairs_per_s"]
    print("Pearson × 100 (STS12–16: mean of the 24 SemEval 2012–2016 sets); the epoch its development set selects, of each run:\n")
    print(markdown_table(headers, [[row[k] if row[k] is not None else "–" for k in keys] for row in rows]))


if __name__ == "__main__":
    main()
