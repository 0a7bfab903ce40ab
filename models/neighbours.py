"""The negatives the mega-batch miner picks for a few sentences at several pool sizes (the
ParaNMT paper's Table 6).

The trainer plans an epoch as seeded mini-batches and pools ``M`` consecutive ones; each
sentence's negative is the most similar other pool sentence that is neither itself nor its
partner (:func:`models.losses.hardest_negatives`). Here one trained model embeds the training
pairs once, and for each ``M`` the pool is the first ``M`` mini-batches of the same epoch
plan, so the probes (pairs of the first mini-batch) are in every pool and only the pool size
changes from column to column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from models.losses import hardest_negatives
from models.trainer import plan_epoch

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Negative:
    """A pool sentence: side ``side`` (0: first, 1: second) of training pair ``pair``."""

    pair: int
    side: int
    cosine: float


def megabatch_negatives(
    first: np.ndarray,
    second: np.ndarray,
    batches: Sequence[np.ndarray],
    sizes: Sequence[int],
    probes: Sequence[int],
) -> dict[int, list[Negative]]:
    """For each mega-batch size M, the negative of side 1 of each probe pair when the pool is
    the first M of ``batches`` (arrays of pair indices; ``first``/``second`` hold the
    embeddings of every pair's two sides). Probes must be in the first mini-batch."""
    if any(probe not in set(batches[0].tolist()) for probe in probes):
        raise ValueError("probe pairs must belong to the first mini-batch, which every pool contains")
    found = {}
    for size in sizes:
        pool = np.concatenate(list(batches[:size]))
        embeddings = np.concatenate([first[pool], second[pool]])
        chosen = hardest_negatives(torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)))
        unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
        row_of = {int(pair): row for row, pair in enumerate(pool)}
        picks = [int(chosen[row_of[probe]]) for probe in probes]
        found[size] = [
            Negative(int(pool[pick % len(pool)]), pick // len(pool), float(unit[row_of[probe]] @ unit[pick]))
            for probe, pick in zip(probes, picks, strict=True)
        ]
    return found


def negative_examples(
    embed: Embed,
    pairs: tuple[Sequence[str], Sequence[str]],
    sizes: Sequence[int],
    batch_size: int,
    probes: int,
    seed: int = 1,
) -> list[dict]:
    """Table 6 rows: for the first ``probes`` pairs of the seeded epoch plan, the sentence, its
    paraphrase and the negative picked at each pool size (``"pool_pairs"`` says how many pairs
    the pool really held: fewer than M × batch when the data is small)."""
    first, second = list(pairs[0]), list(pairs[1])
    batches = plan_epoch(len(first), batch_size, seed, 0)
    largest = np.concatenate(batches[: max(sizes)])
    # Only the pairs of the largest pool are embedded: the others are never candidates.
    encoded = np.asarray(embed([first[i] for i in largest] + [second[i] for i in largest]))
    vectors = np.zeros((2, len(first), encoded.shape[1]), np.float32)
    vectors[0, largest], vectors[1, largest] = encoded[: len(largest)], encoded[len(largest) :]
    chosen = [int(pair) for pair in batches[0][:probes]]
    picked = megabatch_negatives(vectors[0], vectors[1], batches, sizes, chosen)
    sides = (first, second)
    return [
        {
            "sentence": first[probe],
            "paraphrase": second[probe],
            "negatives": {
                str(size): {
                    "sentence": sides[negative.side][negative.pair],
                    "cosine": negative.cosine,
                    "pool_pairs": int(sum(len(b) for b in batches[:size])),
                }
                for size, negative in ((size, picked[size][index]) for size in sizes)
            },
        }
        for index, probe in enumerate(chosen)
    ]
