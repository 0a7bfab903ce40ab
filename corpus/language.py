"""Language identification of a whole batch of sentences with langid.py's model (Lui & Baldwin
2012; it ships inside the package, so the ParaNMT release's "both sides English" filter works
offline), vectorized.

langid.py classifies one sentence at a time in pure Python (milliseconds a sentence, a loop over
its bytes); the scorer stage sees millions of pairs. The model is a byte automaton whose states
emit n-gram features and a naive Bayes table of log P(feature | language). Both are rearranged
once: each state's features are summed into one row of log-probabilities per language, so a
sentence's score is the sum of the rows of the states it enters. The automaton runs over every
sentence of the batch at once (one numpy step per byte position, longest sentences first), the
(sentence, state) counts are a sparse matrix, and one sparse product gives every sentence's
log-probability of every language. ``tests/corpus/test_language.py`` checks the result against
langid.py's own ``rank`` on real sentences.
"""

from __future__ import annotations

import base64
import bz2
import functools
import os
import pickle
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa
from scipy import sparse

CACHE_FORMAT = 1  # bump when the cached arrays change


@dataclass(frozen=True)
class LanguageModel:
    """langid.py's model rearranged for batches (see the module docstring)."""

    next_state: np.ndarray  # int64 [states · 256]: state after reading a byte (state << 8 | byte)
    state_log_probs: np.ndarray  # float64 [states, languages]: summed log P(feature | language) of the state's features
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
                return cls(saved["next_state"], saved["state_log_probs"], saved["prior"], tuple(saved["languages"].tolist()))
        except (OSError, KeyError, ValueError):
            model = cls.unpack()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as handle:
                np.savez(handle, next_state=model.next_state, state_log_probs=model.state_log_probs, prior=model.prior, languages=np.array(model.languages))
            os.replace(handle.name, path)  # atomic: a concurrent reader sees no half-written file
        except OSError:
            pass
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
        return cls(np.asarray(next_state, dtype=np.int64), emits @ feature_log_probs, prior, tuple(languages))

    def log_probs(self, texts: Sequence[str]) -> np.ndarray:
        """Unnormalized log P(text, language) of every text (rows) and language (columns), as
        langid.py's ``nb_classprobs`` computes them on the UTF-8 bytes of each text."""
        data, starts, lengths = _utf8(texts)
        n = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # longest first: the rows still reading are a prefix
        starts, by_length = starts[order], lengths[order]
        active = n - np.searchsorted(np.sort(lengths), np.arange(by_length[0] if n else 0), side="right")
        state = np.zeros(n, dtype=np.int64)
        entered = np.empty(int(lengths.sum()), dtype=np.int64)  # position-major: all rows' byte 0, then byte 1, …
        first = np.concatenate([[0], np.cumsum(active)])
        for position, rows in enumerate(active):
            state[:rows] = self.next_state[(state[:rows] << 8) | data[starts[:rows] + position]]
            entered[first[position] : first[position + 1]] = state[:rows]
        # row-major for a CSR matrix of (sorted row, state) visits: row r's byte t sits at first[t] + r
        row_of = np.repeat(np.arange(n), by_length)
        byte_of = np.arange(len(entered)) - np.repeat(np.cumsum(by_length) - by_length, by_length)
        indptr = np.concatenate([[0], np.cumsum(by_length)])
        visits = sparse.csr_matrix((np.ones(len(entered)), entered[first[byte_of] + row_of], indptr), shape=(n, len(self.state_log_probs)))
        log_probs = np.empty((n, len(self.prior)))
        log_probs[order] = visits @ self.state_log_probs
        return log_probs + self.prior

    def probability(self, texts: Sequence[str], language: str = "en") -> np.ndarray:
        """P(language | text) of every text, normalized over the model's 97 languages
        (langid.py's ``norm_probs=True``)."""
        log_probs = self.log_probs(texts)
        log_probs -= log_probs.max(axis=1, keepdims=True)
        probs = np.exp(log_probs)
        return probs[:, self.languages.index(language)] / probs.sum(axis=1)


def cache_path() -> Path:
    """Where the rearranged model is cached: ``$PARANMT_CACHE`` or ``~/.cache/paranmt``, one file
    per langid version and cache format. Deleting it is safe: the next load rebuilds it."""
    root = Path(os.environ.get("PARANMT_CACHE") or Path.home() / ".cache" / "paranmt")
    return root / f"langid-{metadata.version('langid')}-model{CACHE_FORMAT}.npz"


def _utf8(texts: pa.Array | pa.ChunkedArray | Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All texts' UTF-8 bytes in one uint8 array (Arrow's string buffer), with each text's start and length."""
    array = pa.array(texts, pa.string())
    if array.offset:  # a slice shares its parent's buffers: copy it to read them from 0
        array = pa.concat_arrays([array])
    offsets = np.frombuffer(array.buffers()[1], np.int32, count=len(array) + 1).astype(np.int64)
    data = array.buffers()[2]
    return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)), offsets[:-1], np.diff(offsets)
