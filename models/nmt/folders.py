"""What a ``--translator`` folder is, and whether each file in it is what it should be.

A translator folder is one of:

* a Hugging Face model folder (``config.json`` with ``model_type`` ``marian`` or ``m2m_100``, its
  weights and its tokenizer's files): ``published`` converts it with CTranslate2's converter;
* a CTranslate2 model folder (``model.bin``) holding its Hugging Face tokenizer's files too
  (``ct2-transformers-converter --copy_files``): used as it is;
* a fairseq model: the project's own, as ``TrainTranslator`` or ``ConvertTranslator`` wrote it
  (``nmt.json``), or carried (``export``: ``checkpoint.pt`` or its parts, dictionaries,
  sentencepiece models, as ``python -m benchmarks gpu_run`` writes it).

Each file a library will read is read here first by that library, so that a file cut short,
overwritten or of the wrong kind is one line naming it, before anything is built from it.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

from corpus.errors import InputError
from models.nmt import export
from models.nmt.devices import import_ctranslate2
from models.nmt.model import MODEL_FILE, NmtModel

HUGGING_FACE_TYPES = ("marian", "m2m_100")


def translator_kind(folder: str | Path) -> str:
    """``huggingface``, ``ctranslate2`` or ``fairseq``: what a ``--translator`` folder holds; an
    InputError saying what a translator folder must hold otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"--translator {folder}: not a folder (give the folder of a Hugging Face, CTranslate2 or fairseq model)")
    if (folder / "model.bin").is_file():
        return "ctranslate2"
    config = folder / "config.json"
    if config.is_file():
        model_type = read_json(config).get("model_type", "")
        if model_type in HUGGING_FACE_TYPES:
            return "huggingface"
        raise InputError(f"--translator {folder}: a {model_type or 'unknown'} model; Marian (OPUS-MT), M2M-100 and NLLB-200 models are supported")
    try:
        fairseq_files(folder)
    except InputError:
        if (folder / MODEL_FILE).is_file():
            raise
        raise InputError(f"--translator {folder}: holds no translator (a Hugging Face model's config.json, a CTranslate2 model.bin, "
                         "a fairseq checkpoint.pt with its dictionaries and sentencepiece model, or a TrainTranslator output)") from None
    return "fairseq"


def fairseq_files(folder: Path) -> list[Path]:
    """The files of the fairseq model in ``folder`` (checkpoint or its parts, dictionaries,
    sentencepiece models): a TrainTranslator or ConvertTranslator output (``nmt.json``) or an
    exported folder; an InputError naming what is missing or what the folder is instead."""
    if not (folder / MODEL_FILE).is_file():
        return export.model_files(folder)
    model = NmtModel.load(folder)  # DamagedOutput naming the file when the output was changed
    if model.family != "fairseq":
        raise InputError(f"--translator {folder}: ImportTranslator's copy of {model.name or 'a published model'}; "
                         "give the translator's own folder")
    return [Path(model.checkpoint), *dictionaries(model), *map(Path, dict.fromkeys((model.spm_source, model.spm_target)))]


def dictionaries(model: NmtModel) -> list[Path]:
    """A fairseq model's source and target dictionaries."""
    return [Path(model.data_dir) / name for name in export.DICTIONARIES]


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: not readable JSON ({error})") from None


# -- each file read by the library that will read it ------------------------------------------

def _json(path: Path) -> None:
    json.loads(path.read_text(encoding="utf-8"))


def _text(path: Path) -> None:
    path.read_text(encoding="utf-8")


def _sentencepiece(path: Path) -> None:
    import sentencepiece

    sentencepiece.SentencePieceProcessor(model_file=str(path))


def _safetensors(path: Path) -> None:
    """The header and every tensor's extent (a file cut short, its header intact, fails here)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as weights:
        for name in weights.keys():  # noqa: SIM118 - a safe_open is not iterable
            weights.get_slice(name)


def _pytorch(path: Path) -> None:
    """Every member's checksum (torch's files are zip archives since torch 1.6); an older file
    is loaded, weights only."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if (bad := archive.testzip()) is not None:
                raise ValueError(f"{bad}: checksum mismatch")
        return
    import torch

    torch.load(path, map_location="cpu", weights_only=True)


def _fairseq_dictionary(path: Path) -> None:
    from fairseq.data import Dictionary

    Dictionary.load(str(path))


def _ctranslate2_model(path: Path) -> None:
    """Loaded once, its weights as int8: every weight is read, in a quarter of float32's memory."""
    import_ctranslate2().Translator(str(path.parent), device="cpu", compute_type="int8")


READERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    ".json": ("JSON", _json),
    ".txt": ("UTF-8 text", _text),
    ".spm": ("a sentencepiece model", _sentencepiece),
    ".model": ("a sentencepiece model", _sentencepiece),
    ".safetensors": ("safetensors weights", _safetensors),
    ".bin": ("PyTorch weights", _pytorch),
    ".pt": ("a PyTorch checkpoint", _pytorch),
}


def check_file(path: Path, what: str, read: Callable[[Path], None], named: Path | str = "") -> None:
    """``read(path)``; whatever it raises is an InputError naming the file (``named``: the user's
    name for it, where ``path`` is a copy) and what it should be."""
    try:
        read(path)
    except Exception as error:  # a damaged file raises whatever its library raises
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"{named or path}: damaged, or not {what} ({first_line[:200]})") from None


def folder_files(folder: Path) -> list[Path]:
    """A published translator's files, hidden files (a download client's bookkeeping) aside: what
    its identity is made of, what is copied and what is checked."""
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.rglob("*") if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts))


def check_published(folder: Path) -> None:
    """Every file of a Hugging Face or CTranslate2 folder that a library reads; a CTranslate2
    model last, as its loading reads the vocabularies beside it too."""
    for path in folder_files(folder):
        if path.name != "model.bin" and (reader := READERS.get(path.suffix)):
            check_file(path, *reader)
    if translator_kind(folder) == "ctranslate2":
        check_file(folder / "model.bin", "a CTranslate2 model", _ctranslate2_model)


def check_fairseq(checkpoint: Path, dictionary_files: list[Path], spm_models: list[Path], checkpoint_named: Path | str = "") -> None:
    """The checkpoint, dictionaries and sentencepiece models of a fairseq model."""
    check_file(checkpoint, "a PyTorch checkpoint", _pytorch, checkpoint_named)
    for path in dictionary_files:
        check_file(path, "a fairseq dictionary", _fairseq_dictionary)
    for path in dict.fromkeys(spm_models):
        check_file(path, "a sentencepiece model", _sentencepiece)
