"""TrainEncoder (sentence pairs → a trained encoder) and EvaluateSTS (encoder → STS report).

``luigi --module workflows EvaluateSTS --train-data pairs.tsv --model bilstm_avg --local-scheduler``
trains the encoder if needed, then evaluates it. The training data is a Parquet pairs/corpus
dataset directory or a TSV of sentence pairs; a stage that produces it (e.g. a training-set
selection) plugs in by overriding :meth:`TrainEncoder.requires` and
:meth:`TrainEncoder.training_data`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import luigi
from luigi.util import inherits

from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.outputs import read_json
from models.configs import EncoderConfig, TrainConfig
from models.training_pairs import TrainingPairs, training_sources
from workflows.base import StageTask, in_workdir
from workflows.config import AbsolutePath, SourcesParameter, config_from, with_settings
from workflows.console import STAGES as stages

log = logging.getLogger("luigi-interface")


class sts(luigi.Config):  # noqa: N801 - the luigi.cfg section name
    dir = AbsolutePath(
        default="../shared/data/sts",
        description="STS data directory (layout of shared/data/sts: STS2012-test … STS2016-test, "
        "STS2017, stsbenchmark, SICK), relative to the directory luigi runs in.",
    )


def sts_root() -> Path:
    return Path(sts().dir)


def sts_files() -> list[str]:
    """Every file under the STS directory (part of the fingerprint of what reads it)."""
    root = sts_root()
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


@with_settings(EncoderConfig, TrainConfig)
class TrainEncoder(StageTask):
    """Train a paraphrastic sentence encoder (ParaNMT section 4; paper defaults).

    The output directory is a model directory (config.json, features/, model.pt, training.json)
    for ``models.encode.load_encoder`` and ``paranmt-encode``. The development set (--dev-set,
    from [sts] dir) picks the best checkpoint; without it training still runs, with a warning, and
    keeps the last weights. An interrupted run resumes from its checkpoint. The architecture and
    training settings are the fields of ``EncoderConfig`` and ``TrainConfig`` (their defaults: the
    paper's values, except the negatives, the learning rate and the development set: README).
    """

    stage = "encoders"
    keeps_partial_output = True  # the partial directory holds the resumable checkpoint
    latest_by = "model"  # encoders/latest-word_avg, … beside encoders/latest

    train_data = SourcesParameter(default="",
                                  description="Parquet pairs/corpus dataset directory, or a TSV file of sentence pairs; several, comma-separated, "
                                              "each written SHARE=path to take that share of its pairs (e.g. "
                                              "'work/train/latest/pairs,0.5=refpairs.tsv').")
    columns = luigi.Parameter(default="reference,translation", description="The two Parquet columns that form a pair.")
    word_vectors = AbsolutePath(default="", description="word2vec/GloVe text file to initialise word embeddings (empty: random).")

    @property
    def resources(self) -> dict[str, int]:
        """Holds the ``gpu`` resource (luigi.cfg [resources]) when training on CUDA, so parallel
        Luigi workers queue their GPU trainings one after another."""
        import torch

        on_cuda = self.device.startswith("cuda") or (self.device == "auto" and torch.cuda.is_available())
        return {"gpu": 1} if on_cuda else {}

    def training_data(self) -> str:
        """Where the pairs are; a subclass wired to a selection stage returns its output."""
        if not self.train_data:
            raise InputError("TrainEncoder needs --train-data (a Parquet dataset directory or a TSV of pairs)")
        return self.train_data

    def input_files(self) -> list[str]:
        """The given --train-data and --word-vectors files. Training data that an upstream stage
        writes (a subclass's ``training_data()``) is identified by that stage's fingerprint and
        may not exist yet when this one is computed."""
        files = [self.word_vectors] if self.word_vectors else []
        for data, _ in training_sources(self.train_data) if self.train_data else []:
            files += sorted(str(p) for p in data.rglob("*.parquet")) if data.is_dir() else [str(data)]
        return files

    def dev_evaluator(self):
        """``dev(embed) -> Pearson × 100`` on the --dev-set, or None (said on the console) when absent."""
        from corpus.sts import MissingStsFiles, load_dev_set
        from models.evaluation import dev_score

        try:
            dataset = load_dev_set(sts_root(), self.dev_set)
        except MissingStsFiles as missing:
            # One console line (a Python warning also printed its source line), the missing files included.
            stages.warning("%s: no %s development set, keeping the last weights: %s", self.stage, self.dev_set, missing)
            return None
        return lambda embed: dev_score(embed, dataset)

    def build(self, partial_dir: Path) -> dict:
        from models.trainer import CHECKPOINT, train_encoder

        encoder_config, train_config = config_from(self, EncoderConfig), config_from(self, TrainConfig)
        dev = self.dev_evaluator()
        self.progress(f"training {self.model} on {self.training_data()}")
        result = train_encoder(
            self.training_data(), partial_dir, encoder_config, train_config, dev=dev, word_vectors=self.word_vectors or None,
            columns=tuple(comma_items(self.columns)), progress=self.progress,
        )
        (partial_dir / CHECKPOINT).unlink()  # optimizer state: only needed to resume
        summary = json.loads((partial_dir / "training.json").read_text())
        return {
            "model": self.model,
            "pairs": summary["pairs"],
            "sources": TrainingPairs.from_path(self.training_data(), tuple(comma_items(self.columns))).make_up(),
            "pairs_with_an_empty_side_left_out": summary["pairs_with_an_empty_side_left_out"],
            "steps": result.steps,
            "dev": {"set": self.dev_set if dev else None, "best_pearson": result.best_score, "history": result.dev_scores},
            "vocabulary": summary["vocabulary"],
        }


def load_on_device(encoder_dir: Path, device: str):
    """The trained encoder in ``encoder_dir`` on ``device`` (``auto``: a GPU where torch finds one)."""
    from models.encode import load_encoder

    return load_encoder(encoder_dir, None if device == "auto" else device)


class EvaluatesTrainedEncoder:
    """A stage that evaluates the encoder TrainEncoder trains with the stage's parameters, with
    one latest output per model (as the encoders have)."""

    latest_by = "model"

    def requires(self):
        return self.clone(TrainEncoder)

    def trained_encoder(self):
        return load_on_device(self.requires().output_dir, self.device)


@inherits(TrainEncoder)
class EvaluateSTS(EvaluatesTrainedEncoder, StageTask):
    """STS 2012–2016 (required), STS 2017, STS-B and SICK (where present) for a trained
    encoder: per-dataset and per-year Pearson/Spearman × 100, as report.json and report.md."""

    stage = "reports"

    def input_files(self) -> list[str]:
        return sts_files()

    def build(self, partial_dir: Path) -> dict:
        from corpus.sts import sts_suite
        from models.evaluation import evaluate, sts_table

        datasets, absent = sts_suite(sts_root())  # MissingStsFiles names every absent test file
        encoder_dir = self.requires().output_dir
        self.progress(f"evaluating {encoder_dir} on {len(datasets)} STS datasets")
        report = evaluate(self.trained_encoder().encode, datasets, {"model": self.model, "encoder": in_workdir(encoder_dir), "absent": absent})
        (partial_dir / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
        (partial_dir / "report.md").write_text(f"{sts_table({self.model: report})}\n{report.to_markdown()}")
        return {"datasets": len(report.scores), "absent": absent, "sts_2012_2016_mean": report.to_json()["sts_2012_2016_mean"]}

    def result_summary(self) -> str:
        """What the command prints at its end: the STS table and the dev score after each epoch."""
        from models.evaluation import StsReport, sts_table

        report = StsReport.from_json(read_json(self.output_dir / "report.json"))
        encoder = self.requires()
        table = sts_table({report.meta.get("model"): report}).rstrip()
        # The report is this stage's output, found sound; the encoder is another stage's, which
        # Luigi does not look at once this one is complete: it may have been moved or damaged since.
        damage = encoder.damage()
        training = {} if damage else read_json(encoder.output_dir / "training.json")
        about = (f"no longer sound: {damage}; {encoder.get_task_family()} with the same options trains it again" if damage
                 else f"trained on {training['pairs']} pairs")
        lines = [f"Encoder {report.meta.get('model')}: {encoder.output_dir} ({about})",
                 f"STS (Pearson × 100; every dataset in {self.output_dir / 'report.md'}):", table]
        if any("–" in row for row in table.splitlines()[2:]):  # a "–" cell, not the header's "2012–2016"
            absent = ", ".join(dict.fromkeys(report.meta.get("absent", []))) or "none"
            lines.append(f"–: that set is absent from the STS folder (absent: {absent})")
        if damage:
            return "\n".join(lines)
        steps_per_epoch = max(1, -(-training["steps"] // max(1, training["train"]["epochs"])))
        dev = ", ".join(f"epoch {-(-step // steps_per_epoch)} {score:.2f}" for step, score in training["dev"])
        dev_set = training["train"].get("dev_set", "sts2017")  # the set that picked the kept weights
        lines.append(f"dev score ({dev_set}) per epoch: {dev} (best {training['best_dev']:.2f} kept)" if dev
                     else f"dev set ({dev_set}) absent: the last weights were kept")
        return "\n".join(lines)
