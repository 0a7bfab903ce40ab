"""Encode API: embed sentences with a trained encoder and score sentence pairs by cosine.

>>> encoder = load_encoder("work/encoders/latest")
>>> vectors = encoder.encode(["a man is playing a guitar .", "someone plays guitar"])
>>> encoder.score(["a man is playing a guitar ."], ["someone plays guitar"])
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from models.configs import EncoderConfig
from models.encoder_io import Featurizers, load_model
from models.encoders import Encoder, Inputs, on_device
from models.featurizers import WordFeaturizer, featurize, take
from models.vocabulary import SPECIALS

# Averaging models featurize and embed this many sentences at a time, whatever the batch size:
# an average costs the same in any batch, and this many amortize each call's fixed work (a
# sentencepiece thread, array set-up) while their arrays (~1 KB a sentence) stay in the CPU's
# cache; the fastest of 256 to 20,000 for trigram_word on one core (docs/2026-11-26-encoding-speed.md).
AVERAGING_BATCH = 4096


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@contextmanager
def evaluating(encoder: Encoder) -> Iterator[None]:
    """Without gradient or dropout; the encoder's mode is restored after."""
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        encoder.train(was_training)


def embed_inputs(encoder: Encoder, inputs: Inputs, batch_size: int) -> torch.Tensor:
    """Embeddings of featurized sentences, in their order, without gradient or dropout.

    Sentences are encoded longest first, so each batch holds similar lengths (little padding
    for the recurrent and convolutional models), then put back in input order. All batches go
    to the device in one copy.
    """
    device = next(encoder.parameters()).device
    feature = "tokens" if "tokens" in inputs else next(iter(inputs))
    order = np.argsort(-inputs[feature].lengths, kind="stable")
    batches = on_device([take(inputs, order[i : i + batch_size]) for i in range(0, len(order), batch_size)], device)
    with evaluating(encoder):
        chunks = [encoder(batch) for batch in batches]
    if not chunks:
        return torch.empty(0, encoder.out_dim, device=device)
    out = torch.empty(len(order), encoder.out_dim, device=device)
    out[torch.as_tensor(order, device=device)] = torch.cat(chunks)
    return out


class SentenceEncoder:
    """A trained encoder with its featurizers: sentences in, vectors out."""

    def __init__(self, config: EncoderConfig, featurizers: Featurizers, encoder: Encoder):
        self.config, self.featurizers, self.encoder = config, featurizers, encoder

    @property
    def dim(self) -> int:
        return self.encoder.out_dim

    def encode(self, sentences: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """float32 array (len(sentences), dim); ``batch_size``: sentences per forward pass of the
        recurrent and convolutional models (averaging models take ``AVERAGING_BATCH``)."""
        sentences = list(sentences)
        if self.encoder.length_bound:
            return embed_inputs(self.encoder, featurize(self.featurizers, sentences), batch_size).float().cpu().numpy()
        # Averages cost the same in any order: each batch is featurized and embedded in turn.
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        with evaluating(self.encoder):
            for start in range(0, len(sentences), AVERAGING_BATCH):
                batch = sentences[start : start + AVERAGING_BATCH]
                out[start : start + len(batch)] = self.encoder(featurize(self.featurizers, batch)).float().cpu().numpy()
        return out

    __call__ = encode  # an ``embed`` callable for models.evaluation

    def score(self, sentences_a: Sequence[str], sentences_b: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """Cosine similarity of each pair (a[i], b[i]); NaN for a pair with an empty (or only
        whitespace) side: there is nothing to compare, as training leaves such pairs out."""
        if len(sentences_a) != len(sentences_b):
            raise ValueError(f"{len(sentences_a)} first sentences but {len(sentences_b)} second ones")
        a, b = self.encode(sentences_a, batch_size), self.encode(sentences_b, batch_size)
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        scores = (a * b).sum(axis=1) / np.maximum(norms, 1e-12)
        scores[[not (one.strip() and other.strip()) for one, other in zip(sentences_a, sentences_b, strict=True)]] = np.nan
        return scores

    def word_vectors(self) -> tuple[list[str], np.ndarray]:
        """(words, vectors) of a Word Avg model's trained embeddings: averaging them over a
        sentence's lowercased Moses tokens is the model (the paper's PP similarity vectors)."""
        featurizer = self.featurizers.get("tokens")
        components = [c for c in self.encoder.components if c.feature == "tokens"]
        if self.config.model != "word_avg" or not isinstance(featurizer, WordFeaturizer):
            raise ValueError(f"word vectors come from a word_avg model over words, not {self.config.model} over {self.config.tokens}")
        matrix = components[0].embedding_tables()[0].detach().float().cpu().numpy()
        return featurizer.vocabulary.symbols, matrix


def load_encoder(path: str | Path, device: str | None = None) -> SentenceEncoder:
    """A trained encoder directory (as written by the trainer / ``TrainEncoder``)."""
    config, featurizers, encoder = load_model(Path(path), device or default_device())
    return SentenceEncoder(config, featurizers, encoder)


def save_word_vectors(words: Sequence[str], vectors: np.ndarray, path: str | Path) -> None:
    """word2vec text format with header (readable by ``corpus.wordvec.load_vectors``); the
    padding and unknown symbols are left out."""
    keep = [i for i, word in enumerate(words) if word not in SPECIALS]
    numbers = io.StringIO()
    np.savetxt(numbers, vectors[keep], fmt="%.7g", delimiter=" ")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{len(keep)} {vectors.shape[1]}\n")
        handle.writelines(f"{words[i]} {line}\n" for i, line in zip(keep, numbers.getvalue().splitlines(), strict=True))
