"""The partitioned corpus that AssignDeciles writes, read by other tools as the README shows:
Hugging Face ``datasets``, polars and DuckDB, each with a decile filter, against pandas."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only: datasets must not reach for the Hub

import duckdb
import pandas as pd
import polars as pl
import pytest
from datasets import load_dataset
from test_deciles_pipeline import assign, scored_table


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 scored pairs in 3 shards through the real cut search and partitioned write."""
    root, _, _, _ = assign(tmp_path_factory.mktemp("interop"), scored_table(600), shards=3)
    return root / "corpus"


def ids(frame) -> list[str]:
    return sorted(frame["id"])


def test_datasets_loads_the_corpus_whole_and_one_split_per_decile(corpus, tmp_path):
    frame = pd.read_parquet(corpus)
    whole = load_dataset("parquet", data_files=str(corpus / "*" / "*.parquet"), split="train", cache_dir=str(tmp_path))
    # decile_pp lives in the directory names, which datasets does not read: the files' columns.
    assert whole.num_rows == len(frame) == 600 and set(whole.column_names) == set(frame.columns) - {"decile_pp"}
    splits = {f"decile_{d}": str(corpus / f"decile_pp={d}" / "*.parquet") for d in range(10)}
    by_decile = load_dataset("parquet", data_files=splits, cache_dir=str(tmp_path))
    for d in range(10):
        assert ids(by_decile[f"decile_{d}"]) == ids(frame[frame["decile_pp"] == d]), d
    top_trigram = load_dataset("parquet", data_files=str(corpus / "*" / "*.parquet"), split="train",
                               filters=[("decile_trigram", ">=", 8)], cache_dir=str(tmp_path / "filtered"))
    assert ids(top_trigram) == ids(pd.read_parquet(corpus, filters=[("decile_trigram", ">=", 8)]))


def test_polars_and_duckdb_filter_on_the_partition_decile_like_pandas(corpus):
    expected = ids(pd.read_parquet(corpus, filters=[("decile_pp", ">=", 8)]))
    assert 0 < len(expected) < 600
    lazy = pl.scan_parquet(corpus)  # a directory of decile_pp=<d>/ folders: hive partitions
    assert ids(lazy.filter(pl.col("decile_pp") >= 8).select("id").collect()) == expected
    rows = duckdb.execute(
        "SELECT id FROM read_parquet(?, hive_partitioning = true) WHERE decile_pp >= ?", [str(corpus / "*" / "*.parquet"), 8]
    ).fetchall()
    assert sorted(row[0] for row in rows) == expected
