"""BackTranslate: the foreign side of the bitext → English, paired with the original English (``pairs``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import luigi

import schemas
from corpus import translation_check
from corpus.errors import InputError
from models.nmt.devices import resolve_device
from models.nmt.model import NmtModel
from models.nmt.translate import ENGINES, DecodeOptions
from pipelines import io
from pipelines.options import direct_workers, on_dask
from pipelines.progress import marking, progress_while_running
from pipelines.translator import (
    CHUNK_ROWS,
    TranslatorSpec,
    model_is_shared,
    pending_shards,
    read_chunks,
    translation_sample,
    translation_tally,
    truncated_rows,
)
from workflows.base import StageTask
from workflows.config import config_from, count_parameter, paranmt, with_settings
from workflows.ingest import IngestBitext
from workflows.nmt import COMPUTE_TYPE, TranslatorChoice, UsesGpu

# BackTranslate's check before the run: sentences translated where luigi runs, and how many times
# as many the run must have to translate for the check to be worth its model load (a small run
# is checked on its output, seconds later).
FIRST_CHECK_SENTENCES = 200
FIRST_CHECK_FACTOR = 10


class RunsTranslator(UsesGpu, TranslatorChoice, StageTask):
    """A stage that writes ``pairs`` (and ``rejects``) unit by unit from the bitext, through a
    translator when it has one (BackTranslate: always; ImportTranslations: a scoring model): the
    parameters of how the translator runs, declared once, and the stage's run, resumable per unit
    (finished units in the partial output survive a restart and are not done again)."""

    keeps_partial_output = True

    chunk_rows = count_parameter(default=CHUNK_ROWS, description="Sentences translated or scored together (sorted by length inside), and read from a file at once.")
    device = luigi.ChoiceParameter(default="auto", choices=["auto", "cpu", "cuda"], description="auto: the GPU when the engine can use one (CTranslate2 needs the gpu extra).")
    compute_type = COMPUTE_TYPE
    threads = count_parameter(default=0, minimum=0, significant=False, description="CPU threads per worker (0: cores / DirectRunner workers).")
    share_model = luigi.BoolParameter(default=False, significant=False, description="On the CPU too: one model per machine, shared by the worker processes (on a GPU it always is).")
    accept_translations = luigi.Parameter(default="", significant=False, description=f"Figures of the translations' check accepted out of their bounds ({', '.join(translation_check.NAMES)}; comma-separated): the run goes on, and the summary still shows them.")

    def translator_spec(self, model: NmtModel, elements: int, options: DecodeOptions | None = None, rows: int | None = None) -> TranslatorSpec:
        """How the workers load ``model``: on the device the engine can use, the CPU's cores
        divided between the DirectRunner's worker processes for ``rows`` in ``elements`` units of
        work (pipelines.options.direct_workers, as run_units starts them: all of them for a stage
        run in process) unless --threads says otherwise; on a Dask cluster, on the workers that
        declare [paranmt] dask_translation_resource when it is set, the device then chosen there
        (``auto``: their GPU), not where luigi runs."""
        resource = self.translation_resource()
        device = self.device if resource else resolve_device(self.engine, self.device)
        return TranslatorSpec(model, self.engine, device, self.compute_type, self._threads(device, rows, elements), options or DecodeOptions(), resource)

    @staticmethod
    def translation_resource() -> str:
        """The Dask worker resource the translating units need (empty: any worker, or no Dask)."""
        return paranmt().dask_translation_resource if on_dask(paranmt().runner) else ""

    def device_in_use(self) -> str | None:
        """The device the engine resolves here; with a Dask translation resource it is chosen on
        the workers instead (translator_spec): not known here."""
        return None if self.translation_resource() else resolve_device(self.engine, "auto")

    def _threads(self, device: str, rows: int | None, elements: int) -> int:
        if self.threads or device != "cpu" or paranmt().runner != "DirectRunner":
            return self.threads
        cores = os.cpu_count() or 1
        return max(1, cores // direct_workers(paranmt().direct_num_workers, rows, self.rows_per_worker, elements))

    def pairs_dirs(self, partial_dir: Path) -> tuple[str, str]:
        """The partial output's ``pairs`` and ``rejects`` folders, half-written parts of a killed run removed."""
        pairs_dir, rejects_dir = str(partial_dir / "pairs"), str(partial_dir / "rejects")
        for directory in (pairs_dir, rejects_dir):
            io.remove_temporaries(directory)
        return pairs_dir, rejects_dir

    def run_units(self, partial_dir: Path, elements: int, build, tally, rows: int | None = None) -> int:
        """Run ``build(pipeline, marks)`` over the pending units, ``elements`` elements of work
        (none: nothing to run; no more worker processes than that), reporting ``tally(marks,
        already)``; returns the models it loaded."""
        if not elements:
            return 0
        pairs_dir, rejects_dir = str(partial_dir / "pairs"), str(partial_dir / "rejects")
        already = io.dataset_rows(pairs_dir) + io.dataset_rows(rejects_dir)
        with marking(str(partial_dir / f"_{self.stage}-progress")) as marks, progress_while_running(tally(marks, already), self.progress, already):
            self.run_pipeline(lambda pipeline: build(pipeline, marks), rows=rows, elements=elements)
            return marks.count("loaded")

    def check_inputs(self) -> None:
        translation_check.accepted_figures(self.accept_translations)  # an unknown figure, in one line, before any work
        super().check_inputs()

    def checked_translations(self, pairs_dir: str, translator_of: Callable[[str], str]) -> dict[str, dict[str, float]]:
        """The figures of each translator's output (corpus.translation_check, ``translator_of``
        a pairs part: its translator), said on the console; InputError naming the figure and the
        setting that accepts it when a translator looks broken."""
        sample = translation_sample(pairs_dir, translator_of, translation_check.SAMPLE_PAIRS)
        return self.judged({translator: translation_check.translation_figures(*pairs) for translator, pairs in sample.items()}, "translation check")

    def judged(self, figures: dict[str, dict[str, float]], what: str) -> dict[str, dict[str, float]]:
        """``figures`` said on the console after ``what``; InputError naming the figure out of its
        bounds and the setting that accepts it."""
        self.progress(f"{what}: {translation_check.figures_line(figures)}")
        if broken := translation_check.broken_translator(figures, translation_check.accepted_figures(self.accept_translations)):
            figure, problem = broken
            raise InputError(f"{problem}; nothing is built from them. Check the model or the files; "
                             f"--{type(self).__name__}-accept-translations {figure} goes on anyway")
        return figures

    def finished_pairs(self, partial_dir: Path, total: int, what: str) -> tuple[int, dict[str, int]]:
        """The pairs written and the rejects by reason, checked to account for ``total`` (``what``)."""
        pairs_dir, rejects_dir = str(partial_dir / "pairs"), str(partial_dir / "rejects")
        io.ensure_nonempty(pairs_dir, schemas.PAIRS)
        io.ensure_nonempty(rejects_dir, schemas.REJECTS)
        rows, rejects = io.dataset_rows(pairs_dir), io.rejects_by_reason(rejects_dir)
        io.check_rows(self.stage, rows + sum(rejects.values()), total, what)
        return rows, rejects


@with_settings(DecodeOptions)
class BackTranslate(RunsTranslator):
    """Translate every bitext shard with beam search (RunInference) into the ``pairs`` dataset.

    Resumable per shard: finished ``pairs`` shards in the partial output survive a restart and
    are not translated again.
    """

    stage = "backtranslate"

    engine = luigi.ChoiceParameter(default="ctranslate2", choices=ENGINES, description="ctranslate2 (fast, default) or fairseq (its own generator).")
    first_check = count_parameter(default=FIRST_CHECK_SENTENCES, minimum=0, significant=False,
                                  description=f"Sentences translated where luigi runs and put to the translation check before the bitext is, when there are {FIRST_CHECK_FACTOR} times as many to translate or more: a translator that says one thing or copies stops in seconds, not after the whole bitext (0: only the output is checked).")

    def requires(self):
        return {"bitext": IngestBitext(**self.input_params()), "model": self.model_task(self.engine)}

    def check_first_sentences(self, spec: TranslatorSpec, shard_file: str) -> None:
        """The translation check on the first --first-check sentences of ``shard_file``, translated
        here by a model loaded for it and let go after (the workers load their own): what a
        broken translator would waste is the whole bitext's translation (the first GPU run's said
        one sentence for 2,218; at 51.4M it would have taken 22 GPU-hours to find out)."""
        chunk = next(read_chunks(shard_file, self.first_check), None)
        if chunk is None:
            return
        sources = chunk.column("foreign").to_pylist()
        translator = spec.load()
        hypotheses = translator.translate(sources, chunk.column("pivot").to_pylist())
        del translator
        kept = [(source, hypothesis.text) for source, hypothesis in zip(sources, hypotheses, strict=True) if hypothesis is not None]
        if kept:
            figures = translation_check.translation_figures([s for s, _ in kept], [t for _, t in kept])
            self.judged({spec.model.system: figures}, f"translation check of the first {len(kept)} sentences")

    def build(self, partial_dir: Path) -> dict:
        from pipelines.backtranslate import build_backtranslate

        pairs_dir, rejects_dir = self.pairs_dirs(partial_dir)
        model = NmtModel.load(self.requires()["model"].output_dir)
        bitext_files, total = self.requires()["bitext"].committed("bitext")
        pending = pending_shards(bitext_files, pairs_dir)
        spec = self.translator_spec(model, len(pending), config_from(self, DecodeOptions))
        already = io.dataset_rows(pairs_dir) + io.dataset_rows(rejects_dir)
        if pending and self.first_check and total - already >= FIRST_CHECK_FACTOR * self.first_check:
            self.check_first_sentences(spec, pending[0])
        shared = ", one model shared by the worker processes" if model_is_shared(spec, self.share_model) else ""
        where = f"{spec.device} on the workers with {spec.worker_resource}" if spec.worker_resource else spec.device
        self.progress(f"{len(pending)} shard(s) to translate with {self.engine} on {where}, beam {self.beam_size}{shared}")
        started = time.time()
        loaded = self.run_units(partial_dir, len(pending), lambda p, marks: build_backtranslate(p, pending, pairs_dir, rejects_dir, spec, self.chunk_rows, self.share_model, marks),
                                lambda marks, done: translation_tally(marks, total, done))
        seconds = time.time() - started
        rows, rejects = self.finished_pairs(partial_dir, total, "bitext rows (pairs and rejects)")
        figures = self.checked_translations(pairs_dir, lambda _: model.system)
        translated = rows + sum(rejects.values()) - already
        truncated = truncated_rows(pairs_dir)
        rate = translated / seconds if seconds else 0.0
        self.progress(f"{rows} pairs ({translated} translated now, {rate:.1f} sentences/s), {truncated} truncated", 100)
        return {
            "schema": {"pairs": schemas.version_of(schemas.PAIRS), "rejects": schemas.version_of(schemas.REJECTS)},
            "engine": self.engine,
            "device": spec.device,
            "compute_type": self.compute_type,
            "model_fingerprint": model.fingerprint(self.engine),
            "model": model.name or "the project's own model",
            "rows": {"pairs": rows, "truncated": truncated},
            "rejects": {"total": sum(rejects.values()), "by_reason": rejects},
            "translated_this_run": translated,
            "models_loaded_this_run": loaded,
            "sentences_per_second": round(rate, 2),
            "translation_check": figures,
        }
