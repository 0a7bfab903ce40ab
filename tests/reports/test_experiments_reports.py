"""Experiment reports: dev-only selection, the tables, and the files a report writes."""

import json
import math
import re

import numpy as np
import pytest
from conftest import squeezed
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.image import imread

from models.evaluation import DatasetScore, StsReport
from reports.experiments import (
    DEV,
    TEST_MEAN,
    Plot,
    Report,
    Table,
    best_range,
    choose_deciles,
    data_source_report,
    decile_sweep_report,
    megabatch_report,
    model_table_report,
    sts_summary,
)


def summary(dev, test):
    return {DEV: dev, "2012": test, TEST_MEAN: test}


def test_best_range_is_the_highest_mean_window_and_skips_gaps():
    assert best_range({0: 50.0, 1: 70.0, 2: 60.0, 3: 10.0}, 2) == ((1, 2), 65.0)
    assert best_range({0: 50.0, 1: 70.0, 2: 60.0}, 1) == ((1,), 70.0)
    assert best_range({0: 50.0, 1: 50.0}, 1) == ((1,), 50.0)  # ties go to the higher decile
    assert best_range({0: 90.0, 1: math.nan, 2: 10.0, 3: 20.0}, 2) == ((2, 3), 15.0)
    assert best_range({4: 90.0, 6: 80.0}, 2) is None


def test_sweep_selects_on_dev_even_when_the_test_years_disagree():
    # Dev prefers deciles 7-8 and, for trans, decile 2; the test means prefer 9 and 0.
    cells = {
        "pp": {d: {"pairs": 40, "sts": summary(dev, test)} for d, dev, test in [(6, 60.0, 10.0), (7, 80.0, 20.0), (8, 79.0, 30.0), (9, 50.0, 99.0)]},
        "trans": {d: {"pairs": 40, "sts": summary(dev, test)} for d, dev, test in [(0, 10.0, 95.0), (1, 20.0, 5.0), (2, 85.0, 1.0)]},
    }
    report = decile_sweep_report(cells, width=2)
    chosen = report.data["selection"]
    assert chosen["pp"]["best_decile"] == 7 and chosen["pp"]["best_range"] == [7, 8]
    assert chosen["pp"]["best_range_dev"] == pytest.approx(79.5) and chosen["pp"]["best_range_test_mean"] == pytest.approx(25.0)
    assert chosen["trans"]["best_decile"] == 2 and chosen["trans"]["best_decile_test_mean"] == 1.0
    assert chosen["trans"]["best_range"] == [1, 2]
    assert report.data["chosen_scorer"] == "trans" and "scorer trans, decile 2" in report.summary
    table4 = report.tables[0]
    assert table4.header == ["scorer", "0", "1", "2", "6", "7", "8", "9"]
    assert squeezed(table4.markdown()).splitlines()[4] == "| pp | – | – | – | 60.0 | 80.0 | 79.0 | 50.0 |"


def test_report_writes_json_markdown_png_and_a_linking_page(tmp_path):
    plot = Plot("scores", "Scores", "decile", "Pearson", [8, 9], {"pp": [70.5, 72.25], "trans": [60.0, None]})
    table = Table("Numbers | more", ["model", "score"], [["a|b", 71.25], ["c", math.nan]], "a note", plot)
    report = Report("An experiment", "It ran.", "What it does.", [table], {"value": math.nan, "pairs": (1, 2)}, {"run x": "../x/report.md"})
    files = report.write(tmp_path / "out")
    assert files == ["report.json", "report.md", "index.html", "scores.png"]
    image = imread(tmp_path / "out" / "scores.png")
    assert image.shape[:2] == (450, 800)
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    assert document["data"] == {"value": None, "pairs": [1, 2]}
    assert document["plots"] == [{"file": "scores.png", "title": "Scores", "x": [8, 9], "series": {"pp": [70.5, 72.25], "trans": [60.0, None]}}]
    assert document["tables"][0]["rows"] == [["a|b", 71.25], ["c", None]]
    markdown = squeezed((tmp_path / "out" / "report.md").read_text())
    assert "| a\\|b | 71.2 |" in markdown and "| c | – |" in markdown and "![Scores](scores.png)" in markdown
    page = (tmp_path / "out" / "index.html").read_text()
    assert re.search(r"<td>a\|b</td>\s*<td>71.2</td>\s*</tr>\s*<tr>\s*<td>c</td>\s*<td>–</td>", page)
    assert re.search(r"</table>\s*<p>a note .*</p>\s*<figure><img src=\"scores.png\"", page)  # the plot under its table
    assert "What it does." in page and "How to read the numbers" in page and "Pearson correlation r × 100" in page
    assert '<a href="../x/report.md">run x</a>' in page and '<a href="report.json">' in page


def test_sts_summary_and_model_table_label_the_stsb_split():
    scores = [
        DatasetScore("2012", "MSRpar", 10, 40.0, 41.0),
        DatasetScore("2012", "MSRvid", 10, 60.0, 61.0),
        DatasetScore("2017", "track5.en-en", 5, 70.0, 70.0),
        DatasetScore("STS-B", "dev", 8, 55.0, 50.0),
    ]
    numbers = sts_summary(StsReport(scores, 8))
    assert numbers[DEV] == 70.0 and numbers["2012"] == 50.0 and numbers[TEST_MEAN] == 50.0
    assert numbers["STS-B dev"] == 55.0 and math.isnan(numbers["2016"])
    report = model_table_report({"word_avg": {"kind": "trained", "dim": 8, "sts": numbers},
                                 "SIF": {"kind": "baseline", "dim": 50, "sts": summary(75.0, 20.0)}})
    assert report.tables[1].header == ["model", "STS-B dev"] and report.tables[1].rows[0] == ["word_avg", 55.0]
    assert report.data["best_on_dev"] == "SIF"
    assert "| word_avg | trained | 8 | 50.0 | – | – | – | – | 50.0 | 70.0 | 55.0 |" in squeezed(report.tables[0].markdown())


def test_data_source_tables_come_from_each_source(tmp_path):
    table2 = (["Statistic", "news", "subs"], [["Avg. Length", "20.00 (3.00)", "8.00 (2.00)"]])
    sources = {"news": {"pairs": 30, "models": {"word_avg": summary(70.0, 60.0)}}, "subs": {"pairs": 30, "models": {"word_avg": summary(75.0, 50.0)}}}
    report = data_source_report(sources, table2)
    assert report.tables[0].rows == [["Avg. Length", "20.00 (3.00)", "8.00 (2.00)"]]
    assert report.tables[1].rows == [["news", "30", 70.0], ["subs", "30", 75.0]]
    report.write(tmp_path)
    assert np.asarray(imread(tmp_path / "dev_by_source.png")).ndim == 3


def every_report_plot():
    """The plots of the four experiment reports, on hand-made numbers with negative scores,
    a missing value and long model names."""
    sweep = decile_sweep_report({s: {d: {"pairs": 40, "sts": summary(10.0 * d - 20, 5.0 * d)} for d in range(10)}
                                 for s in ("trans", "trigram", "pp")})
    negatives = [{"sentence": "a", "paraphrase": "b", "negatives": {1: {"sentence": "c", "cosine": 0.1, "pool_pairs": 8}}}]
    ablation = megabatch_report({m: {size: {"pairs": 40, "sts": summary(50.0 + size, 40.0)} for size in (1, 20, 40)}
                                 for m in ("word_avg", "bilstm_avg")}, negatives)
    rows = {name: {"kind": "trained", "dim": 300, "sts": {**summary(-5.0 + i, 30.0 + i), "STS-B dev": 40.0 + i}}
            for i, name in enumerate(["word_avg", "trigram_avg", "lstm_avg", "trigram_word"])}
    rows["SIF vectors (+WR)"] = {"kind": "baseline", "dim": 50, "sts": summary(52.0, math.nan)}
    sources = {s: {"pairs": 30, "models": {"word_avg": summary(70.0, 60.0), "trigram_avg": summary(65.0, 61.0)}} for s in ("news", "subtitles")}
    sourced = data_source_report(sources, (["Statistic", "news", "subtitles"], []))
    return [plot for report in (sweep, ablation, model_table_report(rows), sourced) for plot in report.plots]


@pytest.mark.parametrize("plot", every_report_plot(), ids=lambda plot: plot.name)
def test_every_plot_is_labelled_and_its_legend_is_beside_the_data(plot):
    figure = plot.figure()
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    axes = figure.axes[0]
    assert axes.get_title() and axes.get_xlabel() and axes.get_ylabel() == "Pearson r × 100"
    legend = axes.get_legend()
    assert legend.get_title().get_text() and [text.get_text() for text in legend.get_texts()] == list(plot.series)
    box, data = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
    assert box.x0 >= data.x1, "the legend overlaps the plotted area"
    everything = axes.get_tightbbox(renderer)  # tick labels, axis labels, title and legend
    assert everything.x0 >= 0 and everything.y0 >= 0 and everything.x1 <= figure.bbox.x1 and everything.y1 <= figure.bbox.y1, "something is cut off"
    if plot.kind == "bar":
        labels = [text.get_text() for text in axes.texts if text.get_text()]
        assert len(labels) == len(plot.x) * len(plot.series)  # a value on every bar, "no value" where there is none
        assert labels.count("no value") == sum(math.isnan(v) for values in plot.series.values() for v in values)


def test_the_plot_under_each_table_is_the_one_the_issue_asks_for():
    names = {plot.name: plot for plot in every_report_plot()}
    assert set(names) == {"dev_by_decile", "test_by_decile", "test_by_megabatch", "dev_by_megabatch", "model_comparison", "dev_by_source"}
    assert list(names["dev_by_decile"].series) == ["trans", "trigram", "pp"] and names["dev_by_decile"].x == list(range(10))
    assert names["test_by_megabatch"].x == [1, 20, 40] and list(names["test_by_megabatch"].series) == ["word_avg", "bilstm_avg"]
    comparison = names["model_comparison"]
    assert comparison.x[-1] == "SIF vectors (+WR)" and list(comparison.series) == [TEST_MEAN, DEV, "STS-B dev"]
    assert math.isnan(comparison.series[TEST_MEAN][-1]) and comparison.series[DEV][0] == -5.0


def dev_cell(sts_2017: float, sts_b: float | None, test: float = 0.0) -> dict:
    return {"sts": {"STS 2017 (dev)": sts_2017, "2012–2016 mean": test, **({"STS-B dev": sts_b} if sts_b is not None else {})}}


def test_the_choice_is_the_best_window_of_any_scorer_by_the_mean_of_both_dev_sets_and_never_a_test_set():
    cells = {"pp": {d: dev_cell(70 + d, 60 + d, test=99 if d == 0 else 0) for d in range(10)},
             "trigram": {d: dev_cell(80 - d, 75 - d) for d in range(10)}}
    choice = choose_deciles(cells, 2)
    assert (choice["scorer"], choice["deciles"], choice["dev"], choice["dev_sets"]) == ("trigram", [0, 1], 77.0, ["STS 2017 (dev)", "STS-B dev"])
    assert [c["scorer"] for c in choice["candidates"]] == ["trigram", "pp"]
    given = choose_deciles(cells, 2, given=(8, 9))  # --scorer auto with --decile 8,9: the scorer best over them
    assert (given["scorer"], given["deciles"], given["dev"]) == ("pp", [8, 9], 73.5)


def test_a_dev_set_missing_from_a_cell_leaves_it_out_and_none_at_all_is_an_error():
    cells = {"pp": {0: dev_cell(70, 60), 1: dev_cell(72, None)}}
    assert choose_deciles(cells, 2)["dev_sets"] == ["STS 2017 (dev)"]
    with pytest.raises(ValueError, match="no development set"):
        choose_deciles({"pp": {0: {"sts": {"2012–2016 mean": 60.0}}}}, 1)
