"""SIF sentence embeddings (Arora et al. 2017; SPEC.md section 5) and common component removal.

A sentence is the average over its in-vocabulary tokens of a/(a + p(w)) * v_w, p(w) the word's
frequency in a count file; then the projection on the first principal component (no
centering, as the original code) is removed. Unlike the original code, the component is fitted
once on reference sentences chosen by the user, never on the test pairs, and saved with the
model, so an embedding does not depend on which other sentences are encoded with it.

Sentences are lowercased and Moses-tokenized (`corpus.text.tokenize`), and the same tokens are
looked up in the vectors and the counts. Tokens without a vector are ignored (the original
mapped them to an arbitrary vector). Tokens with a vector but no count (punctuation and digits
with the enwiki counts, whose corpus had both stripped) are dropped by default, since their
p(w) is unknown; `drop_uncounted=False` gives them weight 1 (p(w) = 0) as the original code
did. Dropping scored 52.0 vs 51.8 on the STS 2017 development set (GloVe-4k, see
docs/README-sts.md). A sentence with no known token embeds to the zero vector.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import sparse

from corpus.text import tokenize

DEFAULT_A = 1e-3


class CommonComponentRemoval:
    """Remove the projection on the top principal components of reference embeddings.

    Works on the output of any encoder: fit on embeddings of reference sentences, then
    `transform` (or wrap an embed function with `apply`).
    """

    def __init__(self, components: np.ndarray | None = None):
        self.components = None if components is None else np.asarray(components, np.float64)

    def fit(self, embeddings: np.ndarray, n_components: int = 1) -> CommonComponentRemoval:
        """Top right singular vectors of the uncentered (n, dim) matrix."""
        embeddings = np.asarray(embeddings, dtype=np.float64)
        if embeddings.ndim != 2 or embeddings.shape[0] < n_components:
            raise ValueError(
                f"need at least {n_components} reference embeddings as rows, got shape "
                f"{embeddings.shape}"
            )
        _, _, right = np.linalg.svd(embeddings, full_matrices=False)
        self.components = right[:n_components]
        return self

    def transform(self, embeddings: np.ndarray) -> np.ndarray:
        """x - (x . u) u for each fitted component u; the result keeps the input's dtype."""
        if self.components is None:
            raise RuntimeError("CommonComponentRemoval is not fitted: call fit(reference) first")
        embeddings = np.asarray(embeddings)
        values = embeddings.astype(np.float64)
        removed = values - (values @ self.components.T) @ self.components
        return removed.astype(embeddings.dtype, copy=False)

    def apply(self, embed):
        """An embed function whose output has the common components removed."""
        return lambda sentences: self.transform(embed(sentences))

    def save(self, path: str | Path) -> None:
        if self.components is None:
            raise RuntimeError("CommonComponentRemoval is not fitted: nothing to save")
        np.savez(path, components=self.components)

    @classmethod
    def load(cls, path: str | Path) -> CommonComponentRemoval:
        with np.load(path, allow_pickle=False) as data:
            return cls(data["components"])


class SIFEmbedder:
    """Smooth-inverse-frequency weighted averages of word vectors, with common component removal."""

    def __init__(
        self,
        words: list[str],
        vectors: np.ndarray,
        counts: dict[str, int],
        a: float = DEFAULT_A,
        drop_uncounted: bool = True,
    ):
        total = sum(counts.values())
        if total <= 0:
            raise ValueError("word counts are empty: p(w) cannot be estimated")
        frequency = np.array([counts.get(word, 0) for word in words], dtype=np.float64) / total
        weights = a / (a + frequency)
        if drop_uncounted:
            weights[frequency == 0] = 0.0
        self._setup(words, vectors, weights, a, CommonComponentRemoval())

    def _setup(
        self,
        words: list[str],
        vectors: np.ndarray,
        weights: np.ndarray,
        a: float,
        removal: CommonComponentRemoval,
    ) -> None:
        if len(words) != len(vectors) or len(weights) != len(vectors):
            raise ValueError(
                f"{len(words)} words, {len(vectors)} vectors, {len(weights)} weights: must agree"
            )
        self.words = list(words)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.a = a
        self.removal = removal
        self._index = {word: row for row, word in enumerate(self.words)}

    def bag_matrix(self, sentences: list[str]) -> sparse.csr_matrix:
        """(sentences, vocabulary) float32 matrix of weight / (known tokens in the sentence)."""
        tokens = [tokenize(sentence, "en", lowercase=True) for sentence in sentences]
        rows = np.repeat(np.arange(len(sentences)), [len(sentence) for sentence in tokens])
        columns = np.fromiter(
            (self._index.get(token, -1) for sentence in tokens for token in sentence),
            dtype=np.int64,
            count=len(rows),
        )
        known = columns >= 0
        known[known] = self.weights[columns[known]] > 0
        rows, columns = rows[known], columns[known]
        lengths = np.bincount(rows, minlength=len(sentences))
        values = (self.weights[columns] / lengths[rows]).astype(np.float32)
        # Repeated (row, word) entries are summed by the conversion, as a repeated word should.
        return sparse.csr_matrix((values, (rows, columns)), shape=(len(sentences), len(self.words)))

    def weighted_average(self, sentences: list[str]) -> np.ndarray:
        """SIF embeddings before common component removal ("GloVe+W" in the paper)."""
        return np.asarray(self.bag_matrix(sentences) @ self.vectors, dtype=np.float32)

    def fit(self, reference_sentences: list[str], n_components: int = 1) -> SIFEmbedder:
        """Fit the removed component(s) on reference sentences (never the test pairs)."""
        self.removal.fit(self.weighted_average(reference_sentences), n_components)
        return self

    def encode(self, sentences: list[str]) -> np.ndarray:
        """SIF embeddings ("GloVe+WR"): weighted average minus the fitted component(s)."""
        return self.removal.transform(self.weighted_average(sentences))

    __call__ = encode

    def save(self, path: str | Path) -> None:
        """One .npz with words, vectors, weights, a and the fitted component(s)."""
        if self.removal.components is None:
            raise RuntimeError("fit the SIF model on reference sentences before saving it")
        np.savez(
            path,
            # One UTF-8 blob: a fixed-width string array would pad every word to the longest.
            words=np.frombuffer("\n".join(self.words).encode("utf-8"), dtype=np.uint8),
            vectors=self.vectors,
            weights=self.weights,
            a=np.float64(self.a),
            components=self.removal.components,
        )

    @classmethod
    def load(cls, path: str | Path) -> SIFEmbedder:
        with np.load(path, allow_pickle=False) as data:
            model = cls.__new__(cls)
            model._setup(
                data["words"].tobytes().decode("utf-8").split("\n"),
                data["vectors"],
                data["weights"],
                float(data["a"]),
                CommonComponentRemoval(data["components"]),
            )
        return model
