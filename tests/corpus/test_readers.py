import gzip

import pytest

from corpus.errors import InputError
from corpus.readers import (
    BitextRecord,
    InputUnit,
    ParaphraseRecord,
    Reject,
    aligned_partner,
    distinct_names,
    iter_aligned,
    iter_czeng,
    iter_paranmt,
    parse_input_spec,
)

CZECH = {".cs": "cs", ".ces": "cs"}


def lines(*texts):
    return [t.encode("utf-8") + b"\n" if isinstance(t, str) else t for t in texts]


def test_czeng_well_formed_line_gives_record_with_domain_and_score():
    [record] = iter_czeng(lines("subtitlesM-b1-00train-f00001-s1\t0.9871\tAhoj, světe!\tHello, world!"), "00train.gz")
    assert record == BitextRecord("subtitlesM-b1-00train-f00001-s1", "00train.gz", 1, "subtitlesM", 0.9871, "cs", "Ahoj, světe!", "Hello, world!")


def test_czeng_handles_crlf_and_surrounding_spaces():
    [record] = iter_czeng([b"news-b1-x\t1.0\t Dobr\xc3\xbd den \t Good day \r\n"], "f")
    assert (record.foreign, record.en) == ("Dobrý den", "Good day")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"news-1\t0.5\tjen tri sloupce\n", "column_count"),
        (b"news-1\t0.5\ta\tb\tc\n", "column_count"),
        (b"news-1\t0.5\t\xff\xfe\tbad\n", "invalid_utf8"),
        (b"news-1\t0.5\t\tEnglish only\n", "empty_side"),
        (b"news-1\t0.5\tCzech only\t  \n", "empty_side"),
        (b"news-1\tabc\tA\tB\n", "bad_score"),
        (b"news-1\tnan\tA\tB\n", "bad_score"),
        (b"news-1\t1_0\tA\tB\n", "bad_score"),
        ("news-1\t\u0661\tA\tB\n".encode(), "bad_score"),
        (b"news-1\tinfinity\tA\tB\n", "bad_score"),
        (b"news-1\t0.5\tA\x00\tB\n", "control_character"),
        (b"news-1\t0.5\tA\rB\tC\n", "control_character"),
        ("news-1\t0.5\tA\u0085\tB\n".encode(), "control_character"),
        ("news-1\t0.5\t\u200b\u200e\tB\n".encode(), "empty_side"),
        (b"\t0.5\tA\tB\n", "empty_id"),
        (b"  \t0.5\tA\tB\n", "empty_id"),
        (b" news-1\t0.5\tA\tB\n", "id_whitespace"),
        (b"news-1 \t0.5\tA\tB\n", "id_whitespace"),
        (b"   \n", "blank_line"),
    ],
)
def test_czeng_malformed_lines_become_rejects_with_reason(raw, reason):
    [reject] = iter_czeng([raw], "bad.gz")
    assert isinstance(reject, Reject)
    assert (reject.reason, reject.source, reject.line) == (reason, "bad.gz", 1)
    assert reject.detail


def test_byte_order_mark_and_invisible_formatting_are_removed():
    records = iter_czeng(lines("\ufeffnews-1\t0.5\tDobr\u00fd\u200b den\tGood\u202e day", "news-2\t-1e-3\tA\u2066b\u2069\tB"), "f")
    assert [(r.id, r.czeng_score, r.foreign, r.en) for r in records] == [("news-1", 0.5, "Dobrý den", "Good day"), ("news-2", -0.001, "Ab", "B")]
    unit = InputUnit("x.cs", "x.en")
    [record] = iter_aligned(lines("\ufeffPes."), lines("\ufeffThe dog."), unit)
    assert (record.foreign, record.en) == ("Pes.", "The dog.")


def test_czeng_overlong_line_is_rejected_and_raw_text_is_cut():
    raw = b"news-1\t0.5\t" + b"a" * 5000 + b"\tB\n"
    [reject] = iter_czeng([raw], "f", max_line_bytes=1000)
    assert reject.reason == "too_long"
    assert len(reject.raw) == 1000


def test_czeng_reader_keeps_going_after_bad_lines_and_numbers_lines():
    items = list(iter_czeng(lines("bad", "news-1\t1\tA\tB", "", "news-2\t1\tC\tD"), "f"))
    assert [type(i).__name__ for i in items] == ["Reject", "BitextRecord", "Reject", "BitextRecord"]
    assert [i.line for i in items] == [1, 2, 3, 4]


def test_aligned_pairs_get_stem_line_ids_and_misaligned_tail_is_rejected():
    unit = InputUnit("/data/newstest2021.cs-en.src.cs", "/data/newstest2021.cs-en.ref.A.en")
    items = list(iter_aligned(lines("Jedna.", "Dvě.", "Tři."), lines("One.", "Two."), unit))
    assert items[0] == BitextRecord("newstest2021.cs-en.src.cs-000000001", "newstest2021.cs-en.src.cs", 1, "newstest2021", None, "cs",
                                    "Jedna.", "One.")
    assert items[2].reason == "misaligned" and items[2].line == 3 and items[2].raw == "Tři."


def test_aligned_rejects_invalid_utf8_and_empty_sides():
    unit = InputUnit("x.cs", "x.en")
    items = list(iter_aligned([b"\xc3\x28\n", b"\n", b"ok\n"], [b"fine\n", b"also\n", b"ok\n"], unit))
    assert [getattr(i, "reason", None) for i in items] == ["invalid_utf8", "empty_side", None]


def test_paranmt_release_lines():
    items = list(iter_paranmt(lines("a cat sat .\ta cat was sitting .\t0.83", "x\ty", "a\tb\tnot-a-number"), "para-nmt-5m.txt"))
    assert items[0] == ParaphraseRecord("para-nmt-5m.txt-000000001", "para-nmt-5m.txt", 1, "a cat sat .", "a cat was sitting .", 0.83)
    assert [i.reason for i in items[1:]] == ["column_count", "bad_score"]


def test_input_spec_and_partners():
    assert parse_input_spec("a/*.gz, x.cs::y.en") == [("a/*.gz", None), ("x.cs", "y.en")]
    assert aligned_partner("t/tatoeba.ces-eng.ces", CZECH) == "t/tatoeba.ces-eng.eng"
    assert aligned_partner("data/00train.gz", CZECH) is None
    assert aligned_partner("wmt/news.cs.gz", CZECH) == "wmt/news.en.gz"
    assert aligned_partner("t/tatoeba.ces.gz", CZECH) == "t/tatoeba.eng.gz"


def test_distinct_names_are_file_names_unless_two_inputs_share_one():
    assert distinct_names(["/d/a/tatoeba.cs", "/d/b/tatoeba.cs", "/d/a/wmt.cs"]) == {
        "/d/a/tatoeba.cs": "a/tatoeba.cs", "/d/b/tatoeba.cs": "b/tatoeba.cs", "/d/a/wmt.cs": "wmt.cs"}
    assert distinct_names(["/x/a/t.cs", "/y/a/t.cs"]) == {"/x/a/t.cs": "x/a/t.cs", "/y/a/t.cs": "y/a/t.cs"}
    assert distinct_names(["gs://bucket/part.gz"]) == {"gs://bucket/part.gz": "part.gz"}
    with pytest.raises(ValueError, match="foreign_file::english_file"):
        parse_input_spec("x.cs::")
    with pytest.raises(ValueError, match="no input"):
        parse_input_spec(" , ")


def test_reader_streams_gzip_lines(tmp_path):
    path = tmp_path / "00train.gz"
    with gzip.open(path, "wb") as handle:
        handle.write("news-1\t0.5\tČesky\tEnglish\n".encode())
    with gzip.open(path, "rb") as handle:
        [record] = iter_czeng(handle, path.name)
    assert record.foreign == "Česky"


def test_every_text_reader_ends_a_line_at_lf_with_or_without_a_cr_before_it(tmp_path):
    """One rule (corpus.readers.split_lines) for the judged sets, STS files, transfer tasks and
    training TSVs: CRLF and LF files read the same; a CR elsewhere stays in its line."""
    from corpus.csen_more import lines
    from corpus.readers import split_lines
    from models.training_pairs import tsv_batches

    assert split_lines(b"a\r\nb\rc\r\nd\r") == [b"a", b"b\rc", b"d"]
    assert split_lines(b"a\n\nb") == [b"a", b"", b"b"]
    text = "první\tdruhý\nthird\tfourth\n"
    (tmp_path / "lf.tsv").write_text(text, encoding="utf-8")
    (tmp_path / "crlf.tsv").write_bytes(text.replace("\n", "\r\n").encode())
    (tmp_path / "crlf.tsv.gz").write_bytes(gzip.compress(text.replace("\n", "\r\n").encode()))
    assert lines(tmp_path / "crlf.tsv") == lines(tmp_path / "crlf.tsv.gz") == lines(tmp_path / "lf.tsv") == ["první\tdruhý", "third\tfourth"]
    assert ([batch.sides for batch in tsv_batches(tmp_path / "crlf.tsv")] == [batch.sides for batch in tsv_batches(tmp_path / "lf.tsv")]
            == [(["první", "third"], ["druhý", "fourth"])])


def test_a_judged_set_line_that_is_not_utf8_is_one_line_never_replaced_text(tmp_path):
    from corpus.csen_more import lines

    (tmp_path / "bad.en").write_bytes(b"fine\nnot \xff utf-8\n")
    with pytest.raises(InputError, match=r"bad.en:2: not UTF-8"):
        lines(tmp_path / "bad.en")
