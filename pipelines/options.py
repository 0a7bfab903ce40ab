"""Runner options: the DirectRunner in process or on a pool of worker processes, chosen by the
input's size; any runner through pass-through args."""

from __future__ import annotations

import json
import logging
import os
import shlex

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.version import __version__ as beam_version

from pipelines.worker_hangs import fix_worker_hangs

# Two warnings every SDK worker logs at start-up that say nothing about the user's pipeline:
# "No semi_persistent_directory found" (sdk_worker_main, run as __main__: the DirectRunner's
# workers have no staging directory) and "Discarding unparseable args" (Beam's own round trip of
# its --pipeline_type_check and --direct_runner_use_stacked_bundle defaults).
_WORKER_START_UP_NOISE = {"__main__": "ERROR", "apache_beam.options.pipeline_options": "ERROR"}

# A DirectRunner pool of worker processes costs each pipeline about 3 CPU seconds and 2 s of wall
# time to start (every worker imports Beam and the stage's libraries), so a worker is started for
# each million rows, about 20 CPU s of scoring and ranking: start-up stays a small share of the
# CPU time (benchmarks/score.py, 2 cores: scoring + deciles of 1M pairs take 18.4 s and 18.5 CPU s
# in process, 16.8 s and 29 CPU s on two workers; of 0.25M, 5.1 s and 4.8 CPU s in process, 8.4 s
# and 13.4 CPU s on two).
ROWS_PER_WORKER = 1_000_000
# Lines of raw input per DirectRunner worker process: about the 20 CPU s of work that
# ROWS_PER_WORKER gives a scoring worker, at ~100 µs a line of real text (the
# 51.4M ingest reads 18,000–20,500 lines/s on 2 cores). Below it a stage runs in process: the 400
# demo lines took 5.6 CPU s and 12 s there, 11.8 CPU s and 22 s on two workers (2 loaded cores).
LINES_PER_WORKER = 200_000
# Scored translations per DirectRunner worker process: forced decoding is one pass of the model
# (beam search's 0.5–15 sentences/s a CPU with published models, docs/2026-11-27-published-
# translators-cpu.md, is a dozen passes), so about 50 a second with a Marian model: 1,000 are
# about the 20 CPU s ROWS_PER_WORKER gives a worker (an estimate, not measured).
SCORED_ROWS_PER_WORKER = 1_000

# Runners named by a short name that Beam does not know: the project's corrected DaskRunner
# (Beam's own is refused as "Unexpected pipeline runner" unless named by its dotted path).
RUNNERS = {"DaskRunner": "pipelines.dask_runner.DaskRunner"}


def on_dask(runner: str) -> bool:
    """Whether ``runner`` (a short name or a dotted path) is the project's DaskRunner."""
    return runner in ("DaskRunner", RUNNERS["DaskRunner"])


def direct_workers(requested: int, rows: int | None = None, rows_per_worker: int = ROWS_PER_WORKER, elements: int | None = None) -> int:
    """DirectRunner worker processes for a pipeline over ``rows`` input rows: ``requested`` when
    it is not 0 (1 = in process); 0 = one per ``rows_per_worker`` rows (a stage whose rows cost
    more gives fewer), at most one per core, so a small input runs in process; with no row
    count, one per core. At most one per element of work when their number is known (a stage
    whose elements are whole shards, to translate or import): a worker without one only waits,
    and a translator's threads are the cores divided by the workers."""
    if requested:
        return requested
    cores = os.cpu_count() or 1
    workers = cores if rows is None else max(1, min(cores, rows // rows_per_worker))
    return workers if elements is None else max(1, min(workers, elements))


def pipeline_options(runner: str = "DirectRunner", num_workers: int = 0, extra_args: str = "", log_level: int = logging.WARNING,
                     rows: int | None = None, dask_scheduler: str = "", rows_per_worker: int = ROWS_PER_WORKER,
                     elements: int | None = None) -> PipelineOptions:
    """Build options for ``runner``; ``extra_args`` are passed through verbatim.

    For the DirectRunner, ``direct_workers(num_workers, rows, rows_per_worker, elements)`` worker
    processes are used (``rows``: the pipeline's input rows, ``elements``: its units of work, when known). For Flink, Spark, Dataflow or a
    portable job server, put the runner's own flags in ``extra_args``, e.g.
    ``--flink_master=host:8081 --environment_type=LOOPBACK``. ``DaskRunner`` is the project's
    (``pipelines.dask_runner``), on the scheduler at ``dask_scheduler`` (empty: a local cluster).

    SDK workers log at ``log_level`` (WARNING: only what the user should see); below INFO they
    log everything, start-up notices included.
    """
    fix_worker_hangs()  # every pipeline of the project gets its options here
    args = [f"--runner={RUNNERS.get(runner, runner)}"]
    if on_dask(runner):
        # Beam's DaskOptions declare --dask_client_address when their module is imported; before
        # that, Beam parses the flag as unknown and warns "Discarding unparseable args" on the console
        from apache_beam.runners.dask import dask_runner  # noqa: F401

        if dask_scheduler:
            args.append(f"--dask_client_address={dask_scheduler}")
    if log_level > logging.DEBUG:
        args += [f"--default_sdk_harness_log_level={logging.getLevelName(log_level)}",
                 f"--sdk_harness_log_level_overrides={json.dumps(_WORKER_START_UP_NOISE)}"]
    args += shlex.split(extra_args)
    if runner == "DirectRunner" and not any(a.startswith("--update_compatibility_version") for a in args):
        # Beam's DirectRunner first tries the Prism runner, which downloads its binary from GitHub
        # (offline: a wait for the network to fail, then a fallback); it skips Prism when an update
        # compatibility version is set, and Beam's own version changes no transform's expansion.
        args.append(f"--update_compatibility_version={beam_version}")
    if runner == "DirectRunner" and not any(a.startswith("--direct_") for a in args):
        workers = direct_workers(num_workers, rows, rows_per_worker, elements)
        if workers == 1:
            args.append("--direct_running_mode=in_memory")
        else:
            args += [f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
    return PipelineOptions(args)
