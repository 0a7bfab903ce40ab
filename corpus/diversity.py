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
    With fewer than two shared words there is no order to compare: τ is undefined (NaN here,
    null in the corpus), the pair is not ranked by τ (``decile_tau`` null) and a
    ``max_kendall_tau`` rule leaves it out. Taken as 1.0 (as before corpus/7), such pairs and the
    copies were 56.6 % of a real-MT corpus at τ = 1.0: deciles 5–9 were one tie, split by the id
    hash, and selected nothing (docs/2026-12-03-cpu-translator.md).

Kendall z (what ``decile_tau`` ranks)
    τ = 1 over two shared words and over twelve are one score, and 77 % of the pairs of a corpus
    back-translated by one model have τ = 1: its deciles 3–9 were still one tie. z is τ's test
    statistic, τ over its standard deviation when the two orders are unrelated:
    z = 3τ·√(k(k − 1)) / √(2(2k + 5)); it weighs τ by the k words it compares, so a long pair in
    the same order (a near copy) ranks above a short one, and ties are left only between pairs
    of the same τ and k (no decile of that corpus is one score any more).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from corpus.tokenbatch import Side, TokenBatch


@dataclass(frozen=True)
class SharedWords:
    """The distinct words that both sides of a pair use, over the batch (sorted by pair): both
    scores start from them, so a batch is sorted into words once for the two."""

    rows: np.ndarray  # the pair of each shared word
    reference_counts: np.ndarray  # its occurrences in the reference
    translation_counts: np.ndarray  # and in the translation
    reference_positions: np.ndarray  # the 0-based position of its first occurrence in the reference
    translation_positions: np.ndarray  # and in the translation


def _words(side: Side, vocabulary_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (row, token id) keys of a side, each one's count and first position in its row."""
    keys = side.rows.astype(np.int64) * max(vocabulary_size, 1) + side.ids
    words, first, counts = np.unique(keys, return_index=True, return_counts=True)
    positions = np.arange(len(keys)) - side.offsets[:-1][side.rows]
    return words, counts, positions[first]


def shared_words(batch: TokenBatch) -> SharedWords:
    size = max(len(batch.vocabulary), 1)
    ref_words, ref_counts, ref_positions = _words(batch.reference, size)
    tr_words, tr_counts, tr_positions = _words(batch.translation, size)
    shared, in_ref, in_tr = np.intersect1d(ref_words, tr_words, assume_unique=True, return_indices=True)
    return SharedWords(shared // size, ref_counts[in_ref], tr_counts[in_tr], ref_positions[in_ref], tr_positions[in_tr])


def unigram_f1(batch: TokenBatch, shared: SharedWords | None = None) -> np.ndarray:
    """float64 unigram F1 of every pair: 2|A ∩ B|/(|A| + |B|) with multiset intersection."""
    shared = shared_words(batch) if shared is None else shared
    n = len(batch)
    common = np.bincount(shared.rows, weights=np.minimum(shared.reference_counts, shared.translation_counts), minlength=n)
    total = (batch.reference.lengths + batch.translation.lengths).astype(np.float64)
    return np.divide(2 * common, total, out=np.zeros(n), where=common > 0)


def kendall_tau(batch: TokenBatch, shared: SharedWords | None = None) -> np.ndarray:
    """float64 Kendall τ of every pair over its shared once-per-side words (NaN below two)."""
    return kendall(batch, shared)[0]


def kendall_z(tau: np.ndarray, k: np.ndarray) -> np.ndarray:
    """τ's test statistic over ``k`` compared words, 3τ√(k(k − 1))/√(2(2k + 5)) (NaN where τ is)."""
    k = k.astype(np.float64)
    return 3 * tau * np.sqrt(k * (k - 1)) / np.sqrt(2 * (2 * k + 5))


def kendall(batch: TokenBatch, shared: SharedWords | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Kendall τ of every pair (NaN below two shared words) and k, the words it compares."""
    shared = shared_words(batch) if shared is None else shared
    n = len(batch)
    once = (shared.reference_counts == 1) & (shared.translation_counts == 1)
    rows = shared.rows[once]
    # the shared words of each row in side-1 order; their side-2 positions are the second ranking
    order = np.lexsort((shared.reference_positions[once], rows))
    rows, second = rows[order], shared.translation_positions[once][order]
    k = np.bincount(rows, minlength=n)
    # every (i, j) with i before j in the same row: j runs from i + 1 to the row's last word
    row_end = np.cumsum(k)[rows]
    later = row_end - np.arange(len(rows)) - 1
    first = np.repeat(np.arange(len(rows)), later)
    step = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
    agreement = np.sign(second[first + 1 + step] - second[first])  # +1 concordant, −1 discordant
    score = np.bincount(rows[first], weights=agreement, minlength=n)
    word_pairs = k * (k - 1) / 2
    return np.divide(score, word_pairs, out=np.full(n, np.nan), where=word_pairs > 0), k
