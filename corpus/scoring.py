"""Score a batch of (reference, back-translation) pairs: the per-pair columns of SPEC.md §3, the
language of each side and the pair's lexical and word-order diversity (schemas/COLUMNS.md).

The pairs arrive tokenized (the ``*_tok`` columns, made once upstream by
``corpus.text.english_tokens``), so scoring is integer and matrix work on whole batches; only
language identification reads the sentences as written."""

from __future__ import annotations

import numpy as np

from corpus.diversity import kendall, kendall_z, shared_words, unigram_f1
from corpus.language import LanguageModel
from corpus.overlap import trigram_overlap
from corpus.similarity import WordAverager
from corpus.strings import Texts
from corpus.tokenbatch import TokenBatch


def score_texts(
    references: Texts, translations: Texts, reference_tok: Texts, translation_tok: Texts, model: WordAverager, language: LanguageModel
) -> dict[str, np.ndarray]:
    """Trigram overlap, PP similarity, P(English) of each side, unigram F1 and Kendall τ of every
    pair, and the keys that rank two of them without ties (``trigram_then_f1``, ``kendall_z_then_f1``)."""
    batch = TokenBatch.from_joined(reference_tok, translation_tok)
    shared = shared_words(batch)
    overlap, f1 = trigram_overlap(batch), unigram_f1(batch, shared)
    tau, compared = kendall(batch, shared)
    return {
        "trigram_overlap": overlap,
        "pp_sim": model.similarity(batch),
        "reference_p_en": language.probability(references),
        "translation_p_en": language.probability(translations),
        "unigram_f1": f1,
        "kendall_tau": tau,
        "trigram_then_f1": ties_ordered_by_f1(overlap, f1),
        "kendall_z_then_f1": ties_ordered_by_f1(kendall_z(tau, compared), f1),
    }


# Below the least difference of two trigram overlaps (fractions over at most 30,000 trigrams; ingest
# takes lines of 10,000 bytes): the F1 term orders a tie of trigram overlaps and never crosses one.
# Kendall's z: its distinct values over at most 50 compared words are over 3·10⁻⁸ apart, so the F1
# term orders their ties without crossing them; over longer pairs it may swap two z within 10⁻⁹.
F1_WEIGHT = 1e-9


def ties_ordered_by_f1(score: np.ndarray, f1: np.ndarray) -> np.ndarray:
    """What ``decile_trigram`` and ``decile_tau`` rank: the score, its ties ordered by unigram F1
    (among pairs of one score, those that share fewer words rank lower). A third of a corpus shares
    no trigram (overlap 0), and a tenth of one model's back-translations keeps five words in their
    order (τ = 1 over k = 5: one z): ranked by the score alone, a decile was one tie split by the
    id hash."""
    return score + F1_WEIGHT * f1
