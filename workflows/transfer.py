"""EvaluateTransfer: encoder → the paper's Table 8 (the baselines' Table 8: experiments.TransferBaselinesOnTrainData).

``luigi --module workflows EvaluateTransfer --train-data pairs.tsv --local-scheduler`` trains the
encoder if needed (TrainEncoder, the parameters of EvaluateSTS), then scores its frozen
embeddings on MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC, SICK-R and SICK-E (models.transfer).
The data: ``[transfer] dir`` (MR … SST-2), ``[transfer] mrpc_dir`` and the SICK folder of
``[sts] dir``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import luigi
from luigi.util import inherits

from corpus.tables import markdown_table
from workflows.base import StageTask
from workflows.config import AbsolutePath
from workflows.encoders import EvaluatesTrainedEncoder, TrainEncoder, sts_root


class transfer(luigi.Config):  # noqa: N801 - the luigi.cfg section name
    dir = AbsolutePath(
        default="../shared/data/transfer",
        description="Table 8 classification sets (layout of shared/data/transfer: rt-polarity.*, custrev.*, subj.*, mpqa.*, "
        "TREC.*, stsa.binary.*), relative to the directory luigi runs in; SICK comes from [sts] dir.",
    )
    mrpc_dir = AbsolutePath(
        default="../shared/data/en-paraphrase/msrp",
        description="MRPC folder: msr_paraphrase_train.txt[.gz] and msr_paraphrase_test.txt.",
    )


def transfer_folders() -> tuple[Path, Path, Path]:
    """(the transfer sets, MRPC, SICK) folders."""
    return Path(transfer().dir), Path(transfer().mrpc_dir), sts_root() / "SICK"


def transfer_files() -> list[str]:
    """Every file the suite reads (part of the fingerprint of what reads it)."""
    from corpus.transfer import CV_FILES, MRPC_TEST, MRPC_TRAIN, SST2_FILES, TREC_FILES

    data, mrpc, sick = transfer_folders()
    names = [file for files in CV_FILES.values() for file, _ in files] + [*SST2_FILES.values(), *TREC_FILES.values()]
    candidates = [data / name for name in names] + [mrpc / name for name in (*MRPC_TRAIN, *MRPC_TEST)]
    candidates += [sick / name for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test.txt", "SICK_test_annotated.txt")]
    return sorted(str(path) for path in candidates if path.is_file())


def load_suite():
    from corpus.transfer import load_transfer_suite

    return load_transfer_suite(*transfer_folders())


def _score(result: dict) -> str:
    from models.transfer import headline

    value = headline(result)
    text = "–" if math.isnan(value) else f"{value:.1f}"
    return f"{text}/{result['f1']:.1f}" if "f1" in result else text


def _paper(value) -> str:
    return "/".join(f"{v:.1f}" for v in value) if isinstance(value, list | tuple) else f"{value:.1f}"


def transfer_table(rows: dict[str, dict[str, dict]], paper: dict[str, tuple[str, dict]] | None = None) -> str:
    """Markdown: one row per model (its tasks' scores: accuracy, MRPC accuracy/F1, SICK-R
    Pearson × 100), and the paper's row for each model it has one for."""
    from models.transfer import TABLE8_COLUMNS

    lines = []
    for name, results in rows.items():
        lines.append([name, *(_score(results[task]) if task in results else "–" for task in TABLE8_COLUMNS)])
        if paper and paper.get(name):
            paper_name, numbers = paper[name]
            lines.append([f"paper: {paper_name}", *(_paper(numbers[task]) for task in TABLE8_COLUMNS)])
    return markdown_table(["model", *TABLE8_COLUMNS], lines)


def transfer_notes(results: dict[str, dict]) -> str:
    """What each score was evaluated on, and the rejected lines, in a few lines of markdown."""
    notes = [f"- {task}: {r['evaluated_on']}, {r['train']} training items, {r['test']} scored, C {sorted(set(r['C']))}, {r['seconds']} s"
             for task, r in results.items()]
    rejects = {reason: count for r in results.values() for reason, count in r["rejects"].items()}
    notes.append(f"- rejected lines: {', '.join(f'{reason} ({count})' for reason, count in rejects.items()) or 'none'}")
    return "\n".join(notes)


def write_transfer_report(folder: Path, name: str, results: dict[str, dict], meta: dict, paper=None) -> None:
    """report.json (each task's result under its name, and ``meta``) and report.md."""
    (folder / "report.json").write_text(json.dumps({"meta": meta, "tasks": results, **({"paper": paper} if paper else {})}, indent=2) + "\n")
    table = transfer_table({name: results}, {name: paper} if paper else None)
    (folder / "report.md").write_text(
        f"# Table 8 (transfer tasks): {name}\n\nAccuracy × 100 (MRPC: accuracy/F1; SICK-R: Pearson × 100 of the predicted relatedness).\n\n"
        f"{table}\n{transfer_notes(results)}\n"
    )


@inherits(TrainEncoder)
class EvaluateTransfer(EvaluatesTrainedEncoder, StageTask):
    """The nine Table 8 tasks for a trained encoder, with the paper's numbers for the same model:
    report.json (each task under its name) and report.md."""

    stage = "transfer"

    def input_files(self) -> list[str]:
        return transfer_files()

    def build(self, partial_dir: Path) -> dict:
        from models.transfer import evaluate_transfer, paper_scores

        tasks = load_suite()  # MissingTransferFiles names every absent file
        encoder_dir = self.requires().output_dir
        results = evaluate_transfer(self.trained_encoder().encode, tasks, progress=self.progress)
        paper = paper_scores(self.model, self.combine)
        write_transfer_report(partial_dir, self.model, results, {"model": self.model, "encoder": str(encoder_dir)}, paper)
        return {"tasks": len(results), "evaluated_on": {task: r["evaluated_on"] for task, r in results.items()}}

    def result_summary(self) -> str:
        report = json.loads((self.output_dir / "report.json").read_text())
        paper = report.get("paper")
        table = transfer_table({self.model: report["tasks"]}, {self.model: tuple(paper)} if paper else None)
        return f"Table 8 for {self.model} ({self.requires().output_dir}); every detail in {self.output_dir / 'report.md'}:\n{table.rstrip()}"
