"""SIF against hand computations on a tiny vocabulary; a real-data tier on GloVe-4k and STS."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from models.sif import CommonComponentRemoval, SIFEmbedder

WORDS = ["the", "cat", "sat", "mat", "dog", "café"]
VECTORS = np.array(
    [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1], [2, 2, 2], [1, 1, 0]], dtype=np.float32
)
# p(w) = count / 1000 ("dog" has no count). With a = 0.1 the weights a / (a + p(w)) are:
# the 0.1/0.7 = 1/7, cat 0.1/0.2 = 1/2, sat 0.1/0.3 = 1/3, mat and café 0.1/0.15 = 2/3.
COUNTS = {"the": 600, "cat": 100, "sat": 200, "mat": 50, "café": 50}
A = 0.1


def model(**options):
    return SIFEmbedder(WORDS, VECTORS, COUNTS, a=A, **options)


def test_weights_are_a_over_a_plus_frequency():
    np.testing.assert_allclose(model().weights, [1 / 7, 1 / 2, 1 / 3, 2 / 3, 0, 2 / 3])
    np.testing.assert_allclose(model(drop_uncounted=False).weights[4], 1.0)


def test_weighted_average_by_hand():
    sif = model()
    sentences = ["The cat sat.", "cat CAT", "Zebra!?", "", "dog sat", "Café mat"]
    expected = np.array(
        [
            # "." has no vector: 3 known tokens.
            (VECTORS[0] / 7 + VECTORS[1] / 2 + VECTORS[2] / 3) / 3,
            VECTORS[1] / 2,
            np.zeros(3),
            np.zeros(3),
            # "dog" has no count and is dropped by default.
            VECTORS[2] / 3,
            (VECTORS[5] * 2 / 3 + VECTORS[3] * 2 / 3) / 2,
        ]
    )
    np.testing.assert_allclose(sif.weighted_average(sentences), expected, rtol=1e-6)
    with_dog = model(drop_uncounted=False).weighted_average(["dog sat"])
    np.testing.assert_allclose(with_dog[0], (VECTORS[4] + VECTORS[2] / 3) / 2, rtol=1e-6)


def test_component_removal_is_uncentered():
    # X^T X = [[6, 4], [4, 6]]: top singular direction (1, 1)/sqrt(2). Centering the rows
    # first would give another direction.
    removal = CommonComponentRemoval().fit(np.array([[1.0, 1.0], [2.0, 2.0], [1.0, -1.0]]))
    np.testing.assert_allclose(np.abs(removal.components), [[2**-0.5, 2**-0.5]])
    np.testing.assert_allclose(removal.transform(np.array([[3.0, 1.0]])), [[1.0, -1.0]])
    doubled = removal.apply(lambda sentences: np.array([[6.0, 2.0]] * len(sentences)))
    np.testing.assert_allclose(doubled(["a", "b"]), [[2.0, -2.0], [2.0, -2.0]])


def test_component_removal_keeps_dtype_and_round_trips(tmp_path):
    removal = CommonComponentRemoval().fit(np.random.default_rng(1).normal(size=(20, 4)), 2)
    points = np.random.default_rng(2).normal(size=(5, 4)).astype(np.float32)
    assert removal.transform(points).dtype == np.float32
    removal.save(tmp_path / "ccr.npz")
    loaded = CommonComponentRemoval.load(tmp_path / "ccr.npz")
    np.testing.assert_array_equal(loaded.transform(points), removal.transform(points))
    with pytest.raises(RuntimeError, match="not fitted"):
        CommonComponentRemoval().transform(points)
    with pytest.raises(RuntimeError, match="nothing to save"):
        CommonComponentRemoval().save(tmp_path / "empty.npz")
    with pytest.raises(ValueError, match="at least 2 reference embeddings"):
        CommonComponentRemoval().fit(np.ones((1, 4)), 2)


def test_encode_removes_the_reference_component_by_hand():
    # Both reference sentences average to (1/7) * the = along the first axis: u = (1, 0, 0).
    sif = model().fit(["the", "the the ."])
    np.testing.assert_allclose(np.abs(sif.removal.components), [[1, 0, 0]], atol=1e-12)
    # "the cat" averages to (1/14, 1/4, 0); removing u leaves (0, 1/4, 0).
    np.testing.assert_allclose(sif.encode(["the cat"]), [[0, 0.25, 0]], atol=1e-7)


def test_embeddings_do_not_depend_on_the_batch_or_on_test_sentences():
    sif = model().fit(["the cat sat", "the mat", "cat sat on the mat"])
    components = sif.removal.components.copy()
    alone = sif.encode(["the cat sat on the mat"])
    batch = sif.encode(["sat sat", "the cat sat on the mat", "café"])
    np.testing.assert_array_equal(batch[1], alone[0])
    np.testing.assert_array_equal(sif.removal.components, components)
    # A different reference set gives a different component, so fitting is what sets it.
    other = model().fit(["cat cat", "mat"])
    assert not np.allclose(np.abs(other.removal.components), np.abs(components))


def test_save_load_gives_identical_embeddings(tmp_path):
    sif = model().fit(["the cat sat", "the mat", "café sat"])
    sentences = ["the café cat", "mat sat", "nothing known"]
    sif.save(tmp_path / "sif.npz")
    loaded = SIFEmbedder.load(tmp_path / "sif.npz")
    assert loaded.words == WORDS and loaded.a == A
    np.testing.assert_array_equal(loaded.encode(sentences), sif.encode(sentences))
    np.testing.assert_array_equal(loaded(sentences), sif.encode(sentences))


def test_unfitted_model_refuses_to_encode_or_save(tmp_path):
    with pytest.raises(RuntimeError, match="not fitted"):
        model().encode(["the cat"])
    with pytest.raises(RuntimeError, match="before saving"):
        model().save(tmp_path / "x.npz")
    with pytest.raises(ValueError, match="must agree"):
        SIFEmbedder(WORDS[:2], VECTORS, COUNTS)
    with pytest.raises(ValueError, match="counts are empty"):
        SIFEmbedder(WORDS, VECTORS, {})


@pytest.mark.slow
def test_sif_glove4k_on_real_sts(shared_path):
    """GloVe-4k SIF with the component fitted on STS 2012 train: numbers in docs/README-sts.md."""
    from corpus.sts import load_sts2017, load_sts_tests
    from corpus.wordvec import load_vectors, load_word_counts
    from models.evaluation import dev_score, evaluate

    sts = shared_path("sts")
    wordvec = shared_path("wordvec")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glove50_4k.txt's header is one vector short
        words, vectors = load_vectors(wordvec / "glove50_4k.txt")
    sif = SIFEmbedder(words, vectors, load_word_counts(wordvec / "enwiki_vocab_min200.txt"))
    reference = []
    for name in ("MSRpar", "MSRvid", "SMTeuroparl"):
        lines = (sts / "STS2012-train" / f"STS.input.{name}.txt").read_text("utf-8").splitlines()
        reference += [sentence for line in lines for sentence in line.split("\t")[:2]]
    sif.fit(reference)
    dev = load_sts2017(sts)
    assert dev_score(sif.encode, dev) > dev_score(sif.weighted_average, dev) + 2
    report = evaluate(sif.encode, load_sts_tests(sts))
    print(report.to_markdown())
    assert len(report.scores) == 24
    assert 40 < report.test_mean() < 60
    assert all(report.year_mean(year) > 25 for year in report.years())
