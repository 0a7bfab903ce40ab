"""Slow tier: the default trainer must learn on real paraphrase pairs (the regression that
mega-batching with the paper's hardest negatives caused: worse than untrained)."""

import subprocess
import sys

import numpy as np
import pytest

from corpus.sts import load_stsb
from models.configs import TrainConfig
from models.evaluation import dev_score
from models.trainer import Trainer
from models.training_pairs import read_pairs

pytestmark = pytest.mark.slow


def test_default_word_avg_beats_its_untrained_self_on_real_pairs(tmp_path, shared_path):
    builder = shared_path("..", "tools", "build_refpairs.py")
    stsb_dev = load_stsb(shared_path("sts"), "dev")
    pairs_file = tmp_path / "refpairs.tsv"
    subprocess.run([sys.executable, str(builder), str(pairs_file)], check=True, capture_output=True)
    first, second = read_pairs(pairs_file)
    keep = np.sort(np.random.default_rng(0).choice(len(first), 20_000, replace=False))  # captions included
    trainer = Trainer(([first[i] for i in keep], [second[i] for i in keep]), tmp_path / "model", config=TrainConfig(epochs=3, device="cpu"))
    untrained = dev_score(trainer.sentence_encoder().encode, stsb_dev)
    trainer.run()
    trained = dev_score(trainer.sentence_encoder().encode, stsb_dev)
    assert trained > untrained + 10, f"STS-B dev: untrained {untrained:.1f}, trained {trained:.1f}"
