import os

from pipelines.options import ROWS_PER_WORKER, direct_workers, pipeline_options


def direct_args(**kwargs):
    options = pipeline_options("DirectRunner", **kwargs).get_all_options()
    return options["direct_running_mode"], options["direct_num_workers"]


def test_a_small_input_runs_in_process_and_a_large_one_on_up_to_one_worker_per_core():
    cores = os.cpu_count() or 1
    assert direct_workers(0, 0) == direct_workers(0, ROWS_PER_WORKER - 1) == 1
    assert direct_workers(0, 2 * ROWS_PER_WORKER) == min(2, cores)
    assert direct_workers(0, 1000 * ROWS_PER_WORKER) == direct_workers(0, None) == cores
    assert direct_workers(3, 10) == 3 and direct_workers(1, 10**9) == 1  # a number asked for is kept
    assert direct_args(rows=1000) == ("in_memory", 1)
    if cores > 1:
        assert direct_args(rows=10**9) == ("multi_processing", cores)


def test_a_runner_flag_given_in_the_extra_args_wins():
    assert direct_args(rows=1000, extra_args="--direct_running_mode=multi_threading") == ("multi_threading", 1)
