"""``benchmarks/gpu_session.py --device cpu --smoke`` runs end to end, as the device will run it.

No timing is asserted (as in ``test_benchmarks_run.py``): the run only has to finish, write
its files, pass its own agreement check and record a claim's verdict. It runs in a child with
``latex2mathml``, ``dask`` and ``distributed`` made unimportable (``sys.modules[name] = None``)
before anything is imported, because the device machine has none of them: an import of one on
the script's path, the check path included, fails the run here first. The budget is raised
from the smoke's 60 s so that a loaded machine still reaches the claim (the path is tested, not
the speed).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_session.py"
ABSENT_ON_DEVICE = ("latex2mathml", "dask", "distributed", "pylatexenc")

WRAPPER = """
import runpy, sys
for name in {absent!r}:
    sys.modules[name] = None        # import name -> ImportError, as where it is not installed
sys.argv = [{script!r}, *sys.argv[1:]]
runpy.run_path({script!r}, run_name="__main__")
"""


def test_gpu_session_smoke_runs_on_the_cpu_without_the_optional_packages(tmp_path):
    out = tmp_path / "gpu"
    code = WRAPPER.format(absent=ABSENT_ON_DEVICE, script=str(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, "--device", "cpu", "--smoke",
                           "--budget-s", "240", "--out", str(out)], capture_output=True,
                          text=True, timeout=300, check=False, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "agreement" in done.stderr and "left]" in done.stderr      # progress lines

    for name in ("environment.json", "agreement.json", "timing.json", "summary.json",
                 "summary.md"):
        assert (out / name).is_file(), name
    env_record = json.loads((out / "environment.json").read_text())
    assert env_record["precision"]["cuda_matmul_allow_tf32"] is False
    assert env_record["fp32_peak_flops"] is None            # a CPU: no fraction of peak

    agreement = json.loads((out / "agreement.json").read_text())
    assert agreement["passed"] is True
    assert agreement["loss_max_rel_diff"] <= agreement["loss_tolerance"]

    timing = json.loads((out / "timing.json").read_text())
    assert timing["rows"] and all(r["epochs_x_seeds_per_second"] > 0 for r in timing["rows"])
    assert {r["mode"] for r in timing["rows"]} == {"eager"}
    assert all(r["fraction_of_fp32_peak"] is None for r in timing["rows"])
    assert timing["skipped"]                                 # compile: skipped with a reason

    summary = json.loads((out / "summary.json").read_text())
    ran = [c for c in summary["claims"] if c["status"] == "ran"]
    assert ran and ran[0]["verdict"] in {"pass", "fail", "inconclusive", "error"}
    assert (out / ran[0]["json"]).is_file()
    assert ran[0]["id"] in (out / "summary.md").read_text()


def _module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_session", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_session"] = module     # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_flop_count_peak_table_and_cost_model():
    g = _module()
    # the three top-layer GEMMs, 2nKM each, at the Fig. 3 size: the 1.76 GFLOP
    assert g.FIG3.n == 2016
    assert abs(g.step_flops(g.FIG3) - 1.76e9) / 1.76e9 < 0.01
    assert g.fp32_peak("NVIDIA H100 80GB HBM3")[0] == 67e12
    assert g.fp32_peak("NVIDIA H100 PCIe")[0] == 51e12
    assert g.fp32_peak("NVIDIA H200")[0] == 67e12
    assert g.fp32_peak("NVIDIA H100 NVL")[0] is None and g.fp32_peak(None)[0] is None
    from verify import registry
    registry.load_builtin_claims()
    for claim_id in g.PLAN:           # every planned claim has a cost at its full parameters
        flops, steps, dtype = g.training_cost(claim_id, registry.get(claim_id).parameters["full"])
        assert flops > 1e12 and steps > 0 and dtype in ("float32", "float64")
