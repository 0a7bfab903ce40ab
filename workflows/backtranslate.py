"""BackTranslate: the foreign side of the bitext → English, paired with the original English (``pairs``)."""

from __future__ import annotations

import time
from pathlib import Path

from corpus import translation_check
from corpus.errors import InputError
from models.nmt.model import NmtModel
from models.nmt.paraphrase import DiversityOptions
from models.nmt.translate import DecodeOptions
from pipelines import stages
from pipelines.translator import (
    TranslatorSpec,
    made_label,
    pending_units,
    read_chunks,
    translated_sources,
    translation_tally,
    truncated_rows,
    variant_figures,
)
from workflows.config import config_from, count_parameter, with_settings
from workflows.ingest import IngestBitext
from workflows.nmt import ENGINE
from workflows.translator import RunsTranslator

# BackTranslate's check before the run: sentences translated where luigi runs, and how many times
# as many the run must have to translate for the check to be worth its model load (a small run
# is checked on its output, seconds later).
FIRST_CHECK_SENTENCES = 200
FIRST_CHECK_FACTOR = 10
# The settings that say which corpus is meant (one of several paraphrases a source, and how made):
# every task that reads the corpus takes them, set once under [BuildParaNMT].
CORPUS_DIVERSITY = ("paraphrases", "diversity")
# Variants per source at most: ``variant`` is an int8.
MOST_PARAPHRASES = 100


@with_settings(DecodeOptions, DiversityOptions, for_the_corpus=CORPUS_DIVERSITY)
class BackTranslate(RunsTranslator):
    """Translate every bitext shard with beam search (RunInference) into the ``pairs`` dataset,
    with --paraphrases K up to K variants of each source (models.nmt.paraphrase).

    Resumable per shard: finished ``pairs`` shards in the partial output survive a restart and
    are not translated again.
    """

    stage = stages.BACKTRANSLATE

    engine = ENGINE
    first_check = count_parameter(default=FIRST_CHECK_SENTENCES, minimum=0, significant=False,
                                  description="Sentences translated where luigi runs and put to the translation check before the bitext is, when "
                                              f"there are {FIRST_CHECK_FACTOR} times as many to translate or more: a translator that says one thing "
                                              "or copies stops in seconds, not after the whole bitext (0: only the output is checked).")

    def requires(self):
        return {"bitext": IngestBitext(**self.input_params()), "model": self.model_task(self.engine)}

    def check_inputs(self) -> None:
        if self.paraphrases > MOST_PARAPHRASES:
            raise InputError(f"--paraphrases {self.paraphrases}: at most {MOST_PARAPHRASES} a source")
        if self.paraphrases > 1 and self.engine != "ctranslate2":
            raise InputError(f"--paraphrases {self.paraphrases}: the {self.engine} engine gives the beam's best only; several "
                             "paraphrases need --engine ctranslate2")
        super().check_inputs()

    def check_first_sentences(self, spec: TranslatorSpec, shard_file: str) -> None:
        """The translation check on the first --first-check sentences of ``shard_file``, translated
        here by a model loaded for it and let go after (the workers load their own): what a
        broken translator would waste is the whole bitext's translation (the first GPU run's said
        one sentence for 2,218; at 51.4M it would have taken 22 GPU-hours to find out)."""
        from pipelines.backtranslate import chunk_paraphrases

        chunk = next(read_chunks(shard_file, self.first_check), None)
        if chunk is None:
            return
        sources = chunk.column("foreign").to_pylist()
        translator = spec.load()
        made = chunk_paraphrases(chunk, translator, config_from(self, DiversityOptions))
        del translator
        by_method: dict[str, tuple[list[str], list[str]]] = {}
        for source, found in zip(sources, made, strict=True):
            for variant in found.variants if found is not None else []:
                pairs = by_method.setdefault(made_label(spec.model.system, variant.made), ([], []))
                pairs[0].append(source)
                pairs[1].append(variant.hypothesis.text)
        if by_method:
            figures = {label: translation_check.translation_figures(*pairs) for label, pairs in by_method.items()}
            self.judged(figures, f"translation check of the first {len(sources)} sentences")

    def build(self, partial_dir: Path) -> dict:
        # RunInference imports torch: loaded when the stage runs, not by every command (tests/workflows/test_import_cost.py)
        from pipelines.backtranslate import build_backtranslate

        pairs_dir, rejects_dir = self.pairs_dirs(partial_dir)
        model = NmtModel.load(self.requires()["model"].output_dir)
        bitext_files, total = self.requires()["bitext"].committed("bitext")
        pending = pending_units(bitext_files, pairs_dir)
        spec = self.translator_spec(model, len(pending), config_from(self, DecodeOptions))
        diversity = config_from(self, DiversityOptions)
        already = translated_sources(pairs_dir, rejects_dir)
        if pending and self.first_check and total - already >= FIRST_CHECK_FACTOR * self.first_check:
            self.check_first_sentences(spec, pending[0])
        shared = ", one model shared by the worker processes" if spec.shares_model else ""
        where = f"{spec.device} on the workers with {spec.worker_resource}" if spec.worker_resource else spec.device
        variants = f", up to {self.paraphrases} paraphrases a source ({self.diversity})" if self.paraphrases > 1 else ""
        self.progress(f"{len(pending)} shard(s) to translate with {self.engine} on {where}, beam {self.beam_size}{variants}{shared}")
        started = time.time()
        loaded = self.run_units(partial_dir, len(pending),
                                lambda p, marks: build_backtranslate(p, pending, pairs_dir, rejects_dir, spec, self.chunk_rows, diversity, marks),
                                lambda marks, done: translation_tally(marks, total, done))
        seconds = time.time() - started
        sources = translated_sources(pairs_dir, rejects_dir)
        rows, rejects = self.finished_pairs(partial_dir, total, "bitext rows (variant-0 pairs and empty sources)", sources)
        figures = self.checked_translations(pairs_dir, lambda _: model.system)
        translated = sources - already
        truncated = truncated_rows(pairs_dir)
        rate = translated / seconds if seconds else 0.0
        self.progress(f"{rows} pairs ({translated} translated now, {rate:.1f} sentences/s), {truncated} truncated", 100)
        return {
            **self.pairs_summary(model, {"total": sum(rejects.values()), "by_reason": rejects}, loaded, figures),
            "engine": self.engine,
            "device": spec.device,
            "compute_type": self.compute_type,
            "model": model.name or "the project's own model",
            "rows": {"pairs": rows, "sources": sources - rejects.get("empty_source", 0), "truncated": truncated},
            "paraphrases": {"asked": self.paraphrases, "diversity": self.diversity if self.paraphrases > 1 else None,
                            **variant_figures(pairs_dir)},
            "translated_this_run": translated,
            "sentences_per_second": round(rate, 2),
        }
