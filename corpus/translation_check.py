"""Whether a translator translates: figures of its output that any working translator keeps in
bounds, checked on a sample of its pairs before anything is built from them.

A translator can be broken in ways no stage notices by itself: an untrained model that says one
sentence for every source, a wrong language token or a model that copies its input, a model
translating into another language, a file of translations that is not the foreign file's. The
first GPU run's model said "A man in a blue shirt …" for all 2,218 sources, and every stage went
on. Each figure is one such fault's sign:

* ``distinct``: distinct translations per distinct source (a working translator: about 1; one
  sentence for everything: about 0);
* ``copies``: the share of translations identical to their source;
* ``length``: the median of translation characters per source character (Chinese or Japanese
  into English: about 3; an empty or cut output: near 0);
* ``english``: the mean P(English) of the translations (langid's model, corpus.language);
* ``loops``: the share of translations that say a word 3-gram three times or more, the sign of a
  decoder that loops ("of the end of the end of the end …": a tiny model trained for minutes on
  csen-more, 0.66 of newstest2021; its translations passed every other figure).

The bounds are wide: real systems of 9 languages into English (../shared/data/translations) are
far inside them (loops: at most 0.042, NLLB decoded greedily; median 0.002), so a figure out of
them says the translator is broken, not weak. A translator that translates badly but varies,
copies nothing and loops nowhere passes: BLEU against references (EvaluateTranslator) says that.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.language import LanguageModel

# Pairs of each system whose figures are computed: enough to tell one sentence from many.
SAMPLE_PAIRS = 10_000


@dataclass(frozen=True)
class Bound:
    """A figure's name (what accepts it anyway), what it measures, and its working range;
    ``above_best``: whether a variant set's upper limit is counted above its beam's best figure."""

    name: str
    what: str
    low: float
    high: float
    above_best: bool = False

    def high_for(self, best: dict[str, float] | None) -> float:
        """The upper limit of a variant set whose sources' beam best has ``best`` figures (None: of
        the beam's best itself)."""
        return self.high + best[self.name] if self.above_best and best and self.name in best else self.high

    def limit_broken(self, value: float, best: dict[str, float] | None) -> str:
        """The limit that ``value`` breaks, in words."""
        if value < self.low:
            return f"at least {self.low:g}"
        high = self.high_for(best)
        return f"at most {high:g}" if high == self.high else f"at most {high:g}: {self.high:g} above its beam's best, {best[self.name]:g}"


BOUNDS = (
    Bound("distinct", "distinct translations per distinct source", 0.5, float("inf")),
    Bound("copies", "share of translations identical to their source", 0.0, 0.5),
    Bound("length", "median translation characters per source character", 0.2, 6.0),
    Bound("english", "mean P(English) of the translations", 0.5, 1.0),
    # A weak model's banned-word and sampled searches loop more than its beam does (the demo's
    # translator: 0.11 on its best, 0.31 on parabank's constrained variants), a broken decoder far more.
    Bound("loops", "share of translations that say a word 3-gram three times or more", 0.0, 0.25, above_best=True),
)
NAMES = tuple(bound.name for bound in BOUNDS)
LOOP_NGRAM, LOOP_REPEATS = 3, 3


def loops(translation: str) -> bool:
    """Whether a translation says some word LOOP_NGRAM-gram (lowercased, split at spaces)
    LOOP_REPEATS times or more."""
    words = translation.lower().split()
    grams = Counter(zip(*(words[start:] for start in range(LOOP_NGRAM)), strict=False))  # the shifted copies end where the shortest does
    return bool(grams) and max(grams.values()) >= LOOP_REPEATS


def translation_figures(sources: list[str], translations: list[str]) -> dict[str, float]:
    """The figures (BOUNDS) of a sample of (source, translation) pairs."""
    if not sources:
        return {}
    lengths = np.array([len(t) / max(len(s), 1) for s, t in zip(sources, translations, strict=True)])
    return {
        "distinct": round(len(set(translations)) / len(set(sources)), 4),
        "copies": round(float(np.mean([s.strip() == t.strip() for s, t in zip(sources, translations, strict=True)])), 4),
        "length": round(float(np.median(lengths)), 4),
        "english": round(float(np.mean(LanguageModel.load().probability(translations, "en"))), 4),
        "loops": round(float(np.mean([loops(t) for t in translations])), 4),
    }


def accepted_figures(spec: str) -> set[str]:
    """``--accept-translations``: comma-separated figure names; InputError for another name."""
    names = set(comma_items(spec))
    if unknown := sorted(names - set(NAMES)):
        raise InputError(f"--accept-translations: unknown figure(s) {unknown}; choose from {', '.join(NAMES)}")
    return names


def out_of_bounds(figures: dict[str, float], best: dict[str, float] | None = None) -> list[Bound]:
    """The bounds of BOUNDS that ``figures`` (a sample's, translation_figures) fall outside of;
    ``best``: the figures of the beam's best of the same sources, for a variant set."""
    return [bound for bound in BOUNDS if bound.name in figures and not bound.low <= figures[bound.name] <= bound.high_for(best)]


def broken_translator(figures_by_system: dict[str, dict[str, float]], accepted: set[str],
                      best_of: dict[str, str] | None = None) -> tuple[str, str] | None:
    """The first figure out of its bounds and not accepted: (its name, what is wrong, said of the
    system); None when every figure is in bounds or accepted. ``best_of``: a variant set's name →
    the name of its system's beam best, whose figures move the variant set's limits (Bound.above_best)."""
    best_of = best_of or {}
    for system, figures in figures_by_system.items():
        best = figures_by_system.get(best_of.get(system, ""))
        for bound in out_of_bounds(figures, best):
            if bound.name not in accepted:
                value = figures[bound.name]
                return bound.name, (f"the translations of {system} look broken: {bound.what} is {value:g} "
                                    f"(a translator that translates gives {bound.limit_broken(value, best)})")
    return None


def figures_line(figures_by_system: dict[str, dict[str, float]]) -> str:
    """The figures in one line; over several systems, the range of each."""
    parts = []
    for bound in BOUNDS:
        values = [figures[bound.name] for figures in figures_by_system.values() if bound.name in figures]
        if values:
            low, high = min(values), max(values)
            parts.append(f"{bound.name} {low:.2f}" if low == high else f"{bound.name} {low:.2f}–{high:.2f}")
    return ", ".join(parts)
