"""Sentencepiece models trained reproducibly: the same bytes on every machine and in every run."""

from __future__ import annotations

import io
import math
import random
from collections.abc import Iterable
from itertools import islice


def train_sentencepiece(sentences: Iterable[str], seed: int, input_sentence_size: int = 0, **options) -> bytes:
    """A sentencepiece model trained in memory, the same bytes on every machine and in every run:
    seeded, with a fixed thread count (the pieces depend on how the work is split, not on the
    cores), at most ``input_sentence_size`` sentences (0: all) drawn by :func:`seeded_sample`
    (sentencepiece's own sample differed from one process to the next whatever its seed), the
    vocabulary size a soft limit (a small corpus gets as many pieces as it supports instead of
    failing), no BOS/EOS pieces; ``options`` are the trainer's own."""
    import sentencepiece as spm

    if input_sentence_size:
        sample = seeded_sample(sentences, input_sentence_size, seed)
        sample.reverse()
        sentences = (sample.pop() for _ in range(len(sample)))  # in order, each let go once sentencepiece has copied it
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, hard_vocab_limit=False, bos_id=-1, eos_id=-1, num_threads=16, minloglevel=2, **options,
    )
    return model.getvalue()


def seeded_sample(items: Iterable, size: int, seed: int) -> list:
    """``size`` of ``items`` drawn uniformly without replacement (all of them when there are no
    more), in one pass, the same for the same items and seed: reservoir sampling by Li's
    algorithm L, which draws random numbers for the items it keeps, not for every item read."""
    rng, items = random.Random(seed), iter(items)
    sample = list(islice(items, size))
    if len(sample) < size:
        return sample

    def log_uniform() -> float:  # log of a uniform draw in (0, 1]
        return math.log(1.0 - rng.random())

    log_weight = log_uniform() / size
    while True:
        # log(1 - e^w) = log(-expm1(w)): exact for the weights near 1 of a large sample
        skipped = math.floor(log_uniform() / math.log(-math.expm1(log_weight))) if log_weight else 0
        chosen = next(islice(items, skipped, None), _END)
        if chosen is _END:
            return sample
        sample[rng.randrange(size)] = chosen
        log_weight += log_uniform() / size


_END = object()
