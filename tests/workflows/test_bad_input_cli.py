"""Bad input through the real command line: a one-line error naming the file, no traceback,
and a non-zero exit status (luigi.cfg [retcode])."""

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK_FAILED, SCHEDULING_FAILED = 30, 35  # luigi.cfg [retcode]


def run_luigi(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """``luigi --module workflows ARGS`` from the repository (where luigi.cfg is), output in ``workdir``."""
    command = [sys.executable, "-m", "luigi", "--module", "workflows", *args, "--local-scheduler",
               "--paranmt-workdir", str(workdir), "--paranmt-direct-num-workers", "1"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def assert_one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == TASK_FAILED, output
    assert "Traceback" not in output, output
    assert any(expected in line for line in output.splitlines()), output


@pytest.fixture
def czeng_gz(tmp_path) -> Path:
    path = tmp_path / "ok.gz"
    path.write_bytes(gzip.compress(b"news-b1-00train-f00001-s1\t0.9\tPes.\tThe dog.\n"))
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "absent.gz", "no input file matches"),
        (lambda d: (d / "junk.txt").write_text("no tabs here\n\n") and d / "junk.txt", "no usable line"),
    ],
    ids=["missing", "no-usable-line"],  # the other file checks: tests/pipelines/test_ingest_pipeline.py
)
def test_unusable_input_is_one_line_and_exits_non_zero(tmp_path, make, expected):
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(make(tmp_path)))
    assert_one_line_error(result, expected)


def test_impossible_parameter_is_one_line_and_exits_non_zero(tmp_path, czeng_gz):
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(czeng_gz), "--max-line-bytes", "-5")
    assert_one_line_error(result, "--max-line-bytes must be at least 1, got -5")


def test_a_missing_training_file_is_one_line_and_exits_non_zero(tmp_path):
    result = run_luigi(tmp_path / "work", "TrainEncoder", "--train-data", str(tmp_path / "pairs.tsv"))
    assert_one_line_error(result, "pairs.tsv: no such file")


def test_impossible_training_settings_are_one_line_and_exit_non_zero(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("A dog runs.\tA dog is running.\nA cat sleeps.\tA cat is asleep.\n")
    result = run_luigi(tmp_path / "work", "TrainEncoder", "--train-data", str(pairs), "--megabatch", "0")
    assert_one_line_error(result, "megabatch and epochs must be at least 1, got 100, 0, 5")


def test_success_exits_zero(tmp_path, czeng_gz):
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(czeng_gz))
    assert result.returncode == 0, result.stdout + result.stderr


def test_many_rejects_are_announced_with_the_top_reasons(tmp_path):
    good = [f"news-b1-00train-f00001-s{n}\t0.9\tVěta {n}.\tSentence {n}." for n in range(1, 9)]
    path = tmp_path / "mixed.txt"
    path.write_text("\n".join([*good, "only\ttwo", "news-x\t1_0\tA\tB"]) + "\n")
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 of 10 lines rejected (20 %): bad_score 1, column_count 1" in result.stdout + result.stderr
