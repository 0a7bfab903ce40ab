"""Exact cut keys over a sharded dataset (the passes of ``corpus.deciles``) and AssignDeciles' write.

``find_cuts`` runs one Beam pipeline that reads the files three times: pass 1 combines a uniform
sample and the row count per ranking, the windows are computed from it inside the pipeline (a
side input), pass 2 combines, per (ranking, cut), the counts in the bins of its window, the bin
that holds the cut becomes its bracket (a side input again) and pass 3 combines the count below
each bracket and the keys inside it (when the sample holds every row, its sorted keys are the
answer and passes 2 and 3 are left out). Only the small sample, the bin counts and one bin's keys
a cut cross the shuffle; no data is collected on the driver, which reads the resulting cut keys
from a JSON file. A cut that falls outside its window makes the driver rerun the pipeline with
wider windows. What the caller does with the cuts can join the same pipeline (``then``: the cuts
reach it as a side input, and it does nothing on an attempt whose cuts are incomplete), which
saves a pipeline's start.

``add_corpus_write`` is AssignDeciles' write, the last read: each scored shard is joined to its
pairs, gets a decile per scorer and is written as one file per ``decile_pp`` partition, while
per-(scorer, decile) score ranges and example pairs are combined for the corpus summary.
``write_corpus`` is AssignDeciles' whole work: one pipeline for the cuts and the write, then the
summary files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

import schemas
from corpus import deciles
from corpus.deciles import SCORERS, Key
from corpus.mix import mix64
from corpus.selection import PARTITION
from corpus.stats import summary_markdown, summary_record
from pipelines.batches import (
    IdKeys,
    RankingInput,
    ranked_rows,
    shard_files,
    shard_number,
    with_pairs,
)
from pipelines.io import dataset_files, file_rows, part_writer
from pipelines.progress import (
    UNWATCHED,
    Marks,
    Report,
    RunPipeline,
    Tally,
    marking,
    run_reporting,
)
from pipelines.stats import diversity_figures

log = logging.getLogger(__name__)

DEFAULT_SAMPLE = 1_000_000


class _ArraysCombine(beam.CombineFn):
    """Sums counts and gathers (scores, hashes) parts; arrays are joined once, at the end."""

    def create_accumulator(self):
        return (0, [], [])

    def add_input(self, accumulator, part):
        count, scores, hashes = accumulator
        scores.append(part[1])
        hashes.append(part[2])
        return count + part[0], scores, hashes

    def merge_accumulators(self, accumulators):
        count, scores, hashes = 0, [], []
        for c, s, h in accumulators:
            count += c
            scores += s
            hashes += h
        return count, scores, hashes

    def compact(self, accumulator):
        count, scores, hashes = accumulator
        return (count, [np.concatenate(scores)], [np.concatenate(hashes)]) if len(scores) > 1 else accumulator

    def extract_output(self, accumulator):
        count, scores, hashes = self.compact(accumulator)
        return count, (scores[0] if scores else np.zeros(0)), (hashes[0] if hashes else np.zeros(0, np.uint64))


def _sample_parts(path: str, source: RankingInput, limit: int, marks: Marks):
    """Pass 1 on one file: per ranking, its row count and its keys in the sample (a ranking that
    ranks none of a batch's rows says nothing of it: one that ranks no row at all, Kendall τ of
    pairs that never share two words, is absent, as a ranking of an empty dataset is)."""
    for keys in source.keys_of(path):
        for name, (scores, hashes) in keys.items():
            if not len(scores):
                continue
            keep = deciles.in_sample(hashes, limit)
            yield name, (len(scores), scores[keep], hashes[keep])
    marks.add("file", 1)


def _windows_of(named_sample, ranks: Callable[[int], list[int]], width: float):
    name, (count, scores, hashes) = named_sample
    for k, window in enumerate(deciles.windows(scores, hashes, count, ranks(count), width)):
        yield (name, k), window


def _cut_parts(path: str, source: RankingInput, marks: Marks, count: Callable, searches: dict):
    """Pass 2 or 3 on one file: per (ranking, cut) of ``searches`` (its window or bracket),
    ``count``(scores, hashes, search) of each batch."""
    for keys in source.keys_of(path):
        for (name, k), search in searches.items():
            yield (name, k), count(*keys[name], search)
    marks.add("file", 1)


def _locate(keyed, windows: dict):
    (name, k), counts = keyed
    return (name, k), deciles.locate(windows[name, k], counts)


def _missed(located, windows: dict):
    """The record's entry of a cut outside its window."""
    (name, k), bracket = located
    if bracket is None:
        yield name, k, windows[name, k].unbounded, None


def _cuts_of_all(named_sample, ranks: Callable[[int], list[int]]):
    """The cuts of a ranking whose sample kept every row (``corpus.deciles.cuts_of_all``)."""
    name, (count, scores, hashes) = named_sample
    for k, cut in enumerate(deciles.cuts_of_all(scores, hashes, ranks(count))):
        yield name, k, True, cut.as_tuple()


def _resolve(keyed, brackets: dict, windows: dict):
    (name, k), (below, scores, hashes) = keyed
    cut = deciles.exact_cut(brackets[name, k], below, scores, hashes)
    return name, k, windows[name, k].unbounded, None if cut is None else cut.as_tuple()


def _write_json(value, path: str) -> None:
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(value, sort_keys=True).encode())


def _cut_record(resolved: list, counts: dict[str, int]) -> dict:
    record = {name: {"count": int(count), "cuts": {}, "unbounded": {}} for name, count in counts.items()}
    for name, k, unbounded, cut in resolved:
        record[name]["cuts"][str(k)] = cut
        record[name]["unbounded"][str(k)] = unbounded
    return record


def complete_cuts(record: dict) -> dict[str, list[Key]] | None:
    """The cut keys of every ranking in a cut record, or None while one of them is missing."""
    cuts = {}
    for name, entry in record.items():
        found = [entry["cuts"][str(k)] for k in range(len(entry["cuts"]))]
        if None in found:
            return None
        cuts[name] = [Key(*cut) for cut in found]
    return cuts


# Transforms that read every file once more with the cuts, in the cut search's pipeline:
# ``then(files, record, marks)`` gets the (spread) file paths, the cut record as a one-element
# PCollection (a side input for it; see ``complete_cuts``) and the marks to leave a ``file`` mark
# per file it has read.
AfterCuts = Callable[[beam.PCollection, beam.PCollection, Marks], object]


def build_cut_search(pipeline: beam.Pipeline, source: RankingInput, ranks, n_hint: int, sample_size: int, width: float, result_path: str,
                     marks: Marks = UNWATCHED, then: AfterCuts | None = None):
    """Passes 1, 2 and 3 (and ``then``) as one pipeline; writes {name: {count, cuts: {k: [score,
    hash] | null}}} and leaves a ``file`` mark per file read (one per pass, and ``then``'s)."""
    limit = deciles.sample_limit(n_hint, sample_size)
    # each pass reads the keys of a file and reduces them in one step: the keys of every row
    # never form a PCollection that a runner would hold while the windows are computed
    files = pipeline | "Files" >> beam.Create(sorted(source.files))
    samples = files | "SampleParts" >> beam.FlatMap(_sample_parts, source, limit, marks) | "Samples" >> beam.CombinePerKey(_ArraysCombine())
    counts = samples | "Counts" >> beam.Map(lambda named: (named[0], named[1][0]))
    if deciles.keeps_all(n_hint, sample_size):  # the sample is every row: the cuts are in it, no more passes
        resolved = samples | "Cuts" >> beam.FlatMap(_cuts_of_all, ranks)
    else:
        windows = beam.pvalue.AsDict(samples | "Windows" >> beam.FlatMap(_windows_of, ranks, width))
        located = (
            files
            | "BinParts" >> beam.FlatMap(_cut_parts, source, marks, deciles.count_bins, windows)
            | "Bins" >> beam.CombinePerKey(sum)
            | "Locate" >> beam.Map(_locate, windows)
        )
        brackets = beam.pvalue.AsDict(located | "Found" >> beam.Filter(lambda found: found[1] is not None))
        cuts = (
            files
            | "BracketParts" >> beam.FlatMap(_cut_parts, source, marks, deciles.count_bracket, brackets)
            | "Brackets" >> beam.CombinePerKey(_ArraysCombine())
            | "Resolve" >> beam.Map(_resolve, brackets, windows)
        )
        resolved = (cuts, located | "Missed" >> beam.FlatMap(_missed, windows)) | "AllResolved" >> beam.Flatten()
    record = resolved | "AllCuts" >> beam.combiners.ToList() | "Record" >> beam.Map(_cut_record, beam.pvalue.AsDict(counts))
    if then is not None:
        then(files, record, marks)
    return record | "WriteCuts" >> beam.Map(_write_json, result_path)


def find_cuts(
    run_pipeline: RunPipeline,
    source: RankingInput,
    ranks: Callable[[int], list[int]],
    work_dir: str,
    sample_size: int = DEFAULT_SAMPLE,
    width: float = deciles.DEFAULT_WIDTH,
    report: Report | None = None,
    then: AfterCuts | None = None,
    then_says: str = "",
) -> tuple[dict[str, int], dict[str, list[Key]]]:
    """Row count and exact cut keys of every ranking in ``source.keys`` (names with no row are absent).

    ``ranks(n)`` gives the 0-based ranks to cut at for n rows; the JSON record of each
    attempt is left in ``work_dir`` (``_cuts-<attempt>.json``). ``then`` joins the pipeline
    (see ``AfterCuts``); it has done its work once this returns. With a ``report``, the files
    read so far are reported while the pipeline runs (``then_says`` what ``then``'s read is for).
    """
    n_hint = file_rows(source.files)
    passes = 1 if deciles.keeps_all(n_hint, sample_size) else 3
    per_file = {1: "one", 3: "three"}[passes]
    what = f"file reads ({per_file} per file for the exact cuts, one {then_says})" if then else f"file reads for the exact cuts ({per_file} per file)"
    reads = passes + (1 if then else 0)
    for attempt in range(1, 64):
        path = FileSystems.join(work_dir, f"_cuts-{attempt}.json")
        with marking(FileSystems.join(work_dir, "_cuts-progress")) as marks:
            tally = Tally(marks.counter("file"), reads * len(source.files), what, "files")
            run_reporting(run_pipeline,
                          lambda p, path=path, width=width: build_cut_search(p, source, ranks, n_hint, sample_size, width, path, marks, then),
                          tally, report)
        with FileSystems.open(path) as handle:
            found = json.loads(handle.read())
        cuts = complete_cuts(found)
        if cuts is not None:
            return {name: entry["count"] for name, entry in found.items()}, cuts
        missed = [(name, k) for name, entry in found.items() for k, cut in entry["cuts"].items() if cut is None]
        if any(found[name]["unbounded"][k] for name, k in missed):
            raise RuntimeError(f"cut {missed} not found even with unbounded windows: the input changed while it was read")
        log.warning("cut keys %s fell outside their windows (attempt %d); retrying with wider ones", missed, attempt)
        width *= 16
    raise RuntimeError("cut search did not converge")  # unreachable: windows become unbounded


def decile_ranks(n: int) -> list[int]:
    return deciles.cut_ranks(n, 10)


# What is ranked unless told: every scorer (``trans`` is left out where no model scored the translations).
EVERY_SCORER = tuple(SCORERS)


def scorer_keys(ranked: Sequence[str] = EVERY_SCORER) -> IdKeys:
    """The ranking keys of the ``ranked`` scorers (all but ``trans`` where no model scored the
    translations: their ``trans_score`` is null)."""
    return IdKeys(tuple((name, SCORERS[name]) for name in ranked), stored_hash=True)


_PICK = "_pick"


def with_deciles(table: pa.Table, cuts: dict[str, list[Key]], ranked: Sequence[str] = EVERY_SCORER) -> pa.Table:
    """``table`` plus ``decile_<scorer>`` columns (int8; null for a scorer not ``ranked``, and for
    the rows a ranked one does not rank: ``pipelines.batches.ranked_rows``) and
    ``_pick``, the mixed id hash that chooses the summary's example pairs (a deterministic random
    pick that combines across shards)."""
    keys = scorer_keys(ranked)(table)
    for name in SCORERS:
        if name not in ranked:
            table = table.append_column(f"decile_{name}", pa.nulls(table.num_rows, pa.int8()))
            continue
        scores, hashes = keys[name]  # of the rows the score ranks
        rows = ranked_rows(table, SCORERS[name])
        bins = np.zeros(table.num_rows, np.int8)
        bins[rows] = deciles.assign(scores, hashes, cuts.get(name, []))
        table = table.append_column(f"decile_{name}", pa.array(bins, mask=~rows))
    return table.append_column(_PICK, pa.array(mix64(keys["pp"][1])))


def summary_part(table: pa.Table, examples: int, ranked: Sequence[str] = EVERY_SCORER) -> dict:
    """Per (ranked scorer, decile): rows, score range, and the ``examples`` pairs of smallest pick."""
    pick = table.column(_PICK).to_numpy()
    entries, chosen = [], []
    for name in ranked:
        column = SCORERS[name]
        ranked_at = np.flatnonzero(ranked_rows(table, column))  # a pair the score does not rank is in no decile of it
        scores = table.column(column).to_numpy(zero_copy_only=False)
        bins = table.column(f"decile_{name}").to_numpy(zero_copy_only=False)
        order = ranked_at[np.lexsort((pick[ranked_at], bins[ranked_at]))]  # by decile, then by pick
        by_bin, sorted_scores = bins[order], scores[order]
        present, starts, counts = np.unique(by_bin, return_index=True, return_counts=True)
        lowest, highest = np.minimum.reduceat(sorted_scores, starts), np.maximum.reduceat(sorted_scores, starts)
        for decile, start, count, low, high in zip(present, starts, counts, lowest, highest, strict=True):
            shown = order[start : start + min(count, examples)]
            entries.append(((name, int(decile)), int(count), float(low), float(high), len(shown)))
            chosen.append(shown)
    columns = [_PICK, "id", "reference", "translation", *SCORERS.values()]
    rows = table.select(columns).take(pa.array(np.concatenate(chosen) if chosen else np.zeros(0, np.int64))).to_pylist()
    part, at = {}, 0
    for key, count, low, high, shown in entries:
        part[key] = {"rows": count, "min": low, "max": high, "examples": rows[at : at + shown]}
        at += shown
    return part


class SummaryCombine(beam.CombineFn):
    """Merges summary parts: rows add up, ranges widen, the smallest-pick examples survive."""

    def __init__(self, examples: int, ranked: Sequence[str] = EVERY_SCORER):
        self.examples, self.ranked = examples, tuple(ranked)

    def create_accumulator(self):
        return {}

    def add_input(self, accumulator, part):
        return self.merge_accumulators([accumulator, part])

    def merge_accumulators(self, accumulators):
        merged: dict = {}
        for accumulator in accumulators:
            for key, entry in accumulator.items():
                if key not in merged:
                    merged[key] = dict(entry)
                    continue
                into = merged[key]
                into["rows"] += entry["rows"]
                into["min"], into["max"] = min(into["min"], entry["min"]), max(into["max"], entry["max"])
                both = sorted(into["examples"] + entry["examples"], key=lambda row: row[_PICK])
                into["examples"] = both[: self.examples]
        return merged

    def extract_output(self, accumulator):
        summary: dict = {name: {} for name in self.ranked}
        for (name, decile), entry in sorted(accumulator.items()):
            examples = [{k: v for k, v in row.items() if k != _PICK} for row in entry["examples"]]
            summary[name][str(decile)] = {**entry, "examples": examples}
        return summary


class WriteDeciledShard(beam.DoFn):
    """One scored shard, joined to its pairs (``pipelines.batches.with_pairs``) →
    ``decile_pp=<d>/part-<shard>.parquet`` files; yields its summary part. Nothing is written
    with an incomplete cut record: the cut search runs again."""

    def __init__(self, corpus_dir: str, pairs_files: dict[int, str], examples: int, ranked: Sequence[str], marks: Marks = UNWATCHED):
        self.corpus_dir, self.pairs_files, self.examples, self.ranked, self.marks = corpus_dir, pairs_files, examples, tuple(ranked), marks

    def process(self, path: str, record: dict):
        cuts = complete_cuts(record)
        if cuts is None:
            return
        # batch in, batch out: one writer per partition stays open, a worker holds one batch
        shard, summary, combine = shard_number(path), None, SummaryCombine(self.examples, self.ranked)
        if shard not in self.pairs_files:
            raise ValueError(f"{path} has no pairs shard {shard}: score the pairs again")
        with ExitStack() as files:
            writers: dict[int, schemas.TableWriter] = {}
            for table in with_pairs(path, self.pairs_files[shard]):
                table = with_deciles(table, cuts, self.ranked)
                part = summary_part(table, self.examples, self.ranked)
                summary = part if summary is None else combine.merge_accumulators([summary, part])
                partitions = table.column(PARTITION).to_numpy()
                table = table.drop_columns([_PICK, PARTITION])
                for decile in np.unique(partitions):
                    if decile not in writers:
                        partition_dir = FileSystems.join(self.corpus_dir, f"{PARTITION}={decile}")
                        writers[decile] = files.enter_context(part_writer(partition_dir, shard, schemas.CORPUS_FILE))
                    writers[decile].write(table.filter(pa.array(partitions == decile)))
        self.marks.add("file", 1)
        if summary is not None:
            yield summary


def add_corpus_write(corpus_dir: str, pairs_dir: str, examples: int, summary_path: str, ranked: Sequence[str] = EVERY_SCORER) -> AfterCuts:
    """The write, to run in the cut search's pipeline: the partitioned corpus (the scored
    shards joined to the ``pairs`` shards in ``pairs_dir``) and the per-decile summary JSON."""

    def then(files: beam.PCollection, record: beam.PCollection, marks: Marks):
        return (
            files
            | "Write" >> beam.ParDo(WriteDeciledShard(corpus_dir, shard_files(dataset_files(pairs_dir)), examples, ranked, marks),
                                    beam.pvalue.AsSingleton(record))
            | "Summary" >> beam.CombineGlobally(SummaryCombine(examples, ranked))
            | "WriteSummary" >> beam.Map(_write_json, summary_path)
        )

    return then


def write_corpus(
    run_pipeline: RunPipeline,
    scored_files: list[str],
    pairs_dir: str,
    corpus_dir: str,
    out_dir: str,
    *,
    shown_corpus_dir: str,
    pp_model: dict,
    rejects: dict[str, dict],
    examples: int,
    sample_size: int = DEFAULT_SAMPLE,
    report: Report | None = None,
    translated_by: str = "",
    ranked: Sequence[str] = EVERY_SCORER,
) -> dict:
    """Rank ``scored_files`` into deciles of every scorer and write the corpus (their rows in
    ``pairs_dir`` with the scores and deciles) partitioned by ``decile_pp`` to ``corpus_dir``,
    and its summary (summary.json, summary.md) to the local ``out_dir``, where the cut search
    leaves its records too; returns the summary. ``shown_corpus_dir`` is where the summary says
    the corpus is (its final place); ``pp_model``, ``rejects`` and ``translated_by`` (the model that
    made the translations), the upstream stages' records, are copied into it. ``ranked``: the
    scorers ranked (``trans`` left out where no model scored the translations: ``decile_trans``
    is null then). ``report`` follows the pipelines as they run."""
    deciles_path = Path(out_dir, "_deciles.json")
    counts, cuts = find_cuts(
        run_pipeline, RankingInput(tuple(scored_files), scorer_keys(ranked)), decile_ranks, out_dir, sample_size, report=report,
        then=add_corpus_write(corpus_dir, pairs_dir, examples, str(deciles_path), ranked), then_says="to write the corpus",
    )
    summary = summary_record(counts, cuts, json.loads(deciles_path.read_text()), shown_corpus_dir, pp_model, rejects, translated_by, ranked,
                             diversity_figures(dataset_files(corpus_dir)))
    Path(out_dir, "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(out_dir, "summary.md").write_text(summary_markdown(summary))
    return summary
