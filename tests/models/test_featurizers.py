"""Featurizers: CSR id rows, vocabularies, words / character trigrams / sentencepiece."""

import subprocess
import sys
from collections import Counter
from itertools import chain
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus.text import english_tokens
from models.featurizers import PieceFeaturizer, TrigramFeaturizer, WordFeaturizer
from models.ragged import Ragged
from models.sentencepiece_training import seeded_sample
from models.vocabulary import PAD, UNK, Vocabulary

REPO = Path(__file__).resolve().parents[2]


def reference_trigrams(sentence: str) -> list[str]:
    """The definition, one sentence at a time: every 3-character window of the sentence
    lowercased, whitespace runs collapsed to one space, padded with a space on each side."""
    text = " " + " ".join(sentence.lower().split()) + " "
    return [text[i : i + 3] for i in range(len(text) - 2)]


def reference_vocabulary(sentences: list[str], min_count: int, max_size: int | None, extra: list[str]) -> list[str]:
    """Symbols in id order: the specials, trigrams seen min_count times, most frequent first,
    ties by symbol, the first max_size of them, then the extra symbols not already in."""
    counts = Counter(chain.from_iterable(map(reference_trigrams, sentences)))
    ranked = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))[:max_size]
    specials = ["<pad>", "<unk>"]
    return [*specials, *ranked, *[s for s in dict.fromkeys(extra) if s not in ranked + specials]]


def reference_rows(symbols: list[str], sentences: list[str]) -> list[list[int]]:
    index = {symbol: i for i, symbol in enumerate(symbols)}
    return [[index.get(t, UNK) for t in reference_trigrams(s)] or [UNK] for s in sentences]


def rows_of(ragged: Ragged) -> list[list[int]]:
    return [ragged.row(i).tolist() for i in range(len(ragged))]


# Real-looking text and its hard cases: capitals whose lowercase is longer (İ) or depends on
# the context (final Σ), combining marks, characters beyond the BMP (an emoji, a math letter
# without case), a lone surrogate, every kind of whitespace Python splits on (tab, newline,
# no-break space, the ASCII separators, NEL, the line separator), runs of them.
PIECES = ["the", "Cat", "SAT", "on", "mat", ".", ",", "İstanbul", "ΟΔΟΣ", "Σ", "e\u0301", "naïve", "Straße",
          "😀", "𝔘x", "\ud800", "é", "ß", " ", "  ", "\t", "\n", "\xa0", "\x1c", "\x85", "\u2028", "\u3000"]
SENTENCES = st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), max_size=8)


@settings(max_examples=150, deadline=None)
@given(fitted=SENTENCES, featurized=SENTENCES, min_count=st.integers(1, 3), max_size=st.sampled_from([None, 1, 5, 40]),
       extra=st.lists(st.sampled_from(["xyz", " ca", "the", "<unk>", "zz"]), max_size=3))
def test_trigram_ids_are_the_definitions(fitted, featurized, min_count, max_size, extra):
    """Fitted on some sentences, featurizing those and others (trigrams missing from the
    vocabulary, empty and whitespace-only sentences, trigrams at a sentence's edges)."""
    trigrams, rows = TrigramFeaturizer.fit_transform(fitted, min_count, max_size, extra)
    symbols = reference_vocabulary(fitted, min_count, max_size, extra)
    assert trigrams.vocabulary.symbols == symbols
    assert rows_of(rows) == reference_rows(symbols, fitted)
    assert rows_of(trigrams.featurize(featurized)) == reference_rows(symbols, featurized)


def test_trigrams_of_a_saved_vocabulary_across_sentence_ends(tmp_path):
    sentences = ["Ab  c", "", "c\tAB", " \n ", "😀b"]
    TrigramFeaturizer.fit_transform(sentences)[0].save(tmp_path)
    loaded = TrigramFeaturizer.load(tmp_path)
    assert loaded.vocabulary.symbols[2:6] == [" ab", " c ", "ab ", " 😀b"]  # 2, 2, 2, 1 times; ties by symbol
    index = loaded.vocabulary.index
    rows = rows_of(loaded.featurize(sentences))
    assert rows[0] == [index[" ab"], index["ab "], index["b c"], index[" c "]] and rows[1] == rows[3] == [UNK]
    # no window across two sentences: "c " + " a" would make "c  " or " ab" twice
    assert len(rows[2]) == len("c ab") and rows_of(loaded.featurize(["ca", "b"])) == [[UNK, UNK], [UNK]]


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
    texts = ["THE cat\tsat", "", "   ", "the dog 😀 sat", "mat İ"]
    assert rows_of(pieces.featurize(texts)) == [pieces.processor.encode(s.lower()) or [UNK] for s in texts]
    assert pieces.featurize(["THE CAT"]).values.tolist() == pieces.featurize(["the cat"]).values.tolist()
    pieces.save(tmp_path)
    assert PieceFeaturizer.load(tmp_path).featurize(corpus[:5]).values.tolist() == rows.take(np.arange(5)).values.tolist()


@pytest.mark.parametrize("rows", [[[1]], [[1, 2], [3, 4, 5, 6]]])
def test_from_rows_offsets(rows):
    ragged = Ragged.from_rows(rows)
    assert ragged.offsets[0] == 0 and ragged.lengths.tolist() == [len(r) for r in rows]


def test_from_lengths_gives_empty_rows_an_unk():
    ragged = Ragged.from_lengths(np.array([5, 6, 7, 8]), np.array([0, 2, 0, 0, 2, 0]))
    assert rows_of(ragged) == [[UNK], [5, 6], [UNK], [UNK], [7, 8], [UNK]] and ragged.values.dtype == np.int64


def test_a_seeded_sample_is_uniform_and_the_same_for_the_same_seed():
    items = range(50)
    assert seeded_sample(items, 80, seed=1) == list(items)  # fewer than asked: all of them
    assert seeded_sample(items, 10, seed=3) == seeded_sample(iter(items), 10, seed=3) != seeded_sample(items, 10, seed=4)
    counts = Counter(chain.from_iterable(seeded_sample(items, 10, seed) for seed in range(4000)))
    assert all(len(set(seeded_sample(items, 10, seed))) == 10 for seed in range(50))  # without replacement
    # Each item is kept with probability 10/50: 800 times in 4,000 samples, sd 25.3; the first and
    # the last alike (a reservoir that favoured either end would show here).
    assert sorted(counts) == list(items) and all(680 < count < 920 for count in counts.values()), counts


def test_sampled_pieces_are_the_same_in_another_process():
    """sentencepiece's own sample (input_sentence_size) differed from one process to the next
    whatever seed it was given; in one process it repeated itself."""
    script = (
        "import hashlib, sys; from models.sentencepiece_training import train_sentencepiece\n"
        "words = 'man woman dog cat plays runs eats guitar piano ball food field park red blue'.split()\n"
        "sentences = [' '.join(words[(i * k) % len(words)] for k in range(1, 8)) + f' {i}' for i in range(3000)]\n"
        "model = train_sentencepiece(sentences, 1, input_sentence_size=1000, vocab_size=200, model_type='unigram')\n"
        "print(hashlib.sha256(model).hexdigest())\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO).stdout for _ in range(3)]
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 65, runs
