"""PP similarity: cosine of the word-averaged embeddings of the two sides (ParaNMT section 3).

A word-averaging ("paragram-phrase") model is a vocabulary and an embedding matrix; a
sentence's embedding is the mean of the vectors of its lowercased tokens. Tokens missing from
the vocabulary are skipped; a side with no known token has no embedding and the pair gets
similarity 0.0. A batch is scored with one sparse (pairs × vocabulary) averaging matrix per
side times the embedding matrix, so only the vectors of words that occur are read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sparse

from corpus.tokenbatch import Side, TokenBatch


class WordAverager:
    """A word-averaging model: ``words[i]`` has the vector ``vectors[i]``."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray):
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.index = {}
        for row, word in enumerate(words):
            self.index.setdefault(word, row)  # a repeated word keeps its first vector

    def rows_of(self, tokens: Sequence[str]) -> np.ndarray:
        """Vocabulary row of each token, -1 when unknown (one dict lookup per distinct token)."""
        get = self.index.get
        return np.fromiter((get(token, -1) for token in tokens), dtype=np.int64, count=len(tokens))

    def _averages(self, side: Side, rows_of_ids: np.ndarray) -> np.ndarray:
        rows = rows_of_ids[side.ids]
        # the tokens are in pair order, so the known ones are already the rows of a CSR matrix
        known = np.flatnonzero(rows >= 0)
        known_before = np.searchsorted(known, side.offsets)
        counts = np.diff(known_before)
        weights = np.repeat(np.float32(1) / np.maximum(counts, 1, dtype=np.float32), counts)
        averaging = sparse.csr_matrix((weights, rows[known], known_before), shape=(len(counts), len(self.vectors)))
        return averaging @ self.vectors

    def embed(self, batch: TokenBatch) -> tuple[np.ndarray, np.ndarray]:
        """Averaged embeddings (pairs × dim) of the references and of the translations."""
        rows_of_ids = self.rows_of(batch.vocabulary)
        return self._averages(batch.reference, rows_of_ids), self._averages(batch.translation, rows_of_ids)

    def similarity(self, batch: TokenBatch) -> np.ndarray:
        """float64 cosine per pair; 0.0 where a side has no known word."""
        a, b = self.embed(batch)
        # float32 dot products (a float64 accumulator made them 5× slower for about 1e-6 of
        # the cosine), float64 from there on
        dots, aa, bb = (np.einsum("ij,ij->i", x, y).astype(np.float64) for x, y in ((a, b), (a, a), (b, b)))
        norms = np.sqrt(aa * bb)
        return np.divide(dots, norms, out=np.zeros(len(dots)), where=norms > 0)
