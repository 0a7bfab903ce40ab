"""The three faults of Beam 2.77's DaskRunner, each as a few-line pipeline on a real
dask.distributed cluster (two in-process workers): each fails on Beam's runner and passes on
pipelines.dask_runner's (docs/2026-11-25-dask.md). When Beam fixes one, its xfail turns into a
failure, and the correction can go."""

from __future__ import annotations

import ast
import collections
import os
import socket
import subprocess
import sys
import time
import uuid

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from distributed import LocalCluster

from corpus.errors import InputError
from pipelines.options import pipeline_options

SHIPPED, OURS = "apache_beam.runners.dask.dask_runner.DaskRunner", "DaskRunner"


@pytest.fixture(scope="module")
def scheduler():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(params=[
    pytest.param(SHIPPED, marks=pytest.mark.xfail(strict=True, reason="Beam 2.77's DaskRunner")),
    OURS,
])
def run(request, scheduler, tmp_path):
    """``run(build)``: ``build(pipeline)`` on the runner, then what its ``record`` sinks wrote, by name."""

    def run_on_dask(build) -> dict[str, list]:
        options = pipeline_options(request.param, dask_scheduler=scheduler) if request.param == OURS else \
            PipelineOptions([f"--runner={SHIPPED}", f"--dask_client_address={scheduler}"])
        pipeline = beam.Pipeline(options=options)
        build(pipeline, tmp_path)
        result = pipeline.run()
        try:
            result.wait_until_finish()
        finally:
            result.client.close()  # Beam's runner leaves it open
        return {folder.name: sorted(ast.literal_eval(f.read_text()) for f in folder.iterdir()) for folder in tmp_path.iterdir()}

    return run_on_dask


def record(value, folder):
    """A sink: ``value`` in a file of its own under ``folder``."""
    folder.mkdir(exist_ok=True)
    (folder / uuid.uuid4().hex).write_text(repr(value))


def test_every_sink_runs(run):
    def build(pipeline, out):
        numbers = pipeline | beam.Create([1, 2, 3])
        numbers | "First" >> beam.Map(record, out / "first")
        numbers | "Second" >> beam.Map(record, out / "second")

    assert run(build) == {"first": [1, 2, 3], "second": [1, 2, 3]}


class SplitOdd(beam.DoFn):
    def process(self, number):
        yield beam.pvalue.TaggedOutput("odd", number) if number % 2 else number


def test_each_tagged_output_goes_to_its_own_consumers(run):
    def build(pipeline, out):
        split = pipeline | beam.Create(range(6)) | beam.ParDo(SplitOdd()).with_outputs("odd", main="even")
        ((split.even | "Even" >> beam.Map(lambda n: ("even", n)), split.odd | "Odd" >> beam.Map(lambda n: ("odd", n)))
         | beam.Flatten() | beam.Map(record, out / "tagged"))

    assert run(build) == {"tagged": [("even", 0), ("even", 2), ("even", 4), ("odd", 1), ("odd", 3), ("odd", 5)]}


def test_what_finish_bundle_emits_is_kept(run):
    def build(pipeline, out):
        (pipeline | beam.Create(range(10), reshuffle=False) | beam.BatchElements(min_batch_size=4, max_batch_size=4)
         | beam.Map(len) | beam.Map(record, out / "batches"))

    assert sum(run(build)["batches"]) == 10


def counted(number: int, folder) -> tuple[int, int]:
    record(number, folder)
    return number % 3, number


def test_what_several_transforms_read_is_computed_once(scheduler, tmp_path):
    """Read by two side inputs and a sink: each element once. dask.optimize over the sinks and
    dask.delayed over a bag both fuse the bag's tasks under new names, so every reader computed
    it again (AssignDeciles read each shard 18 times at 4M pairs, 115 s against 19 in process)."""
    with beam.Pipeline(options=pipeline_options(OURS, dask_scheduler=scheduler)) as pipeline:
        numbers = pipeline | beam.Create(list(range(40)))
        keyed = numbers | "Counted" >> beam.Map(counted, tmp_path / "counted")
        sums = beam.pvalue.AsDict(keyed | "Sums" >> beam.CombinePerKey(sum))
        total = beam.pvalue.AsSingleton(keyed | "Values" >> beam.Values() | "Total" >> beam.CombineGlobally(sum))
        (numbers | "WithSums" >> beam.Map(lambda number, sums: number + len(sums), sums)
         | "WithTotal" >> beam.Map(lambda number, total: number + total, total) | beam.Map(record, tmp_path / "out"))
        keyed | "Sink" >> beam.Map(record, tmp_path / "sink")
    assert sorted(ast.literal_eval(path.read_text()) for path in (tmp_path / "counted").iterdir()) == list(range(40))
    assert sorted(ast.literal_eval(path.read_text()) for path in (tmp_path / "out").iterdir()) == [n + 3 + 780 for n in range(40)]


def test_a_worker_process_started_with_a_malloc_setting_takes_large_arrays_from_the_heap():
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which pins glibc's mmap
    threshold at 128 KiB: every larger array was a fresh mmap (glibc's mallinfo2 counts them), and
    scoring a shard a third slower. The runner's bundles raise the threshold first."""
    code = """
import ctypes
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in \
("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
def mapped():
    before = libc.mallinfo2().hblks
    block = bytearray(4 * 2**20)
    return libc.mallinfo2().hblks - before
warm = [mapped() for _ in range(3)]
from pipelines.dask_runner import large_allocations_from_the_heap
print(warm[-1], large_allocations_from_the_heap(), [mapped() for _ in range(3)][-1])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"})
    assert done.stdout.split() == ["1", "True", "0"]


def test_every_bundle_sees_to_the_heap_first(scheduler):
    from pipelines.dask_runner import large_allocations_from_the_heap

    large_allocations_from_the_heap.cache_clear()
    with beam.Pipeline(options=pipeline_options(OURS, dask_scheduler=scheduler)) as pipeline:
        pipeline | beam.Create([1, 2]) | beam.Map(str)
    assert large_allocations_from_the_heap.cache_info().currsize == 1


def test_a_scheduler_that_does_not_answer_is_the_users_mistake_in_one_line():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{unused.getsockname()[1]}"
    options = pipeline_options(OURS, extra_args="--dask_connection_timeout=1", dask_scheduler=address)
    with pytest.raises(InputError, match=f"^no dask scheduler answers at {address} "), beam.Pipeline(options=options) as pipeline:
        pipeline | beam.Create([1])


@pytest.fixture(scope="module")
def gpu_workers():
    """A cluster of three one-thread workers, ``gpu0`` and ``gpu1`` declaring the resource GPU=1
    and ``plain`` none."""
    from distributed import Scheduler, SpecCluster, Worker

    workers = {name: {"cls": Worker, "options": {"nthreads": 1, "name": name, **options}}
               for name, options in (("plain", {}), ("gpu0", {"resources": {"GPU": 1}}), ("gpu1", {"resources": {"GPU": 1}}))}
    with SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}}) as cluster:
        yield cluster.scheduler_address


def worker_name(_) -> str:
    """The worker that runs this, after a moment's work (so that one worker cannot take them all)."""
    from distributed import get_worker

    time.sleep(0.05)
    return get_worker().name


def test_a_transform_hinted_to_an_accelerator_runs_only_on_the_workers_that_declare_it_and_on_each(gpu_workers, tmp_path):
    """dask's fusion drops annotations: fused, the hinted step ran on the plain worker too."""
    with beam.Pipeline(options=pipeline_options(OURS, dask_scheduler=gpu_workers)) as pipeline:
        elements = pipeline | beam.Create(range(24))
        ran_on = elements | "Where" >> beam.Map(worker_name).with_resource_hints(accelerator="type:GPU;count:1")
        anywhere = elements | "Anywhere" >> beam.Map(worker_name)
        ran_on | "RecordHinted" >> beam.Map(record, tmp_path / "hinted")
        anywhere | "RecordAnywhere" >> beam.Map(record, tmp_path / "anywhere")
    ran_on = collections.Counter(ast.literal_eval(f.read_text()) for f in (tmp_path / "hinted").iterdir())
    assert set(ran_on) == {"gpu0", "gpu1"} and sum(ran_on.values()) == 24, ran_on
    assert len(list((tmp_path / "anywhere").iterdir())) == 24


def test_a_resource_that_no_worker_declares_is_one_line_not_a_wait(gpu_workers):
    with pytest.raises(InputError, match="^no worker of the dask cluster declares the resource TPU "), \
            beam.Pipeline(options=pipeline_options(OURS, dask_scheduler=gpu_workers)) as pipeline:
        pipeline | beam.Create([1]) | beam.Map(str).with_resource_hints(accelerator="type:TPU;count:1")


def test_an_accelerator_hint_names_the_resource_and_its_count():
    from apache_beam.transforms.resources import AcceleratorHint

    from pipelines.dask_runner import worker_resources

    assert worker_resources({AcceleratorHint.urn: b"type:nvidia-tesla-t4;count:2;install-nvidia-driver"}) == {"nvidia-tesla-t4": 2.0}
    assert worker_resources({AcceleratorHint.urn: b"type:GPU"}) == {"GPU": 1.0} and worker_resources({}) == {}
    with pytest.raises(InputError, match="needs type:NAME"):
        worker_resources({AcceleratorHint.urn: b"count:1"})


class Mean(beam.CombineFn):
    """A CombineFn that must be set up first (as Beam's runners do)."""

    def setup(self):
        self.ready = True

    def create_accumulator(self):
        assert self.ready
        return 0, 0

    def add_input(self, accumulator, value):
        return accumulator[0] + value, accumulator[1] + 1

    def merge_accumulators(self, accumulators):
        return tuple(map(sum, zip(*accumulators, strict=True)))

    def extract_output(self, accumulator):
        return accumulator[0] / accumulator[1]


class PlusOffset(beam.CombineFn):
    """A sum plus a side input's offset, added once."""

    def create_accumulator(self, offset):
        return 0

    def add_input(self, accumulator, value, offset):
        return accumulator + value

    def merge_accumulators(self, accumulators, offset):
        return sum(accumulators)

    def extract_output(self, accumulator, offset):
        return accumulator + offset


def test_combines_give_what_beam_defines_lifted_or_not(scheduler, tmp_path):
    """A CombinePerKey is lifted (each partition combines, the accumulators are merged); one with a
    side input is Beam's own LiftedCombinePerKey (a ParDo and Beam's GroupByKey); an empty input's
    CombineGlobally still gives its default."""
    from pipelines.dask_runner import LiftCombinePerKey

    pipeline = beam.Pipeline(options=pipeline_options(OURS, dask_scheduler=scheduler))
    pairs = pipeline | beam.Create([(n % 4, n) for n in range(40)])
    pairs | "Sum" >> beam.CombinePerKey(sum) | "RecordSum" >> beam.Map(record, tmp_path / "sum")
    pairs | "Mean" >> beam.CombinePerKey(Mean()) | "RecordMean" >> beam.Map(record, tmp_path / "mean")
    pairs | "Count" >> beam.combiners.Count.PerKey() | "RecordCount" >> beam.Map(record, tmp_path / "count")
    pairs | beam.Values() | "List" >> beam.combiners.ToList() | beam.Map(sorted) | "RecordList" >> beam.Map(record, tmp_path / "list")
    offset = beam.pvalue.AsSingleton(pipeline | "Offset" >> beam.Create([100]))
    (pairs | "WithSide" >> beam.CombinePerKey(PlusOffset(), offset)
     | "RecordSide" >> beam.Map(record, tmp_path / "side"))
    (pipeline | "Nothing" >> beam.Create([]) | "EmptySum" >> beam.CombineGlobally(sum)
     | "RecordEmpty" >> beam.Map(record, tmp_path / "empty"))
    lifted = [LiftCombinePerKey().matches(node) for node in combine_nodes(pipeline)]
    pipeline.run().wait_until_finish()
    found = {folder.name: sorted(ast.literal_eval(path.read_text()) for path in folder.iterdir()) for folder in tmp_path.iterdir()}
    sums = {k: sum(n for n in range(40) if n % 4 == k) for k in range(4)}
    assert found == {"sum": sorted(sums.items()), "mean": [(k, sums[k] / 10) for k in range(4)], "count": [(k, 10) for k in range(4)],
                     "list": [list(range(40))], "side": sorted((k, v + 100) for k, v in sums.items()), "empty": [0]}
    assert lifted == [True] * 5  # Sum, Mean, Count, ToList, EmptySum; WithSide is no CombinePerKey


def combine_nodes(pipeline: beam.Pipeline) -> list:
    """The pipeline's CombinePerKey transforms as applied, in the order they were applied."""
    from apache_beam.pipeline import PipelineVisitor

    class Combines(PipelineVisitor):
        found: list = []

        def enter_composite_transform(self, node):
            if type(node.transform) is beam.CombinePerKey:
                self.found.append(node)

    visitor = Combines()
    visitor.found = []
    pipeline.visit(visitor)
    return visitor.found
