"""The two functions behind AssignDeciles and CorpusStats, on small real datasets: what each
writes beside the corpus matches the parts it is made of."""

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from test_deciles_pipeline import run_in_process, scored_table, write_scored

from corpus.outputs import build_of, partial_dir
from corpus.stats import Idf, domain_table2, summary_markdown, table2_markdown
from pipelines import deciles as stage
from pipelines.batches import shard_number
from pipelines.io import dataset_files, part_path
from pipelines.stats import ALL_DOMAINS, write_corpus_stats

MODEL = {"kind": "vectors file", "path": "v.txt", "sha256": "cd" * 32}
REJECTS = {"ingest": {"total": 2, "by_reason": {"too_long": 2}}}


def write_corpus(root, table, shards, examples=2):
    files = write_scored(table, root, shards)
    return stage.write_corpus(run_in_process, files, str(root / "pairs"), str(root / "corpus"), str(root), shown_corpus_dir="final/corpus",
                              pp_model=MODEL, rejects=REJECTS, examples=examples)


def test_write_corpus_writes_the_corpus_and_its_summary(tmp_path):
    table = scored_table(500, seed=3)
    summary = write_corpus(tmp_path, table, shards=3)
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(summary))
    assert (tmp_path / "summary.md").read_text() == summary_markdown(summary)
    assert summary["rows"] == 500 and summary["corpus_dir"] == "final/corpus"
    assert summary["pp_model"] == MODEL and summary["rejects"] == REJECTS
    corpus = pd.read_parquet(tmp_path / "corpus")
    for name in stage.SCORERS:
        assert len(summary["cuts"][name]) == 9
        sizes = corpus[f"decile_{name}"].dropna().astype(int).value_counts().sort_index()  # τ's unranked pairs: in no decile
        assert {decile: entry["rows"] for decile, entry in summary["deciles"][name].items()} == {str(d): int(n) for d, n in sizes.items()}
        assert all(len(entry["examples"]) == 2 for entry in summary["deciles"][name].values())
    assert summary["unranked_rows"] == {"tau": int(corpus.kendall_tau.isna().sum())} and summary["unranked_rows"]["tau"] > 0


def test_a_score_that_ranks_no_pair_has_no_cuts_and_no_deciles(tmp_path):
    """Kendall τ of pairs that never share two words (a tiny model's translations): every pair
    unranked, no cut searched, the other scores ranked as ever."""
    table = scored_table(200, seed=5)
    for column in ("kendall_tau", "kendall_z_then_f1"):
        table = table.set_column(table.schema.get_field_index(column), column, pa.nulls(200, pa.float64()))
    summary = write_corpus(tmp_path, table, shards=2)
    corpus = pd.read_parquet(tmp_path / "corpus")
    assert corpus.decile_tau.isna().all() and "tau" not in summary["cuts"] and summary["unranked_rows"] == {"tau": 200}
    assert corpus.decile_pp.astype(int).value_counts().to_dict() == dict.fromkeys(range(10), 20)


def test_write_corpus_stats_is_table_2_of_its_sample(tmp_path):
    table = scored_table(300, seed=4)
    words = pa.array([" ".join(["r", "t", "zebra", "unseen"][: 1 + i % 4]) for i in range(300)])
    table = table.set_column(table.schema.get_field_index("reference_tok"), "reference_tok", words)
    write_corpus(tmp_path / "c", table, shards=2)
    counts = tmp_path / "counts.txt"
    counts.write_text("r 5\nt 20\nzebra 1\n")
    stats, pivots = write_corpus_stats(run_in_process, dataset_files(str(tmp_path / "c" / "corpus")), 100, str(counts), str(tmp_path))
    sample = pq.read_table(tmp_path / "sample.parquet")
    assert stats == domain_table2(sample, Idf({"r": 5, "t": 20, "zebra": 1}))
    domains = table.column("domain").to_pandas().value_counts()
    assert {name: entry["sentences"] for name, entry in stats.items()} == {**{d: min(100, int(n)) for d, n in domains.items()}, ALL_DOMAINS: 100}
    assert json.loads((tmp_path / "stats.json").read_text()) == json.loads(json.dumps(stats))
    assert pivots == {"cs": 300}
    assert (tmp_path / "stats.md").read_text() == table2_markdown(stats) + "\nPairs per pivot language: cs 300\n"
    assert "idf" not in write_corpus_stats(run_in_process, dataset_files(str(tmp_path / "c" / "corpus")), 100, "",
                                           str(tmp_path / "no-idf"))[0][ALL_DOMAINS]


def test_table_2_by_system_or_pivot_has_a_column_for_each_of_their_values(tmp_path):
    """A corpus of translations made elsewhere: one column per system (or pivot language), its
    statistics those of a sample of that system's pairs only."""
    table = scored_table(300, seed=5)
    systems = pa.array([f"system-{i % 3}" for i in range(300)])
    table = table.set_column(table.schema.get_field_index("system"), "system", systems)
    table = table.set_column(table.schema.get_field_index("pivot"), "pivot", pa.array(["de" if i % 2 else "cs" for i in range(300)]))
    write_corpus(tmp_path / "c", table, shards=2)
    files = dataset_files(str(tmp_path / "c" / "corpus"))
    by_system, pivots = write_corpus_stats(run_in_process, files, 60, "", str(tmp_path / "s"), group="system")
    assert {name: entry["sentences"] for name, entry in by_system.items()} == {"system-0": 60, "system-1": 60, "system-2": 60, ALL_DOMAINS: 60}
    sample = pq.read_table(tmp_path / "s" / "sample.parquet").to_pandas()
    chosen = sample[sample["sample"] == "system-1"]
    assert (chosen.system == "system-1").all() and set(chosen.id) <= set(table.filter(pc.equal(systems, "system-1")).column("id").to_pylist())
    assert by_system["system-1"] == domain_table2(pq.read_table(tmp_path / "s" / "sample.parquet"), None)["system-1"]
    by_pivot, _ = write_corpus_stats(run_in_process, files, 1000, "", str(tmp_path / "p"), group="pivot")
    assert ({name: entry["sentences"] for name, entry in by_pivot.items()} == {"cs": 150, "de": 150, ALL_DOMAINS: 300}
            and pivots == {"cs": 150, "de": 150})


def test_a_part_written_while_an_output_is_built_carries_its_fingerprint_and_keeps_its_shard_number():
    building = str(partial_dir(Path("/w/ingest/3f9a0c1d2e4b")) / "bitext")
    assert building == "/w/ingest/.3f9a0c1d2e4b.partial/bitext" and build_of(building) == "3f9a0c1d2e4b"
    assert part_path(building, 7) == "/w/ingest/.3f9a0c1d2e4b.partial/bitext/part-00007-3f9a0c1d2e4b.parquet"
    assert part_path("/tmp/elsewhere/pairs", 7) == "/tmp/elsewhere/pairs/part-00007.parquet"  # not inside an output being built
    assert build_of("/w/corpus/.ab12.partial/corpus/decile_pp=3") == "ab12"
    for name in ("part-00007-3f9a0c1d2e4b.parquet", "part-00007.parquet"):  # and the names of earlier builds
        assert shard_number(f"/w/ingest/3f9a0c1d2e4b/bitext/{name}") == 7
