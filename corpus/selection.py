"""Which corpus pairs become training data (SPEC.md §4): decile, length, language, diversity and
release rules, and the seeded sample size. These dataclasses are the single declaration of the
selection settings: SelectTrainingSet's command-line parameters are derived from them.

Every rule is a vectorized mask over an Arrow table of corpus rows. The release filters are
the authors' cleaning of their 5M-pair training release: 0.4 ≤ PP similarity ≤ 1.0, trigram
overlap ≤ 0.7, mean length of the two sides 5–40 tokens, both sides English, exact duplicates
removed. "English" is langid.py's probability of English (``reference_p_en``,
``translation_p_en``, see ``corpus.language``) at least ``min_p_en``; the default 0.5 was chosen
on real Czech and English test sets (schemas/COLUMNS.md has the measured rates). Exact
duplicates are the one rule over more than a row: ``duplicate_keys`` and ``repeated`` find them a
range of keys at a time, so no step holds the candidates (``pipelines.select``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus.comma_lists import comma_items
from corpus.deciles import SCORERS
from corpus.errors import InputError
from corpus.ids import text_keys
from corpus.settings import setting

PP_RANGE = (0.4, 1.0)
MAX_OVERLAP = 0.7
MEAN_LENGTH = (5.0, 40.0)
PARTITION = "decile_pp"


# Every decile, spelled: Luigi takes an empty --decile on the command line for "not given" (8,9).
ALL_DECILES = "all"
# --scorer / --decile chosen on evidence from the corpus (TrainOnFiltered's ChooseDeciles).
AUTO = "auto"


def parse_deciles(text: str) -> tuple[int, ...]:
    """``"8,9"`` → (8, 9); ``all`` or an empty string (luigi.cfg's) → (), every decile: no filter."""
    if text.strip().lower() == ALL_DECILES:
        return ()
    try:
        values = tuple(sorted({int(part) for part in comma_items(text)}))
    except ValueError:
        raise InputError(f"--decile: comma-separated deciles 0-9 expected, got {text!r}") from None
    if any(not 0 <= value <= 9 for value in values):
        raise InputError(f"--decile: deciles are 0-9, got {text!r}")
    return values


# Which paraphrases of each source a selection takes (Rules.variants).
VARIANTS = ("all", "best")


@dataclass(frozen=True)
class Rules:
    """A selection's rules: the deciles of one scorer, the length rule, optionally English on
    both sides, diversity limits and the authors' release filters."""

    scorer: str = setting("pp", f"Score whose deciles select (see schemas/COLUMNS.md: pp, trigram, trans, unigram, tau); {AUTO}: the one whose "
                          "deciles train the best encoder on the development sets (TrainOnFiltered).", choices=(*SCORERS, AUTO))
    decile: str = setting("8,9", f"Comma-separated deciles (0 lowest … 9 highest; {ALL_DECILES}: every decile; "
                          f"{AUTO}: the best --ChooseDeciles-range-width "
                          "consecutive deciles on the development sets, TrainOnFiltered; the sweep's cost: --ChooseDeciles-sweep-pairs); "
                          "the paper's training set: 8,9 of pp.")
    max_tokens: int = setting(30, "Both sides at most this many tokens (0: no length rule).", minimum=0)
    release_filter: bool = setting(False, "The authors' release filters: 0.4 ≤ pp ≤ 1.0, trigram overlap ≤ 0.7, mean length 5–40, "
                                          "both sides English, exact duplicates removed.")
    english_only: bool = setting(False, "Both sides English (langid P(en) ≥ --min-p-en) without the other release filters.")
    min_p_en: float = setting(0.5, "langid probability of English both sides need under --english-only or --release-filter.")
    max_unigram_f1: float = setting(1.0, "Lexical diversity: unigram F1 of the two sides at most this (1: no rule).")
    max_kendall_tau: float = setting(1.0, "Word-order diversity: Kendall tau of the shared words at most this (1: no rule; "
                                          "a pair of fewer than two shared words has no tau and is left out by a rule).")
    min_pp_sim: float = setting(-1.0, "Meaning floor on PP similarity: the two sides' pp_sim at least this (-1: no rule); the floor on the "
                                      "PP model's judgement, beside BackTranslate's --meaning-floor on the translator's.")
    variants: str = setting("all", "Of a corpus with several paraphrases a source (--paraphrases): all of them, or best: the beam's best "
                                   "of each (variant 0, the pair --paraphrases 1 makes).", choices=VARIANTS)

    def __post_init__(self):
        if AUTO in (self.scorer, self.decile):
            raise InputError(f"--scorer {AUTO} and --decile {AUTO} are chosen by TrainOnFiltered (a sweep of the corpus's deciles); "
                             "SelectTrainingSet takes a scorer and deciles")
        if self.scorer not in SCORERS:
            raise InputError(f"--scorer must be one of {sorted(SCORERS)}, got {self.scorer!r}")
        parse_deciles(self.decile)
        if not 0.0 <= self.min_p_en <= 1.0:
            raise InputError(f"--min-p-en is a probability (0-1), got {self.min_p_en}")
        if not -1.0 <= self.min_pp_sim <= 1.0:
            raise InputError(f"--min-pp-sim is a cosine similarity (-1 to 1), got {self.min_pp_sim}")

    @property
    def deciles(self) -> tuple[int, ...]:
        return parse_deciles(self.decile)

    @property
    def decile_column(self) -> str:
        return f"decile_{self.scorer}"

    @property
    def english(self) -> bool:
        return self.english_only or self.release_filter

    @property
    def columns(self) -> list[str]:
        """Columns the mask reads."""
        columns = [self.decile_column, "reference_n_tokens", "translation_n_tokens"]
        columns += ["reference_p_en", "translation_p_en"] if self.english else []
        columns += ["unigram_f1"] if self.max_unigram_f1 < 1.0 else []
        columns += ["kendall_tau"] if self.max_kendall_tau < 1.0 else []
        columns += ["variant"] if self.variants == "best" else []
        columns += ["pp_sim"] if self.min_pp_sim > -1.0 and not self.release_filter else []
        return columns + (["pp_sim", "trigram_overlap"] if self.release_filter else [])

    def __call__(self, table: pa.Table) -> np.ndarray:
        """Boolean mask of the rows that pass every rule."""

        def column(name: str) -> np.ndarray:
            return table.column(name).to_numpy()

        ref, tr = column("reference_n_tokens"), column("translation_n_tokens")
        keep = np.ones(table.num_rows, dtype=bool)
        if self.deciles:
            keep &= np.isin(column(self.decile_column), self.deciles)
        if self.max_tokens:
            keep &= (ref <= self.max_tokens) & (tr <= self.max_tokens)
        if self.english:
            keep &= (column("reference_p_en") >= self.min_p_en) & (column("translation_p_en") >= self.min_p_en)
        if self.max_unigram_f1 < 1.0:
            keep &= column("unigram_f1") <= self.max_unigram_f1
        if self.max_kendall_tau < 1.0:
            keep &= column("kendall_tau") <= self.max_kendall_tau
        if self.variants == "best":
            keep &= column("variant") == 0
        if self.min_pp_sim > -1.0:
            keep &= column("pp_sim") >= self.min_pp_sim
        if self.release_filter:
            pp, overlap, mean = column("pp_sim"), column("trigram_overlap"), (ref + tr) / 2
            keep &= (pp >= PP_RANGE[0]) & (pp <= PP_RANGE[1]) & (overlap <= MAX_OVERLAP)
            keep &= (mean >= MEAN_LENGTH[0]) & (mean <= MEAN_LENGTH[1])
        return keep

    def files(self, corpus_files: Iterable[str]) -> list[str]:
        """The corpus files that can hold selected rows: PP deciles are directories, so a PP
        selection opens only theirs."""
        files = sorted(corpus_files)
        if self.scorer != "pp" or not self.deciles:
            return files
        wanted = tuple(f"/{PARTITION}={d}/" for d in self.deciles)
        return [path for path in files if any(part in path.replace("\\", "/") for part in wanted)]

    def __str__(self) -> str:
        """The rules that apply, for progress lines and errors."""
        parts = [f"{self.scorer} deciles {self.decile or 'all'}"]
        parts += [f"≤ {self.max_tokens} tokens"] if self.max_tokens else []
        parts += ["release filters"] if self.release_filter else []
        parts += [f"P(en) ≥ {self.min_p_en}"] if self.english else []
        parts += [f"unigram F1 ≤ {self.max_unigram_f1}"] if self.max_unigram_f1 < 1.0 else []
        parts += [f"Kendall tau ≤ {self.max_kendall_tau}"] if self.max_kendall_tau < 1.0 else []
        parts += [f"pp_sim ≥ {self.min_pp_sim}"] if self.min_pp_sim > -1.0 else []
        parts += ["the beam's best paraphrase of each source"] if self.variants == "best" else []
        return ", ".join(parts)


def passing_per_decile(tables: Iterable[pa.Table], rules: Iterable[Rules]) -> dict[str, np.ndarray]:
    """How many rows of each decile pass each of ``rules`` (one per scorer, every decile), counted
    a table at a time (a corpus is never held whole); a row the scorer leaves unranked counts in
    none."""
    rules = list(rules)
    counts = {rule.scorer: np.zeros(10, dtype=np.int64) for rule in rules}
    for table in tables:
        for rule in rules:
            column = table.column(rule.decile_column)
            keep = rule(table) & ~column.is_null().to_numpy(zero_copy_only=False)
            counts[rule.scorer] += np.bincount(column.fill_null(0).to_numpy()[keep], minlength=10)[:10]
    return counts


@dataclass(frozen=True)
class Sample:
    """How many of the pairs that pass the rules are kept: the smallest hashes of (seed, id)."""

    n_pairs: int = setting(5_000_000, "Pairs sampled (the paper: 5M); all that pass when fewer, 0: all.", minimum=0)
    sample_seed: int = setting(1, "Seed of the random sample (smallest hash of seed and id).")


# A row's key of duplicates (``duplicate_keys``).
KEY_SCHEMA = pa.schema([("range", pa.int32()), ("hi", pa.uint64()), ("lo", pa.uint64()), ("id", pa.string())])


def duplicate_keys(table: pa.Table, ranges: int) -> pa.Table:
    """Each row's id, the 128-bit key of its (reference_tok, translation_tok) as uint64 halves
    ``hi`` and ``lo`` (``corpus.ids.text_keys`` of the reference's length, the reference and the
    translation: the length keeps two pairs from joining into one string), and the key's
    ``range``, ``hi`` mod ``ranges``. Identical pairs have one key, so one range: the ranges can
    be searched for duplicates one at a time. Keys are compared instead of the texts because
    they are small; the chance that two of the paper's 51.4M different pairs share a key is
    below 10⁻²³."""
    refs, trs = table.column("reference_tok").to_pylist(), table.column("translation_tok").to_pylist()
    keys = text_keys(f"{len(ref)}:{ref}{tr}" for ref, tr in zip(refs, trs, strict=True))
    return pa.table([(keys[:, 0] % np.uint64(ranges)).astype(np.int32), keys[:, 0], keys[:, 1], table.column("id").combine_chunks()],
                    schema=KEY_SCHEMA)


def by_range(keys: pa.Table) -> Iterator[pa.Table]:
    """``duplicate_keys`` rows, one table per range that has any, in the ranges' order."""
    keys = keys.sort_by("range")
    ranges = keys.column("range").to_numpy()
    edges = [0, *(np.flatnonzero(ranges[1:] != ranges[:-1]) + 1).tolist(), keys.num_rows]
    for start, end in itertools.pairwise(edges):
        if end > start:
            yield keys.slice(start, end - start)


def repeated(keys: pa.Table) -> np.ndarray:
    """Mask of the ``duplicate_keys`` rows whose key a row with a smaller id has: the exact
    duplicates removed by the release filters, which keep the smallest id of each pair."""
    if not keys.num_rows:
        return np.zeros(0, bool)
    order = pc.sort_indices(keys, sort_keys=[("hi", "ascending"), ("lo", "ascending"), ("id", "ascending")]).to_numpy()
    hi, lo = keys.column("hi").to_numpy()[order], keys.column("lo").to_numpy()[order]
    mask = np.zeros(keys.num_rows, bool)
    mask[order[1:][(hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])]] = True
    return mask
