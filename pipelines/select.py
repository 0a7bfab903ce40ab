"""Training-set selection over the corpus, and the top-half selection that bootstraps the PP model.

A selection keeps the rows that pass ``corpus.selection.Rules`` and then the ``Sample.n_pairs``
of them with the smallest hash of (seed, id): a seeded random sample whose membership is one exact
cut (``pipelines.deciles.find_cuts``), so it is the same on any runner and any sharding. With
the release filters, exact duplicates are removed first: rows are routed by a hash of their
token strings, so identical pairs meet in one group, and the smallest id is kept.
"""

from __future__ import annotations

import functools

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

import schemas
from corpus.deciles import Key, assign, cut_ranks
from corpus.ids import id_hashes
from corpus.selection import Rules, Sample, drop_duplicates
from pipelines.batches import IdKeys, RankingInput, shard_number
from pipelines.deciles import DEFAULT_SAMPLE, find_cuts
from pipelines.io import dataset_files, write_part
from pipelines.progress import (
    Marks,
    Report,
    RunPipeline,
    Tally,
    complete_rows,
    marking,
    run_reporting,
)

SAMPLE = "sample"


class WriteKept(beam.DoFn):
    """Rows of one input file whose bin under ``cuts`` (ranking ``name``) is ``keep`` → part <index>."""

    def __init__(self, source: RankingInput, name: str, cuts: list[Key], keep: int, schema: pa.Schema, out_dir: str):
        self.source, self.name, self.cuts, self.keep, self.schema, self.out_dir = source, name, cuts, keep, schema, out_dir

    def process(self, item):
        index, path = item
        parts = []
        for table in self.source.tables(path, self.schema.names):
            scores, hashes = self.source.keys(table)[self.name]
            parts.append(table.filter(pa.array(assign(scores, hashes, self.cuts) == self.keep)).select(self.schema.names))
        table = pa.concat_tables(parts) if parts else None
        if table is not None and table.num_rows:
            yield write_part(table, self.schema, self.out_dir, index)


def build_write_kept(pipeline: beam.Pipeline, source: RankingInput, name: str, cuts: list[Key], keep: int, schema: pa.Schema, out_dir: str):
    return (
        pipeline
        | "Files" >> beam.Create(list(enumerate(sorted(source.files))))
        | "Spread" >> beam.Reshuffle()
        | "WriteKept" >> beam.ParDo(WriteKept(source, name, cuts, keep, schema, out_dir))
    )


def write_kept(
    run_pipeline: RunPipeline, source: RankingInput, name: str, cuts: list[Key], keep: int, schema: pa.Schema, out_dir: str, expected_rows: int, report: Report | None
) -> None:
    """Run ``build_write_kept``; ``report`` gets the rows written of the ``expected_rows`` while it runs."""
    tally = Tally(lambda: complete_rows(out_dir), expected_rows, "pairs written", "pairs")
    run_reporting(run_pipeline, lambda p: build_write_kept(p, source, name, cuts, keep, schema, out_dir), tally, report)


def _route(path: str, rules: Rules, num_shards: int, marks: Marks):
    """Filtered rows of a corpus file, split by hash(reference_tok TAB translation_tok) mod
    shards; a ``file`` mark once the file is read to the end."""
    for table in RankingInput((path,), IdKeys(()), rules).tables(path, schemas.TRAINING.names):
        text = pc.binary_join_element_wise(table.column("reference_tok"), table.column("translation_tok"), "\t")
        shards = id_hashes(text.to_pylist()) % num_shards
        for shard in sorted(set(shards.tolist())):
            yield shard, table.filter(pa.array(shards == shard)).select(schemas.TRAINING.names)
    marks.add("file", 1)


def _write_unique(keyed, out_dir: str) -> int:
    shard, tables = keyed
    return write_part(drop_duplicates(pa.concat_tables(tables)), schemas.TRAINING, out_dir, shard)


def build_candidates(pipeline: beam.Pipeline, files: list[str], rules: Rules, out_dir: str, num_shards: int, marks: Marks):
    """Rows passing ``rules`` with exact duplicates removed, as a ``training``-schema dataset."""
    return (
        pipeline
        | "Files" >> beam.Create(sorted(files))
        | "Spread" >> beam.Reshuffle()
        | "Route" >> beam.FlatMap(_route, rules, num_shards, marks)
        | "Group" >> beam.GroupByKey()
        | "Unique" >> beam.Map(_write_unique, out_dir)
    )


def first_n(n: int, count: int) -> list[int]:
    """One cut at rank n, or none (everything is kept) when n is 0 or at least the count."""
    return [n] if 0 < n < count else []


def select_training_set(
    run_pipeline: RunPipeline,
    corpus_files: list[str],
    rules: Rules,
    sample: Sample,
    out_dir: str,
    work_dir: str,
    sample_size: int = DEFAULT_SAMPLE,
    report: Report | None = None,
) -> dict[str, int]:
    """Write the selection to ``out_dir``; returns how many rows passed the rules and how many were
    kept. ``report`` follows the pipelines as they run."""
    files = rules.files(corpus_files)
    keys = IdKeys(((SAMPLE, None),), salt=f"{sample.sample_seed}:")
    if rules.release_filter:
        candidates = f"{work_dir}/candidates"
        shards = max(1, len({shard_number(path) for path in files}))
        with marking(f"{work_dir}/_candidates-progress") as marks:
            tally = Tally(marks.counter("file"), len(files), "corpus files read for the release filters", "files")
            run_reporting(run_pipeline, lambda p: build_candidates(p, files, rules, candidates, shards, marks), tally, report)
        source = RankingInput(tuple(dataset_files(candidates)), keys)
    else:
        source = RankingInput(tuple(files), keys, rules)
    counts, cuts = find_cuts(run_pipeline, source, functools.partial(first_n, sample.n_pairs), work_dir, sample_size, report=report)
    available = counts.get(SAMPLE, 0)
    selected = min(sample.n_pairs, available) if sample.n_pairs else available
    write_kept(run_pipeline, source, SAMPLE, cuts.get(SAMPLE, []), 0, schemas.TRAINING, out_dir, selected, report)
    return {"passed_rules": available, "selected": selected}


def select_top_half(run_pipeline: RunPipeline, pairs_files: list[str], out_dir: str, work_dir: str, sample_size: int = DEFAULT_SAMPLE, report: Report | None = None) -> dict:
    """The pairs whose translation score is in the top half (rank ≥ N/2 by (score, id hash));
    ``report`` follows the pipelines as they run."""
    source = RankingInput(tuple(pairs_files), IdKeys((("trans", "trans_score"),)))
    counts, cuts = find_cuts(run_pipeline, source, functools.partial(cut_ranks, bins=2), work_dir, sample_size, report=report)
    total = counts.get("trans", 0)
    write_kept(run_pipeline, source, "trans", cuts.get("trans", []), 1, schemas.PAIRS, out_dir, total - total // 2, report)
    median = cuts["trans"][0].score if cuts.get("trans") else None
    return {"pairs": total, "selected": total - total // 2, "median_trans_score": median}
