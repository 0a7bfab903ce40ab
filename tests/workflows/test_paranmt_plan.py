"""paranmt-plan says which stages a command would run and why, and builds nothing; an output of
release 0.4.0 is kept through the upgrade to stage identities."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import luigi

from corpus.outputs import MANIFEST, read_manifest
from workflows import IngestBitext, TrainSentencePiece
from workflows.backtranslate import BackTranslate
from workflows.plan import MISTAKE, NOTHING_TO_RUN, WOULD_RUN, main
from workflows.previous_release import PREVIOUS_RELEASE, made_by_previous_release


def planned(capsys, *arguments: str) -> tuple[int, list[str]]:
    """The plan's exit status and its lines (stdout, spaces squeezed); what it said on stderr is in ``planned.said``."""
    status = main(["TrainSentencePiece", "--vocab-size", "300", *arguments])
    out, planned.said = capsys.readouterr()
    return status, [" ".join(line.split()) for line in out.splitlines()]


def test_the_plan_says_what_runs_and_why_and_builds_nothing(luigi_workdir, capsys):
    status, lines = planned(capsys)
    assert status == WOULD_RUN
    assert lines == ["IngestBitext runs never built here", "TrainSentencePiece runs reads IngestBitext, which runs", "2 of 2 stages would run"]
    assert not luigi_workdir.exists() or not any(luigi_workdir.iterdir())

    assert luigi.build([TrainSentencePiece(vocab_size=300)], local_scheduler=True, log_level="WARNING")
    status, lines = planned(capsys)
    assert status == NOTHING_TO_RUN and lines[-1] == "nothing to run: all 2 stages are built"
    assert lines[0].startswith("IngestBitext reused ingest/")

    status, lines = planned(capsys, "--model-type", "bpe")
    assert status == WOULD_RUN
    assert lines[0].startswith("IngestBitext reused") and lines[1] == "TrainSentencePiece runs --model-type unigram → bpe"

    status, lines = planned(capsys, "--inputs", str(luigi_workdir / "absent.cs"))
    assert status == MISTAKE and lines == []
    assert planned.said.startswith("paranmt-plan: ") and "no input file matches" in planned.said and planned.said.count("\n") == 1


def test_the_plan_runs_from_any_folder(luigi_workdir, tmp_path):
    config = tmp_path / "plan.cfg"
    config.write_text(f"[paranmt]\nworkdir = {luigi_workdir}\n")
    done = subprocess.run([sys.executable, "-m", "workflows.plan", "IngestBitext"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "LUIGI_CONFIG_PATH": str(config)})
    assert done.returncode == WOULD_RUN and done.stdout.split()[:4] == ["IngestBitext", "runs", "never", "built"]


def as_previous_release(stage, renamed: dict[str, str]) -> str:
    """Make ``stage``'s output look as 0.4.0 left it: another folder name, the manifest's code as
    0.4.0 wrote it and no identity; ``renamed``: its upstream stages' folders so renamed."""
    final = stage.output_dir
    manifest = read_manifest(final)
    manifest.update(code=PREVIOUS_RELEASE, upstream={name: renamed.get(path, path) for name, path in manifest["upstream"].items()})
    del manifest["identity"]
    (final / MANIFEST).write_text(json.dumps(manifest))
    old = final.with_name("0" + final.name[1:] if final.name[0] != "0" else "1" + final.name[1:])
    os.rename(final, old)
    (final.parent / "latest").unlink()
    return old.name


def test_an_output_of_the_previous_release_is_kept(luigi_workdir, capsys):
    spm = TrainSentencePiece(vocab_size=300)
    assert luigi.build([spm], local_scheduler=True, log_level="WARNING")
    files = {path.relative_to(spm.output_dir): path.read_bytes() for path in spm.output_dir.rglob("*") if path.is_file() and path.name != MANIFEST}
    ingest_dir = IngestBitext().output_dir
    old_ingest = as_previous_release(IngestBitext(), {})
    old_spm = as_previous_release(spm, {f"ingest/{ingest_dir.name}": f"ingest/{old_ingest}"})

    assert not TrainSentencePiece(vocab_size=400).complete()  # other parameters: not its output
    status, lines = planned(capsys)
    assert status == NOTHING_TO_RUN and lines[1].endswith(f"release 0.4.0's {old_spm}")
    assert not spm.output_dir.exists()  # the plan changes nothing

    assert spm.complete()
    assert {path.relative_to(spm.output_dir): path.read_bytes() for path in spm.output_dir.rglob("*")
            if path.is_file() and path.name != MANIFEST} == files
    manifest = read_manifest(spm.output_dir)
    assert manifest["adopted"] == {"fingerprint": old_spm, "code": PREVIOUS_RELEASE} and manifest["identity"] == spm.manifest_identity()
    assert os.readlink(spm.stage_root / old_spm) == spm.output_dir.name and (luigi_workdir / "ingest" / old_ingest).is_symlink()
    assert not TrainSentencePiece(vocab_size=300, seed=2).complete()  # adopted once, then known by its identity only



def test_a_back_translation_of_the_previous_release_is_never_adopted():
    """This release decodes otherwise on the CPU (CTranslate2's library, not MKL; smaller rescoring
    batches) and bans no word the source holds: a manifest of 0.4.0 that says exactly a
    back-translation, of any method, is not adopted; the same manifest of another stage is."""
    def manifest_of(stage):
        return {"code": PREVIOUS_RELEASE, "stage": stage.stage, "task_id": stage.task_id, "upstream": {},
                "parameters": stage.to_str_params(only_significant=True), "input_files": []}

    for k, diversity in ((1, "nbest"), (5, "nbest"), (5, "sampling"), (5, "constrained"), (5, "parabank")):
        stage = BackTranslate(paraphrases=k, diversity=diversity)
        assert not stage.input_files()  # it reads its upstream outputs only: the manifest above says all of it
        assert not made_by_previous_release(manifest_of(stage), stage, {}), (k, diversity)
    spm = TrainSentencePiece(vocab_size=300)
    assert made_by_previous_release(manifest_of(spm), spm, {})
