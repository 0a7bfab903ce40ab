"""Language identification of a whole batch of sentences with langid.py's model (Lui & Baldwin
2012; it ships inside the package, so the ParaNMT release's "both sides English" filter works
offline), vectorized.

langid.py classifies one sentence at a time in pure Python (milliseconds a sentence, a loop over
its bytes); the scorer stage sees millions of pairs. The model is a byte automaton whose states
emit n-gram features and a naive Bayes table of log P(feature | language). Both are rearranged
once: each state's features are summed into one row of log-probabilities per language, so a
sentence's score is the sum of the rows of the states it enters. The automaton runs over every
sentence of the batch at once (one numpy step per byte position, longest sentences first), the
(sentence, state) visits of the states that emit a feature (a quarter of all visits) are a sparse
matrix, and one sparse product gives every sentence's scores for every language.

The rows are kept in float32, each centred on its mean over the languages (a per-sentence
constant that the normalization over languages cancels): half the memory of float64, which is
what the product's row lookups wait on. P(language) stays within 1e-5 of langid.py's own;
``tests/corpus/test_language.py`` checks it against langid.py's ``rank`` on real sentences.
"""

from __future__ import annotations

import base64
import bz2
import functools
import pickle
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy import sparse

from corpus.cache import cache_root, store
from corpus.strings import Texts, string_array

CACHE_FORMAT = 2  # bump when the cached arrays change


@dataclass(frozen=True)
class LanguageModel:
    """langid.py's model rearranged for batches (see the module docstring)."""

    next_state: np.ndarray  # int32 [states · 256]: state after reading a byte (state << 8 | byte)
    state_log_probs: np.ndarray  # float32 [states, languages]: summed log P(feature | language) of the state's features, less the row's mean
    emits: np.ndarray  # bool [states]: the state emits a feature (its row is not all zero)
    prior: np.ndarray  # float64 [languages]: log P(language)
    languages: tuple[str, ...]

    @classmethod
    @functools.cache
    def load(cls) -> LanguageModel:
        """The model that ships inside the langid package (no download); once per process.
        Unpacking it takes about a second (bz2 and a pickle of Python lists), and every scoring
        worker needs it, so the rearranged arrays are kept in a cache file (``cache_path``),
        written once per machine and langid version; without a writable cache it is rebuilt."""
        path = cache_path()
        try:
            with np.load(path, allow_pickle=False) as saved:
                return cls(*(saved[name] for name in ("next_state", "state_log_probs", "emits", "prior")), tuple(saved["languages"].tolist()))
        except (OSError, KeyError, ValueError):
            model = cls.unpack()
        arrays = {"next_state": model.next_state, "state_log_probs": model.state_log_probs, "emits": model.emits, "prior": model.prior,
                  "languages": np.array(model.languages)}
        store(path, lambda handle: np.savez(handle, **arrays))
        return model

    @classmethod
    def unpack(cls) -> LanguageModel:
        """Rearrange langid.py's own model (see the module docstring)."""
        from langid.langid import model
        ptc, pc_, languages, next_state, outputs = pickle.loads(bz2.decompress(base64.b64decode(model)))
        prior = np.array(pc_, dtype=np.float64)
        feature_log_probs = np.array(ptc, dtype=np.float64).reshape(-1, len(prior))
        states = len(next_state) // 256
        emitting = [(state, feature) for state, features in outputs.items() for feature in features]
        emits = sparse.csr_matrix(
            (np.ones(len(emitting)), ([state for state, _ in emitting], [feature for _, feature in emitting])),
            shape=(states, len(feature_log_probs)),
        )
        state_log_probs = emits @ feature_log_probs
        emitting = emits.getnnz(axis=1) > 0
        centred = (state_log_probs - state_log_probs.mean(axis=1, keepdims=True)).astype(np.float32)
        return cls(np.asarray(next_state, dtype=np.int32), centred, emitting, prior, tuple(languages))

    def log_scores(self, texts: Texts) -> np.ndarray:
        """log P(text, language) of every text (rows) and language (columns) up to a constant per
        text, as langid.py's ``nb_classprobs`` computes them on the UTF-8 bytes of each text (float32)."""
        data, starts, lengths = _utf8(texts)
        n = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # longest first: the rows still reading are a prefix
        sorted_starts = starts[order]
        active = n - np.searchsorted(np.sort(lengths), np.arange(lengths[order[0]] if n else 0), side="right")
        entered = np.empty(len(data), dtype=np.int32)  # the state after each byte, where the byte is: rows stay contiguous
        state, at = np.zeros(n, dtype=np.int32), np.empty(n, dtype=np.int64)
        for position, rows in enumerate(active):
            where, step = np.add(sorted_starts[:rows], position, out=at[:rows]), state[:rows]
            np.bitwise_or(np.left_shift(step, 8, out=step), data[where], out=step)
            state[:rows] = self.next_state[step]
            entered[where] = state[:rows]
        bounds = np.append(starts, starts[-1] + lengths[-1] if n else 0)
        entered = entered[bounds[0] : bounds[-1]]
        # the emitting visits' positions give the CSR rows directly (a cumulative sum over every
        # visit and a boolean compaction cost five times as much)
        emitting = np.flatnonzero(self.emits[entered])
        indptr = np.searchsorted(emitting, bounds - bounds[0])
        visits = sparse.csr_matrix((np.ones(len(emitting), np.float32), entered[emitting], indptr), shape=(n, len(self.emits)))
        scores = visits @ self.state_log_probs
        scores += self.prior.astype(np.float32)
        return scores

    def probability(self, texts: Texts, language: str = "en") -> np.ndarray:
        """P(language | text) of every text, normalized over the model's 97 languages
        (langid.py's ``norm_probs=True``). The exponentials stay float32, in place (each is
        at most 1: the largest score is subtracted first), and are summed in float64."""
        scores = self.log_scores(texts)
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        return scores[:, self.languages.index(language)] / scores.sum(axis=1, dtype=np.float64)


def cache_path() -> Path:
    """Where the rearranged model is cached (``corpus.cache``): one file per langid version and
    cache format. Deleting it is safe: the next load rebuilds it."""
    return cache_root() / f"langid-{metadata.version('langid')}-model{CACHE_FORMAT}.npz"


def _utf8(texts: Texts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All texts' UTF-8 bytes in one uint8 array (Arrow's string buffer), with each text's start and length."""
    array = string_array(texts)
    if array.offset:  # a slice shares its parent's buffers: copy it to read them from 0
        array = pa.concat_arrays([array])
    offsets = np.frombuffer(array.buffers()[1], np.int32, count=len(array) + 1).astype(np.int64)
    data = array.buffers()[2]
    return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)), offsets[:-1], np.diff(offsets)
