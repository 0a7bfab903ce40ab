import json

import apache_beam as beam
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import schemas
from corpus.diversity import kendall_z
from corpus.ids import id_hash, id_hashes
from corpus.scoring import ties_ordered_by_f1
from pipelines import deciles as stage
from pipelines.io import dataset_files, write_part
from pipelines.options import pipeline_options


def run_in_process(build):
    with beam.Pipeline(options=pipeline_options("DirectRunner", 1)) as pipeline:
        build(pipeline)


def scored_table(n, seed=0):
    """Scored rows with heavy ties: 60% of trigram overlaps are 0, pp_sim has 20 values, 30% of
    Kendall taus are null (fewer than two shared words: not ranked) and 10 % are 1.0."""
    rng = np.random.default_rng(seed)
    ids = [f"doc-{i:06d}" for i in range(n)]
    overlap, f1 = np.where(rng.random(n) < 0.6, 0.0, rng.random(n)), rng.integers(0, 11, n) / 10.0
    tau, unranked = np.where(rng.random(n) < 0.1, 1.0, rng.uniform(-1, 1, n)), rng.random(n) < 0.3
    return pa.table({
        "id": ids, "source": ["f"] * n, "domain": rng.choice(["news", "subtitlesM"], n).tolist(),
        "czeng_score": rng.random(n), "pivot": ["cs"] * n, "foreign": ["x"] * n,
        "reference": [f"reference {i}" for i in range(n)], "translation": [f"translation {i}" for i in range(n)], "system": ["test"] * n,
        "trans_score": -rng.random(n), "trans_n_tokens": np.full(n, 5, np.int32), "truncated": np.zeros(n, bool),
        "reference_tok": ["r"] * n, "translation_tok": ["t"] * n,
        "reference_n_tokens": np.full(n, 2, np.int32), "translation_n_tokens": np.full(n, 2, np.int32),
        "id_hash": id_hashes(ids), "trigram_overlap": overlap,
        "pp_sim": rng.integers(0, 20, n) / 20.0,
        "reference_p_en": rng.random(n), "translation_p_en": rng.random(n),
        "unigram_f1": f1,
        "kendall_tau": pa.array(tau, mask=unranked),
        "trigram_then_f1": ties_ordered_by_f1(overlap, f1),
        "kendall_z_then_f1": pa.array(kendall_z(tau, rng.integers(2, 6, n)), mask=unranked),
    })


def write_shards(table, directory, shards, schema):
    """``schema``'s columns of the rows, to shard blake2b(id) mod shards, as the upstream stages write them
    (each row the one pair of its bitext row where the table does not say: ``schemas.upgraded``)."""
    shard_of = np.array([id_hash(i) % shards for i in table.column("id").to_pylist()])
    for shard in range(shards):
        write_part(schemas.upgraded(table.filter(pa.array(shard_of == shard))).select(schema.names), schema, str(directory), shard)
    return dataset_files(str(directory))


def write_scored(table, root, shards):
    """A ``scored_table`` as the two datasets AssignDeciles reads, ``root/pairs`` and
    ``root/scored``; returns the scored files."""
    write_shards(table, root / "pairs", shards, schemas.PAIRS)
    return write_shards(table, root / "scored", shards, schemas.SCORED)


def assign(tmp_path, table, shards, sample_size=stage.DEFAULT_SAMPLE, name="run", width=stage.deciles.DEFAULT_WIDTH):
    root = tmp_path / name
    files = write_scored(table, root, shards)
    source = stage.RankingInput(tuple(files), stage.scorer_keys())
    write = stage.add_corpus_write(str(root / "corpus"), str(root / "pairs"), 2, str(root / "summary.json"))
    counts, cuts = stage.find_cuts(run_in_process, source, stage.decile_ranks, str(root), sample_size, width, then=write)
    corpus = pd.read_parquet(root / "corpus").sort_values("id").reset_index(drop=True)
    return root, counts, cuts, corpus


@pytest.fixture(scope="module")
def table():
    return scored_table(3_001)


def test_deciles_are_equal_sized_ordered_and_shard_independent(tmp_path, table):
    root, counts, cuts, one = assign(tmp_path, table, shards=1, name="one")
    _, _, cuts7, seven = assign(tmp_path, table, shards=7, sample_size=500, name="seven")
    unranked = one["kendall_tau"].isna()
    assert counts == {**dict.fromkeys(stage.SCORERS, 3_001), "tau": 3_001 - unranked.sum()} and cuts == cuts7
    assert one["decile_tau"][unranked].isna().all() and one["decile_tau"][~unranked].notna().all()
    for name, column in stage.SCORERS.items():
        ranked = one[column].notna()
        bins = one[f"decile_{name}"][ranked].astype(int)
        sizes = np.bincount(bins, minlength=10)
        assert sizes.max() - sizes.min() <= 1, (name, sizes)
        by_bin = one[ranked].groupby(bins)[column]
        assert (by_bin.max().to_numpy()[:-1] <= by_bin.min().to_numpy()[1:]).all()
        np.testing.assert_array_equal(bins, seven[f"decile_{name}"][ranked].astype(int))
    assert (one["trigram_overlap"][one["decile_trigram"] < 5] == 0).all()  # the overlap's order kept, its ties ordered by F1
    no_trigram = one[one["trigram_overlap"] == 0]
    assert (no_trigram.groupby("decile_trigram").unigram_f1.max().to_numpy()[:-1]
            <= no_trigram.groupby("decile_trigram").unigram_f1.min().to_numpy()[1:]).all()
    assert (one["decile_tau"][one["kendall_z_then_f1"] == one["kendall_z_then_f1"].max()] == 9).all()
    summary = json.loads((root / "summary.json").read_text())
    assert sum(entry["rows"] for entry in summary["pp"].values()) == 3_001
    assert sum(entry["rows"] for entry in summary["tau"].values()) == 3_001 - unranked.sum()
    assert all(len(entry["examples"]) == 2 for entry in summary["trigram"].values())


def test_rerun_gives_the_same_bytes(tmp_path, table):
    first = assign(tmp_path, table, shards=3, name="a")[0]
    second = assign(tmp_path, table, shards=3, name="b")[0]
    files = sorted(p.relative_to(first) for p in (first / "corpus").rglob("*.parquet"))
    assert files and files == sorted(p.relative_to(second) for p in (second / "corpus").rglob("*.parquet"))
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)


def test_partition_filter_reads_only_that_decile(tmp_path, table):
    root, *_ = assign(tmp_path, table, shards=3)
    dataset = ds.dataset(root / "corpus", partitioning="hive")
    fragments = [f.path for f in dataset.get_fragments(filter=ds.field("decile_pp") == 9)]
    assert fragments and all("/decile_pp=9/" in path for path in fragments)
    nine = pd.read_parquet(root / "corpus", filters=[("decile_pp", "==", 9)])
    assert len(nine) in (300, 301) and set(nine["decile_pp"].astype(int)) == {9}
    # the partition key is only in the directory names, not inside the files
    assert "decile_pp" not in pa.parquet.read_schema(fragments[0]).names


def test_a_tiny_sample_forces_the_window_retry(tmp_path, table):
    # 50 sampled keys and windows of about one sample position: most cuts fall outside
    root, _, cuts, _ = assign(tmp_path, table, shards=2, sample_size=50, width=0.01, name="tiny")
    first = json.loads((root / "_cuts-1.json").read_text())
    assert any(None in entry["cuts"].values() for entry in first.values()) and (root / "_cuts-2.json").exists()
    hashes = np.array([id_hash(i) for i in table.column("id").to_pylist()], dtype=np.uint64)
    for name, column in stage.SCORERS.items():
        ranked = stage.ranked_rows(table, column)
        scores, ordered = stage.deciles.sort_keys(table.column(column).to_numpy(zero_copy_only=False)[ranked], hashes[ranked])
        expected = [stage.Key(float(scores[r]), int(ordered[r])) for r in stage.decile_ranks(int(ranked.sum()))]
        assert cuts[name] == expected, name


def test_ties_are_broken_by_the_stored_id_hash(tmp_path):
    # every pp_sim ties: the order inside the tie, and so the deciles, is the stored hash's
    table = scored_table(200)
    for name, values in (("pp_sim", np.zeros(200)), ("id_hash", np.arange(200, 0, -1, dtype=np.uint64))):
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(values))
    _, _, cuts, corpus = assign(tmp_path, table, shards=2)
    assert [cut.hash for cut in cuts["pp"]] == [r + 1 for r in stage.decile_ranks(200)]  # rank r: the (r+1)-th smallest
    np.testing.assert_array_equal(corpus["decile_pp"].astype(int), (199 - np.arange(200)) // 20)  # row i has hash 200 - i


def test_scores_that_do_not_line_up_with_their_pairs_are_refused(tmp_path, table):
    files = write_scored(table, tmp_path, 2)
    shuffled = table.take(np.random.default_rng(1).permutation(table.num_rows))
    write_shards(shuffled, tmp_path / "pairs", 2, schemas.PAIRS)  # the same pairs in another order
    def write_corpus(name):
        stage.write_corpus(run_in_process, files, str(tmp_path / "pairs"), str(tmp_path / name), str(tmp_path), shown_corpus_dir=name,
                           pp_model={"kind": "k", "path": "p", "sha256": "0" * 64}, rejects={}, examples=1)

    with pytest.raises(Exception, match="does not score the rows of .*part-00000.parquet in their order: score the pairs again"):
        write_corpus("reordered")
    write_shards(table, tmp_path / "pairs", 2, schemas.PAIRS)
    (tmp_path / "pairs" / "part-00001.parquet").unlink()
    with pytest.raises(Exception, match="part-00001.parquet has no pairs shard 1: score the pairs again"):
        write_corpus("missing")
