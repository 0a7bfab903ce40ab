"""The cs→en model: TrainSentencePiece → TrainTranslator (fairseq) → ConvertTranslator (CTranslate2).

``EvaluateTranslator`` scores the model on newstest2021 (BLEU, chrF) next to a real system's output.
A user with a trained fairseq cs→en model gives its folder as ``--translator FOLDER`` and training
is skipped (TrainTranslator copies it: its ``model_dir``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

import luigi

from corpus.errors import InputError
from corpus.files import write_atomically
from corpus.inputs import source_languages
from corpus.outputs import MANIFEST, DamagedOutput
from models.nmt import (
    binarize,
    collapse_watch,
    convert,
    evaluate,
    export,
    fairseq_train,
    folders,
    published,
    spm,
)
from models.nmt.devices import resolve_device
from models.nmt.model import MODEL_FILE, NmtModel
from models.nmt.translate import ENGINES, DecodeOptions, load_translator
from workflows.base import StageTask
from workflows.config import (
    AbsolutePath,
    CorpusDict,
    CorpusPath,
    OptionalPath,
    config_from,
    paranmt,
    with_settings,
)
from workflows.ingest import IngestBitext, ReadsBitext

log = logging.getLogger("luigi-interface")

SHARED_DATA = Path(os.environ.get("PARANMT_SHARED_DATA", "../shared/data"))
WMT21 = SHARED_DATA / "csen" / "wmt21"


class UsesGpu:
    """Holds the ``gpu`` resource (luigi.cfg [resources]) while it runs a model on a GPU: one such
    task at a time. A run that loads no model (``loads_model``) leaves the GPU to the others."""

    engine = "fairseq"
    loads_model = True

    @property
    def resources(self) -> dict[str, int]:
        if not self.loads_model:
            return {}
        try:
            on_gpu = resolve_device(self.engine, self.device) == "cuda"
        except InputError:  # a GPU the engine cannot use: the task says so in one line when it runs
            on_gpu = False
        return {"gpu": 1} if on_gpu else {}

    def device_in_use(self) -> str:
        """What ``--device auto`` means for the engine here (StageTask.device_in_use)."""
        return resolve_device(self.engine, "auto")


# TrainTranslator's older spellings of a given fairseq model, each a case of ``--translator FOLDER``
# (a folder holding checkpoint.pt or its parts, dict.cs.txt, dict.en.txt and spm.model, or a
# TrainTranslator or ConvertTranslator output): kept, as parameters are part of an output's
# identity, but hidden from --help, and their use warned of once a command.
GIVEN_MODEL_PARAMETERS = ("model_dir", "checkpoint", "dict_dir", "spm_model", "spm_target_model")
HIDDEN = luigi.parameter.ParameterVisibility.HIDDEN
_warned: set[str] = set()


def warn_of_given_model_spellings(nmt: dict) -> None:
    """One line, once a command, when TrainTranslator's parameters (``nmt``) give a model the
    older way instead of ``--translator FOLDER``."""
    given = ", ".join(f"--{name.replace('_', '-')}" for name in GIVEN_MODEL_PARAMETERS if nmt.get(name))
    if given and given not in _warned:
        _warned.add(given)
        log.warning("%s: deprecated; give the model's folder (checkpoint.pt, dict.cs.txt, dict.en.txt, spm.model) as --translator FOLDER", given)


def without_empty(**values) -> dict:
    """Keyword arguments the user actually set: empty ones are left to the task's own config."""
    return {name: value for name, value in values.items() if value not in ("", None)}


# The translating stages' shared parameters, declared once: how a CTranslate2 model computes
# (BackTranslate, ImportTranslations, EvaluateTranslator), the device (and TrainTranslator's), the
# engine (BackTranslate, EvaluateTranslator), and the engine a task that builds BackTranslate passes down.
COMPUTE_TYPE = luigi.Parameter(default="auto",
                               description="CTranslate2 compute type: auto (float16 on GPU, the stored type on CPU), int8, float32, …")
DEVICE = luigi.ChoiceParameter(default="auto", choices=["auto", "cpu", "cuda"],
                               description="auto: the GPU when there is one and the engine can use it (CTranslate2 needs the gpu extra; "
                                           "fairseq trains with fp16 there), else the CPU.")
ENGINE = luigi.ChoiceParameter(default="ctranslate2", choices=ENGINES, description="ctranslate2 (fast, default) or fairseq (its own generator).")
BACKTRANSLATE_ENGINE = luigi.Parameter(default="", description=f"BackTranslate's translation engine {ENGINES}; empty: its configured one.")


class TranslatorChoice(ReadsBitext):
    """The parameters that choose the model of a translating stage: a published translator's
    folder (``--translator``), or the project's own model (``nmt``: TrainTranslator's parameters)."""

    translator = CorpusPath(default="",
                            description="A translator's folder: a Hugging Face Marian (OPUS-MT), M2M-100 or NLLB-200 model, a CTranslate2 model "
                                        "with its tokenizer, or a fairseq model folder (checkpoint, dictionaries, sentencepiece). Empty: the "
                                        "project's own cs→en model.")
    nmt = CorpusDict(default={}, description="TrainTranslator parameters (e.g. a preset).")

    def model_task(self, engine: str) -> StageTask:
        """The stage whose ``nmt.json`` ``engine`` loads: an imported published model, the converted
        model for CTranslate2, the checkpoint for fairseq."""
        if engine not in ENGINES:
            raise InputError(f"unknown engine {engine!r}; choose one of {ENGINES}")
        warn_of_given_model_spellings(self.nmt)
        nmt = dict(self.nmt)
        if self.translator:
            if folders.translator_kind(self.translator) != "fairseq":
                if engine != "ctranslate2":
                    raise InputError(f"--translator {self.translator}: the {engine} engine takes fairseq models only; use --engine ctranslate2")
                return ImportTranslator(translator=self.translator, source_language=self.source_language)
            nmt["model_dir"] = self.translator
        if engine == "ctranslate2":
            return ConvertTranslator(**self.input_params(), nmt=nmt)
        return TrainTranslator(**self.input_params(), **nmt)


class WritesNmtModel(StageTask):
    """A stage whose output is a model (``nmt.json``): damaged too while an output its paths
    point into (the checkpoint's, the sentencepiece models') is, so that running it rebuilds
    that one first (its own output, found sound then, is kept)."""

    def damage(self) -> str:
        try:
            NmtModel.load(self.output_dir)
        except DamagedOutput as error:
            return error.problem
        return super().damage()


class TrainSentencePiece(ReadsBitext, StageTask):
    """Train the sentencepiece vocabulary of the NMT model on the ingested bitext."""

    stage = "nmt-spm"

    vocab_size = luigi.IntParameter(default=32_000, description="Pieces per model; a soft limit, small corpora get fewer.")
    model_type = luigi.ChoiceParameter(default="unigram", choices=["unigram", "bpe", "char", "word"], description="Sentencepiece model type.")
    joint = luigi.BoolParameter(default=True, parsing=luigi.BoolParameter.EXPLICIT_PARSING,
                                description="One model for Czech and English (shared embeddings) instead of one per language.")
    character_coverage = luigi.FloatParameter(default=0.9999, description="Share of characters the vocabulary must cover.")
    input_sentence_size = luigi.IntParameter(default=2_000_000, description="Sentences sampled (seeded) to train on; 0 = all.")
    seed = luigi.IntParameter(default=1, description="Sampling seed.")

    def requires(self):
        return IngestBitext(**self.input_params())

    def model_paths(self, root: Path | None = None) -> dict[str, Path]:
        root = root or self.output_dir
        if self.joint:
            return {"cs": root / "spm.model", "en": root / "spm.model"}
        return {lang: root / f"spm.{lang}.model" for lang in ("cs", "en")}

    def build(self, partial_dir: Path) -> dict:
        files, _ = self.requires().committed("bitext")
        config = spm.SpmConfig(self.vocab_size, self.model_type, self.character_coverage, self.input_sentence_size, self.seed)
        self.progress(f"training {'a joint' if self.joint else 'per-language'} {self.model_type} model on {len(files)} shards")
        paths = spm.train_from_bitext(files, partial_dir, config, self.joint)
        sizes = {lang: spm.load(path).get_piece_size() for lang, path in paths.items()}
        self.progress(f"vocabulary sizes {sizes}", 100)
        return {"vocab_size": sizes}


class CollapsedTranslator(InputError):
    """The model a training keeps says one sentence for every source, copies or loops: nothing
    is built from it (a one-line error, as any input's that cannot work)."""


@with_settings(fairseq_train.TrainConfig)
class TrainTranslator(UsesGpu, ReadsBitext, WritesNmtModel):
    """Binarize the bitext and train a cs→en Transformer with fairseq (or take a given checkpoint).

    Checkpoints stay in the partial output directory across restarts: a killed training resumes
    from ``checkpoint_last.pt``.
    """

    stage = "nmt-train"
    keeps_partial_output = True

    valid_size = luigi.IntParameter(default=3000, description="About this many pairs (by id hash) are held out for validation.")
    device = DEVICE
    fairseq_args = luigi.Parameter(default="", description="Extra fairseq-train arguments, e.g. '--update-freq 4'.")
    accept_collapse = luigi.BoolParameter(default=False, significant=False,
                                          description="Keep a trained model whose translations at the validation of the kept checkpoint are "
                                                      "not a translator's (the collapse watch: one sentence for every source, copies, "
                                                      "loops); the run otherwise stops there, its checkpoints kept.")
    # A given model (GIVEN_MODEL_PARAMETERS): what --translator FOLDER sets (model_dir), hidden from --help.
    checkpoint = AbsolutePath(default="", visibility=HIDDEN,
                              description="Deprecated (--translator FOLDER): an existing fairseq cs→en checkpoint: skip training and use it.")
    dict_dir = AbsolutePath(default="", visibility=HIDDEN,
                            description="Deprecated (--translator FOLDER): with checkpoint, the folder holding its dict.cs.txt and dict.en.txt.")
    spm_model = AbsolutePath(default="", visibility=HIDDEN,
                             description="Deprecated (--translator FOLDER): with checkpoint, its sentencepiece model (the source one if not joint).")
    spm_target_model = AbsolutePath(default="", visibility=HIDDEN,
                                    description="Deprecated (--translator FOLDER): with checkpoint, the target sentencepiece model if not joint.")
    model_dir = AbsolutePath(default="", visibility=HIDDEN,
                             description="Deprecated spelling of --translator FOLDER: a fairseq model folder, a TrainTranslator or "
                                         "ConvertTranslator output, or one from `python -m benchmarks gpu_run` (checkpoint in parts, "
                                         "dictionaries, sentencepiece): skip training and use it.")

    def requires(self):
        if self.checkpoint or self.model_dir:
            return []
        return {"bitext": IngestBitext(**self.input_params()), "spm": TrainSentencePiece(**self.input_params())}

    def resolved_preset(self) -> str | None:
        """The preset this training is known by: as given, or for ``auto`` the one the bitext's size
        picks on this machine's device (fairseq_train.preset_for: the embedded demo's 400 pairs get
        the tiny model), unless the one it picks on the other device is trained already in this
        work directory (a model trained on a GPU is used on a CPU, not trained again); None for
        ``auto`` before the bitext is ingested (its size is not known yet)."""
        if self.preset != "auto":
            return self.preset
        bitext = self.requires()["bitext"]
        if not (bitext.output_dir / MANIFEST).exists():
            return None
        _, pairs = bitext.committed("bitext")
        here = resolve_device("fairseq", self.device)
        other = fairseq_train.preset_for(pairs, "cpu" if here == "cuda" else "cuda")
        if other != (mine := fairseq_train.preset_for(pairs, here)) and self.clone(preset=other).complete():
            return other
        return mine

    def identifying_parameters(self) -> dict[str, str]:
        """A translator is what it learned: ``auto`` as the preset it resolves to, and not the
        device it trains on (a model trained on a GPU serves a CPU, where it runs in int8)."""
        parameters = super().identifying_parameters()
        parameters.pop("device", None)
        if self.requires() and (preset := self.resolved_preset()):
            parameters["preset"] = preset
        return parameters

    def input_files(self) -> list[str]:
        if self.model_dir:
            try:
                return [str(path) for path in folders.fairseq_files(Path(self.model_dir))]
            except InputError:
                return []  # check_inputs reports it, in one line, before any work
        if not self.checkpoint:
            return []
        return [self.checkpoint, *self._given_dicts(), self.spm_model, self.spm_target_model or self.spm_model]

    def check_inputs(self) -> None:
        if self.model_dir and (self.checkpoint or self.dict_dir or self.spm_model or self.spm_target_model):
            raise InputError("give --model-dir or --checkpoint/--dict-dir/--spm-model, not both")
        if self.model_dir:
            folders.fairseq_files(Path(self.model_dir))  # names what the folder lacks
        super().check_inputs()

    def _given_dicts(self) -> list[str]:
        return [os.path.join(self.dict_dir, f"dict.{lang}.txt") for lang in ("cs", "en")]

    def build(self, partial_dir: Path) -> dict:
        if self.model_dir:
            return self._use_exported(partial_dir)
        if self.checkpoint:
            return self._use_given(partial_dir)
        device = resolve_device("fairseq", self.device)
        _, pairs = self.requires()["bitext"].committed("bitext")
        config = config_from(self, fairseq_train.TrainConfig, preset=self.resolved_preset(), fp16=device == "cuda", cpu=device == "cpu",
                             extra_args=self.fairseq_args)
        spm_task = self.requires()["spm"]
        spm_paths = {lang: path.resolve() for lang, path in spm_task.model_paths().items()}
        data_dir, counts = self._binarized(partial_dir, spm_paths, config.max_positions)
        self.progress(f"training preset {config.preset} on {device}: {counts['train']} pairs, {counts['valid']} for validation")
        # auto past the CPU's own presets (1M pairs and more): the cost said once the first updates' speed is known
        self._costly = (config, pairs, fairseq_train.updates_per_epoch(data_dir, config.value("max_tokens"))) \
            if self.preset == "auto" and device == "cpu" and pairs >= fairseq_train.AUTO_PRESETS["cpu"][-1][0] else None
        checkpoint = fairseq_train.train(data_dir, partial_dir / "checkpoints", config, spm_task.joint, self._on_fairseq_line)
        watched = collapse_watch.history(partial_dir / "checkpoints")
        self._check_collapse(checkpoint, watched, config.preset)
        NmtModel(
            str(checkpoint.relative_to(partial_dir)), str(data_dir.relative_to(partial_dir)),
            str(spm_paths["cs"]), str(spm_paths["en"]), config.max_positions, config.max_positions,
        ).save(partial_dir, relative_within=Path(paranmt().workdir))
        self.progress(f"trained: {checkpoint.name}", 100)
        return {"device": device, "preset": config.preset, "pairs": counts, "checkpoint": checkpoint.name,
                "watch": [{key: value for key, value in entry.items() if key != "examples"} for entry in watched],
                "watch_examples": watched[-1]["examples"] if watched else []}

    def _check_collapse(self, checkpoint: Path, watched: list[dict], preset: str) -> None:
        """CollapsedTranslator in one line when the collapse watch's figures at the kept
        checkpoint's validation are out of bounds (a warning with --accept-collapse)."""
        kept = collapse_watch.record_of(watched, fairseq_train.checkpoint_updates(checkpoint)) if watched else None
        if kept is None or not (faults := collapse_watch.out_of_bounds(kept)):
            return
        said = (f"{checkpoint.name} (update {kept['updates']}) is not a translator: {', '.join(faults)} on the collapse watch's "
                f"{kept['sentences']} validation sentences, e.g. {kept['examples'][0]['translation']!r}")
        if self.accept_collapse:
            log.warning("%s: %s; kept (--accept-collapse)", self.stage, said)
            return
        raise CollapsedTranslator(f"{said}. Train another recipe (this one: --preset {preset}; a lower --lr, more updates) or on more "
                                  f"data; its checkpoints stay in {checkpoint.parent}, and --TrainTranslator-accept-collapse keeps it")

    def _binarized(self, partial_dir: Path, spm_paths: dict[str, Path], max_positions: int) -> tuple[Path, dict]:
        """Binarize once: the pair counts are written, then data-bin is renamed into place."""
        data_dir = partial_dir / "data-bin"
        counts_file = partial_dir / "pairs.json"
        if not data_dir.exists():
            bitext_files, _ = self.requires()["bitext"].committed("bitext")
            workers = os.cpu_count() or 1
            self.progress(f"binarizing {len(bitext_files)} bitext shards ({workers} processes)")

            def write(staging: Path) -> None:
                counts = binarize.binarize_bitext(bitext_files, spm_paths, staging, self.valid_size, max_positions - 1, workers)
                counts_file.write_text(json.dumps(counts))

            write_atomically(data_dir, write, clear_stale=True)  # the stage's lock is held
        return data_dir, json.loads(counts_file.read_text())

    def _on_fairseq_line(self, line: str) -> None:
        """Epoch summaries, validations and every ``--log-interval`` updates go to the log and status;
        the collapse watch's figures (one line a validation) always reach the console."""
        if message := fairseq_train.progress_message(line):
            self.progress(message, shown=fairseq_train.is_watch_line(line))
        if getattr(self, "_costly", None) and (speed := fairseq_train.updates_a_second(line)):
            log.warning("%s: auto trains %s", self.stage, fairseq_train.budget_line(*self._costly, speed))
            self._costly = None

    def _use_given(self, partial_dir: Path) -> dict:
        """The given checkpoint, dictionaries and sentencepiece models copied into this stage's
        output: it is known by their contents, so it serves wherever the same files are (another
        mount, another machine), and needs none of them where they were."""
        copied = _copied_model(partial_dir, self.checkpoint, self._given_dicts(), self.spm_model, self.spm_target_model or self.spm_model)
        copied.save(partial_dir)
        self.progress(f"using the given checkpoint {self.checkpoint}", 100)
        return {"given_checkpoint": self.checkpoint}

    def _use_exported(self, partial_dir: Path) -> dict:
        """The folder's model copied into this stage's output: a TrainTranslator or
        ConvertTranslator output's checkpoint, or an exported folder's, rejoined; the dictionaries
        and sentencepiece models beside it."""
        given = Path(self.model_dir)
        if (given / MODEL_FILE).is_file():
            model = NmtModel.load(given)
            checkpoint, dictionaries, spm_models = Path(model.checkpoint), folders.dictionaries(model), (model.spm_source, model.spm_target)
            parts = [checkpoint]
        else:
            checkpoint = export.join_checkpoint(given, partial_dir / export.CHECKPOINT)
            dictionaries, spm_models = [given / name for name in export.DICTIONARIES], export.spm_models(given)
            parts = export.checkpoint_parts(given)
        named = f"{parts[0].parent}/" + " + ".join(part.name for part in parts)
        _copied_model(partial_dir, str(checkpoint), [str(path) for path in dictionaries], *map(str, spm_models),
                      checkpoint_named=named).save(partial_dir)
        self.progress(f"using the model in {given}", 100)
        return {"model_dir": str(given), "checkpoint_parts": len(parts)}


def _copied_model(partial_dir: Path, checkpoint: str, dictionaries: list[str], spm_source: str, spm_target: str,
                  checkpoint_named: Path | str = "") -> NmtModel:
    """A given fairseq model's files, each read first by its library, copied into ``partial_dir``
    (the checkpoint left where it is when it is there already), as an NmtModel with paths
    relative to it; ``checkpoint_named``: the user's name for a checkpoint rejoined there."""
    folders.check_fairseq(Path(checkpoint), [Path(path) for path in dictionaries], [Path(spm_source), Path(spm_target)], checkpoint_named)

    def copy(path: str, name: str) -> str:
        target = partial_dir / name
        if Path(path).resolve() != target.resolve():
            shutil.copyfile(path, target)
        return name

    (partial_dir / "dicts").mkdir(exist_ok=True)
    for dictionary in dictionaries:
        copy(dictionary, f"dicts/{Path(dictionary).name}")
    joint = Path(spm_source).resolve() == Path(spm_target).resolve()
    spm_files = (copy(spm_source, "spm.model"),) * 2 if joint else (copy(spm_source, "spm.source.model"), copy(spm_target, "spm.target.model"))
    positions = fairseq_train.model_positions(checkpoint)
    return NmtModel(copy(checkpoint, export.CHECKPOINT), "dicts", *spm_files, *positions)


class ConvertTranslator(ReadsBitext, WritesNmtModel):
    """Convert the trained checkpoint to CTranslate2, the default translation engine."""

    stage = "nmt-ct2"

    nmt = TranslatorChoice.nmt
    quantization = luigi.ChoiceParameter(default="none", choices=convert.QUANTIZATIONS,
                                         description="Stored weight type; the compute type is chosen at load (float16 on GPU, int8 option on CPU).")

    def requires(self):
        return TrainTranslator(**self.input_params(), **self.nmt)

    def build(self, partial_dir: Path) -> dict:
        trained = NmtModel.load(self.requires().output_dir)
        self.progress(f"converting {trained.checkpoint} ({self.quantization})")
        convert.convert(trained.checkpoint, trained.data_dir, partial_dir / "ct2", self.quantization)
        dataclasses.replace(trained, ct2_dir="ct2").save(partial_dir, relative_within=Path(paranmt().workdir))
        return {"model_fingerprint": NmtModel.load(partial_dir).fingerprint("ctranslate2")}


class ImportTranslator(WritesNmtModel):
    """A published translator (``--translator FOLDER``: OPUS-MT/Marian, M2M-100, NLLB-200) as the
    model back-translation loads: a Hugging Face model converted once with CTranslate2's own
    converter (its tokenizer kept beside it), a CTranslate2 folder used where it is."""

    stage = "nmt-import"

    translator = CorpusPath(description="The translator's folder: a Hugging Face model (Marian, M2M-100, NLLB-200) or a CTranslate2 model with "
                                        "its tokenizer's files.")
    source_language = IngestBitext.source_language
    quantization = ConvertTranslator.quantization

    def input_files(self) -> list[str]:
        return [str(path) for path in folders.folder_files(Path(self.translator))]

    def check_inputs(self) -> None:
        if folders.translator_kind(self.translator) == "fairseq":
            raise InputError(f"--translator {self.translator} is a fairseq model: BuildParaNMT or BackTranslate --translator takes it")
        super().check_inputs()
        folders.check_published(Path(self.translator))

    def build(self, partial_dir: Path) -> dict:
        folder = Path(self.translator)
        tokenizer = published.load_tokenizer(folder)
        if folders.translator_kind(folder) == "huggingface":
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            self.progress(f"converting {published.describe(folder)} ({config['model_type']}) with CTranslate2 ({self.quantization})")
            ct2_dir = published.convert(folder, partial_dir / "ct2", self.quantization)
            tokenizer.save_pretrained(partial_dir / published.TOKENIZER_DIR)
            tokenizer_dir, positions = partial_dir / published.TOKENIZER_DIR, config.get("max_position_embeddings", published.DEFAULT_POSITIONS)
        else:  # copied: the output is known by the folder's contents, and serves wherever they are
            config, ct2_dir, tokenizer_dir = {}, partial_dir / "ct2", partial_dir / "ct2"
            shutil.copytree(folder, ct2_dir, ignore=shutil.ignore_patterns(".*"), dirs_exist_ok=True)
            positions = tokenizer.model_max_length if tokenizer.model_max_length < 100_000 else published.DEFAULT_POSITIONS
        family = published.family_of(config, tokenizer)
        codes = source_languages(self.source_language)
        ways = {code: published.tokenization(tokenizer, family, code) for code in codes}
        first = ways[codes[0]]
        name = published.describe(folder)
        NmtModel("", "", "", "", positions, positions, ct2_dir=str(ct2_dir), family=family, tokenizer_dir=str(tokenizer_dir),
                 source_prefixes={code: way.source_prefix for code, way in ways.items()}, source_suffix=first.source_suffix,
                 target_prefix=first.target_prefix, name=name,
                 ).save(partial_dir, relative_within=Path(paranmt().workdir))
        self.progress(f"{published.FAMILIES[family]} model {name}: "
                      + ", ".join(f"{code} as {way.source_code or code}" for code, way in ways.items()), 100)
        return {"model": name, "family": family, "languages": {code: way.source_code for code, way in ways.items()},
                "model_fingerprint": NmtModel.load(partial_dir).fingerprint("ctranslate2")}


@with_settings(DecodeOptions, only=("beam_size",))
class EvaluateTranslator(UsesGpu, TranslatorChoice, StageTask):
    """BLEU and chrF (sacrebleu) of the model on newstest2021 cs→en, next to a real system's output."""

    stage = "nmt-eval"

    engine = ENGINE
    compute_type = COMPUTE_TYPE
    source = AbsolutePath(default=str(WMT21 / "newstest2021.cs-en.src.cs"), description="Czech test sentences, one a line.")
    reference = AbsolutePath(default=str(WMT21 / "newstest2021.cs-en.ref.A.en"), description="English reference, line-aligned.")
    baseline = OptionalPath(default=str(WMT21 / "newstest2021.cs-en.hyp.CUNI-Transformer2018.en"),
                            description="A system output to compare with (none: no baseline).")
    device = DEVICE

    def requires(self):
        return self.model_task(self.engine)

    def input_files(self) -> list[str]:
        return [path for path in (self.source, self.reference, self.baseline) if path]

    def build(self, partial_dir: Path) -> dict:
        sources, references = evaluate.read_lines(self.source), evaluate.read_lines(self.reference)
        translator = load_translator(NmtModel.load(self.requires().output_dir), self.engine,
                                     config_from(self, DecodeOptions), self.device, self.compute_type)
        self.progress(f"translating {len(sources)} sentences")
        hypotheses = [h.text if h else "" for h in translator.translate_many(sources)]
        (partial_dir / "hypotheses.en").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
        rows = {f"this model ({self.engine})": evaluate.corpus_scores(hypotheses, references)}
        if self.baseline:
            rows[Path(self.baseline).name] = evaluate.corpus_scores(evaluate.read_lines(self.baseline), references)
        title = f"{Path(self.source).name} → {Path(self.reference).name}"
        (partial_dir / "report.md").write_text(evaluate.report_markdown(title, rows), encoding="utf-8")
        self.progress("; ".join(f"{name}: BLEU {s['bleu']}, chrF {s['chrf']}" for name, s in rows.items()), 100)
        return {"scores": rows, "sentences": len(sources)}
