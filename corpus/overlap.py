"""Trigram overlap between a reference and its back-translation (ParaNMT section 3).

The authors' definition (``get_overlap(gtoks, gtr, 3)`` in their ``add_overlap_labels.py``):
the word trigrams of each side are kept as lists (duplicates count); the side with fewer
trigrams is the "start" side (the reference when both have as many); the overlap is the number
of start trigrams that occur anywhere in the other side's list, divided by the start side's
trigram count, and 0.0 when the start side has no trigram. The authors tokenized with NLTK's
``word_tokenize`` on lowercased text; this project uses lowercased Moses tokens.

``trigram_overlap`` computes it for a whole batch with numpy: one 64-bit key per (trigram,
pair), one hash-set membership test and one ``np.bincount``. ``authors_overlap`` is their per-pair list code,
kept as the test oracle and the benchmark baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus.mix import mix64
from corpus.tokenbatch import Side, TokenBatch


def _trigram_keys(side: Side, vocabulary_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, key) of every word trigram of every row, duplicates kept.

    The trigram code ((t0·P + t1)·P + t2) is exact while P³ < 2⁶⁴ (P = distinct tokens in the
    batch, so up to 2.6M); mixing it with the row number makes keys of different pairs
    collide with probability about 2⁻⁶⁴, and never within one pair (the mix is a bijection).
    """
    counts = np.maximum(side.lengths - 2, 0)
    rows = np.repeat(np.arange(len(counts)), counts)
    firsts = np.cumsum(counts) - counts
    positions = np.repeat(side.offsets[:-1], counts) + (np.arange(counts.sum()) - np.repeat(firsts, counts))
    ids = side.ids.astype(np.uint64)
    base = np.uint64(max(vocabulary_size, 1))
    code = (ids[positions] * base + ids[positions + 1]) * base + ids[positions + 2]
    return rows, mix64(code ^ mix64(rows.astype(np.uint64) + np.uint64(1)))


def _occurs_in(keys: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(keys, pool)`` by Arrow's hash set (twice as fast as a sort and a binary search,
    four times ``np.isin``, on a batch's uint64 trigram keys)."""
    return pc.is_in(pa.array(keys), value_set=pa.array(pool)).to_numpy(zero_copy_only=False)


def trigram_overlap(batch: TokenBatch) -> np.ndarray:
    """float64 overlap of every pair of the batch (reference = the authors' ``gtoks``)."""
    n, size = len(batch), len(batch.vocabulary)
    ref_rows, ref_keys = _trigram_keys(batch.reference, size)
    tr_rows, tr_keys = _trigram_keys(batch.translation, size)
    ref_count = np.bincount(ref_rows, minlength=n)
    tr_count = np.bincount(tr_rows, minlength=n)
    translation_starts = tr_count < ref_count
    ref_is_start = ~translation_starts[ref_rows]
    tr_is_start = translation_starts[tr_rows]
    start_rows = np.concatenate([ref_rows[ref_is_start], tr_rows[tr_is_start]])
    start_keys = np.concatenate([ref_keys[ref_is_start], tr_keys[tr_is_start]])
    end_keys = np.concatenate([ref_keys[~ref_is_start], tr_keys[~tr_is_start]])
    found = np.bincount(start_rows[_occurs_in(start_keys, end_keys)], minlength=n)
    denominator = np.where(translation_starts, tr_count, ref_count)
    return np.divide(found, denominator, out=np.zeros(n), where=denominator > 0)


def authors_overlap(reference: Sequence[str], translation: Sequence[str]) -> float:
    """The authors' per-pair list code for ``get_overlap(reference, translation, 3)``."""
    t = [" ".join(reference[i : i + 3]) for i in range(len(reference) - 2)]
    r = [" ".join(translation[i : i + 3]) for i in range(len(translation) - 2)]
    start, end = (r, t) if len(r) < len(t) else (t, r)
    if not start:
        return 0.0
    return sum(1 for trigram in start if trigram in end) / len(start)
