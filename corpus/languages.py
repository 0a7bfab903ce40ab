"""Language codes: the foreign side's language as users and file names spell it, and as models do.

A language is given as an ISO 639 code, two letters (``de``) or three (``deu``, or the
bibliographic ``ger``); it is kept as its shortest standard code (``de``: the ``pivot`` column,
the manifests). Line-aligned files may carry any of its codes as suffix (``x.de`` or ``x.deu``),
and a published translator names it its own way (``__de__`` in M2M-100, ``deu_Latn`` in
NLLB-200): :func:`model_code` finds which of a model's codes it is.
"""

from __future__ import annotations

import re

import langcodes

from corpus.errors import InputError

DEFAULT = "cs"
ENGLISH = "en"
# NLLB-200 names a language by its ISO 639-3 code and script (FLORES-200): deu_Latn, zho_Hans.
CODE_WITH_SCRIPT = re.compile(r"^([a-z]{3})_([A-Z][a-z]{3})$")


def standard_code(tag: str) -> str:
    """The shortest standard code of ``tag`` (``deu``, ``ger``, ``DE`` → ``de``); InputError for a
    tag that names no language."""
    try:
        language = langcodes.Language.get(tag.strip())
        language.to_alpha3()  # a code with no ISO 639 language behind it raises here
    except (langcodes.tag_parser.LanguageTagError, LookupError, ValueError):
        raise InputError(f"{tag!r} is not a language code; give an ISO 639 code such as de, deu or cs") from None
    if not language.language:
        raise InputError(f"{tag!r} is not a language code; give an ISO 639 code such as de, deu or cs")
    return language.language


def codes(tag: str) -> tuple[str, ...]:
    """Every ISO 639 code of the language: two letters (where it has them), then the three-letter
    terminology and bibliographic codes (``de`` → de, deu, ger)."""
    language = langcodes.Language.get(standard_code(tag))
    return tuple(dict.fromkeys([language.language, language.to_alpha3(), language.to_alpha3(variant="B")]))


def file_suffixes(tag: str) -> tuple[str, ...]:
    """The suffixes a line-aligned file of the language may have (``.de``, ``.deu``, ``.ger``)."""
    return tuple(f".{code}" for code in codes(tag))


def model_code(tag: str, model_codes: list[str]) -> str:
    """Which of a multilingual model's language codes is ``tag``'s language: the code itself
    (M2M-100: ``de``), or its three-letter code with the language's usual script (NLLB-200:
    ``deu_Latn``); InputError when the model has none, or several that the script cannot decide."""
    own = codes(tag)
    if matches := [code for code in model_codes if code in own]:
        return matches[0]
    with_script = [code for code in model_codes if (m := CODE_WITH_SCRIPT.match(code)) and m.group(1) in own]
    script = langcodes.Language.get(standard_code(tag)).maximize().script
    if preferred := [code for code in with_script if code.endswith(f"_{script}")]:
        return preferred[0]
    if len(with_script) == 1:
        return with_script[0]
    if with_script:
        raise InputError(f"the translator has several codes for {tag!r} ({', '.join(with_script)}): give one of them as the language")
    raise InputError(f"the translator has no language code for {tag!r} ({len(model_codes)} codes, e.g. {', '.join(model_codes[:5])})")
