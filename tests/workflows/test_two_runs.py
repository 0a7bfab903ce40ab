"""Two runs are one run only when they build the same outputs: the same command in two folders
(its own inputs and work directory) is not refused; luigi.cfg's absence changes nothing."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_same_command_in_two_folders_runs_in_both_at_once(tmp_path):
    runs = []
    for name, (czech, english) in {"a": ("Ahoj.", "Hello."), "b": ("Pes.", "Dog.")}.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "w.cs").write_text("".join(f"{czech} {n}\n" for n in range(200)))
        (folder / "w.en").write_text("".join(f"{english} {n}\n" for n in range(200)))
        command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler", "--inputs", "w.cs"]
        environment = {**os.environ, "PYTHONPATH": str(REPO)}  # no luigi.cfg here: the package's defaults
        runs.append(subprocess.Popen(command, cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for run in runs:
        output = run.communicate(timeout=300)[0]
        assert run.returncode == 0, output
    for name in ("a", "b"):
        assert (tmp_path / name / "work" / "ingest" / "latest" / "_SUCCESS").exists()


def test_a_failure_exits_non_zero_in_one_line_from_a_folder_without_luigi_cfg(tmp_path):
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--local-scheduler", "--inputs", "absent.gz"]
    done = subprocess.run(command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 30, done.stdout + done.stderr
    assert (done.stdout + done.stderr).strip().splitlines() == [
        next(line for line in (done.stdout + done.stderr).splitlines() if "no input file matches 'absent.gz'" in line)]
