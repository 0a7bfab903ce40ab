"""Training-set selection over the corpus, and the top-half selection that bootstraps the PP model.

A selection keeps the rows that pass ``corpus.selection.Rules`` and then the ``Sample.n_pairs``
of them with the smallest hash of (seed, id): a seeded random sample whose membership is one exact
cut (``pipelines.deciles.find_cuts``, whose pipeline also writes the rows kept), so it is the
same on any runner and any sharding. With
the release filters, exact duplicates are removed first: rows are routed by a hash of their
token strings, so identical pairs meet in one group, and the smallest id is kept.
"""

from __future__ import annotations

import functools

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

import schemas
from corpus.deciles import assign, cut_ranks
from corpus.ids import id_hashes
from corpus.selection import Rules, Sample, drop_duplicates
from pipelines.batches import IdKeys, RankingInput, shard_number
from pipelines.deciles import DEFAULT_SAMPLE, AfterCuts, complete_cuts, find_cuts
from pipelines.io import dataset_files, write_part
from pipelines.progress import (
    Marks,
    Report,
    RunPipeline,
    Tally,
    marking,
    run_reporting,
)

SAMPLE = "sample"


class WriteKept(beam.DoFn):
    """Rows of one input file whose bin under the cuts of ranking ``name`` is ``keep`` → the part
    numbered by the file's place in the sorted input; nothing with an incomplete cut record."""

    def __init__(self, source: RankingInput, name: str, keep: int, schema: pa.Schema, out_dir: str, marks: Marks):
        self.source, self.name, self.keep, self.schema, self.out_dir, self.marks = source, name, keep, schema, out_dir, marks

    def setup(self):
        self.index = {path: index for index, path in enumerate(sorted(self.source.files))}

    def process(self, path: str, record: dict):
        found = complete_cuts(record)
        if found is None:
            return
        cuts, parts = found.get(self.name, []), []
        for table in self.source.tables(path, self.schema.names):
            scores, hashes = self.source.keys(table)[self.name]
            parts.append(table.filter(pa.array(assign(scores, hashes, cuts) == self.keep)).select(self.schema.names))
        table = pa.concat_tables(parts) if parts else None
        if table is not None and table.num_rows:
            write_part(table, self.schema, self.out_dir, self.index[path])
        self.marks.add("file", 1)


def keep_bin(source: RankingInput, name: str, keep: int, schema: pa.Schema, out_dir: str) -> AfterCuts:
    """The cut search's last read: the rows in bin ``keep`` of ranking ``name`` → ``out_dir``."""

    def then(files: beam.PCollection, record: beam.PCollection, marks: Marks):
        return files | "WriteKept" >> beam.ParDo(WriteKept(source, name, keep, schema, out_dir, marks), beam.pvalue.AsSingleton(record))

    return then


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
    counts, _ = find_cuts(run_pipeline, source, functools.partial(first_n, sample.n_pairs), work_dir, sample_size, report=report,
                          then=keep_bin(source, SAMPLE, 0, schemas.TRAINING, out_dir), then_says="to write the selection")
    available = counts.get(SAMPLE, 0)
    return {"passed_rules": available, "selected": min(sample.n_pairs, available) if sample.n_pairs else available}


def select_top_half(run_pipeline: RunPipeline, pairs_files: list[str], out_dir: str, work_dir: str, sample_size: int = DEFAULT_SAMPLE, report: Report | None = None) -> dict:
    """The pairs whose translation score is in the top half (rank ≥ N/2 by (score, id hash));
    ``report`` follows the pipelines as they run."""
    source = RankingInput(tuple(pairs_files), IdKeys((("trans", "trans_score"),)))
    counts, cuts = find_cuts(run_pipeline, source, functools.partial(cut_ranks, bins=2), work_dir, sample_size, report=report,
                             then=keep_bin(source, "trans", 1, schemas.PAIRS, out_dir), then_says="to write the top half")
    total = counts.get("trans", 0)
    median = cuts["trans"][0].score if cuts.get("trans") else None
    return {"pairs": total, "selected": total - total // 2, "median_trans_score": median}
