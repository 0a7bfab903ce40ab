"""``python -m benchmarks quality --mix``: a row per mix and model, each beside its baseline."""

import subprocess
import sys

import pytest
from conftest import REPO

from benchmarks.quality import Cell, grid, mix_cells


def test_each_mix_row_has_its_models_reference_only_baseline_in_the_same_run_once():
    cells = grid(["trigram_word"], rules=False)
    added = mix_cells(["corpus/pairs", "0.5=mt.tsv"], ["word_avg", "trigram_word"], cells)
    assert [(cell.model, cell.more_data) for cell in added] == [
        ("word_avg", ""), ("word_avg", "corpus/pairs"), ("word_avg", "0.5=mt.tsv"),  # Word Avg's baseline added
        ("trigram_word", "corpus/pairs"), ("trigram_word", "0.5=mt.tsv"),  # the grid has Trigram-Word's defaults already
    ]
    assert Cell("defaults", "trigram_word") in cells


def test_a_mix_that_names_no_file_stops_before_any_training(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks", "quality", "--mix", str(tmp_path / "absent.tsv")], cwd=REPO,
                          capture_output=True, text=True)
    if "skipped" in done.stdout:
        pytest.skip("../shared is absent: the benchmark skips before reading its options' files")
    assert done.returncode == 1 and done.stderr.strip().endswith(f"no such file or dataset: {tmp_path / 'absent.tsv'}"), done.stderr
