"""Estimates before a run: ``check --dry-run`` prints the plan, a long run needs ``--yes``, and
this machine's own store wins over the shipped measurements."""
import json

from verify.cli import main
from verify.estimates import CONFIRM_SECONDS, Estimate, describe_seconds, estimate, total
from verify.registry import all_claims
from verify.store import ResultStore


def test_every_claim_has_a_shipped_quick_estimate_on_the_cpu():
    ids = [c.id for c in all_claims() if c.id.split(".")[0] in ("li2", "ns")]
    missing = [i for i in ids if estimate(i, "quick", "cpu").seconds is None]
    assert not missing, f"add them to verify/measured_times.json: {missing}"


def test_store_history_on_this_device_wins(tmp_path):
    store = ResultStore(tmp_path / "s.sqlite")
    record = {"id": "li2.eq2", "fidelity": "full", "device": "cuda:0", "verdict": "pass",
              "seconds": 3.5, "seed": 0, "dtype": "float64", "parameters": {}}
    store.put("k1", record, revision=None)
    assert estimate("li2.eq2", "full", "cuda", store) == Estimate(
        "li2.eq2", 3.5, "this machine's store")
    # another device's run does not count: the shipped CPU measurement is used
    assert estimate("li2.eq2", "full", "cpu", store).source.startswith("shipped")


def test_totals_spread_over_jobs_and_never_below_the_longest():
    es = [Estimate("a", 100.0, "x"), Estimate("b", 10.0, "x"), Estimate("c", None, "none")]
    assert total(es, jobs=1) == (110.0, 1)
    assert total(es, jobs=4) == (100.0, 1)
    assert describe_seconds(30) == "30 s" and describe_seconds(3 * 86400) == "3.0 days"


def test_a_modelled_cost_says_it_was_extrapolated(monkeypatch):
    import verify.estimates as estimates

    monkeypatch.setattr(estimates, "_from_reference", lambda *a: None)
    e = estimate("li2.fig3", "full", "cpu")
    assert e.seconds == 2580 and "extrapolated from the trainer's per-epoch cost" in e.source


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "li2.fig3", "li2.eq2", "--fidelity", "full", "--dry-run",
                 "--store", "off"]) == 0
    out = capsys.readouterr().out
    # the figures come from the estimate itself: a new reference result changes them
    fig3 = estimate("li2.fig3", "full", "cpu")
    assert f"li2.fig3   ~{describe_seconds(fig3.seconds)}  ({fig3.source})" in out
    assert "2 claim(s) at full fidelity" in out
    assert not (tmp_path / "results.json").exists()


def test_a_long_run_needs_yes_and_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"earlier": True}))
    assert estimate("li2.fig3", "full", "cpu").seconds > CONFIRM_SECONDS
    assert main(["check", "li2.fig3", "--fidelity", "full", "--device", "cpu",
                 "--store", "off"]) == 2
    err = capsys.readouterr().err
    expected = describe_seconds(estimate("li2.fig3", "full", "cpu").seconds)
    assert f"estimated at {expected}" in err and "--yes" in err and err.count("\n") == 1
    assert json.loads((tmp_path / "results.json").read_text()) == {"earlier": True}
