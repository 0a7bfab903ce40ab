"""Run benchmarks by name: ``python -m benchmarks ingest [args]``; ``--list`` names them."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks

# Modules of the package that are not benchmarks: what they share, the GPU run's report, this runner.
HELPERS = {"common", "gpu_report", "__main__"}


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name not in HELPERS)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in {"--list", "-h", "--help"}:
        print("usage: python -m benchmarks NAME [ARGS]   (python -m benchmarks NAME --help)")
        print("benchmarks:", ", ".join(available()))
        return
    name, args = sys.argv[1], sys.argv[2:]
    if name not in available():
        sys.exit(f"unknown benchmark {name!r}; choose from {', '.join(available())}")
    sys.argv = [f"benchmarks.{name}", *args]
    importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main()
