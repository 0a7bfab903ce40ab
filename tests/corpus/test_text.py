"""The punctuation normalizer with its substitutions compiled once normalizes as sacremoses does."""

import gzip

import pytest
from sacremoses import MosesPunctNormalizer, MosesTokenizer

from corpus.text import PunctNormalizer, Tokenizer, required_text
from workflows.ingest import demo_corpus

TRICKY = ["„Ahoj,“ řekl.  ", "He said: «no» – twice…", "10 000,5 %", "a ,b", "( x )", "‘quoted’ ”odd“", "1st.\u00a0item",
          "tab\there", "Mr. Smith's 3rd  -- of 5", "¿Qué?", "''double'' ``quotes``", "e.g.,x;y: z ! ?", "",
          "nº\u00a05, 20\u00a0ºC, 3\u00a0cm\u00a0; ok\u00a0? «\u00a0oui\u00a0» 1\u00a0000", "\r\n(x) .", "a ´´b´´ ‚c‘ d’s", '"a".,']


@pytest.mark.parametrize("lang", ["en", "cs", "de"])
def test_compiled_normalizer_gives_sacremoses_output(lang):
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        sentences = [side for line in handle for side in line.rstrip("\n").split("\t")[2:]]
    reference, compiled = MosesPunctNormalizer(lang=lang), PunctNormalizer(lang)
    for sentence in TRICKY + sentences:
        assert compiled.normalize(sentence) == reference.normalize(sentence), sentence


@pytest.mark.parametrize(("pattern", "required"), [
    (" +", " "), (r"\) ([.!:?;,])", ") "), (r"(\d) %", " %"), ("([a-zA-Z])‘([a-zA-Z])", "‘"), ("nº\u00a0", "nº\u00a0"),
    ("a|b", ""), ("(?i)abc", ""), ("x?y", "y"), ("(ab)+", ""),
])
def test_the_text_every_match_holds(pattern, required):
    """A substitution is skipped on a sentence without it: it must be in every match (an
    alternative, a case-blind pattern or an optional part has none)."""
    assert required_text(pattern) == required


ABBREVIATIONS = ["Mr. Smith met Dr. No. 5 at 3 p.m. (Tuesday).", "Č. j. 5/2020 ze dne 1. 2. (viz str. 3).", "z. B. am 3. Mai. (Ende)",
                 "He left. (1)", "U.S.A. e.g. i.e. etc. and so on.", "No. 7 is it. no. 8 is not."]


@pytest.mark.parametrize("lang", ["en", "cs", "de"])
def test_the_tokenizer_gives_sacremoses_tokens(lang):
    """Its character-class tests on sets made once: the same tokens, a period before a bracket,
    an abbreviation or a number included."""
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        sentences = [side for line in handle for side in line.rstrip("\n").split("\t")[2:]]
    reference, ours = MosesTokenizer(lang=lang), Tokenizer(lang)
    for sentence in TRICKY + ABBREVIATIONS + sentences + [f"{sentence} (2)" for sentence in sentences]:
        assert ours.tokenize(sentence, escape=False) == reference.tokenize(sentence, escape=False), sentence
