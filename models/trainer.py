"""Training paraphrastic encoders on sentence pairs (ParaNMT section 4.2, paper defaults).

One epoch visits the pairs in a seeded random order, in mini-batches of ``batch_size``;
``megabatch`` consecutive mini-batches form a pool. The pool is encoded without gradient,
each sentence's negative is chosen from the whole pool (:mod:`models.losses`), and then one
Adam update is taken per mini-batch, re-encoding its sentences and their negatives with
gradient. Recurrent models see a pair's word order shuffled on both sides with probability
``scramble``.

Reproducible and resumable: the epoch order and every pool's random draws (scrambling,
MIX/RAND negatives) are derived from (seed, epoch, pool index), and the torch RNG state
(dropout) is saved in the checkpoint, so a run resumed from a checkpoint at a pool boundary
ends with exactly the weights of an uninterrupted run (on CPU).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from tqdm import tqdm

from corpus.errors import InputError
from corpus.files import write_atomically
from corpus.wordvec import load_vectors
from models import encoder_io
from models.configs import EncoderConfig, TrainConfig
from models.encode import SentenceEncoder, default_device, embed_inputs
from models.encoders import (
    DeviceInputs,
    Inputs,
    build_encoder,
    moved_together,
    on_device,
    resolve_embed_dim,
    token_initialization,
)
from models.featurizers import SentenceBatches, featurize_batches, take
from models.losses import choose_negatives, initial_anchors, margin_loss, regularization
from models.ragged import RaggedFile
from models.training_pairs import TrainingPairs, negative_groups

# Under "paranmt", the logger whose INFO messages (the dev scores) the workflows' console shows.
log = logging.getLogger("paranmt.trainer")

CHECKPOINT, SUMMARY = "checkpoint.pt", "training.json"
IDS = "ids"  # the featurized training set, on disk while the run lasts (models.ragged.RaggedFile)
Embed = Callable[[list[str]], np.ndarray]
DevScore = Callable[[Embed], float]


@dataclass
class TrainResult:
    output_dir: Path
    steps: int  # updates done in total (including before a resume)
    losses: list[float] = field(default_factory=list)  # per update, this call only
    dev_scores: list[tuple[int, float]] = field(default_factory=list)  # (step, score), whole run
    best_score: float | None = None
    resumed_from: int | None = None  # step of the checkpoint this call started from


@dataclass
class RunState:
    """Where a run is: the position a checkpoint resumes from, and the dev history."""

    epoch: int = 0  # epochs finished
    pool: int = 0  # pools of the current epoch finished
    done: int = 0  # mini-batches of the current pool trained
    step: int = 0  # updates in total
    best: float | None = None  # best dev score so far
    dev: list[tuple[int, float]] = field(default_factory=list)  # (step, score)
    evaluated_at: int = -1  # step of the last dev evaluation

    def next_pool(self, pools_in_epoch: int) -> bool:
        """Move past the finished pool; True when that ended the epoch."""
        self.pool, self.done = self.pool + 1, 0
        if self.pool < pools_in_epoch:
            return False
        self.epoch, self.pool = self.epoch + 1, 0
        return True


def plan_epoch(pairs: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The epoch's mini-batches of pair indices; a trailing single pair joins the previous
    batch (a pair alone has no negative)."""
    order = np.random.default_rng([seed, epoch]).permutation(pairs)
    batches = [order[i : i + batch_size] for i in range(0, pairs, batch_size)]
    if len(batches) > 1 and len(batches[-1]) == 1:
        batches[-2:] = [np.concatenate(batches[-2:])]
    return batches


def plan_pools(batches: list[np.ndarray], megabatch: int, anneal: int, first_step: int) -> list[list[np.ndarray]]:
    """Consecutive mini-batches grouped into pools of ``megabatch``; with ``anneal`` > 0 a pool
    starting at update ``s`` holds ``min(megabatch, 1 + s // anneal)`` mini-batches, so negatives
    are mined from a pool that grows while the model learns (the authors' 2021 code)."""
    pools, at = [], 0
    while at < len(batches):
        size = min(megabatch, 1 + (first_step + at) // anneal) if anneal else megabatch
        pools.append(batches[at : at + size])
        at += size
    return pools


class Trainer:
    """Holds the model, optimizer and featurized data of one training run in ``output_dir``."""

    def __init__(
        self,
        pairs: TrainingPairs | tuple[Sequence[str], Sequence[str]],
        output_dir: str | Path,
        encoder_config: EncoderConfig | None = None,
        config: TrainConfig | None = None,
        word_vectors: str | Path | None = None,
    ):
        """``pairs``: read a batch at a time (:class:`TrainingPairs`), or two lists of sentences."""
        self.config = config or TrainConfig()
        self.config.validate()
        encoder_config = encoder_config or EncoderConfig()
        if word_vectors and encoder_config.tokens != "words":
            raise InputError("word vectors initialise word embeddings: train with tokens='words' (--tokens words)")
        if not isinstance(pairs, TrainingPairs):
            pairs = TrainingPairs.from_sentences(pairs)
        self.pairs, self.empty_side_pairs = pairs.count()
        # Siblings, and pairs that share a sentence (models.training_pairs.negative_groups): no negatives of each other.
        self.groups = negative_groups(pairs, self.config.group_negatives)
        self.output_dir = Path(output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.ids_dir = self.output_dir / IDS
        self.device = torch.device(default_device() if self.config.device == "auto" else self.config.device)
        vectors = load_vectors(word_vectors) if word_vectors else None
        # The whole training set is featurized once: sentence j is side 1 of pair j, pairs + j its side 2.
        self.encoder_config, self.featurizers, self.data = self._setup(encoder_config, pairs.sentences, vectors)
        torch.manual_seed(self.config.seed)
        sizes = encoder_io.sizes_of(self.featurizers)
        init = None
        if vectors is not None and "tokens" in self.featurizers:  # tokens are words (checked above)
            init, found = token_initialization(self.featurizers["tokens"].vocabulary.symbols, *vectors, seed=self.config.seed)
            log.info("word vectors: %d of %d vocabulary words initialised from %s", found, len(init), word_vectors)
        self.encoder = build_encoder(self.encoder_config, sizes, init).to(self.device)
        self.anchors = initial_anchors(self.encoder, self.config.lambda_c, self.config.lambda_w)
        # The fused kernel is ~9x faster than the default on CPU (dense updates of big embedding tables).
        fused = self.device.type in ("cpu", "cuda")
        self.optimizer = torch.optim.Adam(self.encoder.parameters(), lr=self.config.lr, fused=fused)
        self._planned: tuple[int, list[list[np.ndarray]]] = (-1, [])  # (epoch, its pools)

    def _setup(self, requested: EncoderConfig, sentences: SentenceBatches,
               vectors) -> tuple[EncoderConfig, encoder_io.Featurizers, dict[str, RaggedFile]]:
        """Fit featurizers and save them with the config, or reuse those of an interrupted run."""
        resolved = resolve_embed_dim(requested, vectors[1].shape[1] if vectors else None)
        if (self.output_dir / encoder_io.CONFIG).exists():
            saved, featurizers = encoder_io.load_setup(self.output_dir)
            if saved != resolved:
                raise ValueError(f"{self.output_dir} holds a run of a different model: {saved} (asked for {resolved})")
            return saved, featurizers, {feature: featurize_batches(featurizer, sentences, self.ids_dir / feature)
                                        for feature, featurizer in featurizers.items()}
        extra = vectors[0] if vectors else ()  # word vectors come with tokens = words
        featurizers, inputs = encoder_io.fit_featurizers(resolved, sentences, extra, self.config.seed, self.ids_dir)
        encoder_io.save_setup(self.output_dir, resolved, featurizers)
        return resolved, featurizers, inputs

    # -- one pool ---------------------------------------------------------------------------

    def _pool(self, batches: list[np.ndarray], rng: np.random.Generator) -> Inputs:
        """The pool's 2P sentences (side 1 of its pairs, then side 2), scrambled if needed."""
        pairs = np.concatenate(batches)
        pool = take(self.data, np.concatenate([pairs, pairs + self.pairs]))
        if self.encoder.scrambles and self.config.scramble > 0 and "tokens" in pool:
            chosen = np.flatnonzero(rng.random(len(pairs)) < self.config.scramble)
            pool["tokens"] = pool["tokens"].shuffled_rows(np.concatenate([chosen, chosen + len(pairs)]), rng)
        return pool

    def _updates(self, pool: Inputs, negatives: np.ndarray, members: list[np.ndarray]) -> list[tuple[DeviceInputs, Tensor]]:
        """Every update's inputs, on the device in one copy: its pairs' sentences and their
        negatives, each distinct sentence once (with M = 1 every negative is a batch sentence,
        which halves the work, as in the authors' in-batch code), and where each of the 4B
        rows (g1, g2, t1, t2) is among them."""
        size, start = len(negatives) // 2, 0
        distinct, where = [], []
        for batch in members:
            rows = np.arange(start, start + len(batch))
            start += len(batch)
            unique, inverse = np.unique(np.concatenate([rows, rows + size, negatives[rows], negatives[rows + size]]), return_inverse=True)
            distinct.append(take(pool, unique))
            where.append(inverse)
        return list(zip(on_device(distinct, self.device), moved_together(where, self.device), strict=True))

    def _update(self, inputs: DeviceInputs, where: Tensor, step: int) -> Tensor:
        """One Adam step (update number ``step``, counted from 0, sets the learning rate); the loss
        stays on the device (reading it would wait for the step)."""
        c = self.config
        if c.lr_schedule == "linear":
            for group in self.optimizer.param_groups:
                group["lr"] = c.lr * (1.0 - step / self._scheduled_steps)
        loss = margin_loss(self.encoder(inputs), where, c.margin)
        total = loss + regularization(self.encoder, self.anchors, c.lambda_c, c.lambda_w)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        self.optimizer.step()
        return loss.detach()

    # -- checkpoints --------------------------------------------------------------------------

    def _save_checkpoint(self, state: RunState) -> None:
        saved = {
            "encoder": self.encoder.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            **asdict(state),
        }
        encoder_io.save_torch(saved, self.output_dir / CHECKPOINT)

    def _load_checkpoint(self) -> RunState | None:
        path = self.output_dir / CHECKPOINT
        if not path.exists():
            return None
        saved = torch.load(path, map_location=self.device, weights_only=False)
        self.encoder.load_state_dict(saved.pop("encoder"))
        self.optimizer.load_state_dict(saved.pop("optimizer"))
        torch.set_rng_state(saved.pop("torch_rng").cpu())
        cuda_rng = saved.pop("cuda_rng")
        if cuda_rng is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(cuda_rng)
        return RunState(**{f.name: saved[f.name] for f in fields(RunState)})

    def sentence_encoder(self) -> SentenceEncoder:
        return SentenceEncoder(self.encoder_config, self.featurizers, self.encoder)

    # -- the loop -----------------------------------------------------------------------------

    def run(
        self,
        dev: DevScore | None = None,
        on_step: Callable[[int, float], None] | None = None,
        progress: Callable[[str, float], None] | None = None,
    ) -> TrainResult:
        """Train (or resume) to the end; ``dev(embed) -> score`` (higher is better, e.g. STS
        2017 Pearson × 100) picks the saved ``model.pt``; without it the last weights are kept.
        ``on_step(step, loss)`` is called for every update and ``progress(message, percent)``
        once, after every pool (losses are read from the device once per pool).

        The method, pool by pool: plan the epoch's mini-batches and group them into pools;
        for each pool choose the negatives, then take one update per mini-batch; at the end
        of an epoch (or every ``eval_every`` updates) score the dev set, keeping the best
        weights; checkpoint at those points and every ``checkpoint_every`` updates."""
        c = self.config
        state = self._load_checkpoint() or RunState()
        result = TrainResult(self.output_dir, state.step, dev_scores=list(state.dev), best_score=state.best, resumed_from=state.step or None)
        batches_per_epoch = len(plan_epoch(self.pairs, c.batch_size, c.seed, 0))
        # The schedule spans every epoch whatever --max-steps says, so a run stopped early and
        # continued takes the very updates of an uninterrupted one.
        self._scheduled_steps = c.epochs * batches_per_epoch
        total = min(self._scheduled_steps, c.max_steps or self._scheduled_steps)
        self._clock = (time.time(), 0)  # (start, pairs trained in this call)
        self._bar = tqdm(total=total, initial=state.step, desc=f"train {self.encoder_config.model}", unit="step", mininterval=1.0, disable=None)
        while state.epoch < c.epochs and not self._step_limit_reached(state):
            pools = self._epoch_pools(state.epoch)
            steps_before = state.step
            self._train_pool(pools[state.pool], state, result, on_step)
            if state.done < len(pools[state.pool]):
                break  # max_steps reached inside the pool
            trained_epoch = state.epoch
            epoch_end = state.next_pool(len(pools))
            self._evaluate_and_checkpoint_when_due(state, steps_before, epoch_end, result, dev)
            if progress:
                progress(f"epoch {trained_epoch + 1}/{c.epochs}, step {state.step}{self._dev_note(result)}", 100.0 * state.step / max(total, 1))
        self._bar.close()
        self._evaluate(state, result, dev)
        self._checkpoint(state, dev)
        result.steps = state.step
        self._write_summary(result)
        if self.ids_dir.exists():
            shutil.rmtree(self.ids_dir)
        return result

    def _evaluate_and_checkpoint_when_due(self, state: RunState, steps_before: int, epoch_end: bool, result: TrainResult,
                                          dev: DevScore | None) -> None:
        """After a pool: score the dev set at an epoch's end or where the pool's updates passed a
        multiple of ``eval_every``; checkpoint then too, and where they passed one of ``checkpoint_every``."""
        def crossed(every: int) -> bool:
            return every > 0 and state.step // every > steps_before // every

        if epoch_end or crossed(self.config.eval_every):
            self._evaluate(state, result, dev)
        if epoch_end or crossed(self.config.eval_every) or crossed(self.config.checkpoint_every):
            self._checkpoint(state, dev)

    def _step_limit_reached(self, state: RunState) -> bool:
        return bool(self.config.max_steps) and state.step >= self.config.max_steps

    def _epoch_pools(self, epoch: int) -> list[list[np.ndarray]]:
        """The epoch's pools of mini-batches (planned once per epoch)."""
        if self._planned[0] != epoch:
            c = self.config
            batches = plan_epoch(self.pairs, c.batch_size, c.seed, epoch)
            self._planned = (epoch, plan_pools(batches, c.megabatch, c.megabatch_anneal, epoch * len(batches)))
        return self._planned[1]

    def _train_pool(self, members: list[np.ndarray], state: RunState, result: TrainResult, on_step) -> None:
        """Choose the pool's negatives, then update on its remaining mini-batches; their losses
        are read once, after the pool (``on_step`` then sees each update's)."""
        c = self.config
        rng = np.random.default_rng([c.seed, state.epoch, state.pool])
        pool = self._pool(members, rng)
        groups = None if self.groups is None else self.groups[np.concatenate(members)]
        negatives = choose_negatives(
            embed_inputs(self.encoder, pool, 4 * c.batch_size), c.negatives, rng, c.negative_side, c.below_partner, groups
        )
        first, losses = state.done, []
        for inputs, where in self._updates(pool, negatives, members)[first:]:
            if self._step_limit_reached(state):
                break
            losses.append(self._update(inputs, where, state.step))
            state.step, state.done = state.step + 1, state.done + 1
        if not losses:
            return
        values = torch.stack(losses).tolist()
        for offset, loss in enumerate(values):
            result.losses.append(loss)
            if on_step:
                on_step(state.step - len(values) + offset + 1, loss)
        start, seen = self._clock
        self._clock = (start, seen + sum(len(batch) for batch in members[first : state.done]))
        self._bar.update(len(values))
        self._bar.set_postfix(loss=f"{values[-1]:.4f}", pairs_s=f"{self._clock[1] / max(time.time() - start, 1e-9):.0f}", refresh=False)

    def _evaluate(self, state: RunState, result: TrainResult, dev: DevScore | None) -> None:
        """Score the dev set once per step reached; keep the weights when they are the best."""
        if dev is None or state.evaluated_at == state.step:
            return
        state.evaluated_at = state.step
        score = float(dev(self.sentence_encoder().encode))
        state.dev.append((state.step, score))
        result.dev_scores.append((state.step, score))
        epoch = state.epoch if state.pool == 0 else state.epoch + 1  # at an epoch's end next_pool has moved on
        log.info("epoch %d/%d, step %d: dev score %.2f", epoch, self.config.epochs, state.step, score)
        if state.best is None or score > state.best:
            state.best = result.best_score = score
            encoder_io.save_weights(self.output_dir, self.encoder)

    def _checkpoint(self, state: RunState, dev: DevScore | None) -> None:
        self._save_checkpoint(state)
        if dev is None:  # no dev set: the model is the latest weights
            encoder_io.save_weights(self.output_dir, self.encoder)

    @staticmethod
    def _dev_note(result: TrainResult) -> str:
        if not result.dev_scores:
            return ""
        return f", dev {result.dev_scores[-1][1]:.2f} (best {result.best_score:.2f})"

    def _write_summary(self, result: TrainResult) -> None:
        start, pairs_seen = self._clock
        seconds = time.time() - start
        summary = {
            "pairs": self.pairs,
            "pairs_with_an_empty_side_left_out": self.empty_side_pairs,
            "steps": result.steps,
            "best_dev": result.best_score,
            "dev": result.dev_scores,
            "seconds_this_run": round(seconds, 3),
            "pairs_per_second": round(pairs_seen / seconds, 1) if seconds > 0 else math.nan,
            "vocabulary": encoder_io.sizes_of(self.featurizers),
            "device": str(self.device),
            "train": asdict(self.config),
            "encoder": self.encoder_config.to_dict(),
        }
        text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
        write_atomically(self.output_dir / SUMMARY, lambda p: p.write_text(text))


def train_encoder(
    pairs: str | Path | tuple[Sequence[str], Sequence[str]],
    output_dir: str | Path,
    encoder_config: EncoderConfig | None = None,
    config: TrainConfig | None = None,
    dev: DevScore | None = None,
    word_vectors: str | Path | None = None,
    columns: Sequence[str] = ("reference", "translation"),
    **callbacks,
) -> TrainResult:
    """Train an encoder on ``pairs`` (a Parquet dataset / TSV path or two lists of sentences)
    into ``output_dir``, resuming from its checkpoint if one is there. The directory is then
    a model for :func:`models.encode.load_encoder`. A corpus's words are read from its
    ``*_tok`` columns (tokenized once, when it was built), not tokenized again."""
    if isinstance(pairs, str | Path):
        pairs = TrainingPairs.from_path(pairs, columns)
    return Trainer(pairs, output_dir, encoder_config, config, word_vectors).run(dev, **callbacks)
