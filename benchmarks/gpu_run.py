"""One GPU machine's few minutes: the real corpus, a model a CPU can reuse, and the GPU's figures.

``python -m benchmarks gpu_run --data ../shared/data --minutes 7 --out DIR [--tiny]``

Steps, each with a share of ``--minutes`` (``SHARES``); a step ends at the end of its share and
the shares of the steps before it (time a step leaves over goes to the next), and the steps
that can stop early do so and still write what they have:

 1. data: csen-more as line-aligned files (``corpus.csen_more``, newstest2021 held out),
    IngestBitext, a 16k joint TrainSentencePiece;
 2. train: TrainTranslator, preset ``fast`` in fp16, stopped by fairseq's ``--stop-time-hours``
    at the end of the share (it validates and saves a checkpoint when it stops);
 3. export: the checkpoint in float16 without optimizer state, in parts of at most 16 MiB, its
    dictionaries and sentencepiece model into DIR (``models.nmt.export``);
 4. evaluate: EvaluateTranslator (fairseq engine) on newstest2021, the CUNI system beside it;
 5. speed: ``benchmarks.backtranslate`` on 2,000 newstest2021 Czech sentences (the cs-en sources and
    the en-cs references), beam 12: fairseq-generate
    (the baseline), the fairseq engine in process (peak GPU memory), the BackTranslate stage;
 6. backtranslate: ``BackTranslate --model-dir DIR --engine fairseq`` (the route a CPU machine
    takes with DIR) on every Czech sentence of the corpus, or, if the rate measured in step 5
    says they do not all fit in the share, on a seeded sample of as many as fit (the report
    says how many);
 7. corpus: ScorePairs and AssignDeciles (BuildParaNMT on the same inputs), the corpus into DIR
    as Parquet;
 8. encoders: Word Avg (defaults) and BiLSTM Avg training pairs/s on the GPU, beside the CPU.

DIR receives at most 8 files of at most 16 MiB, 64 MiB in all: report.md (every figure, the
machine, each step's share and time), ``checkpoint.pt.part-NN``, ``dict.cs.txt``, ``dict.en.txt``,
``spm.model`` and ``corpus.parquet``. ``--tiny`` runs every step at toy size (the embedded demo
corpus, or 2,000 csen-more pairs with ``--data``; the ``tiny`` preset; 4 test sentences) on the
CPU in about two minutes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.backtranslate import MODES, PAPER_GPU_HOURS, PAPER_SENTENCES
from benchmarks.common import machine, markdown_table, measure_in_subprocess

FILE_LIMIT, FILES_LIMIT, TOTAL_LIMIT = 16 * 2**20, 8, 64 * 2**20
# Shares of the budget, in order. The training gets the most; the back-translation enough for
# every ≈98k csen-more sentence at ≥ 1,500 sentences/s; the steps that cannot stop early are
# sized by what they took on the CPU at toy size and their work.
SHARES = {"data": 0.10, "train": 0.40, "export": 0.01, "evaluate": 0.05, "speed": 0.10,
          "backtranslate": 0.20, "corpus": 0.08, "encoders": 0.06}
# fairseq-train's start (imports, loading data-bin, building the model) and its last validation
# and checkpoint are outside its --stop-time-hours clock.
TRAIN_OVERHEAD_S = {"gpu": 25.0, "tiny": 12.0}
SPEED_MODES = ("generate", "fairseq", "beam-fairseq")
# On a GPU, large decoder batches keep it busy (the beam search is bound by Python's steps, not
# by arithmetic): 64k tokens × beam 12 is ~2,600 sentences of 25 pieces, a few GB of logits.
GPU_BATCH_TOKENS, GPU_CHUNK_ROWS = 65_536, 8192
CPU_ENCODER_FIGURES = "2 shared CPU cores, docs/2026-11-25-training-loop.md: Word Avg 300 5,494 pairs/s, BiLSTM Avg 600 48 pairs/s (one thread, M = 40)"


@dataclass(frozen=True)
class Sizes:
    """What differs between the real run and the toy run."""

    preset: str
    vocab_size: int
    shards: int
    test_sentences: int
    batch_tokens: int
    chunk_rows: int
    encoder_steps: dict[str, int]  # updates timed after the first pool of `encoder_megabatch`
    encoder_megabatch: int = 40  # the default M
    max_update: int = 0  # besides the time limit (0: none)
    min_train_seconds: float = 5.0  # fairseq's clock, however late the training starts
    backtranslate_range: tuple[int, int] = (2000, 0)  # sentences at least, at most (0: as many as fit)


REAL = Sizes("fast", 16_000, 16, 2000, GPU_BATCH_TOKENS, GPU_CHUNK_ROWS, {"word_avg": 800, "bilstm_avg": 200, "word_avg-cpu": 80})
# Toy size, every step real but as short as it can be (the test suite runs it): a tiny model
# trained for 60 updates (fairseq's clock allows 90 s for them on a busy machine: a model this
# short-trained decodes to the length limit, one to two seconds per sentence at beam 12 on a busy
# CPU, so the decoding steps get few sentences), 4 test sentences, a sample of 20 of the 400 demo
# sentences back-translated (so the sample path runs too; 2 pairs per decile), M = 1 and 2 timed
# Word Avg updates for the encoders.
TINY = Sizes("tiny", 4000, 2, 4, 0, 4096, {"word_avg": 2, "bilstm_avg": 1, "word_avg-cpu": 2}, 1, 60, 90.0, (20, 20))


class Clock:
    """The budget's deadlines: each step ends at the sum of its share and those before it."""

    def __init__(self, minutes: float):
        self.budget, self.started = minutes * 60, time.monotonic()
        self.took: dict[str, float] = {}

    def deadline(self, step: str) -> float:
        """Seconds from the start at which ``step`` must end."""
        names = list(SHARES)
        return self.budget * sum(SHARES[name] for name in names[: names.index(step) + 1])

    def left(self, step: str) -> float:
        return self.deadline(step) - (time.monotonic() - self.started)

    def run(self, step: str, work: Callable[[], object]):
        print(f"gpu_run: {step} (share {SHARES[step] * self.budget:.0f} s, {self.left(step):.0f} s left to its deadline)", flush=True)
        started = time.monotonic()
        result = work()
        self.took[step] = time.monotonic() - started
        return result

    def table(self) -> str:
        rows = [[step, SHARES[step] * self.budget, self.deadline(step), self.took.get(step, float("nan"))] for step in SHARES]
        rows.append(["total", self.budget, self.budget, time.monotonic() - self.started])
        return markdown_table(["step", "share (s)", "deadline (s from start)", "took (s)"], rows)


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
    files: EvaluateTranslator's ``source``, ``reference`` and ``baseline``, and ``speed``, the
    Czech sentences of the speed step (newstest2021's 1,000 cs-en sources and 1,000 Czech
    references of its en-cs half)."""
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
        files["speed"] = files["source"]
        return write_pairs(pairs, workdir / "inputs", "demo"), files, f"the embedded demo corpus ({len(pairs)} pairs; tested on its own last {len(test)})"
    counts = prepare(data, workdir / "csen-more", report=lambda line: None)
    wmt21 = data / "csen" / "wmt21"
    count = TINY.test_sentences if tiny else None
    files = {name: write(path.name, path.read_text(encoding="utf-8").splitlines()[:count]) for name, path in (
        ("source", wmt21 / "newstest2021.cs-en.src.cs"), ("reference", wmt21 / "newstest2021.cs-en.ref.A.en"),
        ("baseline", wmt21 / "newstest2021.cs-en.hyp.CUNI-Transformer2018.en"))}
    en_cs = (wmt21 / "newstest2021.en-cs.ref.A.cs").read_text(encoding="utf-8").splitlines()
    files["speed"] = write("speed.cs", (Path(files["source"]).read_text(encoding="utf-8").splitlines() + en_cs)[: TINY.test_sentences if tiny else REAL.test_sentences])
    if tiny:
        inputs = write_pairs(sample(read_pairs(str(workdir / "csen-more" / "*.cs")), 2000), workdir / "inputs", "csen-more-sample")
        return inputs, files, f"2,000 csen-more pairs (seeded sample of {counts['pairs']:,})"
    description = (f"csen-more: {counts['pairs']:,} pairs ({counts['newstest2021_overlaps']} newstest2021 overlaps and "
                   f"{counts['duplicates']:,} duplicates dropped)")
    return str(workdir / "csen-more" / "*.cs"), files, description


def data_step(data: Path | None, tiny: bool, workdir: Path) -> tuple[str, dict[str, str], str]:
    """:func:`prepare_data`, then IngestBitext and TrainSentencePiece on it."""
    from workflows.nmt import TrainSentencePiece

    inputs, files, description = prepare_data(data, tiny, workdir)
    build([TrainSentencePiece(inputs=inputs)])
    return inputs, files, description


def build(tasks: list) -> None:
    import luigi

    if not luigi.build(tasks, local_scheduler=True, log_level="WARNING"):
        raise SystemExit(f"gpu_run: {', '.join(task.task_family for task in tasks)} failed (see the log above)")


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


def train(inputs: str, sizes: Sizes, seconds: float, tiny: bool):
    """TrainTranslator stopped after ``seconds`` in all (its start and last save included)."""
    from workflows.nmt import TrainTranslator

    stop_hours = max(seconds - TRAIN_OVERHEAD_S["tiny" if tiny else "gpu"], sizes.min_train_seconds) / 3600
    task = TrainTranslator(inputs=inputs, preset=sizes.preset, valid_size=2000, max_update=sizes.max_update,
                           fairseq_args=f"--stop-time-hours {stop_hours:.6f}")
    build([task])
    return task


def training_summary(task) -> dict:
    """The kept checkpoint's shape, weights, updates, epoch, validation loss and fairseq's
    training time (its extra state)."""
    import torch

    from models.nmt.translate import NmtModel

    state = torch.load(NmtModel.load(task.output_dir).checkpoint, map_location="cpu", weights_only=False, mmap=True)
    config, extra = state["cfg"]["model"], state["extra_state"]
    return {"arch": f"{config.encoder_layers}+{config.decoder_layers} layers, width {config.encoder_embed_dim}",
            "parameters": sum({value.untyped_storage().data_ptr(): value.numel() for value in state["model"].values()}.values()),
            "updates": state["optimizer_history"][-1]["num_updates"], "epoch": extra["train_iterator"]["epoch"],
            "valid_loss": extra.get("val_loss"), "training_seconds": extra.get("previous_training_time", 0.0)}


def evaluate(inputs: str, out: Path, files: dict[str, str]) -> dict:
    from workflows.nmt import EvaluateTranslator

    task = EvaluateTranslator(inputs=inputs, translator={"model_dir": str(out)}, engine="fairseq",
                              **{name: files[name] for name in ("source", "reference", "baseline")})
    build([task])
    return json.loads((task.output_dir / "_SUCCESS").read_text())


def speed(model_dir: Path, source: str, sizes: Sizes, device: str) -> dict[str, dict]:
    """benchmarks.backtranslate's rows for the exported model, each in a fresh process."""
    common = ["--model", str(model_dir), "--source", source, "--sentences", str(sizes.test_sentences), "--beam", "12",
              "--batch-tokens", str(sizes.batch_tokens), "--device", device]
    return {mode: measure_in_subprocess("benchmarks.backtranslate", "--measure", mode, *common) for mode in SPEED_MODES}


def sentences_that_fit(results: dict[str, dict], seconds: float, sizes: Sizes) -> int:
    """How many sentences the stage translates in ``seconds``: the in-process engine's rate
    after the stage's fixed cost (its run on the test sentences less their decoding time); at
    least ``sizes.backtranslate_range[0]``, so the later steps have a corpus however late it is."""
    engine, stage = results["fairseq"], results["beam-fairseq"]
    rate = engine["sentences"] / engine["seconds"]
    fixed = max(0.0, stage["seconds"] - stage["sentences"] / rate)
    least, most = sizes.backtranslate_range
    fit = max(least, int(0.9 * (seconds - fixed) * rate))
    return min(fit, most) if most else fit


def backtranslate(inputs: str, out: Path, workdir: Path, fit: int) -> tuple[str, int, int]:
    """BackTranslate with the exported model on every pair of ``inputs``, or on a seeded
    sample of ``fit`` of them; returns (the inputs translated, sentences translated, of all)."""
    from workflows.backtranslate import BackTranslate

    pairs = read_pairs(inputs)
    if fit < len(pairs):
        inputs = write_pairs(sample(pairs, fit), workdir / f"backtranslate-sample-{fit}", "sample")
    task = BackTranslate(inputs=inputs, translator={"model_dir": str(out)}, engine="fairseq")
    build([task])
    return inputs, min(fit, len(pairs)), len(pairs)


def corpus(inputs: str, out: Path) -> dict:
    """ScorePairs and AssignDeciles on the back-translated pairs; the corpus into DIR as Parquet."""
    from workflows.build import BuildParaNMT

    task = BuildParaNMT(inputs=inputs, model_dir=str(out), engine="fairseq")
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
        pairs, source = (table.column("reference").to_pylist(), table.column("translation").to_pylist()), f"this run's corpus ({table.num_rows:,} pairs)"
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


def speed_table(results: dict[str, dict], device: str) -> str:
    base = results["generate"]["sentences"] / results["generate"]["seconds"]
    rows = []
    for mode, r in results.items():
        rate = r["sentences"] / r["seconds"]
        peak = r.get("peak_gpu_mib")
        rows.append([MODES[mode], r["sentences"], r["seconds"], rate, rate / base, "–" if peak is None else f"{peak:,.0f}",
                     PAPER_SENTENCES / rate / 3600])
    return markdown_table(["engine", "sentences", "seconds", "sentences/s", "× fairseq-generate", "peak GPU MiB",
                           f"{'GPU' if device == 'cuda' else 'CPU'}-hours for {PAPER_SENTENCES / 1e6:.1f}M sentences (paper: {PAPER_GPU_HOURS:,} GPU-h)"], rows)


def report(out: Path, run: dict, clock: Clock) -> str:
    """report.md: every figure of the run."""
    scores = run["evaluation"]["scores"]
    bt = run["backtranslation"]
    lines = [f"# GPU run ({'--tiny, toy size' if run['tiny'] else 'csen-more'})", "",
             "## Machine", "", f"- {machine()}", f"- GPU: {run['gpu']}", f"- budget: {clock.budget / 60:g} minutes", "",
             "## Steps", "", clock.table(), "",
             "## Data", "", f"- {run['data']}", "",
             "## Model", "", f"- preset `{run['preset']}`: {run['training']['arch']}, {run['training']['parameters']:,} weights; "
             f"kept checkpoint (best validation loss {run['training']['valid_loss']:.3f}): update {run['training']['updates']}, "
             f"epoch {run['training']['epoch']}, after {run['training']['training_seconds']:.0f} s of fairseq's training time",
             f"- files: {', '.join(run['model_files'])}; `cat checkpoint.pt.part-* > checkpoint.pt` rejoins the checkpoint "
             "(`--model-dir` does it by itself)", "",
             "## Translation quality", "", "| system | BLEU | chrF |", "|---|---|---|",
             *[f"| {name} | {s['bleu']:.2f} | {s['chrf']:.2f} |" for name, s in scores.items()], "",
             f"{run['evaluation']['sentences']} sentences; BLEU `{next(iter(scores.values()))['bleu_signature']}`", "",
             "## Back-translation speed", "",
             f"{run['speed_sentences']} test sentences, beam 12, batches of {run['batch_tokens'] or 'the default'} tokens, device {run['device']}:", "",
             speed_table(run["speed"], run["device"]), "",
             f"- the corpus: {bt['translated']:,} of {bt['of']:,} Czech sentences back-translated "
             f"({'all' if bt['translated'] == bt['of'] else 'a seeded sample: ' + ('toy size' if run['tiny'] else 'the rest did not fit in its share')}), "
             f"BackTranslate {bt['seconds']:.1f} s, {bt['rate']:,.1f} sentences/s (start-up included)", "",
             "## The corpus", "", f"- {run['corpus']['rows']:,} pairs in {', '.join(run['corpus']['files'])}",
             *[f"- pairs per decile of {run['corpus']['scorers'][name]} (0 … 9): "
               + " ".join(str(deciles.get(str(d), {}).get("rows", 0)) for d in range(10)) for name, deciles in run["corpus"]["deciles"].items()], "",
             "## Encoder training speed", "", markdown_table(["model", "device", "updates timed", "pairs/s", "pairs"], run["encoders"]), "",
             f"- beside: {CPU_ENCODER_FIGURES}", ""]
    text = "\n".join(lines)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text


def check_files(out: Path) -> list[str]:
    """What breaks the limits on what may come back (empty when nothing does)."""
    files = sorted(path for path in out.iterdir())
    problems = [f"{len(files)} files (at most {FILES_LIMIT})"] if len(files) > FILES_LIMIT else []
    problems += [f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB (at most 16)" for path in files if path.stat().st_size > FILE_LIMIT]
    total = sum(path.stat().st_size for path in files)
    return problems + ([f"{total / 2**20:.1f} MiB in all (at most 64)"] if total > TOTAL_LIMIT else [])


def files_table(out: Path) -> str:
    rows = [[path.name, f"{path.stat().st_size / 2**20:.2f}"] for path in sorted(out.iterdir())]
    return markdown_table(["file", "MiB"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the shared data folder (csen-more, csen/wmt21); optional with --tiny")
    parser.add_argument("--minutes", type=float, help="wall-clock budget (default 7; 2 with --tiny)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the files that come back (made; must be empty)")
    parser.add_argument("--workdir", type=Path, default=Path("work/gpu-run"), help="the stages' work directory")
    parser.add_argument("--tiny", action="store_true", help="every step at toy size, on the CPU")
    args = parser.parse_args()
    if args.data is None and not args.tiny:
        parser.error("--data is required without --tiny")
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"--out {args.out} is not empty")
    out, workdir = args.out.resolve(), args.workdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sizes = TINY if args.tiny else REAL
    clock = Clock(args.minutes or (2 if args.tiny else 7))
    configure(workdir, sizes)
    from corpus.errors import InputError
    from models.nmt.devices import resolve_device
    from models.nmt.export import export_model
    from models.nmt.translate import NmtModel

    try:
        device = "cpu" if args.tiny else resolve_device("fairseq", "cuda")
    except InputError as error:
        raise SystemExit(f"gpu_run: {error} (--tiny runs on the CPU)") from None
    run = {"tiny": args.tiny, "gpu": gpu_name(), "preset": sizes.preset, "device": device, "batch_tokens": sizes.batch_tokens,
           "speed_sentences": sizes.test_sentences}
    inputs, test_files, run["data"] = clock.run("data", lambda: data_step(args.data, args.tiny, workdir))
    trained = clock.run("train", lambda: train(inputs, sizes, clock.left("train"), args.tiny))
    run["training"] = training_summary(trained)
    run["model_files"] = [p.name for p in clock.run("export", lambda: export_model(NmtModel.load(trained.output_dir), out))]
    run["evaluation"] = clock.run("evaluate", lambda: evaluate(inputs, out, test_files))
    from workflows.nmt import TrainTranslator

    exported = TrainTranslator(inputs=inputs, model_dir=str(out)).output_dir
    run["speed"] = clock.run("speed", lambda: speed(exported, test_files["speed"], sizes, device))
    fit = sentences_that_fit(run["speed"], clock.left("backtranslate"), sizes)
    bt_inputs, translated, of = clock.run("backtranslate", lambda: backtranslate(inputs, out, workdir, fit))
    from workflows.backtranslate import BackTranslate

    manifest = json.loads((BackTranslate(inputs=bt_inputs, translator={"model_dir": str(out)}, engine="fairseq").output_dir / "_SUCCESS").read_text())
    run["backtranslation"] = {"translated": translated, "of": of, "seconds": clock.took["backtranslate"], "rate": manifest["sentences_per_second"]}
    run["corpus"] = clock.run("corpus", lambda: corpus(bt_inputs, out))
    run["encoders"] = clock.run("encoders", lambda: encoder_speed([out / name for name in run["corpus"]["files"]], workdir, sizes, device))
    text = report(out, run, clock)
    (out / "report.md").write_text(text + "\n## Files\n\n" + files_table(out) + "\n", encoding="utf-8")
    print((out / "report.md").read_text())
    if problems := check_files(out):
        raise SystemExit(f"gpu_run: {out} breaks the limits on what comes back: {'; '.join(problems)}")


if __name__ == "__main__":
    main()
