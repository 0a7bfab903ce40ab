"""Convert a fairseq checkpoint to a CTranslate2 model directory."""

from __future__ import annotations

import os
from pathlib import Path

from models.nmt.devices import import_ctranslate2

QUANTIZATIONS = ("none", "float16", "int8", "int8_float16", "int8_float32", "bfloat16", "int8_bfloat16")


def convert(checkpoint: str, data_dir: str, output_dir: Path, quantization: str = "none") -> Path:
    """Write the CTranslate2 model of ``checkpoint`` (dictionaries in ``data_dir``) into ``output_dir``.

    ``quantization`` is the stored weight type; ``none`` keeps float32, and the compute type is
    still chosen at load time (float16 on GPU, int8 on CPU), so one conversion serves both.
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; choose one of {QUANTIZATIONS}")
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    converter = import_ctranslate2().converters.FairseqConverter(checkpoint, data_dir, unsafe_deserialization=True)
    return Path(converter.convert(str(output_dir), quantization=None if quantization == "none" else quantization, force=True))
