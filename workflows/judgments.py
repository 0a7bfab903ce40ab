"""ScoresAgainstJudgments: every score a corpus pair can carry, checked against people's judgments.

``luigi --module workflows ScoresAgainstJudgments --train-data pairs.tsv --pp-vectors vectors.txt
--local-scheduler`` trains the encoders of --models on the pairs (or on the corpus selection,
as the other experiments do), then scores every judged set (corpus.judgments) with the corpus's
own functions, the encoders and an outside sentence-transformers model (models.judged), and
writes the statistics (corpus.agreement) as report.json, report.md, index.html and two PNGs
(reports.judgments) under ``<workdir>/experiments/scores-vs-judgments/<fingerprint>/``.

The PP model is the corpus's: --pp-vectors or --pp-encoder, else the one the corpus bootstraps
(TrainPPModel; with --train-data a Word Avg over Moses words trained on those pairs). The
translation score needs a translator named with --translator (the one the corpus is built with).
The judged sets' folders are settings ([sts] dir, [transfer] mrpc_dir and [judgments] below); a
set whose files are absent is skipped with its reason on the page.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

import luigi
from luigi.util import inherits

from corpus import judgments as judged_sets
from corpus.agreement import Bootstrap
from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.inputs import source_languages
from workflows.base import StageTask
from workflows.config import NONE, AbsolutePath, NoneSpelled, config_from, with_settings
from workflows.corpus import ScorePairs
from workflows.encoders import TrainEncoder, load_on_device, sts_files, sts_root
from workflows.experiments import Experiment, OnTrainData, TrainOnFiltered, model_names
from workflows.nmt import WMT21
from workflows.transfer import transfer

SHARED = WMT21.parent.parent  # ../shared/data (or $PARANMT_SHARED_DATA)
JUDGED_SETS = ("sts", "stsb", "sick", "msrp", "pan", "paracrawl", "wmt21")


class judgments(luigi.Config):  # noqa: N801 - the luigi.cfg section name
    pan_dir = AbsolutePath(default=str(SHARED / "en-paraphrase" / "pan-mt-metrics"),
                           description="PAN folder: pan-{train,test}_s{1,2}.txt[.gz], pan-{train,test}.labels.")
    paracrawl_dir = AbsolutePath(default=str(SHARED / "csen-more" / "paracrawl-human-evaluations"),
                                 description="ParaCrawl's human-labelled samples: <release>/sorted.en-cs.")
    wmt21_dir = AbsolutePath(default=str(SHARED / "translations" / "wmt21"),
                             description="WMT21 into English: ad-seg-scores-<xx>-en.csv and "
                                         "newstest2021.<xx>-en.{src.<xx>,ref.A.en,ref.B.en,hyp.<system>.en}[.gz], in the folder or its "
                                         "humaneval/newstest2021-toen, sources, references, system-outputs.")


# A --judged-sets name that stands for several sets: wmt21 is every direction into English.
SET_GROUPS = {"wmt21": tuple(f"wmt21-{direction}" for direction in judged_sets.WMT21_DIRECTIONS)}


def set_loaders() -> dict:
    """Each judged set by its --judged-sets name (JUDGED_SETS; wmt21-<xx> for one WMT21 direction):
    its loader and the folder it reads."""
    config, root = judgments(), sts_root()
    wmt21 = {f"wmt21-{direction}": (partial(judged_sets.wmt21_adequacy, direction=direction), Path(config.wmt21_dir))
             for direction in judged_sets.WMT21_DIRECTIONS}
    return {
        "sts": (judged_sets.sts_years, root), "stsb": (judged_sets.stsb, root), "sick": (judged_sets.sick, root),
        "msrp": (judged_sets.msrp, Path(transfer().mrpc_dir)), "pan": (judged_sets.pan, Path(config.pan_dir)),
        "paracrawl": (judged_sets.paracrawl, Path(config.paracrawl_dir)), **wmt21,
    }


@inherits(TrainOnFiltered)
@with_settings(Bootstrap)
class ScoresAgainstJudgments(OnTrainData, Experiment):
    """Spearman, Pearson (and ROC AUC for yes/no judgments) of every score with people's
    judgments, with bootstrap 95 % intervals, and the mean judgment per decile of each score, on
    STS 2012–2016, STS-B, SICK, MSRP, PAN, ParaCrawl's labelled cs–en samples, WMT21's adequacy
    judgments and --judged-file."""

    stage = "experiments/scores-vs-judgments"
    model = None  # one encoder per --models entry
    models = luigi.Parameter(default="word_avg,trigram_avg",
                             description="Comma-separated encoders trained (as the other experiments do) whose cosine is a score.")
    without_encoders = luigi.BoolParameter(default=False, description="Train no encoder: only the corpus's scores, --encoders and the outside model.")
    encoders = luigi.Parameter(default="", description="Comma-separated trained encoder folders (TrainEncoder outputs) whose cosine is also a score.")
    sentence_transformer = NoneSpelled(default="sentence-transformers/all-MiniLM-L6-v2",
                                       description="Outside baseline: a sentence-transformers model name or folder, loaded offline only "
                                                   f"(all-MiniLM-L6-v2: the bench extra's packaged copy); {NONE}: none.")
    judged_sets = NoneSpelled(default=",".join(JUDGED_SETS),
                              description="Comma-separated judged sets: sts (2012–2016), stsb, sick, msrp, pan, paracrawl, wmt21; "
                                          f"{NONE}: only --judged-file.")
    judged_file = AbsolutePath(default="", description="Your own judged pairs: sentence TAB sentence TAB judgment (a number; only 0 and 1: yes/no).")

    def runs(self) -> dict:
        return {}

    def chosen_sets(self) -> dict:
        loaders = set_loaders()
        names = [member for name in comma_items(self.judged_sets) for member in SET_GROUPS.get(name, (name,))]
        unknown = sorted(set(names) - set(loaders))
        if unknown:
            raise InputError(f"--judged-sets: unknown set(s) {unknown}; choose from {sorted({*loaders, *SET_GROUPS})}")
        return {name: loaders[name] for name in names}

    def encoder_tasks(self) -> dict[str, TrainEncoder]:
        return {} if self.without_encoders else {m: self.encoder(model=m) for m in model_names(self.models)}

    def pp_model_task(self) -> StageTask | None:
        """The stage that trains the PP model, None when --pp-vectors or --pp-encoder names it."""
        if self.train_data and not (self.pp_vectors or self.pp_encoder):
            return self.encoder(model="word_avg", tokens="words")
        return self.clone(ScorePairs).requires().get("pp")  # the corpus's own; InputError when both are given

    def translator_task(self) -> StageTask | None:
        """The model that gives the translation score: only a --translator the user names."""
        needs = any(name == "paracrawl" or name.startswith("wmt21-") for name in self.chosen_sets())
        return self.clone(ScorePairs).model_task("ctranslate2") if self.translator and needs else None

    def requires(self):
        tasks = {f"encoder/{m}": task for m, task in self.encoder_tasks().items()}
        for name, task in (("pp", self.pp_model_task()), ("translator", self.translator_task())):
            if task:
                tasks[name] = task
        return tasks

    def given_encoders(self) -> list[str]:
        return [str(Path(path).resolve()) for path in comma_items(self.encoders)]

    def input_files(self) -> list[str]:
        folders = list(dict.fromkeys(folder for _, folder in self.chosen_sets().values() if folder != sts_root()))
        files = sts_files() if any(folder == sts_root() for _, folder in self.chosen_sets().values()) else []
        files += [str(p) for folder in folders if folder.is_dir() for p in sorted(folder.rglob("*")) if p.is_file()]
        files += [path for path in (self.pp_vectors, self.judged_file) if path]
        return files + [str(p) for folder in (*self.given_encoders(), self.pp_encoder) if folder
                        for p in sorted(Path(folder).rglob("*")) if p.is_file()]

    def check_inputs(self) -> None:
        missing = [path for path in self.given_encoders() if not Path(path).is_dir()]
        if missing:
            raise InputError(f"--encoders: not a folder: {', '.join(missing)}")
        if self.judged_file:
            judged_sets.judgment_file(self.judged_file)  # its first mistake, in one line, before any work
        elif not self.judged_sets:
            raise InputError(f"--judged-sets {NONE} and no --judged-file: there are no judged pairs to score against")
        super().check_inputs()

    def training_data_origin(self) -> str:
        if not self.encoder_tasks() and not self.pp_model_task():
            return "none: no encoder was trained here (the scores' models were given)"
        return super().training_data_origin()

    def pp_model(self, scratch: Path):
        """The corpus's PP model: the vectors file, or a Word Avg encoder's vectors written as
        ScorePairs writes them (pipelines.score.export_encoder_vectors) and read back."""
        from corpus.similarity import WordAverager
        from corpus.wordvec import load_vectors_cached
        from pipelines.score import export_encoder_vectors

        if self.pp_vectors:
            return WordAverager(*load_vectors_cached(self.pp_vectors)), f"vectors file {self.pp_vectors}"
        encoder = self.pp_encoder or str(self.requires()["pp"].output_dir)
        export_encoder_vectors(encoder, scratch / "pp_vectors.txt")
        return WordAverager(*load_vectors_cached(scratch / "pp_vectors.txt")), f"Word Avg encoder {encoder}"

    def embedders(self) -> tuple[dict, dict[str, str]]:
        """``{score name: embed}`` of the trained and given encoders and the outside model, and
        what each is (or why the outside model is not there)."""
        from models.encode import load_encoder
        from models.judged import sentence_transformer

        embed, what = {}, {}
        for name, task in self.encoder_tasks().items():
            embed[f"cosine {name}"] = load_on_device(task.output_dir, self.device).encode
            what[f"cosine {name}"] = f"cosine of the embeddings of {name} trained here ({task.output_dir})"
        for folder in self.given_encoders():
            encoder = load_encoder(folder, None if self.device == "auto" else self.device)
            name = f"cosine {encoder.config.model} ({Path(folder).name})"
            embed[name], what[name] = encoder.encode, f"cosine of the embeddings of the given encoder {folder}"
        if self.sentence_transformer:
            outside, loaded = sentence_transformer(self.sentence_transformer)
            name = f"cosine {Path(self.sentence_transformer).name}"
            if outside:
                embed[name], what[name] = outside, f"cosine of the embeddings of the sentence-transformers model {loaded} (outside baseline)"
            else:
                what[name] = f"not available: {loaded}"
        return embed, what

    def report(self):
        from corpus.agreement import agreement, decile_means
        from corpus.language import LanguageModel
        from models.judged import CORPUS_SCORES, corpus_scores, cosine_scores, translation_scores
        from models.nmt.model import NmtModel
        from models.nmt.translate import load_translator
        from reports.judgments import judgments_report

        loaders = {name: (lambda load=load, folder=folder: load(folder)) for name, (load, folder) in self.chosen_sets().items()}
        if self.judged_file:
            loaders["file"] = lambda: judged_sets.judgment_file(self.judged_file)
        found, skipped = judged_sets.gather(loaders)
        language, bootstrap = LanguageModel.load(), config_from(self, Bootstrap)
        embed, described = self.embedders()
        unavailable = {name: why.removeprefix("not available: ") for name, why in described.items() if name not in embed}
        translator = None
        if self.translator_task():
            translator = load_translator(NmtModel.load(self.requires()["translator"].output_dir), "ctranslate2")
        elif any(s.source is not None for s in found):
            unavailable["trans_score"] = "no translator named (--translator)"
        translated = set(source_languages(self.source_language))
        results = {}
        with tempfile.TemporaryDirectory() as scratch:
            pp_model, pp_described = self.pp_model(Path(scratch))
            for judged in found:
                self.progress(f"scoring {judged.name} ({len(judged)} pairs)")
                values = corpus_scores(judged, pp_model, language)
                if judged.source_language != "cs":
                    values.pop("source_p_cs", None)  # P(Czech) says nothing of another language's side
                if judged.english_pairs:
                    values.update({name: cosine_scores(judged, function) for name, function in embed.items()})
                if judged.source is not None and translator and judged.source_language in translated:
                    values["trans_score"] = translation_scores(judged, translator)
                hashes = judged.hashes()
                results[judged.name] = {
                    "pairs": len(judged), "kind": judged.kind, "scale": judged.scale, "files": judged.files, "left_out": dict(judged.left_out),
                    "scores": {name: {**agreement(v, judged.judgment, judged.binary, bootstrap), "deciles": decile_means(v, judged.judgment, hashes)}
                               for name, v in values.items()},
                }
        scores = {**CORPUS_SCORES, "pp_sim": f"{CORPUS_SCORES['pp_sim']}: {pp_described}", **{n: d for n, d in described.items() if n in embed}}
        if translator:
            scores["trans_score"] = f"{CORPUS_SCORES['trans_score']}: {self.translator}"
        return judgments_report(results, scores, skipped, unavailable, bootstrap.resamples)
