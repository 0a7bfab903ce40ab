"""Featurizers: CSR id rows, vocabularies, words / character trigrams / sentencepiece."""

from collections import Counter

import numpy as np
import pytest

from corpus.text import english_tokens
from models.featurizers import (
    PAD,
    UNK,
    PieceFeaturizer,
    Ragged,
    TrigramFeaturizer,
    Vocabulary,
    WordFeaturizer,
    char_trigrams,
)


def test_ragged_take_and_lengths():
    rows = Ragged.from_rows([[5, 6, 7], [8], [9, 10]])
    picked = rows.take(np.array([2, 0, 2]))
    assert [list(picked.row(i)) for i in range(3)] == [[9, 10], [5, 6, 7], [9, 10]]
    assert picked.lengths.tolist() == [2, 3, 2]


def test_shuffled_rows_permutes_only_the_chosen_rows():
    rows = Ragged.from_rows([list(range(10, 30)), [1, 2, 3], list(range(40, 60))])
    shuffled = rows.shuffled_rows(np.array([0, 2]), np.random.default_rng(0))
    assert list(shuffled.row(1)) == [1, 2, 3]
    for i in (0, 2):
        assert sorted(shuffled.row(i)) == sorted(rows.row(i))
        assert list(shuffled.row(i)) != list(rows.row(i))  # 20! orders: a fixed point is impossible in practice
    assert list(rows.row(0)) == list(range(10, 30))  # the original is untouched


def test_char_trigrams_pad_lowercase_and_collapse_spaces():
    assert char_trigrams("Ab  c") == [" ab", "ab ", "b c", " c "]
    assert char_trigrams("") == []


def test_vocabulary_order_min_count_max_size_extra_and_round_trip(tmp_path):
    counts = Counter({"b": 3, "a": 3, "c": 1, "d": 2})
    vocabulary = Vocabulary.build(counts, min_count=2, max_size=2, extra=["z", "a", "z"])
    assert vocabulary.symbols == ["<pad>", "<unk>", "a", "b", "z"]  # ties broken by symbol
    assert vocabulary.ids(["b", "d", "z"]) == [3, UNK, 4]
    assert vocabulary.ids([]) == [UNK]  # an empty row would break recurrent models
    vocabulary.save(tmp_path / "v.vocab")
    assert Vocabulary.load(tmp_path / "v.vocab").symbols == vocabulary.symbols


def test_word_and_trigram_featurizers_share_the_fit_and_reload(tmp_path):
    sentences = ["The CAT sat.", "the dog, sat", ""]
    words, rows = WordFeaturizer.fit_transform(sentences)
    assert words.vocabulary.symbols[2:5] == ["sat", "the", ","]
    assert [list(rows.row(i)) for i in range(3)] == [words.featurize([s]).row(0).tolist() for s in sentences]
    assert rows.row(2).tolist() == [UNK]
    assert words.featurize(["THE bird"]).row(0).tolist() == [words.vocabulary.index["the"], UNK]
    trigrams, trigram_rows = TrigramFeaturizer.fit_transform(sentences, min_count=2)
    assert set(trigrams.vocabulary.symbols[2:]) == {"sat", " sa", "at ", "the", "he ", " th"}  # "at " from "cat " and "sat "
    words.save(tmp_path)
    trigrams.save(tmp_path)
    assert WordFeaturizer.load(tmp_path).vocabulary.symbols == words.vocabulary.symbols
    assert TrigramFeaturizer.load(tmp_path).featurize(sentences).values.tolist() == trigram_rows.values.tolist()


def test_word_featurizer_reads_a_corpus_tokens_instead_of_tokenizing():
    sentences = ["The CAT sat.", "It's raining!", ""]
    tokenized, rows = WordFeaturizer.fit_transform(sentences)
    given, given_rows = WordFeaturizer.fit_transform(sentences, words=english_tokens(sentences))
    assert given.vocabulary.symbols == tokenized.vocabulary.symbols and given_rows.values.tolist() == rows.values.tolist()
    # the words given are the words used (the sentences are not tokenized again)
    other = tokenized.featurize(sentences, words=["sat sat", "the", ""])
    index = tokenized.vocabulary.index
    assert [other.row(i).tolist() for i in range(3)] == [[index["sat"]] * 2, [index["the"]], [UNK]]
    with pytest.raises(ValueError, match="3 sentences but 1 token strings"):
        tokenized.featurize(sentences, words=["the"])


def test_sentencepiece_uses_pad_0_unk_1_and_round_trips(tmp_path):
    corpus = [f"the {w} sat on the mat near {v}" for w in ("cat", "dog", "bird", "cow") for v in ("home", "house", "tree")] * 20
    pieces, rows = PieceFeaturizer.fit_transform(corpus, vocab_size=60)
    assert pieces.processor.id_to_piece(PAD) == "<pad>" and pieces.processor.id_to_piece(UNK) == "<unk>"
    assert PAD not in rows.values and len(rows) == len(corpus)
    assert pieces.featurize([""]).row(0).tolist() == [UNK]
    assert pieces.featurize(["THE CAT"]).values.tolist() == pieces.featurize(["the cat"]).values.tolist()
    pieces.save(tmp_path)
    assert PieceFeaturizer.load(tmp_path).featurize(corpus[:5]).values.tolist() == rows.take(np.arange(5)).values.tolist()


@pytest.mark.parametrize("rows", [[[1]], [[1, 2], [3, 4, 5, 6]]])
def test_from_rows_offsets(rows):
    ragged = Ragged.from_rows(rows)
    assert ragged.offsets[0] == 0 and ragged.lengths.tolist() == [len(r) for r in rows]
