"""The cs→en NMT wrapper: sentencepiece vocabulary, fairseq training, CTranslate2 conversion, translation."""
