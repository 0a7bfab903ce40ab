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
    pair, and the keys that rank two of them without ties (``trigram_then_f1``, ``kendall_z``)."""
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
        "trigram_then_f1": trigram_then_f1(overlap, f1),
        "kendall_z": kendall_z(tau, compared),
    }


# Below the least difference of two trigram overlaps (fractions over at most 30,000 trigrams; ingest
# takes lines of 10,000 bytes): the F1 term orders a tie of trigram overlaps and never crosses one.
F1_WEIGHT = 1e-9


def trigram_then_f1(overlap: np.ndarray, f1: np.ndarray) -> np.ndarray:
    """What ``decile_trigram`` ranks: the trigram overlap, its ties ordered by unigram F1. A third
    of a corpus shares no trigram (overlap 0): ranked by the overlap alone, three deciles were one
    tie split by the id hash; among them, the pairs that share fewer words rank lower."""
    return overlap + F1_WEIGHT * f1
