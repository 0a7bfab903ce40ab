"""Word-vector and word-count readers on small files written by the tests."""

from __future__ import annotations

import os

import numpy as np
import pytest

from corpus import wordvec
from corpus.wordvec import load_vectors, load_vectors_cached, load_word_counts

GLOVE = "the 0.5 -1 2\ncat 1e-3 0 3.25\ndog -0.125 4 5\n"


def write(tmp_path, text, name="vectors.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_glove_without_header(tmp_path):
    words, vectors = load_vectors(write(tmp_path, GLOVE))
    assert words == ["the", "cat", "dog"]
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(
        vectors, np.array([[0.5, -1, 2], [1e-3, 0, 3.25], [-0.125, 4, 5]], dtype=np.float32)
    )


def test_word2vec_header_trailing_spaces_and_blank_lines(tmp_path):
    text = "3 3\n" + GLOVE.replace("\n", " \n") + "\n\n"
    words, vectors = load_vectors(write(tmp_path, text))
    assert words == ["the", "cat", "dog"]
    assert vectors.shape == (3, 3)
    assert vectors[2, 0] == np.float32(-0.125)


def test_wrong_header_count_warns_and_keeps_all(tmp_path):
    with pytest.warns(UserWarning, match="announces 2 vectors, file has 3"):
        words, _ = load_vectors(write(tmp_path, "2 3\n" + GLOVE))
    assert len(words) == 3


def test_words_with_spaces_keep_them(tmp_path):
    words, vectors = load_vectors(write(tmp_path, GLOVE + ". . . 7 8 9\n"))
    assert words[-1] == ". . ."
    np.testing.assert_array_equal(vectors[-1], [7, 8, 9])


def test_limit_and_duplicates(tmp_path):
    path = write(tmp_path, GLOVE + "cat 9 9 9\nfox 1 1 1\n")
    words, vectors = load_vectors(path)
    assert words == ["the", "cat", "dog", "fox"]
    np.testing.assert_array_equal(vectors[1], np.array([1e-3, 0, 3.25], dtype=np.float32))
    words, vectors = load_vectors(path, limit=2)
    assert words == ["the", "cat"] and vectors.shape == (2, 3)


def test_many_chunks_match_one_chunk(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    expected = rng.normal(size=(23, 4)).astype(np.float32)
    lines = [f"w{i} " + " ".join(repr(float(x)) for x in row) for i, row in enumerate(expected)]
    path = write(tmp_path, "\n".join(lines))
    monkeypatch.setattr(wordvec, "_CHUNK_LINES", 5)
    words, vectors = load_vectors(path)
    assert words == [f"w{i}" for i in range(23)]
    np.testing.assert_array_equal(vectors, expected)


def test_malformed_lines_are_named(tmp_path):
    path = write(tmp_path, GLOVE + "short 1 2\nbad 1 x 3\nlonely\nok 1 2 3\n")
    message = (
        r"3 malformed line\(s\) among lines 1-7 \(expected a word and 3 numbers\): "
        r"line 4: 2 numbers; line 5: not a number; line 6: 0 numbers$"
    )
    with pytest.raises(ValueError, match=message):
        load_vectors(path)


def test_empty_file(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        load_vectors(write(tmp_path, "\n"))
    with pytest.raises(ValueError, match="no vectors after the header"):
        load_vectors(write(tmp_path, "0 3\n"))


def test_word_counts(tmp_path):
    path = write(tmp_path, "the 100\ncat 7\n\nthe 5\n", name="counts.txt")
    assert load_word_counts(path) == {"the": 105, "cat": 7}


def test_word_counts_malformed(tmp_path):
    path = write(tmp_path, "the 100\ncat seven\n", name="counts.txt")
    with pytest.raises(ValueError, match="line 2 is not `word count`"):
        load_word_counts(path)


def test_cached_vectors_are_the_parsed_ones_and_follow_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PARANMT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "v.txt"
    path.write_text("2 3\nthe 1 2 3\ncat 4 5 6\n", encoding="utf-8")
    words, vectors = load_vectors_cached(path)
    assert words == ["the", "cat"] and vectors.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert len(list((tmp_path / "cache" / "vectors").glob("*.npy"))) == 1
    cached_words, cached = load_vectors_cached(path)  # read back from the cache, memory-mapped
    assert cached_words == words and isinstance(cached, np.memmap) and np.array_equal(cached, vectors)
    path.write_text("2 3\nthe 1 2 3\ndog 7 8 9\n", encoding="utf-8")  # a changed file is parsed again
    os.utime(path, ns=(1, 1))
    assert load_vectors_cached(path)[0] == ["the", "dog"]
    for words_file in (tmp_path / "cache" / "vectors").glob("*.words"):  # a damaged entry is rebuilt
        words_file.write_text("only one word", encoding="utf-8")
    rebuilt_words, rebuilt = load_vectors_cached(path)
    assert rebuilt_words == ["the", "dog"] and rebuilt.tolist() == [[1, 2, 3], [7, 8, 9]]
    monkeypatch.setenv("PARANMT_CACHE", str(path))  # a file where the cache folder should be: nothing stored
    assert load_vectors_cached(path)[0] == ["the", "dog"]
