"""Readers for pretrained word vectors (word2vec/GloVe text format) and word-count files.

Vector files are read in chunks of lines; each chunk's numbers are parsed in one call
(Arrow's CSV parser, np.loadtxt where it refuses a value), so a 400k x 300 file loads in
seconds without holding its text in memory.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from corpus.cache import cache_root, store

_CHUNK_LINES = 50_000
_SHOWN_BAD_LINES = 5


def _data_lines(lines: Iterator[str], first_number: int) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without trailing whitespace), blank lines dropped."""
    for number, line in enumerate(lines, start=first_number):
        stripped = line.rstrip()
        if stripped:
            yield number, stripped


def _header(line: str) -> tuple[int, int] | None:
    """The word2vec header "N D", or None when the first line is already a vector."""
    fields = line.split()
    if len(fields) == 2 and all(field.isdigit() for field in fields):
        return int(fields[0]), int(fields[1])
    return None


def _problem(numbers: str, dim: int) -> str | None:
    """Why the text after the word is not `dim` numbers (None when it is)."""
    fields = numbers.split(" ") if numbers else []
    if len(fields) != dim:
        return f"{len(fields)} numbers"
    try:
        [float(field) for field in fields]
    except ValueError:
        return "not a number"
    return None


def _parse_chunk(
    path: Path, chunk: list[tuple[int, str]], dim: int
) -> tuple[list[str], np.ndarray]:
    """Words and a float32 (len(chunk), dim) matrix; malformed lines raise ValueError.

    The vector is the last `dim` space-separated fields, so words that contain spaces (they
    occur in GloVe 840B) keep their spaces.
    """
    words, numbers = [], []
    for _, line in chunk:
        spaces = line.count(" ")
        cut = line.find(" ") if 0 < spaces <= dim else len(line.rsplit(" ", dim)[0])
        words.append(line[:cut])
        numbers.append(line[cut + 1 :])
    matrix = _parsed_by_arrow(numbers, dim)
    if matrix is None:
        try:
            matrix = np.loadtxt(
                numbers, dtype=np.float32, delimiter=" ", comments=None, quotechar=None, ndmin=2
            )
        except ValueError:
            matrix = None
    if matrix is not None and matrix.shape == (len(words), dim):
        return words, matrix
    # Error path only: check each line so the message names every bad one in this chunk.
    bad = [
        f"line {number}: {why}"
        for (number, _), text in zip(chunk, numbers, strict=True)
        if (why := _problem(text, dim))
    ]
    raise ValueError(
        f"{path}: {len(bad)} malformed line(s) among lines {chunk[0][0]}-{chunk[-1][0]} "
        f"(expected a word and {dim} numbers): {'; '.join(bad[:_SHOWN_BAD_LINES])}"
    )


def _parsed_by_arrow(numbers: list[str], dim: int) -> np.ndarray | None:
    """The chunk's numbers by Arrow's CSV parser (2x np.loadtxt, and the scorers load the vectors
    in every worker): the same float32 values, and the same refusals (``NA``, empty fields,
    ``1_0``); None when a line has not ``dim`` fields or a field is refused."""
    if not all(text.count(" ") == dim - 1 for text in numbers):
        return None
    names = [str(i) for i in range(dim)]
    try:
        table = pa_csv.read_csv(
            io.BytesIO("\n".join(numbers).encode("utf-8")),
            read_options=pa_csv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64()), null_values=[], strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        return None
    return np.column_stack([column.to_numpy() for column in table.columns]).astype(np.float32)


def load_vectors(path: str | Path, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """Read a word2vec/GloVe text file into (words, float32 matrix of shape (n, dim)).

    The optional word2vec header "N D" is detected; its D fixes the dimension and a wrong N
    only warns. `limit`
    keeps only the first `limit` vectors (files are sorted by frequency). A word seen twice
    keeps its first vector. Malformed lines (too few fields, non-numeric values) raise a
    ValueError naming the file, how many lines are bad and their line numbers: a vector file
    with broken lines is corrupt, and silently dropping words would change every model built
    on it. Binary word2vec files are not supported.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        lines = _data_lines(handle, first_number=1)
        first = next(lines, None)
        if first is None:
            raise ValueError(f"{path}: no vectors (empty file)")
        header = _header(first[1])
        if header is None:
            lines = itertools.chain([first], lines)
            dim = first[1].count(" ")
        else:
            dim = header[1]
        if limit is not None:
            lines = itertools.islice(lines, limit)
        words: list[str] = []
        blocks: list[np.ndarray] = []
        while chunk := list(itertools.islice(lines, _CHUNK_LINES)):
            chunk_words, matrix = _parse_chunk(path, chunk, dim)
            words.extend(chunk_words)
            blocks.append(matrix)
    if not words:
        raise ValueError(f"{path}: no vectors after the header")
    if header is not None and limit is None and len(words) != header[0]:
        # Real files get this wrong (glove50_4k.txt announces 4196 and holds 4197): keep all.
        warnings.warn(
            f"{path}: header announces {header[0]} vectors, file has {len(words)}; all kept",
            stacklevel=2,
        )
    vectors = np.concatenate(blocks)
    first_index: dict[str, int] = {}
    for index, word in enumerate(words):
        first_index.setdefault(word, index)
    if len(first_index) < len(words):
        keep = np.fromiter(first_index.values(), dtype=np.int64)
        return [words[index] for index in keep], vectors[keep]
    return words, vectors


def load_vectors_cached(path: str | Path) -> tuple[list[str], np.ndarray]:
    """``load_vectors(path)`` through the per-machine cache (``corpus.cache``): parsed once, then
    read back in milliseconds (the vectors memory-mapped, so a machine's workers share one copy)
    by every scoring worker. The entry is keyed by the file's absolute path, size and
    modification time: a changed file is parsed again."""
    path = Path(path).resolve()
    status = path.stat()
    key = hashlib.sha256(f"{path}\0{status.st_size}\0{status.st_mtime_ns}".encode()).hexdigest()[:32]
    words_path, vectors_path = cache_root() / "vectors" / f"{key}.words", cache_root() / "vectors" / f"{key}.npy"
    try:
        vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
        words = words_path.read_bytes().decode("utf-8").split("\n")
        if len(words) == len(vectors) and vectors.dtype == np.float32 and vectors.ndim == 2:
            return words, vectors
    except (OSError, ValueError):
        pass
    words, vectors = load_vectors(path)
    # the words first: a reader that finds the vectors finds their words (a word has no line break)
    store(words_path, lambda handle: handle.write("\n".join(words).encode("utf-8")))
    store(vectors_path, lambda handle: np.save(handle, vectors, allow_pickle=False))
    return words, vectors


def load_word_counts(path: str | Path) -> dict[str, int]:
    """Read `word count` lines (e.g. enwiki_vocab_min200.txt) into a dict.

    Counts of a word listed twice are added. A line that is not a word followed by an integer
    raises a ValueError with its line number, because a wrong count silently changes every
    SIF weight.
    """
    path = Path(path)
    counts: dict[str, int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in _data_lines(handle, first_number=1):
            fields = line.rsplit(maxsplit=1)
            if len(fields) != 2 or not fields[1].isdigit():
                raise ValueError(f"{path}: line {number} is not `word count`: {line[:80]!r}")
            counts[fields[0]] = counts.get(fields[0], 0) + int(fields[1])
    return counts
