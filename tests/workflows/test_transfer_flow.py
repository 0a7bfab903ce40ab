"""EvaluateTransfer and ModelTable's Table 8 through Luigi, on tiny data made here."""

import json

import luigi
import pytest
from conftest import squeezed
from test_corpus_flow import WORDS, vectors  # noqa: F401 - a fixture
from test_encoders_flow import TINY, fill_sts, sts_dir, write_pairs_tsv  # noqa: F401 - sts_dir is a fixture
from transfer_fixtures import write_transfer_data

from corpus.transfer import TRANSFER_TASKS
from workflows.console_errors import users_mistake
from workflows.experiments import ModelTable
from workflows.transfer import EvaluateTransfer


@pytest.fixture
def transfer_dirs(tmp_path, sts_dir):  # noqa: F811
    """[transfer] dir and mrpc_dir pointed at tiny copies; SICK inside [sts] dir."""
    config = luigi.configuration.get_config()
    folders = write_transfer_data(tmp_path / "data", sentences_per_class=12)
    (sts_dir / "SICK").mkdir(parents=True)
    for file in folders[2].iterdir():
        (sts_dir / "SICK" / file.name).write_bytes(file.read_bytes())
    config.set("transfer", "dir", str(folders[0]))
    config.set("transfer", "mrpc_dir", str(folders[1]))
    yield folders
    config.remove_option("transfer", "dir")
    config.remove_option("transfer", "mrpc_dir")


def test_evaluate_transfer_writes_every_task_with_the_papers_numbers(luigi_workdir, transfer_dirs, tmp_path):
    task = EvaluateTransfer(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), **TINY)
    assert luigi.build([task], local_scheduler=True)
    report = json.loads((task.output_dir / "report.json").read_text())
    assert list(report["tasks"]) == list(TRANSFER_TASKS)
    assert all(0 <= result.get("accuracy", 50) <= 100 for result in report["tasks"].values())
    assert "f1" in report["tasks"]["MRPC"] and "pearson" in report["tasks"]["SICK-R"]
    assert report["tasks"]["SICK-E"]["evaluated_on"] == "trial" and report["tasks"]["MR"]["test"] == 24
    assert report["paper"][0].startswith("Word Avg") and report["paper"][1]["MR"] == 75.8
    markdown = squeezed((task.output_dir / "report.md").read_text())
    assert "| word_avg |" in markdown and "| paper: Word Avg. (300d) | 75.8 |" in markdown
    assert (luigi_workdir / "transfer" / "latest-word_avg").resolve() == task.output_dir


def test_missing_transfer_data_is_one_line(luigi_workdir, transfer_dirs, tmp_path):
    (transfer_dirs[0] / "TREC.test").unlink()
    task = EvaluateTransfer(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), **TINY)
    with pytest.raises(Exception) as raised:
        task.build(tmp_path / "out")
    line = users_mistake(raised.value)
    assert "TREC.test" in line and "\n" not in line


def test_model_table_with_transfer_has_a_table_8(luigi_workdir, transfer_dirs, sts_dir, vectors, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    counts = tmp_path / "counts.txt"
    counts.write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(WORDS)))
    table = ModelTable(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), models="word_avg", vectors=vectors, word_counts=str(counts),
                       with_transfer=True, **{k: v for k, v in TINY.items() if k != "model"})
    assert luigi.build([table], local_scheduler=True)
    data = json.loads((table.output_dir / "report.json").read_text())["data"]
    assert list(data["transfer"]) == ["word_avg", "Avg vectors", "SIF vectors (+WR)"]
    markdown = squeezed((table.output_dir / "report.md").read_text())
    assert "## Table 8" in markdown and "paper: Word Avg. (300d)" in markdown
