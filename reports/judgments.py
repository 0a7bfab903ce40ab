"""The report of ScoresAgainstJudgments: how each score of a sentence pair agrees with people.

``judgments_report`` takes, for every judged set, each score's statistics (corpus.agreement:
Spearman, Pearson, AUC with bootstrap intervals, the mean judgment per decile) and returns a
:class:`reports.experiments.Report`: grids of correlations (a row per set, a column per score),
a table of mean judgment per decile for each set, what the sets and scores are, and what was
skipped and why; two PNGs of small multiples (one panel per set): the correlations with their
intervals, and the mean judgment per decile of each score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from reports.experiments import EMPTY, Plot, Report, Table

SPEARMAN = "Spearman ρ × 100"
DEFAULT_SCORE = "pp_sim"  # the corpus ranks its pairs by PP similarity unless told otherwise
COLUMNS = 4  # panels a row
UNDEFINED = "undefined"
GUIDE = (
    "A score agrees with people when the pairs it scores higher are the pairs people judge more similar "
    "(graded sets) or call equivalent (yes/no sets). ρ and r are Spearman's and Pearson's correlations of the "
    "score with the judgment over the set's pairs, × 100 (100: the same order as the people's, 0: none, "
    "negative: the reverse); AUC × 100 is the chance that a pair judged yes scores higher than one judged no "
    "(50: chance). [lo, hi] is a 95 % bootstrap percentile interval (the pairs resampled with replacement, "
    "seeded; every score of a set is drawn the same resamples). The decile tables cut each set's pairs into "
    "ten equal parts by the score (0: the lowest-scoring tenth, 9: the highest; ties broken by a hash of the "
    "pair's id, as the corpus's deciles are) and give the mean judgment in each: for yes/no sets the share "
    "judged yes. The corpus's training sets are the top deciles of one score (by default pp_sim): a good "
    "filter is one whose top deciles hold the pairs people call equivalent. –: the score does not apply to "
    "the set (English–English scores need two English sentences, the translation score a Czech source); "
    f"{UNDEFINED}: the score or the judgment is the same for every pair of the set, so nothing can be ranked."
)


def _percent(value: float | None) -> str:
    return EMPTY if value is None else f"{100 * value:.1f}"


def with_interval(result: Mapping | None, name: str) -> str:
    """A statistic × 100 with its interval: ``62.3 [60.1, 64.4]``; "–" when the score does not
    apply, UNDEFINED when the statistic is not defined (a constant score, one class only)."""
    if not result:
        return EMPTY
    if result.get(name) is None:
        return UNDEFINED
    interval = result.get(f"{name}_ci")
    return _percent(result[name]) + (f" [{_percent(interval[0])}, {_percent(interval[1])}]" if interval else "")


@dataclass
class PanelPlot(Plot):
    """Small multiples: one panel per judged set. ``kind`` "interval": per score a bar (its
    value) with its interval as a whisker (``panels[set][score] = (value, lo, hi)``); "lines":
    per score a line over ``x`` (``panels[set][score] = values``). Colours name the same score in
    every panel; one legend for all."""

    panels: dict[str, dict] = field(default_factory=dict)

    def figure(self) -> Figure:
        scores = list(dict.fromkeys(score for panel in self.panels.values() for score in panel))
        colours = {score: f"C{index % 10}" for index, score in enumerate(scores)}
        rows = max(1, math.ceil(len(self.panels) / COLUMNS))
        figure = Figure(figsize=(4 * COLUMNS, 2.6 * rows + 0.8), dpi=100, layout="constrained")
        grid = figure.subplots(rows, COLUMNS, squeeze=False)
        for axes, (name, panel) in zip(grid.flat, self.panels.items(), strict=False):
            if self.kind == "interval":
                self._bars(axes, panel, colours)
            else:
                for score, values in panel.items():
                    axes.plot(self.x, [math.nan if v is None else v for v in values], marker="o", markersize=3, color=colours[score], label=score)
                axes.set_xticks(self.x)
            axes.set_title(name, fontsize=9)
            axes.set_xlabel(self.xlabel, fontsize=8)
            axes.set_ylabel(self.ylabel, fontsize=8)
            axes.tick_params(labelsize=7)
            axes.grid(alpha=0.3)
        for axes in list(grid.flat)[len(self.panels):]:
            axes.set_visible(False)
        handles = [Line2D([], [], color=colours[s], marker="o", label=s) for s in scores]
        figure.legend(handles=handles, title=self.legend or None, loc="outside lower center", ncols=min(len(scores), 6), fontsize=8, frameon=False)
        figure.suptitle(self.title)
        return figure

    @staticmethod
    def _bars(axes, panel: Mapping[str, tuple], colours: Mapping[str, str]) -> None:
        names = list(panel)
        values = [panel[s][0] for s in names]
        low = [max(0.0, v - lo) if lo is not None else 0.0 for v, (_, lo, _) in zip(values, (panel[s] for s in names), strict=True)]
        high = [max(0.0, hi - v) if hi is not None else 0.0 for v, (_, _, hi) in zip(values, (panel[s] for s in names), strict=True)]
        positions = list(range(len(names)))
        axes.barh(positions, values, xerr=[low, high], color=[colours[s] for s in names], error_kw={"elinewidth": 1, "capsize": 2})
        axes.set_yticks(positions, names)
        axes.invert_yaxis()
        axes.axvline(0, color="black", linewidth=0.8)


def _series(panels: Mapping[str, Mapping]) -> dict[str, list]:
    """report.json's series of the interval plot: per score, its value in each set."""
    scores = list(dict.fromkeys(score for panel in panels.values() for score in panel))
    return {score: [panels[name][score][0] if score in panels[name] else None for name in panels] for score in scores}


def _grid(title: str, sets: Mapping[str, Mapping], scores: list[str], statistic: str, note: str, plot: Plot | None = None) -> Table:
    return Table(title, ["judged set", "pairs", *scores],
                 [[name, str(entry["pairs"]), *(with_interval(entry["scores"].get(s), statistic) for s in scores)] for name, entry in sets.items()],
                 note, plot)


def _decile_table(name: str, entry: Mapping, order: list[str], plot: Plot | None) -> Table:
    rows = []
    for score in (s for s in order if s in entry["scores"]):
        means = [d["mean_judgment"] for d in entry["scores"][score]["deciles"]]
        spread = means[-1] - means[0] if means[0] is not None and means[-1] is not None else None
        rows.append([score, *(EMPTY if m is None else f"{m:.2f}" for m in means), EMPTY if spread is None else f"{spread:+.2f}"])
    what = "share judged yes" if entry["kind"] == "yes/no" else f"mean judgment ({entry['scale']})"
    return Table(f"{name}: {what} per decile of each score", ["score", *map(str, range(10)), "9 − 0"], rows,
                 f"{entry['pairs']} pairs, about {entry['pairs'] // 10} a decile.", plot)


def best_by_spearman(sets: Mapping[str, Mapping]) -> dict[str, tuple[str, float]]:
    """For each set, the score with the highest Spearman ρ (and its ρ)."""
    best = {}
    for name, entry in sets.items():
        ranked = [(result["spearman"], score) for score, result in entry["scores"].items() if result.get("spearman") is not None]
        if ranked:
            rho, score = max(ranked)
            best[name] = (score, rho)
    return best


def judgments_report(sets: Mapping[str, Mapping], scores: Mapping[str, str], skipped: Mapping[str, str], unavailable: Mapping[str, str],
                     resamples: int) -> Report:
    """``sets[name] = {"pairs", "kind", "scale", "files", "left_out", "scores": {score: agreement + "deciles"}}``,
    ``scores[name]`` = what the score is, ``skipped[set] = why``, ``unavailable[score] = why`` → the report."""
    order = [s for s in scores if any(s in entry["scores"] for entry in sets.values())]
    binary = {name: entry for name, entry in sets.items() if entry["kind"] == "yes/no"}
    interval = lambda entry, s: (entry["scores"][s]["spearman"], *(entry["scores"][s]["spearman_ci"] or (None, None)))  # noqa: E731
    panels = {name: {s: tuple(100 * v if v is not None else None for v in interval(entry, s)) for s in order
                     if s in entry["scores"] and entry["scores"][s]["spearman"] is not None} for name, entry in sets.items()}
    correlation_plot = PanelPlot("spearman_by_set", f"{SPEARMAN} of each score with the judgments, 95 % intervals", SPEARMAN, "",
                                 list(panels), _series(panels), "interval", "score", panels)
    curves = {name: {s: [d["mean_judgment"] for d in entry["scores"][s]["deciles"]] for s in order if s in entry["scores"]}
              for name, entry in sets.items()}
    decile_plot = PanelPlot("judgment_by_decile", "Mean judgment per decile of each score (yes/no sets: share judged yes)",
                            "decile of the score in the set", "mean judgment", list(range(10)),
                            {f"{name} / {s}": values for name, panel in curves.items() for s, values in panel.items()}, "lines", "score", curves)
    intervals = f"[lo, hi]: 95 % bootstrap interval, {resamples} resamples." if resamples else "No bootstrap (--resamples 0)."
    tables = [
        _grid(f"{SPEARMAN} [95 % interval]", sets, order, "spearman", intervals, correlation_plot),
        _grid("Pearson r × 100 [95 % interval]", sets, order, "pearson", intervals),
        *([_grid("ROC AUC × 100 [95 % interval] (yes/no sets)", binary, order, "auc", f"50: chance. {intervals}")] if binary else []),
        *(_decile_table(name, entry, order, decile_plot if index == 0 else None) for index, (name, entry) in enumerate(sets.items())),
        Table("Judged sets", ["judged set", "pairs", "judgment", "files", "lines left out"],
              [[name, str(e["pairs"]), f"{e['scale']} ({e['kind']})", "; ".join(e["files"]),
                ", ".join(f"{r}: {c}" for r, c in e["left_out"].items()) or "none"]
               for name, e in sets.items()] + [[name, "skipped", reason, "", ""] for name, reason in skipped.items()]),
        Table("Scores", ["score", "what it is"], [[s, scores[s]] for s in order] + [[s, f"not computed: {why}"] for s, why in unavailable.items()]),
    ]
    best = best_by_spearman(sets)
    english = [name for name, entry in sets.items() if DEFAULT_SCORE in entry["scores"]]
    wins = sum(best.get(name, ("",))[0] == DEFAULT_SCORE for name in english)
    summary = ("Highest Spearman ρ per set: " + "; ".join(f"{name}: {score} ({100 * rho:.1f})" for name, (score, rho) in best.items())
               + f". {DEFAULT_SCORE}, the corpus's default ranking, is highest on {wins} of {len(english)} English–English sets." if best
               else "No score could be compared with a judgment.")
    about = (
        "Do the scores the corpus ranks its pairs by agree with people? Every score the corpus can carry (trigram "
        "overlap, PP similarity, unigram F1, Kendall τ, the language-identification probabilities, the translation "
        "score), the cosine of the project's trained encoders and an outside sentence-transformers model are computed "
        "for pairs that people have judged (SemEval STS, STS-B, SICK, MSRP, PAN, ParaCrawl's labelled cs–en samples, "
        "WMT21's adequacy judgments, a user's file) and compared with the judgments."
    )
    data = {"sets": sets, "scores": {s: scores[s] for s in order}, "skipped": skipped, "unavailable": unavailable, "best_by_spearman": best,
            "resamples": resamples}
    return Report("Scores against people's judgments", summary, about, tables, data, guide=GUIDE)
