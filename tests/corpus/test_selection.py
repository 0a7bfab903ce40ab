import numpy as np
import pyarrow as pa
import pytest

from corpus.selection import Rules, drop_duplicates, parse_deciles


def rows(**columns):
    n = len(next(iter(columns.values())))
    base = {
        "decile_pp": [9] * n, "decile_trigram": [0] * n, "decile_trans": [5] * n,
        "reference_n_tokens": [10] * n, "translation_n_tokens": [10] * n,
        "pp_sim": [0.8] * n, "trigram_overlap": [0.1] * n,
    }
    base.update(columns)
    return pa.table(base)


def test_decile_rule_uses_the_chosen_scorer():
    table = rows(decile_pp=[9, 8, 7, 9], decile_trigram=[0, 9, 9, 1])
    assert Rules("pp", (8, 9))(table).tolist() == [True, True, False, True]
    assert Rules("trigram", (9,))(table).tolist() == [False, True, True, False]
    assert Rules("pp", ())(table).all()


def test_length_rule_applies_to_both_sides():
    table = rows(reference_n_tokens=[30, 31, 5, 1], translation_n_tokens=[30, 5, 31, 1])
    assert Rules(max_tokens=30)(table).tolist() == [True, False, False, True]
    assert Rules(max_tokens=0)(table).all()


def test_release_filters():
    table = rows(
        pp_sim=[0.4, 0.39, 1.0, 0.8, 0.8, 0.8, 0.8, 0.8],
        trigram_overlap=[0.7, 0.1, 0.1, 0.71, 0.1, 0.1, 0.1, 0.1],
        reference_n_tokens=[10, 10, 10, 10, 4, 5, 40, 41],
        translation_n_tokens=[10, 10, 10, 10, 5, 5, 40, 41],
    )
    # mean lengths: 4.5 is too short, 5 and 40 pass, 41 is too long (and over the 30-token rule)
    assert Rules(max_tokens=0, release=True)(table).tolist() == [True, False, True, False, False, True, True, False]
    assert Rules(max_tokens=0)(table).all()


def test_pp_selection_opens_only_its_partition_directories():
    files = [f"/c/corpus/decile_pp={d}/part-00000.parquet" for d in range(10)]
    assert Rules("pp", (8, 9)).files(files) == files[8:]
    assert Rules("trans", (9,)).files(files) == files


def test_drop_duplicates_keeps_the_smallest_id_per_identical_pair():
    table = pa.table({
        "id": ["d", "a", "c", "b", "e"],
        "reference_tok": ["x", "x", "x", "y", "x"],
        "translation_tok": ["p", "p", "q", "p", "p"],
    })
    assert drop_duplicates(table).column("id").to_pylist() == ["a", "b", "c"]
    assert drop_duplicates(table.slice(0, 0)).num_rows == 0


def test_parse_deciles_and_unknown_scorer():
    assert parse_deciles("9, 8,8") == (8, 9) and parse_deciles("") == ()
    with pytest.raises(ValueError, match="0-9"):
        parse_deciles("10")
    with pytest.raises(ValueError, match="scorer"):
        Rules("bleu")
    assert np.isin(Rules().columns, ["decile_pp"]).any()
