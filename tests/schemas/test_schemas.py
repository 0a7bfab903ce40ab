import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import schemas


def bitext_row(**overrides):
    row = dict(id="news-1", source="f", line=1, domain="news", czeng_score=0.5, pivot="cs", foreign="A", en="B",
               en_tok="b", en_n_tokens=1)
    row.update(overrides)
    return row


def test_conform_reorders_casts_and_tags_version():
    row = bitext_row()
    table = pa.Table.from_pylist([dict(reversed(list(row.items())))])
    conformed = schemas.conform(table, schemas.BITEXT)
    assert conformed.schema.equals(schemas.BITEXT, check_metadata=True)
    assert conformed.schema.field("en_n_tokens").type == pa.int32()
    assert schemas.version_of(conformed.schema) == "bitext/3"


def test_conform_names_missing_and_unexpected_columns():
    row = bitext_row(extra="x")
    del row["en"]
    with pytest.raises(schemas.SchemaError, match=r"missing columns \['en'\].*unexpected columns \['extra'\]"):
        schemas.conform(pa.Table.from_pylist([row]), schemas.BITEXT)


def test_conform_rejects_nulls_in_required_columns_and_bad_types():
    with pytest.raises(schemas.SchemaError, match="'foreign' has 1 nulls"):
        schemas.conform(pa.Table.from_pylist([bitext_row(foreign=None)]), schemas.BITEXT)
    with pytest.raises(schemas.SchemaError, match="'line'"):
        schemas.conform(pa.Table.from_pylist([bitext_row(line="first")]), schemas.BITEXT)


def test_nullable_score_and_write_table_round_trip(tmp_path):
    path = tmp_path / "part.parquet"
    assert schemas.write_table(pa.Table.from_pylist([bitext_row(czeng_score=None)]), schemas.BITEXT, str(path)) == 1
    read = pq.read_table(path)
    assert read.schema.metadata[schemas.VERSION_KEY] == b"bitext/3"
    assert read.column("czeng_score").to_pylist() == [None]


def test_every_dataset_schema_is_versioned_and_corpus_extends_pairs():
    for name, schema in schemas.ALL.items():
        dataset, version = schemas.version_of(schema).split("/")
        assert dataset == name and int(version) >= 1
    # the corpus is its pairs joined to their scores, plus the deciles
    deciles = {name for name in schemas.CORPUS.names if name.startswith("decile_")}
    assert set(schemas.PAIRS.names) | set(schemas.SCORED.names) == set(schemas.CORPUS.names) - deciles
    assert set(schemas.PAIRS.names) & set(schemas.SCORED.names) == {"id", "trans_score"}
