"""Size benchmark: N distinct pairs of real English text through the real Luigi commands, per stage.

The pairs are the 250k real paraphrase pairs of ../shared/tools/build_refpairs.py, each round of
them in its own seeded order and, after the first round, numbered (`` (k)`` after both sides), so
that every line is distinct; generated once per (format, N) into ``--data``:

* ``release``: one plain file ``reference<TAB>translation<TAB>score`` (the release is one file),
  through ``ImportParaphrases``, ``ScorePairs`` and ``BuildParaNMT --pairs`` (its deciles), the PP
  model given as word vectors (``--pp-vectors``, ../shared/data/wordvec/glove50_4k.txt), as a
  user of the release gives the authors' (training one on the top half is TrainPPModel's work);
* ``czeng``: CzEng 1.6 plaintext in gzip files of at most ``--file-lines`` lines (CzEng is 100
  files), through ``IngestBitext``.

With ``--train`` (release format), one more command: ``TrainOnFiltered --decile 9 --epochs 1`` on
the corpus just built, to the STS tasks (../shared/data/sts): the selection and the encoder's
training (stage ``encoders``; its row's pairs/s are the training set's pairs per second of it).

Each stage runs as its own ``luigi`` command in a fresh folder; the table gives the stage's time
(its manifest's), the command's wall time, the peak memory of the command's whole process tree
(Luigi, the Beam runner and its workers; sampled every ``--every`` seconds) and the work
directory's size. ``--baseline REF`` runs the same commands with the code of git revision REF
(exported with ``git archive``, first on ``PYTHONPATH``) at the sizes of ``--baseline-sizes``, in
the same run.

``--dask-workers N`` runs each size a second time on a local dask.distributed cluster of N
one-thread worker processes (started for the size, stopped by PID) and prints a second table: each
stage's seconds on both runners, Dask's speed as a share of the DirectRunner's, each worker's peak
memory, and where the Dask time went, from the scheduler's task stream (when the first task
started and the last ended, each worker's seconds computing as a share of that span, the seconds
spent receiving data, the longest task); then whether the two corpora are equal.
``--luigi-workers N`` sends every command through a ``luigid`` started on 127.0.0.1 for the run,
with N Luigi workers.

    python -m benchmarks size --format release --sizes 1000000,4000000 --baseline HEAD~5 --baseline-sizes 1000000
    python -m benchmarks size --format release --sizes 1000000,4000000 --dask-workers 2 --direct-workers 2 --luigi-workers 2
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import itertools
import json
import os
import random
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.common import (
    GLOVE,
    REPO,
    SHARED,
    STS,
    local_dask_cluster,
    local_luigid,
    machine,
    markdown_table,
    write_reference_pairs,
)

STAGES = {
    "release": [("import", ["ImportParaphrases", "--files", "{input}"]),
                ("score", ["ScorePairs", "--pairs", "{input}", "--pp-vectors", "{vectors}"]),
                ("corpus", ["BuildParaNMT", "--pairs", "{input}", "--pp-vectors", "{vectors}"])],
    "czeng": [("ingest", ["IngestBitext", "--inputs", "{input}"])],
}
TRAIN_STAGE = ("encoders", ["TrainOnFiltered", "--decile", "9", "--pairs", "{input}", "--pp-vectors", "{vectors}", "--epochs", "1",
                            "--sts-dir", "{sts}"])


def read_pairs(folder: Path) -> list[tuple[str, str, str]]:
    """(sentence, sentence, source) of the reference pairs, written once into ``folder``."""
    path = folder / "refpairs.tsv"
    if not path.exists():
        write_reference_pairs(path)
    with open(path, encoding="utf-8") as handle:
        return [tuple(line.rstrip("\n").split("\t")[:3]) for line in handle]


def distinct_pairs(pairs: list[tuple[str, str, str]], n: int):
    """``n`` (index, sentence, sentence, source): round k of the pairs in the order of seed k,
    sentences numbered `` (k)`` from round 1 on, so no line repeats."""
    index = 0
    for k in range((n + len(pairs) - 1) // len(pairs)):
        order = list(range(len(pairs)))
        random.Random(k).shuffle(order)
        suffix = f" ({k})" if k else ""
        for j in order[: n - index]:
            first, second, source = pairs[j]
            yield index, first + suffix, second + suffix, source
            index += 1


def generate(kind: str, n: int, folder: Path, file_lines: int) -> str:
    """The input of ``n`` pairs in format ``kind`` (made once), as the ``{input}`` of its commands."""
    target = folder / f"{kind}-{n}"
    done = target / "_DONE"
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        pairs = read_pairs(folder)
        rng = random.Random(n)
        if kind == "release":
            with open(target / "para-nmt.txt", "w", encoding="utf-8") as out:
                for _, reference, translation, _ in distinct_pairs(pairs, n):
                    out.write(f"{reference}\t{translation}\t{rng.random():.4f}\n")
        else:
            generated = distinct_pairs(pairs, n)
            for number in range(-(-n // file_lines)):
                with gzip.open(target / f"{number:03d}train.gz", "wt", encoding="utf-8", compresslevel=1) as handle:
                    for index, english, other, source in itertools.islice(generated, file_lines):
                        pair_id = f"{source.replace('-', '')}-b{index // 100_000}-{number:02d}train-f{index // 100:06d}-s{index % 100}"
                        handle.write(f"{pair_id}\t{rng.random():.4f}\t{other}\t{english}\n")
        done.write_text("")
    return str(target / "para-nmt.txt") if kind == "release" else str(target / "*train.gz")


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants (bytes)."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # ended between the listing and the reading
            total += member.memory_info().rss
    return total


def run_sampled(command: list[str], cwd: Path, env: dict[str, str], every: float,
                workers: list[subprocess.Popen] = ()) -> tuple[float, int, list[int], int]:
    """(wall seconds, peak tree memory of the command, peak tree memory of each of ``workers``
    (a cluster's worker processes, started before), in bytes, exit code) of a command."""
    started = time.time()
    with open(cwd / "console.log", "ab") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        watched = [psutil.Process(process.pid), *(psutil.Process(worker.pid) for worker in workers)]
        peaks, stop = [0] * len(watched), threading.Event()

        def sample() -> None:
            while not stop.wait(every):
                for index, member in enumerate(watched):
                    peaks[index] = max(peaks[index], tree_rss(member))

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        code = process.wait()
        stop.set()
        thread.join()
    return time.time() - started, peaks[0], peaks[1:], code


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def trained_pairs(work: Path) -> int:
    """The pairs the last encoder trained on (its training.json)."""
    return json.loads((work / "encoders" / "latest" / "training.json").read_text())["pairs"]


def stage_seconds(work: Path, stage: str) -> float | None:
    manifest = work / stage / "latest" / "_SUCCESS"
    return json.loads(manifest.read_text())["seconds"] if manifest.exists() else None


def export(ref: str, folder: Path) -> Path:
    """The code of git revision ``ref``, exported into ``folder``."""
    target = folder / f"code-{ref.replace('/', '_')}"
    if not target.exists():
        target.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


@dataclass
class Measured:
    """One (format, size, code, runner) run: its table rows, its work directory, each stage's
    seconds and, on Dask, each worker's peak memory (bytes) and where the stage's time went."""

    rows: list[list]
    work: Path
    seconds: dict[str, float] = field(default_factory=dict)
    worker_peaks: dict[str, list[int]] = field(default_factory=dict)
    task_time: dict[str, TaskTime] = field(default_factory=dict)


@dataclass
class TaskTime:
    """Where a stage's time went on a Dask cluster, from the scheduler's task stream: the first
    task's start and the last one's end (seconds after the command started), each worker's
    seconds computing and receiving data, and the longest task."""

    first: float
    last: float
    computing: dict[str, float]
    transferring: dict[str, float]
    longest: tuple[str, float]

    @classmethod
    def of(cls, records: list[dict], started: float) -> TaskTime | None:
        from distributed.utils import key_split

        if not records:
            return None
        computing, transferring = collections.Counter(), collections.Counter()
        first, last, longest = float("inf"), 0.0, ("", 0.0)
        for record in records:
            worker = record["worker"]
            for step in record["startstops"]:
                seconds = step["stop"] - step["start"]
                if step["action"] == "compute":
                    computing[worker] += seconds
                    first, last = min(first, step["start"]), max(last, step["stop"])
                    longest = max(longest, (key_split(record["key"]), seconds), key=lambda named: named[1])
                elif step["action"] == "transfer":
                    transferring[worker] += seconds
        return cls(first - started, last - started, dict(computing), dict(transferring), longest)


@contextlib.contextmanager
def task_stream(address: str) -> Iterator[Callable[[], list[dict]]]:
    """The records of the tasks a Dask scheduler finishes from now on (a function that reads them):
    its task-stream plugin is started by the first request."""
    from distributed import Client

    with Client(address, timeout=60) as client:
        since = time.time()
        client.get_task_stream(start=since)
        yield lambda: client.get_task_stream(start=since)


def measure(kind: str, n: int, code: str, source: Path | None, data: Path, runs: Path, file_lines: int, every: float,
            dask_workers: int = 0, train: bool = False, direct_workers: int = 0, scheduler: tuple[str, ...] = ("--local-scheduler",)) -> Measured:
    """The table rows of one (format, size, code) run, on the DirectRunner or, with
    ``dask_workers``, on a local dask.distributed cluster of that many one-thread worker processes
    (started for the run; the peak memory of each worker is the largest of them, after a slash);
    the commands stop at the first failure. ``scheduler``: Luigi's scheduler options."""
    spec = generate(kind, n, data, file_lines)
    label = f"{code} on Dask ({dask_workers} workers)" if dask_workers else code
    folder = Path(tempfile.mkdtemp(prefix=f"{kind}-{n}-{code}{'-dask' if dask_workers else ''}-", dir=runs))
    env = {**os.environ, "PYTHONPATH": str(source) if source else os.environ.get("PYTHONPATH", "")}
    with local_dask_cluster(folder, dask_workers, {"PYTHONPATH": env["PYTHONPATH"] or str(REPO)}) if dask_workers else \
            contextlib.nullcontext(("", [])) as (address, cluster):
        runner = ["--paranmt-runner", "DaskRunner", "--paranmt-dask-scheduler", address] if dask_workers else \
            ["--paranmt-direct-num-workers", str(direct_workers)] if direct_workers else []
        measured, total = Measured([], folder / "work"), 0.0
        for stage, args in [*STAGES[kind], *([TRAIN_STAGE] if train else [])]:
            command = ["luigi", "--module", "workflows", *[arg.format(input=spec, vectors=GLOVE, sts=STS) for arg in args], *runner, *scheduler]
            with task_stream(address) if dask_workers else contextlib.nullcontext(list) as finished_tasks:
                started = time.time()
                wall, peak, worker_peaks, exit_code = run_sampled(command, folder, env, every, cluster[1:])  # [0]: the scheduler
                if dask_workers:
                    measured.task_time[stage] = TaskTime.of(finished_tasks(), started)
                    measured.worker_peaks[stage] = worker_peaks
            seconds = stage_seconds(folder / "work", stage)
            measured.seconds[stage] = seconds
            memory = f"{peak / 2**30:.2f}" + (f" / {max(worker_peaks) / 2**30:.2f}" if worker_peaks else "")
            if stage == TRAIN_STAGE[0]:
                rate = f"{trained_pairs(folder / 'work') / seconds:,.0f}" if seconds else ""
            else:
                total += seconds or wall
                rate = f"{n / total:,.0f}"
            measured.rows.append([label, kind, f"{n:,}", stage, f"{seconds:.0f}" if seconds is not None else f"failed ({exit_code})",
                                  f"{wall:.0f}", memory, f"{folder_bytes(folder / 'work') / 2**30:.2f}", rate])
            print(" | ".join(measured.rows[-1]), flush=True)
            if exit_code:
                break
    return measured


def runner_rows(n: int, direct: Measured, on_dask: Measured) -> list[list]:
    """The comparison table's rows of one size: each stage on both runners and where its time went on Dask."""
    rows = []
    for stage, dask_seconds in on_dask.seconds.items():
        direct_seconds, tasks = direct.seconds.get(stage), on_dask.task_time.get(stage)
        speed = f"{direct_seconds / dask_seconds:.2f}" if direct_seconds and dask_seconds else ""
        peaks = ", ".join(f"{peak / 2**30:.2f}" for peak in on_dask.worker_peaks.get(stage, []))
        if tasks:
            span = tasks.last - tasks.first
            busy = ", ".join(f"{seconds:.0f} ({seconds / span:.0%})" for seconds in tasks.computing.values()) if span else ""
            timing = [f"{tasks.first:.1f}", f"{tasks.last:.1f}", busy, f"{sum(tasks.transferring.values()):.1f}",
                      f"{tasks.longest[1]:.1f} ({tasks.longest[0]})"]
        else:
            timing = [""] * 5
        rows.append([f"{n:,}", stage, f"{direct_seconds:.0f}" if direct_seconds else "", f"{dask_seconds:.0f}" if dask_seconds else "",
                     speed, peaks, *timing])
    return rows


def same_corpus(first: Path, second: Path) -> str:
    """Whether two work directories' corpora hold the same rows ('equal', or what differs)."""
    import pandas as pd

    def corpus(work: Path) -> pd.DataFrame:
        frame = pd.read_parquet(work / "corpus" / "latest" / "corpus")
        return frame.assign(decile_pp=frame.decile_pp.astype(int)).sort_values("id").reset_index(drop=True)[sorted(frame.columns)]

    try:
        pd.testing.assert_frame_equal(corpus(first), corpus(second))
    except (AssertionError, OSError) as difference:
        return f"not equal: {str(difference).splitlines()[0]}"
    return "equal"


def read_tables(paths: list[Path]) -> list[dict]:
    """The measured rows of this benchmark's printed tables (``| code | format | pairs | …``)."""
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) == 9 and cells[2].replace(",", "").isdigit() and line.startswith("|"):
                rows.append({"code": cells[0], "stage": cells[3], "pairs": int(cells[2].replace(",", "")), "seconds": cells[4],
                             "peak": float(cells[6].split("/")[0]), "disk": float(cells[7])})
    return rows


def plot(rows: list[dict], out: Path, baseline: str) -> None:
    """Stage time and peak memory against the number of pairs (log scales), one line per (code,
    stage); the baseline's dashed."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 4.6), layout="constrained")
    seconds_axes, memory_axes = figure.subplots(1, 2)
    lines = sorted({(row["code"], row["stage"]) for row in rows})
    colors = colormaps["tab20"].colors  # one colour a line: more lines than the default cycle's ten
    for number, (code, stage) in enumerate(lines):
        mine = sorted((row for row in rows if (row["code"], row["stage"]) == (code, stage)), key=lambda row: row["pairs"])
        style = {"marker": "s" if code == baseline else "o", "linestyle": "--" if code == baseline else "-", "color": colors[number % len(colors)]}
        done = [row for row in mine if row["seconds"].replace(".", "").isdigit()]
        seconds_axes.plot([row["pairs"] for row in done], [float(row["seconds"]) for row in done], label=f"{stage} ({code})", **style)
        memory_axes.plot([row["pairs"] for row in mine], [row["peak"] for row in mine], label=f"{stage} ({code})", **style)
    for axes, label in ((seconds_axes, "stage time (s)"), (memory_axes, "peak memory of the process tree (GiB)")):
        axes.set_xscale("log")
        axes.set_xlabel("pairs")
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
    seconds_axes.set_yscale("log")
    memory_axes.set_ylim(bottom=0)
    memory_axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the plot, not over its lines
    figure.savefig(out, dpi=110)


def measure_size(args: argparse.Namespace, n: int, runs: Path, scheduler: tuple[str, ...]) -> tuple[list, list, list]:
    """One size's runs (this code on the DirectRunner, on Dask, the baseline): their rows, the
    corpora's comparison and the runners' comparison."""
    code = export(args.code, args.data) if args.code else None
    common = {"kind": args.format, "n": n, "data": args.data, "runs": runs, "file_lines": args.file_lines, "every": args.every,
              "scheduler": scheduler}
    direct = measure(code=args.code or "this", source=code, train=args.train, direct_workers=args.direct_workers, **common)
    rows, verdicts, compared = list(direct.rows), [], []
    if args.dask_workers:
        on_dask = measure(code=args.code or "this", source=code, dask_workers=args.dask_workers, **common)
        rows += on_dask.rows
        compared = runner_rows(n, direct, on_dask)
        if args.format == "release":
            verdicts.append(f"{n:,} pairs: the corpus on Dask and on the DirectRunner: {same_corpus(direct.work, on_dask.work)}")
    if n in {int(size) for size in args.baseline_sizes.split(",")} and args.baseline:
        rows += measure(code=args.baseline, source=export(args.baseline, args.data), train=args.train, direct_workers=args.direct_workers,
                        **common).rows
    return rows, verdicts, compared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", choices=sorted(STAGES), default="release")
    parser.add_argument("--sizes", default="250000,1000000", help="Comma-separated numbers of pairs.")
    parser.add_argument("--code", default="",
                        help="A git revision to measure instead of the working tree (long runs: edits made meanwhile do not reach them).")
    parser.add_argument("--baseline", default="", help="A git revision to measure beside this code (empty: none).")
    parser.add_argument("--baseline-sizes", default="250000", help="The sizes at which the baseline runs.")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "paranmt-size", help="Where generated inputs are kept.")
    parser.add_argument("--file-lines", type=int, default=500_000, help="Lines per gzip file of the czeng format.")
    parser.add_argument("--every", type=float, default=1.0, help="Seconds between memory samples.")
    parser.add_argument("--dask-workers", type=int, default=0, help="Also run each size on a local Dask cluster of this many worker processes, "
                        "and compare its corpus with the DirectRunner's (0: no Dask run).")
    parser.add_argument("--direct-workers", type=int, default=0, help="DirectRunner worker processes (0: the project's default, by input size; "
                        "2 measures a 1M input as a larger one runs).")
    parser.add_argument("--luigi-workers", type=int, default=0, help="Run every command through a luigid started on 127.0.0.1 for the run, "
                        "with this many Luigi workers (0: --local-scheduler).")
    parser.add_argument("--train", action="store_true",
                        help="Release format: then TrainOnFiltered --decile 9 --epochs 1 on the corpus (STS data needed).")
    parser.add_argument("--plot", type=Path, help="Draw time and memory against size from the tables of --tables into this PNG, and stop.")
    parser.add_argument("--tables", type=Path, nargs="*", default=[], help="Saved outputs of earlier runs of this benchmark.")
    args = parser.parse_args()
    if args.train and args.format != "release":
        parser.error("--train trains on a corpus: it needs --format release")
    if args.plot:
        plot(read_tables(args.tables), args.plot, args.baseline)
        return
    if not SHARED.exists():
        raise SystemExit(f"skipped: {SHARED} (the reference pairs' sources) is absent")
    args.data.mkdir(parents=True, exist_ok=True)
    runs = Path(tempfile.mkdtemp(prefix="runs-", dir=args.data))
    sizes = [int(size) for size in args.sizes.split(",")]
    rows, verdicts, compared = [], [], []
    with local_luigid(runs / "luigid") if args.luigi_workers else contextlib.nullcontext() as port:
        scheduler = (("--scheduler-host", "127.0.0.1", "--scheduler-port", str(port), "--workers", str(args.luigi_workers)) if port
                     else ("--local-scheduler",))
        for n in sizes:
            size_rows, size_verdicts, size_compared = measure_size(args, n, runs, scheduler)
            rows, verdicts, compared = rows + size_rows, verdicts + size_verdicts, compared + size_compared
    print(f"\n{machine()}; runs kept in {runs}\n")
    print(markdown_table(["code", "format", "pairs", "stage", "stage s", "command wall s", "peak GiB (process tree / largest Dask worker)",
                          "work dir GiB", "pairs/s so far"], rows))
    if compared:
        print(f"\nThe DaskRunner ({args.dask_workers} one-thread workers) against the DirectRunner, per stage; "
              "the task times are the scheduler's, in seconds after the command started:\n")
        print(markdown_table(["pairs", "stage", "DirectRunner s", "Dask s", "Dask's speed (× Direct)", "each worker's peak GiB",
                              "first task at s", "last task ends s", "each worker computing s (share of the span)",
                              "receiving data s", "longest task s"], compared))
    print("\n".join(["", *verdicts]))


if __name__ == "__main__":
    main()
