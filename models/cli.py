"""``paranmt-encode``: embed sentences, score sentence pairs, export a trained encoder.

    paranmt-encode embed   --model DIR --input sentences.txt --output emb.npy
    paranmt-encode score   --model DIR --input pairs.tsv     --output scores.txt
    paranmt-encode vectors --model DIR --output vectors.txt
    paranmt-encode export  --model DIR --sentence-transformers OUT

Input files are UTF-8, one sentence (``embed``) or one tab-separated pair (``score``) a line;
lines are split on "\\n" only. ``vectors`` writes a Word Avg model's word embeddings in
word2vec text format, the input of PP-similarity scoring. ``export`` writes any encoder as a
sentence-transformers model (``SentenceTransformer(OUT, trust_remote_code=True)``; needs the
``interop`` extra). A missing or malformed model or input file is reported in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from corpus.errors import InputError


def _lines(path: str) -> list[str]:
    text = Path(path).read_text(encoding="utf-8")
    return text.removesuffix("\n").split("\n") if text else []


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paranmt-encode", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("embed", "embed sentences (one a line) into a float32 .npy matrix"),
        ("score", "cosine similarity of tab-separated sentence pairs, one score a line"),
        ("vectors", "write a word_avg model's word vectors (word2vec text format)"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--model", required=True, help="trained encoder directory")
        if name != "vectors":
            command.add_argument("--input", required=True)
            command.add_argument("--batch-size", type=int, default=256)
        command.add_argument("--output", required=True)
        command.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when available)")
    export = commands.add_parser("export", help="save an encoder as a sentence-transformers model directory")
    export.add_argument("--model", required=True, help="trained encoder directory")
    export.add_argument("--sentence-transformers", required=True, metavar="OUT",
                        help="new directory to write (or a previous export to replace)")
    return parser


def export(model: str, output: str) -> None:
    try:
        from models.sentence_transformers_export import export_sentence_transformer
    except ImportError as error:
        raise InputError(f"export needs sentence-transformers ({error}): pip install -e '.[interop]'") from error
    dim = export_sentence_transformer(model, output).get_embedding_dimension()
    print(f"{model} → {output} (sentence-transformers, {dim} dims)", file=sys.stderr)


def run(args: argparse.Namespace) -> None:
    if args.command == "export":
        export(args.model, args.sentence_transformers)
        return
    from models.encode import load_encoder, save_word_vectors
    from models.trainer import read_pairs

    encoder = load_encoder(args.model, args.device)
    if args.command == "embed":
        vectors = encoder.encode(_lines(args.input), args.batch_size)
        np.save(args.output, vectors)
        print(f"{len(vectors)} sentences → {args.output} ({vectors.shape[1]} dims)", file=sys.stderr)
    elif args.command == "score":
        scores = encoder.score(*read_pairs(args.input), batch_size=args.batch_size)
        np.savetxt(args.output, scores, fmt="%.6f")
        print(f"{len(scores)} pairs → {args.output}", file=sys.stderr)
    else:
        words, vectors = encoder.word_vectors()
        save_word_vectors(words, vectors, args.output)
        print(f"{len(words) - 2} word vectors → {args.output}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run one command; a missing model or input, or a wrong model kind, is one line on stderr."""
    args = parser().parse_args(argv)
    try:
        run(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"paranmt-encode {args.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
