"""The ``gpu`` Luigi resource (luigi.cfg [resources]: one GPU task at a time) is held by a stage
only while it runs a model on the GPU: an import of translations that no model scores loads
none, and must not hold back the stages that do (it claimed the GPU before)."""

import pytest

from workflows import BackTranslate, ImportTranslations


@pytest.fixture
def on_a_gpu(monkeypatch):
    """A machine whose engines put ``auto`` on the GPU (no GPU needed: the device is resolved by
    workflows.nmt.resolve_device)."""
    monkeypatch.setattr("workflows.nmt.resolve_device", lambda engine, device: "cpu" if device == "cpu" else "cuda")


def test_only_a_stage_that_loads_a_model_on_the_gpu_claims_it(on_a_gpu, tmp_path):
    given = {"inputs": str(tmp_path / "test.cs"), "translations": f"{tmp_path}/test.cs::{tmp_path}/hyp.en"}
    assert ImportTranslations(**given).resources == {}
    assert ImportTranslations(**given, translator=str(tmp_path / "model")).resources == {"gpu": 1}
    assert BackTranslate(inputs=given["inputs"]).resources == {"gpu": 1}
    assert BackTranslate(inputs=given["inputs"], device="cpu").resources == {}
