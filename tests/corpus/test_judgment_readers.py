"""Readers of judged pairs on small files made here (a user's file and its mistakes, PAN,
ParaCrawl, WMT21), and on the real files in ../shared/data (slow)."""

import gzip

import numpy as np
import pytest
from conftest import require_shared
from wmt21_fixtures import wmt21_layout

from corpus import judgments
from corpus.errors import InputError
from corpus.judgments import (
    GRADED,
    WMT21_DIRECTIONS,
    WMT21_UNMAPPED,
    YES_NO,
    MissingJudgments,
    wmt21_documents,
)


def test_a_users_file_is_graded_or_yes_no_by_its_numbers(tmp_path):
    graded = tmp_path / "graded.tsv"
    graded.write_text("a man plays\ta man is playing\t4.5\r\nthe dog\ta cat\t0.25\n")
    (found,) = judgments.judgment_file(graded)
    assert found.name == "file graded.tsv" and found.kind == GRADED and found.judgment.tolist() == [4.5, 0.25]
    assert found.reference == ["a man plays", "the dog"] and found.translation == ["a man is playing", "a cat"] and found.source is None
    binary = tmp_path / "binary.tsv"
    binary.write_text("a\tb\t1\nc\td\t0\n")
    assert judgments.judgment_file(binary)[0].kind == YES_NO


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"a\tb\t1\nonly two\tfields\n", "bad.tsv:2: 2 tab-separated field(s), need 3 (sentence, sentence, judgment)"),
        (b"a\tb\t1\tmore\n", "bad.tsv:1: 4 tab-separated field(s), need 3"),
        (b"a\tb\t1\nc\td\tgood\n", "bad.tsv:2: the judgment 'good' is not a number"),
        (b"a\tb\tnan\n", "bad.tsv:1: the judgment 'nan' is not a number"),
        (b"a\t \t3\n", "bad.tsv:1: an empty sentence"),
        (b"a\tb\t1\n\xff\tb\t2\n", "bad.tsv:2: not UTF-8 text"),
        (b"", "bad.tsv: no judged pair in it"),
    ],
    ids=["two-columns", "four-columns", "word", "nan", "empty-sentence", "not-utf8", "empty-file"],
)
def test_a_mistake_in_a_users_file_is_one_line_naming_file_and_line(tmp_path, content, expected):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(InputError) as error:
        judgments.judgment_file(path)
    assert str(error.value) == f"{tmp_path}/{expected}" or str(error.value).startswith(f"{tmp_path}/{expected}")
    assert "\n" not in str(error.value)


def test_pan_reads_plain_and_gzipped_splits_and_absent_sets_are_skipped_with_a_reason(tmp_path):
    for split, opener in (("train", gzip.open), ("test", open)):
        suffix = ".gz" if split == "train" else ""
        for side in ("s1", "s2"):
            with opener(tmp_path / f"pan-{split}_{side}.txt{suffix}", "wt", encoding="utf-8") as handle:
                handle.write(f"{split} {side} one\n{split} {side} two\n")
        (tmp_path / f"pan-{split}.labels").write_text("1\n0\n")
    (found,) = judgments.pan(tmp_path)
    assert found.kind == YES_NO and found.judgment.tolist() == [1, 0, 1, 0]
    assert found.reference[2] == "test s1 one" and found.translation[1] == "train s2 two"
    sets, skipped = judgments.gather({"pan": lambda: judgments.pan(tmp_path), "msrp": lambda: judgments.msrp(tmp_path / "nowhere")})
    assert [s.name for s in sets] == ["PAN"] and list(skipped) == ["msrp"] and str(tmp_path / "nowhere") in skipped["msrp"]


def test_paracrawl_labels_v_as_valid_in_both_layouts_and_counts_unlabelled_lines(tmp_path):
    v3, v7 = tmp_path / "paracrawl-v3-validation-data", tmp_path / "paracrawl-v7-validation"
    v3.mkdir()
    v7.mkdir()
    (v3 / "sorted.en-cs").write_text("u1\tu2\tGood day\tDobrý den\t0.1\t0.2\t0.3\tV\t\nu1\tu2\tHello\tAhoj\t0.1\t0.2\t0.3\n")
    (v7 / "sorted.en-cs").write_text("u1\tu2\tThe cat\tKočka\t0.5\tE\t\t12\nu1\tu2\tA dog\tPes\t0.5\tV\t\t3\n")
    first, second = judgments.paracrawl(tmp_path)
    assert (first.name, second.name) == ("ParaCrawl v3 cs–en", "ParaCrawl v7 cs–en")
    assert first.judgment.tolist() == [1.0] and first.left_out == {"no label": 1}
    assert second.judgment.tolist() == [0.0, 1.0] and second.translation == ["The cat", "A dog"] and second.source == ["Kočka", "Pes"]
    assert second.reference is None and not second.english_pairs


def test_wmt21_pairs_each_matched_segment_with_its_line_and_leaves_out_the_others(tmp_path):
    lines = [f"line {n}" for n in range(1000)]
    for name in ("ref.A.en", "ref.B.en", "src.cs", "hyp.Online-A.en"):
        (tmp_path / f"newstest2021.cs-en.{name}").write_text("".join(f"{name} {line}\n" for line in lines))
    first_sid, _, first_line = wmt21_documents()["cs"][0]
    (tmp_path / "ad-seg-scores-cs-en.csv").write_text(
        f"SYS SID RAW.SCR Z.SCR N \nOnline-A.5 {first_sid + 2} 90 0.5 1 \nHUMAN.0 {first_sid} 70 -0.25 1 \nOnline-A.5 1 10 -2 1 \n")
    (found,) = judgments.wmt21_adequacy(tmp_path)
    assert found.judgment.tolist() == [0.5, -0.25] and found.left_out == {"segment not matched to a line": 1}
    assert found.translation == [f"hyp.Online-A.en line {first_line + 2}", f"ref.B.en line {first_line}"]
    assert found.reference == [f"ref.A.en line {first_line + 2}", f"ref.A.en line {first_line}"]
    assert found.source[0] == f"src.cs line {first_line + 2}" and found.english_pairs and found.source_language == "cs"


def test_wmt21_reads_the_gzipped_layout_renames_nemo_and_leaves_out_human_without_a_second_reference(tmp_path):
    scores = wmt21_layout(tmp_path, "de", ["NVIDIA-NeMo", "Online-A"])
    scores.write_text("SYS SID RAW.SCR Z.SCR N \nNemo.7 12 90 0.5 1 \nOnline-A.12 3 40 -1.5 2 \nHUMAN.0 12 99 1 1 \nOnline-A.12 30 10 -2 1 \n")
    (found,) = judgments.wmt21_adequacy(tmp_path, "de", documents=((1, 20, 100),))
    assert found.name == "WMT21 DA de→en" and found.source_language == "de" and found.judgment.tolist() == [0.5, -1.5]
    assert found.translation == ["hyp.NVIDIA-NeMo.en 111", "hyp.Online-A.en 102"] and found.reference == ["ref.A.en 111", "ref.A.en 102"]
    assert found.source == ["src.de 111", "src.de 102"]
    assert found.left_out == {"HUMAN: no second reference": 1, "segment not matched to a line": 1}


def test_wmt21_a_direction_without_a_mapping_or_without_its_files_is_skipped_with_its_reason(tmp_path):
    sets, skipped = judgments.gather({"wmt21-zh": lambda: judgments.wmt21_adequacy(tmp_path, "zh"),
                                      "wmt21-is": lambda: judgments.wmt21_adequacy(tmp_path / "nowhere", "is")})
    assert sets == [] and skipped == {"wmt21-zh": WMT21_UNMAPPED["zh"], "wmt21-is": f"absent: {tmp_path / 'nowhere' / 'ad-seg-scores-is-en.csv'}"}
    wmt21_layout(tmp_path, "is", ["Online-A"]).write_text("SYS SID RAW.SCR Z.SCR N \nOnline-Y.3 1 50 0 1 \n")
    with pytest.raises(MissingJudgments, match="newstest2021.is-en.hyp.Online-Y.en"):
        judgments.wmt21_adequacy(tmp_path, "is", documents=((1, 5, 0),))


def test_wmt21_every_direction_is_mapped_or_says_why_and_no_two_documents_share_a_segment_or_a_line():
    documents = wmt21_documents()
    assert set(documents) | set(WMT21_UNMAPPED) == set(WMT21_DIRECTIONS) and not set(documents) & set(WMT21_UNMAPPED)
    for direction, found in documents.items():
        segments = [sid for first, last, _ in found for sid in range(first, last + 1)]
        lines_used = [line + sid - first for first, last, line in found for sid in range(first, last + 1)]
        assert len(segments) == len(set(segments)) and len(lines_used) == len(set(lines_used)), direction
        assert min(segments) >= 1 and min(lines_used) >= 0, direction


@pytest.mark.slow
def test_the_real_judged_sets_are_read_whole():
    data = require_shared("sts").parent
    sets, skipped = judgments.gather({
        "sts": lambda: judgments.sts_years(data / "sts"), "stsb": lambda: judgments.stsb(data / "sts"), "sick": lambda: judgments.sick(data / "sts"),
        "msrp": lambda: judgments.msrp(data / "en-paraphrase" / "msrp"), "pan": lambda: judgments.pan(data / "en-paraphrase" / "pan-mt-metrics"),
        "paracrawl": lambda: judgments.paracrawl(data / "csen-more" / "paracrawl-human-evaluations"),
        "wmt21": lambda: judgments.wmt21_adequacy(data / "csen" / "wmt21"),
    })
    sizes = {s.name: len(s) for s in sets}
    assert not skipped
    assert sizes["STS 2012"] == 3108 and sizes["MSRP"] == 5801 and sizes["PAN"] == 13000
    assert sum(size for name, size in sizes.items() if name.startswith("ParaCrawl")) == 5000
    wmt = next(s for s in sets if s.name.startswith("WMT21"))
    assert len(wmt) + sum(wmt.left_out.values()) == 8155 and len(wmt) == 891
    assert np.isfinite(wmt.judgment).all()


@pytest.mark.slow
def test_every_wmt21_direction_into_english_is_read_with_its_counts():
    """../shared/data/translations/wmt21: (judgments kept, judgments in the file) per direction; is,
    ja and ru keep every judgment, cs and de those of their uniquely long documents."""
    wmt21 = require_shared("translations", "wmt21")
    expected = {"cs": (891, 8155), "de": (4238, 19385), "is": (8903, 8903), "ja": (14482, 14482), "ru": (9832, 9832)}
    for direction in WMT21_DIRECTIONS:
        if direction in WMT21_UNMAPPED:
            with pytest.raises(MissingJudgments, match="no segment mapping"):
                judgments.wmt21_adequacy(wmt21, direction)
            continue
        (found,) = judgments.wmt21_adequacy(wmt21, direction)
        assert (len(found), len(found) + sum(found.left_out.values())) == expected[direction], direction
        assert np.isfinite(found.judgment).all() and all(found.translation) and all(found.reference) and all(found.source)
    assert sorted(expected) == sorted(set(WMT21_DIRECTIONS) - set(WMT21_UNMAPPED))
