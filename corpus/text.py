"""Moses punctuation normalization and tokenization (sacremoses), language-specific, and the one
tokenized form of English that every stage after ingest reads (``english_tokens``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from re import _constants, _parser

from sacremoses import MosesPunctNormalizer, MosesTokenizer


def required_text(pattern: str) -> str:
    """The longest run of characters that every match of ``pattern`` holds ('' when none is found):
    a text without it is left as it is by a substitution of ``pattern``, which need not run."""
    parsed = _parser.parse(pattern)  # the re module's own parser (not a public API: tests/corpus/test_text.py holds it)
    if parsed.state.flags & re.IGNORECASE:
        return ""
    runs, run = [], ""
    for operation, value in parsed.data:
        if operation is _constants.LITERAL:
            run += chr(value)
            continue
        runs.append(run)
        run = ""
        repeated = value[2] if operation in (_constants.MAX_REPEAT, _constants.MIN_REPEAT) and value[0] >= 1 else []
        if len(repeated) == 1 and repeated[0][0] is _constants.LITERAL:  # `` +``: at least one space
            runs.append(chr(repeated[0][1]))
    return max([*runs, run], key=len)


class PunctNormalizer:
    """sacremoses' ``MosesPunctNormalizer(lang).normalize``, its substitutions compiled once.
    sacremoses applies each as ``re.sub(pattern string, …)``, which looks the compiled pattern up
    again for each of its ~45 substitutions of each sentence, and scans the sentence for each; most
    of them need a character a sentence rarely has (``„``, ``«``, a no-break space), so a
    substitution runs only on a sentence holding the text its every match holds (required_text).
    Same steps, same order, same result (its optional unicode and control-character passes are
    off by default)."""

    def __init__(self, lang: str):
        moses = MosesPunctNormalizer(lang=lang)
        if moses.pre_replace_unicode_punct or moses.post_remove_control_chars:
            raise NotImplementedError("sacremoses' optional unicode and control-character passes are not compiled here")
        self.substitutions = [(required_text(pattern), re.compile(pattern), substitution) for pattern, substitution in moses.substitutions]

    def normalize(self, text: str) -> str:
        for required, pattern, substitution in self.substitutions:
            if required in text:
                text = pattern.sub(substitution, text)
        return text.strip()


class Tokenizer(MosesTokenizer):
    """sacremoses' ``MosesTokenizer``, its character-class tests on sets made once: sacremoses makes
    a set of its 2,253 lower-case (10,862 alphabetic) characters on every call, that is for every
    token that ends with a period and is not the sentence's last ("Mr.", "No.", a period followed
    by a bracket): 0.2 ms each, which doubled the time of such sentences. Its prefix lists are
    only looked up, so they become sets too. Same tokens."""

    def __init__(self, lang: str):
        super().__init__(lang=lang)
        self._lower, self._alphabetic = frozenset(self.IsLower), frozenset(self.IsAlpha)
        self.NONBREAKING_PREFIXES = frozenset(self.NONBREAKING_PREFIXES)
        self.NUMERIC_ONLY_PREFIXES = frozenset(self.NUMERIC_ONLY_PREFIXES)

    def islower(self, text: str) -> bool:
        return self._lower.issuperset(text)

    def isanyalpha(self, text: str) -> bool:
        return not self._alphabetic.isdisjoint(text)


@lru_cache(maxsize=8)
def _moses(lang: str) -> tuple[PunctNormalizer, Tokenizer]:
    # Building these compiles many regexes; one pair per language per process.
    return PunctNormalizer(lang), Tokenizer(lang)


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
