"""One GPU machine's few minutes: the real corpus, a model a CPU can reuse, and the GPU's figures.

``python -m benchmarks gpu_run --data ../shared/data --minutes 7 --out DIR [--tiny]``

Steps, each with a share of ``--minutes`` (``SHARES``); a step ends at the end of its share and
the shares of the steps before it (time a step leaves over goes to the next), and the steps
that can stop early do so and still write what they have:

 1. data: csen-more as line-aligned files (``corpus.csen_more``, newstest2021 held out),
    IngestBitext, an 8k joint TrainSentencePiece;
 2. train: TrainTranslator, preset ``compact`` (the recipe that learned to translate csen-more in
    two hours of two CPU cores: docs/2026-12-03-cpu-translator.md) in fp16, stopped by fairseq's
    ``--stop-time-hours`` at the end of the share (it validates and saves a checkpoint when it
    stops; every validation, every 500 updates, also runs the collapse watch, so a model that
    says one sentence for every source is in the log before anything is back-translated);
 3. export: the checkpoint in float16 without optimizer state, in parts of at most 16 MiB, its
    dictionaries and sentencepiece model into DIR (``models.nmt.export``);
 4. evaluate: EvaluateTranslator (fairseq engine) on newstest2021, the CUNI system beside it;
 5. backtranslate: the fairseq engine in process on a seeded sample of the sentences (its rate and
    peak GPU memory: the baseline), then ``BackTranslate --translator DIR --engine fairseq`` (the
    route a CPU machine takes with DIR) on every distinct real Czech sentence there is (csen-more's
    and newstest2021's 2,000, 99,971), or, if the engine's rate says they do not all fit in the
    share, on a seeded sample of as many as fit (the report says how many); the stage's rate
    beside the engine's, and the GPU-hours for 51.4M sentences at the stage's;
 6. corpus: ScorePairs and AssignDeciles (BuildParaNMT on the same inputs), the corpus into DIR
    as Parquet;
 7. encoders: Word Avg (defaults) and BiLSTM Avg training pairs/s on the GPU, beside the CPU.

DIR receives at most 8 files of at most 16 MiB, 64 MiB in all: report.md (every figure, the
machine, each step's share and time; written by ``benchmarks.gpu_report``),
``checkpoint.pt.part-NN``, ``dict.cs.txt``, ``dict.en.txt``, ``spm.model`` and ``corpus.parquet``.
``--tiny`` runs every step at toy size (the embedded demo corpus, or 2,000 csen-more pairs with
``--data``; the ``tiny`` preset; 4 test sentences) on the CPU in about two minutes; with
``--preset compact`` its 60 updates are the real call's model and schedule (the rehearsal's way).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import json
import math
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import luigi
import psutil

from benchmarks.common import markdown_table, measure_in_subprocess
from benchmarks.gpu_report import report
from corpus import translation_check

# The files of newstest2021 the call reads, in the shared data folder (besides csen-more, whose sets
# corpus.csen_more names): the test set, its baseline system, and its en-cs half's sentences, which
# are back-translated too; corpus.csen_more holds out both references. scripts/pack_gpu_data.sh
# packs these, so what travels is what the call reads.
NEWSTEST2021 = {name: f"csen/wmt21/newstest2021.{file}" for name, file in (
    ("source", "cs-en.src.cs"), ("reference", "cs-en.ref.A.en"), ("reference_b", "cs-en.ref.B.en"),
    ("baseline", "cs-en.hyp.CUNI-Transformer2018.en"), ("more_czech", "en-cs.ref.A.cs"), ("more_english", "en-cs.src.en"))}
FILE_LIMIT, FILES_LIMIT, TOTAL_LIMIT = 16 * 2**20, 8, 64 * 2**20
# Shares of the budget, in order. The training gets half (the H200's first call trained 167 s of
# 9.5 minutes, and its model had not learned); the back-translation, its engine's measurement
# folded in, enough for the 99,971 sentences at ≈ 1,000 sentences/s in a 9.5-minute call (the
# H200 measured 634 for the engine at 2,218 sentences: a sample of what fits is taken then); the
# steps that cannot stop early are sized by what they took in the first call and at toy size.
SHARES = {"data": 0.08, "train": 0.50, "export": 0.01, "evaluate": 0.05, "backtranslate": 0.28, "corpus": 0.05, "encoders": 0.03}
# fairseq-train's start (imports, loading data-bin, building the model) and its last validation
# and checkpoint are outside its --stop-time-hours clock.
TRAIN_OVERHEAD_S = {"gpu": 25.0, "tiny": 12.0}
# Kept from the steps at the budget's end: the last report and the check of the files.
RESERVE_S = 5.0
# The BackTranslate stage's cost besides decoding at the engine's rate (worker start-up, the model's
# load, reading and writing, the translation check): on the H200, 2,218 sentences took the stage
# 52 s, 30 s of them translating.
STAGE_FIXED_S = 25.0
# On a GPU, large decoder batches keep it busy (the beam search is bound by Python's steps, not
# by arithmetic): 64k tokens × beam 12 is ~2,600 sentences of 25 pieces, a few GB of logits. The
# plan's own choice for the H200, 4x the product's default (models.nmt.translate.GPU_BATCH_TOKENS).
PLAN_BATCH_TOKENS, PLAN_CHUNK_ROWS = 65_536, 8192


@dataclass(frozen=True)
class Sizes:
    """What differs between the real run and the toy run."""

    preset: str
    vocab_size: int
    shards: int
    test_sentences: int  # of newstest2021, evaluated (0: every one)
    engine_sentences: int  # the engine's baseline measurement, in process
    batch_tokens: int
    chunk_rows: int
    encoder_steps: dict[str, int]  # updates timed after the first pool of `encoder_megabatch`
    encoder_megabatch: int = 40  # the default M
    max_update: int = 0  # besides the time limit (0: none)
    min_train_seconds: float = 5.0  # fairseq's clock, however late the training starts
    backtranslate_range: tuple[int, int] = (2000, 0)  # sentences at least, at most (0: as many as fit)
    accept_translations: str = ""  # the translation check's figures accepted (BackTranslate --accept-translations)
    accept_collapse: bool = False  # a model the collapse watch finds broken kept (TrainTranslator --accept-collapse)


REAL = Sizes("compact", 8000, 16, 0, 5000, PLAN_BATCH_TOKENS, PLAN_CHUNK_ROWS, {"word_avg": 800, "bilstm_avg": 200, "word_avg-cpu": 80})
# Toy size, every step real but as short as it can be (the test suite runs it): a tiny model
# trained for 60 updates (fairseq's clock allows 90 s for them on a busy machine: a model this
# short-trained decodes to the length limit, one to two seconds per sentence at beam 12 on a busy
# CPU, so the decoding steps get few sentences), 4 test sentences, a sample of 20 of the 400 demo
# sentences back-translated (so the sample path runs too; 2 pairs per decile), M = 1 and 2 timed
# Word Avg updates for the encoders. A model trained for 60 updates does not translate, so the
# rehearsal accepts every figure of the translation check (corpus.translation_check), which the
# real call enforces: there a translator that says one sentence stops the backtranslate step (and
# one the collapse watch finds broken at its kept checkpoint, the train step).
TINY = Sizes("tiny", 4000, 2, 4, 4, 0, 4096, {"word_avg": 2, "bilstm_avg": 1, "word_avg-cpu": 2}, 1, 60, 90.0, (20, 20),
             ",".join(translation_check.NAMES), accept_collapse=True)


class BudgetSpent(KeyboardInterrupt):
    """The budget's end came during a step: raised in the main thread by the alarm, as Ctrl-C
    would be, so that Luigi, Beam and the trainers stop the way they stop for Ctrl-C."""


class Clock:
    """The budget, counted from ``started`` (the call's start: install and unpacking included),
    and the steps' deadlines: each step ends at the end of its share and those before it, the
    shares taken of what is left when gpu_run starts, less ``RESERVE_S`` for the last report."""

    def __init__(self, minutes: float, started: float | None = None):
        self.budget = minutes * 60
        self.started = time.time() if started is None else started
        self.setup = time.time() - self.started  # spent before gpu_run (gpu_machine.sh: install, unpacking)
        self.took: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.time() - self.started

    def end(self) -> float:
        """Seconds from the start by which the last step must have ended."""
        return self.budget - RESERVE_S

    def deadline(self, step: str) -> float:
        """Seconds from the start at which ``step`` must end."""
        names = list(SHARES)
        return self.setup + (self.end() - self.setup) * sum(SHARES[name] for name in names[: names.index(step) + 1])

    def left(self, step: str) -> float:
        return self.deadline(step) - self.elapsed()

    def share(self, step: str) -> float:
        return SHARES[step] * (self.end() - self.setup)


class Run:
    """The steps, run in order against the clock, and report.md rewritten as each starts and
    ends, so that a run stopped at any moment leaves the report of what it finished.

    A step that fails is one line in the report and the run goes on with the steps that do not
    need it; at the budget's end the running step is stopped (``BudgetSpent``) and the rest are
    not started."""

    def __init__(self, out: Path, clock: Clock, facts: dict):
        self.out, self.clock, self.facts = out, clock, facts
        self.results: dict[str, object] = {}
        self.status = {step: "not started" for step in SHARES}
        self._in_step = self._spent = False

    def start_alarm(self) -> None:
        """SIGALRM at the budget's end raises BudgetSpent in the step then running."""
        def alarm(signum, frame):
            self._spent = True
            if self._in_step:
                raise BudgetSpent()

        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, max(self.clock.end() - self.clock.elapsed(), 0.001))

    def step(self, name: str, work: Callable[[], object], needs: tuple[str, ...] = ()) -> object | None:
        """``work()``'s result, or None when the step was skipped, failed or stopped."""
        if missing := [need for need in needs if need not in self.results]:
            return self._skip(name, f"skipped: needs {', '.join(missing)}")
        if self._spent or self.clock.elapsed() >= self.clock.end():
            self._spent = True
            return self._skip(name, "not started: the budget was spent")
        print(f"gpu_run: {name} (share {self.clock.share(name):.0f} s, {self.clock.left(name):.0f} s left to its deadline)", flush=True)
        self.status[name] = "running"
        self.write()
        started, running_before = time.time(), descendants()
        try:
            self._in_step = True
            try:
                self.results[name] = work()
            finally:
                self._in_step = False
            self.status[name] = "done"
        except BudgetSpent:
            self.status[name] = "stopped: the budget ended during this step"
            stop_started_since(running_before)
        except Exception as error:  # one line in the report; the steps that do not need this one go on
            self.status[name] = f"failed: {one_line(error)}"
            print(f"gpu_run: {name} failed: {one_line(error)}", flush=True)
        self.clock.took[name] = time.time() - started
        self.write()
        return self.results.get(name)

    def _skip(self, name: str, why: str) -> None:
        self.status[name] = why
        print(f"gpu_run: {name} {why}", flush=True)
        self.write()
        return None

    def finished(self) -> bool:
        return all(status == "done" for status in self.status.values())

    def write(self) -> None:
        """report.md with every section whose figures exist so far, written whole or not at all."""
        partial = self.out / ".report.md.partial"
        partial.write_text(report(self.out, self.facts, self.results, self.steps_table(), self.clock.budget), encoding="utf-8")
        os.replace(partial, self.out / "report.md")

    def steps_table(self) -> str:
        rows = [["setup (before gpu_run: install, unpacking)", "", "", self.clock.setup, "done"]]
        rows += [[step, self.clock.share(step), self.clock.deadline(step), self.clock.took.get(step, float("nan")), self.status[step]]
                 for step in SHARES]
        rows.append(["total", self.clock.budget, self.clock.budget, self.clock.elapsed(), "finished" if self.finished() else "see above"])
        return markdown_table(["step", "share (s)", "deadline (s from start)", "took (s)", "status"], rows)


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and first line, and a failed command's last stderr line."""
    text = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    if isinstance(error, subprocess.CalledProcessError) and (stderr := (error.stderr or "").strip()):
        text += f" ({stderr.splitlines()[-1]})"
    return text[:400]


def descendants() -> set[psutil.Process]:
    """This process's descendants now (psutil's processes are equal by pid and start time, so a
    pid reused later is another process)."""
    return set(psutil.Process().children(recursive=True))


def stop_started_since(before: set[psutil.Process]) -> None:
    """SIGKILL this process's descendants that are not among ``before``, the ones taken as a step
    started: what a step stopped at the budget's end started (a trainer, a Beam worker) ends with
    it, and nothing else does (under pytest, the suite's other children)."""
    for process in descendants() - before:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def write_pairs(pairs: list[tuple[str, str]], folder: Path, name: str) -> str:
    """Line-aligned ``folder/name.cs`` and ``.en``; returns the inputs glob for IngestBitext."""
    folder.mkdir(parents=True, exist_ok=True)
    for column, language in enumerate(("cs", "en")):
        (folder / f"{name}.{language}").write_text("".join(pair[column] + "\n" for pair in pairs), encoding="utf-8")
    return str(folder / "*.cs")


def read_pairs(inputs_glob: str) -> list[tuple[str, str]]:
    """Every pair of line-aligned ``*.cs`` / ``*.en`` files."""
    pairs = []
    for cs in sorted(Path(inputs_glob).parent.glob("*.cs")):
        pairs += zip(cs.read_text(encoding="utf-8").splitlines(), cs.with_suffix(".en").read_text(encoding="utf-8").splitlines(), strict=True)
    return pairs


def sample(pairs: list, count: int, seed: int = 1) -> list:
    """A seeded sample of ``count`` items in their original order (all when there are fewer)."""
    if count >= len(pairs):
        return pairs
    keep = sorted(random.Random(seed).sample(range(len(pairs)), count))
    return [pairs[i] for i in keep]


def demo_pairs() -> list[tuple[str, str]]:
    from workflows.ingest import demo_corpus

    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        return [tuple(line.rstrip("\n").split("\t")[2:4]) for line in handle]


def prepare_data(data: Path | None, tiny: bool, workdir: Path) -> tuple[str, dict[str, str], str]:
    """(inputs glob, the test files, a description): csen-more, or at toy size 2,000 of its pairs
    or, without ``data``, the embedded demo corpus (tested on its own last pairs). The test
    files: EvaluateTranslator's ``source``, ``reference`` and ``baseline``; with ``data``,
    ``more``, the inputs glob of newstest2021's other Czech sentences (its en-cs half's
    references with their English sources), back-translated with the training pairs'."""
    from corpus.csen_more import prepare

    tests = workdir / "tests"
    tests.mkdir(parents=True, exist_ok=True)

    def write(name: str, lines: list[str]) -> str:
        (tests / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return str(tests / name)

    if data is None:
        pairs = demo_pairs()
        test = pairs[-TINY.test_sentences:]
        files = {"source": write("source.cs", [cs for cs, _ in test]), "reference": write("reference.en", [en for _, en in test]), "baseline": ""}
        return (write_pairs(pairs, workdir / "inputs", "demo"), files,
                f"the embedded demo corpus ({len(pairs)} pairs; tested on its own last {len(test)})")
    counts = prepare(data, workdir / "csen-more", report=lambda line: None)
    newstest2021 = {name: (data / path).read_text(encoding="utf-8").splitlines() for name, path in NEWSTEST2021.items()}
    count = (TINY if tiny else REAL).test_sentences or None
    files = {name: write(Path(NEWSTEST2021[name]).name, newstest2021[name][:count]) for name in ("source", "reference", "baseline")}
    newstest = [*zip(newstest2021["source"], newstest2021["reference"], strict=True),
                *zip(newstest2021["more_czech"], newstest2021["more_english"], strict=True)]
    files["more"] = write_pairs(newstest[:count], workdir / "newstest2021", "newstest2021")
    if tiny:
        inputs = write_pairs(sample(read_pairs(str(workdir / "csen-more" / "*.cs")), 2000), workdir / "inputs", "csen-more-sample")
        return inputs, files, f"2,000 csen-more pairs (seeded sample of {counts['pairs']:,})"
    description = (f"csen-more: {counts['pairs']:,} pairs ({counts['held_out_overlaps']} held-out overlaps and "
                   f"{counts['duplicates']:,} duplicates dropped)")
    return str(workdir / "csen-more" / "*.cs"), files, description


def data_step(data: Path | None, tiny: bool, workdir: Path) -> tuple[str, dict[str, str], str]:
    """:func:`prepare_data`, then IngestBitext and TrainSentencePiece on it."""
    from workflows.nmt import TrainSentencePiece

    inputs, files, description = prepare_data(data, tiny, workdir)
    build([TrainSentencePiece(inputs=inputs)])
    return inputs, files, description


@functools.cache
def stage_failures() -> list[str]:
    """What the stages that fail in this process say, a line each (Luigi's FAILURE event, watched
    from the first call on)."""
    import luigi

    failures: list[str] = []
    luigi.Task.event_handler(luigi.Event.FAILURE)(lambda task, error: failures.append(f"{task.task_family}: {one_line(error)}"))
    return failures


def build(tasks: list) -> None:
    """Build ``tasks`` (and what they need) with a local scheduler; a failure is a RuntimeError
    naming each stage that failed and its error's first line: the line report.md shows."""
    import luigi

    failures = stage_failures()
    failures.clear()
    if not luigi.build(tasks, local_scheduler=True, log_level="WARNING"):
        raise RuntimeError("; ".join(failures) or f"{', '.join(task.task_family for task in tasks)} failed (Luigi's log above says why)")


def configure(workdir: Path, sizes: Sizes) -> None:
    """The stages' settings for this run (as luigi.cfg sections would set them)."""
    import luigi

    config = luigi.configuration.get_config()
    for section, option, value in (("paranmt", "workdir", workdir), ("IngestBitext", "num_shards", sizes.shards),
                                   ("TrainSentencePiece", "vocab_size", sizes.vocab_size),
                                   ("BackTranslate", "batch_tokens", sizes.batch_tokens), ("BackTranslate", "chunk_rows", sizes.chunk_rows)):
        if not config.has_section(section):
            config.add_section(section)
        config.set(section, option, str(value))


def train(inputs: str, sizes: Sizes, seconds: float, tiny: bool) -> dict:
    """TrainTranslator stopped after ``seconds`` in all (its start and last save included): the
    task and :func:`training_summary`."""
    from workflows.nmt import TrainTranslator

    stop_hours = max(seconds - TRAIN_OVERHEAD_S["tiny" if tiny else "gpu"], sizes.min_train_seconds) / 3600
    task = TrainTranslator(inputs=inputs, preset=sizes.preset, valid_size=2000, max_update=sizes.max_update,
                           fairseq_args=f"--stop-time-hours {stop_hours:.6f}", accept_collapse=sizes.accept_collapse)
    build([task])
    return {"task": task, "summary": training_summary(task)}


def training_summary(task) -> dict:
    """The kept checkpoint's shape, weights, updates, epoch, validation loss and fairseq's
    training time (its extra state), and the collapse watch's records (the stage's manifest)."""
    import torch

    from corpus.outputs import read_manifest
    from models.nmt.export import tied_again
    from models.nmt.model import NmtModel

    state = torch.load(NmtModel.load(task.output_dir).checkpoint, map_location="cpu", weights_only=False, mmap=True)
    config, extra = state["cfg"]["model"], state["extra_state"]
    manifest = read_manifest(task.output_dir)
    return {"arch": f"{config.encoder_layers}+{config.decoder_layers} layers, width {config.encoder_embed_dim}",
            "parameters": sum({id(value): value.numel() for value in tied_again(state["model"]).values()}.values()),
            "updates": state["optimizer_history"][-1]["num_updates"], "epoch": extra["train_iterator"]["epoch"],
            "valid_loss": extra.get("val_loss"), "training_seconds": extra.get("previous_training_time", 0.0),
            "watch": manifest.get("watch", []), "watch_examples": manifest.get("watch_examples", [])}


def evaluate(inputs: str, out: Path, files: dict[str, str]) -> dict:
    from workflows.nmt import EvaluateTranslator

    task = EvaluateTranslator(inputs=inputs, translator=str(out), engine="fairseq",
                              **{name: files[name] for name in ("source", "reference", "baseline")})
    build([task])
    return json.loads((task.output_dir / "_SUCCESS").read_text())


def engine_rate(model_dir: Path, source: str, sizes: Sizes, device: str) -> dict:
    """The fairseq engine in process (benchmarks.backtranslate's row, a fresh process) on the
    first ``sizes.engine_sentences`` lines of ``source``: sentences, seconds, peak GPU MiB."""
    return measure_in_subprocess("benchmarks.backtranslate", "--measure", "fairseq", "--model", str(model_dir), "--source", source,
                                 "--sentences", str(sizes.engine_sentences), "--beam", "12", "--batch-tokens", str(sizes.batch_tokens),
                                 "--device", device)


def sentences_that_fit(engine: dict | None, seconds: float, sizes: Sizes) -> int:
    """How many sentences the stage translates in ``seconds``: the in-process engine's rate
    after the stage's fixed cost (STAGE_FIXED_S); at least ``sizes.backtranslate_range[0]``, so
    the later steps have a corpus however late it is (only that many when the engine's rate was
    not measured)."""
    least, most = sizes.backtranslate_range
    if not engine:
        return least
    fit = max(least, int(0.9 * (seconds - STAGE_FIXED_S) * engine["sentences"] / engine["seconds"]))
    return min(fit, most) if most else fit


def backtranslate(inputs: list[str], out: Path, workdir: Path, sizes: Sizes, device: str, seconds_left: Callable[[], float]) -> dict:
    """The engine's rate in process on a seeded sample of the pairs of ``inputs`` (globs), then
    BackTranslate with the exported model on every pair, or on a seeded sample of as many as
    that rate says fit in ``seconds_left()``: the inputs translated, how many of all, the
    engine's and the stage's figures and the translation check's."""
    from workflows.backtranslate import BackTranslate
    from workflows.nmt import TrainTranslator

    pairs = [pair for glob in inputs for pair in read_pairs(glob)]
    measured = workdir / "engine-sample.cs"
    measured.write_text("".join(f"{cs}\n" for cs, _ in sample(pairs, sizes.engine_sentences, seed=2)), encoding="utf-8")
    model = TrainTranslator(inputs=inputs[0], model_dir=str(out))  # the exported model, as EvaluateTranslator took it
    build([model])
    engine = engine_rate(model.output_dir, str(measured), sizes, device)
    started = time.time()
    fit = min(sentences_that_fit(engine, seconds_left(), sizes), len(pairs))
    translated = write_pairs(sample(pairs, fit), workdir / f"backtranslate-{fit}", "sentences")
    task = BackTranslate(inputs=translated, translator=str(out), engine="fairseq")
    build([task])
    manifest = json.loads((task.output_dir / "_SUCCESS").read_text())
    return {"inputs": translated, "translated": fit, "of": len(pairs), "seconds": time.time() - started, "engine": engine,
            "rate": manifest["translated_this_run"] / manifest["seconds"], "translation_check": manifest["translation_check"]}


def corpus(inputs: str, out: Path) -> dict:
    """ScorePairs and AssignDeciles on the back-translated pairs; the corpus into DIR as Parquet."""
    from workflows.build import BuildParaNMT

    task = BuildParaNMT(inputs=inputs, translator=str(out), engine="fairseq")
    build([task])
    summary = json.loads((task.requires().output_dir / "summary.json").read_text())
    summary["files"] = [path.name for path in write_parquet_parts(task.requires().corpus_dir(), out, "corpus")]
    return summary


def write_parquet_parts(dataset_dir: Path, out: Path, stem: str) -> list[Path]:
    """The hive-partitioned dataset as ``stem.parquet`` (zstd), or as ``stem.part-NN.parquet``
    slices of its rows where one file would exceed FILE_LIMIT."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = ds.dataset(str(dataset_dir), format="parquet", partitioning="hive").to_table()
    table = table.sort_by("id")
    whole = out / f"{stem}.parquet"
    pq.write_table(table, whole, compression="zstd")
    parts = math.ceil(whole.stat().st_size / (0.9 * FILE_LIMIT))
    if parts == 1:
        return [whole]
    whole.unlink()
    step = math.ceil(table.num_rows / parts)
    written = []
    for number, start in enumerate(range(0, table.num_rows, step)):
        written.append(out / f"{stem}.part-{number:02d}.parquet")
        pq.write_table(table.slice(start, step), written[-1], compression="zstd")
    return written


def encoder_speed(corpus_files: list[Path], workdir: Path, sizes: Sizes, device: str) -> list[list]:
    """Training pairs/s (batch 100, M = 40 as by default; 1 at toy size) of Word Avg 300 and BiLSTM Avg 600 on
    ``device`` and Word Avg on the CPU beside it, on the corpus's (reference, translation) pairs (generated
    pairs when it has fewer than 10,000: 1,000 on the CPU at toy size)."""
    import pyarrow.parquet as pq
    import torch

    from benchmarks.train import generated_pairs, measure_training

    table = pq.read_table(corpus_files[0], columns=["reference", "translation"]) if corpus_files else None
    if table is not None and table.num_rows >= 10_000:
        pairs, source = ((table.column("reference").to_pylist(), table.column("translation").to_pylist()),
                         f"this run's corpus ({table.num_rows:,} pairs)")
    else:
        count = 10_000 if device == "cuda" else 1000
        pairs, source = generated_pairs(count), f"generated pairs ({count:,}; the corpus is smaller)"
    rows = []
    runs = [("Word Avg", "word_avg", 300, device), ("BiLSTM Avg", "bilstm_avg", 600, device)]
    runs += [("Word Avg", "word_avg-cpu", 300, "cpu")] if device != "cpu" else []
    for label, name, dim, on in runs:
        model, steps = name.removesuffix("-cpu"), sizes.encoder_steps[name]
        threads = torch.get_num_threads()
        if on == "cpu":
            torch.set_num_threads(2)
        _, timed, rate = measure_training(pairs, workdir / f"encoder-{name}", model, dim, sizes.encoder_megabatch, steps, on)
        torch.set_num_threads(threads)
        rows.append([f"{label} {dim}, M = {sizes.encoder_megabatch}", on + (" (2 threads)" if on == "cpu" else ""), timed, rate, source])
    return rows


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU run)"


def check_files(out: Path) -> list[str]:
    """What breaks the limits on what may come back (empty when nothing does)."""
    files = sorted(path for path in out.iterdir())
    problems = [f"{len(files)} files (at most {FILES_LIMIT})"] if len(files) > FILES_LIMIT else []
    problems += [f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB (at most 16)" for path in files if path.stat().st_size > FILE_LIMIT]
    total = sum(path.stat().st_size for path in files)
    return problems + ([f"{total / 2**20:.1f} MiB in all (at most 64)"] if total > TOTAL_LIMIT else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the shared data folder (csen-more, csen/wmt21); optional with --tiny")
    parser.add_argument("--minutes", type=float, help="wall-clock budget (default 7; 2 with --tiny), counted from --budget-from")
    parser.add_argument("--budget-from", type=float, help="when the budget started, in seconds since the epoch (`date +%%s`: "
                                                          "gpu_machine.sh's start, install included); default: now")
    parser.add_argument("--out", type=Path, required=True, help="folder for the files that come back (made; must be empty)")
    parser.add_argument("--workdir", type=Path, default=Path("work/gpu-run"), help="the stages' work directory")
    parser.add_argument("--tiny", action="store_true", help="every step at toy size, on the CPU")
    parser.add_argument("--preset", help=f"the translator's preset (models.nmt.fairseq_train.PRESETS; default {REAL.preset}, {TINY.preset} with "
                                         f"--tiny): --tiny --preset {REAL.preset} rehearses the real call's recipe for {TINY.max_update} updates")
    args = parser.parse_args()
    if args.data is None and not args.tiny:
        parser.error("--data is required without --tiny")
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"--out {args.out} is not empty")
    out, workdir = args.out.resolve(), args.workdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sizes = TINY if args.tiny else REAL
    if args.preset:
        from models.nmt.fairseq_train import PRESETS

        if args.preset not in PRESETS:
            parser.error(f"--preset {args.preset} is none of {', '.join(PRESETS)}")
        sizes = replace(sizes, preset=args.preset)
    clock = Clock(args.minutes or (2 if args.tiny else 7), args.budget_from)
    configure(workdir, sizes)
    from corpus.errors import InputError
    from models.nmt.devices import resolve_device
    from models.nmt.export import export_model
    from models.nmt.model import NmtModel

    try:
        device = "cpu" if args.tiny else resolve_device("fairseq", "cuda")
    except InputError as error:
        raise SystemExit(f"gpu_run: {error} (--tiny runs on the CPU)") from None
    run = Run(out, clock, {"tiny": args.tiny, "gpu": gpu_name(), "preset": sizes.preset, "device": device,
                           "batch_tokens": sizes.batch_tokens})
    run.start_alarm()
    if sizes.accept_translations:  # every BackTranslate of the run: the backtranslate step's and the corpus step's
        luigi.configuration.get_config().set("BackTranslate", "accept_translations", sizes.accept_translations)
    data = run.step("data", lambda: data_step(args.data, args.tiny, workdir))
    inputs, test_files = data[:2] if data else (None, None)
    trained = run.step("train", lambda: train(inputs, sizes, clock.left("train"), args.tiny), needs=("data",))
    run.step("export", lambda: [path.name for path in export_model(NmtModel.load(trained["task"].output_dir), out)], needs=("train",))
    run.step("evaluate", lambda: evaluate(inputs, out, test_files), needs=("export",))
    bt = run.step("backtranslate", lambda: backtranslate([inputs, *filter(None, [test_files.get("more")])], out, workdir, sizes, device,
                                                         lambda: clock.left("backtranslate")), needs=("export",))
    summary = run.step("corpus", lambda: corpus(bt["inputs"], out), needs=("backtranslate",))
    run.step("encoders", lambda: encoder_speed([out / name for name in summary["files"]] if summary else [], workdir, sizes, device))
    signal.setitimer(signal.ITIMER_REAL, 0)
    run.write()
    print((out / "report.md").read_text())
    if problems := check_files(out):
        raise SystemExit(f"gpu_run: {out} breaks the limits on what comes back: {'; '.join(problems)}")
    if not run.finished():
        done = sum(status == "done" for status in run.status.values())
        raise SystemExit(f"gpu_run: {done} of {len(SHARES)} steps done; report.md says what stopped the others")


if __name__ == "__main__":
    main()
