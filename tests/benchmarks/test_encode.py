"""The encoding benchmark's baseline (the former per-sentence featurization and encode) still
gives the ids and vectors of the package's, so its speed-up compares the same work."""

import numpy as np

from benchmarks.encode import OLD_ROWS, encoders, old_encode, same_rows
from models.featurizers import featurize


def test_the_baseline_encodes_as_the_package_does():
    fit = [f"The {w} sat on the mat near {v} ." for w in ("cat", "dog", "bird") for v in ("home", "tree")] * 20
    sentences = ["A DOG sat\tnear   the tree", "", "😀 unseen words", "the cat"]
    for label, encoder in encoders(fit, spm_vocab_size=40).items():
        for feature, featurizer in encoder.featurizers.items():
            assert same_rows(OLD_ROWS[featurizer.kind](featurizer, sentences), featurize({feature: featurizer}, sentences)[feature]), label
        assert np.array_equal(old_encode(encoder, sentences), encoder.encode(sentences)), label
