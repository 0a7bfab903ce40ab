"""CorpusStats' sample: up to k pairs per group (a source domain, a pivot language or a system:
``GROUPS``; and over all of them), chosen by the smallest mixed id hash — a uniform random sample
that is the same on every run and sharding. Each batch contributes only its k smallest per
group, and a combiner keeps the k smallest. ``write_corpus_stats`` is CorpusStats' whole work:
the sample, then Table 2 of each group."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from corpus.mix import mix64
from corpus.stats import DIVERSITY_FIGURES, Idf, domain_table2, table2_markdown
from corpus.wordvec import load_word_counts
from pipelines.batches import iter_tables
from pipelines.progress import Marks, Report, RunPipeline, Tally, marking, run_reporting

# The corpus columns Table 2 can be grouped by: the paper's source domain, and for a corpus of
# several languages or systems (translations made elsewhere), the pivot language or the system,
# and for one of several paraphrases a source, how they were made.
GROUPS = ("domain", "pivot", "system", "diversity")
COLUMNS = ["id", "id_hash", "reference_tok", "pp_sim"]
ALL_DOMAINS = "(all)"
_PICK = "pick"


def _smallest(table: pa.Table, k: int) -> pa.Table:
    if table.num_rows <= k:
        return table
    pick = table.column(_PICK).to_numpy()
    return table.take(pa.array(np.argpartition(pick, k - 1)[:k]))


def _group_parts(path: str, k: int, group: str, marks: Marks):
    for table in iter_tables(path, [*COLUMNS, group]):
        table = table.append_column(_PICK, pa.array(mix64(table.column("id_hash").to_numpy()))).rename_columns([*COLUMNS, "group", _PICK])
        groups = table.column("group").to_numpy(zero_copy_only=False)
        yield ALL_DOMAINS, _smallest(table, k)
        for name in np.unique(groups):
            yield str(name), _smallest(table.filter(pa.array(groups == name)), k)
    marks.add("file", 1)


class SmallestRows(beam.CombineFn):
    """The k rows of smallest pick among everything added."""

    def __init__(self, k: int):
        self.k = k

    def create_accumulator(self):
        return []

    def add_input(self, accumulator, table):
        return self.compact([*accumulator, table])

    def merge_accumulators(self, accumulators):
        return self.compact([table for tables in accumulators for table in tables])

    def compact(self, tables):
        if sum(t.num_rows for t in tables) <= 2 * self.k:
            return tables
        return [_smallest(pa.concat_tables(tables), self.k)]

    def extract_output(self, tables):
        return _smallest(pa.concat_tables(tables), self.k).sort_by(_PICK) if tables else None


def _write_sample(samples: list, path: str, group: str) -> None:
    tables = [table.append_column("sample", pa.array([name] * table.num_rows))
              for name, table in sorted(samples, key=lambda kv: kv[0]) if table is not None]
    schema = pa.schema([("id", pa.string()), ("reference_tok", pa.string()), ("pp_sim", pa.float64()), (group, pa.string()), ("sample", pa.string())])
    table = pa.concat_tables(tables).drop_columns(["id_hash", _PICK]).rename_columns(schema.names) if tables else schema.empty_table()
    with FileSystems.create(path) as handle:
        pq.write_table(table, handle, compression="zstd")


def build_group_sample(pipeline: beam.Pipeline, files: list[str], per_group: int, out_path: str, marks: Marks, group: str = "domain"):
    """One Parquet file of the sample: id, reference_tok, pp_sim, the ``group`` column and
    ``sample`` (its value, or ``(all)``); a ``file`` mark per file read."""
    return (
        pipeline
        | "Files" >> beam.Create(sorted(files))
        | "Parts" >> beam.FlatMap(_group_parts, per_group, group, marks)
        | "Smallest" >> beam.CombinePerKey(SmallestRows(per_group))
        | "All" >> beam.combiners.ToList()
        | "Write" >> beam.Map(_write_sample, out_path, group)
    )


def pairs_per_pivot(corpus_files: list[str]) -> dict[str, int]:
    """The corpus's pairs by pivot language (one column read), sorted by language."""
    counts: Counter[str] = Counter()
    for path in corpus_files:
        for table in iter_tables(path, ["pivot"]):
            counts.update(dict(zip(*(column.to_pylist() for column in pc.value_counts(table.column("pivot")).flatten()), strict=True)))
    return dict(sorted(counts.items()))


# The figures of each way of making paraphrases: against the reference, among siblings, meaning.
FIGURE_COLUMNS = tuple(DIVERSITY_FIGURES)


def diversity_figures(corpus_files: list[str]) -> dict[str, dict]:
    """Per ``diversity`` value (how the pairs were made): the pairs, and the mean of each of
    FIGURE_COLUMNS over the pairs that have it (a table at a time)."""
    sums: dict[str, Counter] = {}
    for path in corpus_files:
        for table in iter_tables(path, ["diversity", *FIGURE_COLUMNS]):
            aggregated = table.group_by("diversity").aggregate([("diversity", "count")] + [(name, agg) for name in FIGURE_COLUMNS
                                                                                           for agg in ("sum", "count")])
            for row in aggregated.to_pylist():
                totals = sums.setdefault(row["diversity"], Counter())
                totals["pairs"] += row["diversity_count"]
                for name in FIGURE_COLUMNS:
                    totals[f"{name}_sum"] += row[f"{name}_sum"] or 0.0
                    totals[f"{name}_count"] += row[f"{name}_count"]
    return {made: {"pairs": totals["pairs"], **{name: round(totals[f"{name}_sum"] / totals[f"{name}_count"], 4) if totals[f"{name}_count"] else None
                                                for name in FIGURE_COLUMNS}}
            for made, totals in sorted(sums.items())}


def write_corpus_stats(
    run_pipeline: RunPipeline, corpus_files: list[str], per_group: int, word_counts: str, out_dir: str, report: Report | None = None,
    group: str = "domain",
) -> tuple[dict[str, dict], dict[str, int]]:
    """Table 2 of each value of the ``group`` column (GROUPS; and of all) on a sample of
    ``per_group`` pairs each: the sample (sample.parquet), the statistics (stats.json) and the
    table (stats.md) in the local ``out_dir``; IDF from the ``word_counts`` file (empty: no IDF
    row), and the pairs per pivot language. Returns the statistics and the pairs per pivot;
    ``report`` gets the files sampled while the pipeline runs."""
    sample_path = Path(out_dir, "sample.parquet")
    with marking(str(Path(out_dir, "_sample-progress"))) as marks:
        tally = Tally(marks.counter("file"), len(corpus_files), "corpus files sampled", "files")
        run_reporting(run_pipeline, lambda p: build_group_sample(p, corpus_files, per_group, str(sample_path), marks, group), tally, report)
    idf = Idf(load_word_counts(word_counts)) if word_counts else None
    stats = domain_table2(pq.read_table(sample_path), idf)
    Path(out_dir, "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    pivots = pairs_per_pivot(corpus_files)
    stats_md = table2_markdown(stats) + "\nPairs per pivot language: " + ", ".join(f"{pivot} {count}" for pivot, count in pivots.items()) + "\n"
    Path(out_dir, "stats.md").write_text(stats_md)
    return stats, pivots
