"""scripts/sample_bitext.py: a seeded sample of line-aligned pairs, the same for the same files and seed."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sample_bitext.py"


def write_pairs(folder: Path, name: str, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.cs").write_text("".join(f"{name} věta {i}\n" for i in range(count)), encoding="utf-8")
    (folder / f"{name}.en").write_text("".join(f"{name} sentence {i}\n" for i in range(count)), encoding="utf-8")


def sample(files: str, output: Path, count: int, seed: int) -> list[tuple[str, str]]:
    subprocess.run([sys.executable, str(SCRIPT), files, "--count", str(count), "--seed", str(seed), "--output", str(output)], check=True,
                   capture_output=True)
    foreign = (output / "sample.cs").read_text(encoding="utf-8").splitlines()
    english = (output / "sample.en").read_text(encoding="utf-8").splitlines()
    return list(zip(foreign, english, strict=True))


def test_a_sample_keeps_pairs_aligned_and_is_the_same_for_the_same_seed(tmp_path):
    write_pairs(tmp_path / "in", "a", 300)
    write_pairs(tmp_path / "in", "b", 200)
    first = sample(str(tmp_path / "in" / "*.cs"), tmp_path / "one", 100, seed=1)
    assert len(first) == 100 and len(set(first)) == 100
    assert all(cs.replace("věta", "sentence") == en for cs, en in first)
    assert {cs.split()[0] for cs, _ in first} == {"a", "b"}
    assert sample(str(tmp_path / "in" / "*.cs"), tmp_path / "two", 100, seed=1) == first
    assert sample(str(tmp_path / "in" / "*.cs"), tmp_path / "three", 100, seed=2) != first
    assert len(sample(str(tmp_path / "in" / "*.cs"), tmp_path / "all", 1000, seed=1)) == 500
