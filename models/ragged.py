"""Variable-length rows of ids (the CSR layout ``EmbeddingBag`` reads), in memory or spooled to disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path

import numpy as np

from models.vocabulary import UNK


@dataclass(frozen=True)
class Ragged:
    """Variable-length id rows: row ``i`` is ``values[offsets[i]:offsets[i + 1]]``."""

    values: np.ndarray  # int64 (int32 for a training set: RaggedSpool), all rows concatenated
    offsets: np.ndarray  # int64, len(rows) + 1, starts at 0

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]]) -> Ragged:
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(offsets[-1]))
        return cls(values, offsets)

    @classmethod
    def from_lengths(cls, values: np.ndarray, lengths: np.ndarray, empty: int = UNK) -> Ragged:
        """Consecutive rows of ``values`` (kept in their integer type) with the given
        ``lengths``; an empty row gets the single id ``empty`` (UNK: see the module docstring)."""
        missing = lengths == 0
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths + missing, out=offsets[1:])
        if missing.any():
            # Each value moves right by one place per empty row before its own.
            filled = np.full(offsets[-1], empty, dtype=values.dtype)
            filled[np.arange(len(values)) + np.repeat(np.cumsum(missing) - missing, lengths)] = values
            values = filled
        return cls(values, offsets)

    def between(self, start: int, stop: int) -> Ragged:
        """Rows ``start`` to ``stop`` (a view)."""
        offsets = self.offsets[start : stop + 1]
        return Ragged(self.values[offsets[0] : offsets[-1]], offsets - offsets[0])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row_lengths(self, rows: np.ndarray) -> np.ndarray:
        """The lengths of the selected rows, read from their offsets alone (not every row's:
        a training set has tens of millions)."""
        return self.offsets[rows + 1] - self.offsets[rows]

    def row(self, index: int) -> np.ndarray:
        return self.values[self.offsets[index] : self.offsets[index + 1]]

    def take(self, rows: np.ndarray) -> Ragged:
        """The selected rows, in the given order, with int64 ids (what the models read):
        a vectorized gather, no Python loop."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.row_lengths(rows)
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # Position j of output row r reads values[starts[r] + j].
        starts = np.repeat(self.offsets[:-1][rows] - offsets[:-1], lengths)
        return Ragged(self.values[starts + np.arange(offsets[-1])].astype(np.int64, copy=False), offsets)

    def shuffled_rows(self, rows: np.ndarray, rng: np.random.Generator) -> Ragged:
        """A copy whose selected rows have their ids in random order (word scrambling)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return self
        lengths = self.row_lengths(rows)
        positions = np.repeat(self.offsets[:-1][rows], lengths) + (
            np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        )
        owner = np.repeat(np.arange(len(rows)), lengths)
        # Sort each row's positions by a random key; rows stay in place.
        order = np.lexsort((rng.random(len(positions)), owner))
        values = self.values.copy()
        values[positions] = self.values[positions[order]]
        return Ragged(values, self.offsets)


class RaggedSpool:
    """Id rows added a batch at a time, then read back as one :class:`Ragged` of int32 ids
    (every vocabulary has fewer than 2³¹ symbols).

    With a ``path``, the rows go to two files, ``<path>.values`` (int32) and ``<path>.offsets``
    (int64), and are read back from them (:class:`RaggedFile`): a training set of millions of
    pairs stays on disk (at 2.7M pairs, 0.3 GB of ids held in memory made the trainer's peak
    grow with the input: docs/2026-11-28-paper-size-end-to-end.md). Without one, they are kept
    in memory."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.ids = 0
        self._parts: list[tuple[np.ndarray, np.ndarray]] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            Path(f"{path}.values").write_bytes(b"")
            Path(f"{path}.offsets").write_bytes(np.zeros(1, dtype=np.int64).tobytes())

    def add(self, part: Ragged) -> None:
        values, offsets = part.values.astype(np.int32, copy=False), part.offsets[1:] + self.ids
        if self.path is None:
            self._parts.append((values, offsets))
        else:
            for suffix, numbers in ((".values", values), (".offsets", offsets)):
                with open(f"{self.path}{suffix}", "ab") as file:
                    numbers.tofile(file)
        self.ids += len(values)

    def finished(self) -> IdRows:
        """Every row added (read from the files, with a ``path``)."""
        if self.path is None:
            values = [values for values, _ in self._parts]
            offsets = [np.zeros(1, dtype=np.int64), *(offsets for _, offsets in self._parts)]
            return Ragged(np.concatenate(values) if values else np.zeros(0, dtype=np.int32), np.concatenate(offsets))
        return RaggedFile(self.path)


class RaggedFile:
    """The id rows :class:`RaggedSpool` wrote to ``<path>.values`` and ``<path>.offsets``, read a
    selection at a time with positioned reads, so only the selected rows' ids enter the
    process's memory. (Mapped instead, each random read of a pool brought about 300 kB of the
    file into the process's resident memory, a large page-cache folio it seems: 0.3-0.4 GiB for
    an 8,000-row pool at 2.7M pairs, docs/2026-11-28-paper-size-end-to-end.md. Reading one
    costs about 15 ms.)"""

    def __init__(self, path: Path):
        self.values_path, self.offsets_path = Path(f"{path}.values"), Path(f"{path}.offsets")
        self.rows = self.offsets_path.stat().st_size // 8 - 1

    def __len__(self) -> int:
        return self.rows

    def take(self, rows: np.ndarray) -> Ragged:
        """The selected rows, in the given order, with int64 ids (what the models read)."""
        rows = np.asarray(rows, dtype=np.int64)
        with open(self.offsets_path, "rb") as offsets_file, open(self.values_path, "rb") as values_file:
            read_offsets, read_values = partial(os.pread, offsets_file.fileno()), partial(os.pread, values_file.fileno())
            bounds = np.frombuffer(b"".join([read_offsets(16, 8 * row) for row in rows.tolist()]), dtype=np.int64).reshape(-1, 2)
            lengths = bounds[:, 1] - bounds[:, 0]
            ids = b"".join([read_values(4 * length, 4 * start) for start, length in zip(bounds[:, 0].tolist(), lengths.tolist(), strict=True)])
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Ragged(np.frombuffer(ids, dtype=np.int32).astype(np.int64), offsets)

    def between(self, start: int, stop: int) -> Ragged:
        """Rows ``start`` to ``stop``, read into memory (int32 ids)."""
        offsets = np.fromfile(self.offsets_path, dtype=np.int64, count=stop - start + 1, offset=8 * start)
        values = np.fromfile(self.values_path, dtype=np.int32, count=int(offsets[-1] - offsets[0]), offset=4 * int(offsets[0]))
        return Ragged(values, offsets - offsets[0])


# A training set's id rows: in memory, or in RaggedSpool's files (read a selection at a time).
IdRows = Ragged | RaggedFile
