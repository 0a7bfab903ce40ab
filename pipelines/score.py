"""ScorePairs: each ``pairs`` shard → the ``scored`` shard with the same number: the same rows in
the same order, each its id and scores (the text is not copied; AssignDeciles joins the two).

Shards are spread over workers; each worker loads the word-averaging model and langid.py's
language model once (DoFn setup) and streams its shard as Arrow record batches. The pairs come
tokenized (``*_tok``, made once upstream), so everything — token ids, trigram overlap, PP
similarity, language, diversity — is computed for the whole batch at once (``corpus.scoring``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import apache_beam as beam
import pyarrow as pa

import schemas
from corpus.ids import id_hashes
from corpus.language import LanguageModel
from corpus.scoring import score_texts
from corpus.similarity import WordAverager
from corpus.wordvec import load_vectors_cached
from pipelines.batches import VECTORIZED_BATCH_ROWS, iter_tables, shard_number
from pipelines.io import file_rows, part_writer
from pipelines.progress import Report, RunPipeline, Tally, complete_rows, run_reporting

# What scoring reads of a ``pairs`` shard: the sentences as written (language) and as tokens.
SCORING_INPUT = ["id", "trans_score", "reference", "translation", "reference_tok", "translation_tok"]


def score_table(table: pa.Table, model: WordAverager, language: LanguageModel) -> pa.Table:
    """The ``scored`` rows of a ``pairs`` batch (``SCORING_INPUT`` columns at least): its id, the
    id's hash and every score. The text stays in ``pairs``: AssignDeciles joins the two."""
    scores = score_texts(*(table.column(name) for name in ("reference", "translation", "reference_tok", "translation_tok")), model, language)
    ids = table.column("id")
    # NaN is an undefined score (Kendall τ below two shared words): null, so it is not ranked; a NaN
    # where the schema wants a number fails the write instead of passing as a value.
    undefined_as_null = {name: pa.array(values, from_pandas=True) for name, values in scores.items()}
    return pa.table({"id": ids, "trans_score": table.column("trans_score"), "id_hash": id_hashes(ids.to_pylist()), **undefined_as_null})


class ScoreShard(beam.DoFn):
    def __init__(self, vectors_path: str, scored_dir: str, batch_rows: int = VECTORIZED_BATCH_ROWS):
        self.vectors_path, self.scored_dir, self.batch_rows = vectors_path, scored_dir, batch_rows

    def setup(self):
        self.model = WordAverager(*load_vectors_cached(self.vectors_path))
        self.language = LanguageModel.load()

    def process(self, path: str):
        # batch in, batch out: a worker holds one batch of the shard, whatever the shard's size
        with part_writer(self.scored_dir, shard_number(path), schemas.SCORED) as writer:
            for table in iter_tables(path, SCORING_INPUT, self.batch_rows):
                writer.write(score_table(table, self.model, self.language))
        yield writer.rows


def build_score(pipeline: beam.Pipeline, pairs_files: list[str], scored_dir: str, vectors_path: str, batch_rows: int = VECTORIZED_BATCH_ROWS):
    """Add the scoring transforms; returns the PCollection of rows written per shard."""
    return (
        pipeline
        | "Shards" >> beam.Create(sorted(pairs_files))
        | "Score" >> beam.ParDo(ScoreShard(vectors_path, scored_dir, batch_rows))
    )


def score_pairs(run_pipeline: RunPipeline, pairs_files: list[str], scored_dir: str, vectors_path: str, batch_rows: int = VECTORIZED_BATCH_ROWS,
                report: Report | None = None) -> None:
    """Score every ``pairs`` file into ``scored_dir``; ``report`` gets the pairs scored while it runs."""
    tally = Tally(lambda: complete_rows(scored_dir), file_rows(pairs_files), "pairs scored", "pairs")
    run_reporting(run_pipeline, lambda p: build_score(p, pairs_files, scored_dir, vectors_path, batch_rows), tally, report)


def sha256_of(*paths: str | Path) -> str:
    """Content fingerprint of the PP model's files (the manifest records which model scored)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def export_encoder_vectors(encoder_dir: str | Path, vectors_path: str | Path) -> None:
    """A trained Word Avg encoder's word embeddings as a word2vec text file for the scorers."""
    from models.encode import load_encoder, save_word_vectors

    words, vectors = load_encoder(encoder_dir, "cpu").word_vectors()
    save_word_vectors(words, vectors, vectors_path)
