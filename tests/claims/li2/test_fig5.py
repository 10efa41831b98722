"""li2.fig5 (its verdict and control: tests/quality/verdicts.py): each route can fail; the group
tables, the threshold estimators and the point function behave as documented."""
import dataclasses
import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.phase_boundary import (
    crossing,
    group_table,
    phase_point,
    phase_sweep_point,
    seed_thresholds,
)
from verify.claims.li2._groups import build_group
from verify.claims.li2._phase_transition import ratio_grid
from verify.claims.li2._trained import TRAINED
from verify.claims.li2.fig5 import transition_width
from verify.registry import get
from verify.runner import run_claim
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
    assert all(e.ok for e in quick.evidence)


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
