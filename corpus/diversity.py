"""How differently the two sides of a pair say the same thing: lexical diversity (unigram F1) and
word-order diversity (Kendall τ of the shared words' positions), for a whole batch with numpy.

Both read the batch's lowercased Moses tokens (``TokenBatch``: ids shared by the two sides).
Definitions (schemas/COLUMNS.md repeats them):

unigram F1
    A and B are the two sides as bags of tokens (counts kept); |A ∩ B| is the multiset
    intersection Σ_w min(count_A(w), count_B(w)). Precision |A ∩ B|/|B|, recall |A ∩ B|/|A|,
    F1 = 2PR/(P + R) = 2|A ∩ B|/(|A| + |B|), and 0 when the intersection is empty (an empty
    side included). 1 means the same words, 0 no word in common: lower is more diverse.

Kendall τ
    The words that occur exactly once on each side and on both sides: a word repeated on a side
    has no single position, so it is left out. Their positions on side 1 and on side 2 are two
    rankings without ties, so τ-a and τ-b coincide: τ = (concordant − discordant)/(k(k − 1)/2)
    over the k(k − 1)/2 pairs of the k shared words. 1 means the same order, −1 the reverse.
    With fewer than two shared words no pair of words can be out of order: τ = 1.0 (no
    reordering observed). It is a number, not NaN, so every pair has a rank and its deciles are
    ordinary ones (ties broken by the id hash, like trigram overlap's many zeros); such pairs
    rank with the unreordered ones, and a ``max_kendall_tau`` rule below 1 leaves them out.
"""

from __future__ import annotations

import numpy as np

from corpus.tokenbatch import Side, TokenBatch


def _keys(side: Side, vocabulary_size: int) -> np.ndarray:
    """One int64 key per token: (row, token id), so equal keys are one word of one pair."""
    return side.rows.astype(np.int64) * max(vocabulary_size, 1) + side.ids


def unigram_f1(batch: TokenBatch) -> np.ndarray:
    """float64 unigram F1 of every pair: 2|A ∩ B|/(|A| + |B|) with multiset intersection."""
    n, size = len(batch), len(batch.vocabulary)
    ref_words, ref_counts = np.unique(_keys(batch.reference, size), return_counts=True)
    tr_words, tr_counts = np.unique(_keys(batch.translation, size), return_counts=True)
    shared, in_ref, in_tr = np.intersect1d(ref_words, tr_words, assume_unique=True, return_indices=True)
    common = np.bincount(shared // max(size, 1), weights=np.minimum(ref_counts[in_ref], tr_counts[in_tr]), minlength=n)
    total = (batch.reference.lengths + batch.translation.lengths).astype(np.float64)
    return np.divide(2 * common, total, out=np.zeros(n), where=common > 0)


def _once(side: Side, vocabulary_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys of the words that occur once in their row, and their 0-based positions in it."""
    keys = _keys(side, vocabulary_size)
    words, first, counts = np.unique(keys, return_index=True, return_counts=True)
    positions = np.arange(len(keys)) - side.offsets[side.rows]
    return words[counts == 1], positions[first[counts == 1]]


def kendall_tau(batch: TokenBatch) -> np.ndarray:
    """float64 Kendall τ of every pair over its shared once-per-side words (1.0 below two)."""
    n, size = len(batch), len(batch.vocabulary)
    ref_words, ref_positions = _once(batch.reference, size)
    tr_words, tr_positions = _once(batch.translation, size)
    shared, in_ref, in_tr = np.intersect1d(ref_words, tr_words, assume_unique=True, return_indices=True)
    rows = shared // max(size, 1)
    # the shared words of each row in side-1 order; their side-2 positions are the second ranking
    order = np.lexsort((ref_positions[in_ref], rows))
    rows, second = rows[order], tr_positions[in_tr][order]
    k = np.bincount(rows, minlength=n)
    # every (i, j) with i before j in the same row: j runs from i + 1 to the row's last word
    row_end = np.cumsum(k)[rows]
    later = row_end - np.arange(len(rows)) - 1
    first = np.repeat(np.arange(len(rows)), later)
    step = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
    agreement = np.sign(second[first + 1 + step] - second[first])  # +1 concordant, −1 discordant
    score = np.bincount(rows[first], weights=agreement, minlength=n)
    word_pairs = k * (k - 1) / 2
    return np.divide(score, word_pairs, out=np.ones(n), where=word_pairs > 0)
