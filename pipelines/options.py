"""Runner options: DirectRunner on all cores by default, any runner through pass-through args."""

from __future__ import annotations

import json
import logging
import shlex

from apache_beam.options.pipeline_options import PipelineOptions

# Two warnings every SDK worker logs at start-up that say nothing about the user's pipeline:
# "No semi_persistent_directory found" (sdk_worker_main, run as __main__: the DirectRunner's
# workers have no staging directory) and "Discarding unparseable args" (Beam's own round trip of
# its --pipeline_type_check and --direct_runner_use_stacked_bundle defaults).
_WORKER_START_UP_NOISE = {"__main__": "ERROR", "apache_beam.options.pipeline_options": "ERROR"}


def pipeline_options(runner: str = "DirectRunner", num_workers: int = 0, extra_args: str = "", log_level: int = logging.WARNING) -> PipelineOptions:
    """Build options for ``runner``; ``extra_args`` are passed through verbatim.

    For the DirectRunner, ``num_workers`` worker processes are used (0 = one per core, 1 = in
    process, which is fastest for small inputs and tests). For Flink, Spark, Dataflow or a
    portable job server, put the runner's own flags in ``extra_args``, e.g.
    ``--flink_master=host:8081 --environment_type=LOOPBACK``.

    SDK workers log at ``log_level`` (WARNING: only what the user should see); below INFO they
    log everything, start-up notices included.
    """
    args = [f"--runner={runner}"]
    if log_level > logging.DEBUG:
        args += [f"--default_sdk_harness_log_level={logging.getLevelName(log_level)}",
                 f"--sdk_harness_log_level_overrides={json.dumps(_WORKER_START_UP_NOISE)}"]
    args += shlex.split(extra_args)
    if runner == "DirectRunner" and not any(a.startswith("--direct_") for a in args):
        if num_workers == 1:
            args.append("--direct_running_mode=in_memory")
        else:
            args += [f"--direct_num_workers={num_workers}", "--direct_running_mode=multi_processing"]
    return PipelineOptions(args)
