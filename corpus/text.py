"""Moses punctuation normalization and tokenization (sacremoses), language-specific, and the one
tokenized form of English that every stage after ingest reads (``english_tokens``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from sacremoses import MosesPunctNormalizer, MosesTokenizer


class PunctNormalizer:
    """sacremoses' ``MosesPunctNormalizer(lang).normalize``, its substitutions compiled once.
    sacremoses applies each as ``re.sub(pattern string, …)``, which looks the compiled pattern up
    again for each of its ~45 substitutions of each sentence: a fifth of ingest's time. Same steps,
    same order, same result (its optional unicode and control-character passes are off by default)."""

    def __init__(self, lang: str):
        moses = MosesPunctNormalizer(lang=lang)
        if moses.pre_replace_unicode_punct or moses.post_remove_control_chars:
            raise NotImplementedError("sacremoses' optional unicode and control-character passes are not compiled here")
        self.substitutions = [(re.compile(pattern), substitution) for pattern, substitution in moses.substitutions]

    def normalize(self, text: str) -> str:
        for pattern, substitution in self.substitutions:
            text = pattern.sub(substitution, text)
        return text.strip()


@lru_cache(maxsize=8)
def _moses(lang: str) -> tuple[PunctNormalizer, MosesTokenizer]:
    # Building these compiles many regexes; one pair per language per process.
    return PunctNormalizer(lang), MosesTokenizer(lang=lang)


def tokenize(text: str, lang: str, lowercase: bool = False) -> list[str]:
    """Normalize punctuation, then Moses-tokenize without XML escaping."""
    normalizer, tokenizer = _moses(lang)
    tokens = tokenizer.tokenize(normalizer.normalize(text), escape=False)
    return [token.lower() for token in tokens] if lowercase else tokens


def english_tokens(texts: Iterable[str]) -> list[str]:
    """The ``*_tok`` form of English sentences: lowercased Moses tokens joined by one space (a
    token never holds whitespace). It is made once per sentence, by the stage that first has
    the sentence (ingest, back-translation, release import), and read by scoring, selection and
    training. Moses has no batch API, so each distinct text of the call is tokenized once: real
    corpora repeat many short sentences ("Thank you.", "Yes.")."""
    texts = list(texts)
    distinct = dict.fromkeys(texts)
    for text in distinct:
        distinct[text] = " ".join(tokenize(text, "en", lowercase=True))
    return [distinct[text] for text in texts]
