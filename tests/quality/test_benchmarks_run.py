"""The benchmark scripts still run, at toy sizes, and their agreement checks pass.

No timing is asserted (speed is measured in ``benchmarks/``, never tested): these runs only
keep the one-command benchmarks from rotting as the routes they time change. Each script
compares its project route with its baseline before timing, and a failed comparison exits
non-zero or is recorded in the JSON, which is what is checked here.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
TOY = ["--repeats", "1", "--warmup", "0", "--threads", "1"]


def _run(script: str, out: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *TOY, "--out", str(out),
                           *args], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def test_trainer_benchmark_runs_and_the_loss_curves_agree(tmp_path):
    record = _run("bench_trainer.py", tmp_path / "t.json", "--seeds", "1", "--epochs", "50",
                  "--baseline-epochs", "1", "--bare-epochs", "0", "--check-epochs", "2")
    check = record["curve_check"]
    assert check["passed"] is True
    assert check["float64_project_vs_author"] <= check["tolerance_float64"]
    assert {r["variant"] for r in record["rows"]} >= {"project, diagnostics every 50",
                                                       "author-style loop"}


def test_energy_ascent_benchmark_runs_and_agrees_start_by_start(tmp_path):
    record = _run("bench_energy_ascent.py", tmp_path / "e.json", "--M", "5", "--starts", "8",
                  "--max-steps", "200")
    for row in record["rows"]:
        agreement = row.get("agreement_with_loop")
        if agreement is not None:
            # The same step rule in float64: end points agree to rounding, step counts exactly.
            assert agreement["energy_rel_diff"] < 1e-12
            assert agreement["starts_with_other_step_count"] == 0 or "chunk" in row["variant"]
    assert record["headline"]["min_wall"] > 0


def test_steepest_flow_benchmark_runs_at_the_accuracy_it_reports(tmp_path):
    record = _run("bench_steepest_flows.py", tmp_path / "s.json", "--inits", "4",
                  "--calibration-inits", "2")
    assert set(record["headline"]) == {"1e-06", "1e-08", "1e-10"}
    timed = [r for r in record["rows"] if "target" in r]
    assert timed and all(r["max_error"] <= r["target"] for r in timed)
