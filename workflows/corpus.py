"""The corpus stages: score the back-translated pairs, rank them into deciles, select training data.

  ImportParaphrases   ParaNMT release files → pairs/   (only with --pairs <release files>)
  SelectTopHalf       pairs → the top half by translation score      ┐ the bootstrapped PP model
  TrainPPModel        Word Avg trained on that half (TrainEncoder)    ┘ (paper footnote 2)
  ScorePairs          pairs → scored/   (the scores of every pair, by id)
  AssignDeciles       pairs + scored → corpus/decile_pp=<d>/, summary.md + summary.json
  SelectTrainingSet   corpus → train/<fp>/pairs/   (scorer, deciles, length, release filters, sample)
  CorpusStats         corpus → the paper's Table 2 per source domain (stats.md + stats.json)

Where the pairs come from (``--pairs``): empty, BackTranslate of the bitext; an existing
``pairs`` dataset directory; or ParaNMT release files (imported first).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from pathlib import Path

import luigi
import pyarrow.parquet as pq
from luigi.task import flatten
from luigi.util import inherits

import schemas
from corpus import translation_check
from corpus.deciles import SCORERS
from corpus.errors import InputError
from corpus.outputs import read_json, read_manifest, reading
from corpus.selection import Rules, Sample
from pipelines import io, stages
from pipelines.batches import VECTORIZED_BATCH_ROWS
from pipelines.deciles import DEFAULT_SAMPLE, write_corpus
from pipelines.release import import_release
from pipelines.score import export_encoder_vectors, score_pairs, sha256_of
from pipelines.select import select_top_half, select_training_set
from pipelines.stats import GROUPS, write_corpus_stats
from workflows.backtranslate import BackTranslate
from workflows.base import StageTask, in_workdir
from workflows.config import (
    NONE,
    CorpusParameter,
    CorpusPath,
    OptionalPath,
    config_from,
    count_parameter,
    with_settings,
)
from workflows.encoders import TrainEncoder
from workflows.ingest import ReadsRawFiles, remove_plain_copies
from workflows.nmt import BACKTRANSLATE_ENGINE, TranslatorChoice, without_empty
from workflows.translations import TRANSLATIONS_HELP, ImportTranslations

log = logging.getLogger("luigi-interface")


# Systems named in a corpus's one line: a WMT corpus has 180 (one per test set and system), most
# names repeated across language pairs.
SYSTEMS_NAMED = 12


def named_briefly(systems: list[str]) -> str:
    """The distinct system names, in their first order, the first ``SYSTEMS_NAMED`` of them and how
    many more: ``Online-A, Online-B, … and 40 more names``."""
    names = list(dict.fromkeys(systems))
    more = f" and {len(names) - SYSTEMS_NAMED} more names" if len(names) > SYSTEMS_NAMED else ""
    return ", ".join(names[:SYSTEMS_NAMED]) + more

class ImportParaphrases(ReadsRawFiles):
    """ParaNMT-50M release files (reference TAB back-translation TAB score) → a ``pairs`` dataset.

    The release's third column is the authors' PP similarity, not a translation score; it is
    stored in ``trans_score`` (so ``decile_trans`` ranks it) and the manifest says so.
    """

    stage = stages.IMPORT

    files = luigi.Parameter(description="Comma-separated ParaNMT release files or globs (gzip or plain).")

    def resolved_inputs(self) -> str:
        return self.files

    def build(self, partial_dir: Path) -> dict:
        pairs_dir, rejects_dir = str(partial_dir / "pairs"), str(partial_dir / "rejects")
        plan = self.plan(partial_dir)
        import_release(self.sized_runner(plan.lines), plan, pairs_dir, rejects_dir, self.max_line_bytes, str(partial_dir), self.progress)
        remove_plain_copies(partial_dir)
        io.ensure_nonempty(pairs_dir, schemas.PAIRS)
        io.ensure_nonempty(rejects_dir, schemas.REJECTS)
        rows = io.dataset_rows(pairs_dir)
        return {
            "schema": {"pairs": schemas.version_of(schemas.PAIRS), "rejects": schemas.version_of(schemas.REJECTS)},
            "rows": {"pairs": rows},
            "rejects": self.count_rejects(rows, Path(rejects_dir)),
            "work_elements_this_run": len(plan.tasks),
            "note": "trans_score holds the release's third column (the authors' PP similarity), not a translation score",
        }


class ReadsPairs(TranslatorChoice):
    """Parameters and helpers of every task that reads the ``pairs`` dataset."""

    engine = BACKTRANSLATE_ENGINE
    pairs = CorpusParameter(
        default="",
        description="Pairs to score instead of back-translating --inputs: a `pairs` dataset directory, or "
        "comma-separated ParaNMT release files/globs (imported first). Empty: BackTranslate.",
    )
    translations = CorpusParameter(default="", description=TRANSLATIONS_HELP)
    paraphrases = BackTranslate.paraphrases
    diversity = BackTranslate.diversity

    def pairs_params(self) -> dict:
        return {**self.input_params(), "translator": self.translator, "nmt": self.nmt, "engine": self.engine, "pairs": self.pairs,
                "translations": self.translations, "paraphrases": self.paraphrases, "diversity": self.diversity}

    def pairs_task(self) -> StageTask | None:
        """The stage that writes the pairs (None when --pairs names an existing dataset)."""
        if self.translations:
            if self.pairs:
                raise InputError("give --translations or --pairs, not both")
            return ImportTranslations(**self.input_params(), translations=self.translations, translator=self.translator, nmt=self.nmt)
        if not self.pairs:
            return BackTranslate(**self.input_params(), translator=self.translator, nmt=self.nmt, paraphrases=self.paraphrases,
                                 diversity=self.diversity, **without_empty(engine=self.engine))
        if Path(self.pairs).is_dir():
            return None
        return ImportParaphrases(files=self.pairs)

    def translated_by(self) -> str:
        """Which model made the pairs' translations, as their stage's manifest says."""
        task = self.pairs_task()
        if task is None:
            return f"the pairs dataset {self.pairs}"
        manifest = task.verified_manifest()
        check = f"; translation check: {translation_check.figures_line(manifest['translation_check'])}" if manifest.get("translation_check") else ""
        if "systems" in manifest:
            return (f"translations made elsewhere, {len(manifest['systems'])} system(s) ({named_briefly(manifest['systems'])}); "
                    f"trans_score: {manifest['trans_score']}{check}")
        if "model" not in manifest:
            return "the ParaNMT-50M release (its own back-translations)"
        return f"{manifest['model']}, {manifest['engine']} on {manifest['device']}{check}"

    def pairs_dir(self) -> str:
        task = self.pairs_task()
        return str(task.output_dir / "pairs") if task else os.path.abspath(self.pairs)  # workers open it

    def check_inputs(self) -> None:
        """A given pairs dataset has Parquet files, each with every column of a ``pairs`` dataset."""
        super().check_inputs()
        if self.pairs and Path(self.pairs).is_dir():
            check_pairs_dataset(self.pairs)

    def pairs_files(self) -> tuple[list[str], int]:
        """The pairs' Parquet files and their rows: as the pairs stage's manifest records them,
        or a given dataset's files (inputs of the fingerprint) and the rows of their footers."""
        if task := self.pairs_task():
            return task.committed("pairs")
        files = io.dataset_files(os.path.abspath(self.pairs))
        return files, io.file_rows(files)

    def translation_scores(self) -> bool:
        """Whether the pairs have translation scores: every pair has one, or none has (translations
        made elsewhere that no model scored); an InputError where only some have."""
        files, rows = self.pairs_files()
        missing = io.null_rows(files, "trans_score")
        if 0 < missing < rows:
            raise InputError(f"{self.pairs_dir()}: {missing} of {rows} pairs have no translation score and the others have one: "
                             "rank them apart (or score them all with --translator)")
        return missing == 0

    def given_pairs_files(self) -> list[str]:
        """Files of a dataset given by path: they are inputs of the fingerprint."""
        return io.dataset_files(self.pairs) if self.pairs and Path(self.pairs).is_dir() else []


def check_pairs_dataset(directory: str) -> None:
    """InputError naming the dataset and what it lacks: no Parquet file, or a file without the
    columns of a ``pairs`` dataset (schemas.PAIRS)."""
    files = io.dataset_files(os.path.abspath(directory))
    if not files:
        raise InputError(f"--pairs {directory}: no Parquet files (part-*.parquet) in it")
    for path in files:
        with reading(path, "--pairs must name a pairs dataset (a BackTranslate or ImportParaphrases output's pairs/)"):
            names = schemas.upgraded_names(pq.read_schema(path).names)
        if missing := [name for name in schemas.PAIRS.names if name not in names]:
            raise InputError(f"--pairs {directory}: {path} has no column {', '.join(missing)}: it is not a pairs dataset "
                             "(a BackTranslate or ImportParaphrases output's pairs/, columns in schemas/COLUMNS.md)")


class SelectTopHalf(ReadsPairs, StageTask):
    """The pairs whose translation score is in the top half: the bootstrapped PP model's training data."""

    stage = "pp_train"
    sample_size = count_parameter(default=DEFAULT_SAMPLE, significant=False, description="Keys sampled to bracket the exact median.")

    def requires(self):
        return [task for task in [self.pairs_task()] if task]

    def input_files(self) -> list[str]:
        return self.given_pairs_files()

    def build(self, partial_dir: Path) -> dict:
        if not self.translation_scores():
            raise InputError("the pairs have no translation score (translations made elsewhere, no --translator named): the PP model "
                             "is bootstrapped on their top half by it; give --pp-vectors or --pp-encoder, or --translator to score them")
        out = str(partial_dir / "pairs")
        files, _ = self.pairs_files()
        counts = select_top_half(self.runner_for(files), files, out, str(partial_dir), self.sample_size, self.progress)
        io.ensure_nonempty(out, schemas.PAIRS)
        io.check_rows(self.stage, io.dataset_rows(out), counts["selected"], "pairs selected")
        self.progress(f"{counts['selected']} of {counts['pairs']} pairs at or above the median translation score", 100)
        return {"schema": {"pairs": schemas.version_of(schemas.PAIRS)}, **counts}


class TrainPPModel(ReadsPairs, TrainEncoder):
    """Word Avg trained on the top half of the pairs by translation score (paper footnote 2): the
    PP model that scores the corpus when no vectors file or encoder is given. Training options
    are TrainEncoder's (``--TrainPPModel-epochs 1`` …)."""

    stage = "pp_model"
    model = luigi.ChoiceParameter(choices=["word_avg"], default="word_avg", description="PP similarity needs a word-averaging model.")
    tokens = luigi.ChoiceParameter(choices=["words"], default="words", description="PP similarity averages word vectors (Moses words).")

    def requires(self):
        return SelectTopHalf(**self.pairs_params())

    def training_data(self) -> str:
        return str(self.requires().output_dir / "pairs")

    def input_files(self) -> list[str]:
        return self.given_pairs_files() + super().input_files()


class ScorePairs(ReadsPairs, StageTask):
    """Trigram overlap, PP similarity, language and diversity of every pair (SPEC.md §3) → ``scored``."""

    stage = "score"

    pp_vectors = CorpusPath(default="", description="PP model as a word2vec/GloVe text vectors file.")
    pp_encoder = CorpusPath(default="",
                            description="PP model as a trained Word Avg encoder over Moses words (a TrainEncoder --tokens words output directory).")
    batch_rows = count_parameter(default=VECTORIZED_BATCH_ROWS, significant=False, description="Pairs per vectorized batch.")

    @functools.cached_property
    def checked_pp_encoder(self) -> str:
        """A given --pp-encoder, checked to be a Word Avg over words (its word vectors are the PP
        model) when the task is scheduled, before any work: an InputError in one line otherwise."""
        if not self.pp_encoder:
            return ""
        from models.encoder_io import load_config  # imports torch: only for a given encoder

        try:
            config = load_config(Path(self.pp_encoder))
        except (OSError, ValueError, KeyError) as error:
            raise InputError(f"--pp-encoder {self.pp_encoder}: {error}") from None
        if config.model != "word_avg" or config.tokens != "words":
            raise InputError(f"--pp-encoder {self.pp_encoder} is a {config.model} over {config.tokens}: the PP similarity is a Word Avg "
                             "over Moses words (train one with TrainEncoder --model word_avg --tokens words)")
        return self.pp_encoder

    def requires(self):
        if self.pp_vectors and self.pp_encoder:
            raise InputError("give --pp-vectors or --pp-encoder, not both")
        upstream = {"pairs": task} if (task := self.pairs_task()) else {}
        if not (self.pp_vectors or self.checked_pp_encoder):
            upstream["pp"] = TrainPPModel(**self.pairs_params())
        return upstream

    def input_files(self) -> list[str]:
        encoder = [str(p) for p in sorted(Path(self.pp_encoder).rglob("*")) if p.is_file()] if self.pp_encoder else []
        return self.given_pairs_files() + ([self.pp_vectors] if self.pp_vectors else []) + encoder

    def scored_dir(self, root: Path | None = None) -> Path:
        return (root or self.output_dir) / "scored"

    def _pp_model(self, partial_dir: Path) -> tuple[str, dict]:
        """The vectors file the scorers load, and the manifest's record of the model."""
        if self.pp_vectors:
            return self.pp_vectors, {"kind": "vectors file", "path": self.pp_vectors, "sha256": sha256_of(self.pp_vectors)}
        from models.encoder_io import WEIGHTS

        encoder_dir = self.pp_encoder or str(self.requires()["pp"].output_dir)
        vectors = partial_dir / "pp_vectors.txt"
        export_encoder_vectors(encoder_dir, vectors)
        kind = "word_avg encoder" if self.pp_encoder else "word_avg encoder bootstrapped on the top half by translation score"
        return str(vectors), {"kind": kind, "path": in_workdir(encoder_dir), "sha256": sha256_of(Path(encoder_dir) / WEIGHTS)}

    def build(self, partial_dir: Path) -> dict:
        vectors, model = self._pp_model(partial_dir)
        (files, pairs), scored_dir = self.pairs_files(), str(self.scored_dir(partial_dir))
        self.progress(f"scoring {len(files)} shard(s) with {model['kind']} {model['path']}")
        score_pairs(self.runner_for(files), files, scored_dir, vectors, self.batch_rows, self.progress)
        io.ensure_nonempty(scored_dir, schemas.SCORED)
        rows = io.dataset_rows(scored_dir)
        io.check_rows(self.stage, rows, pairs, "pairs")
        self.progress(f"{rows} pairs scored", 100)
        return {"schema": {"scored": schemas.version_of(schemas.SCORED)}, "rows": {"scored": rows}, "pp_model": model,
                "pairs_dir": in_workdir(self.pairs_dir())}


def upstream_rejects(task: luigi.Task) -> dict[str, dict]:
    """Rejects recorded in the manifests of every stage ``task`` depends on, by stage."""
    found: dict[str, dict] = {}
    for dependency in flatten(task.requires()):
        found.update(upstream_rejects(dependency))
        if isinstance(dependency, StageTask) and dependency.complete():
            rejects = read_manifest(dependency.output_dir).get("rejects")
            if rejects:
                found[dependency.stage] = rejects
    return found


@inherits(ScorePairs)
class AssignDeciles(StageTask):
    """Rank all pairs by each score into ten equal bins; write the corpus partitioned by
    ``decile_pp`` and its summary (summary.md, summary.json beside ``corpus/``)."""

    stage = "corpus"
    sample_size = count_parameter(default=DEFAULT_SAMPLE, significant=False,
                                  description="Keys sampled to bracket each exact cut (memory vs. bracket width).")
    examples = count_parameter(default=3, minimum=0, description="Example pairs shown per decile in the summary.")

    def requires(self):
        """The scores, and the pairs they are joined to (so a damaged pairs output is rebuilt too).
        The scores' own requirements are asked for here, so a mistake in their parameters (two PP
        models) stops the run before any stage upstream of them is built."""
        score = self.clone(ScorePairs)
        return {"scored": score, **({"pairs": pairs} if (pairs := score.requires().get("pairs")) else {})}

    def corpus_dir(self, root: Path | None = None) -> Path:
        return (root or self.output_dir) / "corpus"

    def build(self, partial_dir: Path) -> dict:
        score = self.requires()["scored"]
        scored, scored_rows = score.committed("scored")
        self.progress(f"ranking {len(scored)} shard(s) into deciles and writing the corpus partitioned by decile_pp")
        summary = write_corpus(
            self.runner_for(scored), scored, score.pairs_dir(), str(self.corpus_dir(partial_dir)), str(partial_dir),
            shown_corpus_dir=in_workdir(self.corpus_dir()), pp_model=score.verified_manifest()["pp_model"],
            rejects=upstream_rejects(self), examples=self.examples, sample_size=self.sample_size, report=self.progress,
            translated_by=score.translated_by(), ranked=[name for name in SCORERS if name != "trans" or score.translation_scores()],
        )
        io.check_rows(self.stage, io.dataset_rows(str(self.corpus_dir(partial_dir))), scored_rows, "scored pairs")
        for name, tied in summary["tied_deciles"].items():
            log.warning("%s: deciles %s of %s are decided by ties (one score each, shared with a neighbour: the id hash alone "
                        "split them): selecting them selects nothing their neighbours do not", self.stage, tied, SCORERS[name])
        return {
            "schema": {"corpus": schemas.version_of(schemas.CORPUS)},
            "rows": {"corpus": summary["rows"]},
            "partitioning": "hive: decile_pp=<d>/part-<shard>.parquet",
            "pp_model": summary["pp_model"],
            "cuts": summary["cuts"],
            "unranked_rows": summary["unranked_rows"],
            "tied_deciles": summary["tied_deciles"],
        }


@inherits(AssignDeciles)
@with_settings(Rules, Sample)
class SelectTrainingSet(StageTask):
    """Training pairs from the corpus: deciles of one scorer, the length rule, optionally English
    on both sides, diversity limits and the authors' release filters, then a seeded random sample
    of --n-pairs (all when fewer pass). The parameters are ``corpus.selection.Rules`` and
    ``Sample``, e.g. ``--scorer pp --decile 8,9 --max-unigram-f1 0.6``."""

    stage = "train"

    def requires(self):
        return self.clone(AssignDeciles)

    def build(self, partial_dir: Path) -> dict:
        rules = config_from(self, Rules)
        if (column := read_json(self.requires().output_dir / "summary.json").get("not_ranked", {}).get(rules.scorer)):
            raise InputError(f"--scorer {rules.scorer}: the corpus has no {column} (no model scored its translations); "
                             f"choose another scorer, or build the corpus with --translator to score them")
        corpus_files, _ = self.requires().committed("corpus")
        out = partial_dir / "pairs"
        counts = select_training_set(self.runner_for(corpus_files), corpus_files, rules, config_from(self, Sample), str(out), str(partial_dir),
                                     self.requires().sample_size, self.progress)
        for work in ("candidates", "duplicates"):
            shutil.rmtree(partial_dir / work, ignore_errors=True)
        if not counts["selected"]:
            raise InputError(f"no corpus pair passes {rules}; widen the deciles or loosen the rules")
        io.check_rows(self.stage, io.dataset_rows(str(out)), counts["selected"], "pairs selected")
        self.progress(f"{counts['selected']} pairs selected of {counts['passed_rules']} that pass {rules}", 100)
        return {"schema": {"training": schemas.version_of(schemas.TRAINING)}, "rows": {"training": counts["selected"]}, **counts}


class OnSelection:
    """A task that reads the pairs of the SelectTrainingSet selection with its options (the
    concrete task ``@inherits(SelectTrainingSet)``)."""

    def requires(self):
        return self.clone(SelectTrainingSet)

    def training_data(self) -> str:
        """The selection, then any --train-data sources (each with its share) after it."""
        given = getattr(self, "train_data", "")  # a TrainEncoder's
        return ",".join([str(self.requires().output_dir / "pairs"), *([given] if given else [])])


@inherits(SelectTrainingSet)
class TrainFilteredEncoder(OnSelection, TrainEncoder):
    """TrainEncoder on a SelectTrainingSet selection."""


@inherits(AssignDeciles)
class CorpusStats(StageTask):
    """The paper's Table 2 per source domain (or pivot language, or system): average length,
    average IDF, vocabulary entropy, mean PP score (standard deviations in parentheses) on a
    seeded sample of each."""

    stage = "stats"
    word_counts = OptionalPath(default="../shared/data/wordvec/enwiki_vocab_min200.txt",
                               description=f"`word count` file for IDF ({NONE}: no IDF row).")
    per_domain = count_parameter(default=100_000, description="Sentences sampled per group (the paper: 100k per domain).")
    group_by = luigi.ChoiceParameter(default="domain", choices=GROUPS,
                                     description="The column Table 2 has a column for each value of: the source domain (the paper's), the "
                                                 "pivot language or the system (translations made elsewhere), or how the pairs were "
                                                 "made (diversity: --paraphrases).")

    def requires(self):
        return self.clone(AssignDeciles)

    def input_files(self) -> list[str]:
        return [self.word_counts] if self.word_counts else []

    def build(self, partial_dir: Path) -> dict:
        files, _ = self.requires().committed("corpus")
        stats, pivots = write_corpus_stats(self.runner_for(files), files, self.per_domain, self.word_counts, str(partial_dir), self.progress,
                                           self.group_by)
        print((partial_dir / "stats.md").read_text())
        return {"group_by": self.group_by, "groups": sorted(stats), "sampled": {name: entry["sentences"] for name, entry in stats.items()},
                "pairs_per_pivot": pivots}
