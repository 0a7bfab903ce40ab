"""The bitext as fairseq's binary dataset (``data-bin``), written straight from sentencepiece ids.

``fairseq-preprocess`` reads the pieces back as text and looks each token up in Python: on the
98k pairs of csen-more it took about 24 s on 2 cores (1 min 55 s was reported on a 16-core GPU
machine, before 2 min 50 s of training). :func:`binarize_bitext` writes the same bytes on those
2 cores in about 2 s plus fairseq's import (3 s): each bitext shard is encoded to ids in its own
process and the ids are mapped to fairseq's dictionary with one array lookup. The text route
(:func:`export_pieces`, then :func:`preprocess_pieces`) is the reference it is held to, byte for
byte, by the tests and ``benchmarks/binarize.py``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from corpus.ids import id_hashes
from corpus.outputs import reading, streamed_parquet
from models.nmt import spm
from models.nmt.fairseq_train import SOURCE_LANG, TARGET_LANG, run_tool

LANGS = (SOURCE_LANG, TARGET_LANG)
# The bitext column of each side: fairseq's language names are the model's (cs, en) whatever the
# foreign side's language is.
COLUMNS = {SOURCE_LANG: "foreign", TARGET_LANG: "en"}
SPLITS = ("train", "valid")
# What becomes of a pair: its index in OUTCOMES (the first two are the splits).
OUTCOMES = (*SPLITS, "too_long", "empty")


def valid_cutoff(files: list[str], valid_size: int) -> tuple[int, np.uint64]:
    """The bitext's rows, and the id hash under which a pair is held out for validation: the
    lowest ``valid_size / rows`` of the hash range, at most a tenth (the same pairs on every run)."""
    rows = 0
    for path in files:
        with reading(path):
            rows += pq.ParquetFile(path).metadata.num_rows
    return rows, np.uint64(min(0.1, valid_size / max(rows, 1)) * 2.0**64)


def pair_outcomes(pair_ids: list[str], source_pieces: np.ndarray, target_pieces: np.ndarray,
                  cutoff: np.uint64, max_pieces: int) -> np.ndarray:
    """Each pair's index in ``OUTCOMES``: left out when a side has no piece or more than
    ``max_pieces`` (the model's positions), else validation when its id hash is under ``cutoff``."""
    outcomes = (id_hashes(pair_ids) < cutoff).astype(np.int8)
    outcomes[np.maximum(source_pieces, target_pieces) > max_pieces] = OUTCOMES.index("too_long")
    outcomes[np.minimum(source_pieces, target_pieces) == 0] = OUTCOMES.index("empty")
    return outcomes


def outcome_counts(outcomes: np.ndarray) -> dict[str, int]:
    return dict(zip(OUTCOMES, np.bincount(outcomes, minlength=len(OUTCOMES)).tolist(), strict=True))


def _require_training_pairs(counts: dict[str, int], rows: int) -> None:
    if not counts["train"]:
        raise ValueError(f"no training pairs left out of {rows} bitext rows: {counts}")


def export_pieces(
    bitext_files: Iterable[str],
    codec_source: spm.Codec,
    codec_target: spm.Codec,
    text_dir: Path,
    valid_size: int,
    max_pieces: int,
    batch_rows: int = 20_000,
) -> dict:
    """Write ``{train,valid}.{cs,en}``: sentencepiece pieces joined by spaces, one sentence a line
    (``fairseq-preprocess``'s input); returns how many pairs went where (``OUTCOMES``)."""
    files = list(bitext_files)
    rows, cutoff = valid_cutoff(files, valid_size)
    text_dir.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(OUTCOMES, 0)
    with ExitStack() as stack:
        handles = {
            (split, lang): stack.enter_context(open(text_dir / f"{split}.{lang}", "w", encoding="utf-8"))
            for split in SPLITS for lang in LANGS
        }
        for path in files:
            for batch in _batches(path, batch_rows, ["id", "foreign", "en"]):
                ids, cs, en = (batch.column(name).to_pylist() for name in ("id", "foreign", "en"))
                sources, targets = codec_source.encode(cs), codec_target.encode(en)
                outcomes = pair_outcomes(ids, _lengths(sources), _lengths(targets), cutoff, max_pieces)
                for outcome, src, tgt in zip(outcomes, sources, targets, strict=True):
                    if outcome < len(SPLITS):
                        handles[SPLITS[outcome], SOURCE_LANG].write(" ".join(src) + "\n")
                        handles[SPLITS[outcome], TARGET_LANG].write(" ".join(tgt) + "\n")
                for name, count in outcome_counts(outcomes).items():
                    counts[name] += count
    _require_training_pairs(counts, rows)
    return counts


def preprocess_pieces(text_dir: Path, source_dict: Path, target_dict: Path, dest_dir: Path, workers: int = 1) -> None:
    """``fairseq-preprocess`` the exported pieces with the given dictionaries into ``dest_dir``."""
    splits = ["--trainpref", str(text_dir / "train")]
    if (text_dir / f"valid.{SOURCE_LANG}").stat().st_size:
        splits += ["--validpref", str(text_dir / "valid")]
    run_tool(
        "preprocess",
        ["--source-lang", SOURCE_LANG, "--target-lang", TARGET_LANG,
         *splits, "--destdir", str(dest_dir), "--srcdict", str(source_dict), "--tgtdict", str(target_dict),
         "--workers", str(workers), "--dataset-impl", "mmap"],
    )


@dataclass(frozen=True)
class Vocabulary:
    """One language's sentencepiece model and the fairseq dictionary of its pieces."""

    processor: object  # sentencepiece.SentencePieceProcessor
    dictionary: object  # fairseq.data.Dictionary
    fairseq_ids: np.ndarray  # sentencepiece id → fairseq id
    spelled: np.ndarray  # ids fairseq must see as text: <unk> (whose text fairseq reads), pieces with whitespace

    @classmethod
    def of(cls, model: Path) -> Vocabulary:
        from fairseq.data import Dictionary
        from fairseq.tokenizer import tokenize_line

        text = "".join(line + "\n" for line in spm.fairseq_dictionary(model))
        dictionary = Dictionary.load(io.StringIO(text))
        processor = spm.load(model)
        pieces = [processor.id_to_piece(index) for index in range(processor.get_piece_size())]
        return cls(
            processor, dictionary,
            np.array([dictionary.index(piece) for piece in pieces], dtype=np.int64),
            np.array([processor.is_unknown(index) or tokenize_line(piece) != [piece] for index, piece in enumerate(pieces)]),
        )

    def encode(self, texts: list[str], threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fairseq token ids of ``texts`` (each sentence followed by ``</s>``), concatenated; each
        sentence's token count; each sentence's sentencepiece piece count.

        The ids are those ``fairseq-preprocess`` gives the pieces joined by spaces: a sentence
        holding a spelled id is joined and read by fairseq's own ``encode_line``.
        """
        encoded = self.processor.encode(texts, num_threads=threads)
        pieces = _lengths(encoded)
        flat = np.fromiter(chain.from_iterable(encoded), dtype=np.int64, count=int(pieces.sum()))
        tokens = np.insert(self.fairseq_ids[flat], np.cumsum(pieces), self.dictionary.eos())
        sizes = pieces + 1
        spelled_rows = np.unique(np.repeat(np.arange(len(texts)), pieces)[self.spelled[flat]])
        if spelled_rows.size:
            starts, parts, done = np.cumsum(sizes) - sizes, [], 0
            for row in spelled_rows.tolist():
                line = " ".join(self.processor.encode(texts[row], out_type=str))
                read = self.dictionary.encode_line(line, add_if_not_exist=False).numpy()
                parts += [tokens[done:starts[row]], read]
                done = starts[row] + sizes[row]
                sizes[row] = len(read)
            tokens = np.concatenate([*parts, tokens[done:]])
        return tokens, sizes, pieces


def _batches(path: str, batch_rows: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """A bitext shard's record batches; a damaged shard is one line naming it (DamagedOutput)."""
    with reading(path):
        yield from streamed_parquet(path).iter_batches(batch_size=batch_rows, columns=columns)


def _lengths(encoded: list[list]) -> np.ndarray:
    return np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))


def _encode_shard(path: str, vocabularies: dict[str, Vocabulary], dtypes: dict[str, type], cutoff: np.uint64,
                  max_pieces: int, threads: int, batch_rows: int = 50_000) -> tuple[dict, dict[str, int]]:
    """One bitext shard's tokens and sizes by (split, language), in row order, and its counts."""
    found = {(split, lang): ([np.empty(0, dtypes[lang])], [np.empty(0, np.int32)]) for split in SPLITS for lang in LANGS}
    outcomes = [np.empty(0, np.int8)]  # an empty shard has no batch
    for batch in _batches(path, batch_rows, ["id", *COLUMNS.values()]):
        encoded = {lang: vocabularies[lang].encode(batch.column(COLUMNS[lang]).to_pylist(), threads) for lang in LANGS}
        outcomes.append(pair_outcomes(batch.column("id").to_pylist(), encoded[SOURCE_LANG][2], encoded[TARGET_LANG][2],
                                      cutoff, max_pieces))
        for index, split in enumerate(SPLITS):
            kept = outcomes[-1] == index
            for lang, (tokens, sizes, _) in encoded.items():
                found[split, lang][0].append(tokens[np.repeat(kept, sizes)].astype(dtypes[lang]))
                found[split, lang][1].append(sizes[kept].astype(np.int32))
    joined = {key: (np.concatenate(tokens), np.concatenate(sizes)) for key, (tokens, sizes) in found.items()}
    return joined, outcome_counts(np.concatenate(outcomes))


def binarize_bitext(bitext_files: Iterable[str], models: dict[str, Path], dest_dir: Path, valid_size: int,
                    max_pieces: int, workers: int = 1) -> dict[str, int]:
    """Write ``dest_dir`` as ``fairseq-preprocess`` writes it from :func:`export_pieces`' text:
    ``dict.{cs,en}.txt`` and ``{train,valid}.cs-en.{cs,en}.{bin,idx}`` (no valid files when no pair
    is held out). ``models``: the sentencepiece model of each language. Shards are encoded by up
    to ``workers`` processes, one shard each, and written in the order given. Returns how many
    pairs went where (``OUTCOMES``)."""
    from fairseq.data import indexed_dataset

    files = list(bitext_files)
    rows, cutoff = valid_cutoff(files, valid_size)
    by_model = {model: Vocabulary.of(model) for model in set(models.values())}
    vocabularies = {lang: by_model[models[lang]] for lang in LANGS}
    dest_dir.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        vocabularies[lang].dictionary.save(str(dest_dir / f"dict.{lang}.txt"))
    dtypes = {lang: indexed_dataset.best_fitting_int_dtype(len(vocabularies[lang].dictionary)) for lang in LANGS}
    processes = max(1, min(workers, len(files)))
    threads = max(1, (os.cpu_count() or 1) // processes)
    counts = dict.fromkeys(OUTCOMES, 0)
    sizes = {(split, lang): [] for split in SPLITS for lang in LANGS}
    prefix = {(split, lang): dest_dir / f"{split}.{SOURCE_LANG}-{TARGET_LANG}.{lang}" for split, lang in sizes}
    with ExitStack() as stack:
        data = {key: stack.enter_context(open(indexed_dataset.data_file_path(str(path)), "wb")) for key, path in prefix.items()}
        pool = stack.enter_context(ProcessPoolExecutor(processes)) if processes > 1 else None
        encode = partial(_encode_shard, vocabularies=vocabularies, dtypes=dtypes, cutoff=cutoff, max_pieces=max_pieces,
                         threads=threads)
        for shard, shard_counts in (pool.map if pool else map)(encode, files):
            for key, (tokens, shard_sizes) in shard.items():
                data[key].write(tokens.tobytes())
                sizes[key].append(shard_sizes)
            for name, count in shard_counts.items():
                counts[name] += count
    _require_training_pairs(counts, rows)
    for (split, lang), path in prefix.items():
        if not counts[split]:
            os.remove(indexed_dataset.data_file_path(str(path)))
            continue
        # Python ints: fairseq sums them into 64-bit byte offsets.
        with indexed_dataset.MMapIndexedDataset.Index.writer(indexed_dataset.index_file_path(str(path)), dtypes[lang]) as index:
            index.write(np.concatenate(sizes[split, lang]).tolist())
    return counts
