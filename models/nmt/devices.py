"""Which device a translation engine runs on, checked before any work starts.

CTranslate2's Linux wheels are built against CUDA 12 and open its cuBLAS (``libcublas.so.12``)
when a model is first placed on a GPU. A machine with a newer CUDA only (torch's CUDA 13 build
brings ``libcublas.so.13``) lacks it, and the failure would come from deep inside a worker.
The ``gpu`` extra installs NVIDIA's cuBLAS 12 wheel (``nvidia-cublas-cu12``); it lands in
``site-packages/nvidia/cublas/lib``, which the dynamic loader does not search, so the library
is opened here by its path first: the loader then hands CTranslate2 the already-open library.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
import sys

from corpus.errors import InputError

# The cuBLAS major version CTranslate2's wheels load (4.x: CUDA 12); its libcublasLt comes first.
CT2_CUDA_LIBRARIES = ("libcublasLt.so.12", "libcublas.so.12")
GPU_EXTRA_HINT = "pip install 'paranmt[gpu]' (NVIDIA's cuBLAS 12 wheel)"
NO_GPU = "no CUDA GPU is visible"
# MKL's reproducible mode (CNR), for MKL wherever it runs in the process (CTranslate2's matrix
# products on an Intel CPU, torch's): without it MKL may take another code path for other memory
# alignments. A score still depends on the threads that compute it, so CTranslate2 decodes each
# batch on one thread (Ct2Translator); its own choice of library is kept: on a CPU that is not
# Intel's, MKL, strict or not, decoded 6-7 times slower than oneDNN (docs/2026-12-07-cpu-decoding.md).
# CTranslate2 reads these when first imported; a value the user set is kept.
MKL_REPRODUCIBLE = {"MKL_CBWR": "AUTO,STRICT"}
log = logging.getLogger(__name__)


def _wheel_library_paths(name: str, search_path: list[str]) -> list[str]:
    """Where an NVIDIA wheel put ``name`` under any import folder (``nvidia/<package>/lib/``)."""
    return sorted(path for folder in search_path for path in glob.glob(os.path.join(folder, "nvidia", "*", "lib", name)))


def open_library(name: str, search_path: list[str] | None = None) -> bool:
    """Open ``name`` for the whole process: from the loader's own path, else from an NVIDIA wheel."""
    for candidate in [name, *_wheel_library_paths(name, sys.path if search_path is None else search_path)]:
        try:
            ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
            return True
        except OSError:
            continue
    return False


def missing_libraries(libraries: tuple[str, ...] = CT2_CUDA_LIBRARIES, search_path: list[str] | None = None) -> list[str]:
    """The ``libraries`` that cannot be opened (the rest are open for the process from now on)."""
    return [name for name in libraries if not open_library(name, search_path)]


def import_ctranslate2():
    """CTranslate2, imported where it is used: an install kit made `--without ctranslate2` (a CUDA 13
    GPU machine, where it cannot use the GPU) has everything else, and the fairseq engine. MKL, where
    it runs, runs in its reproducible mode (MKL_REPRODUCIBLE)."""
    for name, value in MKL_REPRODUCIBLE.items():
        os.environ.setdefault(name, value)
    try:
        import ctranslate2
    except ImportError:
        raise InputError("CTranslate2 is not installed here: use --BackTranslate-engine fairseq (and "
                         "--EvaluateTranslator-engine fairseq), or pip install 'ctranslate2==4.8.*'") from None
    return ctranslate2


def ct2_cuda_problem() -> str:
    """Why CTranslate2 cannot translate on a GPU here ('' when it can)."""
    ctranslate2 = import_ctranslate2()

    if not ctranslate2.get_cuda_device_count():
        return NO_GPU
    missing = missing_libraries()
    if missing:
        return (f"CTranslate2 {ctranslate2.__version__} needs CUDA 12's cuBLAS ({', '.join(missing)} not found): "
                f"{GPU_EXTRA_HINT}, or use --engine fairseq")
    return ""


@functools.cache
def gpu_problem(engine: str) -> str:
    """Why ``engine`` cannot run on a GPU here ('' when it can); checked once per process."""
    if engine == "ctranslate2":
        return ct2_cuda_problem()
    import torch

    return "" if torch.cuda.is_available() else NO_GPU


def resolve_device(engine: str, device: str) -> str:
    """The device ``engine`` runs on. ``auto`` is the GPU when the engine can use one, else the
    CPU (a GPU that CTranslate2 cannot use for want of its CUDA libraries is named in the log,
    once); ``cuda`` that the engine cannot use is an InputError that says what to install."""
    if device == "cpu":
        return device
    problem = gpu_problem(engine)
    if device == "cuda" and problem:
        raise InputError(f"--device cuda: {problem}")
    if problem and problem != NO_GPU:
        _warn_once(f"translating on the CPU: {problem}")
    return "cpu" if problem else "cuda"


@functools.cache
def _warn_once(message: str) -> None:
    log.warning(message)
