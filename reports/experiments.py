"""Experiment reports: the paper's tables from STS results, PNG plots and one HTML page.

Every experiment (workflows/experiments.py) gathers its runs' STS reports and calls one of the
``*_report`` functions here, which return a :class:`Report`; the task adds its
:class:`reports.provenance.Provenance`, and ``Report.write(folder)`` writes ``report.json``
(every number), ``report.md`` (the tables), one PNG per plot and ``index.html``: the
provenance (and the demo-data warning) first, what the experiment asks and how to read its
numbers, then each table with its plot under it, and links to the rest. Tables are made by
pandas (corpus.tables). No torch and no Luigi: matplotlib (its object API, a constrained layout
with the legend beside the axes; no display and no global pyplot state) and the STS report type.

Model selection uses the STS 2017 track-5 development set only (SPEC.md section 7): the best
decile and the best decile range are picked on it, never on the 2012–2016 test years.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.figure import Figure

from corpus.tables import html_table, markdown_table
from models.evaluation import TEST_YEARS, StsReport
from reports.provenance import Provenance

DEV = "STS 2017 (dev)"
TEST_MEAN = "2012–2016 mean"
PEARSON_AXIS = "Pearson r × 100"
DECILE_AXIS = "decile of the scorer (0: lowest-scoring tenth, 9: highest)"
SCORER_MEANS = {  # what each corpus score ranks the pairs by (docs/README-corpus.md)
    "trans": "the translation model's mean log-probability of the back-translation (with ParaNMT release files: the authors' PP similarity)",
    "trigram": "the share of word trigrams the two sentences have in common",
    "pp": "the cosine similarity of the two sentences under a paraphrase model",
    "unigram": "the unigram F1 of the two sentences",
    "tau": "Kendall's τ of the order of the words both sentences share",
}
MEGABATCH_AXIS = "mega-batch size M (mini-batches per pool of negatives)"
EMPTY = "–"
EMPTY_MEANS = (f"{EMPTY}: no value: that STS set or year was absent from the STS folder when the run was evaluated "
               "(its report.json lists what was absent), or the run has no such number.")


def _number(value) -> float:
    return math.nan if value is None else float(value)


def cell(value) -> str:
    """Pearson × 100 with one decimal; "–" for a missing number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return EMPTY
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


MARKERS, LINES = "osD^v", ("-", "--", ":", "-.")  # lines that coincide stay distinguishable


@dataclass
class Plot:
    """One PNG shown under its table: a line per series over ``x`` ("line"), or groups of bars
    ("bar", each bar labelled with its value, a missing one with "no value"). The legend, titled ``legend``, sits right of the
    axes so it never covers the data."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    x: list
    series: dict[str, list]
    kind: str = "line"
    legend: str = ""

    def figure(self) -> Figure:
        figure = Figure(figsize=(8, 4.5), dpi=100, layout="constrained")
        axes = figure.add_subplot()
        positions = list(range(len(self.x)))
        width = 0.8 / max(len(self.series), 1)
        numbers = {label: [_number(v) for v in values] for label, values in self.series.items()}
        for index, (label, values) in enumerate(numbers.items()):
            if self.kind == "bar":
                offsets = [p + (index - (len(numbers) - 1) / 2) * width for p in positions]
                axes.bar_label(axes.bar(offsets, values, width, label=label), [cell(v) for v in values], fontsize=7, padding=2)
                for offset in (o for o, v in zip(offsets, values, strict=True) if math.isnan(v)):
                    axes.text(offset, 0, "no value", rotation=90, ha="center", va="bottom", fontsize=7, color="grey")
            else:
                axes.plot(positions, values, marker=MARKERS[index % len(MARKERS)], linestyle=LINES[index % len(LINES)], label=label)
        labels = [str(x) for x in self.x]
        slanted = max(map(len, labels), default=0) > 8
        axes.set_xticks(positions, labels, rotation=20 if slanted else 0, ha="right" if slanted else "center")
        if any(v < 0 for values in numbers.values() for v in values):
            axes.axhline(0, color="black", linewidth=0.8)
        axes.set(title=self.title, xlabel=self.xlabel, ylabel=self.ylabel)
        axes.grid(axis="y", alpha=0.3)
        if numbers:
            axes.legend(title=self.legend or None, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
        return figure

    def save(self, path: Path) -> None:
        self.figure().savefig(path, format="png")


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list]
    note: str = ""
    plot: Plot | None = None  # the table's numbers drawn, shown under it

    def notes(self) -> str:
        """The table's note, and what an empty cell means when the table has one."""
        empty = any(not isinstance(c, str) and cell(c) == EMPTY for row in self.rows for c in row)
        return " ".join(text for text in (self.note, EMPTY_MEANS if empty else "") if text)

    def markdown(self) -> str:
        table = markdown_table(self.header, [[cell(c) for c in row] for row in self.rows])
        notes = f"\n{self.notes()}\n" if self.notes() else ""
        plot = f"\n![{self.plot.title}]({self.plot.name}.png)\n" if self.plot else ""
        return f"## {self.title}\n\n{table}{notes}{plot}"

    def html(self) -> str:
        note = f"<p>{html.escape(self.notes())}</p>\n" if self.notes() else ""
        plot = f'<figure><img src="{self.plot.name}.png" alt="{html.escape(self.plot.title)}"></figure>\n' if self.plot else ""
        return f"<h2>{html.escape(self.title)}</h2>\n{html_table(self.header, [[cell(c) for c in row] for row in self.rows])}\n{note}{plot}"

    def to_json(self) -> dict:
        return {"title": self.title, "header": self.header, "rows": [[_plain(c) for c in row] for row in self.rows], "note": self.note}


READING_GUIDE = (
    f"Every score is a Pearson correlation r × 100 between the cosine similarity of a model's two "
    f"sentence embeddings and the human similarity score of each sentence pair (100: the model "
    f"ranks the pairs as people do; 0: no relation; negative: the opposite). A year's column is the "
    f"mean over that year's STS datasets; {TEST_MEAN} is the mean over all 2012–2016 datasets. The "
    f"2012–2016 years are test sets: reported, never used to choose. {DEV} is the development set "
    f"the choices on this page (best decile, best model) are made on; each encoder's own training "
    f"kept the epoch that scored best on its dev_set (see the parameters). STS-B and SICK columns "
    f"appear when their files are in the STS folder."
)
PAGE_STYLE = (
    "body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%}"
    ".warning{background:#fde2e1;border:2px solid #c0392b;padding:.8em;font-size:1.1em}"
    # The provenance list is a two-column grid: each label shares a row with its value and the grey
    # box grows with the longer of the two (floated labels overflowed the box; issue 24 item 5).
    ".provenance{background:#f4f6f8;padding:.2em 1em 1em;overflow-wrap:anywhere}"
    ".provenance dl{display:grid;grid-template-columns:minmax(8em,13em) minmax(0,1fr);gap:.2em 1em}"
    ".provenance dt{font-weight:bold}.provenance dd{margin:0}.result{font-size:1.15em}"
)


@dataclass
class Report:
    title: str
    summary: str  # the result in one or two sentences
    about: str  # what the experiment ran and what it asks
    tables: list[Table]
    data: dict
    links: dict[str, str] = field(default_factory=dict)  # label → path relative to the report folder
    provenance: Provenance | None = None
    guide: str = READING_GUIDE  # how to read the numbers

    @property
    def plots(self) -> list[Plot]:
        return [table.plot for table in self.tables if table.plot]

    def write(self, folder: Path) -> list[str]:
        """report.json, report.md, the PNGs and index.html in ``folder``; returns the file names."""
        folder.mkdir(parents=True, exist_ok=True)
        for plot in self.plots:
            plot.save(folder / f"{plot.name}.png")
        plots = [{"file": f"{p.name}.png", "title": p.title, "x": p.x, "series": p.series} for p in self.plots]
        document = {
            "title": self.title, "summary": self.summary, "about": self.about,
            "provenance": self.provenance.to_json() if self.provenance else None,
            "tables": [t.to_json() for t in self.tables], "plots": plots, "data": self.data,
        }
        (folder / "report.json").write_text(json.dumps(_plain(document), indent=2) + "\n")
        head = [self.provenance.markdown_summary()] if self.provenance else []
        tail = [self.provenance.markdown_details()] if self.provenance else []
        markdown = [f"# {self.title}", "", *head, f"**Result.** {self.summary}", "", self.about, "", self.guide, ""]
        (folder / "report.md").write_text("\n".join(markdown + [table.markdown() for table in self.tables] + tail))
        (folder / "index.html").write_text(self.html())
        return ["report.json", "report.md", "index.html", *(plot["file"] for plot in plots)]

    def html(self) -> str:
        links = {"report.json": "report.json", "report.md": "report.md", **self.links}
        items = "".join(f'<li><a href="{html.escape(path)}">{html.escape(label)}</a></li>' for label, path in links.items())
        return (
            f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(self.title)}</title><style>{PAGE_STYLE}</style></head><body>\n"
            f"<h1>{html.escape(self.title)}</h1>\n"
            + (self.provenance.html() if self.provenance else "")
            + f'<p class="result"><strong>Result.</strong> {html.escape(self.summary)}</p>\n'
            f"<p>{html.escape(self.about)}</p>\n<p><strong>How to read the numbers.</strong> {html.escape(self.guide)}</p>\n"
            + "".join(table.html() for table in self.tables)
            + f"<h2>Files</h2><ul>{items}</ul>\n</body></html>\n"
        )


def _plain(value):
    """JSON-safe: NaN → None, tuples → lists, keys → strings."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


# STS summaries ---------------------------------------------------------------------------


def sts_summary(report: StsReport) -> dict[str, float]:
    """The columns of the experiment tables: the dev set, each test year's mean, the 2012–2016
    mean, and each STS-B / SICK split the report holds (NaN where a year is absent)."""
    summary = {DEV: report.year_mean("2017"), **{year: report.year_mean(year) for year in TEST_YEARS}, TEST_MEAN: report.test_mean()}
    summary.update({f"{s.year} {s.name}": s.pearson for s in report.scores if s.year in ("STS-B", "SICK")})
    return summary


def _extra_columns(summaries: Sequence[Mapping[str, float]]) -> list[str]:
    """STS-B / SICK columns present in any summary, in first-seen order."""
    return list(dict.fromkeys(key for s in summaries for key in s if key.startswith(("STS-B", "SICK"))))


def _get(summary: Mapping[str, float], key: str) -> float:
    return _number(summary.get(key))


# Table 4: the decile sweep ---------------------------------------------------------------


def best_range(dev: Mapping[int, float], width: int) -> tuple[tuple[int, ...], float] | None:
    """The ``width`` consecutive deciles whose mean development score is highest (ties go to
    the higher deciles); None when no such run of scored deciles exists."""
    best = None
    for start in sorted(dev):
        window = tuple(range(start, start + width))
        values = [_number(dev.get(d)) for d in window]
        if any(math.isnan(v) for v in values):
            continue
        mean = sum(values) / width
        if best is None or mean >= best[1]:
            best = (window, mean)
    return best


DEV_SETS = (DEV, "STS-B dev")  # the development sets a choice may look at; never a test set


def choose_deciles(cells: Mapping[str, Mapping[int, Mapping]], width: int, given: tuple[int, ...] = ()) -> dict:
    """The scorer and deciles whose cells score best on the development sets (the mean of those
    every cell has, of ``DEV_SETS``): the best ``width`` consecutive deciles of any scorer, or, with
    ``given`` deciles, the scorer best over those. ``cells`` as :func:`decile_sweep_report` takes.
    Raises ValueError naming what is missing when no development set scored every cell."""
    dev_sets = [name for name in DEV_SETS if all(not math.isnan(_get(c.get("sts", {}), name)) for row in cells.values() for c in row.values())]
    if not dev_sets or not cells:
        raise ValueError(f"no development set ({' or '.join(DEV_SETS)}) scored every cell")
    dev = {s: {d: sum(_get(c["sts"], name) for name in dev_sets) / len(dev_sets) for d, c in row.items()} for s, row in cells.items()}
    candidates = []
    for scorer, by_decile in dev.items():
        if given:
            if all(d in by_decile for d in given):
                candidates.append((scorer, tuple(given), sum(by_decile[d] for d in given) / len(given)))
        elif found := best_range(by_decile, min(width, len(by_decile))):
            candidates.append((scorer, *found))
    if not candidates:
        raise ValueError(f"no scorer has cells for deciles {list(given)}")
    ranked = sorted(candidates, key=lambda c: c[2], reverse=True)
    scorer, deciles, score = ranked[0]
    return {"scorer": scorer, "deciles": list(deciles), "dev": score, "dev_sets": dev_sets,
            "candidates": [{"scorer": s, "deciles": list(d), "dev": v} for s, d, v in ranked]}


def decile_sweep_report(cells: Mapping[str, Mapping[int, Mapping]], width: int = 2, links: dict[str, str] | None = None) -> Report:
    """``cells[scorer][decile] = {"pairs": n, "sts": sts_summary(...)}`` → Table 4 and plots.

    Per scorer: the best decile and the best ``width``-decile range, chosen on the dev set;
    their test means are reported beside them, never used to choose.
    """
    scorers = list(cells)
    deciles = sorted({d for by_decile in cells.values() for d in by_decile})
    metric = lambda scorer, decile, key: _get(cells[scorer].get(decile, {}).get("sts", {}), key)  # noqa: E731
    by_metric = {key: {s: [metric(s, d, key) for d in deciles] for s in scorers} for key in (DEV, TEST_MEAN)}
    selection = {}
    for scorer in scorers:
        dev = {d: metric(scorer, d, DEV) for d in deciles}
        scored = {d: v for d, v in dev.items() if not math.isnan(v)}
        top = max(scored, key=lambda d: (scored[d], d)) if scored else None
        chosen = best_range(dev, width)
        selection[scorer] = {
            "best_decile": top,
            "best_decile_dev": scored.get(top, math.nan),
            "best_decile_test_mean": metric(scorer, top, TEST_MEAN) if top is not None else math.nan,
            "best_range": list(chosen[0]) if chosen else None,
            "best_range_dev": chosen[1] if chosen else math.nan,
            "best_range_test_mean": (sum(metric(scorer, d, TEST_MEAN) for d in chosen[0]) / width) if chosen else math.nan,
        }
    ranked = [s for s in scorers if not math.isnan(selection[s]["best_decile_dev"])]
    winner = max(ranked, key=lambda s: selection[s]["best_decile_dev"]) if ranked else None
    span = lambda r: f"{r[0]}–{r[-1]}" if r else EMPTY  # noqa: E731
    by_decile = lambda key, name: Plot(name, f"{key} by decile, one line per scorer", DECILE_AXIS, PEARSON_AXIS, deciles,  # noqa: E731
                                       by_metric[key], legend="scorer")
    tables = [
        Table(f"Table 4: {DEV} Pearson × 100 by decile", ["scorer", *map(str, deciles)], [[s, *by_metric[DEV][s]] for s in scorers],
              "Decile 0 holds the lowest-scoring tenth of the pairs, 9 the highest.", by_decile(DEV, "dev_by_decile")),
        Table(f"{TEST_MEAN} Pearson × 100 by decile (not used for selection)", ["scorer", *map(str, deciles)],
              [[s, *by_metric[TEST_MEAN][s]] for s in scorers],
              plot=by_decile(TEST_MEAN, "test_by_decile")),
        Table(
            "Selection on the development set only",
            ["scorer", "best decile", DEV, f"its {TEST_MEAN}", f"best {width}-decile range", f"range {DEV}", f"range {TEST_MEAN}"],
            [[s, cell(sel["best_decile"]), sel["best_decile_dev"], sel["best_decile_test_mean"], span(sel["best_range"]), sel["best_range_dev"],
              sel["best_range_test_mean"]] for s, sel in selection.items()],
        ),
        Table("Training pairs per cell", ["scorer", *map(str, deciles)],
              [[s, *(cell(cells[s].get(d, {}).get("pairs")) for d in deciles)] for s in scorers]),
    ]
    summary = (
        f"Chosen on {DEV} only: scorer {winner}, decile {selection[winner]['best_decile']}, "
        f"best {width}-decile range {span(selection[winner]['best_range'])}."
        if winner else f"No {DEV} scores: nothing can be selected."
    )
    data = {"cells": cells, "selection": selection, "chosen_scorer": winner, "range_width": width, "selected_on": DEV}
    about = (
        f"Which ParaNMT pairs make good training data? For each scorer ({', '.join(scorers)}) the corpus is ranked into ten "
        f"deciles by that score; one model is trained on a sample of each decile and evaluated on STS. "
        + "".join(f"{s}: {SCORER_MEANS[s]}. " for s in scorers if s in SCORER_MEANS)
        + f"The best decile and the best {width} consecutive deciles are chosen per scorer on {DEV} (the paper's Table 4)."
    )
    return Report("Decile sweep (ParaNMT Table 4)", summary, about, tables, data, links or {})


# Tables 5 and 6: mega-batching -------------------------------------------------------------


def megabatch_report(cells: Mapping[str, Mapping[int, Mapping]], negatives: Sequence[Mapping], links: dict[str, str] | None = None) -> Report:
    """``cells[model][M] = {"pairs": n, "sts": ...}`` and :func:`models.neighbours.negative_examples`
    rows → Table 5 (STS by mega-batch size), Table 6 (negatives by pool size) and plots."""
    models = list(cells)
    sizes = sorted({m for by_size in cells.values() for m in by_size})
    metric = lambda model, key: [_get(cells[model].get(m, {}).get("sts", {}), key) for m in sizes]  # noqa: E731
    sizes_seen = list(negatives[0]["negatives"]) if negatives else []
    pools = {m: negatives[0]["negatives"][m]["pool_pairs"] for m in sizes_seen}
    by_size = lambda key, name: Plot(name, f"{key} by mega-batch size, one line per model", MEGABATCH_AXIS, PEARSON_AXIS, sizes,  # noqa: E731
                                     {m: metric(m, key) for m in models}, legend="model")
    tables = [
        Table(f"Table 5: {TEST_MEAN} Pearson × 100 by mega-batch size M", ["model", *map(str, sizes)], [[m, *metric(m, TEST_MEAN)] for m in models],
              plot=by_size(TEST_MEAN, "test_by_megabatch")),
        Table(f"{DEV} Pearson × 100 by mega-batch size M", ["model", *map(str, sizes)], [[m, *metric(m, DEV)] for m in models],
              plot=by_size(DEV, "dev_by_megabatch")),
        Table(
            "Table 6: the negative the mega-batch miner picks, by M",
            ["sentence", "paraphrase", *(f"M = {m} ({pools[m]} pairs)" for m in sizes_seen)],
            [[row["sentence"], row["paraphrase"], *(f"{row['negatives'][m]['sentence']} ({row['negatives'][m]['cosine']:.2f})" for m in sizes_seen)]
             for row in negatives],
            "The pool is the first M mini-batches of the epoch plan, embedded by one trained model; cosine in parentheses. "
            "When the training set is smaller than M mini-batches the pool holds all of it.",
        ),
    ]
    summary = f"{len(models)} model(s) × mega-batch sizes {', '.join(map(str, sizes))}; negatives for {len(negatives)} sentence(s)."
    about = (
        "Does a larger pool of candidate negatives help? Training contrasts each pair with the most similar other sentence "
        "(the hardest negative) found in a pool of M mini-batches. Each model is trained once per M on the same pairs "
        "(the paper's Table 5); Table 6 shows which negative the miner picks for a few training sentences as the pool grows."
    )
    return Report("Mega-batching (ParaNMT Tables 5 and 6)", summary, about, tables, {"cells": cells, "negatives": list(negatives)}, links or {})


# Tables 7 and 9: models and baselines ------------------------------------------------------


def transfer_section(transfer: Mapping[str, Mapping[str, dict]], paper: Mapping[str, tuple[str, Mapping]]) -> Table:
    """Table 8: ``transfer[name] = {task: models.transfer result}`` of each row, the paper's row
    (``paper[name]`` = its name and numbers) under each model the paper has."""
    from models.transfer import TABLE8_COLUMNS, headline

    def score(result: Mapping | None) -> str | float | None:
        if result is None:
            return None
        return f"{cell(headline(result))}/{cell(result['f1'])}" if "f1" in result else headline(result)

    rows = []
    for name, results in transfer.items():
        rows.append([name, *(score(results.get(task)) for task in TABLE8_COLUMNS)])
        if name in paper:
            paper_name, numbers = paper[name]
            rows.append([f"paper: {paper_name}",
                         *("/".join(map(cell, numbers[t])) if isinstance(numbers[t], list | tuple) else numbers[t] for t in TABLE8_COLUMNS)])
    evaluated_on = {r["evaluated_on"] for results in transfer.values() for t, r in results.items() if t.startswith("SICK")}
    return Table("Table 8: transfer tasks (logistic regression on the frozen embeddings)", ["model", *TABLE8_COLUMNS], rows,
                 "Accuracy × 100; MRPC accuracy/F1; SICK-R Pearson × 100 of the predicted relatedness. MR, CR, SUBJ, MPQA: 10-fold "
                 f"cross-validation; SST-2, TREC, MRPC: the test split; SICK: the {'/'.join(sorted(evaluated_on)) or 'test'} split. "
                 "The paper's rows: its Table 8 (trained on 5M ParaNMT pairs).")


def model_table_report(rows: Mapping[str, Mapping], links: dict[str, str] | None = None, transfer: Mapping[str, Mapping[str, dict]] | None = None,
                       paper: Mapping[str, tuple[str, Mapping]] | None = None) -> Report:
    """``rows[name] = {"kind": "trained" | "baseline", "dim": d, "sts": ...}`` → Table 7 (per
    year), Table 9 (STS Benchmark) and a bar plot per year; with ``transfer`` (the rows' Table 8
    results) also :func:`transfer_section`."""
    names = list(rows)
    summaries = [rows[n]["sts"] for n in names]
    extra = _extra_columns(summaries)
    stsb = [column for column in extra if column.startswith("STS-B")]
    years = [*TEST_YEARS, TEST_MEAN, DEV]
    compared = [TEST_MEAN, DEV, *stsb]
    comparison = Plot("model_comparison", "Models and baselines compared", "model (trained encoders first, then the word-vector baselines)",
                      PEARSON_AXIS,
                      names, {column: [_get(rows[n]["sts"], column) for n in names] for column in compared}, "bar", legend="STS set")
    tables = [
        Table("Table 7: STS Pearson × 100 (mean per year)", ["model", "kind", "dim", *years, *extra],
              [[n, rows[n]["kind"], cell(rows[n].get("dim")), *(_get(rows[n]["sts"], c) for c in years + extra)] for n in names],
              "kind: trained (an encoder trained on the pairs) or baseline (word vectors averaged, no training); dim: embedding size.", comparison),
        Table("Table 9: STS Benchmark Pearson × 100", ["model", *stsb] if stsb else ["model", "STS-B"],
              [[n, *(_get(rows[n]["sts"], c) for c in stsb)] if stsb else [n, None] for n in names],
              "The paper reports STS-B test; where the STS folder holds no test file the dev split is shown and labelled so."),
        *([transfer_section(transfer, paper or {})] if transfer else []),
    ]
    best = max((n for n in names if not math.isnan(_get(rows[n]["sts"], DEV))), key=lambda n: _get(rows[n]["sts"], DEV), default=None)
    trained = sum(rows[n]["kind"] == "trained" for n in names)
    summary = f"{trained} model(s) trained on the same pairs, {len(names) - trained} baseline(s); best on {DEV}: {best}."
    about = (
        "Which encoder architecture works best when all are trained on the same pairs? Each model is trained with the same "
        "options and compared with two baselines that need no training: the average of pre-trained word vectors, and SIF "
        "(a weighted average with the common component removed). The paper's Tables 7 (STS by year) and 9 (STS Benchmark)."
    )
    data = {"rows": rows, "best_on_dev": best, **({"transfer": transfer} if transfer else {})}
    return Report("Models and baselines (ParaNMT Tables 7 and 9)", summary, about, tables, data, links or {})


# Tables 2 and 3: data sources --------------------------------------------------------------


def data_source_report(sources: Mapping[str, Mapping], table2: tuple[list[str], list[list[str]]], links: dict[str, str] | None = None) -> Report:
    """``sources[name] = {"pairs": n, "models": {model: sts summary}, "stats": ...}`` and the
    corpus statistics' Table 2 (header, rows; ``corpus.stats.table2_rows``, one column per
    source) → Tables 2 and 3 and a bar plot."""
    names = list(sources)
    models = list(dict.fromkeys(m for s in sources.values() for m in s["models"]))
    score = lambda source, model: _get(sources[source]["models"].get(model, {}), DEV)  # noqa: E731
    tables = [
        Table("Table 2: corpus statistics per source (English side; standard deviations in parentheses)", *table2),
        Table(f"Table 3: {DEV} Pearson × 100 per source", ["source", "training pairs", *models],
              [[s, cell(sources[s]["pairs"]), *(score(s, m) for m in models)] for s in names],
              "Every model is trained on the same number of pairs from each source.",
              Plot("dev_by_source", f"{DEV} per training-data source", "model", PEARSON_AXIS, models,
                   {s: [score(s, m) for m in models] for s in names}, "bar", legend="source")),
        Table(f"{TEST_MEAN} Pearson × 100 per source", ["source", *models],
              [[s, *(_get(sources[s]["models"].get(m, {}), TEST_MEAN) for m in models)] for s in names]),
    ]
    summary = f"{len(names)} source(s), {len(models)} model(s), {min((s['pairs'] for s in sources.values()), default=0)} training pairs each."
    about = (
        "Does the source of the training pairs matter? For each source: its corpus statistics (Table 2), and the same models "
        "trained on an equal-sized sample of its pairs (Table 3), so only the data differs."
    )
    return Report("Data sources (ParaNMT Tables 2 and 3)", summary, about, tables, {"sources": sources}, links or {})
