"""``paranmt-translator fetch NAME --to DIR``: a published translator from the Hugging Face hub.

The hub's own client (``huggingface_hub.snapshot_download``) fetches the files a translator
folder needs (configuration, weights in one format, the tokenizer's files) and resumes a cut
download. Without internet it is one line saying which files to download by hand and where to
put them; ``--translator DIR`` then takes the folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# A translator folder's files: the configuration, the weights (safetensors when the model has
# them, else PyTorch's), and every tokenizer's files (Marian: source.spm, target.spm, vocab.json;
# M2M-100: sentencepiece.bpe.model, vocab.json; NLLB-200: sentencepiece.bpe.model, tokenizer.json).
FILES = ["*.json", "*.spm", "*.model", "*.txt", "*.safetensors"]
FALLBACK_WEIGHTS = ["pytorch_model.bin"]
EXAMPLES = ("Helsinki-NLP/opus-mt-de-en", "facebook/m2m100_418M", "facebook/nllb-200-distilled-600M")


def fetch(name: str, folder: Path) -> Path:
    """Download ``name``'s translator files into ``folder`` (kept, resumed, when run again)."""
    from huggingface_hub import list_repo_files, snapshot_download

    patterns = FILES if any(path.endswith(".safetensors") for path in list_repo_files(name)) else [*FILES, *FALLBACK_WEIGHTS]
    return Path(snapshot_download(name, local_dir=str(folder), allow_patterns=patterns))


def by_hand(name: str, folder: Path, problem: str) -> str:
    """The one line said when the hub cannot be reached."""
    return (f"paranmt-translator: cannot fetch {name} ({problem}); download by hand from https://huggingface.co/{name}/tree/main "
            f"config.json, model.safetensors (or pytorch_model.bin) and the tokenizer's files (tokenizer_config.json, vocab.json, "
            f"*.spm or sentencepiece.bpe.model, tokenizer.json if there) into {folder}, then give --translator {folder}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="paranmt-translator", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("fetch", help="download a translator from the Hugging Face hub")
    get.add_argument("name", help=f"the model's hub name, e.g. {', '.join(EXAMPLES)}")
    get.add_argument("--to", type=Path, help="the folder to put it in (default: translators/<name's last part>)")
    args = parser.parse_args(argv)
    folder = args.to or Path("translators") / args.name.rsplit("/", 1)[-1]
    from huggingface_hub.errors import RepositoryNotFoundError
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # its retries' warnings: the failure is said once, below

    try:
        fetched = fetch(args.name, folder)
    except RepositoryNotFoundError:
        sys.exit(f"paranmt-translator: no model {args.name!r} on the Hugging Face hub (e.g. {', '.join(EXAMPLES)})")
    except Exception as error:  # offline, no route, a proxy, a full disk: whatever stops it, the way by hand
        sys.exit(by_hand(args.name, folder, str(error).splitlines()[0] if str(error) else type(error).__name__))
    print(f"{args.name} is in {fetched}: give --translator {fetched}")


if __name__ == "__main__":
    main()
