"""Beam's DaskRunner (Beam 2.77) with its three faults corrected, so that every stage runs whole
and right on a dask.distributed cluster (docs/2026-11-25-dask.md has each fault's reproduction):

1. Beam's runner computes only the last transform applied: every other sink branch never runs.
   Here every PCollection that no transform reads is computed.
2. It hands all outputs of a multi-output ParDo to each consumer. Here each consumer gets the
   output it names.
3. It drops what a DoFn emits in ``finish_bundle`` (``BatchElements`` lost each partition's last
   batch). Here the bundle's outputs are collected after ``finish_bundle``.

Beam's runner also sets a DoFn up and tears it down for every partition; here a set-up DoFn serves
the partitions of a worker process one after another (``IdleDoFns``). And a worker that Dask's
nanny started with ``MALLOC_TRIM_THRESHOLD_`` set allocates every array of 128 KiB or more with its
own ``mmap`` (glibc stops adapting its thresholds once any malloc setting is given), which made
scoring a shard a third slower than in any other process: here the thresholds are set where
glibc's adaptation ends, once per worker process (``large_allocations_from_the_heap``).

A ``CombinePerKey`` without extra arguments (and so ``CombineGlobally``, ``Count``, ``ToList``) is
lifted, as Beam's own runners do: each partition combines its elements by key, and only the
accumulators are merged, in a tree (Beam's runner grouped every element by a task shuffle, whose
thousands of tasks made AssignDeciles on Dask six times slower than in process at 4M pairs). Its
keys must be hashable; its result is one partition.

And so that the work is spread over the workers: ``Create`` puts one element per partition
(Beam's puts up to 128 in one, so one worker got every shard) and ``Reshuffle`` cuts its input
into a partition per worker thread (Beam's is a no-op). A transform with an accelerator resource
hint (``type:GPU;count:1``) runs only on workers that declare that resource (``dask worker
--resources GPU=1``): its tasks are annotated with it, and such a pipeline's graph is computed
unfused, because dask's fusion drops the annotations (the fused task runs on any worker).
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import functools
import os
import threading

import apache_beam as beam
import dask
import dask.bag as db
from apache_beam import DoFn, ParDo, PTransform, pvalue
from apache_beam.internal import pickler
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor, PTransformOverride
from apache_beam.runners.common import (
    DoFnContext,
    DoFnInvoker,
    DoFnSignature,
    Receiver,
    _OutputHandler,
)
from apache_beam.runners.dask import dask_runner
from apache_beam.runners.dask.overrides import (
    _Create,
    _Flatten,
    _GroupByKeyOnly,
    _Reshuffle,
    dask_overrides,
)
from apache_beam.runners.dask.transform_evaluator import GroupByKey, get_windowed_value
from apache_beam.transforms.resources import AcceleratorHint
from apache_beam.transforms.sideinputs import SideInputMap
from apache_beam.transforms.window import GlobalWindows

from corpus.errors import InputError


class DaskRunner(dask_runner.DaskRunner):
    """Runs a pipeline on the dask.distributed scheduler at ``--dask_client_address`` (none: a
    local cluster), computing every sink; the client is closed when the pipeline finishes."""

    def run_pipeline(self, pipeline, options):
        from dask import distributed

        dask_options = options.view_as(dask_runner.DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = dask_runner.DaskOptions._extract_bag_kwargs(dask_options)
        try:
            client = distributed.Client(**dask_options)
        except OSError as error:  # the address is the user's: a typo, or the scheduler is not started
            raise InputError(f"no dask scheduler answers at {dask_options.get('address')} ([paranmt] dask_scheduler): {error}") from error
        pipeline.replace_all([LiftCombinePerKey(), *dask_overrides()])
        bags = PCollectionBags(bag_kwargs, threads=sum(client.nthreads().values()))
        pipeline.visit(bags)
        sinks = bags.sinks()
        if bags.resources_asked:
            check_declared(bags.resources_asked, client)
            return ClosingResult(client, client.compute(sinks, optimize_graph=False))
        return ClosingResult(client, client.compute(sinks))  # optimized together: what sinks share runs once


def check_declared(resources: set[str], client) -> None:
    """InputError naming a resource that no worker of the cluster declares: its tasks would wait
    for one for ever."""
    declared = {name for worker in client.scheduler_info()["workers"].values() for name in worker.get("resources", {})}
    if missing := sorted(resources - declared):
        client.close()
        raise InputError(f"no worker of the dask cluster declares the resource {', '.join(missing)} that the translation needs "
                         f"([paranmt] dask_translation_resource): start workers with --resources {missing[0]}=1, or set it empty")


class ClosingResult(dask_runner.DaskRunnerResult):
    """Beam's result, closing the client once the pipeline is done (Beam's leaves one open per
    pipeline)."""

    def wait_until_finish(self, duration=None) -> str:
        try:
            return super().wait_until_finish(duration)
        finally:
            self.client.close()


class PCollectionBags(PipelineVisitor):
    """The dask bag of every PCollection of a pipeline (Beam's keeps one per transform, so the
    outputs of a multi-output ParDo shared one bag)."""

    def __init__(self, bag_kwargs: dict, threads: int):
        self.bag_kwargs, self.threads = bag_kwargs, max(1, threads)
        self.bags: dict[pvalue.PCollection, db.Bag] = {}
        self.read: set[pvalue.PCollection] = set()
        self.resources_asked: set[str] = set()  # the worker resources some transform needs

    def visit_transform(self, node: AppliedPTransform) -> None:
        inputs = [pcoll for pcoll in node.inputs if not isinstance(pcoll, pvalue.PBegin)]
        self.read.update(inputs, (side.pvalue for side in node.side_inputs))
        bags = [self.bags[pcoll] for pcoll in inputs]
        transform = node.transform
        if isinstance(transform, _Create):
            outputs = {None: self.created(transform.values)}
        elif type(transform) is ParDo:  # as Beam's: its subclasses (_GroupAlsoByWindow) pass elements on
            outputs = self.par_do(node, bags[0])
        elif isinstance(transform, _LiftedCombinePerKey):
            outputs = {None: combined_per_key(bags[0], transform.fn)}
        elif isinstance(transform, _GroupByKeyOnly):
            outputs = {None: GroupByKey(node).apply(bags[0])}
        elif isinstance(transform, _Flatten):
            outputs = {None: db.concat(bags)}
        elif isinstance(transform, _Reshuffle):
            outputs = {None: bags[0].repartition(max(bags[0].npartitions, self.threads))}
        elif bags:  # as Beam's: the window transforms of a GroupByKey pass elements on
            outputs = {None: bags[0]}
        else:
            raise NotImplementedError(f"{node.full_label}: the DaskRunner cannot read from {type(transform).__name__}; start from beam.Create")
        for tag, pcoll in node.outputs.items():
            self.bags[pcoll] = outputs[tag]

    def created(self, values) -> db.Bag:
        """One element per partition, unless ``--dask_npartitions`` or ``--dask_partition_size`` say otherwise."""
        sizes = self.bag_kwargs or {"npartitions": max(1, len(values))}
        return db.from_sequence(values, **sizes)

    def par_do(self, node: AppliedPTransform, bag: db.Bag) -> dict:
        """The bag of each output of a ParDo by its tag (None: the main output)."""
        transform = node.transform
        main_input = next(iter(node.main_inputs.values()))
        args, kwargs = transform.raw_side_inputs
        bundle = Bundle(pickler.dumps(transform.fn), node.full_label, main_input.windowing.windowfn, list(args), kwargs,
                        [(type(side), side._view_options()) for side in node.side_inputs])
        # each side input a reduction of the bag's own tasks, lazily: dask.delayed(bag) fused the
        # bag's graph into its own under new names (every reader computed the bag again), and
        # dask.delayed over its partitions built the whole graph once per partition
        side_values = [self.bags[side.pvalue].reduction(list, concatenated, split_every=False).to_delayed(optimize_graph=False)
                       for side in node.side_inputs]
        resources = worker_resources(node.resource_hints)
        self.resources_asked |= set(resources)
        with dask.annotate(**({"resources": resources} if resources else {})):
            tagged = bag.map_partitions(bundle.run, *side_values, token=node.full_label)
        return {tag: tagged.map_partitions(with_tag, tag, token=f"{node.full_label}[{tag}]") for tag in node.outputs}

    def sinks(self) -> list[db.Bag]:
        """The bags of the PCollections no transform reads, each drained to an empty result (the
        client gathers results only to see errors)."""
        return [bag.map_partitions(drained) for pcoll, bag in self.bags.items() if pcoll not in self.read]


class _LiftedCombinePerKey(PTransform):
    """A CombinePerKey run as one step by the runner (``combined_per_key``)."""

    def __init__(self, fn: beam.CombineFn):
        super().__init__()
        self.fn = fn

    def expand(self, pcoll):
        return pvalue.PCollection.from_(pcoll)


class LiftCombinePerKey(PTransformOverride):
    """Replaces a CombinePerKey that can be lifted: no extra arguments, and the global window (the
    runner computes no other). One with side inputs is Beam's ParDo-based LiftedCombinePerKey
    already (``CombinePerKey.__new__``), its accumulators grouped by Beam's GroupByKey."""

    def matches(self, applied: AppliedPTransform) -> bool:
        transform = applied.transform
        if type(transform) is not beam.CombinePerKey or transform.args or transform.kwargs:
            return False
        return all(isinstance(pcoll.windowing.windowfn, GlobalWindows) for pcoll in applied.inputs if isinstance(pcoll, pvalue.PCollection))

    def get_replacement_transform_for_applied_ptransform(self, applied: AppliedPTransform) -> PTransform:
        return _LiftedCombinePerKey(applied.transform.fn)


def combined_per_key(bag: db.Bag, fn: beam.CombineFn) -> db.Bag:
    """(key, output) of ``fn`` over each key's values: accumulated in each partition, the
    accumulators merged pairwise in a tree (dask's foldby), each output extracted at the end."""
    steps = CombineSteps(fn)
    return bag.foldby(key_of, steps.add, steps.create, steps.merge).map(steps.extract)


def key_of(pair: tuple):
    return pair[0]


@dataclasses.dataclass
class CombineSteps:
    """A CombineFn's steps as dask's foldby calls them; the CombineFn is set up before its first
    step in a task (each task gets its own copy)."""

    fn: beam.CombineFn
    set_up: bool = False

    def ready(self) -> beam.CombineFn:
        if not self.set_up:
            self.fn.setup()
            self.set_up = True
        return self.fn

    def create(self):
        return self.ready().create_accumulator()

    def add(self, accumulator, pair: tuple):
        return self.ready().add_input(accumulator, pair[1])

    def merge(self, first, second):
        return self.ready().merge_accumulators([first, second])

    def extract(self, pair: tuple) -> tuple:
        return pair[0], self.ready().extract_output(pair[1])


def worker_resources(hints: dict[str, bytes]) -> dict[str, float]:
    """The Dask worker resources a transform's Beam resource hints ask for: an accelerator hint
    ``type:NAME;count:N`` asks for N of the resource NAME (Beam's GPU types, e.g.
    ``nvidia-tesla-t4``, name a resource as any other word does)."""
    hint = hints.get(AcceleratorHint.urn)
    if not hint:
        return {}
    fields = dict(part.split(":", 1) for part in hint.decode().split(";") if ":" in part)
    if not fields.get("type"):
        raise InputError(f"accelerator hint {hint.decode()!r}: the DaskRunner needs type:NAME, the worker resource to run on")
    return {fields["type"]: float(fields.get("count", 1))}


@dataclasses.dataclass
class Bundle:
    """A ParDo's DoFn run over one partition, as a bundle: its outputs as (tag, value) pairs."""

    pickled_fn: bytes
    label: str
    window_fn: object
    args: list
    kwargs: dict
    side_views: list

    def run(self, elements, *side_values) -> list[tuple]:
        large_allocations_from_the_heap()
        outputs: list[tuple] = []
        receivers = TagReceivers(outputs)
        handler = _OutputHandler(window_fn=self.window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                                 per_element_output_counter=None, output_batch_converter=None,
                                 process_yields_batches=False, process_batch_yields_elements=False)
        sides = [SideInputMap(view, options, [get_windowed_value(value, self.window_fn) for value in values])
                 for (view, options), values in zip(self.side_views, side_values, strict=True)]
        fn = SET_UP_DOFNS.take(self.pickled_fn)
        invoker = DoFnInvoker.create_invoker(
            DoFnSignature(fn or pickler.loads(self.pickled_fn)), handler, context=DoFnContext(self.label, state=None),
            side_inputs=sides, input_args=self.args, input_kwargs=self.kwargs, user_state_context=None,
            bundle_finalizer_param=DoFn.BundleFinalizerParam())
        if fn is None:
            invoker.invoke_setup()
        invoker.invoke_start_bundle()
        for element in elements:
            invoker.invoke_process(get_windowed_value(element, self.window_fn))
        invoker.invoke_finish_bundle()
        SET_UP_DOFNS.give_back(self.pickled_fn, invoker.signature.do_fn)
        return outputs


# glibc's mallopt parameters, and the largest mmap threshold glibc adapts to by itself (32 MiB on 64
# bits; it then trims the heap at twice that).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
ADAPTED_MMAP_THRESHOLD_MAX = 32 * 2**20
# The environment variables that fix a glibc malloc setting at start-up, and so its mmap threshold.
MALLOC_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


@functools.cache
def large_allocations_from_the_heap() -> bool:
    """In a worker process started with a malloc setting in its environment (Dask's nanny gives
    ``MALLOC_TRIM_THRESHOLD_=65536``, so that freed memory goes back to the system at once), set
    glibc's mmap and trim thresholds where glibc's own adaptation ends: with any setting given, glibc
    keeps the mmap threshold at 128 KiB, and every larger allocation (a batch's arrays) is a fresh
    ``mmap`` whose pages fault in and are unmapped again: scoring a shard took 2.3-2.5 s there
    against 1.7-1.8 s in any other process (docs/2026-12-02-dask-speed.md). The cost: a worker
    keeps up to 64 MiB of freed memory for reuse. Whether it changed anything; once per process."""
    if not any(name in os.environ for name in MALLOC_SETTINGS):
        return False  # glibc adapts the thresholds itself
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # glibc's; other C libraries may lack it
    return bool(mallopt and mallopt(M_MMAP_THRESHOLD, ADAPTED_MMAP_THRESHOLD_MAX) and mallopt(M_TRIM_THRESHOLD, 2 * ADAPTED_MMAP_THRESHOLD_MAX))


class IdleDoFns:
    """DoFns set up in this worker process and idle, by their pickled form: a DoFn is set up once
    per process and serves bundle after bundle, as on Beam's own runners (setting up loads models
    and word vectors: once per partition, it cost more than scoring 1M pairs). An instance serves
    one bundle at a time; the DoFns of the last ``KEEP`` kinds are kept, older ones torn down."""

    KEEP = 32

    def __init__(self):
        self.idle: collections.OrderedDict[bytes, list[DoFn]] = collections.OrderedDict()
        self.lock = threading.Lock()

    def take(self, pickled_fn: bytes) -> DoFn | None:
        with self.lock:
            instances = self.idle.get(pickled_fn)
            return instances.pop() if instances else None

    def give_back(self, pickled_fn: bytes, fn: DoFn) -> None:
        with self.lock:
            self.idle.setdefault(pickled_fn, []).append(fn)
            self.idle.move_to_end(pickled_fn)
            evicted = [self.idle.popitem(last=False)[1] for _ in range(len(self.idle) - self.KEEP)]
        for instance in (instance for instances in evicted for instance in instances):
            instance.teardown()


SET_UP_DOFNS = IdleDoFns()


class TagReceivers(dict):
    """The output handler's receivers by tag (None: the main output), all appending to one list."""

    def __init__(self, outputs: list):
        super().__init__()
        self.outputs = outputs

    def __missing__(self, tag):
        self[tag] = TagReceiver(tag, self.outputs)
        return self[tag]


@dataclasses.dataclass
class TagReceiver(Receiver):
    tag: str | None
    outputs: list

    def receive(self, windowed_value) -> None:
        self.outputs.append((self.tag, windowed_value.value))


def with_tag(outputs: list[tuple], tag: str | None) -> list:
    return [value for output_tag, value in outputs if output_tag == tag]


def concatenated(partitions) -> list:
    return [element for partition in partitions for element in partition]


def drained(partition) -> list:
    collections.deque(partition, maxlen=0)
    return []
