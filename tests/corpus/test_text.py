"""The punctuation normalizer with its substitutions compiled once normalizes as sacremoses does."""

import gzip

import pytest
from sacremoses import MosesPunctNormalizer

from corpus.text import PunctNormalizer
from workflows.ingest import demo_corpus

TRICKY = ["„Ahoj,“ řekl.  ", "He said: «no» – twice…", "10 000,5 %", "a ,b", "( x )", "‘quoted’ ”odd“", "1st.\u00a0item",
          "tab\there", "Mr. Smith's 3rd  -- of 5", "¿Qué?", "''double'' ``quotes``", "e.g.,x;y: z ! ?", ""]


@pytest.mark.parametrize("lang", ["en", "cs", "de"])
def test_compiled_normalizer_gives_sacremoses_output(lang):
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        sentences = [side for line in handle for side in line.rstrip("\n").split("\t")[2:]]
    reference, compiled = MosesPunctNormalizer(lang=lang), PunctNormalizer(lang)
    for sentence in TRICKY + sentences:
        assert compiled.normalize(sentence) == reference.normalize(sentence), sentence
