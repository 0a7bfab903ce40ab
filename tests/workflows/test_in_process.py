"""A small raw input is read in process, through the ``luigi`` command: no Beam worker process
starts for 300 lines (each costs seconds, and needs connections to 127.0.0.1, which some machines
refuse), with the worker count left to the input's size (``--paranmt-direct-num-workers 0``); nor
for one shard to back-translate (a second worker would wait, the translator on half the cores)."""

import os
import subprocess
import sys
import time

import pytest
from hf_fixtures import GERMAN, marian
from nmt_fixtures import ACCEPT_ALL
from test_bad_input_cli import REPO, czeng_text
from test_worker_death import worker_processes

from corpus.outputs import read_manifest

LINES = 300


def release_text(count: int) -> bytes:
    """ParaNMT release lines: reference TAB back-translation TAB score."""
    return "".join(f"Sentence {n} is here .\tthe sentence {n} is here .\t0.{n % 97:02d}\n" for n in range(count)).encode()


def workers_seen_while_running(command: list[str]) -> tuple[subprocess.CompletedProcess, set[int]]:
    """Run ``command``, looking for Beam SDK worker processes among its descendants ten times a
    second (a worker lives for seconds: it imports Beam before it works)."""
    run = subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    seen: set[int] = set()
    deadline = time.monotonic() + 300
    while run.poll() is None and time.monotonic() < deadline:
        seen.update(process.pid for process in worker_processes(run))
        time.sleep(0.1)
    output = run.communicate(timeout=60)[0]
    return subprocess.CompletedProcess(command, run.returncode, output), seen


@pytest.mark.parametrize("task, option, name, text", [("IngestBitext", "--inputs", "small.train", czeng_text(LINES, "s")),
                                                      ("ImportParaphrases", "--files", "para-nmt-small.txt", release_text(LINES))],
                         ids=["ingest", "release import"])
def test_a_small_raw_input_is_read_without_worker_processes(tmp_path, task, option, name, text):
    path = tmp_path / name
    path.write_bytes(text)
    done, workers = workers_seen_while_running([sys.executable, "-m", "luigi", "--module", "workflows", task, option, str(path), "--local-scheduler",
                                                "--paranmt-workdir", str(tmp_path / "work"), "--paranmt-direct-num-workers", "0"])
    assert done.returncode == 0, done.stdout
    assert f"{LINES} lines" in done.stdout, done.stdout  # the plan the size came from
    assert not workers, f"{len(workers)} Beam worker process(es) started for {LINES} lines\n{done.stdout}"


def test_one_shard_is_back_translated_in_process_on_every_core(tmp_path):
    news, english = tmp_path / "news.de", tmp_path / "news.en"
    news.write_text("".join(f"{de}\n" for de, _ in GERMAN), encoding="utf-8")
    english.write_text("".join(f"{en}\n" for _, en in GERMAN), encoding="utf-8")
    done, workers = workers_seen_while_running([sys.executable, "-m", "luigi", "--module", "workflows", "BackTranslate",
                                                "--inputs", f"{news}::{english}", "--source-language", "de",
                                                "--translator", str(marian(tmp_path / "marian")), "--local-scheduler",
                                                "--BackTranslate-accept-translations", ACCEPT_ALL, "--paranmt-workdir", str(tmp_path / "work"),
                                                "--paranmt-direct-num-workers", "0"])
    assert done.returncode == 0, done.stdout
    assert "1 shard(s) to translate" in done.stdout, done.stdout
    assert not workers, f"{len(workers)} Beam worker process(es) started for one shard\n{done.stdout}"
    assert read_manifest(tmp_path / "work" / "backtranslate" / "latest")["models_loaded_this_run"] == 1
