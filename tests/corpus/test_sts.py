"""STS readers on small files written by the tests, in the real files' layouts and quirks."""

from __future__ import annotations

import numpy as np
import pytest

from corpus.sts import (
    STS_TEST_SETS,
    MissingStsFiles,
    StsDataset,
    load_dev_set,
    load_sick,
    load_sts2017,
    load_sts_tests,
    load_stsb,
)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def check(dataset, year, name, sent1, sent2, gold):
    assert (dataset.year, dataset.name) == (year, name)
    assert (dataset.sent1, dataset.sent2) == (sent1, sent2)
    np.testing.assert_allclose(dataset.gold, gold)


def make_sts_tests(root, skip=()):
    """Every expected test set with two pairs each: gold 1.0 and 2.5, the sentences named."""
    for year, datasets in STS_TEST_SETS.items():
        prefix = "STS2016" if year == "2016" else "STS"
        for dataset in datasets:
            if (year, dataset) in skip:
                continue
            folder = root / f"STS{year}-test"
            extra = "\tsource a\tsource b" if year == "2016" else ""
            write(
                folder / f"{prefix}.input.{dataset}.txt",
                f"{year} {dataset} a1\t{dataset} b1{extra}\n{dataset} a2\t{dataset} b2{extra}\n",
            )
            write(folder / f"{prefix}.gs.{dataset}.txt", "1.0\n2.5\n")


def test_all_years_in_order_with_clean_names(tmp_path):
    make_sts_tests(tmp_path)
    datasets = load_sts_tests(tmp_path)
    assert [(d.year, d.name) for d in datasets][:6] == [
        ("2012", "MSRpar"),
        ("2012", "MSRvid"),
        ("2012", "SMTeuroparl"),
        ("2012", "OnWN"),
        ("2012", "SMTnews"),
        ("2013", "FNWN"),
    ]
    assert len(datasets) == 24
    assert all(d.name != "SMT" for d in datasets)
    onwn = datasets[3]
    assert onwn.sent1 == ["2012 surprise.OnWN a1", "surprise.OnWN a2"]
    assert onwn.sent2 == ["surprise.OnWN b1", "surprise.OnWN b2"]
    np.testing.assert_array_equal(onwn.gold, [1.0, 2.5])


def test_2016_names_and_extra_source_columns(tmp_path):
    make_sts_tests(tmp_path)
    (headlines,) = [d for d in load_sts_tests(tmp_path, years=["2016"]) if d.name == "headlines"]
    assert headlines.sent2 == ["headlines b1", "headlines b2"]


def test_2013_smt_gold_alone_is_not_needed_or_read(tmp_path):
    make_sts_tests(tmp_path)
    write(tmp_path / "STS2013-test" / "STS.gs.SMT.txt", "3.0\n4.0\n5.0\n")
    names = [d.name for d in load_sts_tests(tmp_path, years=["2013"])]
    assert names == ["FNWN", "headlines", "OnWN"]


def test_blank_gold_lines_skip_pairs_and_crlf(tmp_path):
    make_sts_tests(tmp_path)
    folder = tmp_path / "STS2015-test"
    write(folder / "STS.input.belief.txt", "a\tb\r\nc\td\r\ne\tf\r\ng\th\r\n")
    write(folder / "STS.gs.belief.txt", "\r\n3.2\r\n  \r\n\n")
    (belief,) = [d for d in load_sts_tests(tmp_path, years=["2015"]) if d.name == "belief"]
    assert belief.sent1 == ["c"] and belief.sent2 == ["d"]
    np.testing.assert_array_equal(belief.gold, [3.2])


def test_line_separators_inside_sentences_are_kept(tmp_path):
    make_sts_tests(tmp_path)
    folder = tmp_path / "STS2014-test"
    write(folder / "STS.input.tweet-news.txt", "a\u2028b\tc\x85d\ne\tf\n")
    (tweets,) = [d for d in load_sts_tests(tmp_path, years=["2014"]) if d.name == "tweet-news"]
    assert tweets.sent1 == ["a\u2028b", "e"] and tweets.sent2 == ["c\x85d", "f"]


def test_gold_and_input_line_counts_must_match(tmp_path):
    make_sts_tests(tmp_path)
    write(tmp_path / "STS2014-test" / "STS.gs.images.txt", "1\n2\n3\n")
    with pytest.raises(ValueError, match="STS.input.images.txt has 2 lines but .* has 3"):
        load_sts_tests(tmp_path, years=["2014"])


def test_bad_input_line_and_bad_score(tmp_path):
    make_sts_tests(tmp_path)
    write(tmp_path / "STS2014-test" / "STS.input.images.txt", "a\tb\nno tab here\n")
    with pytest.raises(ValueError, match=r"STS.input.images.txt:2: 1 tab-separated fields, need 2"):
        load_sts_tests(tmp_path, years=["2014"])
    write(tmp_path / "STS2014-test" / "STS.input.images.txt", "a\tb\nc\td\n")
    write(tmp_path / "STS2014-test" / "STS.gs.images.txt", "1\nfive\n")
    with pytest.raises(ValueError, match="STS.gs.images.txt: a gold score is not a number"):
        load_sts_tests(tmp_path, years=["2014"])


def test_missing_files_are_all_named(tmp_path):
    make_sts_tests(tmp_path, skip={("2012", "MSRvid"), ("2015", "belief")})
    for year in ("2014", "2016"):
        for path in (tmp_path / f"STS{year}-test").iterdir():
            path.unlink()
        (tmp_path / f"STS{year}-test").rmdir()
    with pytest.raises(MissingStsFiles) as caught:
        load_sts_tests(tmp_path)
    expected = [
        tmp_path / "STS2012-test" / "STS.input.MSRvid.txt",
        tmp_path / "STS2012-test" / "STS.gs.MSRvid.txt",
        tmp_path / "STS2014-test",
        tmp_path / "STS2015-test" / "STS.input.belief.txt",
        tmp_path / "STS2015-test" / "STS.gs.belief.txt",
        tmp_path / "STS2016-test",
    ]
    assert caught.value.missing == expected
    message = str(caught.value)
    assert message.startswith("6 STS file(s) or folder(s) missing")
    assert all(str(path) in message for path in expected)
    assert isinstance(caught.value, FileNotFoundError)


def test_unknown_year(tmp_path):
    with pytest.raises(ValueError, match="no STS test sets for year"):
        load_sts_tests(tmp_path, years=["2011"])


def test_sts2017(tmp_path):
    folder = tmp_path / "STS2017"
    write(folder / "STS.input.track5.en-en.txt", "A dog runs.\tA dog is running.\nx\ty\n")
    write(folder / "STS.gs.track5.en-en.txt", "4.800000\n0.200000\n")
    dev = load_sts2017(tmp_path)
    check(dev, "2017", "track5.en-en", ["A dog runs.", "x"], ["A dog is running.", "y"], [4.8, 0.2])
    assert len(dev) == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingStsFiles) as caught:
        load_sts2017(tmp_path / "empty")
    assert caught.value.missing == [tmp_path / "empty" / "STS2017"]


def test_stsb_extra_columns_and_no_quoting(tmp_path):
    write(
        tmp_path / "stsbenchmark" / "sts-test.csv",
        'main-captions\tMSRvid\t2012test\t0001\t5.000\tA "quoted\tA man.\n'
        "main-news\theadlines\t2016\t0281\t4\tUS court limits power\tHigh court checks power"
        "\tEurope Media Monitor\tEurope Media Monitor\n",
    )
    check(
        load_stsb(tmp_path, "test"),
        "STS-B",
        "test",
        ['A "quoted', "US court limits power"],
        ["A man.", "High court checks power"],
        [5.0, 4.0],
    )


def test_stsb_short_line_and_missing_split(tmp_path):
    write(tmp_path / "stsbenchmark" / "sts-dev.csv", "g\tf\t2012\t1\t3.0\tonly one sentence\n")
    with pytest.raises(ValueError, match="sts-dev.csv:1: 6 tab-separated fields, need 7"):
        load_stsb(tmp_path, "dev")
    with pytest.raises(MissingStsFiles, match="sts-train.csv"):
        load_stsb(tmp_path, "train")


def test_dev_sets_by_name(tmp_path):
    write(tmp_path / "stsbenchmark" / "sts-dev.csv", "g\tf\t2012\t1\t3.0\tA dog.\tA puppy.\n")
    write(tmp_path / "STS2017" / "STS.input.track5.en-en.txt", "A cat.\tA kitten.\n")
    write(tmp_path / "STS2017" / "STS.gs.track5.en-en.txt", "4.0\n")
    check(load_dev_set(tmp_path, "stsb-dev"), "STS-B", "dev", ["A dog."], ["A puppy."], [3.0])
    check(load_dev_set(tmp_path, "sts2017"), "2017", "track5.en-en", ["A cat."], ["A kitten."], [4.0])
    with pytest.raises(ValueError, match="dev set must be one of"):
        load_dev_set(tmp_path, "sts2012")


SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def test_sick_columns_by_header(tmp_path):
    write(
        tmp_path / "SICK" / "SICK_trial.txt",
        SICK_HEADER + "4\tBoys play.\tNo boy plays.\t3.6\tCONTRADICTION\n"
        "24\tA man cooks.\tA person cooks.\t4.7\tENTAILMENT\n",
    )
    check(
        load_sick(tmp_path, "trial"),
        "SICK",
        "trial",
        ["Boys play.", "A man cooks."],
        ["No boy plays.", "A person cooks."],
        [3.6, 4.7],
    )


def test_sick_test_annotated_name_and_reordered_columns(tmp_path):
    write(
        tmp_path / "SICK" / "SICK_test_annotated.txt",
        "relatedness_score\tsentence_B\tpair_ID\tsentence_A\n2.0\tB\t1\tA\n",
    )
    check(load_sick(tmp_path, "test"), "SICK", "test", ["A"], ["B"], [2.0])


def test_sick_bad_header_and_missing(tmp_path):
    write(tmp_path / "SICK" / "SICK_train.txt", "pair_ID\tsentence_A\tscore\n1\ta\t2\n")
    with pytest.raises(ValueError, match="lacks column.*sentence_B, relatedness_score"):
        load_sick(tmp_path, "train")
    with pytest.raises(MissingStsFiles) as caught:
        load_sick(tmp_path, "test")
    assert [path.name for path in caught.value.missing] == [
        "SICK_test.txt",
        "SICK_test_annotated.txt",
    ]


def test_dataset_lengths_must_agree():
    with pytest.raises(ValueError, match="2 first sentences, 1 second sentences, 2 scores"):
        StsDataset("x", "2012", ["a", "b"], ["c"], np.array([1.0, 2.0]))
