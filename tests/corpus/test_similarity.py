import numpy as np
import pytest

from corpus.language import LanguageModel
from corpus.scoring import score_texts
from corpus.similarity import WordAverager
from corpus.text import english_tokens
from corpus.tokenbatch import TokenBatch

WORDS = ["cat", "dog", "sat", "the"]
VECTORS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], dtype=np.float32)


def similarity(pairs):
    batch = TokenBatch.from_token_lists([r.split() for r, _ in pairs], [t.split() for _, t in pairs])
    return WordAverager(WORDS, VECTORS).similarity(batch)


def test_hand_computed_cosines():
    result = similarity([
        ("cat", "cat"),  # identical: 1
        ("cat", "dog"),  # orthogonal: 0
        ("the cat", "cat"),  # mean (1, .5, 0) vs (1, 0, 0): 1/sqrt(1.25)
        ("cat cat dog", "cat dog"),  # repeated word weighs twice: (2/3, 1/3) vs (1/2, 1/2)
        ("cat unknownword", "cat"),  # OOV skipped
        ("zzz qqq", "cat"),  # no known word on one side: 0
        ("", ""),
    ])
    expected = [1.0, 0.0, 1 / np.sqrt(1.25), (1 / 3 + 1 / 6) / (np.sqrt(5 / 9) * np.sqrt(0.5)), 1.0, 0.0, 0.0]
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def test_vectorized_equals_a_per_pair_loop_on_random_data():
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(50)]
    vectors = rng.normal(size=(40, 8)).astype(np.float32)  # w40..w49 are out of vocabulary
    model = WordAverager(vocab[:40], vectors)
    sides = [[list(rng.choice(vocab, size=rng.integers(0, 10))) for _ in range(2)] for _ in range(300)]
    batch = TokenBatch.from_token_lists([a for a, _ in sides], [b for _, b in sides])

    def mean(tokens):
        known = [vectors[int(t[1:])] for t in tokens if int(t[1:]) < 40]
        return np.mean(known, axis=0) if known else None

    expected = []
    for a, b in sides:
        u, v = mean(a), mean(b)
        expected.append(0.0 if u is None or v is None else float(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
    np.testing.assert_allclose(model.similarity(batch), expected, rtol=1e-5, atol=1e-6)


def test_english_tokens_is_the_one_tokenized_form():
    texts = ["The cat sat.", "the CAT sat .", "It's raining now!", "The cat sat."]
    assert english_tokens(texts) == ["the cat sat .", "the cat sat .", "it 's raining now !", "the cat sat ."]
    assert english_tokens(iter(texts[:1])) == ["the cat sat ."]  # any iterable


def test_score_texts_reads_the_tokens_and_langid_reads_the_text():
    model = WordAverager(["the", "cat", "sat", "."], np.eye(4, dtype=np.float32))
    references, translations = ["The cat sat."], ["the CAT sat ."]
    columns = score_texts(references, translations, english_tokens(references), english_tokens(translations), model, LanguageModel.load())
    assert columns["trigram_overlap"].tolist() == [1.0]
    assert columns["pp_sim"][0] == pytest.approx(1.0)
    assert columns["unigram_f1"].tolist() == [1.0] and columns["kendall_tau"].tolist() == [1.0]
    # langid reads each side as written (case and spacing kept), not its tokens
    assert columns["reference_p_en"][0] != columns["translation_p_en"][0] and min(columns["reference_p_en"][0], columns["translation_p_en"][0]) > 0.99
    # the scores come from the tokens given: other tokens, other scores
    other = score_texts(references, translations, ["the cat sat ."], ["a dog"], model, LanguageModel.load())
    assert other["trigram_overlap"].tolist() == [0.0] and other["unigram_f1"].tolist() == [0.0]


def test_mismatched_words_and_vectors_are_rejected():
    with pytest.raises(ValueError, match="3 words but 4 vectors"):
        WordAverager(WORDS[:3], VECTORS)
