"""BackTranslate: ``bitext`` shards → RunInference (foreign→en, beam 12) → ``pairs`` shards, same numbers.

Each bitext shard is read in chunks of ``chunk_rows`` rows (in the shard's id order), and a chunk
is the unit of inference: the model handler sorts the chunk's sentences by length, batches them
by a token budget and keeps the best beam hypothesis. Chunks depend only on the shard, so a shard
translated twice (a retried bundle, a resumed run) gives the same rows. A shard is one element:
the worker that translates its chunks sorts their results by id and writes them, under a
temporary name, then renamed: a ``part-NNNNN.parquet`` in the output is always complete, and
:func:`pipelines.translator.pending_shards` lists the shards still to do. No shuffle moves the translations: the
DirectRunner would hold a shuffle's whole input, every shard's translations, in memory, and write
nothing before the last was made (a kill would lose them all).

Rule for sources the model cannot take (see ``models.nmt.translate``): sources longer than the
model's limit are truncated to it and flagged ``truncated``; sources without any sentencepiece
piece are rejected (``rejects`` dataset, reason ``empty_source``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.ml.inference.base import (
    KeyedModelHandler,
    ModelHandler,
    PredictionResult,
    RunInference,
)

import schemas
from models.nmt.translate import Translator
from pipelines.batches import shard_number
from pipelines.pairs import pairs_table, write_pairs_part
from pipelines.progress import UNWATCHED, Marks
from pipelines.translator import (
    CHUNK_ROWS,
    TranslatorSpec,
    model_is_shared,
    read_chunks,
    translation_hints,
)

STAGE = "backtranslate"
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


def with_translator(pipeline: beam.Pipeline, keyed_units: list[tuple[int, object]], spec: TranslatorSpec, work, share_model: bool,
                    marks: Marks = UNWATCHED):
    """(key, PredictionResult of ``work(unit, translator)``) for every (key, unit), the translator
    loaded as ``model_is_shared`` says (one per machine on a GPU), on the workers that
    ``translation_hints`` ask for."""
    handler = KeyedModelHandler(TranslatorHandler(spec, work, model_is_shared(spec, share_model), marks))
    return pipeline | "Units" >> beam.Create(keyed_units) | "Translate" >> RunInference(handler).with_resource_hints(**translation_hints(spec))


class TranslateShard:
    """A bitext shard (its path) translated, a chunk of ``chunk_rows`` rows at a time, into (chunk,
    hypotheses) pairs; each translated chunk leaves a ``translated`` mark, so the driver counts
    sentences as they are translated."""

    def __init__(self, chunk_rows: int, marks: Marks = UNWATCHED):
        self.chunk_rows, self.marks = chunk_rows, marks
        self._translated, self._started, self._last_log = 0, 0.0, 0.0

    def __call__(self, path: str, model: Translator) -> list[tuple[pa.RecordBatch, list]]:
        self._started = self._started or time.time()
        return [self._translate(chunk, model) for chunk in read_chunks(path, self.chunk_rows)]

    def _translate(self, chunk: pa.RecordBatch, model: Translator) -> tuple[pa.RecordBatch, list]:
        hypotheses = model.translate(chunk.column("foreign").to_pylist(), chunk.column("pivot").to_pylist())
        self._translated += chunk.num_rows
        self.marks.add("translated", chunk.num_rows)
        if time.time() - self._last_log > 30:
            self._last_log = time.time()
            rate = self._translated / max(self._last_log - self._started, 1e-9)
            log.info("this worker translated %d sentences (%.1f sentences/s)", self._translated, rate)
        return chunk, hypotheses


def shard_tables(chunks: list[tuple[pa.RecordBatch, list]], system: str) -> tuple[pa.Table, pa.Table]:
    """One shard's ``pairs`` rows (sorted by id) and its ``rejects`` rows, from its (chunk,
    hypotheses); ``system``: the translator's name, in each pair's ``system`` column."""
    if not chunks:  # a bitext part left empty (every row an id read before)
        return schemas.PAIRS.empty_table(), schemas.REJECTS.empty_table()
    rows = pa.Table.from_batches([chunk for chunk, _ in chunks])
    hypotheses = [h for _, hyps in chunks for h in hyps]
    kept = pa.array([h is not None for h in hypotheses], pa.bool_())
    good = [h for h in hypotheses if h is not None]
    translated = rows.filter(kept)
    pairs = pairs_table(translated, [h.text for h in good], [system] * len(good), [h.score for h in good],
                        [h.n_tokens for h in good], [h.truncated for h in good])
    dropped = rows.filter(pc.invert(kept)).sort_by([("source", "ascending"), ("line", "ascending")])
    rejects = pa.table({
        "stage": [STAGE] * dropped.num_rows,
        "source": dropped.column("source"),
        "line": dropped.column("line"),
        "reason": ["empty_source"] * dropped.num_rows,
        "detail": [f"pair {pair_id}: the foreign side has no piece" for pair_id in dropped.column("id").to_pylist()],
        "raw": [f"{foreign}\t{en}" for foreign, en in zip(dropped.column("foreign").to_pylist(), dropped.column("en").to_pylist(), strict=True)],
    })
    return pairs, rejects


class WriteShard(beam.DoFn):
    """Write a shard's rejects (if any), then its pairs part: the pairs part marks the shard done."""

    def __init__(self, pairs_dir: str, rejects_dir: str, system: str):
        self.pairs_dir, self.rejects_dir, self.system = pairs_dir, rejects_dir, system

    def process(self, keyed):
        shard, result = keyed
        yield shard, write_pairs_part(*shard_tables(result.inference, self.system), self.pairs_dir, self.rejects_dir, shard)


def build_backtranslate(pipeline: beam.Pipeline, shard_files: list[str], pairs_dir: str, rejects_dir: str, spec: TranslatorSpec,
                        chunk_rows: int = CHUNK_ROWS, share_model: bool = False, marks: Marks = UNWATCHED):
    """Add the back-translation transforms for ``shard_files``; returns the (shard, rows) written."""
    return (
        with_translator(pipeline, [(shard_number(path), path) for path in shard_files], spec, TranslateShard(chunk_rows, marks), share_model, marks)
        | "WriteShards" >> beam.ParDo(WriteShard(pairs_dir, rejects_dir, spec.model.system))
    )
