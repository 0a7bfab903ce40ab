"""What the encoder trainer reads: a TSV or a Parquet dataset; bad data is one line or left out and said."""

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.errors import InputError
from models.encoders import EncoderConfig
from models.trainer import TrainConfig, read_pairs, train_encoder

PAIRS = [("a dog runs .", "a dog is running ."), ("a cat sleeps .", "a cat is asleep ."),
         ("two men talk .", "two people are talking ."), ("the sun is up .", "it is morning .")]


def test_a_parquet_dataset_without_the_pair_columns_is_one_line_naming_them(tmp_path):
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"]}), tmp_path / "data" / "part-0.parquet")
    with pytest.raises(InputError) as error:
        read_pairs(tmp_path / "data")
    message = str(error.value)
    assert "\n" not in message and "no column reference, translation" in message and "sentence1" in message and "--columns" in message
    assert read_pairs(tmp_path / "data", ("sentence1", "sentence2")) == (["a"], ["b"])


def test_a_tsv_line_that_is_not_utf8_is_one_line_naming_it(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"a dog runs .\ta dog is running .\n" + "kůň\tkoně\n".encode("cp1250"))
    with pytest.raises(InputError, match=r"pairs.tsv:2: not UTF-8"):
        read_pairs(path)


def test_pairs_with_an_empty_side_are_left_out_counted_and_said(tmp_path, caplog):
    rows = [*PAIRS, ("a bird sings .", ""), ("   ", "a horse runs .")]
    first, second = ([pair[i] for pair in rows] for i in (0, 1))
    with caplog.at_level(logging.WARNING, logger="paranmt.trainer"):
        train_encoder((first, second), tmp_path / "model", EncoderConfig(model="word_avg", tokens="words", dim=8, embed_dim=8),
                      TrainConfig(epochs=1, batch_size=2, megabatch=1))
    summary = json.loads((tmp_path / "model" / "training.json").read_text())
    assert summary["pairs"] == len(PAIRS) and summary["pairs_with_an_empty_side_left_out"] == 2
    assert "2 of 6 pairs have an empty side and are left out of training" in caplog.text
