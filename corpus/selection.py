"""Which corpus pairs become training data (SPEC.md §4): decile, length and release rules.

Every rule is a vectorized mask over an Arrow table of corpus rows. The release filters are
the authors' cleaning of their 5M-pair training release: 0.4 ≤ PP similarity ≤ 1.0, trigram
overlap ≤ 0.7, mean length of the two sides 5–40 tokens, exact duplicates removed. Their
"both sides English" filter needs a language-identification model, which cannot be downloaded
here; it is not applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpus.deciles import SCORERS

PP_RANGE = (0.4, 1.0)
MAX_OVERLAP = 0.7
MEAN_LENGTH = (5.0, 40.0)
PARTITION = "decile_pp"


def parse_deciles(text: str) -> tuple[int, ...]:
    """``"8,9"`` → (8, 9); an empty string means every decile."""
    values = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    if any(not 0 <= value <= 9 for value in values):
        raise ValueError(f"deciles are 0-9, got {text!r}")
    return values


@dataclass(frozen=True)
class Rules:
    """A selection: the deciles of one scorer, the length rule, optionally the release filters."""

    scorer: str = "pp"
    deciles: tuple[int, ...] = (8, 9)  # () = all
    max_tokens: int = 30  # both sides at most this many tokens; 0 = no length rule
    release: bool = False

    def __post_init__(self):
        if self.scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {sorted(SCORERS)}, got {self.scorer!r}")

    @property
    def decile_column(self) -> str:
        return f"decile_{self.scorer}"

    @property
    def columns(self) -> list[str]:
        """Columns the mask reads."""
        return [self.decile_column, "reference_n_tokens", "translation_n_tokens", "pp_sim", "trigram_overlap"]

    def __call__(self, table: pa.Table) -> np.ndarray:
        """Boolean mask of the rows that pass every rule."""
        ref = table.column("reference_n_tokens").to_numpy()
        tr = table.column("translation_n_tokens").to_numpy()
        keep = np.ones(table.num_rows, dtype=bool)
        if self.deciles:
            keep &= np.isin(table.column(self.decile_column).to_numpy(), self.deciles)
        if self.max_tokens:
            keep &= (ref <= self.max_tokens) & (tr <= self.max_tokens)
        if self.release:
            pp, overlap, mean = table.column("pp_sim").to_numpy(), table.column("trigram_overlap").to_numpy(), (ref + tr) / 2
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


def drop_duplicates(table: pa.Table) -> pa.Table:
    """Keep one row (the smallest id) per identical (reference_tok, translation_tok); sorted by id."""
    if table.num_rows == 0:
        return table
    ordered = table.sort_by([("reference_tok", "ascending"), ("translation_tok", "ascending"), ("id", "ascending")])
    ref, tr = ordered.column("reference_tok").combine_chunks(), ordered.column("translation_tok").combine_chunks()
    same = pc.and_(pc.equal(ref[1:], ref[:-1]), pc.equal(tr[1:], tr[:-1]))
    first = np.concatenate([[True], ~same.to_numpy(zero_copy_only=False)])
    return ordered.filter(pa.array(first)).sort_by("id")
