import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from test_deciles_pipeline import assign, run_in_process, scored_table, write_shards

import schemas
from corpus import selection
from corpus.ids import id_hash, text_keys
from corpus.selection import Rules, Sample
from pipelines import select as select_stage
from pipelines.batches import shard_number
from pipelines.io import dataset_files
from pipelines.select import select_top_half, select_training_set


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    table = scored_table(2_000, seed=5)
    lengths = {name: pa.array(rng.integers(1, 45, 2_000).astype(np.int32)) for name in ("reference_n_tokens", "translation_n_tokens")}
    # every fifth pair repeats the token strings of the pair before it
    toks = [f"r{i - i % 5 // 4}" for i in range(2_000)]
    for name, values in {**lengths, "reference_tok": pa.array(toks), "translation_tok": pa.array(toks)}.items():
        table = table.set_column(table.schema.get_field_index(name), name, values)
    return table


def corpus_files(tmp_path, table, shards, name):
    root = assign(tmp_path, table, shards, name=name)[0]
    return root, dataset_files(str(root / "corpus"))


def select(tmp_path, files, name, rules=None, **sample):
    out = tmp_path / name
    counts = select_training_set(run_in_process, files, rules or Rules(), Sample(**sample), out_dir=str(out / "train"), work_dir=str(out))
    return counts, pd.read_parquet(out / "train").sort_values("id").reset_index(drop=True)


def test_selection_honours_deciles_length_and_sample_size(tmp_path, table):
    root, files = corpus_files(tmp_path, table, 3, "c3")
    corpus = pd.read_parquet(root / "corpus")
    corpus["decile_pp"] = corpus["decile_pp"].astype(int)
    eligible = corpus[corpus.decile_pp.isin([8, 9]) & (corpus.reference_n_tokens <= 30) & (corpus.translation_n_tokens <= 30)]
    counts, everything = select(tmp_path, files, "all", n_pairs=0, sample_seed=1)
    assert counts == {"passed_rules": len(eligible), "selected": len(eligible)}
    assert sorted(everything.id) == sorted(eligible.id)
    assert list(everything.columns) == schemas.TRAINING.names

    counts, sample = select(tmp_path, files, "s1", n_pairs=100, sample_seed=1)
    smallest = sorted(eligible.id, key=lambda i: id_hash(f"1:{i}"))[:100]
    assert counts["selected"] == 100 and sorted(sample.id) == sorted(smallest)
    _, other_seed = select(tmp_path, files, "s2", n_pairs=100, sample_seed=2)
    assert set(other_seed.id) != set(sample.id)
    _, files7 = corpus_files(tmp_path, table, 7, "c7")
    _, resharded = select(tmp_path, files7, "s1b", n_pairs=100, sample_seed=1)
    pd.testing.assert_frame_equal(resharded, sample)


def test_release_filters_remove_duplicates(tmp_path, table):
    root, files = corpus_files(tmp_path, table, 2, "c2")
    rules = Rules("trigram", "", max_tokens=30, release_filter=True)
    counts, selected = select(tmp_path, files, "release", rules=rules, n_pairs=0, sample_seed=1)
    assert not selected.duplicated(["reference_tok", "translation_tok"]).any()
    assert ((selected.pp_sim >= 0.4) & (selected.trigram_overlap <= 0.7)).all()
    assert ((selected.reference_p_en >= 0.5) & (selected.translation_p_en >= 0.5)).all()
    mean = (selected.reference_n_tokens + selected.translation_n_tokens) / 2
    assert ((mean >= 5) & (mean <= 40)).all() and counts["selected"] == len(selected)
    # one row per distinct passing pair: the one with the smallest id
    corpus = pd.read_parquet(root / "corpus")
    passing = corpus[rules(pa.Table.from_pandas(corpus))]
    assert len(passing) > len(selected) > 0
    assert set(selected.id) == set(passing.groupby(["reference_tok", "translation_tok"]).id.min())


@pytest.mark.parametrize(("range_rows", "colliding"), [(500_000, False), (37, False), (37, True)])
def test_release_filters_keep_the_smallest_id_of_each_pair_across_files_and_ranges(tmp_path, table, monkeypatch, range_rows, colliding):
    """Few distinct pairs, so repeats inside files, across shards and across decile directories;
    one range or many; every key's first half made one (``colliding``): the candidates are the
    passing rows but the repeats of a smaller id."""
    rng = np.random.default_rng(8)
    for name, values in {"reference_tok": [f"r {k}" for k in rng.integers(0, 40, table.num_rows)],
                         "translation_tok": [f"t {k}" for k in rng.integers(0, 3, table.num_rows)]}.items():
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(values))
    monkeypatch.setattr(select_stage, "RANGE_ROWS", range_rows)
    if colliding:
        def first_halves_one(texts):
            keys = text_keys(texts)
            keys[:, 0] = 7
            return keys

        monkeypatch.setattr(selection, "text_keys", first_halves_one)
    root, files = corpus_files(tmp_path, table, 3, "dups")
    rules = Rules("trigram", "", max_tokens=0, release_filter=True)
    counts, selected = select(tmp_path, files, "release", rules=rules, n_pairs=0, sample_seed=1)
    corpus = pd.read_parquet(root / "corpus").sort_values("id")
    passing = corpus[rules(pa.Table.from_pandas(corpus))]
    expected = passing[~passing.duplicated(["reference_tok", "translation_tok"])]
    assert len(passing) > len(expected) > 0 and counts["passed_rules"] == len(expected)
    assert sorted(selected.id) == sorted(expected.id)
    assert [shard_number(path) for path in dataset_files(str(tmp_path / "release" / "candidates"))] == [0, 1, 2]


def test_diversity_rules_select_what_they_say(tmp_path, table):
    root, files = corpus_files(tmp_path, table, 2, "c2d")
    rules = Rules("pp", "8,9", max_tokens=0, max_unigram_f1=0.6, max_kendall_tau=0.5)
    counts, selected = select(tmp_path, files, "diverse", rules=rules, n_pairs=0, sample_seed=1)
    corpus = pd.read_parquet(root / "corpus")
    expected = corpus[(corpus.decile_pp.astype(int) >= 8) & (corpus.unigram_f1 <= 0.6) & (corpus.kendall_tau <= 0.5)]
    assert 0 < counts["selected"] == len(expected) < len(corpus) and sorted(selected.id) == sorted(expected.id)


def test_top_half_by_translation_score(tmp_path, table):
    pairs = schemas.upgraded(table).select(schemas.PAIRS.names)
    files = write_shards(pairs, tmp_path / "pairs", 3, schemas.PAIRS)
    counts = select_top_half(run_in_process, files, str(tmp_path / "top"), str(tmp_path))
    top = pd.read_parquet(tmp_path / "top")
    assert counts["pairs"] == 2_000 and counts["selected"] == len(top) == 1_000
    rest = pairs.to_pandas()[~pairs.to_pandas().id.isin(top.id)]
    assert top.trans_score.min() >= rest.trans_score.max()

