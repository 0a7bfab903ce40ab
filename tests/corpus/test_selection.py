import numpy as np
import pyarrow as pa
import pytest

from corpus import selection
from corpus.errors import InputError
from corpus.ids import text_keys
from corpus.selection import (
    KEY_SCHEMA,
    Rules,
    Sample,
    by_range,
    duplicate_keys,
    parse_deciles,
    repeated,
)
from corpus.settings import settings_of


def rows(**columns):
    n = len(next(iter(columns.values())))
    base = {
        "decile_pp": [9] * n, "decile_trigram": [0] * n, "decile_trans": [5] * n,
        "reference_n_tokens": [10] * n, "translation_n_tokens": [10] * n,
        "pp_sim": [0.8] * n, "trigram_overlap": [0.1] * n,
        "reference_p_en": [0.9] * n, "translation_p_en": [0.9] * n,
        "unigram_f1": [0.5] * n, "kendall_tau": [0.5] * n, "decile_unigram": [3] * n, "decile_tau": [4] * n,
    }
    base.update(columns)
    return pa.table(base)


def test_decile_rule_uses_the_chosen_scorer():
    table = rows(decile_pp=[9, 8, 7, 9], decile_trigram=[0, 9, 9, 1])
    assert Rules("pp", "8,9")(table).tolist() == [True, True, False, True]
    assert Rules("trigram", "9")(table).tolist() == [False, True, True, False]
    assert Rules("pp", "")(table).all()


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
    assert Rules(max_tokens=0, release_filter=True)(table).tolist() == [True, False, True, False, False, True, True, False]
    assert Rules(max_tokens=0)(table).all()


def test_pp_selection_opens_only_its_partition_directories():
    files = [f"/c/corpus/decile_pp={d}/part-00000.parquet" for d in range(10)]
    assert Rules("pp", "8,9").files(files) == files[8:]
    assert Rules("trans", "9").files(files) == files


def plain_repeats(table: pa.Table) -> set[str]:
    """The reference: every row of an identical (reference_tok, translation_tok) but the smallest id."""
    frame = table.to_pandas().sort_values("id")
    return set(frame[frame.duplicated(["reference_tok", "translation_tok"])].id)


def repeats_by_range(tables: list[pa.Table], ranges: int) -> set[str]:
    """What the pipeline finds: each table's keys cut into ranges, each range searched alone."""
    parts = [part for table in tables for part in by_range(duplicate_keys(table, ranges))]
    found = set()
    for number in range(ranges):
        keys = pa.concat_tables([part for part in parts if part.column("range")[0].as_py() == number] or [KEY_SCHEMA.empty_table()])
        found |= set(keys.filter(pa.array(repeated(keys))).column("id").to_pylist())
    return found


def text_pairs(n: int, seed: int) -> pa.Table:
    """Pairs with many repeats: few distinct texts, sides shared between different pairs, ids in random order."""
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": [f"p{i}" for i in rng.permutation(n)],  # unpadded: "p10" < "p9"
        "reference_tok": [f"r {k}" for k in rng.integers(0, 30, n)],
        "translation_tok": [f"t {k}" for k in rng.integers(0, 4, n)],
    })


def test_repeats_are_every_identical_pair_but_the_smallest_id():
    table = pa.table({
        "id": ["d", "a", "c", "b", "e"],
        "reference_tok": ["x", "x", "x", "y", "x"],
        "translation_tok": ["p", "p", "q", "p", "p"],
    })
    assert repeats_by_range([table], 3) == plain_repeats(table) == {"d", "e"}
    assert repeated(duplicate_keys(table.slice(0, 0), 3)).shape == (0,)


@pytest.mark.parametrize("ranges", [1, 7, 1_000])
def test_repeats_across_tables_and_ranges_are_those_of_all_rows(ranges):
    table = text_pairs(600, seed=ranges)
    pieces = [table.slice(0, 100), table.slice(100, 1), table.slice(101, 399), table.slice(500)]
    assert repeats_by_range(pieces, ranges) == plain_repeats(table)
    assert len(plain_repeats(table)) > 400


def test_keys_tell_apart_pairs_that_join_into_one_string():
    table = pa.table({
        "id": ["a", "b", "c", "d", "e", "f"],
        "reference_tok": ["x\ty", "x", "xy", "x", "", "x y"],
        "translation_tok": ["z", "y\tz", "z", "yz", "x y", ""],
    })
    assert repeats_by_range([table], 1) == set()
    keys = duplicate_keys(table, 5)
    assert keys.schema == KEY_SCHEMA and set(keys.column("range").to_pylist()) <= set(range(5))
    assert [part.column("range")[0].as_py() for part in by_range(keys)] == sorted(set(keys.column("range").to_pylist()))


def test_a_collision_of_the_keys_first_halves_is_no_repeat(monkeypatch):
    """Every key's first half (and range) made one: the second half still tells the pairs apart."""
    def colliding(texts):
        keys = text_keys(texts)
        keys[:, 0] = 12345
        return keys

    monkeypatch.setattr(selection, "text_keys", colliding)
    table = text_pairs(300, seed=4)
    assert set(duplicate_keys(table, 9).column("hi").to_pylist()) == {12345}
    assert repeats_by_range([table.slice(0, 120), table.slice(120)], 9) == plain_repeats(table)


def test_english_rule_needs_both_sides_english():
    table = rows(reference_p_en=[0.9, 0.2, 0.9, 0.5, 0.49], translation_p_en=[0.9, 0.9, 0.1, 0.5, 0.9])
    assert Rules(english_only=True)(table).tolist() == [True, False, False, True, False]
    assert Rules(english_only=True, min_p_en=0.1)(table).tolist() == [True, True, True, True, True]
    # the release filters include it (the other release rules pass on these rows)
    assert Rules(release_filter=True)(table).tolist() == [True, False, False, True, False]
    assert Rules()(table).all() and "reference_p_en" not in Rules().columns


def test_diversity_rules_and_deciles():
    # "PP decile ≥ 8 and unigram F1 ≤ 0.6"
    table = rows(decile_pp=[9, 8, 7, 9, 9], unigram_f1=[0.6, 0.2, 0.1, 0.61, 0.0], kendall_tau=[1.0, -0.5, 0.0, 0.0, 0.3])
    assert Rules("pp", "8,9", max_unigram_f1=0.6)(table).tolist() == [True, True, False, False, True]
    assert Rules("pp", "", max_kendall_tau=0.3)(table).tolist() == [False, True, True, True, True]
    assert Rules("pp", "8,9", max_unigram_f1=0.6, max_kendall_tau=0.0)(table).tolist() == [False, True, False, False, False]
    assert Rules("unigram", "3")(table).all() and not Rules("tau", "3")(table).any()
    assert {"unigram_f1", "kendall_tau"} <= set(Rules(max_unigram_f1=0.5, max_kendall_tau=0.5).columns)


def test_a_meaning_floor_on_pp_similarity():
    table = rows(decile_pp=[9, 8, 9, 9], pp_sim=[0.9, 0.39, 0.4, -0.2])
    assert Rules("pp", "8,9")(table).all() and "pp_sim" not in Rules().columns
    assert Rules("pp", "8,9", min_pp_sim=0.4)(table).tolist() == [True, False, True, False]
    assert "pp_sim" in Rules(min_pp_sim=0.4).columns and "pp_sim ≥ 0.4" in str(Rules(min_pp_sim=0.4))
    with pytest.raises(InputError, match="--min-pp-sim"):
        Rules(min_pp_sim=1.5)


def test_parse_deciles_and_bad_settings():
    assert parse_deciles("9, 8,8") == (8, 9) and parse_deciles("") == ()
    for bad in ("10", "8;9"):
        with pytest.raises(InputError, match="--decile"):
            parse_deciles(bad)
    with pytest.raises(InputError, match="--scorer"):
        Rules("bleu")
    with pytest.raises(InputError, match="--decile"):
        Rules(decile="x")
    with pytest.raises(InputError, match="--min-p-en"):
        Rules(min_p_en=1.5)
    assert np.isin(Rules().columns, ["decile_pp"]).any()


def test_selection_settings_are_declared_once_with_help():
    names = [f.name for f in settings_of(Rules) + settings_of(Sample)]
    assert names[:4] == ["scorer", "decile", "max_tokens", "release_filter"] and names[-2:] == ["n_pairs", "sample_seed"]
    assert all(f.metadata["help"] for f in settings_of(Rules) + settings_of(Sample))
