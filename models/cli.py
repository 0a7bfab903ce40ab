"""``paranmt-encode``: embed sentences, score sentence pairs, export a trained encoder.

    paranmt-encode embed   --model DIR --input sentences.txt --output emb.npy
    paranmt-encode score   --model DIR --input pairs.tsv     --output scores.txt
    paranmt-encode vectors --model DIR --output vectors.txt
    paranmt-encode export  --model DIR --sentence-transformers OUT

Input files are UTF-8, one sentence (``embed``) or one tab-separated pair (``score``) a line;
lines are split on "\\n" only; a pair with an empty side is scored ``nan`` (its line stays, so the
scores stay aligned with the pairs), and how many there are is said. ``vectors`` writes a Word Avg model's word embeddings in
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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text (byte {error.start})") from error
    return text.removesuffix("\n").split("\n") if text else []


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1 (a batch of 0 or fewer holds nothing)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


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
            command.add_argument("--batch-size", type=_positive, default=256)
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
    from models.training_pairs import read_pairs

    encoder = load_encoder(args.model, args.device)
    if args.command == "embed":
        vectors = encoder.encode(_lines(args.input), args.batch_size)
        with open(args.output, "wb") as handle:  # exactly there (np.save on a path would add .npy)
            np.save(handle, vectors)
        print(f"{len(vectors)} sentences → {args.output} ({vectors.shape[1]} dims)", file=sys.stderr)
    elif args.command == "score":
        scores = encoder.score(*read_pairs(args.input), batch_size=args.batch_size)
        np.savetxt(args.output, scores, fmt="%.6f")
        print(f"{len(scores)} pairs → {args.output}", file=sys.stderr)
        empty = np.flatnonzero(np.isnan(scores)) + 1
        if len(empty):
            print(f"{len(empty)} of {len(scores)} pairs have an empty side and are scored nan (lines {_some(empty)})", file=sys.stderr)
    else:
        words, vectors = encoder.word_vectors()
        save_word_vectors(words, vectors, args.output)
        print(f"{len(words) - 2} word vectors → {args.output}", file=sys.stderr)


def _some(numbers: np.ndarray, shown: int = 10) -> str:
    """The first ``shown`` numbers, with how many more there are."""
    text = ", ".join(str(n) for n in numbers[:shown])
    return text + (f" and {len(numbers) - shown} more" if len(numbers) > shown else "")


def _one_line(error: BaseException) -> str:
    """OSError's own text names the file (``[Errno 21] Is a directory: 'x'``); others say theirs."""
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror}"
    return str(error)


def main(argv: list[str] | None = None) -> int:
    """Run one command; a missing model or input, or a wrong model kind, is one line on stderr."""
    args = parser().parse_args(argv)
    try:
        run(args)
    except (OSError, ValueError) as error:  # a missing, unreadable or malformed file, a directory
        print(f"paranmt-encode {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"paranmt-encode {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
