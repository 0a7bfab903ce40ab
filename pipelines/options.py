"""Runner options: DirectRunner on all cores by default, any runner through pass-through args."""

from __future__ import annotations

import shlex

from apache_beam.options.pipeline_options import PipelineOptions


def pipeline_options(runner: str = "DirectRunner", num_workers: int = 0, extra_args: str = "") -> PipelineOptions:
    """Build options for ``runner``; ``extra_args`` are passed through verbatim.

    For the DirectRunner, ``num_workers`` worker processes are used (0 = one per core, 1 = in
    process, which is fastest for small inputs and tests). For Flink, Spark, Dataflow or a
    portable job server, put the runner's own flags in ``extra_args``, e.g.
    ``--flink_master=host:8081 --environment_type=LOOPBACK``.
    """
    args = [f"--runner={runner}", *shlex.split(extra_args)]
    if runner == "DirectRunner" and not any(a.startswith("--direct_") for a in args):
        if num_workers == 1:
            args.append("--direct_running_mode=in_memory")
        else:
            args += [f"--direct_num_workers={num_workers}", "--direct_running_mode=multi_processing"]
    return PipelineOptions(args)
