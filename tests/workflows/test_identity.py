"""Each stage is known by the code it runs: the whole stage graph's identities before and after
an edit of the installed code (a copy of it), each in a fresh process as a user's run would be."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import workflows
from workflows.code_identity import PROJECT_PACKAGES, code_identity, meaning_digest

# TrainOnFiltered --decile 9's stages, upstream first: everything `luigi --module workflows` runs
# for the paper's experiment on the embedded demo.
UPSTREAM_OF_SCORING = ["IngestBitext", "TrainSentencePiece", "TrainTranslator", "ConvertTranslator", "BackTranslate", "SelectTopHalf",
                       "TrainPPModel"]
SCORING_AND_AFTER = ["ScorePairs", "AssignDeciles", "SelectTrainingSet", "TrainFilteredEncoder", "TrainOnFiltered"]

FINGERPRINTS = """
import json
import workflows
from workflows.experiments import TrainOnFiltered
from workflows.plan import stages_upstream_first
print(json.dumps({stage.task_family: stage.fingerprint() for stage in stages_upstream_first(TrainOnFiltered(decile="9"))}))
"""


@pytest.fixture(scope="module")
def installed_code(tmp_path_factory) -> Path:
    """A copy of the project's packages as installed (the folder that holds ``workflows``)."""
    installed = Path(workflows.__file__).resolve().parents[1]
    copy = tmp_path_factory.mktemp("code")
    for package in PROJECT_PACKAGES:
        shutil.copytree(installed / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def fingerprints(code: Path, workdir: Path) -> dict[str, str]:
    """Every stage's fingerprint, computed by ``code`` in a fresh process, from an empty folder."""
    config = workdir.parent / f"{workdir.name}.cfg"
    config.write_text(f"[paranmt]\nworkdir = {workdir}\n")
    env = {**os.environ, "PYTHONPATH": str(code), "LUIGI_CONFIG_PATH": str(config)}
    done = subprocess.run([sys.executable, "-c", FINGERPRINTS], cwd=workdir.parent, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def edited(code: Path, tmp_path: Path, name: str, edit) -> Path:
    """A copy of ``code`` with ``edit(path, text) -> text`` applied to every module."""
    copy = tmp_path / name
    shutil.copytree(code, copy)
    for path in copy.rglob("*.py"):
        path.write_text(edit(path.relative_to(copy), path.read_text(encoding="utf-8")), encoding="utf-8")
    return copy


def test_only_the_stages_that_run_changed_code_get_a_new_identity(installed_code, tmp_path):
    workdir = tmp_path / "work"
    before = fingerprints(installed_code, workdir)
    assert list(before) == [*UPSTREAM_OF_SCORING, *SCORING_AND_AFTER]

    def comment_and_docstrings(_, text: str) -> str:
        text = re.sub(r'^"""', '"""Edited. ', text, count=1) if text.startswith('"""') else text
        return "# a comment on every module\n" + re.sub(r'(\n    def [^\n]*:\n        """)', r"\1Edited. ", text)

    unchanged = fingerprints(edited(installed_code, tmp_path, "comments", comment_and_docstrings), workdir)
    assert unchanged == before

    def scoring(path: Path, text: str) -> str:
        return text.replace("F1_WEIGHT = 1e-9", "F1_WEIGHT = 2e-9") if path == Path("corpus/scoring.py") else text

    rescored = fingerprints(edited(installed_code, tmp_path, "scoring", scoring), workdir)
    assert [stage for stage in before if rescored[stage] != before[stage]] == SCORING_AND_AFTER

    def corpus_schema(path: Path, text: str) -> str:
        return re.sub(r'_schema\("corpus", (\d+)', lambda found: f'_schema("corpus", {int(found[1]) + 1}', text) \
            if path == Path("schemas/__init__.py") else text

    bumped = fingerprints(edited(installed_code, tmp_path, "schema", corpus_schema), workdir)
    assert [stage for stage in before if bumped[stage] != before[stage]] == SCORING_AND_AFTER[1:]


def test_a_definition_is_known_by_its_syntax_tree_not_its_layout():
    import ast

    plain = ast.parse("def f(x):\n    return x + 1\n").body
    laid_out = ast.parse('def f(x):  # adds one\n    """One more."""\n\n    return (x\n            + 1)\n').body
    from workflows.code_identity import _WithoutDocstrings

    assert meaning_digest([_WithoutDocstrings().visit(node) for node in laid_out]) == meaning_digest(plain)
    assert meaning_digest(ast.parse("def f(x):\n    return x + 2\n").body) != meaning_digest(plain)


def test_a_stage_reaches_the_code_and_libraries_it_runs_and_not_another_stages():
    from workflows.base import StageTask

    def another_stage(found):
        return isinstance(found, type) and issubclass(found, StageTask) and found.__name__ != "ScorePairs"

    scoring = code_identity("workflows.corpus", "ScorePairs", another_stage)
    assert {"corpus.scoring.score_texts", "pipelines.score.score_pairs", "schemas.SCORED"} <= scoring.definitions.keys()
    assert not any(name.startswith(("workflows.nmt.TrainTranslator", "workflows.base.", "models.nmt.fairseq_train")) for name in scoring.definitions)
    assert "schemas.CORPUS" not in scoring.definitions and "torch" in scoring.libraries
    assert not {"luigi", "apache-beam", "pyarrow"} & scoring.libraries.keys()
    translator = code_identity("workflows.nmt", "TrainTranslator", another_stage)
    assert "models.nmt.fairseq_train.PRESETS" in translator.definitions
    assert not any(name.startswith("schemas.") for name in translator.definitions)
    assert {"fairseq-fixed", "torch", "sentencepiece"} <= translator.libraries.keys()
