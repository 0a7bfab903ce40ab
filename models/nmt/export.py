"""A trained cs→en model as a small folder that travels: made on a GPU machine, reused on a CPU.

The folder holds the fairseq checkpoint in float16 without its optimizer state (the weights a
translator needs, half the bytes, none of Adam's two moments), cut into parts of at most
``PART_BYTES`` (``checkpoint.pt.part-00``, ``-01`` …: ``cat checkpoint.pt.part-* > checkpoint.pt``
rejoins them; ``--translator FOLDER`` does it by itself), its dictionaries
(``dict.cs.txt``, ``dict.en.txt``) and its sentencepiece model(s) (``spm.model``, or
``spm.cs.model`` and ``spm.en.model``). A machine that may return only a few files of a limited
size can return such a folder.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

from corpus.errors import InputError
from models.nmt.model import NmtModel

PART_BYTES = 16 * 2**20
CHECKPOINT = "checkpoint.pt"
DICTIONARIES = ("dict.cs.txt", "dict.en.txt")
JOINT_SPM, SPM_BY_LANGUAGE = "spm.model", ("spm.cs.model", "spm.en.model")


def tied_again(weights: dict) -> dict:
    """``weights`` with equal tensors made one tensor. Tied embeddings share one tensor in a
    checkpoint saved on the CPU, but one saved from a GPU holds each as its own copy (fairseq
    moves the weights to the CPU one by one: 38.6 MiB in float16 instead of 23 for the `fast`
    model, and its weights counted 20.2M instead of 12.0M)."""
    kept: dict[tuple, list] = {}  # by shape, type and first values: the few tensors that may be equal

    def one(value):
        alike = kept.setdefault((tuple(value.shape), value.dtype, tuple(value.flatten()[:16].tolist())), [])
        for other in alike:
            if other.equal(value):
                return other
        alike.append(value)
        return value

    return {name: one(value) for name, value in weights.items()}


def slim_checkpoint(checkpoint: str | Path) -> bytes:
    """The checkpoint's bytes with its weights in float16 and no optimizer state (fairseq and
    CTranslate2 load it as they load the original: the weights are cast back when loaded)."""
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    weights = tied_again(state["model"])
    halves = {id(value): value.half() for value in weights.values() if value.is_floating_point()}
    state["model"] = {name: halves.get(id(value), value) for name, value in weights.items()}
    state["last_optimizer_state"] = None
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def export_model(model: NmtModel, folder: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """Write ``model`` into ``folder`` (see the module's docstring); returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    data = slim_checkpoint(model.checkpoint)
    parts = [data[start : start + part_bytes] for start in range(0, len(data), part_bytes)]
    written = []
    for number, part in enumerate(parts):
        written.append(folder / f"{CHECKPOINT}.part-{number:02d}")
        written[-1].write_bytes(part)
    for name in DICTIONARIES:
        written.append(Path(shutil.copyfile(Path(model.data_dir) / name, folder / name)))
    if model.spm_source == model.spm_target:
        written.append(Path(shutil.copyfile(model.spm_source, folder / JOINT_SPM)))
    else:
        for source, name in zip((model.spm_source, model.spm_target), SPM_BY_LANGUAGE, strict=True):
            written.append(Path(shutil.copyfile(source, folder / name)))
    return written


def checkpoint_parts(folder: Path) -> list[Path]:
    """The checkpoint's parts in order (``checkpoint.pt`` alone when it is whole)."""
    whole = folder / CHECKPOINT
    return [whole] if whole.is_file() else sorted(folder.glob(f"{CHECKPOINT}.part-*"))


def spm_models(folder: Path) -> tuple[Path, Path]:
    """The (source, target) sentencepiece models of an exported folder: one per language where
    both are there, else the joint one."""
    source, target = (folder / name for name in SPM_BY_LANGUAGE)
    joint = folder / JOINT_SPM
    return (source, target) if source.is_file() and target.is_file() and not joint.is_file() else (joint, joint)


def model_files(folder: Path) -> list[Path]:
    """Every file of the exported model in ``folder``; an InputError names what is missing."""
    parts = checkpoint_parts(folder)
    wanted = [*DICTIONARIES, *dict.fromkeys(path.name for path in spm_models(folder))]
    missing = [name for name in wanted if not (folder / name).is_file()]
    if not parts:
        missing.insert(0, f"{CHECKPOINT} or {CHECKPOINT}.part-*")
    if missing:
        raise InputError(f"--translator {folder}: no {', '.join(missing)} (a fairseq model folder: a checkpoint, whole or in parts "
                         "as python -m benchmarks gpu_run writes it, its dictionaries and sentencepiece models)")
    return [*parts, *(folder / name for name in wanted)]


def join_checkpoint(folder: Path, target: Path) -> Path:
    """The exported checkpoint of ``folder`` written whole at ``target``."""
    with open(target, "wb") as out:
        for part in checkpoint_parts(folder):
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out)
    return target
