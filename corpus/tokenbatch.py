"""A batch of pairs as integer token ids: the shared input of the vectorized pair scorers.

Both sides of every pair are flattened into one token array and dictionary-encoded once
(pyarrow's hash kernel), so trigram overlap compares integers and PP similarity looks each
distinct word of the batch up in the embedding vocabulary once, not once per occurrence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus.strings import Texts, string_array


@dataclass(frozen=True)
class Side:
    """One side of every pair: flat token ids and row offsets (row i = ids[offsets[i]:offsets[i+1]])."""

    ids: np.ndarray  # int64 indices into TokenBatch.vocabulary
    offsets: np.ndarray  # int64, len = rows + 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def rows(self) -> np.ndarray:
        """Row number of every token."""
        return np.repeat(np.arange(len(self.offsets) - 1), self.lengths)


@dataclass(frozen=True)
class TokenBatch:
    reference: Side
    translation: Side
    vocabulary: list[str]  # the batch's distinct tokens; ids index into it

    def __len__(self) -> int:
        return len(self.reference.offsets) - 1

    @classmethod
    def from_token_lists(cls, reference: Sequence[Sequence[str]], translation: Sequence[Sequence[str]]) -> TokenBatch:
        """From tokenized sentences (one list of tokens per pair and side)."""
        if len(reference) != len(translation):
            raise ValueError(f"{len(reference)} references but {len(translation)} translations")
        lengths = np.fromiter(map(len, chain(reference, translation)), dtype=np.int64, count=2 * len(reference))
        flat = pa.array(list(chain.from_iterable(chain(reference, translation))), type=pa.string())
        return cls._from_flat(flat, lengths)

    @classmethod
    def from_joined(cls, reference: Texts, translation: Texts) -> TokenBatch:
        """From space-joined token strings (the ``*_tok`` columns); an empty string has no token."""
        if len(reference) != len(translation):
            raise ValueError(f"{len(reference)} references but {len(translation)} translations")
        joined = pa.concat_arrays([string_array(reference), string_array(translation)])
        return cls._from_flat(*split_joined(joined))

    @classmethod
    def _from_flat(cls, flat: pa.Array, lengths: np.ndarray) -> TokenBatch:
        both, vocabulary = _encode(flat, lengths)
        half = len(lengths) // 2
        cut = both.offsets[half]
        reference = Side(both.ids[:cut], both.offsets[: half + 1])
        translation = Side(both.ids[cut:], both.offsets[half:] - cut)
        return cls(reference, translation, vocabulary)


def _encode(flat: pa.Array, lengths: np.ndarray) -> tuple[Side, list[str]]:
    """Dictionary-encode all tokens at once (one hash pass): ids, row offsets, distinct tokens."""
    encoded = flat.dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return Side(ids, np.concatenate([[0], np.cumsum(lengths)])), encoded.dictionary.to_pylist()


def split_joined(joined: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Space-joined token strings → (all tokens, flat; tokens per string)."""
    split = pc.split_pattern(joined, " ")
    values = pc.list_flatten(split)
    # "" splits into [""]: drop those empty tokens (Moses tokens are never empty otherwise).
    empty_rows = pc.equal(pc.utf8_length(joined), 0).to_numpy(zero_copy_only=False)
    lengths = pc.list_value_length(split).to_numpy().astype(np.int64) - empty_rows
    return (values.filter(pc.not_equal(values, "")) if empty_rows.any() else values), lengths


def token_counts(joined: Texts) -> np.ndarray:
    """int32 tokens in each space-joined token string (the ``*_n_tokens`` columns)."""
    return split_joined(string_array(joined))[1].astype(np.int32)


def token_columns(reference_tok: Texts, translation_tok: Texts) -> dict[str, pa.Array]:
    """The token columns of a ``pairs`` table from the two sides' ``*_tok`` strings: the strings
    and their token counts."""
    columns = {}
    for side, joined in (("reference", reference_tok), ("translation", translation_tok)):
        joined = string_array(joined)
        columns[f"{side}_tok"] = joined
        columns[f"{side}_n_tokens"] = pa.array(token_counts(joined))
    return columns


def encode_joined(texts: Texts) -> tuple[Side, list[str]]:
    """One column of space-joined token strings as token ids and their vocabulary."""
    return _encode(*split_joined(string_array(texts)))
