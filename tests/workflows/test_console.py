"""What a user sees: the README's demo command (run by the offline kit's install), then
TrainOnFiltered, through the real `luigi` command line. Each event once, no library chatter, at
most one screen, the result at the end; ``--log-level DEBUG`` brings the libraries' messages back."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_encoders_flow import TINY, fill_sts
from test_worker_death import worker_processes

REPO = Path(__file__).resolve().parents[2]
SCREEN = 60


def luigi_command(cwd: Path, *args: str, python: Path | str = sys.executable) -> subprocess.CompletedProcess:
    """``luigi --module workflows ARGS --local-scheduler`` run by ``python`` in ``cwd``; another
    Python than this one (the kit's) runs its installed package, whatever this PYTHONPATH says."""
    command = [str(python), "-m", "luigi", "--module", "workflows", *args, "--local-scheduler"]
    environment = None if str(python) == sys.executable else {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=900)


def printed_lines(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]


def assert_each_line_once(lines: list[str]) -> None:
    repeated = sorted({line for line in lines if lines.count(line) > 1})
    assert not repeated, repeated


def luigi_at_once(cwd: Path, commands: list[list[str]], python: Path) -> list[list[str]]:
    """Each command's printed lines, the commands run at the same time (as two users may)."""
    with ThreadPoolExecutor(len(commands)) as pool:
        return [printed_lines(done) for done in pool.map(lambda command: luigi_command(cwd, *command, python=python), commands)]


def train_on_filtered(demo_dir: Path) -> list[str]:
    """TrainOnFiltered on the demo corpus's top decile, a tiny Word Avg (STS files made here)."""
    return ["TrainOnFiltered", "--decile", "9", "--sts-dir", str(demo_dir / "sts"),
            *(f"--{name.replace('_', '-')}={value}" for name, value in TINY.items())]


@pytest.fixture(scope="module")
def demo_dir(kit_demo) -> Path:
    """The empty folder where the README's main command ran from the installed kit (built once
    for the session, tests/kit_demo.py), with STS files for TrainOnFiltered added. Later
    commands there run with the kit's Python too: an input's fingerprint names its path, and the
    demo data's path is the installed package's."""
    fill_sts(kit_demo.folder / "sts")
    return kit_demo.folder


@pytest.fixture(scope="module")
def demo_build(kit_demo) -> list[str]:
    """What the README's demo command printed."""
    return printed_lines(kit_demo.demo)


@pytest.fixture(scope="module")
def trained_on_filtered(demo_build, demo_dir, kit_demo) -> list[str]:
    """What TrainOnFiltered printed after the demo build, in ``demo_dir``."""
    return printed_lines(luigi_command(demo_dir, *train_on_filtered(demo_dir), python=kit_demo.python))


def test_the_demo_prints_each_event_once_on_one_screen_and_ends_with_the_corpus(demo_dir, demo_build):
    lines = demo_build
    assert_each_line_once(lines)
    assert len(lines) <= SCREEN, "\n".join(lines)
    assert not [line for line in lines if "apache_beam" in line or "luigi-interface" in line or "apitools" in line]
    summary = lines[lines.index(next(line for line in lines
                                     if line.startswith(f"ParaNMT corpus: 400 pairs in {os.path.realpath(demo_dir)}/work/corpus/"))):]
    assert any(line.startswith("  rejected at ingest: 0") for line in summary)
    assert any(line.startswith("  pairs per decile of pp_sim (0 … 9): 40 40 40") for line in summary)
    assert summary[-1].startswith("  pairs per decile of")  # the result is the last thing printed


def test_train_on_filtered_ends_with_the_sts_table_and_the_dev_score_per_epoch(trained_on_filtered):
    lines = trained_on_filtered
    assert_each_line_once(lines)
    assert len(lines) <= SCREEN, "\n".join(lines)
    table = next(i for i, line in enumerate(lines) if line.startswith("| model"))
    assert lines[table + 2].startswith("| word_avg") and "2012–2016 mean" in lines[table]
    assert lines[-1].startswith("dev score (") and "per epoch: epoch 1 " in lines[-1] and ", epoch 2 " in lines[-1]


def test_a_report_whose_encoder_was_moved_away_says_so_and_the_command_succeeds(demo_dir, trained_on_filtered, kit_demo, tmp_path):
    """The report is complete (Luigi looks no further); its summary reads the encoder's facts,
    which must not turn into a logged error under a command that exits 0."""
    encoder = Path(next(line for line in trained_on_filtered if line.startswith("Encoder word_avg: ")).split(" ")[2])
    os.rename(encoder, tmp_path / "encoder")
    try:
        result = luigi_command(demo_dir, *train_on_filtered(demo_dir), python=kit_demo.python)
    finally:
        os.rename(tmp_path / "encoder", encoder)
    lines = printed_lines(result)
    assert not [line for line in lines if "ERROR" in line or "Error" in line], lines
    (header,) = [line for line in lines if line.startswith("Encoder word_avg: ")]
    assert (header.startswith(f"Encoder word_avg: {encoder} (no longer sound: {encoder}/_SUCCESS is missing")
            and "TrainFilteredEncoder" in header), header
    assert any(line.startswith("| word_avg") for line in lines) and not any(line.startswith("dev score") for line in lines), lines


def test_the_readme_recipe_with_five_paraphrases_by_parabank_builds_on_the_demo_translator(demo_dir, kit_demo, tmp_path):
    """Issue 67's recipe on the demo data, in a copy of the demo's work directory (its translator
    reused): the demo model's constrained searches loop more than its beam (0.31 against 0.11),
    which the translation check judges against the beam, so the run goes through."""
    copied = tmp_path / "work"
    shutil.copytree(demo_dir / "work", copied, symlinks=True)
    lines = printed_lines(luigi_command(demo_dir, "BuildParaNMT", "--paraphrases", "5", "--diversity", "parabank",
                                        "--paranmt-workdir", str(copied), python=kit_demo.python))
    assert not [line for line in lines if " complete: " in line and ("nmt-train" in line or "ingest" in line)], lines  # reused
    (made,) = [line for line in lines if line.strip().startswith("made by: ")]
    assert all(f"parabank: {method}" in made for method in ("constrained", "nbest", "sampling")), made


def test_a_moved_copied_or_linked_work_directory_rebuilds_nothing_and_prints_where_it_is_now(demo_dir, trained_on_filtered, kit_demo, tmp_path):
    """Both commands in each of the three places, all six at once (a run that finds its stages
    complete only reads them)."""
    commands = {"corpus": ["BuildParaNMT"], "encoder": train_on_filtered(demo_dir)}
    copied, moved, linked = tmp_path / "copy" / "work", tmp_path / "elsewhere" / "work", tmp_path / "linked"
    shutil.copytree(demo_dir / "work", copied, symlinks=True)
    moved.parent.mkdir()
    os.rename(demo_dir / "work", moved)
    linked.symlink_to(moved.parent)
    try:
        workdirs = (moved, copied, linked / "work")
        manifests = {workdir: {path: path.stat().st_mtime_ns for path in workdir.rglob("_SUCCESS")} for workdir in workdirs}
        runs = [(workdir, name, [*command, "--paranmt-workdir", str(workdir)]) for workdir in workdirs for name, command in commands.items()]
        printed_by_run = luigi_at_once(demo_dir, [command for _, _, command in runs], kit_demo.python)
        for workdir in workdirs:
            printed = {name: lines for (where, name, _), lines in zip(runs, printed_by_run, strict=True) if where == workdir}
            assert not [line for lines in printed.values() for line in lines if " complete: " in line], printed  # nothing rebuilt
            assert {path: path.stat().st_mtime_ns for path in workdir.rglob("_SUCCESS")} == manifests[workdir]
            corpus = next(line for line in printed["corpus"] if line.startswith("ParaNMT corpus: 400 pairs in ")).rsplit(" ", 1)[1]
            encoder = next(line for line in printed["encoder"] if line.startswith("Encoder word_avg: ")).split(" ")[2]
            for path in (corpus, encoder):
                assert path.startswith(f"{workdir}/") and Path(path).is_dir(), path
        # The translator's nmt.json names its files relative to the work directory: read in the new place.
        (tmp_path / "test.cs").write_text("Dobrý den.\nPes běží.\n")
        (tmp_path / "test.en").write_text("Good day.\nThe dog runs.\n")
        evaluation = ["EvaluateTranslator", "--source", str(tmp_path / "test.cs"), "--reference", str(tmp_path / "test.en"),
                      "--baseline", str(tmp_path / "test.en")]
        assert any(" complete: " in line
                   for line in printed_lines(luigi_command(demo_dir, *evaluation, "--paranmt-workdir", str(moved), python=kit_demo.python)))
    finally:
        os.rename(moved, demo_dir / "work")


@pytest.mark.parametrize(("workers", "sentences"), [(1, 50_000), (2, 200_000)])
def test_ctrl_c_is_one_line_leaves_only_the_partial_output_and_ends_by_sigint(tmp_path, workers, sentences):
    """In process, and with DirectRunner worker processes, which get the Ctrl-C too and report it:
    sent once the stage has started, and with workers once both worker processes run."""
    (tmp_path / "w.cs").write_text("".join(f"Věta číslo {n}.\n" for n in range(sentences)))
    (tmp_path / "w.en").write_text("".join(f"Sentence number {n}.\n" for n in range(sentences)))
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "IngestBitext", "--inputs", "w.cs",
               "--paranmt-direct-num-workers", str(workers), "--local-scheduler"]
    # A terminal's foreground job takes Ctrl-C; a test run started in the background (`pytest &`)
    # ignores SIGINT, and a child inherits that, so the child gets the terminal's disposition back.
    run = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in run.stdout:
        lines.append(line.rstrip("\n"))
        if "ingest: 1 input file(s)" in line:
            deadline = time.monotonic() + 120
            while workers > 1 and len(worker_processes(run)) < workers:
                assert time.monotonic() < deadline and run.poll() is None, "the worker processes did not start"
                time.sleep(0.05)
            time.sleep(0.3)
            os.killpg(run.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    assert run.wait(timeout=120) == -signal.SIGINT, lines  # a shell says 130
    assert [line for line in lines if line.strip()][1:] == [
        "interrupted: nothing unfinished looks finished; run the same command again to resume"], lines
    assert [path.name for path in (tmp_path / "work" / "ingest").iterdir()] == [next((tmp_path / "work" / "ingest").glob(".*.partial")).name]


def test_log_level_debug_brings_the_libraries_messages_back(tmp_path):
    shutil.copy(REPO / "luigi.cfg", tmp_path)
    inputs = tmp_path / "few.train.gz"
    inputs.write_bytes(gzip.compress(b"".join(b"news-b1-00train-f00001-s%d\t0.9\tPes %d.\tThe dog %d.\n" % (n, n, n) for n in range(20))))
    args = ["IngestBitext", "--inputs", str(inputs), "--paranmt-direct-num-workers", "2"]
    quiet = printed_lines(luigi_command(tmp_path, *args))
    assert not [line for line in quiet if "apache_beam" in line]
    verbose = printed_lines(luigi_command(tmp_path, *args, "--IngestBitext-num-shards", "4", "--log-level", "DEBUG"))
    assert [line for line in verbose if "apache_beam" in line] and any("Informed scheduler" in line for line in verbose)


def dev_mean(cell: dict) -> float:
    """A sweep cell's mean of the two development sets (never a test set)."""
    return (cell["sts"]["STS 2017 (dev)"] + cell["sts"]["STS-B dev"]) / 2


def test_decile_auto_sweeps_the_corpus_chooses_on_the_dev_sets_trains_on_the_choice_and_reuses_the_sweep(demo_dir, demo_build, kit_demo):
    """The choice is the best two consecutive deciles by the cells' own dev scores (recomputed
    here from the page's data), with the cells trained in two worker processes; only the command's own task prints its result (the ten cells are
    TrainOnFiltered tasks too); DecileSweep with the same cells trains nothing; and run again, the
    command builds nothing and prints the same result."""
    command = ["TrainOnFiltered", "--decile", "auto", "--sts-dir", str(demo_dir / "sts"), "--ChooseDeciles-sweep-pairs", "20",
               "--ChooseDeciles-sweep-min-pairs", "20", *(f"--{name.replace('_', '-')}={value}" for name, value in TINY.items())]
    lines = printed_lines(luigi_command(demo_dir, *command, "--workers", "2", python=kit_demo.python))  # the cells two at a time
    page = Path(next(line for line in lines if line.startswith("Chosen on ")).split("Evidence: ")[1]).parent
    report = json.loads((page / "report.json").read_text())
    cells, choice = report["data"]["cells"]["pp"], report["data"]["choice"]
    assert len(cells) == 10 and {cell["pairs"] for cell in cells.values()} == {20}
    windows = {(d, d + 1): (dev_mean(cells[str(d)]) + dev_mean(cells[str(d + 1)])) / 2 for d in range(9)}
    best = max(windows, key=windows.get)
    assert (choice["scorer"], choice["deciles"], choice["dev_sets"]) == ("pp", list(best), ["STS 2017 (dev)", "STS-B dev"])
    result = lines[lines.index(next(line for line in lines if line.startswith("Chosen on "))):]
    assert result[0].startswith(f"Chosen on STS 2017 (dev) and STS-B dev (mean {windows[best]:.1f}): --scorer pp --decile {best[0]},{best[1]}.")
    assert [line for line in lines if line.startswith("Encoder word_avg: ")] == [result[1]]
    chosen = json.loads((Path(result[1].split(" ")[2]) / "training.json").read_text())
    assert chosen["pairs"] > 20  # the chosen deciles' pairs, all of them, not a sweep cell's sample
    sweep = ["DecileSweep", "--scorers", "pp", "--model", "word_avg", "--epochs", "1", "--n-pairs", "20", "--sts-dir", str(demo_dir / "sts"),
             *(f"--{name.replace('_', '-')}={value}" for name, value in TINY.items() if name not in ("model", "epochs"))]
    swept = printed_lines(luigi_command(demo_dir, *sweep, python=kit_demo.python))
    assert [line.split()[1] for line in swept if " complete: " in line] == ["experiments/decile-sweep"], swept
    again = printed_lines(luigi_command(demo_dir, *command, python=kit_demo.python))
    assert not [line for line in again if " complete: " in line] and again[-len(result):] == result


def test_decile_auto_on_a_corpus_too_small_to_sweep_is_one_line_naming_the_setting(demo_dir, demo_build, kit_demo):
    result = luigi_command(demo_dir, "TrainOnFiltered", "--decile", "auto", "--scorer", "auto", "--sts-dir", str(demo_dir / "sts"),
                           python=kit_demo.python)
    assert result.returncode == 30, result.stdout + result.stderr
    [error] = [line for line in (result.stdout + result.stderr).splitlines() if "ERROR" in line]
    assert ("pairs that pass the rules, fewer than a sweep cell needs (--ChooseDeciles-sweep-min-pairs 1000); "
            "give --scorer and --decile instead") in error
