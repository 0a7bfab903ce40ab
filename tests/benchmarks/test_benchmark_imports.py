"""Every name a benchmark imports from the project exists: a benchmark imports inside its
functions (``--list`` stays quick), so a renamed function is found only when that benchmark runs."""

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PACKAGES = {"benchmarks", "corpus", "kit", "models", "pipelines", "reports", "schemas", "workflows"}


def project_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each ``from <project module> import name`` in the file."""
    return [(node.lineno, node.module, alias.name) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES for alias in node.names]


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda path: path.name)
def test_every_name_a_benchmark_imports_exists(path):
    missing = []
    for line, module, name in project_imports(path):
        if not hasattr(importlib.import_module(module), name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ModuleNotFoundError:
                missing.append(f"{path.name}:{line}: {module}.{name}")
    assert not missing


def test_a_measurement_that_fails_says_its_last_line_not_a_traceback_of_the_benchmark():
    """A stage row given a relative model folder failed in its temporary folder, and the benchmark
    printed only CalledProcessError with the child's output swallowed."""
    from benchmarks.common import measure_in_subprocess

    with pytest.raises(SystemExit, match=r"^python -m json.tool /no/such/file failed \(exit 2\): .*No such file"):
        measure_in_subprocess("json.tool", "/no/such/file")
