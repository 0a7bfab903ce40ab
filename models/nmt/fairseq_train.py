"""Training a cs→en Transformer with fairseq on the binarized bitext (``models.nmt.binarize``), resuming.

fairseq's own command-line tools (``fairseq-train``; ``fairseq-preprocess`` for the reference
binarization) run in subprocesses, so a crash or kill of the trainer never takes the caller down
and the trainer's output can be streamed into the caller's log. ``fairseq-train`` resumes from
``checkpoint_last.pt`` in its save directory by itself, so rerunning :func:`train` on the
same directories continues an interrupted training.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpus.settings import setting

SOURCE_LANG, TARGET_LANG = "cs", "en"

_COMMON = [
    "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
    "--lr-scheduler", "inverse_sqrt", "--weight-decay", "0.0001",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
]

# Architectures. `tiny` trains the embedded demo in minutes on 2 CPU cores (and the tests in
# seconds); `fast` is the most BLEU in a few minutes of one GPU on ~100k pairs (csen-more: a
# 256-wide model with a 6-layer encoder and a 3-layer decoder, ~12M weights with a 16k joint
# vocabulary, so its float16 checkpoint is 23 MiB and beam search is fast; a high learning rate
# after a short warm-up and large batches, since it trains for ~2,000 updates, not 60 epochs;
# layer norm before each sublayer and gradients clipped at 1.0, which held that learning rate
# better than the usual post-norm model on an H200: docs/2026-11-27-gpu-run-h200.md; trained so
# for 1,381 updates it said one sentence for every source); `compact` learns to translate ~100k
# pairs in two hours of two CPU cores (csen-more: a 4+3-layer, 256-wide pre-norm model, ~8M
# weights with an 8k joint vocabulary; small batches, so that two hours are ~5,000 updates, at a
# learning rate the model can follow: docs/2026-12-03-cpu-translator.md), validating and
# watching for a collapse every 500 updates, for 5,000 updates (an update budget, not a clock: the
# same weights on a faster or busier machine; 1.9 hours of two quiet cores); `small` is the usual
# model for ~100k-pair corpora (csen-more) on one GPU; `base` and `big` are Vaswani et al.'s
# models for CzEng-sized data. Every preset stops: after its epochs, or earlier when the
# validation loss stops improving (--patience).
# The preset "auto" is chosen by the corpus's size (AUTO_PRESETS, preset_for).
PRESETS: dict[str, dict] = {
    "tiny": {
        "arch": ["--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "2",
                 "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
                 "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"],
        "lr": 2e-3, "warmup_updates": 100, "dropout": 0.1, "max_tokens": 1024, "max_epoch": 30,
        "max_positions": 256, "threads": 1,
    },
    "fast": {
        "arch": ["--arch", "transformer", "--encoder-layers", "6", "--decoder-layers", "3",
                 "--encoder-embed-dim", "256", "--decoder-embed-dim", "256",
                 "--encoder-ffn-embed-dim", "1024", "--decoder-ffn-embed-dim", "1024",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
                 "--encoder-normalize-before", "--decoder-normalize-before"],
        "lr": 2e-3, "warmup_updates": 300, "dropout": 0.1, "max_tokens": 16384, "max_epoch": 60,
        "max_positions": 512, "threads": 0, "clip_norm": 1.0,
    },
    "compact": {
        "arch": ["--arch", "transformer", "--encoder-layers", "4", "--decoder-layers", "3",
                 "--encoder-embed-dim", "256", "--decoder-embed-dim", "256",
                 "--encoder-ffn-embed-dim", "1024", "--decoder-ffn-embed-dim", "1024",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
                 "--encoder-normalize-before", "--decoder-normalize-before"],
        "lr": 1e-3, "warmup_updates": 500, "dropout": 0.1, "max_tokens": 4096, "max_epoch": 60,
        "max_positions": 512, "threads": 0, "clip_norm": 1.0, "save_interval_updates": 500, "max_update": 5000,
    },
    "small": {
        "arch": ["--arch", "transformer_iwslt_de_en"],
        "lr": 5e-4, "warmup_updates": 4000, "dropout": 0.3, "max_tokens": 8192, "max_epoch": 60,
        "max_positions": 512, "threads": 0,
    },
    "base": {
        "arch": ["--arch", "transformer"],
        "lr": 7e-4, "warmup_updates": 4000, "dropout": 0.1, "max_tokens": 8192, "max_epoch": 20,
        "max_positions": 512, "threads": 0,
    },
    "big": {
        "arch": ["--arch", "transformer_vaswani_wmt_en_de_big"],
        "lr": 5e-4, "warmup_updates": 4000, "dropout": 0.3, "max_tokens": 4096, "max_epoch": 20,
        "max_positions": 512, "threads": 0,
    },
}


# "auto": the first preset whose pair limit the training pairs are under, else base. A 60M-weight
# base model for a few hundred pairs learns nothing more than tiny does and writes 546 MB
# checkpoints; small is the usual model for ~100k pairs (csen-more) on a GPU, compact the one that
# learns to translate them in two hours of two CPU cores (docs/2026-12-03-cpu-translator.md),
# base for CzEng's millions.
AUTO_PRESETS = {"cuda": ((20_000, "tiny"), (1_000_000, "small")),
                "cpu": ((20_000, "tiny"), (1_000_000, "compact"))}


def checkpoint_updates(checkpoint: str | Path) -> int:
    """The updates a fairseq checkpoint was saved after (its last optimizer record's)."""
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
    return int(state["optimizer_history"][-1]["num_updates"])


def preset_for(pairs: int, device: str = "cuda") -> str:
    """The preset "auto" means for a corpus of ``pairs`` training pairs trained on ``device``."""
    return next((preset for limit, preset in AUTO_PRESETS[device] if pairs < limit), "base")


def fairseq_env(threads: int = 0) -> dict[str, str]:
    """Environment for fairseq processes: torch ≥ 2.6 refuses fairseq's pickled checkpoints otherwise.

    ``threads`` > 0 caps torch's CPU threads: a tiny model gains nothing from more, and on a busy
    machine spinning OpenMP threads made it ten times slower.
    """
    env = {**os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    return {**env, "OMP_NUM_THREADS": str(threads)} if threads else env




# Settings whose negative value means the preset's (0 means something of its own), and what a
# preset that does not say takes.
_NEGATIVE_FOR_PRESET = ("dropout", "save_interval_updates")
_PRESET_DEFAULTS = {"save_interval_updates": 2000, "max_update": 0}


@dataclass(frozen=True)
class TrainConfig:
    """What ``fairseq-train`` is told; zero / empty values take the preset's."""

    preset: str = setting("auto", "Model and optimizer preset: tiny (demo, CPU), fast (a few GPU minutes), "
                                  "compact (~100k pairs in two hours of two CPU cores), small (~100k pairs, GPU), base, big; "
                                  "auto: by the corpus's size and the device, tiny below 20,000 pairs, "
                                  "below 1M small on a GPU and compact on a CPU, else base.",
                          choices=lambda: ["auto", *sorted(PRESETS)])
    max_epoch: int = setting(0, "Stop after this many epochs (0: the preset's).")
    max_update: int = setting(0, "Stop after this many updates (0: the preset's; no limit but compact's 5,000).")
    max_tokens: int = setting(0, "Tokens per batch (0: the preset's).")
    lr: float = setting(0.0, "Peak learning rate (0: the preset's).")
    warmup_updates: int = setting(0, "Warm-up updates (0: the preset's).")
    dropout: float = setting(-1.0, "Dropout (negative: the preset's).")
    seed: int = setting(1, "Training seed.")
    patience: int = setting(10, "Stop when validation loss has not improved for this many validations.")
    # Validate and save (best and last, with the optimizer's state: 546 MB for `base`) about this
    # often, however short an epoch (0: at every epoch's end, fairseq's default; negative: the
    # preset's, SAVE_INTERVAL_UPDATES unless it says).
    save_interval_updates: int = -1
    fp16: bool = False
    cpu: bool = True
    extra_args: str = ""

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose one of {sorted(PRESETS)}")

    def value(self, name: str):
        """A setting of this config, or the preset's where it is left to the preset."""
        own = getattr(self, name)
        if name in _NEGATIVE_FOR_PRESET:
            return own if own >= 0 else PRESETS[self.preset].get(name, _PRESET_DEFAULTS.get(name))
        return own or PRESETS[self.preset].get(name, _PRESET_DEFAULTS.get(name))

    @property
    def max_positions(self) -> int:
        return PRESETS[self.preset]["max_positions"]

    @property
    def threads(self) -> int:
        return PRESETS[self.preset]["threads"] if self.cpu else 0

    def epochs_per_save(self, updates_per_epoch: int) -> int:
        """Epochs between validations and saves: one, or, when an epoch is shorter than
        ``save_interval_updates`` updates, as many as make about that many (a 200-pair corpus's
        epoch is a few updates, and a save at each end wrote two 546 MB checkpoints every few
        updates), a divisor of the epoch limit so that the last epoch still validates and saves."""
        interval = self.value("save_interval_updates")
        if not interval or not updates_per_epoch:
            return 1
        wanted = max(1, interval // updates_per_epoch)
        max_epoch = self.value("max_epoch")
        return max(d for d in range(1, min(wanted, max_epoch) + 1) if max_epoch % d == 0) if max_epoch else wanted

    def arguments(self, shared_vocabulary: bool, updates_per_epoch: int = 0) -> list[str]:
        """fairseq-train's options; ``updates_per_epoch`` (an estimate, updates_per_epoch()) sets
        how many epochs go between validations and saves (epochs_per_save)."""
        max_epoch, max_update = self.value("max_epoch"), self.value("max_update")
        epochs = self.epochs_per_save(updates_per_epoch)
        args = [
            *PRESETS[self.preset]["arch"], *_COMMON,
            "--lr", str(self.value("lr")), "--warmup-updates", str(self.value("warmup_updates")),
            "--clip-norm", str(PRESETS[self.preset].get("clip_norm", 0.0)),
            "--warmup-init-lr", "1e-07", "--dropout", str(self.value("dropout")),
            "--max-tokens", str(self.value("max_tokens")), "--seed", str(self.seed),
            "--max-source-positions", str(self.max_positions),
            "--max-target-positions", str(self.max_positions),
            "--share-all-embeddings" if shared_vocabulary else "--share-decoder-input-output-embed",
            "--patience", str(self.patience),
            "--no-epoch-checkpoints", "--save-interval-updates", str(self.value("save_interval_updates") if epochs == 1 else 0),
            "--keep-interval-updates", "1", "--skip-invalid-size-inputs-valid-test",
            "--log-format", "simple", "--log-interval", "50",
        ]
        if epochs > 1:  # at epochs' ends only, not also at the (now mid-epoch) update counts
            args += ["--save-interval", str(epochs), "--validate-interval", str(epochs)]
        if max_epoch:
            args += ["--max-epoch", str(max_epoch)]
        if max_update:
            args += ["--max-update", str(max_update)]
        args += ["--fp16"] if self.fp16 else []
        args += ["--cpu"] if self.cpu else []
        return [*args, *shlex.split(self.extra_args)]


def updates_per_epoch(data_dir: Path, max_tokens: int) -> int:
    """About how many updates an epoch of the binarized training pairs takes: fairseq fills a
    batch up to ``max_tokens`` of the longer side of length-sorted pairs (fairseq is imported here:
    the module runs fairseq's tools in subprocesses and loads no fairseq otherwise)."""
    from fairseq.data import indexed_dataset

    # An index's sizes are a view of its memory map, closed when the index is collected: keep both.
    indexes = [indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(str(data_dir / f"train.{SOURCE_LANG}-{TARGET_LANG}.{lang}")))
               for lang in (SOURCE_LANG, TARGET_LANG)]
    tokens = int(np.maximum(*(index.sizes for index in indexes)).astype(np.int64).sum())
    return max(1, -(-tokens // max_tokens))


def train(data_dir: Path, save_dir: Path, config: TrainConfig, shared_vocabulary: bool,
          on_line: Callable[[str], None] | None = None) -> Path:
    """Run (or resume) ``fairseq-train``; returns the best checkpoint (lowest validation loss)."""
    save_dir.mkdir(parents=True, exist_ok=True)
    has_valid = (data_dir / f"valid.{SOURCE_LANG}-{TARGET_LANG}.{SOURCE_LANG}.bin").exists()
    updates = updates_per_epoch(data_dir, config.value("max_tokens")) if config.value("save_interval_updates") else 0
    args = [str(data_dir), "--source-lang", SOURCE_LANG, "--target-lang", TARGET_LANG,
            "--save-dir", str(save_dir), *config.arguments(shared_vocabulary, updates)]
    if not has_valid:
        args.append("--disable-validation")
    run_tool("train", args, on_line, config.threads)
    best = save_dir / ("checkpoint_best.pt" if has_valid else "checkpoint_last.pt")
    if not best.exists():
        raise RuntimeError(f"fairseq-train finished without writing {best}")
    return best


# A training or validation summary line of fairseq-train, in its own format ("… | INFO |
# train_inner | epoch 001: …") or in logging's default one, which fairseq's takes the place of
# when a module logged before fairseq set its format ("INFO:train_inner:epoch 001: …", as here).
_PROGRESS_LINE = re.compile(r"(?:^|\| )INFO(?: \| |:)(?:train_inner|train|valid|watch)(?: \| |:)(epoch .*)")


def progress_message(line: str) -> str | None:
    """What a progress report says of a fairseq-train output line: its epoch, updates, loss (or
    the validation's), from a training or validation summary, or the collapse watch's figures
    (models.nmt.collapse_watch); None for any other line."""
    found = _PROGRESS_LINE.search(line)
    return found.group(1) if found else None


def updates_a_second(line: str) -> float | None:
    """A fairseq-train progress line's training speed (its ``ups=``), None for any other line."""
    found = re.search(r"\bups=([0-9.]+)", line)
    return float(found[1]) if found else None


def budget_line(config: TrainConfig, pairs: int, updates_per_epoch: int, speed: float) -> str:
    """What a training will cost, in one line: its preset, its update budget (the epochs' or
    ``max_update``'s, the smaller) and the time that takes at ``speed`` updates a second."""
    epochs, max_update = config.value("max_epoch"), config.value("max_update")
    updates = min(epochs * updates_per_epoch, max_update) if max_update else epochs * updates_per_epoch
    hours = updates / max(speed, 1e-9) / 3600
    took = f"{hours / 24:.0f} days" if hours >= 48 else f"{hours:.1f} hours"
    return (f"{config.preset} on this CPU for {pairs:,} pairs: up to {updates:,} updates ({epochs} epochs of ~{updates_per_epoch:,}); at the "
            f"first updates' {speed:.2f} a second, about {took}; a GPU trains it far faster, and --preset compact stops after 5,000 updates")


def is_watch_line(line: str) -> bool:
    """Whether a fairseq-train output line is the collapse watch's (shown whenever it comes)."""
    return bool(re.search(r"(?:^|\| )INFO(?: \| |:)watch(?: \| |:)", line))


def run_tool(name: str, args: list[str], on_line: Callable[[str], None] | None = None, threads: int = 0) -> None:
    """Run ``fairseq-<name>`` with this interpreter, passing each output line to ``on_line``.

    Raises with the last lines of its output when it fails.
    """
    entry = ["-m", "models.nmt.resumable_train"] if name == "train" else ["-c", f"from fairseq_cli.{name} import cli_main; cli_main()"]
    command = [sys.executable, *entry, *args]
    tail: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=fairseq_env(threads)) as process:
        for line in process.stdout:
            line = line.rstrip("\n")
            tail = [*tail[-40:], line]
            if on_line:
                on_line(line)
    if process.returncode:
        raise RuntimeError(f"fairseq-{name} exited with {process.returncode}:\n" + "\n".join(tail))


def checkpoint_config(checkpoint: str):
    """The model configuration a fairseq checkpoint was built with (old ``args`` or new ``cfg``)."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
    return state["args"] if state.get("args") is not None else state["cfg"]["model"]


def model_positions(checkpoint: str) -> tuple[int, int]:
    """The (source, target) positions a fairseq checkpoint was built for."""
    model_cfg = checkpoint_config(checkpoint)
    return int(model_cfg.max_source_positions), int(model_cfg.max_target_positions)
