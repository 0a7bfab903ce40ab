"""Which device a translation engine runs on, and the one-line answer when it cannot use the GPU."""

import _ctypes
import logging
import shutil

import pytest

from corpus.errors import InputError
from models.nmt import devices


@pytest.fixture
def wheel_folder(tmp_path):
    """An import folder laid out as NVIDIA's wheels are (nvidia/<package>/lib/), holding a real
    shared library (Python's own _ctypes module) under a name the loader's own path lacks."""
    lib = tmp_path / "nvidia" / "cublas" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(_ctypes.__file__, lib / "libparanmt-test.so.12")
    return tmp_path


def test_a_library_from_an_nvidia_wheel_folder_is_opened_by_its_path(wheel_folder):
    assert devices.missing_libraries(("libparanmt-test.so.12",), [str(wheel_folder)]) == []
    assert devices.missing_libraries(("libparanmt-test.so.12", "libparanmt-absent.so.12"), [str(wheel_folder)]) == [
        "libparanmt-absent.so.12"]


def test_a_library_nowhere_is_missing(tmp_path):
    assert devices.missing_libraries(("libparanmt-test.so.12",), [str(tmp_path)]) == ["libparanmt-test.so.12"]


@pytest.fixture
def gpu_problem(monkeypatch):
    """Set what the engine's GPU check finds (this machine may have no GPU)."""
    def set_problem(problem):
        monkeypatch.setattr(devices, "gpu_problem", lambda engine: problem)
        devices._warn_once.cache_clear()
    return set_problem


def test_cuda_that_ctranslate2_cannot_use_is_one_line_saying_what_to_install(gpu_problem):
    gpu_problem("CTranslate2 4.8.5 needs CUDA 12's cuBLAS (libcublas.so.12 not found): "
                f"{devices.GPU_EXTRA_HINT}, or use --engine fairseq")
    with pytest.raises(InputError) as error:
        devices.resolve_device("ctranslate2", "cuda")
    assert "\n" not in str(error.value) and "paranmt[gpu]" in str(error.value) and "--engine fairseq" in str(error.value)


def test_auto_falls_back_to_the_cpu_and_says_why_once_when_the_gpu_lacks_libraries(gpu_problem, caplog):
    gpu_problem("CTranslate2 needs CUDA 12's cuBLAS: pip install 'paranmt[gpu]'")
    with caplog.at_level(logging.WARNING, logger=devices.__name__):
        assert devices.resolve_device("ctranslate2", "auto") == "cpu"
        assert devices.resolve_device("ctranslate2", "auto") == "cpu"
    assert [r.getMessage() for r in caplog.records] == ["translating on the CPU: CTranslate2 needs CUDA 12's cuBLAS: pip install 'paranmt[gpu]'"]


def test_auto_without_a_gpu_is_the_cpu_without_a_warning(gpu_problem, caplog):
    gpu_problem(devices.NO_GPU)
    with caplog.at_level(logging.WARNING, logger=devices.__name__):
        assert devices.resolve_device("fairseq", "auto") == "cpu"
    assert not caplog.records
    with pytest.raises(InputError, match="no CUDA GPU"):
        devices.resolve_device("fairseq", "cuda")


def test_a_usable_gpu_and_an_explicit_cpu(gpu_problem):
    gpu_problem("")
    assert devices.resolve_device("ctranslate2", "auto") == "cuda"
    assert devices.resolve_device("ctranslate2", "cpu") == "cpu"


def test_this_machines_answer_is_consistent_with_ctranslate2():
    ctranslate2 = devices.import_ctranslate2()  # as the package does: its CPU mode is set before the first import
    problem = devices.ct2_cuda_problem()
    assert (problem == devices.NO_GPU) == (ctranslate2.get_cuda_device_count() == 0)
