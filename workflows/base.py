"""The base of every stage: an atomic output directory with a ``_SUCCESS`` manifest.

A stage writes into ``<workdir>/<stage>/.<fingerprint>.partial`` and renames it to
``<workdir>/<stage>/<fingerprint>`` only when complete, so a killed run leaves nothing that
looks finished and a rerun resumes at the first incomplete stage. The fingerprint hashes the
code version (package and schema versions), the task's significant parameters, its input files (path and
a hash of the contents) and its upstream stages' fingerprints: change any of them and the stage
is recomputed into a new directory, the old result stays. ``<workdir>/<stage>/latest`` points at
the output of the most recent run that built or found it complete. A lock per
output (``<workdir>/.locks/``) makes a second run on the same work directory wait for the first
instead of building the same output beside it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import apache_beam as beam
import luigi
from luigi.task import flatten
from luigi.task_register import Register

import schemas
from corpus.errors import InputError
from corpus.files import LATEST, write_atomically
from corpus.inputs import content_identity
from corpus.outputs import (  # noqa: F401 - read_manifest and MANIFEST: for the stages
    MANIFEST,
    DamagedOutput,
    committed_files,
    content_digest,
    damaged,
    dataset_of,
    file_version,
    partial_dir,
    read_manifest,
    verified_manifest,
)
from pipelines.io import file_rows
from pipelines.options import ROWS_PER_WORKER, pipeline_options
from pipelines.progress import RunPipeline
from pipelines.worker_hangs import WorkerProcessDied, one_line_if_a_worker_dies
from workflows.central_scheduler import WorkDirectoryTask, work_directory_digest
from workflows.config import AbsolutePath, paranmt
from workflows.console import STAGES as log
from workflows.console import interrupted, log_level

# Parameters that name input files as corpus.inputs specifications (comma-separated, globs, ``a::b``).
SPELLED_INPUTS = {"inputs", "files", "pairs", "translations"}
# The keys every manifest has (StageTask._build_into): a stage's summary (what build returns) may
# not use them, or one key would mean two things and one of them would be lost.
MANIFEST_OWN_KEYS = frozenset({"stage", "task_id", "fingerprint", "code", "parameters", "input_files", "upstream", "seconds", "files"})
# Part of every fingerprint: an output built by another release of the code, or with another
# version of a dataset schema, is never reused (bump the package version when outputs change).
# "inputs": how an input is known; "content" (since 0.4: its name as the data records it and its
# bytes, not its path), so outputs of 0.3, which knew inputs by path, are built once again.
CODE_VERSION = {"paranmt": version("paranmt"), "schemas": sorted(schemas.version_of(schema) for schema in schemas.ALL.values()),
                "inputs": "content"}


def users_mistake(error: BaseException | None) -> str:
    """The one line for an error that is the user's mistake ('' for a bug): an InputError (our
    checks), and every error Luigi raises while it reads a parameter's value (a number that is
    not one, a choice not offered, a value out of its range, a parameter unknown or missing),
    named by the parameter it was reading; a central scheduler that does not answer; a Beam
    worker process that died (the out-of-memory killer)."""
    if isinstance(error, InputError | luigi.parameter.ParameterException | WorkerProcessDied):
        return str(error)
    if isinstance(error, luigi.rpc.RPCError):
        return f"{error}: is luigid running there? (--local-scheduler runs without it)"
    if storage := _storage_problem(error):
        return storage
    if isinstance(error, RuntimeError) and (in_worker := worker_mistake(str(error))):
        return in_worker
    if (frames := _luigi_frames(error, "parameter.py")) is not None:
        return f"{_parameter_named(frames)}{error}"
    context = error.__cause__ or error.__context__ if error is not None else None
    if (frames := _luigi_frames(error, "task.py")) is not None and (inner := _luigi_frames(context, "parameter.py")) is not None:
        return f"{_parameter_named(inner) or _parameter_named(frames)}{context}"  # Luigi re-raised it
    return ""


# Errors of the place outputs are written, not of the code: a read-only or full file system, a
# quota, no permission, a file where a folder should be.
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR}


def _storage_problem(error: BaseException | None) -> str:
    """``<path>: <reason>`` for a storage error anywhere in ``error``'s chain (a Beam worker's
    error arrives wrapped in the runner's), naming the work directory when the system names no
    file; '' for anything else."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _STORAGE_ERRNOS:
            return f"{error.filename or paranmt().workdir}: {error.strerror}"
        error = error.__cause__ or error.__context__
    return ""


# The line that ends a traceback: ``name: message``, Beam's ``[while running 'step']`` after it.
_ERROR_LINE = re.compile(r"^(?:RuntimeError: )?([A-Za-z_][\w.]*): (.*?)(?: \[while running '[^']*'\])*$", re.MULTILINE)
_OS_ERROR = re.compile(r"^\[Errno (\d+)\] ([^:]+)(?:: '(.*)')?$")


def _mistake_names(kind: type = InputError) -> set[str]:
    return {kind.__name__}.union(*(_mistake_names(sub) for sub in kind.__subclasses__()))


def worker_mistake(text: str) -> str:
    """The one line for a user's mistake or a storage error that a Beam worker process met,
    from the traceback text the runner passes on (its error arrives as a RuntimeError holding
    the worker's traceback, or in a log record): '' when the text's last error is neither."""
    text = text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')  # a log record's escaped traceback
    for name, message in reversed(_ERROR_LINE.findall(text)):
        if name.rsplit(".", 1)[-1] in _mistake_names():
            return message
        if (system := _OS_ERROR.match(message)) and int(system[1]) in _STORAGE_ERRNOS:
            return f"{system[3] or paranmt().workdir}: {system[2]}"
        if not name.endswith("Error"):
            continue  # a line of the traceback that only looks like an error's
        return ""
    return ""


@contextmanager
def worker_tracebacks_dropped(worker_died: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """DirectRunner worker processes print a failing bundle's traceback on the standard error
    they share with this process, besides sending it to the runner; when its error is the
    user's mistake (``worker_mistake``), or follows the death of a worker process
    (``worker_died``: the run's error says it), Luigi's one line says it, so while the pipeline
    runs standard error goes through a pipe whose reader drops those tracebacks and passes every
    other line on."""
    sys.stderr.flush()
    terminal, (read_end, write_end) = os.dup(2), os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    reader = threading.Thread(target=_pass_on_all_but_mistakes, args=(read_end, terminal, worker_died), daemon=True)
    reader.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)  # the workers have exited: the pipe's last writer is gone
        reader.join(timeout=10)


_CHAINED = (b"During handling of the above exception", b"The above exception was the direct cause")
# Lines that start a block held back with its traceback: Python's own, a thread's, and a Beam
# worker's report that it could not reach the runner's logging service (its traceback follows).
_BLOCK_STARTS = (b"Traceback (most recent call last):", b"Exception in thread ", b"Failed to set up logging handler")


def _pass_on_all_but_mistakes(read_end: int, terminal: int, worker_died: Callable[[], bool]) -> None:
    """Copy lines from ``read_end`` to ``terminal``, leaving out each traceback block (from
    ``Traceback (most recent call last):`` to the blank line after its error, chained ones
    included) whose last error is the user's mistake; after a Ctrl-C, nothing (worker processes
    still importing when it came print their tracebacks interleaved, which no block holds)."""
    block: list[bytes] = []
    with os.fdopen(read_end, "rb") as pipe, os.fdopen(terminal, "wb", buffering=0) as out:
        for line in pipe:
            if interrupted():
                block = []
                continue
            if block and block[-1].strip() == b"" and not line.startswith(_CHAINED) and not block[-2].startswith((b" ", b"\n", *_CHAINED)):
                _said(block, out, worker_died)
                block = []
            if block or line.startswith(_BLOCK_STARTS):
                block.append(line)
            else:
                out.write(line)
        _said(block, out, worker_died)


def _said(block: list[bytes], out, worker_died: Callable[[], bool]) -> None:
    """Pass a traceback block on unless it is a user's mistake, a worker's own report of the
    Ctrl-C that stopped the run (said once, in one line, by workflows.console), or follows the
    death of a worker process."""
    if block and not (interrupted() or worker_died() or worker_mistake(b"".join(block).decode(errors="replace"))):
        out.write(b"".join(block))


def _luigi_frames(error: BaseException | None, module: str) -> list | None:
    """The frames of a ValueError or TypeError raised in Luigi's ``module``, else None."""
    if not isinstance(error, ValueError | TypeError) or error.__traceback__ is None:
        return None
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    return frames if frames[-1].f_code.co_filename.endswith(os.path.join("luigi", module)) else None


def _parameter_named(frames: list) -> str:
    """``--name: `` of the parameter the innermost of Luigi's frames was reading ('' if none)."""
    for frame in reversed(frames):
        names = frame.f_locals
        if isinstance(names.get("param_name"), str):
            return f"--{names['param_name'].replace('_', '-')}: "
        if isinstance(names.get("section"), str) and isinstance(names.get("name"), str):
            return f"--{names['section']}-{names['name'].replace('_', '-')}: "
    return ""


def _task_named_briefly(luigi_line: str) -> str:
    """Luigi's line about a task (``[pid 7] Worker Worker(salt=…) failed    IngestBitext(inputs=…,
    …)``, ``Will not run BackTranslate(…) or any dependencies due to error in deps() method``)
    with each task named by its family alone and no worker: its parameters are hundreds of
    characters the user typed, or did not."""
    families = set(Register._get_reg()) | {"Worker"}
    brief, position = [], 0
    for match in re.finditer(r"\b([A-Z]\w*)\(", luigi_line):
        if match.start() < position or match.group(1) not in families:
            continue
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(luigi_line)):
            depth += {"(": 1, ")": -1}.get(luigi_line[end], 0)
            if depth == 0:
                break
        brief.append(luigi_line[position : match.end() - 1])
        position = end + 1
    brief.append(luigi_line[position:])
    text = re.sub(r"^\[pid \d+\] Worker Worker ", "", "".join(brief).rstrip(":"))
    return " ".join(text.split())


class _UsersMistakesInOneLine(logging.Filter):
    """Luigi logs a failed task, or a failed start or check, with its traceback (attached, or
    written into the message while the error is being handled); the user's mistake is not a
    bug, so it is said in one line, first, with the task Luigi's message names after it.
    Luigi logs an error it re-raises again where it is caught: the mistake is said once. A record
    that asks for the error being handled when there is none (Luigi's retries to reach its
    scheduler) loses the line that would say ``NoneType: None``."""

    def __init__(self):
        super().__init__()
        self._said: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info == (None, None, None):
            record.exc_info = None
        if record.exc_info:
            error = record.exc_info[1]
        else:
            error = sys.exc_info()[1] if "Traceback (most recent call last)" in str(record.msg) else None
        if mistake := users_mistake(error):
            if error is self._said:
                return False
            self._said = error
            record.msg, record.args = f"{mistake} [{_task_named_briefly(record.getMessage().split(chr(10), 1)[0])}]", ()
            record.exc_info, record.exc_text = None, None
        return True


class _UsersMistakesOnceOnly(logging.Filter):
    """Beam logs a failing step's error with its traceback before the runner raises it (a
    worker process's, as text, once per bundle); when it is the user's mistake, Luigi's one
    line (above) says it, so Beam's record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            return not users_mistake(record.exc_info[1])
        message = record.getMessage()
        return not ("Traceback (most recent call last)" in message and worker_mistake(message))


class _SilentAfterCtrlC(logging.Filter):
    """After Ctrl-C, the errors of what it stopped (a Beam step, the task) are not reported: the
    interruption is said once, in one line (workflows.console)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not interrupted()


logging.getLogger("luigi-interface").addFilter(_UsersMistakesInOneLine())
logging.getLogger("apache_beam.runners.common").addFilter(_UsersMistakesOnceOnly())
logging.getLogger("apache_beam.runners.portability.local_job_service").addFilter(_UsersMistakesOnceOnly())
for _logger in ("luigi-interface", "apache_beam.runners.common", "apache_beam.runners.portability.local_job_service"):
    logging.getLogger(_logger).addFilter(_SilentAfterCtrlC())
# A stage's running counts reach the console at most this often (every one reaches Luigi's status).
PROGRESS_EVERY = 30.0


def file_fingerprint(path: str) -> str:
    """Identity of an input file: its size and a hash of its contents, not its path (the same
    bytes under another mount, on another machine, in another installation are the same input),
    so an edit is never mistaken for the old file, even one of the same size whose modification
    time was put back (``cp -p``, ``rsync -t``, ``tar x``, ``curl -R``). The hash is computed once
    per version of the file (``corpus.outputs.content_digest``). A missing file is reported by
    ``StageTask.run`` in one line, not here (Luigi would print a traceback for an error while it
    checks whether a task is complete)."""
    real = os.path.realpath(path)  # one file under any of its names (``..``, a linked folder)
    try:
        version = file_version(real)
    except FileNotFoundError:
        return "missing"
    if not os.path.isfile(real):  # refused in one line by check_input_file when the task runs
        return "not-a-file"
    return f"{version[2]}:{content_digest(real, *version)}"


@contextmanager
def exclusive_lock(path: Path, waiting_message: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path``, logging ``waiting_message`` and waiting while another
    process holds it, so two runs on one work directory never build the same output. The
    operating system releases the lock when its process dies, so a killed run blocks nothing."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning(waiting_message)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def check_input_file(path: str) -> None:
    """InputError naming ``path`` unless it is an existing regular file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise InputError(f"{path} is a directory or a special file, expected a file")


def input_versions(paths: list[str]) -> dict[str, tuple[int, ...] | None]:
    """Each input file's version (``corpus.outputs.file_version``; None when it is gone)."""
    versions: dict[str, tuple[int, ...] | None] = {}
    for path in paths:
        try:
            versions[path] = file_version(path)
        except OSError:
            versions[path] = None
    return versions


def check_unchanged(stage: str, before: dict[str, tuple[int, ...] | None], after: dict[str, tuple[int, ...] | None]) -> None:
    """InputError naming the first input that changed, appeared or vanished while the stage
    read it: its output would hold the old file's rows under the new file's size and hash."""
    for path in sorted(before.keys() | after.keys()):
        if before.get(path) != after.get(path):
            how = "appeared" if path not in before else "was removed" if after.get(path) is None else "changed"
            raise InputError(f"{stage}: input {path} {how} while the stage read it; nothing was committed: "
                             "run again once it no longer changes")


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


@functools.cache
def path_parameter_names() -> frozenset[str]:
    """Names of the parameters that name files, of every task: the inputs' and every AbsolutePath."""
    names = set(SPELLED_INPUTS)
    for task_class in Register._reg:
        names.update(name for name, parameter in task_class.get_params() if isinstance(parameter, AbsolutePath))
    return frozenset(names)


def paths_as_contents(value: Any) -> Any:
    """A dictionary parameter's value (another task's parameters: ``nmt``, a DataSourceComparison
    source) with each file-naming parameter in it as the contents it names (content_identity)."""
    if isinstance(value, dict):
        return {key: content_identity(item) if key in path_parameter_names() and isinstance(item, str) and item else paths_as_contents(item)
                for key, item in value.items()}
    return value


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
        """This stage's identity: its code, parameters, input files' contents and the fingerprints
        of the stages it reads. ``known``: the fingerprints made so far in this call, so each stage
        of the graph is fingerprinted once (the stages share upstream stages: without it a corpus
        stage was fingerprinted once per path to it, and DecileSweep's page took minutes)."""
        known = {} if known is None else known
        if self not in known:
            payload = {
                "code": CODE_VERSION,
                "family": self.task_family,
                "params": self.identifying_parameters(),
                "inputs": [file_fingerprint(path) for path in self.input_files()],
                "upstream": sorted(task.fingerprint(known) for task in flatten(self.requires()) if isinstance(task, StageTask)),
            }
            known[self] = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]
        return known[self]

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
        task, and announces only some of the tasks it finds complete)."""
        try:
            done = super().complete() and not self.damage()
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
        for task in flatten(self.requires()):
            if isinstance(task, StageTask) and (problem := task.damage()):
                raise damaged(problem)  # damaged since Luigi found it complete: one line, nothing read
        final = self.output_dir
        locks = Path(paranmt().workdir) / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        lock = locks / f"{self.stage.replace('/', '-')}-{final.name}"
        with exclusive_lock(lock, f"{self.stage}: another run is building {final}; waiting for it"):
            found = self.damage() if final.exists() else None
            if found == "":
                log.info("%s: %s was built by another run meanwhile", self.stage, final)
                self.point_latest_at(final)
                return
            if found:
                log.warning("%s: %s; rebuilding %s", self.stage, found, final)
                set_aside(final)
            self._build_into(final, inputs_before)

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
            "code": CODE_VERSION,
            "parameters": self.to_str_params(only_significant=True),
            # where this build read them, for people (the fingerprint holds their contents only)
            "input_files": [f"{os.path.realpath(path)}:{file_fingerprint(path)}" for path in self.input_files()],
            "upstream": {task.stage: in_workdir(task.output_dir) for task in flatten(self.requires()) if isinstance(task, StageTask)},
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
        with one_line_if_a_worker_dies() as worker_died, worker_tracebacks_dropped(worker_died) if in_workers else contextlib.nullcontext(), \
                beam.Pipeline(options=options) as pipeline:
            build_pipeline(pipeline)


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
