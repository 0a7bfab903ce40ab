"""Training pairs, read a batch of rows at a time.

A training set can be millions of pairs (ParaNMT-50M's top decile is 5.1M). Held whole as
Python strings and their token lists, 2.7M pairs took 7.8 GB (docs/2026-11-27-training-memory.md).
The trainer therefore never holds the sentences: it reads them in batches of :data:`READ_BATCH_ROWS`
rows, once per pass (counting, fitting the featurizers, featurizing), and keeps only their ids.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from corpus.comma_lists import comma_items
from corpus.errors import InputError
from corpus.readers import named_file, without_line_end

log = logging.getLogger("paranmt.trainer")

# Pairs read from the training files (and featurized) at a time: the trainer never holds them all.
READ_BATCH_ROWS = 65_536
DEFAULT_COLUMNS = ("reference", "translation")
# The column of a corpus's pairs that names the bitext row each translates (schemas.PAIRS).
SIBLING_KEY = "bitext_id"
# The seed of the draws that take a share of a source's pairs (with the source's position).
SHARE_SEED = 20_260_301


@dataclass(frozen=True)
class PairBatch:
    """Rows of pairs: the two sides' sentences and, when the corpus has them, their ``*_tok``
    strings (lowercased Moses tokens joined by one space: :mod:`models.featurizers`) and the
    bitext row each translates (``siblings``: the paraphrases of one source share it)."""

    sides: tuple[list[str], list[str]]
    words: tuple[list[str], list[str]] | None
    siblings: list[str] | None = None

    def kept(self, rows: list[int]) -> PairBatch:
        def pick(values: list[str]) -> list[str]:
            return [values[i] for i in rows]

        return PairBatch((pick(self.sides[0]), pick(self.sides[1])), None if self.words is None else (pick(self.words[0]), pick(self.words[1])),
                         None if self.siblings is None else pick(self.siblings))


class TrainingPairs:
    """The pairs of a training set whose two sides are not blank, read again for every pass.

    A pair with an empty (or whitespace-only) side is left out: there is nothing to encode, and
    it would teach that an empty sentence paraphrases anything; :meth:`count` says how many."""

    def __init__(self, every_batch: Callable[[bool], Iterator[PairBatch]]):
        """``every_batch(words)``: every pair, blank sides included, a batch at a time, with their
        words when asked for and the source has them (a pass that needs none reads none)."""
        self.every_batch = every_batch

    @classmethod
    def from_path(cls, path: str | Path, columns: Sequence[str] = DEFAULT_COLUMNS) -> TrainingPairs:
        """A Parquet dataset (a directory of ``*.parquet`` parts, read in sorted path order, or one
        file; ``columns`` names the two sides; their ``*_tok`` columns are read when every part has
        them) or a TSV file whose first two tab-separated fields are the two sentences; or several
        of them, each with an optional share (:func:`training_sources`), read one after another."""
        sources = training_sources(str(path))
        if len(sources) > 1 or sources[0][1] < 1.0:
            return cls.mixed(sources, columns)
        path = sources[0][0]
        files = parquet_parts(path)
        if files is None:
            return cls(lambda words: tsv_batches(path))
        import pyarrow.parquet as pq

        names = checked_columns(path, files, columns)
        siblings = SIBLING_KEY if all(SIBLING_KEY in pq.read_schema(file).names for file in files) else None
        return cls(lambda words: parquet_batches(files, names if words else names[:2], siblings))

    @classmethod
    def mixed(cls, sources: Sequence[tuple[Path, float]], columns: Sequence[str] = DEFAULT_COLUMNS) -> TrainingPairs:
        """The pairs of several sources, one after another, of each a seeded random ``share`` (the
        same pairs at every pass and every run: source k's draws come from a generator seeded with
        k, in its batches' order). Each source is read in bounded batches, as one source is."""
        parts = [(cls.from_path(path, columns), share) for path, share in sources]

        def read(words: bool) -> Iterator[PairBatch]:
            for number, (pairs, share) in enumerate(parts):
                yield from _shared(pairs.every_batch(words), share, number)

        mixed = cls(read)
        mixed.sources = [(path, share, pairs) for (path, share), (pairs, _) in zip(sources, parts, strict=True)]
        return mixed

    def make_up(self) -> list[dict]:
        """What a training set of several sources is made of: each source, its share and the
        pairs with two sides taken from it (one counting pass); [] for a single source."""
        return [{"source": str(path), "share": share,
                 "pairs": sum(len(two_sided_rows(batch)) for batch in _shared(pairs.every_batch(False), share, number))}
                for number, (path, share, pairs) in enumerate(getattr(self, "sources", []))]

    @classmethod
    def from_sentences(cls, sentences: tuple[Sequence[str], Sequence[str]],
                       words: tuple[Sequence[str], Sequence[str]] | None = None) -> TrainingPairs:
        """Pairs in memory (``words``: their ``*_tok`` strings, or None to tokenize)."""
        first, second = sentences
        if len(first) != len(second):
            raise InputError(f"need at least 2 sentence pairs with two sides, got {len(first)} and {len(second)}")

        def read(with_words: bool) -> Iterator[PairBatch]:
            for start in range(0, len(first), READ_BATCH_ROWS):
                rows = slice(start, start + READ_BATCH_ROWS)
                given = with_words and words is not None
                yield PairBatch((list(first[rows]), list(second[rows])), (list(words[0][rows]), list(words[1][rows])) if given else None)

        return cls(read)

    def batches(self, words: bool = True) -> Iterator[PairBatch]:
        """The pairs with two non-blank sides, a batch at a time (``words``: see ``every_batch``)."""
        for batch in self.every_batch(words):
            rows = two_sided_rows(batch)
            yield batch if len(rows) == len(batch.sides[0]) else batch.kept(rows)

    def count(self) -> tuple[int, int]:
        """(pairs kept: at least 2, or an InputError; pairs left out for an empty side), after a
        pass that says in the log how many were left out."""
        kept = total = 0
        for batch in self.every_batch(False):
            total += len(batch.sides[0])
            kept += len(two_sided_rows(batch))
        if kept < total:
            log.warning("%d of %d pairs have an empty side and are left out of training", total - kept, total)
        if kept < 2:
            raise InputError(f"need at least 2 sentence pairs with two sides, got {kept}")
        return kept, total - kept

    def sentences(self, words: bool) -> Iterator[tuple[list[str], list[str] | None]]:
        """Every kept pair's first side, then every second side (sentence ``j`` of ``P`` pairs is
        side 1 of pair ``j``, sentence ``P + j`` its side 2), with their words if ``words``: the
        training set's :data:`~models.featurizers.SentenceBatches`."""

        def side(k: int) -> Iterator[tuple[list[str], list[str] | None]]:
            for batch in self.batches(words):
                yield batch.sides[k], None if batch.words is None else batch.words[k]

        return chain(side(0), side(1))


def training_sources(spec: str) -> list[tuple[Path, float]]:
    """``--train-data``: comma-separated sources (a Parquet dataset or a TSV file), each written
    ``SHARE=path`` to take that share of its pairs (0 < SHARE ≤ 1; corpus.readers.named_file reads
    the item as the translations' NAME=file is read: a path that exists is a path)."""
    sources = []
    for item in comma_items(spec):
        share, path = named_file(item)
        try:
            value = float(share) if share else 1.0
        except ValueError:
            raise InputError(f"--train-data {item!r}: {share!r} before '=' is not a share (a number in (0, 1])") from None
        if not 0.0 < value <= 1.0:
            raise InputError(f"--train-data {item!r}: a share is in (0, 1], got {value}")
        sources.append((Path(path), value))
    if not sources:
        raise InputError("--train-data names no source")
    return sources


def negative_groups(pairs: TrainingPairs, by_text: bool) -> np.ndarray | None:
    """A group id for each kept pair (in training order) whose pairs are never each other's
    negatives while another candidate is left: the siblings of a source (pairs of one
    ``bitext_id``, several paraphrases of one sentence) always, and with ``by_text`` pairs joined
    by an identical sentence on either side (whitespace runs counted as one space) and so,
    transitively, their partners' pairs: the translations of one reference by many systems, with
    its second reference through a translation they share, or the captions of one image. None
    when neither applies (no two pairs of one ``bitext_id``, no ``by_text``). Keys are compared by a 64-bit BLAKE2b
    of their bytes (a collision joins two groups, harmlessly)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    def digest(kind: bytes, text: str) -> int:
        return int.from_bytes(hashlib.blake2b(kind + " ".join(text.split()).encode(), digest_size=8).digest(), "big")

    def sibling_keys() -> Iterator[int]:  # a pair of a source without bitext rows is a sibling of none
        for batch in pairs.batches(False):
            for key in batch.siblings or [None] * len(batch.sides[0]):
                yield digest(b"s", key) if key is not None else digest(b"u", str(next(unique)))

    unique = itertools.count()
    keys = np.fromiter(sibling_keys(), dtype=np.uint64)
    siblings = len(np.unique(keys)) < len(keys)
    if not by_text and not siblings:
        return None  # every pair its own source (a 1-best corpus): no group to keep apart
    count = len(keys)
    ends: list[np.ndarray] = []
    if by_text:
        texts = np.fromiter((digest(b"t", text) for side, _ in pairs.sentences(False) for text in side), dtype=np.uint64)
        ends += [texts[:count], texts[count:]]
    if siblings:
        ends += [keys] if by_text else [keys, keys]
    nodes, index = np.unique(np.concatenate(ends), return_inverse=True)
    ends_index = index.reshape(len(ends), count)
    sources = np.concatenate([ends_index[0]] * (len(ends) - 1))
    targets = np.concatenate(list(ends_index[1:]))
    edges = coo_matrix((np.ones(len(sources), dtype=np.int8), (sources, targets)), shape=(len(nodes), len(nodes)))
    _, component = connected_components(edges, directed=False)
    return component[ends_index[0]].astype(np.int64)


def _shared(batches: Iterator[PairBatch], share: float, number: int) -> Iterator[PairBatch]:
    """``share`` of the pairs of source ``number``'s batches, drawn as TrainingPairs.mixed says."""
    draws = np.random.default_rng([SHARE_SEED, number])
    for batch in batches:
        yield batch if share >= 1.0 else batch.kept(np.flatnonzero(draws.random(len(batch.sides[0])) < share).tolist())


def two_sided_rows(batch: PairBatch) -> list[int]:
    return [i for i, (one, other) in enumerate(zip(*batch.sides, strict=True)) if one.strip() and other.strip()]


def read_pairs(path: str | Path, columns: Sequence[str] = DEFAULT_COLUMNS) -> tuple[list[str], list[str]]:
    """Every pair of a file or dataset (as :meth:`TrainingPairs.from_path` reads it, blank sides
    included), in memory: for scoring a set of pairs, not for training on millions."""
    first, second = [], []
    for batch in TrainingPairs.from_path(path, columns).every_batch(False):
        first.extend(batch.sides[0])
        second.extend(batch.sides[1])
    return first, second


def parquet_parts(path: Path) -> list[Path] | None:
    """The Parquet files of a dataset directory (sorted paths, hidden and ``_`` files left out)
    or the one ``.parquet`` file; None when ``path`` is neither (a TSV file)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.parquet") if not p.name.startswith((".", "_")))
    return [path] if path.suffix == ".parquet" else None


def checked_columns(path: Path, files: list[Path], columns: Sequence[str]) -> list[str]:
    """The columns to read: the two sides, then their ``*_tok`` columns when every file has them."""
    import pyarrow.parquet as pq

    if not files:
        raise InputError(f"{path}: no Parquet files")
    schemas = [pq.read_schema(file).names for file in files]
    for file, names in zip(files, schemas, strict=True):
        if missing := [name for name in columns if name not in names]:
            raise InputError(f"{file}: no column {', '.join(missing)} (it has {', '.join(names)}); name the pair's two columns with --columns")
    words = [f"{column}_tok" for column in columns]
    return [*columns, *words] if all(set(words) <= set(names) for names in schemas) else list(columns)


def parquet_batches(files: list[Path], names: list[str], siblings: str | None = None) -> Iterator[PairBatch]:
    """Pairs of Parquet files: the ``names`` columns (two sides, then maybe their words) and the
    ``siblings`` column when given."""
    from corpus.outputs import streamed_parquet

    for file in files:
        with streamed_parquet(file) as parquet:
            for batch in parquet.iter_batches(READ_BATCH_ROWS, columns=names + ([siblings] if siblings else [])):
                texts = [["" if text is None else str(text) for text in batch.column(name).to_pylist()] for name in names]
                yield PairBatch((texts[0], texts[1]), (texts[2], texts[3]) if len(texts) == 4 else None,
                                batch.column(siblings).to_pylist() if siblings else None)


def tsv_batches(path: Path) -> Iterator[PairBatch]:
    """Pairs of a TSV file; a line that is not UTF-8 or has fewer than two fields is an InputError."""
    first, second = [], []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = without_line_end(raw).decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(f"{path}:{number}: not UTF-8 (byte {error.start} of the line)") from error
            parts = line.split("\t")
            if len(parts) < 2:
                raise InputError(f"{path}:{number}: expected two tab-separated sentences, got {len(parts)} field(s)")
            first.append(parts[0])
            second.append(parts[1])
            if len(first) == READ_BATCH_ROWS:
                yield PairBatch((first, second), None)
                first, second = [], []
    if first:
        yield PairBatch((first, second), None)
