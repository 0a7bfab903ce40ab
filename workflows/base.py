"""The base of every stage: an atomic output directory with a ``_SUCCESS`` manifest.

A stage writes into ``<workdir>/<stage>/.<fingerprint>.partial`` and renames it to
``<workdir>/<stage>/<fingerprint>`` only when complete, so a killed run leaves nothing that
looks finished and a rerun resumes at the first incomplete stage. The fingerprint hashes what
shapes the output (StageTask.identity): the code the stage runs (its definitions' syntax trees and
its libraries' versions, not the package's version), its significant parameters, its input files'
contents and its upstream stages' fingerprints: change any of them and the stage is recomputed
into a new directory, the old result stays; change nothing it runs and it is reused. ``<workdir>/<stage>/latest`` points at
the output of the most recent run that built or found it complete. A lock per
output (``<workdir>/.locks/``) makes a second run on the same work directory wait for the first
instead of building the same output beside it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import apache_beam as beam
import luigi
from luigi.task import flatten

import schemas
from corpus.files import LATEST, write_atomically
from corpus.inputs import content_identity
from corpus.outputs import (
    MANIFEST,
    DamagedOutput,
    committed_files,
    damaged,
    dataset_of,
    partial_dir,
    verified_manifest,
)
from pipelines.io import file_rows
from pipelines.options import ROWS_PER_WORKER, pipeline_options
from pipelines.progress import RunPipeline
from pipelines.worker_hangs import RunnerUnreachable, loopback_problem, one_line_if_a_worker_dies
from workflows.central_scheduler import WorkDirectoryTask, work_directory_digest
from workflows.code_identity import CodeIdentity, code_identity
from workflows.config import AbsolutePath, paranmt
from workflows.console import STAGES as log
from workflows.console import interrupted, log_level
from workflows.console_errors import users_mistake, worker_tracebacks_dropped
from workflows.fingerprints import (
    SPELLED_INPUTS,
    check_input_file,
    check_unchanged,
    exclusive_lock,
    file_fingerprint,
    input_versions,
    paths_as_contents,
)
from workflows.previous_release import adopt_previous_release

# The keys every manifest has (StageTask._build_into): a stage's summary (what build returns) may
# not use them, or one key would mean two things and one of them would be lost.
MANIFEST_OWN_KEYS = frozenset({"stage", "task_id", "fingerprint", "code", "identity", "parameters", "input_files", "upstream", "seconds", "files",
                               "adopted"})
# What a manifest and an experiment page say of the release that made them, for people: no
# identity holds it (a stage is known by the code it runs: stage_code).
RELEASE = {"paranmt": version("paranmt"), "schemas": sorted(schemas.version_of(schema) for schema in schemas.ALL.values())}
# A stage's running counts reach the console at most this often (every one reaches Luigi's status).
PROGRESS_EVERY = 30.0


def set_aside(final: Path) -> None:
    """Remove a damaged output (its stage's lock is held): renamed first, so no reader finds a
    half-removed directory under the output's name; left-overs of a killed removal go too."""
    for stale in final.parent.glob(f".{final.name}.damaged-*"):
        shutil.rmtree(stale, ignore_errors=True)
    aside = final.with_name(f".{final.name}.damaged-{uuid.uuid4().hex}")
    os.replace(final, aside)
    shutil.rmtree(aside, ignore_errors=True)


def in_workdir(path: str | Path) -> str:
    """How a file records ``path``: relative to the work directory when inside it, so a moved or
    copied work directory keeps working (a reader joins it to the work directory where it is
    now); else as given (a user's file)."""
    workdir = Path(paranmt().workdir)
    with contextlib.suppress(ValueError):
        return str(Path(path).relative_to(workdir))
    return str(path)


class StageTask(WorkDirectoryTask):
    """A stage with an atomic, fingerprinted output directory and a JSON manifest."""

    stage: ClassVar[str]
    # Stages whose build skips work already in the partial directory (e.g. finished shards)
    # keep it across restarts; the others start from an empty one.
    keeps_partial_output: ClassVar[bool] = False
    # A parameter whose value gets its own link beside ``latest`` (``latest-<value>``), for
    # stages whose outputs of several kinds coexist (encoders of several models).
    latest_by: ClassVar[str | None] = None
    # The DirectRunner starts a worker process per this many input rows (pipelines.options): a
    # stage whose rows cost more CPU than a scored pair says fewer.
    rows_per_worker: ClassVar[int] = ROWS_PER_WORKER

    def __init__(self, *args, **kwargs):
        """Luigi's central scheduler knows a stage by what it builds (its fingerprint: inputs by
        their contents), not by the paths its parameters name: runs on several machines that see
        the same inputs at other paths agree on which stage one of them is building, and wait
        for it. A stage whose fingerprint cannot be made yet (a mistake in its parameters or in
        another task's, a missing input) keeps Luigi's id: the mistake is then said in one line
        where Luigi checks the task."""
        super().__init__(*args, **kwargs)
        with contextlib.suppress(Exception):  # whatever it is, it is said where Luigi reports a task's errors
            self.task_id = f"{self.task_family}_{self.fingerprint()}_{work_directory_digest(paranmt().workdir)}"

    def input_files(self) -> list[str]:
        """Local input files whose identity is part of the fingerprint."""
        return []

    def fingerprint(self, known: dict[StageTask, str] | None = None) -> str:
        """This stage's identity (identity()) as a short digest. ``known``: the fingerprints made so
        far in this call, so each stage of the graph is fingerprinted once (the stages share
        upstream stages: without it a corpus stage was fingerprinted once per path to it, and
        DecileSweep's page took minutes)."""
        known = {} if known is None else known
        if self not in known:
            known[self] = hashlib.sha256(json.dumps(self.identity(known), sort_keys=True).encode()).hexdigest()[:12]
        return known[self]

    def identity(self, known: dict[StageTask, str] | None = None) -> dict[str, Any]:
        """What shapes this stage's output, and nothing else: its significant parameters, its input
        files' contents, the fingerprints of the stages it reads, and the code it runs (stage_code:
        the definitions it reaches, by their syntax trees, and the libraries' versions)."""
        return {
            "family": self.task_family,
            "params": self.identifying_parameters(),
            "inputs": [file_fingerprint(path) for path in self.input_files()],
            "upstream": sorted(task.fingerprint(known) for task in self.upstream_stages()),
            "code": stage_code(type(self)).as_record(),
        }

    def identifying_parameters(self) -> dict[str, str]:
        """The significant parameters, those naming files as the contents they name (their names
        as the data records them, and their bytes' digests: corpus.inputs.content_identity), so
        that the same bytes elsewhere (another spelling, mount, machine or installation) build
        nothing again; ``--device auto`` as the device it means here (device_in_use)."""
        parameters = self.to_str_params(only_significant=True)
        if parameters.get("device") == "auto" and (used := self.device_in_use()):
            parameters["device"] = used
        read = None
        for name, parameter in self.get_params():
            if parameters.get(name) and (name in SPELLED_INPUTS or isinstance(parameter, AbsolutePath)):
                read = self.input_files() if read is None else read
                parameters[name] = content_identity(parameters[name], read)
            elif parameters.get(name) and isinstance(parameter, luigi.DictParameter):
                parameters[name] = json.dumps(paths_as_contents(json.loads(parameters[name])), sort_keys=True)
        return parameters

    def device_in_use(self) -> str | None:
        """What ``--device auto`` resolves to for this stage where it runs (cpu or cuda), when it
        is known where the fingerprint is made; None: not known there (or no device). It shapes
        the output (fp16 training, float16 translation): a CPU's output is not a GPU's, so the
        two are known apart, as ``--device cpu`` and ``--device cuda`` are."""
        return None

    @property
    def stage_root(self) -> Path:
        return Path(paranmt().workdir) / self.stage

    @property
    def output_dir(self) -> Path:
        return self.stage_root / self.fingerprint()

    def output(self):
        return luigi.LocalTarget(str(self.output_dir / MANIFEST))

    def complete(self) -> bool:
        """Whether the output exists and holds exactly the files its manifest lists (a damaged
        one is not complete: running the stage rebuilds it); a stage whose parameters are the
        user's mistake is not complete (Luigi would print the traceback of a failed check):
        running it, or reading its requirements, reports the mistake in one line. A stage found
        complete is this run's output, and so are the stages it was built from: ``latest`` is
        pointed at each of them here (Luigi does not look at the requirements of a complete
        task, and announces only some of the tasks it finds complete). An output of release 0.4.0
        made of the same parameters and inputs is found too (workflows.previous_release)."""
        try:
            done = super().complete() and not self.damage()
            done = done or (not self.output_dir.exists() and adopt_previous_release(self))
        except Exception as error:
            if users_mistake(error):
                return False
            raise
        if done:
            for stage in stage_tree([self]):
                if (stage.output_dir / MANIFEST).exists():
                    stage.point_latest_at(stage.output_dir)
        return done

    def damage(self) -> str:
        """'' when the output's files are exactly those of its manifest, else the first problem."""
        try:
            verified_manifest(self.output_dir)
        except DamagedOutput as damaged:
            return damaged.problem
        return ""

    def verified_manifest(self) -> dict[str, Any]:
        """The manifest of this stage's output, for a stage that reads it: DamagedOutput, in one
        line naming the file, when the output is no longer exactly what the stage wrote."""
        return verified_manifest(self.output_dir)

    def committed(self, dataset: str) -> tuple[list[str], int]:
        """The Parquet files of ``dataset`` (a folder of the output) and their rows, as the
        manifest records them: a reader reads those files and accounts for those rows, never
        whatever shards happen to be present."""
        return dataset_of(self.output_dir, dataset, self.verified_manifest())

    def build(self, partial_dir: Path) -> dict[str, Any]:
        """Write the stage's output into ``partial_dir``; return counts for the manifest."""
        raise NotImplementedError

    def check_inputs(self) -> None:
        """Raise InputError, before any work, for an input file that is missing or not a file;
        stages with parameters or inputs of their own to check override it."""
        for path in self.input_files():
            check_input_file(path)

    def deps(self):
        """What Luigi schedules before this stage: its requirements, unless its own inputs or
        parameters are the user's mistake (check_inputs, made from the command's files and
        parameters alone): then nothing, and its run says the mistake in one line before any stage
        has worked (a translation file one line short was said after an hour's ingest)."""
        try:
            self.check_inputs()
        except Exception as error:
            if users_mistake(error):
                return []
            raise
        return super().deps()

    def on_failure(self, exception: BaseException) -> str:
        """The scheduler's explanation: one line for the user's mistakes, a traceback for bugs.
        A stage stopped by Ctrl-C (Beam reports it as its own error) ends the run as Ctrl-C does."""
        if interrupted():
            raise KeyboardInterrupt
        return users_mistake(exception) or super().on_failure(exception)

    def run(self):
        self.check_inputs()
        inputs_before = input_versions(self.input_files())
        for task in self.upstream_stages():
            if problem := task.damage():
                raise damaged(problem)  # damaged since Luigi found it complete: one line, nothing read
        final = self.output_dir
        with self.output_lock():
            found = self.damage() if final.exists() else None
            if found == "":
                log.info("%s: %s was built by another run meanwhile", self.stage, final)
                self.point_latest_at(final)
                return
            if found:
                log.warning("%s: %s; rebuilding %s", self.stage, found, final)
                set_aside(final)
            self._build_into(final, inputs_before)

    def output_lock(self) -> contextlib.AbstractContextManager[None]:
        """The lock on this stage's output (``<workdir>/.locks/``): held while it is built or adopted."""
        locks = Path(paranmt().workdir) / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        final = self.output_dir
        waiting = f"{self.stage}: another run is building {final}; waiting for it"
        return exclusive_lock(locks / f"{self.stage.replace('/', '-')}-{final.name}", waiting)

    def upstream_stages(self) -> list[StageTask]:
        """The stages whose outputs this one reads."""
        return [task for task in flatten(self.requires()) if isinstance(task, StageTask)]

    def manifest_identity(self) -> dict[str, Any]:
        """identity() as the manifest keeps it, the upstream fingerprints by stage (for
        workflows.plan, which says what changed)."""
        return {**self.identity(), "upstream": {task.stage: task.fingerprint() for task in self.upstream_stages()}}

    def _build_into(self, final: Path, inputs_before: dict[str, tuple[int, ...] | None]) -> None:
        partial = partial_dir(final)
        if partial.exists() and not self.keeps_partial_output:
            shutil.rmtree(partial)
        partial.mkdir(parents=True, exist_ok=True)
        started = time.time()
        summary = self.build(partial)
        if clashes := sorted(summary.keys() & MANIFEST_OWN_KEYS):
            raise ValueError(f"{self.stage}: its summary's {clashes} would overwrite the manifest's own keys")
        check_unchanged(self.stage, inputs_before, input_versions(self.input_files()))
        manifest = {
            "stage": self.stage,
            "task_id": self.portable_task_id,
            "fingerprint": final.name,
            "code": RELEASE,
            "identity": self.manifest_identity(),
            "parameters": self.to_str_params(only_significant=True),
            # where this build read them, for people (the fingerprint holds their contents only)
            "input_files": [f"{os.path.realpath(path)}:{file_fingerprint(path)}" for path in self.input_files()],
            "upstream": {task.stage: in_workdir(task.output_dir) for task in self.upstream_stages()},
            "seconds": round(time.time() - started, 3),
            **summary,
            "files": committed_files(partial),
        }
        # whole or absent: a partial output is kept for the next run, and a cut manifest in it would look finished
        write_atomically(partial / MANIFEST, lambda temporary: temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
        os.replace(partial, final)
        self.point_latest_at(final)
        log.info("%s complete: %s", self.stage, final)

    def point_latest_at(self, final: Path) -> None:
        """``latest`` (and ``latest-<value>``) link to ``final``, whatever was there: another
        output, a broken link, nothing, or something put there by hand (moved aside, said); where
        the folder cannot be written, a warning says so and the run goes on."""
        names = [LATEST, *([f"{LATEST}-{getattr(self, self.latest_by)}"] if self.latest_by else [])]
        for name in names:
            link = final.parent / name
            if os.path.islink(link) and os.readlink(link) == final.name:
                continue
            try:
                move_aside_unless_link(link)
                write_atomically(link, lambda temporary: temporary.symlink_to(final.name))
            except OSError as error:  # a read-only copy of a work directory can still be read
                log.warning("%s: %s not pointed at %s: %s", self.stage, link, final.name, error.strerror)

    def runner_for(self, files: list[str]) -> RunPipeline:
        """``run_pipeline`` for pipelines that read the Parquet ``files`` (their rows, from the footers)."""
        return self.sized_runner(file_rows(files))

    def sized_runner(self, rows: int) -> RunPipeline:
        """``run_pipeline`` for pipelines over ``rows`` input rows, for pipeline functions that
        take a runner (a small input runs in process)."""
        return functools.partial(self.run_pipeline, rows=rows)

    def progress(self, message: str, percent: float | None = None, shown: bool = False) -> None:
        """Report progress in Luigi's status message / progress bar, and on the console: the
        stage's first message, its last (``percent`` 100), those ``shown`` and at most one every
        ``PROGRESS_EVERY`` seconds in between, so a long stage does not flood it."""
        self.set_status_message(message)
        if percent is not None:
            self.set_progress_percentage(round(percent, 1))
        now, last = time.monotonic(), getattr(self, "_last_progress_line", None)
        if last is None or shown or percent == 100 or now - last >= PROGRESS_EVERY:
            self._last_progress_line = now
            log.info("%s: %s", self.stage, message)

    def run_pipeline(self, build_pipeline, rows: int | None = None, elements: int | None = None) -> None:
        """Run ``build_pipeline(pipeline)`` on the configured Beam runner and wait for it;
        ``rows``, the input's size when known, lets the DirectRunner run a small input in process
        (without it, one worker process per core); ``elements``, its units of work when they are
        few and whole (shards), keeps it from starting workers that would have none."""
        config = paranmt()
        options = pipeline_options(config.runner, config.direct_num_workers, config.beam_args, log_level(), rows, config.dask_scheduler,
                                   self.rows_per_worker, elements)
        in_workers = options.get_all_options().get("direct_running_mode") == "multi_processing"
        if in_workers and (unreachable := loopback_problem()):
            raise RunnerUnreachable(unreachable)
        with one_line_if_a_worker_dies() as worker_died, worker_tracebacks_dropped(worker_died) if in_workers else contextlib.nullcontext(), \
                beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline)


@functools.cache
def stage_code(task_class: type[StageTask]) -> CodeIdentity:
    """The code a stage of ``task_class`` runs (workflows.code_identity): followed from its class,
    not into another stage's class (its output is known by its own identity)."""
    def another_stage(found: object) -> bool:
        return isinstance(found, type) and issubclass(found, StageTask) and found not in task_class.__mro__

    return code_identity(task_class.__module__, task_class.__qualname__, another_stage)


def stage_tree(roots: Iterable[luigi.Task]) -> list[StageTask]:
    """The stages ``roots`` are and depend on, each once."""
    found: dict[str, StageTask] = {}
    pending = list(roots)
    while pending:
        task = pending.pop()
        if isinstance(task, StageTask) and task.task_id not in found:
            found[task.task_id] = task
            pending.extend(flatten(task.requires()))
    return list(found.values())


def move_aside_unless_link(path: Path) -> None:
    """A file or directory where a ``latest`` link belongs (put there by hand or by a copy that
    followed links) is renamed to ``<name>.moved-<time>-<random>``, and said: nothing is lost."""
    if os.path.lexists(path) and not os.path.islink(path):
        aside = path.with_name(f"{path.name}.moved-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}")
        with contextlib.suppress(FileNotFoundError):  # another run moved it first
            os.rename(path, aside)
            log.warning("%s was not the link to the stage's output: moved to %s", path, aside)
