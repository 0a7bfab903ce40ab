"""Experiment reports: the paper's tables from STS results, PNG plots and one HTML page.

Every experiment (workflows/experiments.py) gathers its runs' STS reports and calls one of the
``*_report`` functions here, which return a :class:`Report`; ``Report.write(folder)`` writes
``report.json`` (every number), ``report.md`` (the tables), one PNG per plot and ``index.html``
that shows the tables and plots and links the rest. No torch and no Luigi: numpy, matplotlib
(its object API with the Agg canvas, so no display and no global pyplot state) and the STS
report type.

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

DEV = "STS 2017 (dev)"
TEST_MEAN = "2012–2016 mean"
EMPTY = "–"
EMPTY_MEANS = f"{EMPTY}: no value: that STS set or year was absent from the STS folder when the run was evaluated (its report.json lists what was absent), or the run has no such number."


def _number(value) -> float:
    return math.nan if value is None else float(value)


def cell(value) -> str:
    """Pearson × 100 with one decimal; "–" for a missing number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return EMPTY
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list]
    note: str = ""

    def notes(self) -> str:
        """The table's note, and what an empty cell means when the table has one."""
        empty = any(not isinstance(c, str) and cell(c) == EMPTY for row in self.rows for c in row)
        return " ".join(text for text in (self.note, EMPTY_MEANS if empty else "") if text)

    def markdown(self) -> str:
        table = markdown_table(self.header, [[cell(c) for c in row] for row in self.rows])
        return f"## {self.title}\n\n{table}" + (f"\n{self.notes()}\n" if self.notes() else "")

    def html(self) -> str:
        note = f"<p>{html.escape(self.notes())}</p>" if self.notes() else ""
        return f"<h2>{html.escape(self.title)}</h2>\n{html_table(self.header, [[cell(c) for c in row] for row in self.rows])}\n{note}\n"

    def to_json(self) -> dict:
        return {"title": self.title, "header": self.header, "rows": [[_plain(c) for c in row] for row in self.rows], "note": self.note}


@dataclass
class Plot:
    """One PNG: a line per series over ``x`` ("line"), or groups of bars ("bar")."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    x: list
    series: dict[str, list]
    kind: str = "line"

    def save(self, path: Path) -> None:
        figure = Figure(figsize=(7, 4.2), dpi=100)
        axes = figure.add_subplot()
        positions = list(range(len(self.x)))
        width = 0.8 / max(len(self.series), 1)
        for index, (label, values) in enumerate(self.series.items()):
            values = [_number(v) for v in values]
            if self.kind == "bar":
                axes.bar([p + (index - (len(self.series) - 1) / 2) * width for p in positions], values, width, label=label)
            else:
                axes.plot(positions, values, marker="o", label=label)
        axes.set_xticks(positions, [str(x) for x in self.x], rotation=30 if self.kind == "bar" else 0)
        axes.set(title=self.title, xlabel=self.xlabel, ylabel=self.ylabel)
        axes.grid(alpha=0.3)
        if self.series:
            axes.legend()
        figure.tight_layout()
        figure.savefig(path, format="png")


@dataclass
class Report:
    title: str
    summary: str
    tables: list[Table]
    plots: list[Plot]
    data: dict
    links: dict[str, str] = field(default_factory=dict)  # label → path relative to the report folder

    def write(self, folder: Path) -> list[str]:
        """report.json, report.md, the PNGs and index.html in ``folder``; returns the file names."""
        folder.mkdir(parents=True, exist_ok=True)
        for plot in self.plots:
            plot.save(folder / f"{plot.name}.png")
        plots = [{"file": f"{p.name}.png", "title": p.title, "x": p.x, "series": p.series} for p in self.plots]
        document = {"title": self.title, "summary": self.summary, "tables": [t.to_json() for t in self.tables], "plots": plots, "data": self.data}
        (folder / "report.json").write_text(json.dumps(_plain(document), indent=2) + "\n")
        markdown = [f"# {self.title}", "", self.summary, ""] + [table.markdown() for table in self.tables]
        markdown += [f"![{plot.title}]({plot.name}.png)\n" for plot in self.plots]
        (folder / "report.md").write_text("\n".join(markdown))
        (folder / "index.html").write_text(self.html())
        return ["report.json", "report.md", "index.html", *(plot["file"] for plot in plots)]

    def html(self) -> str:
        plots = "".join(f'<figure><img src="{p.name}.png" alt="{html.escape(p.title)}"><figcaption>{html.escape(p.title)}</figcaption></figure>\n' for p in self.plots)
        links = {"report.json": "report.json", "report.md": "report.md", **self.links}
        items = "".join(f'<li><a href="{html.escape(path)}">{html.escape(label)}</a></li>' for label, path in links.items())
        style = "body{font-family:sans-serif;max-width:72em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:right}img{max-width:100%}"
        return (
            f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(self.title)}</title><style>{style}</style></head><body>\n"
            f"<h1>{html.escape(self.title)}</h1>\n<p>{html.escape(self.summary)}</p>\n"
            + "".join(table.html() for table in self.tables)
            + plots
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
    tables = [
        Table(f"Table 4: {DEV} Pearson × 100 by decile", ["scorer", *map(str, deciles)], [[s, *by_metric[DEV][s]] for s in scorers],
              "Decile 0 holds the lowest-scoring tenth of the pairs, 9 the highest."),
        Table(f"{TEST_MEAN} Pearson × 100 by decile (not used for selection)", ["scorer", *map(str, deciles)], [[s, *by_metric[TEST_MEAN][s]] for s in scorers]),
        Table(
            "Selection on the development set only",
            ["scorer", "best decile", DEV, f"its {TEST_MEAN}", f"best {width}-decile range", f"range {DEV}", f"range {TEST_MEAN}"],
            [[s, cell(sel["best_decile"]), sel["best_decile_dev"], sel["best_decile_test_mean"], span(sel["best_range"]), sel["best_range_dev"], sel["best_range_test_mean"]] for s, sel in selection.items()],
        ),
        Table("Training pairs per cell", ["scorer", *map(str, deciles)], [[s, *(cell(cells[s].get(d, {}).get("pairs")) for d in deciles)] for s in scorers]),
    ]
    plots = [
        Plot("dev_by_decile", f"{DEV} by decile", "decile", "Pearson × 100", deciles, by_metric[DEV]),
        Plot("test_by_decile", f"{TEST_MEAN} by decile", "decile", "Pearson × 100", deciles, by_metric[TEST_MEAN]),
    ]
    summary = (
        f"Chosen on {DEV} only: scorer {winner}, decile {selection[winner]['best_decile']}, best {width}-decile range {span(selection[winner]['best_range'])}."
        if winner else f"No {DEV} scores: nothing can be selected."
    )
    data = {"cells": cells, "selection": selection, "chosen_scorer": winner, "range_width": width, "selected_on": DEV}
    return Report("Decile sweep (ParaNMT Table 4)", summary, tables, plots, data, links or {})


# Tables 5 and 6: mega-batching -------------------------------------------------------------


def megabatch_report(cells: Mapping[str, Mapping[int, Mapping]], negatives: Sequence[Mapping], links: dict[str, str] | None = None) -> Report:
    """``cells[model][M] = {"pairs": n, "sts": ...}`` and :func:`models.neighbours.negative_examples`
    rows → Table 5 (STS by mega-batch size), Table 6 (negatives by pool size) and plots."""
    models = list(cells)
    sizes = sorted({m for by_size in cells.values() for m in by_size})
    metric = lambda model, key: [_get(cells[model].get(m, {}).get("sts", {}), key) for m in sizes]  # noqa: E731
    sizes_seen = list(negatives[0]["negatives"]) if negatives else []
    pools = {m: negatives[0]["negatives"][m]["pool_pairs"] for m in sizes_seen}
    tables = [
        Table(f"Table 5: {TEST_MEAN} Pearson × 100 by mega-batch size M", ["model", *map(str, sizes)], [[m, *metric(m, TEST_MEAN)] for m in models]),
        Table(f"{DEV} Pearson × 100 by mega-batch size M", ["model", *map(str, sizes)], [[m, *metric(m, DEV)] for m in models]),
        Table(
            "Table 6: the negative the mega-batch miner picks, by M",
            ["sentence", "paraphrase", *(f"M = {m} ({pools[m]} pairs)" for m in sizes_seen)],
            [[row["sentence"], row["paraphrase"], *(f"{row['negatives'][m]['sentence']} ({row['negatives'][m]['cosine']:.2f})" for m in sizes_seen)] for row in negatives],
            "The pool is the first M mini-batches of the epoch plan, embedded by one trained model; cosine in parentheses. "
            "When the training set is smaller than M mini-batches the pool holds all of it.",
        ),
    ]
    plots = [
        Plot("test_by_megabatch", f"{TEST_MEAN} by mega-batch size", "mega-batch size M", "Pearson × 100", sizes, {m: metric(m, TEST_MEAN) for m in models}),
        Plot("dev_by_megabatch", f"{DEV} by mega-batch size", "mega-batch size M", "Pearson × 100", sizes, {m: metric(m, DEV) for m in models}),
    ]
    summary = f"{len(models)} model(s) × mega-batch sizes {', '.join(map(str, sizes))}; negatives for {len(negatives)} sentence(s)."
    return Report("Mega-batching (ParaNMT Tables 5 and 6)", summary, tables, plots, {"cells": cells, "negatives": list(negatives)}, links or {})


# Tables 7 and 9: models and baselines ------------------------------------------------------


def model_table_report(rows: Mapping[str, Mapping], links: dict[str, str] | None = None) -> Report:
    """``rows[name] = {"kind": "trained" | "baseline", "dim": d, "sts": ...}`` → Table 7 (per
    year), Table 9 (STS Benchmark) and a bar plot per year."""
    names = list(rows)
    summaries = [rows[n]["sts"] for n in names]
    extra = _extra_columns(summaries)
    stsb = [column for column in extra if column.startswith("STS-B")]
    years = [*TEST_YEARS, TEST_MEAN, DEV]
    tables = [
        Table("Table 7: STS Pearson × 100 (mean per year)", ["model", "kind", "dim", *years, *extra],
              [[n, rows[n]["kind"], cell(rows[n].get("dim")), *(_get(rows[n]["sts"], c) for c in years + extra)] for n in names]),
        Table("Table 9: STS Benchmark Pearson × 100", ["model", *stsb] if stsb else ["model", "STS-B"],
              [[n, *(_get(rows[n]["sts"], c) for c in stsb)] if stsb else [n, None] for n in names],
              "The paper reports STS-B test; where the STS folder holds no test file the dev split is shown and labelled so."),
    ]
    plots = [Plot("sts_by_year", "STS Pearson × 100 by year", "STS year", "Pearson × 100", [*TEST_YEARS, TEST_MEAN], {n: [_get(rows[n]["sts"], y) for y in [*TEST_YEARS, TEST_MEAN]] for n in names}, "bar")]
    best = max((n for n in names if not math.isnan(_get(rows[n]["sts"], DEV))), key=lambda n: _get(rows[n]["sts"], DEV), default=None)
    trained = sum(rows[n]["kind"] == "trained" for n in names)
    summary = f"{trained} model(s) trained on the same selection, {len(names) - trained} baseline(s); best on {DEV}: {best}."
    return Report("Models and baselines (ParaNMT Tables 7 and 9)", summary, tables, plots, {"rows": rows, "best_on_dev": best}, links or {})


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
        Table(f"Table 3: {DEV} Pearson × 100 per source", ["source", "training pairs", *models], [[s, cell(sources[s]["pairs"]), *(score(s, m) for m in models)] for s in names],
              "Every model is trained on the same number of pairs from each source."),
        Table(f"{TEST_MEAN} Pearson × 100 per source", ["source", *models], [[s, *(_get(sources[s]["models"].get(m, {}), TEST_MEAN) for m in models)] for s in names]),
    ]
    plots = [Plot("dev_by_source", f"{DEV} per source", "model", "Pearson × 100", models, {s: [score(s, m) for m in models] for s in names}, "bar")]
    summary = f"{len(names)} source(s), {len(models)} model(s), {min((s['pairs'] for s in sources.values()), default=0)} training pairs each."
    return Report("Data sources (ParaNMT Tables 2 and 3)", summary, tables, plots, {"sources": sources}, links or {})
