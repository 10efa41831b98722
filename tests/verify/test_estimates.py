"""Estimates before a run: ``check --dry-run`` prints the plan, a long run needs ``--yes``, and
this machine's own store wins over the shipped measurements."""
import json

from verify.cli import main
import pytest

from verify import references
import verify.estimates as estimates
from verify.estimates import (
    CONFIRM_SECONDS,
    Estimate,
    Load,
    describe_seconds,
    estimate,
    for_load,
    total,
)
from verify.registry import builtin_claims
from verify.store import ResultStore


def test_every_claim_has_a_shipped_quick_estimate_on_the_cpu():
    ids = [c.id for c in builtin_claims()]
    missing = [i for i in ids if estimate(i, "quick", "cpu").seconds is None]
    assert not missing, f"add them to verify/measured_times.json: {missing}"


def test_store_history_on_this_device_wins(tmp_path):
    store = ResultStore(tmp_path / "s.sqlite")
    record = {"id": "li2.eq2", "fidelity": "full", "device": "cuda:0", "verdict": "pass",
              "seconds": 3.5, "seed": 0, "dtype": "float64", "parameters": {}}
    store.put("k1", record, revision=None)
    assert estimate("li2.eq2", "full", "cuda", store) == Estimate(
        "li2.eq2", 3.5, "this machine's store",
        assumes="this machine, at that run's load (not recorded)")
    # another device's run does not count: the shipped CPU measurement is used
    assert estimate("li2.eq2", "full", "cpu", store).source.startswith("shipped")


def test_totals_spread_over_jobs_and_never_below_the_longest():
    es = [Estimate("a", 100.0, "x"), Estimate("b", 10.0, "x"), Estimate("c", None, "none")]
    assert total(es, jobs=1) == (110.0, 1)
    assert total(es, jobs=4) == (100.0, 1)
    assert describe_seconds(30) == "30 s" and describe_seconds(3 * 86400) == "3.0 days"


def test_a_modelled_cost_says_it_was_extrapolated(monkeypatch):
    monkeypatch.setattr(estimates, "_from_reference", lambda *a: None)
    e = estimate("li2.fig3", "full", "cpu")
    assert e.seconds == 2580 and "extrapolated from the trainer's per-epoch cost" in e.source


def quiet(monkeypatch, one_minute=0.0, cores=2):
    """This machine's load as the CLI sees it, fixed."""
    monkeypatch.setattr(estimates.Load, "now", classmethod(lambda cls: cls(one_minute, cores)))


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    quiet(monkeypatch)
    assert main(["check", "li2.fig3", "li2.eq2", "--fidelity", "full", "--dry-run",
                 "--store", "off"]) == 0
    out = capsys.readouterr().out
    # the figures come from the estimate itself (a new reference result changes them),
    # scaled from the reference's load to the quiet one set here
    fig3 = estimate("li2.fig3", "full", "cpu")
    line = next(x for x in out.splitlines() if x.startswith("li2.fig3"))
    assert f"({fig3.basis()}; x" in line and "for the load 0.0 on 2 cores now)" in line
    assert "2 claim(s) at full fidelity" in out and "at the load 0.0 on 2 cores now" in out
    assert not (tmp_path / "results.json").exists()


def test_a_long_run_needs_yes_and_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    quiet(monkeypatch)
    (tmp_path / "results.json").write_text(json.dumps({"earlier": True}))
    assert estimate("li2.fig3", "full", "cpu").seconds > CONFIRM_SECONDS
    assert main(["check", "li2.fig3", "--fidelity", "full", "--device", "cpu",
                 "--store", "off"]) == 2
    err = capsys.readouterr().err
    fig3 = estimate("li2.fig3", "full", "cpu")
    total_text = err.split("estimated at ")[1].split(" (")[0]
    assert f"(longest li2.fig3, ~{total_text}: {fig3.basis()}; x" in err
    assert "--yes" in err and err.count("\n") == 1
    assert json.loads((tmp_path / "results.json").read_text()) == {"earlier": True}


def test_every_estimate_says_the_machine_state_it_assumes():
    """Quick runs were measured on 2 quiet cores, medium ones in CPU seconds, references at
    their recorded load, H100 runs on the GPU; the text says which (issue 31)."""
    assert estimate("li2.eq2", "quick", "cpu").basis().endswith("on 2 quiet cores")
    assert "no waiting (CPU seconds)" in estimate("li2.fig3", "medium", "cpu").assumes
    ref = estimate("li2.eq6", "full", "cpu")
    made = references.load("li2.eq6").provenance["load"]
    one = made.get("1min", (made.get("before") or {}).get("1min"))
    assert ref.source.startswith("reference result") and ref.assumes == f"2 cores at load {one:.1f}"
    assert ref.contention == pytest.approx(one / 2)
    gpu = estimate("li2.fig3", "full", "cuda")
    assert gpu.assumes == "one H100" and for_load(gpu, Load(9.0, 2), 2) == gpu


def test_a_loaded_machine_scales_the_estimate_and_says_so():
    e = estimate("li2.eq2", "quick", "cpu")
    # 6 runnable threads of others + 2 of ours on 2 cores: each thread gets a quarter core
    slow = for_load(e, Load(one_minute=6.0, cores=2), runnable=2)
    assert slow.seconds == pytest.approx(4 * e.seconds)
    assert slow.basis().endswith("on 2 quiet cores; x4.0 for the load 6.0 on 2 cores now")
    # a quiet machine, or one within the band of the measured state, keeps the measurement
    assert for_load(e, Load(0.4, 2), runnable=2) == e
    assert for_load(e, Load(0.0, 16), runnable=2) == e
    # a reference measured at a load above 2 is faster on a quiet machine, and says so
    ref = estimate("li2.eq6", "full", "cpu")
    assert ref.contention > 1
    fast = for_load(ref, Load(0.0, 2), runnable=2)
    assert fast.seconds == pytest.approx(ref.seconds / ref.contention)
    assert f"x{1 / ref.contention:.1f}" in fast.scaled
    # the store does not record its load: never scaled
    stored = Estimate("x", 10.0, "this machine's store", assumes="this machine")
    assert for_load(stored, Load(20.0, 2), runnable=2) == stored


def test_the_cli_scales_by_the_load_it_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    quiet(monkeypatch, one_minute=8.0)
    assert main(["check", "li2.eq2", "li2.eq6", "--dry-run", "--store", "off",
                 "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    eq2 = estimate("li2.eq2", "quick", "cpu")
    # 8 + 2 threads on 2 cores: x5
    assert f"~{describe_seconds(eq2.seconds * 5)}" in out
    assert "x5.0 for the load 8.0 on 2 cores now" in out
    assert out.splitlines()[-1].endswith("at the load 8.0 on 2 cores now")
