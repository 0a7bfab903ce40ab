"""Sentences → integer ids: lowercased Moses words, character trigrams, sentencepiece pieces.

Every featurizer shares one id convention: 0 is padding, 1 is the unknown symbol, so a
model can pad any feature the same way. A featurizer is fitted on the training sentences
(its vocabulary is data, saved beside the model weights) and turns a list of sentences into
one :class:`~models.ragged.Ragged` array, the CSR layout ``EmbeddingBag`` consumes directly. Sentences may come
with their ``words``: the ``*_tok`` strings of a corpus (lowercased Moses tokens joined by one
space, ``corpus.text.english_tokens``), made once when the corpus was built; the word
featurizer then splits them instead of tokenizing again. A sentence with
no feature at all (an empty string) gets a single unknown id, so every row is non-empty and
recurrent models never see a zero length.

Trigrams and pieces are featurized for all sentences at once, without a Python step per
trigram or piece: trigrams are numbered by their code points and looked up in one hash table
(5.8x faster than a dict lookup per trigram string: docs/2026-11-26-encoding-speed.md).

A training set is fitted and featurized from :data:`SentenceBatches`, a batch of sentences at a
time, and held as int32 ids: millions of sentences held as Python strings and lists took about
1.5 kB each (docs/2026-11-27-training-memory.md). Words and trigrams are fitted in one pass
(:class:`FirstSeen`); pieces in two (training sentencepiece, then encoding).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import ClassVar

import numpy as np

from corpus.text import tokenize
from models.ragged import IdRows, Ragged, RaggedSpool
from models.sentencepiece_training import train_sentencepiece
from models.vocabulary import PAD, UNK, Vocabulary

# Sentences the pieces are trained on (a seeded sample of larger training sets): sentencepiece's
# unigram trainer holds about 2 kB per sentence it samples (peak 2.14 GiB at 1M), and on the 250k
# reference pairs a sample of 100k of their 500k sentences gives the same STS (±0.3) as all of
# them (docs/2026-11-28-paper-size-end-to-end.md): so the trainer's memory does not grow with the
# training set.
PIECE_SAMPLE_SENTENCES = 100_000
# Sentences a batch at a time, called once per pass with whether the pass reads their corpus
# words (a featurizer's ``reads_words``); each batch comes with its words, or None.
SentenceBatches = Callable[[bool], Iterable[tuple[Sequence[str], Sequence[str] | None]]]


def one_batch(sentences: Sequence[str], words: Sequence[str] | None = None) -> SentenceBatches:
    """Sentences in memory as :data:`SentenceBatches`."""
    return lambda with_words: [(sentences, words if with_words else None)]


REMAP_ROWS = 1 << 20  # provisional rows remapped to the vocabulary's ids at a time (FirstSeen.rows)


class FirstSeen:
    """One pass of a fit: each distinct symbol (a word, a trigram's code) gets a provisional id
    in order of first appearance and a count; the rows are spooled as those ids (to
    ``<path>.provisional`` with a ``path``) and mapped to the vocabulary's once it is known
    (:meth:`rows`), so the sentences are read once."""

    EMPTY = -1  # an empty row's provisional id: it becomes UNK

    def __init__(self, path: Path | None = None):
        self.path = path
        self.index: dict = {}
        self.counts = np.zeros(0, dtype=np.int64)
        self._provisional = RaggedSpool(None if path is None else path.with_name(f"{path.name}.provisional"))

    def add(self, symbols: Sequence | np.ndarray, lengths: np.ndarray) -> None:
        """A batch of rows: their symbols, concatenated, and each row's number of them."""
        import pandas as pd

        positions, distinct = pd.factorize(np.asarray(symbols, dtype=object if isinstance(symbols, list) else None))
        index = self.index
        ids = np.fromiter((index.setdefault(symbol, len(index)) for symbol in distinct.tolist()), dtype=np.int32, count=len(distinct))
        values = ids[positions]
        counts = np.bincount(values, minlength=len(index))
        counts[: len(self.counts)] += self.counts
        self.counts = counts
        self._provisional.add(Ragged.from_lengths(values, np.asarray(lengths, dtype=np.int64), empty=self.EMPTY))

    def symbols(self) -> list:
        """The symbols in provisional id order."""
        return list(self.index)

    def rows(self, final_ids: np.ndarray) -> IdRows:
        """Every row added, each provisional id replaced by ``final_ids[id]``, spooled to
        ``path`` a chunk at a time; the provisional rows are let go."""
        provisional = self._provisional.finished()
        lookup = np.append(final_ids.astype(np.int32, copy=False), np.int32(UNK))  # EMPTY (-1) reads the last: UNK
        spool = RaggedSpool(self.path)
        for start in range(0, len(provisional), REMAP_ROWS):
            chunk = provisional.between(start, min(start + REMAP_ROWS, len(provisional)))
            spool.add(Ragged(lookup[chunk.values], chunk.offsets))
        if self.path is not None:
            for suffix in (".values", ".offsets"):
                Path(f"{self._provisional.path}{suffix}").unlink()
        return spool.finished()



TRIGRAM_BITS = 21  # a code point needs 21 bits: a trigram's three fit in one uint64


def trigram_codes(sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(codes, counts): every character trigram of every sentence, in order, as one uint64 of
    its three code points (so codes sort as the trigram strings do), and each sentence's count.

    A sentence's trigrams are every 3-character window of ``" " + text + " "``, ``text`` the
    sentence lowercased with runs of whitespace collapsed to one space (tabs and double spaces
    make no distinct trigrams): ``len(text)`` of them. All padded texts are read as one array of
    code points; the two windows across each boundary are skipped."""
    texts = list(map(" ".join, map(str.split, map(str.lower, sentences))))
    counts = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    points = code_points(f" {'  '.join(texts)} ")
    windows = packed(points[:-2], points[1:-1], points[2:])
    return windows[np.arange(counts.sum()) + 2 * np.repeat(np.arange(len(texts)), counts)], counts


def code_points(text: str) -> np.ndarray:
    """uint64 code points of ``text`` (a lone surrogate is one too, as in a Python string)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)


def packed(first: np.ndarray, second: np.ndarray, third: np.ndarray) -> np.ndarray:
    """Trigram codes of their three code points."""
    return first << 2 * TRIGRAM_BITS | second << TRIGRAM_BITS | third


def trigram_strings(codes: np.ndarray) -> list[str]:
    """The trigrams of ``trigram_codes``' codes."""
    mask = np.uint64((1 << TRIGRAM_BITS) - 1)
    points = np.stack([codes >> 2 * TRIGRAM_BITS, codes >> TRIGRAM_BITS & mask, codes & mask], axis=1).astype(np.uint32)
    text = points.tobytes().decode("utf-32-le", "surrogatepass")
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def words(sentence: str) -> list[str]:
    return tokenize(sentence, "en", lowercase=True)


class Featurizer:
    """Fitted mapping from sentences to id rows through a :class:`Vocabulary` of symbols."""

    kind: ClassVar[str]
    reads_words: ClassVar[bool] = False  # whether ``featurize`` reads a corpus's words

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary

    def __len__(self) -> int:
        return len(self.vocabulary)

    def save(self, directory: Path) -> None:
        self.vocabulary.save(directory / f"{self.kind}.vocab")

    @classmethod
    def load(cls, directory: Path):
        return cls(Vocabulary.load(directory / f"{cls.kind}.vocab"))


class WordFeaturizer(Featurizer):
    """Lowercased Moses tokens (the paper's words)."""

    kind = "words"
    reads_words = True
    symbols = staticmethod(words)

    @classmethod
    def symbol_rows(cls, sentences: Sequence[str], words: Sequence[str] | None = None) -> list[list[str]]:
        """The words of every sentence (``words``: see the module docstring)."""
        if words is None:
            return [cls.symbols(s) for s in sentences]
        if len(words) != len(sentences):
            raise ValueError(f"{len(sentences)} sentences but {len(words)} token strings")
        return [joined.split(" ") if joined else [] for joined in words]

    def featurize(self, sentences: Sequence[str], words: Sequence[str] | None = None) -> Ragged:
        ids = self.vocabulary.ids
        return Ragged.from_rows([ids(row) for row in self.symbol_rows(sentences, words)])

    @classmethod
    def fit_transform(
        cls, sentences: Sequence[str], min_count: int = 1, max_size: int | None = None, extra: Iterable[str] = (), words: Sequence[str] | None = None
    ) -> tuple[WordFeaturizer, Ragged]:
        """:meth:`fit_batches` of sentences in memory."""
        return cls.fit_batches(one_batch(sentences, words), min_count, max_size, extra)

    @classmethod
    def fit_batches(
        cls, batches: SentenceBatches, min_count: int = 1, max_size: int | None = None, extra: Iterable[str] = (), store: Path | None = None
    ) -> tuple[WordFeaturizer, IdRows]:
        """Fit the vocabulary and featurize the same sentences (int32 ids, spooled to ``store``:
        :class:`RaggedSpool`), splitting each once."""
        seen = FirstSeen(store)
        for sentences, words in batches(cls.reads_words):
            symbol_rows = cls.symbol_rows(sentences, words)
            seen.add(list(chain.from_iterable(symbol_rows)), np.fromiter(map(len, symbol_rows), dtype=np.int64, count=len(symbol_rows)))
        symbols = seen.symbols()
        featurizer = cls(Vocabulary.build(Counter(dict(zip(symbols, seen.counts.tolist(), strict=True))), min_count, max_size, extra))
        get = featurizer.vocabulary.index.get
        return featurizer, seen.rows(np.fromiter((get(symbol, UNK) for symbol in symbols), dtype=np.int32, count=len(symbols)))


class TrigramFeaturizer(Featurizer):
    """Character trigrams (Trigram Avg), for all sentences at once (:func:`trigram_codes`)."""

    kind = "trigrams"

    def __init__(self, vocabulary: Vocabulary):
        super().__init__(vocabulary)
        import pandas as pd

        trigrams = [symbol for symbol in vocabulary.index if len(symbol) == 3]
        points = code_points("".join(trigrams)).reshape(-1, 3)
        # A pandas index hashes the codes once; position -1 (absent) reads the last id, UNK.
        self._codes = pd.Index(packed(points[:, 0], points[:, 1], points[:, 2]))
        self._ids = np.array([vocabulary.index[t] for t in trigrams] + [UNK], dtype=np.int64)

    def featurize(self, sentences: Sequence[str], words: Sequence[str] | None = None) -> Ragged:
        """Trigram ids of the sentences (``words`` are not read)."""
        codes, counts = trigram_codes(sentences)
        return Ragged.from_lengths(self._ids[self._codes.get_indexer(codes)], counts)

    @classmethod
    def fit_transform(
        cls, sentences: Sequence[str], min_count: int = 1, max_size: int | None = None, extra: Iterable[str] = (), words: Sequence[str] | None = None
    ) -> tuple[TrigramFeaturizer, Ragged]:
        """:meth:`fit_batches` of sentences in memory."""
        return cls.fit_batches(one_batch(sentences, words), min_count, max_size, extra)

    @classmethod
    def fit_batches(
        cls, batches: SentenceBatches, min_count: int = 1, max_size: int | None = None, extra: Iterable[str] = (), store: Path | None = None
    ) -> tuple[TrigramFeaturizer, IdRows]:
        """Fit the vocabulary as :meth:`Vocabulary.build` does (codes sort as their trigrams) and
        featurize the same sentences (int32 ids, spooled to ``store``) in the same pass."""
        seen = FirstSeen(store)
        for sentences, _ in batches(cls.reads_words):
            seen.add(*trigram_codes(sentences))
        codes = np.fromiter(seen.index, dtype=np.uint64, count=len(seen.index))
        kept = seen.counts >= min_count
        trigrams, frequency = codes[kept], seen.counts[kept]
        featurizer = cls(Vocabulary.from_ranked(trigram_strings(trigrams[np.lexsort((trigrams, -frequency))]), max_size, extra))
        return featurizer, seen.rows(featurizer._ids[featurizer._codes.get_indexer(codes)])


class PieceFeaturizer:
    """Unigram sentencepiece pieces of the lowercased sentence (the authors' 2021 setup).

    The sentencepiece model itself is the vocabulary; it is trained with pad = 0, unk = 1 and
    no BOS/EOS so its ids follow the shared convention.
    """

    kind = "pieces"
    reads_words = False

    def __init__(self, model_proto: bytes):
        import sentencepiece as spm

        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)

    def __len__(self) -> int:
        return self.processor.get_piece_size()

    def featurize(self, sentences: Sequence[str], words: Sequence[str] | None = None) -> Ragged:
        """Pieces of the sentences as written (``words`` are not read), on as many threads as
        torch computes with (sentencepiece's default is every core of the machine)."""
        import torch

        rows = self.processor.encode(list(map(str.lower, sentences)), num_threads=torch.get_num_threads())
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        return Ragged.from_lengths(np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum())), lengths)

    def pieces(self, sentence: str) -> list[str]:
        return self.processor.encode(sentence.lower(), out_type=str)

    @classmethod
    def fit_transform(cls, sentences: Sequence[str], vocab_size: int = 50_000, seed: int = 1) -> tuple[PieceFeaturizer, Ragged]:
        """:meth:`fit_batches` of sentences in memory."""
        return cls.fit_batches(one_batch(sentences), vocab_size, seed)

    @classmethod
    def fit_batches(cls, batches: SentenceBatches, vocab_size: int = 50_000, seed: int = 1,
                    store: Path | None = None) -> tuple[PieceFeaturizer, IdRows]:
        """Train the pieces on a sample of the non-blank sentences (one pass), then featurize them
        all (another; int32 ids spooled to ``store``)."""
        lowered = (sentence.lower() for sentences, _ in batches(cls.reads_words) for sentence in sentences if sentence.strip())
        featurizer = cls(train_sentencepiece(lowered, seed, model_type="unigram", vocab_size=vocab_size, pad_id=PAD, unk_id=UNK,
                                             character_coverage=1.0, input_sentence_size=PIECE_SAMPLE_SENTENCES))
        return featurizer, featurize_batches(featurizer, batches, store)

    def save(self, directory: Path) -> None:
        (directory / "pieces.model").write_bytes(self.model_proto)

    @classmethod
    def load(cls, directory: Path) -> PieceFeaturizer:
        return cls((directory / "pieces.model").read_bytes())


def hide_broken_torchaudio() -> None:
    """Keep transformers from importing a torchaudio that cannot load.

    fairseq-fixed pulls in PyPI's torchaudio, a CUDA build that fails to load beside a CPU torch;
    transformers imports it whenever it is installed, so ``import sentence_transformers`` would
    fail. A ``None`` entry in ``sys.modules`` is Python's mark for "not importable": transformers
    then runs without audio support. A torchaudio that does load is left alone."""
    try:
        import torchaudio  # noqa: F401
    except (ImportError, OSError):
        sys.modules["torchaudio"] = None


FEATURIZERS = {cls.kind: cls for cls in (WordFeaturizer, TrigramFeaturizer, PieceFeaturizer)}


def featurize(featurizers: dict[str, Featurizer | PieceFeaturizer], sentences: Sequence[str],
              words: Sequence[str] | None = None) -> dict[str, Ragged]:
    """Every feature a model reads, for the same sentences (keyed by feature name)."""
    return {feature: featurizer.featurize(sentences, words) for feature, featurizer in featurizers.items()}


def featurize_batches(featurizer: Featurizer | PieceFeaturizer, batches: SentenceBatches, store: Path | None = None) -> IdRows:
    """Every batch's sentences featurized, in order, as int32 ids (spooled to ``store``:
    :class:`RaggedSpool`)."""
    spool = RaggedSpool(store)
    for sentences, words in batches(featurizer.reads_words):
        spool.add(featurizer.featurize(sentences, words))
    return spool.finished()


def take(inputs: dict[str, IdRows], rows: np.ndarray) -> dict[str, Ragged]:
    """The same rows of every feature."""
    return {feature: ragged.take(rows) for feature, ragged in inputs.items()}
