"""``python -m benchmarks gpu_run --tiny``: every step at toy size on the CPU (the demo corpus), what
comes back, and a CPU machine reusing it (``BuildParaNMT --translator``, CTranslate2 int8)."""

import os
import re
import subprocess
import sys
import time

import luigi
import pandas as pd
import pytest
from conftest import REPO
from nmt_fixtures import ACCEPT_ALL

from benchmarks.gpu_run import (
    FILE_LIMIT,
    FILES_LIMIT,
    RESERVE_S,
    SHARES,
    STAGE_FIXED_S,
    TINY,
    TOTAL_LIMIT,
    Clock,
    Run,
    build,
    one_line,
    sample,
    sentences_that_fit,
)
from benchmarks.train import generated_pairs, measure_training
from corpus.errors import InputError
from corpus.outputs import read_manifest
from models.nmt import export
from workflows import BuildParaNMT, TrainTranslator

# The whole toy run's budget here: every step runs to its end on a busy 2-core machine (the
# budget's end would stop it), and the training stops at TINY.max_update anyway.
TINY_RUN_MINUTES = 30
SECTIONS = ["## Machine", "## Steps", "## Data", "## Model", "## Translation quality", "## Back-translation speed",
            "## The corpus", "## Encoder training speed", "## Files"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The whole --tiny run, once, as on a GPU machine without CTranslate2 (every process of the
    run finds a ``ctranslate2`` that fails to import): its output folder and work directory."""
    root = tmp_path_factory.mktemp("gpu_run")
    out, workdir, without = root / "out", root / "work", root / "without-ctranslate2"
    (without / "ctranslate2").mkdir(parents=True)
    (without / "ctranslate2" / "__init__.py").write_text("raise ImportError('no ctranslate2 on this machine')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(without), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "benchmarks", "gpu_run", "--tiny", "--minutes", str(TINY_RUN_MINUTES), "--out", str(out),
                           "--workdir", str(workdir)],
                          cwd=REPO, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, workdir


def test_the_folder_that_comes_back_keeps_the_limits_and_the_report_has_every_section(tiny_run):
    out, _ = tiny_run
    files = sorted(path.name for path in out.iterdir())
    assert files == ["checkpoint.pt.part-00", "corpus.parquet", "dict.cs.txt", "dict.en.txt", "report.md", "spm.model"]
    sizes = [path.stat().st_size for path in out.iterdir()]
    assert len(files) <= FILES_LIMIT and max(sizes) <= FILE_LIMIT and sum(sizes) <= TOTAL_LIMIT
    report = (out / "report.md").read_text()
    positions = [report.index(section) for section in SECTIONS]
    assert positions == sorted(positions)
    for step in SHARES:
        assert re.search(rf"^\| {step} +\|", report, re.MULTILINE), step
    assert "20 of 400 Czech sentences back-translated (a seeded sample: toy size)" in report
    assert re.search(r"The collapse watch .*\n\n\| updates +\| distinct +\|.*\n\|[-:|]+\n\| 60 +\|", report), report  # its last validation
    engine, stage = (re.search(rf"^\| {name} +\| +(\d+) +\|", report, re.MULTILINE)
                     for name in ("fairseq engine \\(in process\\)", "BackTranslate stage, fairseq engine"))
    assert engine and stage and int(engine[1]) == TINY.engine_sentences and int(stage[1]) == 20, report


def test_the_corpus_reads_with_pandas_and_has_rows_in_deciles(tiny_run):
    out, _ = tiny_run
    corpus = pd.read_parquet(out / "corpus.parquet")
    assert len(corpus) == 20 and corpus.id.is_unique
    assert set(corpus.decile_pp.astype(int)) == set(range(10))
    assert corpus.translation.str.len().gt(0).all()


def test_the_checkpoint_parts_rejoin_to_a_checkpoint_fairseq_loads(tiny_run, tmp_path, monkeypatch):
    out, _ = tiny_run
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # as fairseq runs here (fairseq_train.fairseq_env)
    joined = export.join_checkpoint(out, tmp_path / "checkpoint.pt")
    assert joined.read_bytes() == b"".join(part.read_bytes() for part in export.checkpoint_parts(out))
    from fairseq import checkpoint_utils

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(joined)], arg_overrides={"data": str(out)})
    assert len(task.source_dictionary) == len((out / "dict.cs.txt").read_text().splitlines()) + 4
    state = checkpoint_utils.load_checkpoint_to_cpu(str(joined))
    assert state["last_optimizer_state"] is None
    assert {str(value.dtype) for value in state["model"].values() if value.is_floating_point()} == {"torch.float16"}


def test_a_cpu_machine_builds_the_corpus_from_the_folder_with_ctranslate2_int8(tiny_run, luigi_workdir):
    out, workdir = tiny_run
    (inputs,) = workdir.glob("backtranslate-*/sentences.cs")
    build = BuildParaNMT(inputs=str(inputs), translator=str(out))
    config = luigi.configuration.get_config()
    config.set("BackTranslate", "compute_type", "int8")  # --BackTranslate-compute-type int8
    config.set("BackTranslate", "accept_translations", ACCEPT_ALL)  # the rehearsal's 60-update model does not translate
    try:
        assert luigi.build([build], local_scheduler=True, log_level="WARNING")
        corpus = pd.read_parquet(build.requires().corpus_dir())
    finally:
        config.remove_option("BackTranslate", "compute_type")
        config.remove_option("BackTranslate", "accept_translations")
    backtranslate = next(path for path in (luigi_workdir / "backtranslate").iterdir() if path.is_dir() and not path.is_symlink())
    manifest = read_manifest(backtranslate)
    assert manifest["engine"] == "ctranslate2" and manifest["compute_type"] == "int8" and manifest["rows"]["pairs"] == 20
    assert len(corpus) == 20
    assert read_manifest(TrainTranslator(inputs=str(inputs), model_dir=str(out)).output_dir)["checkpoint_parts"] == 1


def test_a_model_folder_that_lacks_a_file_is_named_in_one_line(tmp_path):
    (tmp_path / "dict.cs.txt").write_text("a 1\n")
    with pytest.raises(InputError, match=r"^--translator .*: no checkpoint.pt or checkpoint.pt.part-\*, dict.en.txt, spm.model \("):
        TrainTranslator(model_dir=str(tmp_path)).check_inputs()
    with pytest.raises(InputError, match="not both"):
        TrainTranslator(model_dir=str(tmp_path), checkpoint=str(tmp_path / "c.pt")).check_inputs()


def test_the_back_translation_takes_what_fits_in_its_share():
    engine = {"sentences": 2000, "seconds": 2.0}
    real = type(TINY)(**{**TINY.__dict__, "backtranslate_range": (2000, 0)})
    # 1,000 sentences/s after the stage's fixed cost, 90 % of the rest of the share:
    assert sentences_that_fit(engine, STAGE_FIXED_S + 100.0, real) == 90_000
    assert sentences_that_fit(engine, 5.0, real) == 2000  # late: the least still
    assert sentences_that_fit(None, 100.0, real) == 2000  # the engine's rate not measured
    assert sentences_that_fit(engine, STAGE_FIXED_S + 100.0, TINY) == 20


def test_the_clock_gives_each_step_the_end_of_its_share_and_those_before_it():
    clock = Clock(10)
    assert clock.deadline("data") == pytest.approx((600 - RESERVE_S) * SHARES["data"], abs=0.1)
    assert clock.deadline("encoders") == pytest.approx(600 - RESERVE_S)
    assert sum(SHARES.values()) == pytest.approx(1.0)
    # Counted from the call's start, a minute before gpu_run began (the install): the shares are of what is left.
    late = Clock(10, started=time.time() - 60)
    assert late.setup == pytest.approx(60, abs=1)
    assert late.deadline("data") == pytest.approx(late.setup + (600 - RESERVE_S - late.setup) * SHARES["data"])
    assert late.deadline("encoders") == pytest.approx(600 - RESERVE_S)
    assert sample(list(range(10)), 3) == sorted(sample(list(range(10)), 3)) and len(sample(list(range(10)), 3)) == 3


def steps_in(report: str) -> dict[str, str]:
    """The status column of report.md's steps table, by step."""
    return {cells[0]: cells[-1] for line in report.splitlines() if line.startswith("| ")
            and (cells := [cell.strip() for cell in line.strip("|").split("|")])[0] in SHARES}


FACTS = {"tiny": True, "gpu": "none (CPU run)", "preset": "tiny", "device": "cpu", "batch_tokens": 0}


def test_a_failed_step_is_one_line_in_the_report_and_the_steps_that_do_not_need_it_go_on(tmp_path):
    run = Run(tmp_path, Clock(10), FACTS)
    seen_while_running = {}

    def data():
        seen_while_running.update(steps_in((tmp_path / "report.md").read_text()))
        return ("inputs", {}, "the data")

    def train():
        raise RuntimeError("TrainTranslator failed\nsecond line")

    assert run.step("data", data) == ("inputs", {}, "the data")
    assert seen_while_running["data"] == "running"  # the report is written as a step starts, not only at the end
    assert run.step("train", train, needs=("data",)) is None
    assert run.step("export", lambda: ["x"], needs=("train",)) is None
    assert run.step("encoders", lambda: [["Word Avg", "cpu", 2, 100.0, "generated"]]) is not None
    report = (tmp_path / "report.md").read_text()
    statuses = steps_in(report)
    assert statuses["data"] == "done" and statuses["encoders"] == "done"
    assert statuses["train"] == "failed: RuntimeError: TrainTranslator failed"
    assert statuses["export"] == "skipped: needs train" and statuses["evaluate"] == "not started"
    assert "## Data" in report and "## Encoder training speed" in report and "## Model" not in report
    assert not run.finished()


def test_the_budgets_end_stops_the_running_step_and_only_what_it_started_and_the_rest_are_not_started(tmp_path):
    """A child of this process started before the step (as the suite's other children are) is not
    the step's: it outlives the stop."""
    run = Run(tmp_path, Clock((RESERVE_S + 2) / 60), FACTS)
    children = []

    def endless():
        children.append(subprocess.Popen(["sleep", "120"]))
        time.sleep(120)

    bystander = subprocess.Popen(["sleep", "120"])
    try:
        started = time.monotonic()
        run.start_alarm()
        assert run.step("data", endless) is None
        assert time.monotonic() - started < 30
        assert run.step("train", lambda: "trained", needs=()) is None
        statuses = steps_in((tmp_path / "report.md").read_text())
        assert statuses["data"] == "stopped: the budget ended during this step"
        assert statuses["train"] == "not started: the budget was spent"
        children[0].wait(timeout=10)  # killed with the step (a zombie until reaped here)
        assert children[0].returncode == -9
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_failed_command_is_one_line_with_its_last_words():
    error = subprocess.CalledProcessError(1, ["python", "-m", "x"], stderr="Traceback …\nValueError: no GPU\n")
    assert one_line(error) == "CalledProcessError: Command '['python', '-m', 'x']' returned non-zero exit status 1. (ValueError: no GPU)"


def test_measuring_training_twice_in_the_same_folder_times_updates_both_times(tmp_path):
    """A rerun in the same work directory (a GPU machine kept warm between two calls) found the
    first run's finished checkpoint, resumed it, timed nothing and divided by zero."""
    pairs = generated_pairs(400)
    for _ in range(2):
        _, timed, rate = measure_training(pairs, tmp_path / "encoder", "word_avg", 50, 1, 2, "cpu")
        assert timed >= 1 and rate > 0


def test_a_stage_that_fails_is_named_with_its_own_first_line(luigi_workdir):
    """A failed stage's line in report.md says what went wrong, not only that it did."""

    class RefusesItsInput(luigi.Task):
        def complete(self):
            return False

        def run(self):
            raise InputError("--inputs x.cs: no such file\nsecond line")

    with pytest.raises(RuntimeError) as failed:
        build([RefusesItsInput()])
    assert str(failed.value) == "RefusesItsInput: InputError: --inputs x.cs: no such file"


def test_an_unknown_preset_is_one_line_before_any_step(tmp_path):
    """--preset names the translator's recipe (the rehearsal's --tiny --preset compact): a name
    that is no preset stops the call before anything runs, in one line."""
    done = subprocess.run([sys.executable, "-m", "benchmarks", "gpu_run", "--tiny", "--preset", "compcat", "--out", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "--preset compcat is none of tiny, fast, compact" in done.stderr, done.stderr
    assert not (tmp_path / "out" / "report.md").exists()


def test_the_gpu_call_builds_its_tasks_on_todays_spelling():
    """The call's log carries no deprecation warning: no task it builds names the model by --model-dir."""
    import ast
    import inspect

    import benchmarks.gpu_run as gpu_run

    tree = ast.parse(inspect.getsource(gpu_run))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") in
             ("EvaluateTranslator", "BackTranslate", "BuildParaNMT")]
    assert len(calls) == 3
    for call in calls:
        names = {keyword.arg for keyword in call.keywords}
        assert "translator" in names and "model_dir" not in names and "nmt" not in names, ast.unparse(call)
