"""Run benchmarks by name: ``python -m benchmarks ingest [args]``; ``--list`` names them."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name not in {"common", "__main__"})


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
