"""Progress of the long Beam stages, counted from outside while their pipelines run: the
mechanism on its own, then each stage's function on small real data, where the last report,
taken after the pipeline has finished, must count all of its work."""

import gzip
import time

import pyarrow as pa
import pytest
from test_deciles_pipeline import run_in_process, scored_table, write_scored, write_shards
from test_score import pairs_table, write_vectors

import schemas
from corpus.inputs import resolve_inputs
from corpus.selection import Rules, Sample
from pipelines import deciles, progress
from pipelines.ingest import ingest
from pipelines.io import dataset_files, write_part
from pipelines.progress import (
    UNWATCHED,
    Marks,
    Tally,
    complete_rows,
    marking,
    progress_while_running,
)
from pipelines.rawshards import plan_shards
from pipelines.score import score_pairs
from pipelines.select import select_training_set
from pipelines.stats import write_corpus_stats


def test_reports_while_the_body_runs_never_100_and_stop_with_it():
    reports, done = [], [0]
    tally = Tally(lambda: done[0], lambda: 40, "things made", "things")
    with progress_while_running(tally, lambda message, percent: reports.append((message, percent)), every=0.05):
        time.sleep(0.2)
        done[0] = 40
        time.sleep(0.2)
    after = len(reports)
    time.sleep(0.2)
    assert reports[0][0].startswith("0/40 things made (0.0 things/s, time left unknown)")
    assert reports[-1][0].startswith("40/40 things made (") and "things/s); now the pipeline's last steps, 0.0 min so far" in reports[-1][0]
    assert reports[-1][1] == 99.9  # 100 is the stage's own last word
    assert len(reports) == after


def test_once_every_unit_is_done_the_reports_say_what_the_pipeline_still_does_and_for_how_long():
    """At 51.4M lines the ingest searched its parts for repeated ids for five minutes after its
    last line, while the console said "0.0 min left" every 30 s with a falling rate."""
    reports, done = [], [0]
    tally = Tally(lambda: done[0], 40, "lines read", "lines", then="the search for repeated ids")
    with progress_while_running(tally, lambda message, percent: reports.append(message), every=0.05):
        time.sleep(0.2)
        done[0] = 40
        time.sleep(0.4)
    finishing = [message for message in reports if message.startswith("40/40")]
    assert len(finishing) >= 3 and all("now the search for repeated ids, 0.0 min so far" in message for message in finishing)
    assert len({message.split(";")[0] for message in finishing}) == 1  # the rate stays the one at the last line
    assert not any("min left" in message for message in finishing)


def test_complete_rows_skip_a_part_being_written(tmp_path):
    table = pa.table({"x": list(range(7))})
    write_part(table, table.schema, str(tmp_path), 0)
    (tmp_path / "part-00001.parquet").write_bytes(b"PAR1 half a file")
    assert complete_rows(str(tmp_path)) == 7


def test_marks_count_by_kind_and_leave_nothing(tmp_path):
    folder = str(tmp_path / "marks")
    with marking(folder) as marks:
        marks.add("read", 5)
        marks.add("read", 2)
        marks.add("tokenized", 5)
        assert (marks.count("read"), marks.counter("tokenized")(), marks.count("other")) == (7, 5, 0)
    assert not (tmp_path / "marks").exists()
    UNWATCHED.add("read", 5)
    assert Marks("").count("read") == 0


@pytest.fixture
def last_report(monkeypatch):
    """(run, report callback, the messages) with polls every 0.05 s; ``run`` waits after each
    pipeline, so that the last poll sees it finished, and checks it was reported."""
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.05)
    messages = []

    def run(build):
        before = len(messages)
        run_in_process(build)
        time.sleep(0.3)
        assert len(messages) > before, "no report while this pipeline ran"

    return run, lambda message, percent: messages.append(message), messages


def test_ingest_counts_every_line_read_and_written(tmp_path, last_report):
    run, report, messages = last_report
    lines = [f"news-b1-00train-f00001-s{n}\t0.9\tPes {n}.\tThe dog {n}." for n in range(30)] + ["too\tfew"]
    (tmp_path / "00train.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    plan = plan_shards(resolve_inputs(str(tmp_path / "00train.gz")), 4)
    ingest(run, plan, str(tmp_path / "bitext"), str(tmp_path / "rejects"), 10_000, str(tmp_path), report)
    assert messages[-1].startswith("31/31 lines read and written (") and "now the search of every part for ids repeated across shards" in messages[-1]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["00train.gz", "bitext", "rejects"]


def test_score_cuts_corpus_selection_and_sample_count_their_work(tmp_path, last_report):
    run, report, messages = last_report
    files = write_shards(pairs_table(120), tmp_path / "pairs", 3, schemas.PAIRS)
    score_pairs(run, files, str(tmp_path / "scored"), write_vectors(tmp_path / "vec.txt"), report=report)
    assert messages[-1].startswith("120/120 pairs scored (")

    table = scored_table(200)
    release_ready = {"reference_n_tokens": pa.array([10] * 200, pa.int32()), "translation_n_tokens": pa.array([10] * 200, pa.int32()),
                     "reference_p_en": [0.99] * 200, "translation_p_en": [0.99] * 200,
                     "reference_tok": [f"r{i}" for i in range(200)], "translation_tok": [f"t{i}" for i in range(200)]}
    for name, values in release_ready.items():
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(values))
    scored = write_scored(table, tmp_path / "s2", 4)
    deciles.write_corpus(run, scored, str(tmp_path / "s2" / "pairs"), str(tmp_path / "c" / "corpus"), str(tmp_path / "c"), shown_corpus_dir="c",
                         pp_model={"kind": "k", "path": "p", "sha256": "0" * 64}, rejects={}, examples=1, report=report)
    # 200 rows: the default sample holds them all, so the cuts need one read per file, not two
    assert messages[-1].startswith("8/8 file reads (one per file for the exact cuts, one to write the corpus) (")

    corpus = dataset_files(str(tmp_path / "c" / "corpus"))
    counts = select_training_set(run, corpus, Rules("pp", "", max_tokens=0, release_filter=True), Sample(n_pairs=0), str(tmp_path / "t"),
                                 str(tmp_path / "w"), report=report)
    assert any(message.startswith(f"{2 * len(corpus)}/{2 * len(corpus)} corpus file reads for the release filters (two per file) (")
               for message in messages)
    reads = 2 * len(dataset_files(str(tmp_path / "w" / "candidates")))
    assert counts["selected"] > 10 and messages[-1].startswith(f"{reads}/{reads} file reads "
                                                               "(one per file for the exact cuts, one to write the selection) (")

    write_corpus_stats(run, corpus, 10, "", str(tmp_path / "s"), report)
    assert messages[-1].startswith(f"{len(corpus)}/{len(corpus)} corpus files sampled (")
    leftovers = [path for path in tmp_path.rglob("*progress*")]
    assert not leftovers, leftovers


def test_a_cut_search_that_retries_reports_every_attempt(tmp_path, last_report):
    run, report, messages = last_report
    files = write_shards(scored_table(3_001), tmp_path / "scored", 2, schemas.SCORED)
    # 50 sampled keys and narrow windows: the first attempt misses cuts (test_deciles_pipeline)
    deciles.find_cuts(run, deciles.RankingInput(tuple(files), deciles.scorer_keys()), deciles.decile_ranks, str(tmp_path), 50, 0.01, report)
    assert (tmp_path / "_cuts-2.json").exists()
    assert messages[-1].startswith("6/6 file reads for the exact cuts (three per file) (")
