"""The vector baselines of the model table."""

import numpy as np
import pytest

from models.baselines import reference_sample, vector_baselines
from models.evaluation import paired_cosine


@pytest.fixture
def files(tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the 1 0 0\ncat 0 1 0\nsat 0 0 1\nmat 0 2 2\n")
    counts = tmp_path / "counts.txt"
    counts.write_text("the 900\ncat 50\nsat 30\nmat 20\n")
    return str(vectors), str(counts)


def test_average_is_the_plain_mean_and_sif_is_fitted_on_the_reference(files):
    baselines = vector_baselines(*files, reference=["the cat sat", "the mat", "cat mat sat"])
    assert list(baselines) == ["Avg vectors", "SIF vectors (+WR)"]
    average, dim = baselines["Avg vectors"]
    assert dim == 3
    plain = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 1.0, 1.0], [0, 0, 0]])
    got = average(["The cat sat", "the mat zebra", "zebra"])
    np.testing.assert_allclose(paired_cosine(got[:2], plain[:2]), [1.0, 1.0])
    assert not got[2].any()
    sif, _ = baselines["SIF vectors (+WR)"]
    assert sif(["the cat sat"]).shape == (1, 3) and not np.allclose(paired_cosine(sif(["the cat sat"]), plain[:1]), 1.0)
    assert list(vector_baselines(files[0], "", reference=[])) == ["Avg vectors"]


def test_reference_sample_is_seeded_and_bounded():
    first, second = [f"a{i}" for i in range(50)], [f"b{i}" for i in range(50)]
    assert reference_sample(first[:3], second[:3], 10) == first[:3] + second[:3]
    sample = reference_sample(first, second, 20, seed=2)
    assert len(set(sample)) == 20 and sample == reference_sample(first, second, 20, seed=2)

