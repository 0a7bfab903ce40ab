"""Moses punctuation normalization and tokenization (sacremoses), language-specific."""

from __future__ import annotations

from functools import lru_cache

from sacremoses import MosesPunctNormalizer, MosesTokenizer


@lru_cache(maxsize=8)
def _moses(lang: str) -> tuple[MosesPunctNormalizer, MosesTokenizer]:
    # Building these compiles many regexes; one pair per language per process.
    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def tokenize(text: str, lang: str, lowercase: bool = False) -> list[str]:
    """Normalize punctuation, then Moses-tokenize without XML escaping."""
    normalizer, tokenizer = _moses(lang)
    tokens = tokenizer.tokenize(normalizer.normalize(text), escape=False)
    return [token.lower() for token in tokens] if lowercase else tokens


def tokenize_batch(texts: list[str], lang: str, lowercase: bool = False) -> list[str]:
    """Tokenize many sentences; each result is its tokens joined by one space."""
    return [" ".join(tokenize(text, lang, lowercase)) for text in texts]
