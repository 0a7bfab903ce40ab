"""The paper's experiments as Luigi tasks: each is one command that writes a table and a plot.

  DecileSweep           Table 4: one model per (scorer, decile), best range chosen on STS 2017 dev
  ChooseDeciles         TrainOnFiltered --decile auto: DecileSweep's cells, the range chosen on the dev sets
  MegabatchAblation     Tables 5 and 6: Word Avg / BiLSTM Avg × mega-batch size, and the negatives
  ModelTable            Tables 7 and 9: several models on one selection, SIF and averaged vectors
  DataSourceComparison  Tables 2 and 3: corpus statistics and STS of models trained on each source

Every run is an existing stage (SelectTrainingSet → TrainFilteredEncoder → EvaluateSTS, i.e.
TrainOnFiltered) in its own fingerprinted directory, so runs are shared between experiments, a
stopped sweep resumes with the missing runs only, and ``--workers N`` trains N at once. The
experiment's own directory (``<workdir>/experiments/<name>/<fingerprint>/``, ``latest`` beside
it; the names: decile-sweep, megabatch-ablation, model-table, data-source-comparison) holds
report.json, report.md, the PNG plots and index.html (reports/experiments.py), which starts
with the provenance gathered here from the task and its stages' manifests (date, code version,
command, parameters, input file fingerprints, data sizes) and warns when the training data is
the embedded demo corpus.
Every corpus and training option of TrainOnFiltered applies (``--pairs``, ``--pp-vectors``,
``--batch-size`` …); without any, the embedded demo corpus is back-translated and used.
MegabatchAblation and ModelTable also run on given pairs (``--train-data pairs.tsv``, or a Parquet
pairs dataset): each cell is then an EvaluateSTS run on that file and no corpus stage runs.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import luigi
from luigi.task import flatten
from luigi.util import inherits

from corpus import languages
from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.outputs import MANIFEST, read_json, read_manifest
from corpus.selection import ALL_DECILES, AUTO, Rules, parse_deciles, passing_per_decile
from models.configs import MODEL_NAMES
from pipelines import stages
from pipelines.batches import iter_tables
from workflows.base import RELEASE, StageTask, in_workdir, stage_tree
from workflows.config import NONE, AbsolutePath, OptionalPath, config_from, count_parameter
from workflows.corpus import (
    AssignDeciles,
    CorpusStats,
    OnSelection,
    SelectTrainingSet,
    TrainFilteredEncoder,
)
from workflows.encoders import EvaluateSTS, TrainEncoder, load_on_device, sts_files, sts_root
from workflows.ingest import demo_corpus
from workflows.transfer import EvaluateTransfer, load_suite, transfer_files


def model_names(text: str) -> list[str]:
    names = comma_items(text)
    unknown = sorted(set(names) - set(MODEL_NAMES))
    if unknown or not names:
        raise InputError(f"unknown or no model(s) {unknown}; choose from {sorted(MODEL_NAMES)}")
    return names


def run_result(task: EvaluateSTS) -> dict:
    """A finished run's training pairs (its encoder's manifest), embedding size and STS summary."""
    from models.evaluation import StsReport
    from reports.experiments import sts_summary

    report = StsReport.from_json(read_json(task.output_dir / "report.json"))
    return {"pairs": read_manifest(task.requires().output_dir)["pairs"], "dim": report.dim, "sts": sts_summary(report),
            "run": in_workdir(task.output_dir)}


def uses_demo_corpus(stages: Iterable[StageTask]) -> bool:
    """Whether any of ``stages`` reads the embedded demo corpus (IngestBitext without --inputs)."""
    demo = os.path.realpath(demo_corpus())
    return any(os.path.realpath(path) == demo for task in stages for path in task.input_files())


def data_sizes(manifests: Iterable[dict]) -> dict[str, list[int]]:
    """The DATA_SIZES counts of finished stages' manifests, by label (one count per stage)."""
    sizes: dict[str, list[int]] = {label: [] for label in DATA_SIZES.values()}
    for manifest in manifests:
        for (stage, key), label in DATA_SIZES.items():
            count = manifest.get("rows", {}).get(key, manifest.get(key)) if manifest.get("stage") == stage else None
            if isinstance(count, int):
                sizes[label].append(count)
    return sizes


def pairs_origin(options: dict) -> str:
    """Where a corpus selection with these options (--pairs, --inputs) comes from, in words."""
    if options.get("pairs"):
        given = "the pairs dataset" if Path(options["pairs"]).is_dir() else "the ParaNMT release files"
        return f"{given} {options['pairs']} (--pairs), scored and ranked into deciles here"
    if options.get("inputs"):
        spoken = (options.get("source_language") or languages.DEFAULT).replace(",", ", ")
        made = (f"paired with the translations made elsewhere of {options['translations']} (--translations)" if options.get("translations")
                else "back-translated")
        return f"the bitext {options['inputs']} (--inputs; {spoken} with English), {made}, scored and ranked here"
    return f"the embedded demo corpus {demo_corpus()} (no --inputs or --pairs), back-translated, scored and ranked here"


def command_line(task: luigi.Task) -> str:
    """The luigi command that rebuilds ``task``: its significant parameters that differ from their defaults."""
    options = []
    for name, param in task.get_params():
        value = getattr(task, name)
        default = getattr(param, "_default", None)
        if not param.significant or param.serialize(value) == param.serialize(default):
            continue
        flag = "--" + name.replace("_", "-")
        options.append(flag if value is True else f"{flag} {shlex.quote(param.serialize(value))}")
    return " ".join(["luigi --module workflows", task.task_family, *options, "--local-scheduler"])


def code_revision() -> str:
    """``git describe --always --dirty`` of the checkout this code runs from ("" for an installed package)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return ""
    try:
        described = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=60,
                                   check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return described.stdout.strip() if described.returncode == 0 else ""


class Experiment(StageTask):
    """An experiment's report directory; subclasses build the :class:`reports.experiments.Report`."""

    def check_sts(self) -> None:
        """Fail before any training when the STS folder lacks the test or development sets."""
        if not getattr(self, "_sts_checked", False):
            from corpus.sts import require_training_sts

            require_training_sts(sts_root(), self.dev_set)
            self._sts_checked = True

    def links(self) -> dict[str, str]:
        """Each run's report, relative to this experiment's directory (for index.html)."""
        return {f"run {name}": os.path.relpath(task.output_dir / "report.md", self.output_dir) for name, task in self.runs().items()}

    def runs(self) -> dict[str, EvaluateSTS]:
        """The experiment's runs by name "<row>/<column>" (e.g. "pp/9")."""
        raise NotImplementedError

    def results(self, column=str) -> dict[str, dict]:
        """:func:`run_result` of every run as ``{row: {column(col): result}}``."""
        grid: dict[str, dict] = {}
        for name, task in self.runs().items():
            row, col = name.split("/")
            grid.setdefault(row, {})[column(col)] = run_result(task)
        return grid

    def report(self):
        raise NotImplementedError

    def training_data_origin(self) -> str:
        return pairs_origin(self.param_kwargs)

    def provenance(self):
        """The page's provenance: this task's parameters, and the manifests of the stages it ran on."""
        from reports.provenance import Provenance

        stages = stage_tree([*flatten(self.requires()), *self.runs().values()])
        manifests = [read_manifest(task.output_dir) for task in stages if (task.output_dir / MANIFEST).exists()]
        return Provenance(
            created=datetime.now(UTC), code=RELEASE, revision=code_revision(), command=command_line(self), output=in_workdir(self.output_dir),
            training_data=self.training_data_origin(), demo=uses_demo_corpus(stages), data_sizes=data_sizes(manifests),
            parameters=self.to_str_params(only_significant=True), input_files=[path for manifest in manifests for path in manifest["input_files"]],
        )

    def build(self, partial_dir: Path) -> dict:
        report = replace(self.report(), provenance=self.provenance())
        files = report.write(partial_dir)
        demo = " (demo data: the numbers are meaningless)" if report.provenance.demo else ""
        print(f"{report.title}: {report.summary}{demo}\n{self.output_dir / 'index.html'}")
        return {"report_files": files, "summary": report.summary, "demo_data": report.provenance.demo, **self.manifest_facts(report)}

    def manifest_facts(self, report) -> dict:
        """What the experiment's manifest holds of its report besides its summary (none)."""
        return {}


@inherits(TrainFilteredEncoder)
class TrainOnFiltered(EvaluateSTS):
    """Select, train and evaluate in one command: ``TrainOnFiltered --decile 9 --scorer pp
    --model lstm_avg --n-pairs 1000000`` (every SelectTrainingSet and TrainEncoder option applies);
    the STS report is report.md / report.json in its output directory. With ``--decile auto``
    and/or ``--scorer auto``, ChooseDeciles first chooses them on the corpus's own evidence, and
    this task is then the one with its choice (its output, its report, its result)."""

    def chooses(self) -> bool:
        return AUTO in (self.scorer, self.decile)

    def requires(self):
        return self.clone(ChooseDeciles) if self.chooses() else self.clone(TrainFilteredEncoder)

    def chosen(self) -> TrainOnFiltered:
        """This task with ChooseDeciles' choice for its scorer and deciles (the choice is made)."""
        choice = read_manifest(self.requires().output_dir)["choice"]
        return self.clone(TrainOnFiltered, scorer=choice["scorer"], decile=",".join(map(str, choice["deciles"])))

    def complete(self) -> bool:
        if not self.chooses():
            return super().complete()
        return self.requires().complete() and self.chosen().complete()

    def run(self):
        """Luigi runs what a generator run yields first (a dynamic dependency): the choice is
        known only once ChooseDeciles has run."""
        return self._train_on_the_choice() if self.chooses() else super().run()

    def _train_on_the_choice(self):
        yield self.chosen()

    def result_summary(self) -> str:
        if not self.chooses():
            return super().result_summary()
        chooser = self.requires()
        return f"{read_manifest(chooser.output_dir)['summary']} Evidence: {chooser.output_dir / 'index.html'}\n{self.chosen().result_summary()}"


@inherits(TrainOnFiltered)
class DecileSweep(Experiment):
    """Table 4: for each scorer and decile, LSTM Avg trained one epoch on N pairs of that decile
    (the paper: 1M); STS of each; the best decile and decile range per scorer, chosen on the
    STS 2017 development set only. ``DecileSweep --scorers pp --deciles 8,9 --n-pairs 1000``."""

    stage = "experiments/decile-sweep"
    scorer = decile = None  # swept
    scorers = luigi.Parameter(default="trans,trigram,pp", description="Comma-separated scorers to sweep.")
    deciles = luigi.Parameter(default="0,1,2,3,4,5,6,7,8,9", description=f"Comma-separated deciles to sweep ({ALL_DECILES}: every one).")
    range_width = count_parameter(default=2, description="Width of the decile range chosen on the dev set (the paper kept the top two).")
    model = luigi.ChoiceParameter(choices=sorted(MODEL_NAMES), default="lstm_avg", description="Encoder of every cell.")
    epochs = count_parameter(default=1, description="Epochs per cell (the paper: one).")
    n_pairs = count_parameter(default=1_000_000, description="Pairs sampled per decile (the paper: 1M); all when a decile holds fewer.")

    def runs(self) -> dict[str, TrainOnFiltered]:
        return {f"{s}/{d}": self.clone(TrainOnFiltered, scorer=s, decile=str(d))
                for s in comma_items(self.scorers) for d in parse_deciles(self.deciles) or range(10)}

    def requires(self):
        self.check_sts()
        return self.runs()

    def report(self):
        from reports.experiments import decile_sweep_report

        return decile_sweep_report(self.results(int), self.range_width, self.links())


@inherits(TrainOnFiltered)
class ChooseDeciles(Experiment):
    """``TrainOnFiltered --decile auto`` (and ``--scorer auto``): the deciles, and the scorer,
    chosen on evidence from the user's own corpus. DecileSweep's cells (the same tasks: a sweep
    already run with the same cells is reused, a stopped one resumes at its missing cells) on an
    equal sample of every decile of each scorer swept (``--scorer``, or with ``auto`` every scorer
    the corpus ranks), then the best ``--range-width`` consecutive deciles (or, with ``--decile``
    given, the scorer best over them) on the development sets only: the mean of STS 2017 and
    STS-B dev where both scored every cell, never a test set. Its page shows the evidence
    (Table 4 and its plots) and the choice; its manifest's ``choice`` holds it."""

    stage = "experiments/choose-deciles"
    range_width = DecileSweep.range_width
    sweep_model = luigi.ChoiceParameter(choices=sorted(MODEL_NAMES), default="word_avg",
                                        description=f"Encoder of every sweep cell (--decile/--scorer {AUTO}), trained one epoch.")
    sweep_pairs = count_parameter(default=10_000,
                                  description=f"Pairs per sweep cell (--decile/--scorer {AUTO}): the sweep's cost (a word_avg cell of 10,000 "
                                              "pairs trains and is evaluated in about 15 s on 2 CPU cores); fewer when a decile has fewer pairs "
                                              "that pass the rules, every cell the same.")
    sweep_min_pairs = count_parameter(default=1_000,
                                      description=f"Pairs every decile must have for a sweep (--decile/--scorer {AUTO}): fewer is noise, and "
                                                  "the run stops saying so.")

    def requires(self):
        self.check_sts()
        return self.clone(AssignDeciles)

    def swept_scorers(self) -> list[str]:
        """``--scorer``, or with ``auto`` every scorer the corpus ranks."""
        if self.scorer != AUTO:
            return [self.scorer]
        summary = read_json(self.requires().output_dir / "summary.json")
        return [name for name in summary["scorers"] if name not in summary.get("not_ranked", {})]

    def swept_deciles(self) -> list[int]:
        return list(range(10)) if self.decile == AUTO else list(parse_deciles(self.decile) or range(10))

    @cached_property
    def cell_pairs(self) -> int:
        """--sweep-pairs, or the fewest pairs of any swept decile that pass the rules (the corpus
        read once, a batch at a time); a decile with fewer than --sweep-min-pairs stops the run,
        in one line."""
        rules = [config_from(self, Rules, scorer=name, decile=ALL_DECILES) for name in self.swept_scorers()]
        columns = sorted({column for rule in rules for column in rule.columns})
        files, _ = self.requires().committed("corpus")
        counts = passing_per_decile((table for path in files for table in iter_tables(path, columns)), rules)
        fewest, scorer, decile = min((int(counts[name][d]), name, d) for name in counts for d in self.swept_deciles())
        if fewest < self.sweep_min_pairs:
            raise InputError(f"--decile/--scorer {AUTO}: decile {decile} of {scorer} has {fewest} pairs that pass the rules, fewer than a sweep cell "
                             f"needs (--ChooseDeciles-sweep-min-pairs {self.sweep_min_pairs}); give --scorer and --decile instead "
                             "(the paper's: --scorer pp --decile 8,9)")
        return min(self.sweep_pairs, fewest)

    def runs(self) -> dict[str, TrainOnFiltered]:
        return {f"{name}/{d}": self.clone(TrainOnFiltered, scorer=name, decile=str(d), model=self.sweep_model, epochs=1, n_pairs=self.cell_pairs)
                for name in self.swept_scorers() for d in self.swept_deciles()}

    def run(self):
        """The cells are known once the corpus is (how many pairs a decile has): Luigi runs what
        the generator yields first, then the page is written."""
        return self._sweep_then_choose()

    def _sweep_then_choose(self):
        yield list(self.runs().values())
        super().run()

    def report(self):
        from reports.experiments import Table, choose_deciles, decile_sweep_report

        cells = self.results(int)
        given = () if self.decile == AUTO else parse_deciles(self.decile)
        try:
            choice = choose_deciles(cells, self.range_width, given)
        except ValueError as error:
            raise InputError(f"--decile/--scorer {AUTO}: {error}; give --scorer and --decile instead") from None
        sweep = decile_sweep_report(cells, self.range_width, self.links())
        deciles = ",".join(map(str, choice["deciles"]))
        summary = f"Chosen on {' and '.join(choice['dev_sets'])} (mean {choice['dev']:.1f}): --scorer {choice['scorer']} --decile {deciles}."
        candidates = Table(f"The choice: every candidate by its mean of {' and '.join(choice['dev_sets'])}, Pearson × 100",
                           ["scorer", "deciles", "dev mean"],
                           [[c["scorer"], ",".join(map(str, c["deciles"])), c["dev"]] for c in choice["candidates"]],
                           f"Each sweep cell trained {self.sweep_model} one epoch on {self.cell_pairs} pairs of one decile; the test sets "
                           "are shown below, never used to choose.")
        return replace(sweep, title="Deciles chosen on the corpus's own evidence (TrainOnFiltered --decile auto)", summary=summary,
                       tables=[candidates, *sweep.tables], data={**sweep.data, "choice": choice})

    def manifest_facts(self, report) -> dict:
        return {"choice": report.data["choice"]}  # TrainOnFiltered --decile auto reads it (chosen)


class OnTrainData:
    """Experiments whose cells train on --train-data when it is given (each an EvaluateSTS run;
    no corpus stage), else on the corpus selection (TrainOnFiltered)."""

    train_data = AbsolutePath(
        default="",
        description="TSV of sentence pairs (first two tab-separated fields) or Parquet pairs dataset "
        "directory: every cell trains on it instead of a corpus selection. Empty: the selection.",
    )

    def training_data_origin(self) -> str:
        if self.train_data:
            return f"the sentence pairs in {self.train_data} (--train-data; no corpus stage)"
        return super().training_data_origin()

    def cell(self, **params) -> EvaluateSTS:
        return self.clone(EvaluateSTS if self.train_data else TrainOnFiltered, **params)

    def encoder(self, **params) -> TrainEncoder:
        return self.clone(TrainEncoder if self.train_data else TrainFilteredEncoder, **params)


@inherits(TrainOnFiltered)
class MegabatchAblation(OnTrainData, Experiment):
    """Table 5: each model trained with each mega-batch size M on the same pairs; Table 6:
    the negatives the miner picks for a few training sentences at each M (pools of the first M
    mini-batches, embedded by --probe-model trained with the largest M)."""

    stage = "experiments/megabatch-ablation"
    model = megabatch = None  # swept
    models = luigi.Parameter(default="word_avg,bilstm_avg", description="Comma-separated encoders.")
    megabatches = luigi.Parameter(default="1,20,40", description="Comma-separated mega-batch sizes M.")
    probes = count_parameter(default=2, description="Training sentences whose negatives Table 6 shows.")
    probe_model = luigi.ChoiceParameter(choices=sorted(MODEL_NAMES), default="bilstm_avg", description="Encoder that embeds the pools for Table 6.")

    def sizes(self) -> list[int]:
        return sorted({int(m) for m in comma_items(self.megabatches)})

    def runs(self) -> dict[str, EvaluateSTS]:
        return {f"{m}/{size}": self.cell(model=m, megabatch=size) for m in model_names(self.models) for size in self.sizes()}

    def probe_encoder(self) -> TrainEncoder:
        return self.encoder(model=self.probe_model, megabatch=max(self.sizes()))

    def requires(self):
        self.check_sts()
        return {**self.runs(), "probe": self.probe_encoder()}

    def report(self):
        from models.neighbours import negative_examples
        from models.training_pairs import read_pairs
        from reports.experiments import megabatch_report

        probe = self.probe_encoder()
        encoder = load_on_device(probe.output_dir, self.device)
        self.progress(f"mining negatives with {probe.output_dir}")
        pairs = read_pairs(probe.training_data(), tuple(comma_items(self.columns)))
        negatives = negative_examples(encoder.encode, pairs, self.sizes(), self.batch_size, self.probes, self.seed)
        return megabatch_report(self.results(int), negatives, self.links())


class VectorBaselines(StageTask):
    """SIF and averaged word vectors (no training) on the STS sets, with the SIF component
    fitted on a seeded sample of the training pairs' sentences (both sides); one report.json per
    baseline. Subclasses say where the pairs are (``training_data()``, ``columns``)."""

    stage = "baselines"
    columns = "reference,translation"  # the two columns that form a pair
    vectors = AbsolutePath(default="../shared/data/wordvec/glove50_4k.txt", description="word2vec/GloVe text vectors of both baselines.")
    word_counts = OptionalPath(default="../shared/data/wordvec/enwiki_vocab_min200.txt",
                               description=f"`word count` file for SIF's p(w) ({NONE}: no SIF).")
    reference_sentences = count_parameter(default=100_000, description="Training sentences (both sides, seeded sample) SIF's component is fitted on.")

    def training_data(self) -> str:
        raise NotImplementedError

    def input_files(self) -> list[str]:
        return [self.vectors, *([self.word_counts] if self.word_counts else []), *self.evaluation_files()]

    def evaluation_files(self) -> list[str]:
        return sts_files()

    def embedders(self) -> dict:
        """``{name: (embed, dim)}`` of the baselines, SIF fitted on a sample of the training sentences."""
        from models.baselines import reference_sample, vector_baselines
        from models.training_pairs import read_pairs

        pairs = read_pairs(self.training_data(), tuple(comma_items(self.columns)))
        self.reference = reference_sample(*pairs, self.reference_sentences, self.sample_seed)
        return vector_baselines(self.vectors, self.word_counts, self.reference)

    def build(self, partial_dir: Path) -> dict:
        from corpus.sts import sts_suite
        from models.evaluation import evaluate

        datasets, absent = sts_suite(sts_root())
        results = {}
        for name, (embed, dim) in self.embedders().items():
            self.progress(f"evaluating {name} on {len(datasets)} STS datasets")
            report = evaluate(embed, datasets, {"model": name, "vectors": self.vectors, "absent": absent})
            report.dim = dim
            results[name] = report.to_json()
        (partial_dir / "baselines.json").write_text(json.dumps(results, indent=2) + "\n")
        return {"baselines": sorted(results), "reference_sentences": len(self.reference), "absent": absent}

    def reports(self) -> dict:
        return read_json(self.output_dir / "baselines.json")


@inherits(SelectTrainingSet)
class EvaluateBaselines(OnSelection, VectorBaselines):
    """The vector baselines, SIF fitted on the training selection's sentences."""


class EvaluateBaselinesOnTrainData(VectorBaselines):
    """The vector baselines, SIF fitted on the sentences of given pairs (a TSV or a Parquet
    pairs dataset, as TrainEncoder's --train-data)."""

    train_data = TrainEncoder.train_data
    columns = TrainEncoder.columns
    sample_seed = SelectTrainingSet.sample_seed

    def training_data(self) -> str:
        return self.train_data

    def input_files(self) -> list[str]:
        return TrainEncoder(train_data=self.train_data).input_files() + super().input_files()


class TransferBaselinesOnTrainData(EvaluateBaselinesOnTrainData):
    """The vector baselines (SIF fitted on the given pairs' sentences) on the Table 8 tasks:
    transfer.json, each baseline's results by task."""

    stage = "baselines-transfer"

    def evaluation_files(self) -> list[str]:
        return transfer_files()

    def build(self, partial_dir: Path) -> dict:
        from models.transfer import evaluate_transfer

        tasks = load_suite()  # MissingTransferFiles names every absent file
        results = {name: evaluate_transfer(embed, tasks, progress=self.progress) for name, (embed, _) in self.embedders().items()}
        (partial_dir / "transfer.json").write_text(json.dumps(results, indent=2) + "\n")
        return {"baselines": sorted(results), "reference_sentences": len(self.reference)}

    def reports(self) -> dict:
        return json.loads((self.output_dir / "transfer.json").read_text())


@inherits(TrainOnFiltered, EvaluateBaselines)
class ModelTable(OnTrainData, Experiment):
    """Tables 7 and 9: every --models encoder trained on the same pairs, with SIF and the
    averaged input vectors (--vectors, --word-counts; --without-baselines: none) as rows of
    the same table: STS per year, the 2012–2016 mean, STS 2017 dev and STS Benchmark;
    with --with-transfer also Table 8 (the transfer tasks, workflows.transfer)."""

    stage = "experiments/model-table"
    model = None  # one row per --models entry
    models = luigi.Parameter(default="word_avg,trigram_avg,lstm_avg,trigram_word", description="Comma-separated encoders (rows of the table).")
    without_baselines = luigi.BoolParameter(default=False, description="Leave out the SIF and averaged-vector rows.")
    with_transfer = luigi.BoolParameter(default=False,
                                        description="Also Table 8: every row on the transfer tasks (EvaluateTransfer; needs --train-data).")

    def runs(self) -> dict[str, EvaluateSTS]:
        return {m: self.cell(model=m) for m in model_names(self.models)}

    def baselines(self) -> VectorBaselines | None:
        if self.without_baselines or not self.vectors:
            return None
        return self.clone(EvaluateBaselinesOnTrainData if self.train_data else EvaluateBaselines)

    def transfer_runs(self) -> dict[str, luigi.Task]:
        """With --with-transfer: Table 8 of every model (EvaluateTransfer) and of the baselines."""
        if not self.with_transfer:
            return {}
        if not self.train_data:
            raise InputError("ModelTable --with-transfer needs --train-data (Table 8 of encoders trained on a corpus selection is not wired yet)")
        baselines = {"transfer/baselines": self.clone(TransferBaselinesOnTrainData)} if self.baselines() else {}
        return {**{f"transfer/{m}": self.clone(EvaluateTransfer, model=m) for m in model_names(self.models)}, **baselines}

    def requires(self):
        self.check_sts()
        absent = [path for path in (self.vectors, self.word_counts) if path and not Path(path).is_file()] if self.baselines() else []
        if absent:
            raise FileNotFoundError(f"baseline file(s) not found: {', '.join(absent)} (--without-baselines leaves them out)")
        return {**self.runs(), **({"baselines": self.baselines()} if self.baselines() else {}), **self.transfer_runs()}

    def transfer_results(self) -> tuple[dict, dict]:
        """(Table 8 results by row name, the paper's row for each trained model it has one for)."""
        from models.transfer import paper_scores

        transfer, paper = {}, {}
        for name, task in self.transfer_runs().items():
            if name == "transfer/baselines":
                transfer.update(task.reports())
                continue
            transfer[task.model] = json.loads((task.output_dir / "report.json").read_text())["tasks"]
            if found := paper_scores(task.model, self.combine):
                paper[task.model] = found
        return transfer, paper

    def report(self):
        from models.evaluation import StsReport
        from reports.experiments import model_table_report, sts_summary

        rows = {name: {"kind": "trained", **run_result(task)} for name, task in self.runs().items()}
        if self.baselines():
            for name, data in self.baselines().reports().items():
                report = StsReport.from_json(data)
                rows[name] = {"kind": "baseline", "dim": report.dim, "sts": sts_summary(report)}
        return model_table_report(rows, self.links(), *self.transfer_results())


CORPUS_KEYS = frozenset(name for name, _ in AssignDeciles.get_params())


@inherits(TrainOnFiltered, CorpusStats)
class DataSourceComparison(Experiment):
    """Tables 2 and 3: for each source (its own corpus options, e.g. ``--sources '{"news":
    {"inputs": "news.gz"}, "paranmt": {"pairs": "para-nmt-5m.txt"}}'``), the corpus statistics
    and the STS of --models trained on an equal-sized sample of each (the smallest source's
    selection sets the size). Options not given in a source are this task's."""

    stage = "experiments/data-source-comparison"
    model = None
    sources = luigi.DictParameter(default={"demo": {}},
                                  description="Source name → corpus options (inputs, source_language, pairs, translator, nmt, engine, pp_vectors …).")
    models = luigi.Parameter(default="word_avg,trigram_avg,lstm_avg", description="Comma-separated encoders (the paper's Table 3 models).")
    decile = luigi.Parameter(default="", description="Deciles the samples come from (empty: all, as the paper's samples).")
    n_pairs = count_parameter(default=100_000, description="Pairs per source (the paper: 100k); the smallest source's count when fewer.")

    def source_options(self) -> dict[str, dict]:
        options = {name: dict(spec) for name, spec in self.sources.items()}
        for name, spec in options.items():
            if set(spec) - CORPUS_KEYS:
                raise InputError(f"source {name!r}: unknown option(s) {sorted(set(spec) - CORPUS_KEYS)}; allowed: {sorted(CORPUS_KEYS)}")
        return options

    def requires(self):
        self.check_sts()
        sources = self.source_options()
        return {
            **{f"stats/{name}": self.clone(CorpusStats, **spec) for name, spec in sources.items()},
            **{f"sample/{name}": self.clone(SelectTrainingSet, **spec) for name, spec in sources.items()},
        }

    def equal_size(self) -> int:
        """The smallest source's selection: every source is then sampled to that size."""
        return min(read_manifest(self.requires()[f"sample/{name}"].output_dir)["selected"] for name in self.sources)

    def runs(self) -> dict[str, TrainOnFiltered]:
        size = self.equal_size()
        return {f"{name}/{m}": self.clone(TrainOnFiltered, model=m, n_pairs=size, **spec)
                for name, spec in self.source_options().items() for m in model_names(self.models)}

    def run(self):
        yield list(self.runs().values())  # known only once the samples exist: dynamic dependencies
        super().run()

    def training_data_origin(self) -> str:
        return "; ".join(f"{name}: {pairs_origin({**self.param_kwargs, **spec})}" for name, spec in self.source_options().items())

    def report(self):
        from corpus.stats import table2_rows
        from reports.experiments import data_source_report

        stats = {name: read_json(self.requires()[f"stats/{name}"].output_dir / "stats.json") for name in self.sources}
        sources = {
            name: {"pairs": next(iter(by_model.values()))["pairs"], "models": {m: r["sts"] for m, r in by_model.items()}, "stats": stats[name]}
            for name, by_model in self.results().items()
        }
        table2 = table2_rows({name: table["(all)"] for name, table in stats.items()})
        links = {**self.links(),
                 **{f"statistics per domain: {name}": os.path.relpath(self.requires()[f"stats/{name}"].output_dir / "stats.md", self.output_dir)
                    for name in sources}}
        return data_source_report(sources, table2, links)


# What a stage's manifest counts, as (stage, count: a key of its "rows" or of the manifest) →
# how the report's provenance names it; in pipeline order (here, below the stages it names).
DATA_SIZES = {
    (stages.INGEST, "bitext"): "bitext sentence pairs read",
    (stages.BACKTRANSLATE, "pairs"): "back-translated pairs",
    (stages.TRANSLATIONS, "pairs"): "pairs of translations made elsewhere",
    (stages.IMPORT, "pairs"): "ParaNMT release pairs imported",
    (AssignDeciles.stage, "corpus"): "scored pairs in the corpus (all deciles)",
    (SelectTrainingSet.stage, "training"): "training pairs selected",
    (TrainEncoder.stage, "pairs"): "pairs each encoder trained on",
    (VectorBaselines.stage, "reference_sentences"): "sentences SIF's common component is fitted on",
    (EvaluateSTS.stage, "datasets"): "STS datasets each model is evaluated on",
}
