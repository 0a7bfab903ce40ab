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


def test_a_stage_whose_rows_cost_more_starts_a_worker_for_fewer_of_them():
    cores = os.cpu_count() or 1
    assert direct_workers(0, 300, rows_per_worker=200_000) == direct_workers(0, 199_999, rows_per_worker=200_000) == 1
    assert direct_workers(0, 400_000, rows_per_worker=200_000) == min(2, cores)
    if cores > 1:
        assert direct_args(rows=400_000, rows_per_worker=200_000) == ("multi_processing", min(2, cores))
        assert direct_args(rows=400_000) == ("in_memory", 1)  # the same rows at a scored pair's cost


def test_no_more_workers_start_than_there_are_elements_of_work():
    """A stage whose elements are whole shards (to translate, to import) gets a worker per shard
    at most: a second worker for one shard would only wait, and halve a translator's threads."""
    cores = os.cpu_count() or 1
    assert direct_workers(0, None, elements=1) == direct_workers(0, 10**9, elements=1) == 1
    assert direct_workers(0, None, elements=10**6) == cores
    assert direct_workers(0, None, elements=0) == 1
    assert direct_workers(3, None, elements=1) == 3  # a number asked for is kept
    assert direct_args(rows=10**9, elements=1) == ("in_memory", 1)


def test_a_runner_flag_given_in_the_extra_args_wins():
    assert direct_args(rows=1000, extra_args="--direct_running_mode=multi_threading") == ("multi_threading", 1)


def test_the_direct_runner_never_reaches_for_the_network(monkeypatch, caplog):
    """Beam's DirectRunner tries Prism first, which downloads its binary: our options skip it."""
    import logging
    import socket

    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    reached = []

    def refuse(host, *args, **kwargs):
        reached.append(host)
        raise OSError(f"network access in a test: {host}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    with caplog.at_level(logging.INFO), beam.Pipeline(options=pipeline_options(num_workers=1)) as pipeline:
        doubled = pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: 2 * x)
        assert_that(doubled, equal_to([2, 4, 6]))
    assert reached == [] and "Prism" not in caplog.text


def test_the_dask_scheduler_option_is_parsed_without_a_warning():
    """In a fresh process (where Beam's Dask module is not yet imported) Beam warned "Discarding
    unparseable args: ['--dask_client_address=…']" on every Dask user's console."""
    import subprocess
    import sys

    code = ("import logging; logging.basicConfig()\n"
            "from pipelines.options import pipeline_options\n"
            "print(pipeline_options('DaskRunner', dask_scheduler='tcp://127.0.0.1:1').get_all_options()['address'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert (done.stdout.strip(), done.stderr) == ("tcp://127.0.0.1:1", "")
