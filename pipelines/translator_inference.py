"""The translator run inside a Beam pipeline: RunInference over a stage's units of work, with the
one model handler of every stage that translates or scores (BackTranslate, ImportTranslations).
RunInference imports torch: the pipelines import this module when they load a model, never the
Luigi layer (pipelines.translator holds what it needs without it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import apache_beam as beam
from apache_beam.ml.inference.base import (
    KeyedModelHandler,
    ModelHandler,
    PredictionResult,
    RunInference,
)

from models.nmt.translate import Translator
from pipelines.progress import UNWATCHED, Marks
from pipelines.translator import TranslatorSpec, translation_hints

log = logging.getLogger(__name__)


class TranslatorHandler(ModelHandler[object, PredictionResult, Translator]):
    """Loads the translator once per worker process, or once per machine shared by its worker
    processes (Beam serves it from one of them), and runs ``work(element, translator)`` on each
    element, a unit of a stage's work (a bitext shard to translate, a shard's translations to
    score); each load leaves a ``loaded`` mark, so the manifest says how many models a run
    loaded. One design for every stage that runs a translator: BackTranslate, ImportTranslations."""

    def __init__(self, spec: TranslatorSpec, work: Callable[[object, Translator], object], share_across_processes: bool = False,
                 marks: Marks = UNWATCHED):
        super().__init__()
        self.spec, self.work, self.share, self.marks = spec, work, share_across_processes, marks

    def load_model(self) -> Translator:
        translator = self.spec.load()
        self.marks.add("loaded", 1)
        log.info("loaded %s translator (%s, %s)", translator.engine, translator.device, translator.compute_type)
        return translator

    def share_model_across_processes(self) -> bool:
        return self.share

    def batch_elements_kwargs(self):
        # An element is a unit of many sentences: one unit per inference call.
        return {"min_batch_size": 1, "max_batch_size": 1}

    def get_num_bytes(self, batch) -> int:
        return len(batch)

    def get_metrics_namespace(self) -> str:
        return "Translator"

    def run_inference(self, batch, model, inference_args=None):
        return [PredictionResult(element, self.work(element, model)) for element in batch]


def with_translator(pipeline: beam.Pipeline, keyed_units: list[tuple[int, object]], spec: TranslatorSpec, work, marks: Marks = UNWATCHED):
    """(key, PredictionResult of ``work(unit, translator)``) for every (key, unit), the translator
    loaded as ``spec.shares_model`` says (one per machine on a GPU), on the workers that
    ``translation_hints`` ask for."""
    handler = KeyedModelHandler(TranslatorHandler(spec, work, spec.shares_model, marks))
    return pipeline | "Units" >> beam.Create(keyed_units) | "Translate" >> RunInference(handler).with_resource_hints(**translation_hints(spec))
