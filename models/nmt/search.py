"""What one search of a translator asks for and gives: hypotheses, sampling, the search itself
(beside ``models.nmt.translate``, which runs them, so that ``models.nmt.paraphrase`` builds searches
without importing the engines)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Hypothesis:
    text: str
    score: float
    n_tokens: int
    truncated: bool


@dataclass(frozen=True)
class Sampling:
    """Random sampling instead of the beam: from the ``topk`` most likely pieces (0: all of them),
    within the smallest set whose probability reaches ``topp``, at ``temperature``; ``seed``
    makes the draws of one ``Translator.search`` call the same on every run."""

    topk: int
    topp: float
    temperature: float
    seed: int


@dataclass(frozen=True)
class Search:
    """What one search returns per source: the ``hypotheses`` best of a beam of ``beam`` (0: the
    translator's beam size), or that many samples."""

    hypotheses: int = 1
    sampling: Sampling | None = None
    beam: int = 0

    def width(self, beam_size: int) -> int:
        """Hypotheses decoded side by side per source (``beam_size``: the translator's)."""
        return self.hypotheses if self.sampling else self.beam or beam_size

    @property
    def rescored(self) -> bool:
        """Whether the engine's own scores are not the model's: a sample's are under the tempered
        and truncated distribution (so are a search's that bans pieces: renormalized without them)."""
        return self.sampling is not None


BEST = Search()


class Searcher(Protocol):
    """What ``models.nmt.paraphrase`` uses of a translator (``models.nmt.translate.Translator``)."""

    options: Any  # its DecodeOptions
    codec: Any  # its tokenizer: ``encode_target``

    def search(self, texts: list[str], pivots: list[str] | None = None, search: Search = BEST,
               suppressed: Sequence[list[str]] = ()) -> list[list[Hypothesis] | None]: ...
