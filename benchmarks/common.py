"""What every benchmark shares: a Markdown table, the machine line, child-process peak memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys


def machine() -> str:
    try:
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    except ImportError:
        gpu = "no GPU"
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {gpu}, Python {platform.python_version()}"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def measure_in_subprocess(module: str, *args: str) -> dict:
    """Run ``python -m module args`` in a fresh process and parse the JSON line it prints last.

    A fresh process per measurement keeps peak memory honest: each reports ``peak_rss_mib()``.
    """
    done = subprocess.run([sys.executable, "-m", module, *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_rss_mib() -> float:
    """Largest resident set of this process or any child it waited for (ru_maxrss), in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024
