"""Sentencepiece vocabularies for the NMT model: training on bitext columns, and encoding/decoding.

The model works on raw (untokenized) text: sentencepiece pieces are the fairseq tokens, and
decoding the pieces gives detokenized text directly, so no Moses detokenizer is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm

from corpus.outputs import reading, streamed_parquet
from models.sentencepiece_training import train_sentencepiece


@dataclass(frozen=True)
class SpmConfig:
    """Training settings; the defaults suit a real NMT corpus (joint unigram, 32k pieces)."""

    vocab_size: int = 32_000
    model_type: str = "unigram"
    character_coverage: float = 0.9999
    # Sample this many sentences (uniformly, seeded) from large corpora.
    input_sentence_size: int = 2_000_000
    seed: int = 1


def train(sentences: Iterable[str], model_path: Path, config: SpmConfig) -> int:
    """Train a sentencepiece model on ``sentences`` and write it to ``model_path``.

    The vocabulary size is a soft limit (``hard_vocab_limit=False``): a small corpus gets as many
    pieces as it supports instead of failing. Returns the trained vocabulary size.
    """
    # fairseq adds its own <s>, <pad>, </s>, <unk>; pieces map 1:1 to dictionary entries.
    model = train_sentencepiece(
        sentences, config.seed, vocab_size=config.vocab_size, model_type=config.model_type, character_coverage=config.character_coverage,
        input_sentence_size=config.input_sentence_size, unk_id=0, max_sentence_length=16_384,
    )
    model_path.write_bytes(model)
    return load(model_path).get_piece_size()


def load(model_path: str | Path) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(model_path))


def fairseq_dictionary(model_path: str | Path) -> Iterator[str]:
    """Lines of a fairseq dictionary holding every piece of the model (not <unk>, fairseq has its own)."""
    processor = load(model_path)
    for index in range(processor.get_piece_size()):
        if not processor.is_unknown(index) and not processor.is_control(index):
            yield f"{processor.id_to_piece(index)} 1"


class Codec:
    """Batched piece encoding of source text and decoding of target pieces."""

    def __init__(self, source_model: str | Path, target_model: str | Path | None = None):
        self.source = load(source_model)
        self.target = load(target_model) if target_model else self.source

    def encode(self, texts: list[str]) -> list[list[str]]:
        return self.source.encode(texts, out_type=str)

    def encode_target(self, texts: list[str]) -> list[list[str]]:
        return self.target.encode(texts, out_type=str)

    def decode(self, pieces: list[list[str]]) -> list[str]:
        return self.target.decode(pieces)


def bitext_column(files: Iterable[str], column: str, batch_rows: int = 50_000) -> Iterator[str]:
    """Stream one text column of bitext Parquet files."""
    for path in files:
        with reading(path):
            for batch in streamed_parquet(path).iter_batches(batch_size=batch_rows, columns=[column]):
                yield from batch.column(0).to_pylist()


def train_from_bitext(files: list[str], output_dir: Path, config: SpmConfig, joint: bool) -> dict[str, Path]:
    """Train the vocabulary of the Czech and English columns: one joint model, or one per language.

    Returns the model path of each language (the same path twice for a joint model).
    """
    if joint:
        path = output_dir / "spm.model"
        train((s for column in ("foreign", "en") for s in bitext_column(files, column)), path, config)
        return {"cs": path, "en": path}
    paths = {lang: output_dir / f"spm.{lang}.model" for lang in ("cs", "en")}
    for lang, path in paths.items():
        train(bitext_column(files, "foreign" if lang == "cs" else lang), path, config)
    return paths
