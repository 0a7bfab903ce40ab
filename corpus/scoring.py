"""Score a batch of (reference, back-translation) pairs: the per-pair columns of SPEC.md §3, the
language of each side and the pair's lexical and word-order diversity (schemas/COLUMNS.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corpus.diversity import kendall_tau, unigram_f1
from corpus.language import LanguageModel
from corpus.overlap import trigram_overlap
from corpus.similarity import WordAverager
from corpus.text import tokenize
from corpus.tokenbatch import TokenBatch


def lower_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Lowercased Moses tokens of English sentences. Moses has no batch API (one call per
    sentence), so each distinct sentence of the batch is tokenized once: real corpora repeat
    many short sentences ("Thank you.", "Yes.")."""
    distinct = {text: None for text in texts}
    for text in distinct:
        distinct[text] = tokenize(text, "en", lowercase=True)
    return [distinct[text] for text in texts]


def score_texts(references: Sequence[str], translations: Sequence[str], model: WordAverager, language: LanguageModel) -> dict[str, object]:
    """Token strings, token counts, trigram overlap, PP similarity, P(English) of each side,
    unigram F1 and Kendall τ of every pair."""
    reference_tokens, translation_tokens = lower_tokens(references), lower_tokens(translations)
    batch = TokenBatch.from_token_lists(reference_tokens, translation_tokens)
    return {
        "reference_tok": [" ".join(tokens) for tokens in reference_tokens],
        "translation_tok": [" ".join(tokens) for tokens in translation_tokens],
        "reference_n_tokens": batch.reference.lengths.astype(np.int32),
        "translation_n_tokens": batch.translation.lengths.astype(np.int32),
        "trigram_overlap": trigram_overlap(batch),
        "pp_sim": model.similarity(batch),
        "reference_p_en": language.probability(references),
        "translation_p_en": language.probability(translations),
        "unigram_f1": unigram_f1(batch),
        "kendall_tau": kendall_tau(batch),
    }
