"""`--help` shows every parameter once with its default; the paths the README names are the ones
the tasks write; `latest` links per model; empty report cells say why."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import luigi
import pytest
from luigi.cmdline_parser import CmdlineParser
from luigi.task_register import Register
from test_encoders_flow import TINY

import workflows
from reports.experiments import EMPTY_MEANS, Table
from workflows.encoders import TrainEncoder
from workflows.experiments import DataSourceComparison, DecileSweep, MegabatchAblation, ModelTable

REPO = Path(__file__).resolve().parents[2]


def help_entries(help_text: str) -> dict[str, str]:
    """argparse's option list as {first flag: its whole entry}; a flag listed twice fails."""
    entries: dict[str, str] = {}
    flag = None
    for line in help_text.splitlines():
        if match := re.match(r"  (--[\w.-]+)", line):
            flag = match.group(1)
            assert flag not in entries, f"{flag} listed twice"
            entries[flag] = line
        elif flag and line.startswith("    "):
            entries[flag] += " " + line.strip()
    return entries


@pytest.mark.parametrize("task_name", workflows.__all__)
def test_help_lists_each_parameter_once_with_its_default(task_name):
    entries = help_entries(CmdlineParser._build_parser(root_task=task_name).format_help())
    for name, parameter in Register.get_task_cls(task_name).get_params():
        flag = "--" + name.replace("_", "-")
        if parameter.visibility == luigi.parameter.ParameterVisibility.HIDDEN:  # an older spelling, still parsed
            assert flag not in entries
            continue
        assert "Default:" in entries[flag], entries[flag]
        assert f"--{task_name}-{name.replace('_', '-')}" not in entries


def test_help_all_shows_every_tasks_flags_a_percent_sign_as_text(tmp_path):
    """--help-all ended in a traceback: ScoresAgainstJudgments' "95 % interval" is an argparse
    format ("% i") unless escaped, and only the root task's descriptions were."""
    result = subprocess.run([sys.executable, "-m", "luigi", "--module", "workflows", "TrainOnFiltered", "--help-all"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    entries = help_entries(result.stdout)
    assert "95 % interval" in entries["--ScoresAgainstJudgments-resamples"]
    assert "--ChooseDeciles-sweep-pairs" in entries  # what --decile auto's sweep costs, found from TrainOnFiltered


def test_help_on_the_command_line_shows_the_configured_default(tmp_path):
    (tmp_path / "luigi.cfg").write_text("[TrainSentencePiece]\nvocab_size = 4000\n")
    result = subprocess.run([sys.executable, "-m", "luigi", "--module", "workflows", "TrainSentencePiece", "--help"],
                            cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "LUIGI_CONFIG_PATH": str(tmp_path / "luigi.cfg")})
    entries = help_entries(result.stdout)
    assert result.returncode == 0 and "Default: 4000" in entries["--vocab-size"]  # the configured one, not the code's 32000
    assert "Default: ''" in entries["--inputs"]


def test_the_experiment_paths_the_readme_names_are_the_stages():
    readme = (REPO / "README.md").read_text()
    assert f"work/{ModelTable.stage}/latest/index.html" in readme
    named = {task.stage.split("/")[1] for task in (DecileSweep, MegabatchAblation, ModelTable, DataSourceComparison)}
    assert named == {"decile-sweep", "megabatch-ablation", "model-table", "data-source-comparison"}


def test_each_model_kind_has_its_own_latest_link(luigi_workdir, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"a dog runs {i} .\ta dog is running {i} .\n" for i in range(40)))
    settings = {**TINY, "max_steps": 2}
    word, trigram = (TrainEncoder(train_data=str(pairs), **{**settings, "model": model}) for model in ("word_avg", "trigram_avg"))
    for task in (word, trigram):
        assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    root = luigi_workdir / "encoders"
    assert (root / "latest-word_avg").resolve() == word.output_dir
    assert (root / "latest-trigram_avg").resolve() == (root / "latest").resolve() == trigram.output_dir


def test_a_table_with_an_empty_cell_says_why():
    assert EMPTY_MEANS in Table("t", ["model", "STS-B test"], [["word_avg", math.nan]]).markdown()
    assert EMPTY_MEANS not in Table("t", ["model", "STS-B dev"], [["word_avg", 80.1]]).markdown()
