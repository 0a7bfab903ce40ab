"""A stage's summary never takes a key the manifest has for itself: ImportTranslations' per-file
counts (``files``) were overwritten by the output's list of files, and an experiment's report files
too; now such a key stops the stage before anything is committed."""

import pytest

from workflows.base import MANIFEST_OWN_KEYS, StageTask


class Summarising(StageTask):
    """A stage whose summary is whatever the test gives it."""

    stage = "summary-test"
    summary: dict = {}

    def build(self, partial_dir):
        return self.summary


def test_a_summary_key_the_manifest_owns_stops_the_stage_before_its_output_is_committed(luigi_workdir):
    assert "files" in MANIFEST_OWN_KEYS
    task = Summarising()
    task.summary = {"files": {"a.en": 1}, "rows": 1}
    with pytest.raises(ValueError, match=r"summary-test: its summary's \['files'\] would overwrite"):
        task.run()
    assert not task.complete()
    task.summary = {"translation_files": {"a.en": 1}, "rows": 1}
    task.run()
    assert task.complete()
