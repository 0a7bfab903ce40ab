"""BackTranslate: ``bitext`` shards → RunInference (foreign→en, beam 12) → ``pairs`` shards, same numbers.

Each bitext shard is read in chunks of ``chunk_rows`` rows (in the shard's id order), and a chunk
is the unit of inference: the model handler sorts the chunk's sentences by length, batches them
by a token budget and keeps the best beam hypothesis, and with ``--paraphrases K`` up to K-1
other variants (``models.nmt.paraphrase``), each a pair of its own (id ``<bitext id>#<variant>``),
the candidates it dropped rejects with their reasons. Chunks depend only on the shard (a sampled
chunk's seed too), so a shard translated twice (a retried bundle, a resumed run) gives the same rows. A shard is one element:
the worker that translates its chunks sorts their results by id and writes them, under a
temporary name, then renamed: a ``part-NNNNN.parquet`` in the output is always complete, and
:func:`pipelines.translator.pending_units` lists the shards still to do. No shuffle moves the translations: the
DirectRunner would hold a shuffle's whole input, every shard's translations, in memory, and write
nothing before the last was made (a kill would lose them all).

Rule for sources the model cannot take (see ``models.nmt.translate``): sources longer than the
model's limit are truncated to it and flagged ``truncated``; sources without any sentencepiece
piece are rejected (``rejects`` dataset, reason ``empty_source``).
"""

from __future__ import annotations

import logging
import time

import apache_beam as beam
import pyarrow as pa

import schemas
from corpus.readers import Reject
from models.nmt.paraphrase import DiversityOptions, Paraphrases, chunk_seed
from models.nmt.translate import Translator
from pipelines import stages
from pipelines.batches import shard_number
from pipelines.pairs import pairs_table, write_pairs_part
from pipelines.progress import UNWATCHED, Marks
from pipelines.rawshards import rejects_table
from pipelines.translator import CHUNK_ROWS, TranslatorSpec, read_chunks
from pipelines.translator_inference import with_translator

log = logging.getLogger(__name__)
# The paper's corpus: the beam's best translation of each source, nothing else.
ONE_BEST = DiversityOptions()


class TranslateShard:
    """A bitext shard (its path) translated, a chunk of ``chunk_rows`` rows at a time, into (chunk,
    paraphrases) pairs, as ``diversity`` says; each translated chunk leaves a ``translated`` mark,
    so the driver counts sentences as they are translated."""

    def __init__(self, chunk_rows: int, diversity: DiversityOptions, marks: Marks = UNWATCHED):
        self.chunk_rows, self.diversity, self.marks = chunk_rows, diversity, marks
        self._translated, self._started, self._last_log = 0, 0.0, 0.0

    def __call__(self, path: str, model: Translator) -> list[tuple[pa.RecordBatch, list[Paraphrases | None]]]:
        self._started = self._started or time.time()
        return [self._translate(chunk, model) for chunk in read_chunks(path, self.chunk_rows)]

    def _translate(self, chunk: pa.RecordBatch, model: Translator) -> tuple[pa.RecordBatch, list[Paraphrases | None]]:
        made = chunk_paraphrases(chunk, model, self.diversity)
        self._translated += chunk.num_rows
        self.marks.add("translated", chunk.num_rows)
        if time.time() - self._last_log > 30:
            self._last_log = time.time()
            rate = self._translated / max(self._last_log - self._started, 1e-9)
            log.info("this worker translated %d sentences (%.1f sentences/s)", self._translated, rate)
        return chunk, made


def chunk_paraphrases(chunk: pa.RecordBatch, model: Translator, diversity: DiversityOptions) -> list[Paraphrases | None]:
    """The paraphrases of a chunk of bitext rows, sampled (where they are) with the chunk's seed."""
    return model.paraphrase(chunk.column("foreign").to_pylist(), chunk.column("pivot").to_pylist(), chunk.column("en_tok").to_pylist(),
                            diversity, chunk_seed(diversity.seed, chunk.column("id")[0].as_py()))


def shard_tables(chunks: list[tuple[pa.RecordBatch, list[Paraphrases | None]]], system: str) -> tuple[pa.Table, pa.Table]:
    """One shard's ``pairs`` rows (sorted by id) and its ``rejects`` rows, from its (chunk,
    paraphrases); ``system``: the translator's name, in each pair's ``system`` column."""
    if not chunks:  # a bitext part left empty (every row an id read before)
        return schemas.PAIRS.empty_table(), schemas.REJECTS.empty_table()
    rows = pa.Table.from_batches([chunk for chunk, _ in chunks])
    made = [p for _, paraphrases in chunks for p in paraphrases]
    taken, ids, columns, rejects = [], [], {"variant": [], "diversity": [], "banned": [], "sibling_f1": []}, []
    variants = []
    for index, (row, found) in enumerate(zip(rows.select(["id", "source", "line", "foreign", "en"]).to_pylist(), made, strict=True)):
        if found is None:
            # the whole pair as raw (Reject.of would cut it to the raw text a reader keeps)
            rejects.append(Reject(row["source"], row["line"], "empty_source", f"pair {row['id']}: the foreign side has no piece",
                                  f"{row['foreign']}\t{row['en']}"))
            continue
        for number, (variant, f1) in enumerate(zip(found.variants, found.sibling_f1, strict=True)):
            taken.append(index)
            ids.append(row["id"] if number == 0 else f"{row['id']}#{number}")
            variants.append(variant.hypothesis)
            for name, value in (("variant", number), ("diversity", variant.made), ("banned", " ".join(variant.banned) or None),
                                ("sibling_f1", f1)):
                columns[name].append(value)
        rejects += [Reject(row["source"], row["line"], drop.reason, f"pair {row['id']}, a {drop.variant.made} candidate: {drop.detail}",
                           f"{row['foreign']}\t{drop.variant.hypothesis.text}")
                    for drop in found.dropped]
    pairs = pairs_table(rows.take(pa.array(taken, pa.int64())), [h.text for h in variants], [system] * len(variants),
                        [h.score for h in variants], [h.n_tokens for h in variants], [h.truncated for h in variants], ids, columns)
    return pairs, rejects_table(rejects, stages.BACKTRANSLATE)


class WriteShard(beam.DoFn):
    """Write a shard's rejects (if any), then its pairs part: the pairs part marks the shard done."""

    def __init__(self, pairs_dir: str, rejects_dir: str, system: str):
        self.pairs_dir, self.rejects_dir, self.system = pairs_dir, rejects_dir, system

    def process(self, keyed):
        shard, result = keyed
        yield shard, write_pairs_part(*shard_tables(result.inference, self.system), self.pairs_dir, self.rejects_dir, shard)


def build_backtranslate(pipeline: beam.Pipeline, shard_files: list[str], pairs_dir: str, rejects_dir: str, spec: TranslatorSpec,
                        chunk_rows: int = CHUNK_ROWS, diversity: DiversityOptions = ONE_BEST, marks: Marks = UNWATCHED):
    """Add the back-translation transforms for ``shard_files``; returns the (shard, rows) written."""
    translate = TranslateShard(chunk_rows, diversity, marks)
    return (
        with_translator(pipeline, [(shard_number(path), path) for path in shard_files], spec, translate, marks)
        | "WriteShards" >> beam.ParDo(WriteShard(pairs_dir, rejects_dir, spec.model.system))
    )
