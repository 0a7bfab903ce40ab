"""Bad input through the real command line: a one-line error naming the file, no traceback,
and a non-zero exit status (luigi.cfg [retcode]); which file is read, its line ends and gzip
damage (corpus/inputs.py, corpus/lines.py), each case of issue 23 as a user meets it."""

import bz2
import gzip
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
TASK_FAILED, SCHEDULING_FAILED = 30, 35  # luigi.cfg [retcode]


def luigi_command(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "luigi", "--module", "workflows", *args, "--local-scheduler",
            "--paranmt-workdir", str(workdir), "--paranmt-direct-num-workers", "1"]


def run_luigi(workdir: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """``luigi --module workflows ARGS`` from ``cwd`` (the repository, where luigi.cfg is, unless
    given), output in ``workdir``."""
    return subprocess.run(luigi_command(workdir, *args), cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)


def ingested(workdir: Path) -> tuple[pd.DataFrame, dict[str, int]]:
    """The latest ingest's bitext and its rejects counted by reason."""
    latest = workdir / "ingest" / "latest"
    rejects = latest / "rejects"
    counts = pd.read_parquet(rejects).reason.value_counts().to_dict() if rejects.exists() else {}
    return pd.read_parquet(latest / "bitext"), counts


def czeng_text(count: int, tag: str) -> bytes:
    return "".join(f"news-{tag}-{n}\t0.5\tVěta {tag} {n}.\tSentence {tag} {n}.\n" for n in range(1, count + 1)).encode()


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
    assert (f"2 of 10 lines of {path} rejected (20 %): bad_score 1, column_count 1; see {tmp_path / 'work' / 'ingest'}"
            in result.stdout + result.stderr)


# Which file is read (issue 23, class 1)


def aligned_pair(folder: Path, name: str, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.cs").write_text("".join(f"Věta {n}.\n" for n in range(1, count + 1)))
    (folder / f"{name}.en").write_text("".join(f"Sentence {n}.\n" for n in range(1, count + 1)))


@pytest.mark.parametrize(
    ("inputs", "rows"),
    [
        ("./w.cs,w.cs", 30),  # one pair in two spellings
        ("real/w.cs,link/w.cs", 30),  # through a symlinked folder
        ("gl/x.*", 50),  # a glob matching x.cs and x.en: the pair once, the English file not as CzEng
        ("br/part[1].tsv", 5),  # a name with [ ]: that file, not br/part1.tsv
    ],
    ids=["two-spellings", "symlinked-folder", "glob-matches-the-english-file", "brackets-in-a-name"],
)
def test_each_file_is_read_once_as_the_file_named(tmp_path, inputs, rows):
    aligned_pair(tmp_path, "w", 30)
    aligned_pair(tmp_path / "real", "w", 30)
    (tmp_path / "link").symlink_to("real")
    aligned_pair(tmp_path / "gl", "x", 50)
    (tmp_path / "br").mkdir()
    (tmp_path / "br" / "part[1].tsv").write_bytes(czeng_text(5, "bracket"))
    (tmp_path / "br" / "part1.tsv").write_bytes(czeng_text(7, "other"))
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", inputs, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    bitext, rejects = ingested(tmp_path / "work")
    assert (len(bitext), rejects) == (rows, {})
    assert not bitext.id.str.contains("other").any()


def test_a_glob_without_a_folder_matches_in_the_current_folder(tmp_path):
    (tmp_path / "a.tsv").write_bytes(czeng_text(4, "a"))
    (tmp_path / "b.tsv").write_bytes(czeng_text(3, "b"))
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", "*.tsv", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(ingested(tmp_path / "work")[0]) == 7


def test_a_fifo_is_refused_in_one_line_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "f.tsv")
    assert_one_line_error(run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(tmp_path / "f.tsv")),
                          "f.tsv is a pipe, not a regular file")


def test_a_process_substitution_is_refused_in_one_line(tmp_path):
    (tmp_path / "p.tsv").write_bytes(czeng_text(50, "p"))
    command = " ".join(shlex.quote(part) for part in luigi_command(tmp_path / "work", "IngestBitext"))
    result = subprocess.run(["bash", "-c", f"{command} --inputs <(cat {shlex.quote(str(tmp_path / 'p.tsv'))})"], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert_one_line_error(result, "is a pipe, not a regular file")


def test_a_bz2_file_among_good_inputs_is_refused_in_one_line(tmp_path):
    (tmp_path / "good.tsv").write_bytes(czeng_text(20, "good"))
    (tmp_path / "more.tsv.bz2").write_bytes(bz2.compress(czeng_text(20, "bz")))
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", f"{tmp_path}/*")
    assert_one_line_error(result, "more.tsv.bz2 is bzip2-compressed; only gzip is read")


# Line ends (class 2) and damaged gzip (class 3)


def test_a_stray_cr_in_a_long_first_line_rejects_only_that_line(tmp_path):
    first = b"news-long-1\t0.5\t" + b"x" * 40_000 + b"\r" + b"y" * 40_000 + b"\tE.\n"
    (tmp_path / "cr.tsv").write_bytes(first + czeng_text(40, "g"))
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(tmp_path / "cr.tsv"))
    assert result.returncode == 0, result.stdout + result.stderr
    bitext, rejects = ingested(tmp_path / "work")
    assert (len(bitext), rejects) == (40, {"too_long": 1})


def test_a_damaged_gzip_member_stores_none_of_its_lines(tmp_path):
    """Three members in stored (uncompressed) deflate blocks; a changed letter in the second is
    valid deflate data that only the member's checksum finds, after its lines were read."""
    members = [gzip.compress(czeng_text(3000, tag), compresslevel=0) for tag in ("one", "two", "three")]
    second = bytearray(members[1])
    second[len(second) // 2] ^= 0x20
    (tmp_path / "train.gz").write_bytes(members[0] + bytes(second) + members[2])
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(tmp_path / "train.gz"))
    assert result.returncode == 0, result.stdout + result.stderr
    bitext, rejects = ingested(tmp_path / "work")
    assert len(bitext) == 3000 and bitext.id.str.startswith("news-one-").all()
    assert rejects["truncated_file"] == 1 and rejects["damaged_gzip"] > 2000
    assert "damaged_gzip" in result.stdout + result.stderr, "the console names the rejects"


def test_a_gzip_file_of_one_damaged_member_is_no_usable_input(tmp_path):
    whole = bytearray(gzip.compress(czeng_text(500, "a")))
    whole[len(whole) // 2] ^= 0x10
    (tmp_path / "one.gz").write_bytes(bytes(whole))
    result = run_luigi(tmp_path / "work", "IngestBitext", "--inputs", str(tmp_path / "one.gz"))
    assert_one_line_error(result, "no usable line")
