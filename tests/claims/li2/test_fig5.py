"""li2.fig5 (its verdict and control: tests/quality/verdicts.py): each route can fail; the group
tables, the threshold estimators and the point function behave as documented."""
import dataclasses
import functools
import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.grok_run import grok_run, stop_index
from numerics.li2.phase_boundary import (
    crossing,
    group_table,
    phase_point,
    phase_sweep_point,
    seed_thresholds,
)
from verify import design
from verify.claims.li2._groups import build_group
from verify.claims.li2._phase_transition import (
    FIG5_PARAMETERS,
    audit_grid,
    code_line,
    early_rule,
    locate_threshold,
    ratio_grid,
)
from verify.claims.li2._trained import TRAINED
from verify.claims.li2.fig5 import transition_width
from verify.registry import get
from verify.runner import run_claim
from verify.sweep import run_sweep
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig5"))


def test_has_seven_evidence_items(quick):
    assert len(quick.evidence) == 7


@pytest.mark.parametrize("name, wrong", [
    ("transition", lambda: (1.0, 0.0)),                       # generalises at small p only
    ("threshold_scale", lambda M: (math.log(M) / M) ** 2),   # the dotted line squared
    ("threshold_scale", lambda M: (math.log(M) / M) ** 0.5),
])
def test_each_route_can_fail(quick, name, wrong):
    claim = get("li2.fig5")
    variant = dataclasses.replace(claim, stated={**claim.stated, name: wrong})
    result = run_claim(variant, control=False)   # the training runs are cached
    assert result.verdict is Verdict.FAIL
    # two groups at quick cannot resolve the order to 10%: undecided, never failed
    assert all(e.ok is not False for e in quick.evidence)


def test_a_sweep_that_fits_nothing_makes_the_verdict_inconclusive(quick):
    """Adam at lr 10 leaves Z11's nets near chance at every ratio: no transition, which says
    nothing about the caption."""
    assert all(a.holds for a in quick.assumptions if a.source == "ran")
    result = run_claim(get("li2.fig5"), control=False,
                       overrides={"training.lr": 10.0, "panels": {"cyclic": {"Z11": 1}}})
    assert result.verdict is Verdict.INCONCLUSIVE, result.reason
    assert [(a.name, a.holds) for a in result.assumptions if a.source == "ran"] == [
        (f"{TRAINED} (Z11)", False)]


def test_the_panels_are_reported_with_the_code_line(quick):
    panel = quick.figures["panel cyclic"]
    assert set(panel) == {"Z11", "Z23"}
    for g in panel.values():
        assert g["p* status"] == "bracketed" and g["transition width (p_hi / p_lo)"] > 1


@pytest.mark.parametrize("name", ["Z1", "Z7", "D1", "D2", "D5", "Z2xZ3", "D3xZ2", "Z2xZ2xZ3",
                                  "Z4xD4"])
def test_group_tables_are_the_theory_layers(name):
    assert torch.equal(group_table(name), torch.tensor(build_group(name).table))


@pytest.mark.parametrize("bad", ["Q8", "Z0", "S3", "Z3xx", ""])
def test_bad_group_names_are_refused(bad):
    with pytest.raises(ValueError, match="group"):
        group_table(bad)


@settings(max_examples=60)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=8), st.floats(0.05, 0.95))
def test_crossing_is_the_first_interpolated_crossing(fractions, level):
    ratios = [0.1 * (k + 1) for k in range(len(fractions))]
    p, status = crossing(ratios, fractions, level)
    first = next((i for i, f in enumerate(fractions) if f >= level), None)
    if first is None:
        assert (p, status) == (None, "above grid")
    elif first == 0:
        assert (p, status) == (None, "below grid")
    else:
        assert status == "bracketed" and ratios[first - 1] <= p <= ratios[first] + 1e-12


@settings(max_examples=60)
@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=2, max_size=7))
def test_seed_thresholds_bracket_the_last_failure(success):
    ratios = [0.1 * 1.2**k for k in range(len(success))]
    for s, (t, status) in enumerate(seed_thresholds(ratios, success)):
        column = [row[s] for row in success]
        if not column[-1]:
            assert status == "above grid"
        elif all(column):
            assert status == "below grid"
        else:
            last_fail = max(i for i, c in enumerate(column) if not c)
            assert math.isclose(t, math.sqrt(ratios[last_fail] * ratios[last_fail + 1]))


def test_transition_width_and_grid():
    pt = {"p_values": [0.2, 0.3, 0.4, 0.5],
          "best_test_acc": [[0.1, 0.2], [0.3, 0.6], [1.0, 0.99], [1.0, 1.0]]}
    assert transition_width(pt) == pytest.approx(0.4 / 0.3)
    pt["best_test_acc"][0] = [0.9, 0.9]
    pt["best_test_acc"][1] = [0.9, 0.9]
    assert math.isinf(transition_width(pt))
    grid = ratio_grid(11, 1, (0.7, 1.0, 2.0))
    assert grid == sorted(grid) and grid[-1] == 0.95


def test_phase_point_returns_plain_data():
    out = phase_point("Z5", [0.5, 0.8], [0, 1], 5, K=8, lr=1e-2, eta=0.0, eval_every=2)
    text = json.dumps(out)
    assert json.loads(text)["M"] == 5
    assert len(out["best_test_acc"]) == 2 and len(out["best_test_acc"][0]) == 2
    assert len(out["grok_fraction"]) == 2 and len(out["seed_thresholds"]) == 2
    point = {"group": "Z5", "p_values": [0.5, 0.8], "seeds": [0, 1], "epochs": 5, "K": 8,
             "lr": 1e-2, "eta": 0.0, "eval_every": 2}
    again = phase_sweep_point(json.loads(json.dumps(point)))
    assert again["best_test_acc"] == out["best_test_acc"]     # same point, same result
    with pytest.raises(ValueError, match="p_values"):
        phase_point("Z5", [0.8, 0.5], [0], 5, K=8, lr=1e-2, eta=0.0)


# --- the sequential design (full fidelity) -------------------------------------------------------

SPEC = {"kind": "bisection", "range": (0.5, 2.0), "resolution": 1.1,
        "plan": {"batch": 7, "cap": 20, "alpha": 0.05},
        "rule": {"threshold": 0.99, "hold": 1, "give_up_epoch": 100, "give_up_level": 0.5}}
TRAINING = {"K": 2048, "lr": 5e-4, "eta": 2e-4, "epochs": 300, "seeds": tuple(range(20)),
            "loss": "mse_class", "activation": "x2", "eval_every": 10, "dtype": "float32"}
MULTIPLIERS = FIG5_PARAMETERS["full"]["multipliers"]


def synthetic_sweeper(thresholds, calls=None):
    """Runs drawn, not trained: seed s groks at ratio p iff p >= thresholds[s] (at epoch 50),
    else it is given up; ``calls`` collects every point asked for."""
    def sweeper(fn, points, *, name, batch_size):
        out = []
        for pt in points:
            if calls is not None:
                calls.append(pt)
            e = pt["eval_every"]
            if pt["p"] >= thresholds[pt["seed"]]:
                acc, outcome, at = [0.0] * 5 + [1.0], "reached", 5
            elif pt["give_up_epoch"] is None:
                acc, outcome, at = [0.0] * (pt["epochs"] // e + 1), "undecided", None
            else:
                k = pt["give_up_epoch"] // e
                acc, outcome, at = [0.0] * (k + 1), "not reached", k
            out.append({"group": pt["group"], "M": 23, "p": pt["p"], "seed": pt["seed"],
                        "epochs": pt["epochs"], "outcome": outcome, "decided_at": at,
                        "epochs_trained": pt["epochs"] if outcome == "undecided"
                        else len(acc) * e, "test_acc": acc, "best_test_acc": max(acc),
                        "final_train_acc": 1.0, "epoch_grokked": None, "seconds": 0.0})
        return out
    return sweeper


@settings(max_examples=25, deadline=None)
@given(st.floats(0.55, 1.8))
def test_the_bisection_finds_the_full_grids_bracket(c):
    """Seeds that all switch at c times the code's line: the bisection's bracket holds the
    switch, is at most the resolution wide, and meets the full grid's (audit_grid)."""
    line = code_line(23, 1)
    thresholds = [c * line] * 20
    pt = locate_threshold(synthetic_sweeper(thresholds), "Z23", 1, TRAINING, SPEC, MULTIPLIERS)
    b = pt["design"]["bracket"]
    assert b["status"] == "resolved" and b["lo"] < c * line <= b["hi"]
    assert b["width"] <= SPEC["resolution"]
    assert pt["p_star_status"] == "bracketed" and b["lo"] < pt["p_star"] < b["hi"]
    grid = audit_grid(synthetic_sweeper(thresholds), "Z23", 1, TRAINING, SPEC, MULTIPLIERS)
    assert grid["bracket"]["lo"] <= b["hi"] and b["lo"] <= grid["bracket"]["hi"]
    assert grid["disagreement"]["count"] == 0
    # far from the switch the first look of 7 seeds decides; the work is below the grid's
    assert min(pr["sequential"]["trials"] for pr in pt["design"]["probes"]) == 7
    assert pt["design"]["runs"] < pt["design"]["full grid"]["runs"] / 2
    assert pt["replay_mismatches"] == 0


def test_undecided_at_the_cap_is_read_as_the_grid_reads_it():
    """Half the seeds switch early and half late: at a ratio between, 20 seeds leave the
    interval across 1/2, and the probe is read by the 20-seed share, as the grid is."""
    line = code_line(23, 1)
    thresholds = [0.9 * line if s % 2 else 1.3 * line for s in range(20)]
    pt = locate_threshold(synthetic_sweeper(thresholds), "Z23", 1, TRAINING, SPEC, MULTIPLIERS)
    at_cap = [pr for pr in pt["design"]["probes"] if pr["read_at_cap"]]
    assert at_cap and all(pr["sequential"]["trials"] == 20 and pr["holds"] ==
                          (pr["sequential"]["estimate"] >= 0.5) for pr in at_cap)
    assert pt["design"]["bracket"]["lo"] < 0.9 * line <= pt["design"]["bracket"]["hi"]


@settings(max_examples=100)
@given(st.lists(st.floats(0, 1), max_size=30), st.floats(0.3, 1.0), st.integers(1, 4),
       st.one_of(st.none(), st.integers(0, 30)), st.floats(0.0, 0.3))
def test_the_point_functions_stop_is_verify_designs_decision(acc, threshold, hold, after, gap):
    """numerics cannot import verify: its stop (stop_index) is checked against
    verify.design.decide, the rule the claim states."""
    rule = early_rule({"threshold": threshold, "hold": hold,
                       "give_up_epoch": None if after is None else 10 * after,
                       "give_up_level": threshold - gap}, 10)
    d = design.decide(rule, acc)
    assert stop_index(acc, threshold, hold, after, threshold - gap) == (d.outcome, d.at)


def test_a_run_stops_where_its_rule_decides():
    kw = {"K": 16, "lr": 0.02, "eta": 3e-3, "eval_every": 5}
    given_up = grok_run("Z7", 0.3, 0, 60, give_up_epoch=20, give_up_level=0.99, **kw)
    assert given_up["outcome"] == "not reached" and given_up["decided_at"] == 4
    assert given_up["epochs_trained"] == 25 and len(given_up["test_acc"]) == 5
    full = grok_run("Z7", 0.3, 0, 60, **kw)
    assert full["epochs_trained"] == 60 and full["eval_epochs"][-1] == 60
    assert full["test_acc"][:5] == given_up["test_acc"]          # the same run, cut short
    json.loads(json.dumps(full))
    with pytest.raises(ValueError, match="give_up_epoch"):
        grok_run("Z7", 0.3, 0, 60, give_up_epoch=23, **kw)


TINY = {"K": 8, "lr": 0.05, "eta": 1e-3, "epochs": 30, "seeds": tuple(range(6)),
        "loss": "mse_class", "activation": "x2", "eval_every": 5, "dtype": "float64"}
TINY_SPEC = {**SPEC, "plan": {"batch": 3, "cap": 6, "alpha": 0.2},
             "rule": {**SPEC["rule"], "give_up_epoch": 10}}


def test_a_killed_search_resumes_without_recomputing_a_finished_run(tmp_path):
    """The search's runs go through the sweep store one finished run at a time: killed after
    three looks, a rerun replays every stored run and computes only the rest, and ends where an
    uninterrupted search ends."""
    store = tmp_path / "s.sqlite"
    reused: list[bool] = []

    def sweeper(fn, points, *, name, batch_size, kill_at=None):
        if kill_at is not None and len(reused) >= kill_at:
            raise KeyboardInterrupt
        report = run_sweep(fn, points, name=name, batch_size=batch_size, store=store,
                           progress=None)
        reused.extend(o.reused for o in report.outcomes)
        return report.results

    with pytest.raises(KeyboardInterrupt):
        locate_threshold(functools.partial(sweeper, kill_at=9), "Z5", 1, TINY, TINY_SPEC,
                         MULTIPLIERS)
    finished = len(reused)
    assert finished >= 9 and not any(reused)
    reused.clear()
    resumed = locate_threshold(sweeper, "Z5", 1, TINY, TINY_SPEC, MULTIPLIERS)
    assert reused[:finished] == [True] * finished and not any(reused[finished:])
    fresh = locate_threshold(lambda fn, pts, *, name, batch_size: [fn(p) for p in pts],
                             "Z5", 1, TINY, TINY_SPEC, MULTIPLIERS)
    strip = {"seconds"}
    assert ({k: v for k, v in resumed.items() if k not in strip}
            == {k: v for k, v in fresh.items() if k not in strip})
    assert resumed["design"]["rule"]["text"] == ("test_acc >= 0.99 held for 1 consecutive "
                                                 "evaluation; not reached if no evaluation up "
                                                 "to index 2 had test_acc >= 0.5")
    assert resumed["replay_mismatches"] == 0


def test_the_full_design_is_runnable_and_its_first_look_decides():
    """Full fidelity's design: the cap is the paper's 20 seeds, the give-up an evaluated epoch
    within the budget, and 7 seeds that all agree decide a ratio at the first look."""
    full = FIG5_PARAMETERS["full"]
    spec, training = full["design"], full["training"]
    assert spec["plan"]["cap"] == len(training["seeds"]) == 20
    rule = spec["rule"]
    assert rule["give_up_epoch"] % training["eval_every"] == 0
    assert rule["give_up_epoch"] < training["epochs"]
    plan = design.SequentialPlan(**spec["plan"])
    for outcome, decision in ((False, "fails"), (True, "holds")):
        r = design.sequential_proportion(plan, lambda look, size, o=outcome: [o] * size, 0.5,
                                         ">=")
        assert (r.decision, r.seeds) == (decision, 7)
    assert all(a.holds(full) for a in get("li2.fig5").assumptions)
