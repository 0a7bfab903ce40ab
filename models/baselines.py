"""Untrained baselines for the model tables (ParaNMT Table 7): SIF and averaged word vectors.

Both read the same vectors file. SIF (Arora et al. 2017, :mod:`models.sif`) weights words by
a/(a + p(w)) from a word-count file and removes the first principal component, fitted on
reference sentences: here the training selection the trained models see, never the STS pairs.
The plain average is :class:`SIFEmbedder` with the same count for every word: every weight is
then equal, so its weighted average is the mean of the in-vocabulary token vectors times a
constant, which cosine ignores.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from corpus.wordvec import load_vectors, load_word_counts
from models.sif import SIFEmbedder

Embed = Callable[[list[str]], np.ndarray]

def vector_baselines(vectors_path: str | Path, counts_path: str | Path | None, reference: list[str]) -> dict[str, tuple[Embed, int]]:
    """``{name: (embed, dim)}``: the averaged vectors, and SIF when a count file is given (its
    component fitted on ``reference``)."""
    words, vectors = load_vectors(vectors_path)
    name = Path(vectors_path).stem
    uniform = SIFEmbedder(words, vectors, dict.fromkeys(words, 1))
    baselines = {f"Avg {name}": (uniform.weighted_average, vectors.shape[1])}
    if counts_path:
        sif = SIFEmbedder(words, vectors, load_word_counts(counts_path)).fit(reference)
        baselines[f"SIF {name} (+WR)"] = (sif.encode, vectors.shape[1])
    return baselines


def reference_sample(first: list[str], second: list[str], limit: int, seed: int = 1) -> list[str]:
    """Up to ``limit`` sentences from both sides of the training pairs, a seeded sample."""
    sentences = first + second
    if len(sentences) <= limit:
        return sentences
    keep = np.sort(np.random.default_rng(seed).choice(len(sentences), limit, replace=False))
    return [sentences[i] for i in keep]
