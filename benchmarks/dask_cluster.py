"""Dask benchmark: ScorePairs + AssignDeciles on a local dask.distributed cluster of one and of two
worker processes (``DaskRunner``, pipelines/dask_runner.py), against the in-process DirectRunner
(the baseline), on the same generated pairs in one run (benchmarks/score.py's data and pipelines).

Each row: wall time, and the CPU seconds of every process that worked: the driver (building and
submitting the pipelines, reading the Parquet footers) and, on Dask, the scheduler and the workers
(their CPU time over the run, from psutil). A cluster is started for each row and is idle when
its clock starts; its workers import the stage's modules on their first task, inside the clock,
as a fresh cluster does on its first stage.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.common import (
    local_dask_cluster,
    machine,
    markdown_table,
    measure_in_subprocess,
    peak_rss_mib,
)
from benchmarks.score import ONE_THREAD, clock, run_beam, write_vectors


def processes_cpu_seconds(processes) -> float:
    """User + system CPU seconds of ``processes`` and their children (a ``dask worker`` runs its
    worker in a child process)."""
    import psutil

    total = 0.0
    for process in processes:
        parent = psutil.Process(process.pid)
        for member in [parent, *parent.children(recursive=True)]:
            times = member.cpu_times()
            total += times.user + times.system
    return total


def measure(args) -> None:
    """Child-process entry: one ScorePairs + AssignDeciles run, its JSON line (seconds exclude data generation)."""
    with tempfile.TemporaryDirectory() as tmp:
        started = run_beam(args.source, args.vectors, Path(tmp), 1, args.dask_scheduler)
        wall, cpu = clock()
    print(json.dumps({"seconds": wall - started[0], "cpu_seconds": cpu - started[1], "peak_rss_mib": peak_rss_mib()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,4000000", help="Comma-separated pair counts.")
    parser.add_argument("--workers", default="1,2", help="Comma-separated Dask worker processes (one thread each), a cluster per count.")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    parser.add_argument("--dask-scheduler", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "vectors.txt"
        write_vectors(vectors)
        for size in (int(size) for size in args.sizes.split(",")):
            source = Path(tmp) / f"pairs-{size}"
            measure_in_subprocess("benchmarks.score", "--measure", "write", "--pairs", str(size), "--source", str(source),
                                  "--shards", str(args.shards))
            common = ["benchmarks.dask_cluster", "--measure", "--source", str(source), "--vectors", str(vectors)]
            runs = [("DirectRunner in process (baseline)", measure_in_subprocess(*common, env=ONE_THREAD))]
            for workers in (int(count) for count in args.workers.split(",")):
                with local_dask_cluster(Path(tempfile.mkdtemp(dir=tmp)), workers, ONE_THREAD) as (address, cluster):
                    before = processes_cpu_seconds(cluster)
                    run = measure_in_subprocess(*common, "--dask-scheduler", address, env=ONE_THREAD)
                    run["cpu_seconds"] += processes_cpu_seconds(cluster) - before
                runs.append((f"DaskRunner, {workers} worker process{'es' if workers > 1 else ''}", run))
            baseline = runs[0][1]["seconds"]
            for label, run in runs:
                rows.append([label, size, run["seconds"], run["cpu_seconds"], 1e6 * run["cpu_seconds"] / size, size / run["seconds"],
                             baseline / run["seconds"]])
    print(f"ScorePairs + AssignDeciles on generated pairs, {args.shards} shards, {machine()}\n")
    print(markdown_table(["runner", "pairs", "seconds", "CPU seconds (all processes)", "CPU µs per pair", "pairs/s",
                          "speed-up over in process"], rows))


if __name__ == "__main__":
    main()
