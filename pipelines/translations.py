"""ImportTranslations: ``bitext`` shards + translations made elsewhere → ``pairs`` parts.

A translation file (``corpus.translation_files.TranslationFile``) holds one line per line of an input's
foreign file: line i translates that file's line i. Each bitext row becomes one pair per
translation file of its foreign file (``system``), its id the bitext id and the system joined by
``~`` (``corpus.translation_files.id_part``). A unit is one bitext shard's rows of one source with one
translation file (``ImportUnit``), read in line order: a plain file is entered at the run holding
the shard's first line, so each of its units is an element of its own, for any worker; a gzip
file cannot be entered in the middle, so all its units are one element, read by one worker that
decompresses the file once (``corpus.translation_files.TranslationReader``). ImportTranslations gives this
pipeline a plain copy of each gzip file instead (``corpus.translation_files.plain_copy``), so that a user's
one gzip file is read by every worker. Each unit's pairs and rejects
are written under temporary names, then renamed, as soon as they are made: a unit is written
whole or not at all, a resumed run writes only the missing ones, and a worker holds one shard and
one system's pairs, whatever the number of systems or lines.

A translation line that is empty, too long, not UTF-8 or holds a control character is a reject
with its reason, file and line, never a shifted or altered pair; its line end (LF, or CRLF) is
not part of it. With a scoring model (``--translator``), ``trans_score`` is its forced-decoding
log-probability of the translation (``Translator.score``, the measure its own translations get)
and a pair it cannot score (the foreign side or the translation without a piece) is an
``unscorable`` reject; without one, ``trans_score`` and ``trans_n_tokens`` are null.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import schemas
from corpus.outputs import reading
from corpus.readers import Reject, decode_line, without_line_end
from corpus.translation_files import TranslationFile, TranslationReader, id_part
from pipelines import stages
from pipelines.batches import shard_number
from pipelines.pairs import pairs_table, write_pairs_part
from pipelines.progress import UNWATCHED, Marks
from pipelines.rawshards import rejects_table
from pipelines.translator import CHUNK_ROWS, TranslatorSpec, read_chunks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Translations:
    """What a worker needs: the translation files, the foreign file of each bitext ``source``,
    the line limit, and the model that scores the translations (None: they stay unscored)."""

    files: tuple[TranslationFile, ...]
    foreign_of: dict[str, str]
    max_line_bytes: int
    scorer: TranslatorSpec | None = None

    def files_of(self, source: str) -> list[TranslationFile]:
        return [file for file in self.files if file.foreign == self.foreign_of.get(source)]


@dataclass(frozen=True)
class ImportUnit:
    """One bitext shard's rows of ``source`` with one translation file: ``rows`` pairs and
    rejects, written as the pairs and rejects parts numbered ``number``."""

    number: int
    shard: str
    source: str
    file: TranslationFile
    rows: int


def import_units(bitext_files: list[str], translations: Translations) -> list[ImportUnit]:
    """Every unit of the stage, numbered in (shard, source, translation file) order: the same
    numbers for the same inputs, so a resumed run knows which parts are written."""
    units: list[ImportUnit] = []
    for path in sorted(bitext_files, key=shard_number):
        with reading(path):
            counts = pq.read_table(path, columns=["source"]).column(0).value_counts()
        for source, rows in sorted(zip(counts.field(0).to_pylist(), counts.field(1).to_pylist(), strict=True)):
            for file in translations.files_of(source):
                units.append(ImportUnit(len(units), path, source, file, rows))
    return units


def unit_tables(unit: ImportUnit, translations: Translations, scorer, chunk_rows: int, reader: TranslationReader) -> tuple[pa.Table, pa.Table]:
    """A unit's ``pairs`` rows (sorted by id) and the rejects of its translation lines that make
    no pair, its lines taken from ``reader`` (its file's); scored ``chunk_rows`` at a time when
    there is a ``scorer``."""
    shard = pa.Table.from_batches(list(read_chunks(unit.shard, chunk_rows)))
    rows = shard.filter(pc.equal(shard.column("source"), unit.source)).sort_by("line")
    tables, rejects = [], []
    for start in range(0, rows.num_rows, chunk_rows):
        chunk = rows.slice(start, chunk_rows)
        pairs, dropped = _chunk_pairs(chunk, reader.take(chunk.column("line").to_pylist()), unit.file, translations.max_line_bytes, scorer)
        tables.append(pairs)
        rejects += dropped
    pairs = pa.concat_tables(tables).sort_by("id") if tables else schemas.PAIRS.empty_table()
    return pairs, rejects_table(rejects, stages.TRANSLATIONS)


def _chunk_pairs(rows: pa.Table, raw_lines: list[bytes], file: TranslationFile, max_line_bytes: int, scorer) -> tuple[pa.Table, list[Reject]]:
    """The pairs of ``rows`` (bitext rows of the file's foreign file) with their translations
    ``raw_lines``, and the rejects of the lines that make no pair."""
    rejects: list[Reject] = []
    kept, translated = [], []
    for at, (line, raw) in enumerate(zip(rows.column("line").to_pylist(), raw_lines, strict=True)):
        text = decode_line(without_line_end(raw), file.name, line, max_line_bytes)
        if isinstance(text, Reject):
            rejects.append(text)
        elif not text.strip():
            rejects.append(Reject.of(file.name, line, "empty_translation", "the translation file's line is empty", text))
        else:
            kept.append(at)
            translated.append(text)
    rows = rows.take(pa.array(kept, pa.int64()))
    scores: list = [None] * len(kept)
    n_tokens: list = [None] * len(kept)
    truncated = [False] * len(kept)
    if scorer is not None and kept:
        hypotheses = scorer.score(rows.column("foreign").to_pylist(), translated, rows.column("pivot").to_pylist())
        scored = [h is not None for h in hypotheses]
        rejects += [Reject.of(file.name, line, "unscorable", "the foreign side or the translation has no piece of the scoring model", text)
                    for line, text, ok in zip(rows.column("line").to_pylist(), translated, scored, strict=True) if not ok]
        rows = rows.filter(pa.array(scored))
        good = [h for h in hypotheses if h is not None]
        translated, scores, n_tokens, truncated = ([h.text for h in good], [h.score for h in good], [h.n_tokens for h in good],
                                                   [h.truncated for h in good])
    ids = [f"{pair_id}~{id_part(file.system)}" for pair_id in rows.column("id").to_pylist()]
    return pairs_table(rows, translated, [file.system] * len(translated), scores, n_tokens, truncated, ids), rejects


def work_elements(units: list[ImportUnit]) -> list[tuple[int, tuple[ImportUnit, ...]]]:
    """The elements of the stage's work: each unit of a plain translation file alone (any worker
    enters the file at its run); all units of a gzip file together, by (source, first line), so
    that one worker decompresses it once (a gzip file cannot be entered in the middle)."""
    alone = [(unit.number, (unit,)) for unit in units if not unit.file.index.compressed]
    by_file: dict[str, list[ImportUnit]] = {}
    for unit in units:
        if unit.file.index.compressed:
            by_file.setdefault(unit.file.path, []).append(unit)
    together = [(group[0].number, tuple(sorted(group, key=lambda unit: (unit.source, shard_number(unit.shard))))) for group in by_file.values()]
    return sorted(alone + together)


class ImportWork:
    """An element's units (work_elements) read, scored by ``model`` (None: unscored) and written,
    each whole (its rejects first, then its pairs part: the part marks the unit done; a resumed
    run skips it) as soon as it is made, so a worker holds one unit's pairs at a time; marks each
    unit's pairs and rejects. Returns (unit, pairs written) of each."""

    def __init__(self, translations: Translations, chunk_rows: int, pairs_dir: str, rejects_dir: str, marks: Marks):
        self.translations, self.chunk_rows, self.pairs_dir, self.rejects_dir, self.marks = translations, chunk_rows, pairs_dir, rejects_dir, marks

    def __call__(self, units: tuple[ImportUnit, ...], model=None) -> list[tuple[int, int]]:
        readers: dict[tuple[str, str], TranslationReader] = {}
        written = []
        for unit in units:
            reader = readers.setdefault((unit.file.path, unit.source), TranslationReader(unit.file))
            pairs, rejects = unit_tables(unit, self.translations, model, self.chunk_rows, reader)
            rows = write_pairs_part(pairs, rejects, self.pairs_dir, self.rejects_dir, unit.number)
            self.marks.add("pairs", rows + rejects.num_rows)
            written.append((unit.number, rows))
        return written


def build_import(pipeline: beam.Pipeline, units: list[ImportUnit], translations: Translations, pairs_dir: str, rejects_dir: str,
                 chunk_rows: int = CHUNK_ROWS, marks: Marks = UNWATCHED):
    """Add the import transforms for ``units`` (those not written yet); returns the (unit, pairs)
    written. With a scoring model, the elements go through the translator as BackTranslate's
    shards do (pipelines.translator_inference.with_translator: one model per machine on a GPU,
    the cores divided between the worker processes on a CPU)."""
    elements, work = work_elements(units), ImportWork(translations, chunk_rows, pairs_dir, rejects_dir, marks)
    if translations.scorer is None:
        return pipeline | "Units" >> beam.Create(elements) | "Import" >> beam.FlatMapTuple(lambda _, group: work(group))
    # RunInference imports torch: only a stage with a scoring model loads it (the Luigi layer
    # imports this module in every command, and an unscored import's workers unpickle it)
    from pipelines.translator_inference import with_translator

    return (with_translator(pipeline, elements, translations.scorer, work, marks)
            | "Written" >> beam.FlatMapTuple(lambda _, result: result.inference))
