"""Progress of a running Beam pipeline as its driver sees it.

A runner says nothing about a pipeline until it ends, so the driver counts what the workers
have finished so far, every few seconds while the pipeline runs: the complete parts of the
dataset it writes, or the marks its workers leave in a folder (``Marks``) where nothing is
written until the end. Both live on the file system that the workers and the driver share, so
this works on any runner. The count, its rate and the time left at that rate go to a report
callback (a stage's ``progress``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipelines.io import dataset_files

Report = Callable[[str, float], None]
# How often a running pipeline's progress is counted (each count lists a folder or two).
POLL_SECONDS = 10.0
# Runs ``build(pipeline)`` to the end (``workflows.base.StageTask.run_pipeline``).
RunPipeline = Callable[[Callable[[beam.Pipeline], object]], None]


@dataclass(frozen=True)
class Tally:
    """How far a running pipeline is: ``count()`` units done out of ``total`` (a number, or a
    callable for a total that grows while the pipeline reads its input), shown as
    ``<done>/<total> <what> (<rate> <unit>/s, <time> left)``; once every unit is done, the
    pipeline may still work for minutes (a search, a combine): then ``<what> (<rate> <unit>/s);
    now <then>, <time> so far``."""

    count: Callable[[], int]
    total: int | Callable[[], int]
    what: str
    unit: str
    then: str = "the pipeline's last steps"

    def total_now(self) -> int:
        return self.total() if callable(self.total) else self.total


@contextmanager
def progress_while_running(tally: Tally, report: Report, already: int = 0, every: float = POLL_SECONDS) -> Iterator[None]:
    """While the body (the pipeline) runs, ``report(message, percent)`` every ``every`` seconds
    with the tally, the rate since entry (``already``: units done before it, by an earlier,
    interrupted run) and the time left at that rate. The percent stays below 100: a pipeline
    whose units are all done may still be combining, and 100 is the stage's own last word."""
    stop, started = threading.Event(), time.time()

    def poll() -> None:
        all_done_at, final_rate = None, 0.0
        while not stop.wait(every):
            done, total, now = tally.count(), tally.total_now(), time.time()
            rate = (done - already) / (now - started)
            if done >= total > 0:
                if all_done_at is None:
                    all_done_at, final_rate = now, rate
                report(f"{done}/{total} {tally.what} ({final_rate:.1f} {tally.unit}/s); now {tally.then}, "
                       f"{(now - all_done_at) / 60:.1f} min so far", 99.9)
                continue
            all_done_at = None
            left = f"{max(total - done, 0) / rate / 60:.1f} min left" if rate > 0 else "time left unknown"
            report(f"{done}/{total} {tally.what} ({rate:.1f} {tally.unit}/s, {left})", min(99.9, 100 * done / max(total, 1)))

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def run_reporting(run_pipeline: RunPipeline, build: Callable[[beam.Pipeline], object], tally: Tally, report: Report | None, already: int = 0) -> None:
    """``run_pipeline(build)``, reporting ``tally`` while it runs when there is a ``report``
    (``already``: units an earlier, interrupted run finished, left out of the rate)."""
    # POLL_SECONDS read now, not when the default was bound: tests poll faster
    with progress_while_running(tally, report, already, every=POLL_SECONDS) if report else nullcontext():
        run_pipeline(build)


def _rows_if_complete(path: str) -> int:
    try:
        with FileSystems.open(path) as handle:
            return pq.ParquetFile(handle).metadata.num_rows
    except (OSError, pa.ArrowInvalid):  # still being written: no footer yet
        return 0


def complete_rows(dataset_dir: str) -> int:
    """Rows in the parts of a dataset that are written to the end (a part being written counts 0)."""
    return sum(_rows_if_complete(path) for path in dataset_files(dataset_dir))


@dataclass(frozen=True)
class Marks:
    """Work the workers finished, as empty files ``<kind>-<random>.<amount>`` in ``folder``
    (none without a folder: ``UNWATCHED``). A retried bundle marks its work again: the marks
    count progress, never results."""

    folder: str

    def add(self, kind: str, amount: int) -> None:
        if not self.folder:
            return
        with FileSystems.create(FileSystems.join(self.folder, f"{kind}-{uuid.uuid4().hex}.{amount}")):
            pass

    def count(self, kind: str) -> int:
        found = FileSystems.match([FileSystems.join(self.folder, f"{kind}-*")])[0].metadata_list
        return sum(int(meta.path.rsplit(".", 1)[1]) for meta in found)

    def counter(self, kind: str) -> Callable[[], int]:
        return lambda: self.count(kind)

    def remove(self) -> None:
        if FileSystems.exists(self.folder):
            FileSystems.delete([self.folder])


UNWATCHED = Marks("")


@contextmanager
def marking(folder: str) -> Iterator[Marks]:
    """Marks in ``folder`` for the body's pipelines, removed when the body ends (and before it
    starts: a killed run's marks would count twice)."""
    marks = Marks(folder)
    marks.remove()
    try:
        yield marks
    finally:
        marks.remove()
