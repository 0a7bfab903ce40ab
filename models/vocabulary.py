"""Symbols and their ids, under the convention every featurizer shares: 0 is padding, 1 the unknown symbol."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

PAD, UNK = 0, 1
SPECIALS = ("<pad>", "<unk>")


class Vocabulary:
    """Symbols ↔ ids with PAD = 0 and UNK = 1; saved as one symbol a line."""

    def __init__(self, symbols: Iterable[str]):
        self.symbols = list(SPECIALS) + [s for s in symbols if s not in SPECIALS]
        self.index = {symbol: i for i, symbol in enumerate(self.symbols)}

    @classmethod
    def build(
        cls, counts: Counter[str], min_count: int = 1, max_size: int | None = None, extra: Iterable[str] = ()
    ) -> Vocabulary:
        """Symbols seen at least ``min_count`` times, most frequent first (ties by symbol, so the
        ids do not depend on input order), at most ``max_size`` of them; then ``extra``
        symbols not already in (e.g. the words of a pretrained vector file)."""
        return cls.from_ranked(sorted((s for s, c in counts.items() if c >= min_count), key=lambda s: (-counts[s], s)), max_size, extra)

    @classmethod
    def from_ranked(cls, ranked: list[str], max_size: int | None = None, extra: Iterable[str] = ()) -> Vocabulary:
        """The first ``max_size`` of the ``ranked`` symbols, then the ``extra`` ones not already in."""
        kept = ranked[:max_size] if max_size else ranked
        seen = set(kept)
        for symbol in extra:
            if symbol not in seen:
                seen.add(symbol)
                kept.append(symbol)
        return cls(kept)

    def __len__(self) -> int:
        return len(self.symbols)

    def ids(self, symbols: Iterable[str]) -> list[int]:
        get = self.index.get
        return [get(symbol, UNK) for symbol in symbols] or [UNK]

    def save(self, path: Path) -> None:
        # Symbols never contain newlines: tokenizers split on whitespace, trigrams cannot span lines.
        path.write_text("".join(f"{s}\n" for s in self.symbols[len(SPECIALS) :]), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        return cls(path.read_text(encoding="utf-8").split("\n")[:-1])
