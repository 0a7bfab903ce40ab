"""Readers of the Table 8 transfer sets, on small files the tests write."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from transfer_fixtures import SICK_HEADER, write_transfer_data

from corpus.errors import InputError
from corpus.transfer import (
    TRANSFER_TASKS,
    MissingTransferFiles,
    load_cv_set,
    load_mrpc,
    load_sick,
    load_sst2,
    load_transfer_suite,
    load_trec,
)


def test_windows_1252_and_utf8_lines_decode(tmp_path):
    transfer, _, _ = write_transfer_data(tmp_path)
    # MR as published: 0x85 is Windows-1252 "…" (not a line end), 0xe9 Latin-1 "é"; a UTF-8 line stays UTF-8;
    # 0x81 is undefined in Windows-1252 and decodes as Latin-1.
    (transfer / "rt-polarity.pos").write_bytes(b"a caf\xe9 film\x85 \n" + "crème brûlée\n".encode() + b"odd \x81 byte\n")
    data = load_cv_set(transfer, "MR")
    positives = [s for s, label in zip(data.splits["all"].first, data.splits["all"].labels, strict=True) if label == 1]
    assert positives == ["a café film…", "crème brûlée", "odd \x81 byte"]
    assert data.classes == ("negative", "positive") and not data.rejects


def test_bad_lines_are_counted_rejects(tmp_path):
    transfer, _, sick = write_transfer_data(tmp_path)
    (transfer / "stsa.binary.train").write_bytes(b"1 good\n\n2 bad label\n0 \n0 fine\n")
    (transfer / "TREC.train").write_bytes(b"HUM:ind Who ?\nnolabel here\nXYZ:a What ?\nLOC:city Where ?\n")
    sst, trec = load_sst2(transfer), load_trec(transfer)
    assert sst.splits["train"].first == ["good", "fine"] and list(sst.splits["train"].labels) == [1, 0]
    assert sst.rejects == {"stsa.binary.train: empty line": 1, "stsa.binary.train: label is not 0 or 1": 1,
                           "stsa.binary.train: no sentence after the label": 1}
    assert trec.splits["train"].first == ["Who ?", "Where ?"] and list(trec.splits["train"].labels) == [3, 4]
    assert sum(trec.rejects.values()) == 2
    (sick / "SICK_train.txt").write_bytes(SICK_HEADER + b"1\ta\tb\t4.5\tNEUTRAL\n2\ta\tb\tfour\tNEUTRAL\n"
                                                        b"3\ta\tb\t9\tNEUTRAL\n4\ta\tb\t2\tMAYBE\n5\ta\n")
    relatedness, entailment = load_sick(sick)
    assert list(relatedness.splits["train"].labels) == [4.5] and list(entailment.splits["train"].labels) == [2]
    assert sum(relatedness.rejects.values()) == 4 and relatedness.evaluated_on == "trial"


def test_pairs_read_by_header_with_byte_order_mark_and_gzip(tmp_path):
    _, msrp, _ = write_transfer_data(tmp_path)
    mrpc = load_mrpc(msrp)
    assert mrpc.splits["train"].first[:2] == ["first 0", "first 1"] and mrpc.splits["train"].second[1] == "second 1"
    assert list(mrpc.splits["test"].labels[:4]) == [0, 1, 0, 1]


def test_sick_test_file_wins_over_trial(tmp_path):
    _, _, sick = write_transfer_data(tmp_path)
    (sick / "SICK_test_annotated.txt").write_bytes(SICK_HEADER + b"1\tx\ty\t3.0\tENTAILMENT\n")
    relatedness, entailment = load_sick(sick)
    assert relatedness.evaluated_on == entailment.evaluated_on == "test" and len(entailment.splits["test"]) == 1


def test_missing_files_are_one_line_naming_each(tmp_path):
    transfer, msrp, sick = write_transfer_data(tmp_path)
    (transfer / "mpqa.neg").unlink()
    (msrp / "msr_paraphrase_test.txt").unlink()
    with pytest.raises(MissingTransferFiles) as raised:
        load_transfer_suite(transfer, msrp, sick)
    message = str(raised.value)
    assert "\n" not in message and "mpqa.neg" in message and "msr_paraphrase_test.txt" in message
    assert "paranmt-data fetch transfer --to DIR" in message  # which command gets the data
    assert isinstance(raised.value, InputError)


@pytest.mark.parametrize("damage", ["not gzip", "header only", "only bad lines"])
def test_damaged_file_is_one_line(tmp_path, damage):
    transfer, msrp, _ = write_transfer_data(tmp_path)
    if damage == "not gzip":
        (msrp / "msr_paraphrase_train.txt.gz").write_bytes(b"\x1f\x8b broken")
        load = lambda: load_mrpc(msrp)  # noqa: E731
    elif damage == "header only":
        (msrp / "msr_paraphrase_train.txt.gz").write_bytes(gzip.compress(b"Quality\tother\n"))
        load = lambda: load_mrpc(msrp)  # noqa: E731
    else:
        (transfer / "TREC.test").write_bytes(b"no labels\nat all\n")
        load = lambda: load_trec(transfer)  # noqa: E731
    with pytest.raises(InputError) as raised:
        load()
    assert "\n" not in str(raised.value)


def test_suite_in_table_order(tmp_path):
    sets = load_transfer_suite(*write_transfer_data(tmp_path))
    assert [s.name for s in sets] == list(TRANSFER_TASKS)
    assert np.bincount(sets[0].splits["all"].labels).tolist() == [3, 3]


@pytest.mark.slow
def test_shared_transfer_data():
    shared = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    if not (shared / "transfer").is_dir():
        pytest.skip("../shared/data/transfer is absent")
    sets = {s.name: s for s in load_transfer_suite(shared / "transfer", shared / "en-paraphrase" / "msrp", shared / "sts" / "SICK")}
    assert len(sets["MR"].splits["all"]) == 10662 and len(sets["SUBJ"].splits["all"]) == 10000
    assert len(sets["MRPC"].splits["train"]) == 4076 and len(sets["MRPC"].splits["test"]) == 1725
    assert len(sets["TREC"].splits["test"]) == 500 and len(sets["SST2"].splits["test"]) == 1821
