"""The code a stage runs, known by its meaning: what a stage's identity holds of the code.

A stage's class is followed, name by name, through everything it reaches in the project's own
modules: each function, class or top-level assignment it names, and what those name in turn,
each known by its syntax tree without docstrings (a comment, a docstring or the formatting
changes nothing; a changed line of scoring changes the stages that run scoring), down to the
third-party libraries it calls, known by their installed versions. Not followed: another stage's
class (the stage that reads another's output holds that output's identity already), the stage
framework (FRAMEWORK_MODULES: it writes, locks, schedules and reports outputs and makes no row of
them) and the libraries that move rows without making them (ROW_NEUTRAL_LIBRARIES).

Names are resolved statically, by each module's own imports and top-level definitions, so a
module is read (parsed, never run) only when a stage reaches it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import packages_distributions, version
from pathlib import Path

from corpus.cache import cache_root, store

# The project's top-level packages (pyproject.toml's packages): their code is followed.
PROJECT_PACKAGES = frozenset({"corpus", "schemas", "models", "reports", "pipelines", "workflows", "kit", "fetch"})
# The stage framework and the runners: how an output is written, locked, scheduled, logged and
# distributed over workers, never what is in it (every stage makes the same rows on any runner,
# with any number of workers: tested).
FRAMEWORK_MODULES = frozenset({
    "workflows.base", "workflows.central_scheduler", "workflows.console", "workflows.console_errors", "workflows.fingerprints",
    "workflows.code_identity", "workflows.plan", "workflows.previous_release", "pipelines.options", "pipelines.progress",
    "pipelines.worker_hangs", "pipelines.dask_runner",
})
# Libraries that orchestrate, move or store rows and make none: an upgrade of Luigi, Beam, Dask or
# pyarrow rebuilds nothing (pyarrow's version is in each Parquet file's footer, not in its rows).
ROW_NEUTRAL_LIBRARIES = frozenset({"luigi", "apache_beam", "dask", "distributed", "pyarrow", "tqdm", "psutil", "typing_extensions"})


@dataclass(frozen=True)
class CodeIdentity:
    """What a stage runs: each project definition it reaches (``module.name``) with the digest of its
    syntax tree, and each output-shaping library it calls with its installed version."""

    definitions: dict[str, str] = field(default_factory=dict)
    libraries: dict[str, str] = field(default_factory=dict)

    def as_record(self) -> dict[str, dict[str, str]]:
        return {"definitions": dict(sorted(self.definitions.items())), "libraries": dict(sorted(self.libraries.items()))}


@dataclass
class _Module:
    """A module's top-level definitions (name → the digest of its statements, the dotted names they
    read and the imports made inside them) and imports (alias → module, name): what a stage's
    identity needs of it, kept per machine (_summary)."""

    definitions: dict[str, tuple[str, list[list[str]], dict[str, tuple[str, str | None]]]]
    imports: dict[str, tuple[str, str | None]]


def is_project_module(name: str) -> bool:
    return name.partition(".")[0] in PROJECT_PACKAGES


@functools.cache
def _module_file(name: str) -> Path | None:
    """A module's source file; a project module's found without importing anything (a parent
    package's import would run it, and load torch for a name that only needs reading)."""
    top, _, rest = name.partition(".")
    spec = importlib.util.find_spec(top if is_project_module(name) else name)  # a user's own stage module: where it is
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    if not spec.submodule_search_locations or not is_project_module(name):
        return Path(spec.origin)
    path = Path(spec.submodule_search_locations[0]).joinpath(*rest.split(".")) if rest else Path(spec.submodule_search_locations[0])
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


# The layout of the summaries kept in the per-machine cache (change it with _Module's).
SUMMARY_FORMAT = 1


@functools.cache
def _summary(module: str) -> _Module:
    """``module``'s summary, from the per-machine cache (``$PARANMT_CACHE/code``) when its source's
    bytes were summarised by this Python before: every process that fingerprints a stage needs
    a hundred modules' summaries, and parsing them took most of a second."""
    source = _module_file(module)
    if source is None:  # no source to read (a class made in ``__main__`` or a compiled module): known by nothing of its code
        return _Module({}, {})
    text = source.read_bytes()
    key = hashlib.sha256(f"{SUMMARY_FORMAT}\t{sys.version}\t{module}\n".encode() + text).hexdigest()[:32]
    kept = cache_root() / "code" / f"{module}-{key}.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        found = json.loads(kept.read_text(encoding="utf-8"))
        return _Module(found["definitions"], found["imports"])
    summary = _summarised(module, source.name == "__init__.py", text.decode("utf-8"))
    store(kept, lambda handle: handle.write(json.dumps({"definitions": summary.definitions, "imports": summary.imports}).encode()))
    return summary


def _summarised(module: str, is_package: bool, text: str) -> _Module:
    tree = _WithoutDocstrings().visit(ast.parse(text))
    statements: dict[str, list[ast.stmt]] = {}
    imports: dict[str, tuple[str, str | None]] = {}
    package = module if is_package else module.rpartition(".")[0]
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.Import | ast.ImportFrom):
            imports.update(_aliases(statement, package))
        for name in _defined_names(statement):
            statements.setdefault(name, []).append(statement)
    return _Module({name: (meaning_digest(found), *_references(found)) for name, found in statements.items()}, imports)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's statements, those under a top-level ``if``/``try``/``with`` included."""
    found = []
    for statement in body:
        if isinstance(statement, ast.If | ast.Try | ast.With):
            blocks = [statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", []),
                      *([handler.body for handler in statement.handlers] if isinstance(statement, ast.Try) else [])]
            found += [inner for block in blocks for inner in _top_level(block)]
        else:
            found.append(statement)
    return found


def _aliases(statement: ast.Import | ast.ImportFrom, package: str) -> dict[str, tuple[str, str | None]]:
    if isinstance(statement, ast.Import):
        return {(alias.asname or alias.name.partition(".")[0]): ((alias.name if alias.asname else alias.name.partition(".")[0]), None)
                for alias in statement.names}
    source = statement.module or ""
    if statement.level:  # a relative import, from this package up
        base = package.rsplit(".", statement.level - 1)[0] if statement.level > 1 else package
        source = f"{base}.{source}" if source else base
    return {(alias.asname or alias.name): (source, alias.name) for alias in statement.names if alias.name != "*"}


def _defined_names(statement: ast.stmt) -> list[str]:
    """The top-level names a statement defines or changes (``X = …``, ``X[k] = …``, ``X.update(…)``)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    targets = (statement.targets if isinstance(statement, ast.Assign) else [statement.target]
               if isinstance(statement, ast.AnnAssign | ast.AugAssign) else [statement.value.func]
               if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) else [])
    names = []
    for target in targets:
        for node in ast.walk(target):
            while isinstance(node, ast.Attribute | ast.Subscript):
                node = node.value
            if isinstance(node, ast.Name):
                names.append(node.id)
            if not isinstance(target, ast.Tuple | ast.List):
                break
    return names


class _WithoutDocstrings(ast.NodeTransformer):
    def generic_visit(self, node):
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
        return node


def meaning_digest(statements: list[ast.stmt]) -> str:
    """The digest of statements' syntax trees (as _summarised parses them: without docstrings), without
    their positions: a comment or the layout changes nothing."""
    return hashlib.sha256("\n".join(ast.dump(node, include_attributes=False) for node in statements).encode()).hexdigest()[:16]


def _references(statements: list[ast.stmt]) -> tuple[list[list[str]], dict[str, tuple[str, str | None]]]:
    """Each dotted name the statements read (``a``, ``a.b.c`` as ['a', 'b', 'c']), and the imports
    made inside them (a function's own ``import``)."""
    local_imports: dict[str, tuple[str, str | None]] = {}
    chains: list[list[str]] = []
    inside_a_chain: set[int] = set()  # ``a`` and ``a.b`` of ``a.b.c``: read as part of it, not on their own
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Import | ast.ImportFrom):
                local_imports.update(_aliases(node, ""))
            elif isinstance(node, ast.Attribute | ast.Name) and id(node) not in inside_a_chain and not isinstance(node.ctx, ast.Store):
                chain, inner = [], node
                while isinstance(inner, ast.Attribute):
                    chain.insert(0, inner.attr)
                    inner = inner.value
                    inside_a_chain.add(id(inner))
                if isinstance(inner, ast.Name):
                    chains.append([inner.id, *chain])
    return chains, local_imports


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


@functools.cache
def library_version(module: str) -> tuple[str, str] | None:
    """(distribution, version) of a third-party module's installed package; None for the standard
    library, the project, and the row-neutral libraries."""
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top in PROJECT_PACKAGES or top in ROW_NEUTRAL_LIBRARIES or not top:
        return None
    distributions = _distributions().get(top)
    if not distributions:
        return None
    return distributions[0], version(distributions[0])


@dataclass(frozen=True)
class _Definition:
    """One project definition: its digest (None: a name ``module`` imports from elsewhere), the
    definitions it names and the libraries it calls."""

    digest: str | None
    reaches: tuple[tuple[str, str], ...]
    libraries: tuple[tuple[str, str], ...]


@functools.cache
def _definition(where: str, what: str) -> _Definition:
    parsed = _summary(where)
    reaches: list[tuple[str, str]] = []
    libraries: set[tuple[str, str]] = set()
    if what not in parsed.definitions:  # re-exported: ``from a import b`` in ``where``
        if what in parsed.imports:
            reaches += _resolve([what], parsed.imports, libraries)
        return _Definition(None, tuple(reaches), tuple(sorted(libraries)))
    digest, chains, local_imports = parsed.definitions[what]
    for chain in chains:
        if chain[0] in local_imports:
            reaches += _resolve(chain, local_imports, libraries)
        elif chain[0] in parsed.definitions:
            reaches.append((where, chain[0]))
        elif chain[0] in parsed.imports:
            reaches += _resolve(chain, parsed.imports, libraries)
        # else a builtin, or a local name (a parameter, a variable)
    return _Definition(digest, tuple(dict.fromkeys(reaches)), tuple(sorted(libraries)))


def code_identity(module: str, name: str, stop: Callable[[object], bool] = lambda _: False) -> CodeIdentity:
    """The definitions and libraries that ``module.name`` reaches (``stop``: an object not to follow,
    checked on the live object of each project definition reached)."""
    identity = CodeIdentity()
    pending = [(module, name)]
    seen: set[tuple[str, str]] = set()
    while pending:
        where, what = pending.pop()
        if (where, what) in seen or where in FRAMEWORK_MODULES:
            continue
        seen.add((where, what))
        definition = _definition(where, what)
        if definition.digest is not None:
            if (where, what) != (module, name) and stop(getattr(sys.modules.get(where), what, None)):
                continue
            identity.definitions[f"{where}.{what}"] = definition.digest
        identity.libraries.update(definition.libraries)
        pending.extend(definition.reaches)
    return identity


def _resolve(chain: list[str], imports: dict[str, tuple[str, str | None]], libraries: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The project definitions a dotted name reaches through an import (a library it reaches is
    added to ``libraries``)."""
    source, imported = imports[chain[0]]
    if not is_project_module(source):
        _add_library(source, libraries)
        return []
    if imported is None:
        module = source
    elif _module_file(f"{source}.{imported}"):
        module = f"{source}.{imported}"
    else:  # ``from module import name``
        return [(source, imported)]
    rest = chain[1:]
    while rest and is_project_module(module) and _module_file(f"{module}.{rest[0]}"):
        module, rest = f"{module}.{rest[0]}", rest[1:]
    if not is_project_module(module):
        _add_library(module, libraries)
        return []
    if rest:
        return [(module, rest[0])]
    return [(module, defined) for defined in _summary(module).definitions]  # a module used whole


def _add_library(module: str, libraries: set[tuple[str, str]]) -> None:
    if found := library_version(module):
        libraries.add(found)
