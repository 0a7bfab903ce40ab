"""Score a batch of (reference, back-translation) pairs: the per-pair columns of SPEC.md §3, the
language of each side and the pair's lexical and word-order diversity (schemas/COLUMNS.md).

The pairs arrive tokenized (the ``*_tok`` columns, made once upstream by
``corpus.text.english_tokens``), so scoring is integer and matrix work on whole batches; only
language identification reads the sentences as written."""

from __future__ import annotations

import numpy as np

from corpus.diversity import kendall_tau, shared_words, unigram_f1
from corpus.language import LanguageModel
from corpus.overlap import trigram_overlap
from corpus.similarity import WordAverager
from corpus.strings import Texts
from corpus.tokenbatch import TokenBatch


def score_texts(
    references: Texts, translations: Texts, reference_tok: Texts, translation_tok: Texts, model: WordAverager, language: LanguageModel
) -> dict[str, np.ndarray]:
    """Trigram overlap, PP similarity, P(English) of each side, unigram F1 and Kendall τ of every pair."""
    batch = TokenBatch.from_joined(reference_tok, translation_tok)
    shared = shared_words(batch)
    return {
        "trigram_overlap": trigram_overlap(batch),
        "pp_sim": model.similarity(batch),
        "reference_p_en": language.probability(references),
        "translation_p_en": language.probability(translations),
        "unigram_f1": unigram_f1(batch, shared),
        "kendall_tau": kendall_tau(batch, shared),
    }
