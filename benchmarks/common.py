"""What every benchmark shares: a Markdown table, the machine line, child-process peak memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# Real data (read-only): $PARANMT_SHARED_DATA or ../shared/data beside the repository.
SHARED = Path(os.environ.get("PARANMT_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
STS = SHARED / "sts"
GLOVE = SHARED / "wordvec" / "glove50_4k.txt"
COUNTS = SHARED / "wordvec" / "enwiki_vocab_min200.txt"
BUILD_REFPAIRS = SHARED.parent / "tools" / "build_refpairs.py"
REPO = Path(__file__).resolve().parents[1]


def write_reference_pairs(path: Path, limit: int = 0, captions: bool = True) -> int:
    """The 250k real English paraphrase pairs of ../shared/tools/build_refpairs.py as a TSV at
    ``path`` (sentence, sentence, source, is_caption), without the Flickr30k/COCO caption pairs
    unless ``captions``, a seeded sample of ``limit`` (file order kept) when given: the file is
    grouped by source, so its first lines would be one source only; returns the number of pairs."""
    subprocess.run([sys.executable, str(BUILD_REFPAIRS), str(path)], check=True, capture_output=True)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if not captions:
        lines = [line for line in lines if line.rstrip("\n").rsplit("\t", 1)[1] == "0"]
    if limit and limit < len(lines):
        keep = np.sort(np.random.default_rng(0).choice(len(lines), size=limit, replace=False))
        lines = [lines[i] for i in keep]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def machine() -> str:
    try:
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    except ImportError:
        gpu = "no GPU"
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {gpu}, Python {platform.python_version()}"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """corpus.tables.markdown_table with numbers to 3 significant digits (thousands grouped)."""
    from corpus.tables import markdown_table as table

    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    return table(headers, [[cell(v) for v in row] for row in rows]).rstrip("\n")


def measure_in_subprocess(module: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``python -m module args`` in a fresh process (``env``: variables to set in it) and
    parse the JSON line it prints last.

    A fresh process per measurement keeps peak memory honest: each reports ``peak_rss_mib()``.
    """
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if done.returncode:  # what the measurement said, not a traceback of this process's
        said = (done.stderr.strip() or done.stdout.strip() or "nothing").splitlines()[-1]
        raise SystemExit(f"python -m {module} {' '.join(args[:2])} failed (exit {done.returncode}): {said}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_rss_mib() -> float:
    """Largest resident set of this process or any child it waited for (ru_maxrss), in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def peak_gpu_mib() -> float | None:
    """Most GPU memory torch allocated in this process (MiB), None where it used no GPU."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    return torch.cuda.max_memory_allocated() / 2**20


def semeval_sentences(path: Path) -> list[str]:
    """Both sentences of every line of a SemEval ``STS.input.*.txt`` file."""
    return [s for line in path.read_text(encoding="utf-8").split("\n") if line for s in line.split("\t")[:2]]


def sif_glove4k():
    """The untrained-vectors baseline: SIF on GloVe-4k with enwiki counts, its component fitted
    on the STS 2012 train sentences (never on test pairs)."""
    from corpus.wordvec import load_vectors, load_word_counts
    from models.sif import SIFEmbedder

    reference = [s for path in sorted((STS / "STS2012-train").glob("STS.input.*.txt")) for s in semeval_sentences(path)]
    return SIFEmbedder(*load_vectors(GLOVE), load_word_counts(COUNTS)).fit(reference)


def luigid_answers(port: int) -> bool:
    """Whether a luigid on 127.0.0.1:``port`` serves its visualiser page."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/visualiser/index.html", timeout=5) as page:
            return page.status == 200
    except OSError:
        return False


@contextmanager
def local_luigid(folder: Path, start_seconds: float = 60) -> Iterator[int]:
    """``luigid`` in the background on a free port of 127.0.0.1 (yielded), its pid file, logs,
    state and task history (SQLite, ``folder/history.db``) in ``folder``; stopped by its process id."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "luigid.cfg").write_text(
        f"[scheduler]\nrecord_task_history = true\n[task_history]\ndb_connection = sqlite:///{folder / 'history.db'}\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pidfile = folder / "luigid.pid"
    subprocess.run([str(Path(sys.executable).with_name("luigid")), "--background", "--address", "127.0.0.1", "--port", str(port),
                    "--pidfile", str(pidfile), "--logdir", str(folder / "log"), "--state-path", str(folder / "state.pickle")],
                   cwd=folder, env={**os.environ, "LUIGI_CONFIG_PATH": str(folder / "luigid.cfg")}, check=True, timeout=start_seconds)
    deadline = time.monotonic() + start_seconds
    while not luigid_answers(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"luigid did not answer in {start_seconds:.0f} s: {sorted(p.name for p in (folder / 'log').glob('*'))}")
        time.sleep(0.2)
    pid = int(pidfile.read_text())
    try:
        yield port
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


@contextmanager
def local_dask_cluster(folder: Path, workers: int, env: dict[str, str] | None = None, start_seconds: float = 120,
                       resources: dict[int, str] | None = None) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A ``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on 127.0.0.1,
    each started in an empty folder of its own under ``folder`` with the repository on PYTHONPATH,
    as a worker machine imports the package (``env``: variables to set in them; ``resources``:
    the ``--resources`` of worker N, e.g. ``{1: "GPU=1"}``); yields the scheduler's address and
    the processes (their logs are ``folder/<name>.log``), and stops them by their PIDs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **(env or {})}
    scheduler_file = folder / "scheduler.json"
    commands = {"scheduler": ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)]}
    for number in range(workers):
        commands[f"worker-{number}"] = ["worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1", "--nthreads", "1",
                                        "--name", f"worker-{number}", "--no-dashboard"]
        if (resources or {}).get(number):
            commands[f"worker-{number}"] += ["--resources", resources[number]]
    processes: list[subprocess.Popen] = []
    try:
        for name, arguments in commands.items():
            (folder / name).mkdir()
            with open(folder / f"{name}.log", "w") as log:
                processes.append(subprocess.Popen([sys.executable, "-m", "dask", *arguments], cwd=folder / name, env=env,
                                                  stdout=log, stderr=subprocess.STDOUT))
        from distributed import Client

        deadline = time.monotonic() + start_seconds
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        with Client(scheduler_file=str(scheduler_file), timeout=start_seconds) as client:
            client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
            address = client.scheduler.address
        yield address, processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
