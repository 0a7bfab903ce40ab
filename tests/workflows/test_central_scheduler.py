"""Builds through Luigi's central scheduler, a real ``luigid`` on 127.0.0.1 with task history in
SQLite: two at once on one work directory (the second waits, both exit 0, each output built
once); two at once on two work directories, one with two workers (each its own tasks, both
complete, both in the task history)."""

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import luigi
import pytest
from luigi.task_register import Register
from nmt_fixtures import tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture
from test_backtranslate_flow import czeng_file, given

import workflows
from benchmarks.common import local_luigid, luigid_answers
from workflows import BuildParaNMT, IngestBitext
from workflows.central_scheduler import WorkDirectoryTask, work_directory_digest
from workflows.fingerprints import exclusive_lock

REPO = Path(__file__).resolve().parents[2]
STAGES = ("ingest", "nmt-train", "nmt-ct2", "backtranslate", "pp_train", "pp_model", "score", "corpus")
BUILD_SECONDS = 600


@pytest.fixture
def luigid(tmp_path):
    """``luigid`` in the background on a free port of 127.0.0.1, its pid file, logs, state and task
    history in ``tmp_path``; stopped by its process id when the test ends."""
    with local_luigid(tmp_path / "luigid") as port:
        yield {"port": port, "history": tmp_path / "luigid" / "history.db"}


@pytest.fixture
def build_options(tmp_path, tiny_nmt):
    """BuildParaNMT's options for 200 toy pairs and the given tiny cs→en model (no training)."""
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(200, seed=5))
    return ["--inputs", inputs, *(f"--{name.replace('_', '-')}={value}" for name, value in given(tiny_nmt).items())]


def start_build(port: int, workdir: Path, options: list[str], workers: int = 1) -> subprocess.Popen:
    """``luigi --module workflows BuildParaNMT`` through the scheduler on ``port``, from the
    repository (its luigi.cfg), output in ``workdir``."""
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "BuildParaNMT", *options,
               "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port), "--workers", str(workers),
               "--paranmt-workdir", str(workdir), "--paranmt-direct-num-workers", "1"]
    return subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(*builds: subprocess.Popen) -> list[str]:
    """Each build's output, once all have exited 0."""
    outputs = [build.communicate(timeout=BUILD_SECONDS)[0] for build in builds]
    for build, output in zip(builds, outputs, strict=True):
        assert build.returncode == 0, output
    return outputs


def built_stages(output: str) -> list[str]:
    """The stages a run built itself (its ``<stage> complete:`` lines)."""
    return sorted(line.split(" complete: ")[0].split()[-1] for line in output.splitlines() if " complete: " in line)


def result(output: str) -> str:
    """The corpus summary a run prints last."""
    return output[output.index("ParaNMT corpus:"):]


def assert_complete(workdir: Path) -> None:
    for stage in STAGES:
        outputs = [path.name for path in (workdir / stage).iterdir() if not path.is_symlink() and not path.name.startswith(".")]
        assert len(outputs) == 1 and (workdir / stage / "latest" / "_SUCCESS").exists(), (stage, outputs)


def read_until(build: subprocess.Popen, text: str) -> str:
    """What ``build`` printed up to and including the first line holding ``text``."""
    printed = ""
    for line in build.stdout:
        printed += line
        if text in line:
            return printed
    raise AssertionError(f"{text!r} never printed: {printed}")


def test_a_second_build_on_one_work_directory_waits_for_the_first_and_both_exit_0(luigid, build_options, luigi_workdir):
    """The test holds the ingest output's lock, so the first build is running IngestBitext (waiting
    for the lock) when the second asks the scheduler for the same tasks, however fast the machine."""
    workdir = luigi_workdir
    ingest = IngestBitext(inputs=build_options[1]).output_dir
    (workdir / ".locks").mkdir(parents=True)
    with exclusive_lock(workdir / ".locks" / f"ingest-{ingest.name}", "the test holds the lock first"):
        first = start_build(luigid["port"], workdir, build_options)
        printed_first = read_until(first, f"another run is building {ingest}; waiting for it")
        second = start_build(luigid["port"], workdir, build_options)
        printed_second = read_until(second, "waiting for IngestBitext, which another run is running")
    outputs = [printed + output for printed, output in zip((printed_first, printed_second), finished(first, second), strict=True)]
    assert_complete(workdir)
    assert built_stages(outputs[0] + outputs[1]) == sorted(STAGES)  # each stage built once, by one of them
    assert result(outputs[0]) == result(outputs[1])


def test_builds_on_two_work_directories_at_once_each_build_everything_and_are_recorded_in_the_task_history(luigid, build_options, tmp_path):
    """One build with one worker, the other with two."""
    workdirs = [tmp_path / "a", tmp_path / "b"]
    outputs = finished(*(start_build(luigid["port"], workdir, build_options, workers) for workdir, workers in zip(workdirs, (1, 2), strict=True)))
    for workdir, output in zip(workdirs, outputs, strict=True):
        assert_complete(workdir)
        assert sorted(set(built_stages(output))) == sorted(STAGES)
    assert built_stages(outputs[0]) == sorted(STAGES)  # each stage once
    assert luigid_answers(luigid["port"])
    done = {work_directory_digest(str(workdir)): set() for workdir in workdirs}  # a task's id ends with its work directory's
    with sqlite3.connect(luigid["history"]) as history:
        for name, task_id in history.execute("select distinct tasks.name, tasks.task_id from tasks join task_events "
                                             "on task_events.task_id = tasks.id where event_name = 'DONE'"):
            done[task_id.rsplit("_", 1)[1]].add(name)
    assert all({"BuildParaNMT", "IngestBitext", "BackTranslate", "AssignDeciles"} <= names for names in done.values()), done
    # outputs are relocatable: the same folder names and bytes in both work directories
    for stage in STAGES:
        assert (workdirs[0] / stage / "latest").readlink() == (workdirs[1] / stage / "latest").readlink()
        identities = [{key: manifest[key] for key in ("task_id", "fingerprint", "parameters", "input_files")} for manifest in
                      (json.loads((workdir / stage / "latest" / "_SUCCESS").read_text()) for workdir in workdirs)]
        assert identities[0] == identities[1]
    corpus = sorted((workdirs[0] / "corpus" / "latest" / "corpus").rglob("*.parquet"))
    assert corpus and all(path.read_bytes() == (workdirs[1] / path.relative_to(workdirs[0])).read_bytes() for path in corpus)


def test_two_machines_seeing_the_inputs_at_other_paths_build_each_stage_once_and_the_corpus_of_one(luigid, tiny_nmt, tmp_path):
    """Two workers of one luigid on one work directory, each with its own copy of the inputs and
    the model (another mount, another machine), started together: each stage is built once, both
    exit 0 and print the same corpus, and it is the corpus a single run makes."""
    toy = toy_pairs(200, seed=5)
    options = []
    for machine in ("node-a", "node-b/mnt/data"):
        folder = tmp_path / machine
        folder.mkdir(parents=True)
        model = {name: shutil.copy(path, folder) for name, path in given(tiny_nmt).items() if name != "dict_dir"}
        for dictionary in ("dict.cs.txt", "dict.en.txt"):
            shutil.copy(Path(tiny_nmt.model.data_dir) / dictionary, folder)
        options.append(["--inputs", czeng_file(folder / "toy.train.gz", toy), f"--dict-dir={folder}",
                        *(f"--{name.replace('_', '-')}={path}" for name, path in model.items())])
    outputs = finished(*(start_build(luigid["port"], tmp_path / "shared-work", machine_options) for machine_options in options))
    assert_complete(tmp_path / "shared-work")
    assert built_stages(outputs[0] + outputs[1]) == sorted(STAGES)  # each stage built once, by one of the two
    assert result(outputs[0]) == result(outputs[1])
    alone = finished(start_build(luigid["port"], tmp_path / "alone", options[0]))[0]
    assert built_stages(alone) == sorted(STAGES)
    corpus = sorted((tmp_path / "alone" / "corpus" / "latest" / "corpus").rglob("*.parquet"))
    shared = tmp_path / "shared-work" / "corpus" / "latest" / "corpus"
    assert corpus and all(path.read_bytes() == (shared / path.relative_to(corpus[0].parents[1])).read_bytes() for path in corpus)
    assert (tmp_path / "alone" / "corpus" / "latest").readlink() == (tmp_path / "shared-work" / "corpus" / "latest").readlink()


def test_every_task_names_its_work_directory_in_its_id():
    tasks = [cls for cls in Register._reg if cls.__module__.startswith("workflows.") and not issubclass(cls, luigi.Config)]
    assert set(workflows.__all__) <= {cls.__name__ for cls in tasks}
    assert [cls.__name__ for cls in tasks if not issubclass(cls, WorkDirectoryTask)] == []


def test_the_id_changes_with_the_real_work_directory_and_the_output_names_do_not(luigi_workdir, tmp_path):
    config = luigi.configuration.get_config()
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    made = {}
    for name in ("a", "b", "link"):
        config.set("paranmt", "workdir", str(tmp_path / name))
        Register.clear_instance_cache()  # Luigi reuses task objects within a process
        made[name] = (IngestBitext(), BuildParaNMT())
    for ingest, build in made.values():
        assert ingest.portable_task_id == made["a"][0].portable_task_id and ingest.fingerprint() == made["a"][0].fingerprint()
        # a stage is known to the scheduler by what it builds, a wrapper by its parameters
        assert ingest.task_id.startswith(f"IngestBitext_{ingest.fingerprint()}_") and build.task_id.startswith(build.portable_task_id)
    assert made["link"][0].task_id == made["a"][0].task_id and made["link"][1].task_id == made["a"][1].task_id
    assert made["b"][0].task_id != made["a"][0].task_id and made["b"][1].task_id != made["a"][1].task_id


def test_no_scheduler_at_the_address_is_one_line(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once the socket is closed
    (tmp_path / "quick-retries.cfg").write_text("[core]\nrpc-retry-wait = 1\n")
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--scheduler-host", "127.0.0.1",
               "--scheduler-port", str(port), "--paranmt-workdir", str(tmp_path / "work")]
    done = subprocess.run(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "LUIGI_CONFIG_PATH": str(tmp_path / "quick-retries.cfg")},
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 40 and "Traceback" not in output and "NoneType" not in output, output
    [error] = [line for line in output.splitlines() if "ERROR" in line]
    mistake = f"when connecting to remote scheduler 'http://127.0.0.1:{port}': is luigid running there? (--local-scheduler runs without it)"
    assert error.index(mistake) < 120 and error.endswith(f"{mistake} [Luigi unexpected framework error while scheduling IngestBitext]"), error
