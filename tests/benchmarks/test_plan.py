"""The costed plan's arithmetic, its "not measured" handling and its command line (rates from a
file, so nothing is timed here)."""

import json
import subprocess
import sys

import pytest
from conftest import REPO, squeezed

from benchmarks.plan import Rate, load_rates, marginal_rate, plan_table, project, save_rates, total
from corpus.errors import InputError


def test_projection_divides_the_work_over_the_units():
    p = project(Rate("score", 1_000.0, "measured"), 51_400_000, 16)
    assert p.machine_hours == pytest.approx(51_400_000 / 1_000 / 3600)  # 14.28 core-hours
    assert p.wall_hours == pytest.approx(p.machine_hours / 16)
    assert p.stage.unit == "core"


def test_a_stage_without_a_rate_is_not_measured_and_leaves_the_total_open():
    gpu = project(Rate("backtranslate-gpu", None, "not measured: no GPU here"), 51_400_000, 8)
    assert gpu.wall_hours is None and gpu.machine_hours is None
    ingest = project(Rate("ingest", 2_000.0, "measured"), 7_200_000, 4)
    result = total([ingest, gpu])
    assert result.missing == ("backtranslate-gpu",) and result.wall_hours is None
    assert result.machine_hours == {"core": pytest.approx(1.0)}
    assert "| not measured | not measured |" in squeezed(plan_table([ingest, gpu]))


def test_totals_add_wall_hours_and_keep_core_and_gpu_hours_apart():
    stages = [project(Rate("ingest", 1_000.0, "m"), 3_600_000, 10),  # 3.6M items at 1,000/s: 1 core-hour
              project(Rate("backtranslate-gpu", 100.0, "given"), 3_600_000, 5),
              project(Rate("train", 500.0, "m"), 1_800_000, 1)]
    result = total(stages)
    assert result.missing == ()
    assert result.machine_hours == {"core": pytest.approx(1.0 + 1.0), "GPU": pytest.approx(10.0)}
    assert result.wall_hours == pytest.approx(0.1 + 2.0 + 1.0)
    table = squeezed(plan_table(stages))
    assert "| 10,000 GPU-h |" in table.splitlines()[3], "the paper's GPU-hours sit beside back-translation"


def test_marginal_rate_leaves_out_the_fixed_cost():
    assert marginal_rate({"items": 1_000, "cpu_seconds": 12.0}, {"items": 3_000, "cpu_seconds": 14.0}) == 1_000
    # noise at tiny sizes (no extra CPU time): the larger run's overall rate
    assert marginal_rate({"items": 100, "cpu_seconds": 2.0}, {"items": 300, "cpu_seconds": 2.0}) == 150


def test_bad_units_rates_and_rate_files_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="at least one GPU"):
        project(Rate("backtranslate-gpu", 10.0, "given"), 100, 0)
    with pytest.raises(InputError, match="positive"):
        project(Rate("score", -5.0, "given"), 100, 1)
    with pytest.raises(InputError, match="no such file"):
        load_rates(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text('{"score": 12}')
    with pytest.raises(InputError, match="not a rates file"):
        load_rates(tmp_path / "bad.json")
    (tmp_path / "odd.json").write_text('{"tokenize": {"per_unit_s": 1, "how": "x"}}')
    with pytest.raises(InputError, match="unknown stages tokenize"):
        load_rates(tmp_path / "odd.json")


def test_saved_rates_load_back(tmp_path):
    rates = {"score": Rate("score", 4_585.5, "measured here"), "backtranslate-gpu": Rate("backtranslate-gpu", None, "not measured")}
    save_rates(tmp_path / "rates.json", rates)
    assert load_rates(tmp_path / "rates.json") == rates


def run_plan(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks", "plan", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_plan_command_prints_the_projection_from_a_rates_file(tmp_path):
    rates = tmp_path / "rates.json"
    rates.write_text(json.dumps({
        "ingest": {"per_unit_s": 5_000, "how": "measured"}, "backtranslate-cpu": {"per_unit_s": 50, "how": "measured"},
        "score": {"per_unit_s": 2_000, "how": "measured"}, "train": {"per_unit_s": 2_500, "how": "measured"}}))
    done = run_plan("--rates", str(rates), "--pairs", "3600000", "--cores", "10", "--gpus", "2", "--train-pairs", "900000", "--epochs", "2")
    assert done.returncode == 0, done.stderr
    out = squeezed(done.stdout)
    # ingest 3.6M / 5,000 per core-s = 0.2 core-h; back-translation on CPU: 20 core-h, 2 h on 10 cores
    assert "| ingest (Beam, DirectRunner) | 5,000.0 pairs/s per core | measured | 3,600,000 pairs | 10 cores | 0.02 | 0.2 core-h |" in out
    assert "| 3,600,000 sentences | 10 cores | 2 | 20 core-h | 10,000 GPU-h |" in out
    assert "| back-translation on GPU | not measured | not measured: no GPU here; pass --gpu-sentences-per-s |" in out
    assert "Total with back-translation on GPU: incomplete, backtranslate-gpu not measured" in out
    # scoring 0.5 core-h, 0.05 h; training 900k × 2 epochs at 2,500 pair-epochs/s on one core: 0.2 h
    assert "Total with back-translation on CPU: 2.27 h wall, 20.9 core-hours." in out
    given = squeezed(run_plan("--rates", str(rates), "--gpu-sentences-per-s", "500", "--pairs", "3600000", "--gpus", "2").stdout)
    assert ("| back-translation on GPU | 500.0 sentences/s per GPU | given: --gpu-sentences-per-s | 3,600,000 sentences | 2 GPUs | 1 | "
            "2 GPU-h |") in given


def test_plan_command_refuses_a_bad_rates_file_in_one_line(tmp_path):
    (tmp_path / "rates.json").write_text("not json")
    done = run_plan("--rates", str(tmp_path / "rates.json"))
    assert done.returncode != 0
    assert done.stderr.strip().startswith("error: --rates") and "Traceback" not in done.stderr
