"""The stage-independent base of the stages that run a translator over the bitext (BackTranslate,
ImportTranslations): how the translator runs, the resumable run of a stage's units, and the
checks and manifest keys of the ``pairs`` it writes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import luigi

import schemas
from corpus import translation_check
from corpus.errors import InputError
from models.nmt.devices import resolve_device
from models.nmt.model import NmtModel
from models.nmt.translate import DecodeOptions
from pipelines import io
from pipelines.options import direct_workers, on_dask
from pipelines.progress import marking, progress_while_running
from pipelines.translator import CHUNK_ROWS, TranslatorSpec, best_labels, translation_sample
from workflows.base import StageTask
from workflows.config import count_parameter, paranmt
from workflows.nmt import COMPUTE_TYPE, DEVICE, TranslatorChoice, UsesGpu


class RunsTranslator(UsesGpu, TranslatorChoice, StageTask):
    """A stage that writes ``pairs`` (and ``rejects``) unit by unit from the bitext, through a
    translator when it has one (BackTranslate: always; ImportTranslations: a scoring model): the
    parameters of how the translator runs, declared once, and the stage's run, resumable per unit
    (finished units in the partial output survive a restart and are not done again)."""

    keeps_partial_output = True

    chunk_rows = count_parameter(default=CHUNK_ROWS,
                                 description="Sentences translated or scored together (sorted by length inside), and read from a file at once.")
    device = DEVICE
    compute_type = COMPUTE_TYPE
    threads = count_parameter(default=0, minimum=0, significant=False, description="CPU threads per worker (0: cores / DirectRunner workers).")
    share_model = luigi.BoolParameter(default=False, significant=False,
                                      description="On the CPU too: one model per machine, shared by the worker processes (on a GPU it always is).")
    accept_translations = luigi.Parameter(default="", significant=False,
                                          description="Figures of the translations' check accepted out of their bounds "
                                                      f"({', '.join(translation_check.NAMES)}; comma-separated): the run goes on, and the "
                                                      "summary still shows them.")

    def translator_spec(self, model: NmtModel, elements: int, options: DecodeOptions | None = None, rows: int | None = None) -> TranslatorSpec:
        """How the workers load ``model``: on the device the engine can use, the CPU's cores
        divided between the DirectRunner's worker processes for ``rows`` in ``elements`` units of
        work (pipelines.options.direct_workers, as run_units starts them: all of them for a stage
        run in process) unless --threads says otherwise; on a Dask cluster, on the workers that
        declare [paranmt] dask_translation_resource when it is set, the device then chosen there
        (``auto``: their GPU), not where luigi runs; one model per machine as
        TranslatorSpec.shares_model decides, --share-model asking for it on the CPU."""
        resource = self.translation_resource()
        device = self.device if resource else resolve_device(self.engine, self.device)
        return TranslatorSpec(model, self.engine, device, self.compute_type, self._threads(device, rows, elements), options or DecodeOptions(),
                              resource, self.share_model)

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
        if broken := translation_check.broken_translator(figures, translation_check.accepted_figures(self.accept_translations), best_labels(figures)):
            figure, problem = broken
            raise InputError(f"{problem}; nothing is built from them. Check the model or the files; "
                             f"--{type(self).__name__}-accept-translations {figure} goes on anyway")
        return figures

    def finished_pairs(self, partial_dir: Path, total: int, what: str, accounted: int | None = None) -> tuple[int, dict[str, int]]:
        """The pairs written and the rejects by reason, checked to account for ``total`` (``what``):
        ``accounted`` of them (by default the pairs and the rejects)."""
        pairs_dir, rejects_dir = str(partial_dir / "pairs"), str(partial_dir / "rejects")
        io.ensure_nonempty(pairs_dir, schemas.PAIRS)
        io.ensure_nonempty(rejects_dir, schemas.REJECTS)
        rows, rejects = io.dataset_rows(pairs_dir), io.rejects_by_reason(rejects_dir)
        io.check_rows(self.stage, rows + sum(rejects.values()) if accounted is None else accounted, total, what)
        return rows, rejects

    def pairs_summary(self, model: NmtModel | None, rejects: dict, loaded: int, figures: dict[str, dict[str, float]]) -> dict:
        """The manifest keys of every stage that writes ``pairs`` through a translator: the
        datasets' schemas, the model that ran (None: none did) by its fingerprint for the stage's
        engine, the ``rejects`` counts (total and by reason), the models this run loaded and the
        translation check's figures."""
        return {
            "schema": {"pairs": schemas.version_of(schemas.PAIRS), "rejects": schemas.version_of(schemas.REJECTS)},
            "model_fingerprint": model.fingerprint(self.engine) if model else None,
            "rejects": rejects,
            "models_loaded_this_run": loaded,
            "translation_check": figures,
        }
