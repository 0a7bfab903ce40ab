"""Published translators (OPUS-MT/Marian, M2M-100, NLLB-200) as models the back-translation runs.

A Hugging Face folder (models.nmt.folders says what a translator folder is) is converted once
with CTranslate2's own converter; a CTranslate2 folder is used as it is.

The model's own tokenizer (``transformers.AutoTokenizer``) cuts the text: Marian's source and
target sentencepiece models, M2M-100's and NLLB-200's language tokens. What it adds around a
sentence is found by encoding with and without its special tokens, so every family's placement
(a language token first or last, an end-of-sentence) is the tokenizer's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corpus import languages
from corpus.errors import InputError
from models.nmt.devices import import_ctranslate2
from models.nmt.folders import read_json

FAMILIES = {"marian": "Marian (OPUS-MT)", "m2m_100": "M2M-100", "nllb": "NLLB-200"}
TOKENIZER_DIR = "tokenizer"
# Marian and M2M-100 models ship with these limits on sentence length in pieces.
DEFAULT_POSITIONS = 512
_PROBE = "a b"


def load_tokenizer(folder: str | Path):
    """The model's own Hugging Face tokenizer."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except (OSError, ValueError, TypeError, RuntimeError, KeyError) as error:
        raise InputError(f"{folder}: its tokenizer does not load ({str(error).splitlines()[0]}); "
                         "a translator folder needs its tokenizer's files (tokenizer_config.json, vocabularies)") from None


def _language_codes(tokenizer) -> list[str]:
    """A multilingual tokenizer's language codes (M2M-100: ``de``; NLLB-200: ``deu_Latn``)."""
    if codes := list(getattr(tokenizer, "lang_code_to_id", None) or {}):
        return codes
    return sorted(token for token in tokenizer.get_vocab() if languages.CODE_WITH_SCRIPT.match(token))


def _affixes(full: list[int], plain: list[int]) -> tuple[list[int], list[int]]:
    """What a tokenizer put before and after a sentence's own pieces."""
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start], full[start + len(plain) :]
    raise InputError(f"the tokenizer's special tokens could not be told from a sentence's ({full} against {plain})")


@dataclass(frozen=True)
class Tokenization:
    """How the model wants a sentence in one source language: the tokens around its pieces, the
    tokens that start the target, and the model's code for the language ('' for a Marian model)."""

    source_prefix: tuple[str, ...]
    source_suffix: tuple[str, ...]
    target_prefix: tuple[str, ...]
    source_code: str


def tokenization(tokenizer, family: str, source_language: str) -> Tokenization:
    """Set a multilingual tokenizer's languages (the foreign one → English) and read what it adds."""
    source_code = target_code = ""
    if family in ("m2m_100", "nllb"):
        model_codes = _language_codes(tokenizer)
        source_code = languages.model_code(source_language, model_codes)
        target_code = languages.model_code(languages.ENGLISH, model_codes)
        tokenizer.src_lang, tokenizer.tgt_lang = source_code, target_code
        if hasattr(tokenizer, "set_src_lang_special_tokens"):
            tokenizer.set_src_lang_special_tokens(source_code)
    source = _affixes(tokenizer(_PROBE).input_ids, tokenizer(_PROBE, add_special_tokens=False).input_ids)
    target_prefix, _ = _affixes(tokenizer(text_target=_PROBE).input_ids, tokenizer(text_target=_PROBE, add_special_tokens=False).input_ids)
    names = tokenizer.convert_ids_to_tokens
    return Tokenization(tuple(names(source[0])), tuple(names(source[1])), tuple(names(target_prefix)), source_code)


def family_of(config: dict, tokenizer) -> str:
    """marian, m2m_100 or nllb (an M2M-100 architecture with NLLB-200's tokenizer)."""
    if config.get("model_type") == "marian" or "Marian" in type(tokenizer).__name__:
        return "marian"
    return "nllb" if "Nllb" in type(tokenizer).__name__ else "m2m_100"


class _EveryToken:
    """A tokenizer whose ``get_vocab`` also holds the tokens it adds beyond its vocabulary file
    (M2M-100's language tokens in transformers 5), so CTranslate2's converter sees every token the
    model's embedding has, in id order."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def get_vocab(self) -> dict[str, int]:
        vocabulary = dict(self._tokenizer.get_vocab())
        for index in (getattr(self._tokenizer, "lang_code_to_id", None) or {}).values():
            vocabulary.setdefault(self._tokenizer.convert_ids_to_tokens(index), index)
        return vocabulary


def convert(folder: Path, output_dir: Path, quantization: str = "none") -> Path:
    """Convert a Hugging Face translator folder to a CTranslate2 model in ``output_dir``."""
    ctranslate2 = import_ctranslate2()

    class Converter(ctranslate2.converters.TransformersConverter):
        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return _EveryToken(super().load_tokenizer(tokenizer_class, model_name_or_path, **kwargs))

    converter = Converter(str(folder))
    try:
        return Path(converter.convert(str(output_dir), quantization=None if quantization == "none" else quantization, force=True))
    except (ValueError, OSError, KeyError) as error:
        raise InputError(f"--translator {folder}: CTranslate2 cannot convert it ({str(error).splitlines()[0]})") from None


def describe(folder: Path) -> str:
    """The model's name as its files give it (the hub name it was saved from), else the folder's."""
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        if path.is_file() and (given := read_json(path).get("_name_or_path")) and not Path(given).is_absolute():
            return str(given)
    return folder.name


class HfCodec:
    """The model's own tokenizer, batched: text to pieces (no special tokens; the translator puts
    the model's own around them) and target pieces back to text."""

    def __init__(self, tokenizer_dir: str | Path):
        self.tokenizer = load_tokenizer(tokenizer_dir)

    def encode(self, texts: list[str]) -> list[list[str]]:
        ids = self.tokenizer(texts, add_special_tokens=False).input_ids
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def encode_target(self, texts: list[str]) -> list[list[str]]:
        """Target text as the model's target tokenizer cuts it (Marian's has its own vocabulary)."""
        ids = self.tokenizer(text_target=texts, add_special_tokens=False).input_ids
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def decode(self, pieces: list[list[str]]) -> list[str]:
        ids = [self.tokenizer.convert_tokens_to_ids(row) for row in pieces]
        return self.tokenizer.batch_decode(ids, skip_special_tokens=True)
