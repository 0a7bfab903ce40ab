"""report.md of a GPU run (``benchmarks.gpu_run``): the machine, the steps with their status, and a
section for each step's figures once that step is done.

Every function here reads what the run has gathered and returns Markdown; none runs anything.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.backtranslate import MODES, PAPER_GPU_HOURS, PAPER_SENTENCES
from benchmarks.common import machine, markdown_table
from corpus import translation_check

CPU_ENCODER_FIGURES = ("2 shared CPU cores, docs/2026-11-25-training-loop.md: Word Avg 300 5,494 pairs/s, "
                       "BiLSTM Avg 600 48 pairs/s (one thread, M = 40)")


def report(out: Path, facts: dict, results: dict, steps_table: str, budget_s: float) -> str:
    """report.md: the machine, ``steps_table``, the figures of every step in ``results`` (the
    steps done) and the files in ``out``."""
    lines = [f"# GPU run ({'--tiny, toy size' if facts['tiny'] else 'csen-more'})", "",
             "## Machine", "", f"- {machine()}", f"- GPU: {facts['gpu']}",
             f"- budget: {budget_s / 60:g} minutes from the call's start, install included", "",
             "## Steps", "", steps_table, ""]
    if "data" in results:
        lines += ["## Data", "", f"- {results['data'][2]}", ""]
    if "train" in results:
        lines += model_section(facts, results)
    if "evaluate" in results:
        lines += quality_section(results["evaluate"])
    if "backtranslate" in results:
        lines += speed_section(facts, results)
    if corpus_summary := results.get("corpus"):
        lines += corpus_section(corpus_summary)
    if "encoders" in results:
        lines += ["## Encoder training speed", "", markdown_table(["model", "device", "updates timed", "pairs/s", "pairs"], results["encoders"]), "",
                  f"- beside: {CPU_ENCODER_FIGURES}", ""]
    lines += ["## Files", "", files_table(out), ""]
    return "\n".join(lines)


def model_section(facts: dict, results: dict) -> list[str]:
    """The trained model's shape and kept checkpoint, and the files it was exported to."""
    training = results["train"]["summary"]
    lines = ["## Model", "", f"- preset `{facts['preset']}`: {training['arch']}, {training['parameters']:,} weights; "
             f"kept checkpoint (best validation loss {training['valid_loss']:.3f}): update {training['updates']}, "
             f"epoch {training['epoch']}, after {training['training_seconds']:.0f} s of fairseq's training time"]
    if "export" in results:
        lines += [f"- files: {', '.join(results['export'])}; `cat checkpoint.pt.part-* > checkpoint.pt` rejoins the checkpoint "
                  "(`--translator FOLDER` does it by itself)"]
    if watch := training.get("watch"):
        lines += ["", "The collapse watch (100 validation sources translated greedily at each validation; distinct near 0: "
                  "one sentence for every source):", "",
                  markdown_table(["updates", "distinct", "copies", "loops", "BLEU", "chrF"],
                                 [[e["updates"], e["distinct"], e["copies"], e["loops"], e["bleu"], e["chrf"]] for e in watch])]
        lines += ["", *(f"- {e['source']} → {e['translation']}" for e in training.get("watch_examples", []))]
    return [*lines, ""]


def quality_section(evaluation: dict) -> list[str]:
    """BLEU and chrF of each system on the test set (EvaluateTranslator's manifest)."""
    scores = evaluation["scores"]
    return ["## Translation quality", "", "| system | BLEU | chrF |", "|---|---|---|",
            *[f"| {name} | {s['bleu']:.2f} | {s['chrf']:.2f} |" for name, s in scores.items()], "",
            f"{evaluation['sentences']} sentences; BLEU `{next(iter(scores.values()))['bleu_signature']}`", ""]


def speed_section(facts: dict, results: dict) -> list[str]:
    """The back-translation of the corpus: how much of it, the engine's rate in process (the
    baseline) and the stage's, and the hours 51.4M sentences take at each."""
    bt = results["backtranslate"]
    whole = bt["translated"] == bt["of"]
    engine, device = bt["engine"], facts["device"]
    engine_rate = engine["sentences"] / engine["seconds"]
    peak = engine.get("peak_gpu_mib")
    rows = [[MODES["fairseq"], engine["sentences"], engine["seconds"], engine_rate, "1.00", "–" if peak is None else f"{peak:,.0f}",
             PAPER_SENTENCES / engine_rate / 3600],
            ["BackTranslate stage, fairseq engine", bt["translated"], bt["translated"] / bt["rate"], bt["rate"],
             f"{bt['rate'] / engine_rate:.2f}", "–",
             PAPER_SENTENCES / bt["rate"] / 3600]]
    lines = ["## Back-translation speed", "",
             f"Beam 12, batches of {facts['batch_tokens'] or 'the default'} tokens, device {device}; the engine on a seeded sample of the "
             "sentences first, then the stage on the corpus (its rate: the sentences over the stage's own seconds, start-up, the model's "
             "load and the translation check included):", "",
             markdown_table(["engine", "sentences", "seconds", "sentences/s", "× engine", "peak GPU MiB",
                             f"{'GPU' if device == 'cuda' else 'CPU'}-hours for {PAPER_SENTENCES / 1e6:.1f}M sentences "
                             f"(paper: {PAPER_GPU_HOURS:,} GPU-h)"], rows), "",
             f"- the corpus: {bt['translated']:,} of {bt['of']:,} Czech sentences back-translated "
             f"({'all' if whole else 'a seeded sample: ' + ('toy size' if facts['tiny'] else 'the rest did not fit in its share')}), "
             f"the step's BackTranslate {bt['seconds']:.1f} s"]
    if check := bt.get("translation_check"):
        lines.append(f"- the translation check (corpus.translation_check): {translation_check.figures_line(check)}"
                     f"{' (accepted out of bounds: toy size)' if facts['tiny'] else ''}")
    return [*lines, ""]


def corpus_section(summary: dict) -> list[str]:
    """The corpus's size and its pairs per decile of each scorer (AssignDeciles' summary.json)."""
    return ["## The corpus", "", f"- {summary['rows']:,} pairs in {', '.join(summary['files'])}",
            *[f"- pairs per decile of {summary['scorers'][name]} (0 … 9): "
              + " ".join(str(deciles.get(str(d), {}).get("rows", 0)) for d in range(10)) for name, deciles in summary["deciles"].items()], ""]


def files_table(out: Path) -> str:
    """The files that come back and their sizes (the run's own temporaries, dot files, left out)."""
    rows = [[path.name, f"{path.stat().st_size / 2**20:.2f}"] for path in sorted(out.iterdir()) if not path.name.startswith(".")]
    return markdown_table(["file", "MiB"], rows)
