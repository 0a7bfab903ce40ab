"""Every library the project uses imports as installed: each distribution that paranmt requires
(with the extras installed here) and that they require in turn, every top-level module of it,
and fairseq's compiled modules, imported in one fresh process. A library whose compiled part does
not load beside this torch (torchaudio 2.11 beside torch 2.13 made `from transformers import
MarianMTModel` fail) fails here."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import subprocess
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# fairseq's compiled modules, which its top-level import does not load: two link to torch, and a
# wheel built against another torch (pip's cache keeps one across torch upgrades) fails there.
COMPILED = ["fairseq.libbleu", "fairseq.libbase", "fairseq.libnat", "fairseq.data.data_utils_fast", "fairseq.data.token_block_utils_fast"]
# Top-level modules that a distribution ships but that need a package nobody here requires.
NOT_FOR_IMPORT = {"adbc_driver_duckdb": "duckdb's ADBC driver: needs adbc-driver-manager, which nothing here requires"}
IMPORT_ALL = """
import importlib, json, sys
failed = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except Exception as error:
        failed[module] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
print(json.dumps(failed))
"""


def installed_closure() -> set[str]:
    """paranmt's requirements with the extras whose distributions are installed, and theirs."""
    root = metadata.distribution("paranmt")
    extras = set(root.metadata.get_all("Provides-Extra") or [])
    todo = [(Requirement(line), extras, True) for line in root.requires or []]
    seen = set()
    while todo:
        requirement, wanted, required = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": extra}) for extra in wanted | {""}):
            continue
        name = canonicalize_name(requirement.name)
        if name == "paranmt" or name in seen:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            assert not required or requirement.marker, f"{name} is required and not installed"
            continue  # an extra that is not installed here (gpu)
        seen.add(name)
        todo += [(Requirement(line), set(requirement.extras), True) for line in distribution.requires or []]
    return seen


def test_every_library_the_project_uses_imports_as_installed():
    closure = installed_closure()
    assert {"apache-beam", "luigi", "fairseq-fixed", "torchaudio", "transformers", "sentence-transformers", "pyarrow"} <= closure
    modules = sorted({module for module, names in metadata.packages_distributions().items()
                      if module.isidentifier() and not module.startswith("_") and module not in NOT_FOR_IMPORT
                      and any(canonicalize_name(name) in closure for name in names)})
    # torch first: fairseq's compiled modules find torch's libraries once it is loaded, as in use.
    modules = ["torch", *(module for module in modules if module != "torch"), *COMPILED]
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, json.dumps(modules)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
    assert {"transformers", "torchaudio", "sentence_transformers", "fairseq", "apache_beam"} <= set(modules)
