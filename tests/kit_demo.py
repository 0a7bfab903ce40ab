"""The README's main command as a user of the offline kit runs it: the kit for this machine's
Python built from this checkout, installed by its install.sh with the network refused beside a
'target' interpreter that has only the GPU machine's packages of the issue (torch, numpy, …),
then BuildParaNMT from an empty folder. Built once per test session (``kit_demo`` in conftest):
tests/test_kit.py checks the install and the build, tests/workflows/test_console.py what the
build printed and what later commands do with its work directory."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from test_installed_wheel import network_guard, offline, run_luigi_offline

from kit.cli import main

# The GPU machine's list in the issue (what a kit leaves out is also what the test downloads less).
HAVE = ["torch", "numpy", "pandas", "pyarrow", "scipy", "scikit-learn", "matplotlib", "grpcio", "protobuf", "lxml", "pyyaml", "regex",
        "requests", "sacrebleu", "tqdm", "cython"]


@dataclass
class KitDemo:
    kit: Path  # the kit's folder
    built: int  # paranmt-kit's exit status
    installed: subprocess.CompletedProcess  # install.sh
    network_tried: list[str]  # hosts the install tried to reach
    python: Path  # the installed venv's interpreter
    folder: Path  # the empty folder the demo ran in
    demo: subprocess.CompletedProcess  # BuildParaNMT
    demo_network_tried: list[str]  # hosts the demo build tried to reach


def link_installed(names, site):
    """`site` holds these installed distributions and what they need (symlinks into this
    environment): the packages the target machine already has."""
    todo, seen = list(names), set()
    while todo:
        distribution = importlib.metadata.distribution(todo.pop())
        if (name := canonicalize_name(distribution.metadata["Name"])) in seen:
            continue
        seen.add(name)
        todo += [requirement.name for requirement in map(Requirement, distribution.requires or [])
                 if requirement.marker is None or requirement.marker.evaluate({"extra": ""})]
        for top in {Path(file).parts[0] for file in distribution.files} - {"..", "__pycache__"}:
            if not (site / top).exists() and Path(distribution.locate_file(top)).exists():
                (site / top).symlink_to(distribution.locate_file(top))


def target_python(root: Path) -> Path:
    """A Python with only HAVE (and their dependencies) installed, and pip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    site = Path(subprocess.run([str(root / "venv" / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    link_installed([*HAVE, "pip"], site)
    return root / "venv" / "bin" / "python"


def kit_demo(root: Path) -> KitDemo:
    """Build the kit, install it offline, run the README's main command from an empty folder."""
    target = target_python(root / "target")
    kit, folder = root / "kit", root / "run"
    built = main(["--have", ",".join(HAVE), "--build-with", sys.executable, "--out", str(kit)])
    guard = network_guard(root / "guard")
    folder.mkdir()
    environment, network_log = offline(folder, [guard])
    installed = subprocess.run(["bash", str(kit / "install.sh"), "--venv", str(root / "venv")], cwd=folder, capture_output=True, text=True,
                               env={**environment, "PYTHON": str(target)}, timeout=600)
    network_tried = network_log.read_text().split() if network_log.exists() else []
    python = root / "venv" / "bin" / "python"
    demo, demo_network_tried = run_luigi_offline(python, [guard], folder, "BuildParaNMT")
    return KitDemo(kit, built, installed, network_tried, python, folder, demo, demo_network_tried)
