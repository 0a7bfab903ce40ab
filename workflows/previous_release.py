"""Outputs of release 0.4.0 kept through the upgrade to stage identities.

Release 0.4.0 knew every output by one code version (the package's and every schema's), and
release 0.5.0 knows each stage by the code it runs (workflows.code_identity): every identity
changed though no stage makes other rows. A work directory of 0.4.0 would build everything again,
its translator too (two hours of two cores on csen-more, days of a GPU on CzEng). So an output of
0.4.0 (its manifest's ``code`` is PREVIOUS_RELEASE) is adopted under its new identity when its
manifest says the same stage, the same parameters (files named by them as their contents), the same
input files' contents and the same upstream outputs (themselves found or adopted first): renamed
to its new fingerprint, a link by
its old name left for what refers to it there, its manifest rewritten with its new identity and
``adopted`` (the old fingerprint and release), unless this release makes other rows from them
(``remade_since_previous_release``). Outputs of older releases are built again.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from corpus.files import write_atomically
from corpus.outputs import MANIFEST, DamagedOutput, verified_manifest
from pipelines import stages
from workflows.console import STAGES as log
from workflows.fingerprints import file_fingerprint

# What 0.4.0's manifests say of their code (workflows.base's CODE_VERSION there).
PREVIOUS_RELEASE = {"inputs": "content", "paranmt": "0.4.0",
                    "schemas": ["bitext/3", "corpus/10", "pairs/5", "rejects/1", "scored/10", "training/10"]}


def remade_since_previous_release(stage) -> bool:
    """Whether this release makes other rows than 0.4.0 for ``stage`` from the same parameters and
    inputs, so that 0.4.0's output is not this one's: every back-translation. On the CPU it decodes
    with CTranslate2's own library, not Intel's MKL (csen-more, compact model, int8: 7 of 400
    translations and 268 of 400 scores differ) and rescores in smaller batches
    (docs/2026-12-07-cpu-decoding.md); constrained searches no longer ban a word the source holds
    (corpus.paraphrases.held_by_source). What reads it is remade with it (its upstream is new)."""
    return stage.stage == stages.BACKTRANSLATE


def made_by_previous_release(manifest: dict[str, Any], stage, upstream_dirs: dict[str, str]) -> bool:
    """Whether ``manifest`` is 0.4.0's of an output of exactly ``stage`` (a StageTask) whose upstream
    outputs are ``upstream_dirs`` (stage name → real path): the same task, parameters, input
    contents and upstream outputs, and rows this release would make the same."""
    if remade_since_previous_release(stage):
        return False
    if manifest.get("code") != PREVIOUS_RELEASE or "adopted" in manifest or manifest.get("stage") != stage.stage:  # adopted: known by its identity
        return False
    if manifest.get("task_id", "").split("_")[0] != stage.task_family:
        return False
    try:  # the parameters as they are known (files by their contents): a work directory moved with its inputs is the same
        then = type(stage).from_str_params(manifest.get("parameters", {}))  # a parameter added since: at its default
    except Exception:  # a parameter this release no longer takes
        return False
    if then.identifying_parameters() != stage.identifying_parameters():
        return False
    if [":".join(entry.rsplit(":", 2)[1:]) for entry in manifest.get("input_files", [])] != [file_fingerprint(path) for path in stage.input_files()]:
        return False
    workdir = stage.stage_root.parent
    return {name: os.path.realpath(workdir / path) for name, path in manifest.get("upstream", {}).items()} == upstream_dirs


def previous_release_outputs(stage) -> list[tuple[Path, dict[str, Any]]]:
    """The outputs in ``stage``'s folder that 0.4.0 made and none adopted, with their manifests
    (read, not yet verified: most outputs are this release's, and verifying stats every file)."""
    root = stage.stage_root
    if not root.is_dir():
        return []
    found = []
    for old in sorted(path for path in root.iterdir() if not path.name.startswith(".") and not path.is_symlink() and path.is_dir()):
        with contextlib.suppress(OSError, ValueError):
            manifest = json.loads((old / MANIFEST).read_text(encoding="utf-8"))
            if manifest.get("code") == PREVIOUS_RELEASE and "adopted" not in manifest and manifest.get("stage") == stage.stage:
                found.append((old, manifest))
    return found


def previous_release_output(stage, upstream_dirs: dict[str, str]) -> Path | None:
    """0.4.0's output of ``stage`` when its upstream outputs are ``upstream_dirs`` (stage name →
    real path), if the work directory holds one (nothing is changed: workflows.plan asks too)."""
    for old, manifest in previous_release_outputs(stage):
        if made_by_previous_release(manifest, stage, upstream_dirs):
            try:
                verified_manifest(old)
            except DamagedOutput:
                continue
            return old
    return None


def adopt_previous_release(stage) -> bool:
    """Adopt 0.4.0's output of ``stage`` as its output (module docstring); whether one was. Its
    upstream stages are found complete (or adopted) first: an output read from another is not
    this stage's."""
    if not previous_release_outputs(stage):
        return False  # the usual case, said without asking the upstream stages
    upstream = stage.upstream_stages()
    if not all(task.complete() for task in upstream):
        return False
    old = previous_release_output(stage, {task.stage: os.path.realpath(task.output_dir) for task in upstream})
    if old is None:
        return False
    final = stage.output_dir
    with stage.output_lock():
        if final.exists():
            return True
        manifest = verified_manifest(old)
        os.rename(old, final)
        old.symlink_to(final.name)
        adopted = {**manifest, "fingerprint": final.name, "identity": stage.manifest_identity(),
                   "adopted": {"fingerprint": old.name, "code": manifest["code"]}}
        write_atomically(final / MANIFEST, lambda temporary: temporary.write_text(json.dumps(adopted, indent=2, sort_keys=True) + "\n"))
    log.info("%s: %s of release %s kept as %s", stage.stage, old.name, PREVIOUS_RELEASE["paranmt"], final.name)
    return True
