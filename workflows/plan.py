"""``paranmt-plan TASK [--parameters]``: which stages a luigi command would run and why, before any work.

Takes what ``luigi --module workflows TASK …`` takes and builds nothing: for each stage the task
needs, upstream first, it says whether the stage's output is reused (found in the work directory),
kept from release 0.4.0 (workflows.previous_release), or would run, and why: the parameters, input
files, code definitions or libraries that differ from the stage's last output here (its ``latest``),
or the upstream stage it reads that would run. Exit status, as ``git diff --exit-code``: 0 when
nothing would run, 1 when a stage would, 2 for a mistake in the command (said in one line).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import luigi
from luigi.cmdline_parser import CmdlineParser
from luigi.task import flatten

from corpus.files import LATEST
from corpus.outputs import MANIFEST, DamagedOutput, verified_manifest
from workflows.base import StageTask, in_workdir
from workflows.console_errors import users_mistake
from workflows.previous_release import PREVIOUS_RELEASE, previous_release_output

WOULD_RUN, NOTHING_TO_RUN, MISTAKE = 1, 0, 2
# Changed definitions named in a reason before "and N more".
NAMED = 4


def stages_upstream_first(root: luigi.Task) -> list[StageTask]:
    """The stages ``root`` needs (through wrapper tasks too), each once, every stage after those it reads."""
    ordered: dict[StageTask, None] = {}
    visiting: set[luigi.Task] = set()

    def visit(task: luigi.Task) -> None:
        if task in ordered or task in visiting:
            return
        visiting.add(task)
        for required in flatten(task.requires()):
            visit(required)
        if isinstance(task, StageTask):
            ordered[task] = None

    visit(root)
    return list(ordered)


def last_output(stage: StageTask) -> dict[str, Any] | None:
    """The manifest of the stage's last output of the same task here (its ``latest``, else the
    newest), or None when there is none with an identity."""
    root = stage.stage_root
    if not root.is_dir():
        return None
    outputs = sorted((path for path in root.iterdir() if not path.name.startswith(".") and (path / MANIFEST).is_file()),
                     key=lambda path: (path.name != LATEST, -(path / MANIFEST).stat().st_mtime))
    for output in outputs:
        try:
            manifest = verified_manifest(output)
        except DamagedOutput:
            continue
        if manifest.get("task_id", "").split("_")[0] == stage.task_family and "identity" in manifest:
            return manifest
    return None


def changes(identity: dict[str, Any], before: dict[str, Any], inputs: list[str]) -> list[str]:
    """What differs between a stage's identity now and ``before`` (a manifest's), in words;
    ``inputs``: the stage's input files, as its identity lists their contents."""
    said = []
    params, old_params = identity["params"], before.get("params", {})
    said += [f"--{name.replace('_', '-')} {old_params.get(name, '(none)')} → {params.get(name, '(none)')}"
             for name in sorted(params.keys() | old_params.keys()) if params.get(name) != old_params.get(name)]
    old_inputs = before.get("inputs", [])
    if identity["inputs"] != old_inputs:
        changed = [path for path, now, then in zip(inputs, identity["inputs"], old_inputs, strict=False) if now != then]
        said.append(f"input {changed[0]} changed" if len(changed) == 1 and len(inputs) == len(old_inputs)
                    else f"input files changed ({len(old_inputs)} → {len(inputs)} files)" if len(inputs) != len(old_inputs)
                    else f"{len(changed)} input files changed")
    code, old_code = identity["code"], before.get("code", {})
    definitions, old_definitions = code["definitions"], old_code.get("definitions", {})
    if moved := sorted(name for name in definitions.keys() | old_definitions.keys() if definitions.get(name) != old_definitions.get(name)):
        named = ", ".join(moved[:NAMED]) + (f" and {len(moved) - NAMED} more" if len(moved) > NAMED else "")
        said.append(f"code: {named}")
    libraries, old_libraries = code["libraries"], old_code.get("libraries", {})
    said += [f"{name} {old_libraries.get(name, '(none)')} → {libraries.get(name, '(none)')}"
             for name in sorted(libraries.keys() | old_libraries.keys()) if libraries.get(name) != old_libraries.get(name)]
    return said


def plan(root: luigi.Task) -> list[tuple[StageTask, str, str]]:
    """For each stage ``root`` needs, upstream first: (stage, what happens, where or why), with
    what happens one of "reused", "kept" (release 0.4.0's output, adopted when it runs) or "runs"."""
    decided: dict[StageTask, tuple[str, str]] = {}
    found_at: dict[StageTask, str] = {}  # where a reused or kept stage's output is now
    for stage in stages_upstream_first(root):
        upstream = stage.upstream_stages()
        final = stage.output_dir
        if final.exists() and not stage.damage():
            decided[stage], found_at[stage] = ("reused", in_workdir(final)), os.path.realpath(final)
            continue
        if all(task in found_at for task in upstream) and \
                (old := previous_release_output(stage, {task.stage: found_at[task] for task in upstream})) is not None:
            decided[stage], found_at[stage] = ("kept", f"{in_workdir(final)}: release {PREVIOUS_RELEASE['paranmt']}'s {old.name}"), str(old)
            continue
        stage.check_inputs()  # a mistake the run would stop on, said now in one line
        decided[stage] = ("runs", "; ".join(reasons(stage, upstream, decided)))
    return [(stage, *decided[stage]) for stage in decided]


def reasons(stage: StageTask, upstream: list[StageTask], decided: dict[StageTask, tuple[str, str]]) -> list[str]:
    said = [f"reads {task.task_family}, which runs" for task in upstream if decided[task][0] == "runs"]
    if stage.output_dir.exists():
        said.append(f"{in_workdir(stage.output_dir)} is damaged: {stage.damage()}")
    before = last_output(stage)
    if before is None:
        return said or ["never built here"]
    identity = stage.identity()
    old_upstream = before["identity"].get("upstream", {})
    said += [f"reads another {task.task_family} output" for task in upstream
             if decided[task][0] != "runs" and old_upstream.get(task.stage) not in (None, task.fingerprint())]
    return said + changes(identity, before["identity"], stage.input_files()) or ["another output of it is here"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import workflows  # noqa: F401 - registers the tasks and the package's Luigi defaults

    try:
        with CmdlineParser.global_instance(argv) as parser:
            root = parser.get_task_obj()
            decisions = plan(root)
    except SystemExit:
        raise
    except Exception as error:
        print(f"paranmt-plan: {users_mistake(error) or f'{type(error).__name__}: {error}'}", file=sys.stderr)
        return MISTAKE
    width = max((len(stage.task_family) for stage, _, _ in decisions), default=0)
    for stage, what, detail in decisions:
        print(f"{stage.task_family:<{width}}  {what:<6}  {detail}")
    running = sum(what == "runs" for _, what, _ in decisions)
    print(f"{running} of {len(decisions)} stages would run" if running else f"nothing to run: all {len(decisions)} stages are built")
    return WOULD_RUN if running else NOTHING_TO_RUN


def console_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console_main()
