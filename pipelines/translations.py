"""ImportTranslations: ``bitext`` shards + translations made elsewhere → ``pairs`` shards, same numbers.

A translation file (``corpus.inputs.TranslationFile``) holds one line per line of an input's
foreign file: line i translates that file's line i. Each bitext row becomes one pair per
translation file of its foreign file (``system``: the file's name), its id the bitext id and
the system joined by ``~``. A worker takes a bitext shard, reads the lines of each translation
file that its rows need (a plain file is entered at the run holding the first), and writes the
shard's pairs and rejects under temporary names, then renamed: a shard is written whole or not
at all, and a resumed run writes only the missing ones (``pending_shards``).

A translation line that is empty, too long, not UTF-8 or holds a control character is a reject
with its reason, file and line, never a shifted or altered pair. With a scoring model
(``--translator``), ``trans_score`` is its forced-decoding log-probability of the translation
(``Translator.score``, the measure its own translations get) and a pair it cannot score (the
foreign side or the translation without a piece) is an ``unscorable`` reject; without one,
``trans_score`` and ``trans_n_tokens`` are null.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import schemas
from corpus.inputs import TranslationFile, translation_lines
from corpus.outputs import reading
from corpus.readers import Reject
from pipelines.batches import shard_number
from pipelines.io import write_part_atomically
from pipelines.pairs import pairs_table
from pipelines.progress import UNWATCHED, Marks
from pipelines.rawshards import rejects_table
from pipelines.translator import TranslatorSpec, read_chunks

STAGE = "translations"
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


def expected_translations(bitext_files: list[str], translations: Translations) -> int:
    """Pairs and rejects the stage makes: each bitext row once per translation file of its foreign file."""
    total = 0
    for path in bitext_files:
        with reading(path):
            counts = pq.read_table(path, columns=["source"]).column(0).value_counts()
        total += sum(count.as_py() * len(translations.files_of(source.as_py())) for source, count in zip(counts.field(0), counts.field(1), strict=True))
    return total


def unit_pairs(rows: pa.Table, file: TranslationFile, translations: Translations, scorer) -> tuple[pa.Table, list[Reject]]:
    """The pairs of one translation file for ``rows``, bitext rows of its foreign file (ascending
    lines), and the rejects of its lines that make no pair."""
    lines = rows.column("line").to_pylist()
    texts = translation_lines(file, lines[0], lines[-1], translations.max_line_bytes)
    rejects: list[Reject] = []
    kept, translated = [], []
    for at, line in enumerate(lines):
        text = texts[line - lines[0]]
        if isinstance(text, Reject):
            rejects.append(text)
        elif not text.strip():
            rejects.append(Reject.of(file.system, line, "empty_translation", "the translation file's line is empty", text))
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
        rejects += [Reject.of(file.system, line, "unscorable", "the foreign side or the translation has no piece of the scoring model", text)
                    for line, text, ok in zip(rows.column("line").to_pylist(), translated, scored, strict=True) if not ok]
        rows = rows.filter(pa.array(scored))
        good = [h for h in hypotheses if h is not None]
        translated, scores, n_tokens, truncated = [h.text for h in good], [h.score for h in good], [h.n_tokens for h in good], [h.truncated for h in good]
    ids = [f"{pair_id}~{file.system}" for pair_id in rows.column("id").to_pylist()]
    return pairs_table(rows, translated, [file.system] * len(translated), scores, n_tokens, truncated, ids), rejects


def shard_tables(path: str, translations: Translations, scorer, chunk_rows: int) -> tuple[pa.Table, pa.Table]:
    """One bitext shard's ``pairs`` rows (every translation of each row, sorted by id) and the
    rejects of the translation lines that make no pair."""
    bitext = pa.Table.from_batches(list(read_chunks(path, chunk_rows)))
    tables, rejects = [], []
    for source in pc.unique(bitext.column("source")).to_pylist():
        rows = bitext.filter(pc.equal(bitext.column("source"), source)).sort_by("line")
        for file in translations.files_of(source):
            for start in range(0, rows.num_rows, chunk_rows):
                pairs, dropped = unit_pairs(rows.slice(start, chunk_rows), file, translations, scorer)
                tables.append(pairs)
                rejects += dropped
    pairs = pa.concat_tables(tables).sort_by("id") if tables else schemas.PAIRS.empty_table()
    return pairs, rejects_table(rejects, STAGE)


class ImportShard(beam.DoFn):
    """Write a bitext shard's pairs of translations made elsewhere (and its rejects, first)."""

    def __init__(self, translations: Translations, pairs_dir: str, rejects_dir: str, chunk_rows: int, marks: Marks):
        self.translations, self.pairs_dir, self.rejects_dir, self.chunk_rows, self.marks = translations, pairs_dir, rejects_dir, chunk_rows, marks
        self.scorer = None

    def setup(self):
        if self.translations.scorer is not None:
            self.scorer = self.translations.scorer.load()
            self.marks.add("loaded", 1)

    def process(self, path: str):
        shard = shard_number(path)
        pairs, rejects = shard_tables(path, self.translations, self.scorer, self.chunk_rows)
        if rejects.num_rows:
            write_part_atomically(rejects, schemas.REJECTS, self.rejects_dir, shard)
        rows = write_part_atomically(pairs, schemas.PAIRS, self.pairs_dir, shard)
        self.marks.add("pairs", rows + rejects.num_rows)
        yield shard, rows


def build_import(pipeline: beam.Pipeline, shard_files: list[str], translations: Translations, pairs_dir: str, rejects_dir: str,
                 chunk_rows: int = 4096, marks: Marks = UNWATCHED):
    """Add the import transforms for ``shard_files`` (bitext shards); returns the (shard, pairs) written."""
    return (
        pipeline
        | "Shards" >> beam.Create(shard_files)
        | "Import" >> beam.ParDo(ImportShard(translations, pairs_dir, rejects_dir, chunk_rows, marks))
    )
