"""li2.fig6: the quick run (its findings and its rejected control), the sign decisions of the
shared learning-rate route, and a network left at chance."""
import dataclasses

import numpy as np
import pytest

from verify.claims.li2._lr_solutions import (
    SETTLED,
    Outcomes,
    energy_gap_evidence,
    trend_evidence,
)
from verify.claims.li2._trained import TRAINED
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig6"))


def test_at_the_end_of_the_budget_a_small_lr_more_often_generalises_but_runs_still_move(quick):
    """Z_23, p = 0.36 (the code's line: 0.375), lr in {0.01, 0.03, 0.3}, 8 seeds, 1000
    epochs: 4/8, 4/8 and 0/8 generalise, so no seed rises with lr and five fall; the
    non-generalising runs' learned nodes sit about 5% higher in E on the sphere, an interval
    above 0. Both items agree, but half the runs (lr 0.3 most: its test accuracy still climbs
    by about 0.3 over the last quarter) have not settled: inconclusive."""
    assert quick.verdict is Verdict.INCONCLUSIVE, quick.reason
    trend, energy = quick.evidence
    assert trend.ok is True and trend.measured["increasing seeds"] == 0
    assert trend.measured["decreasing seeds"] >= 4
    assert energy.ok is True and 1.0 < energy.measured["ratio of medians"] < 1.2
    assert quick.control.rejected
    ran = {a.name: a.holds for a in quick.assumptions if a.source == "ran"}
    assert ran == {TRAINED: True, SETTLED: False}
    assert all(a.holds for a in quick.assumptions if a.source != "ran")


def test_the_stated_trend_can_fail(quick):
    claim = get("li2.fig6")
    variant = dataclasses.replace(claim, stated={**claim.stated, "lr_trend": lambda: 1.0})
    result = run_claim(variant, control=False)             # the training is memoised
    assert result.evidence[0].ok is False and result.evidence[1].ok is True


def _outcomes(test, energy):
    test, energy = np.asarray(test, float), np.asarray(energy, float)
    return Outcomes("Z7", 0.5, (0.01, 0.1), test, energy, np.zeros_like(test))


def test_the_trend_is_undecided_when_no_seed_changes():
    o = _outcomes([[1.0, 0.5, 1.0, 0.2]] * 2, [[1.0] * 4] * 2)
    e = trend_evidence(o, -1.0)
    assert e.ok is None and "no interval" in e.note


def test_the_energy_needs_two_runs_of_each_kind():
    o = _outcomes([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.2]],
                  [[1.0, 1.1, 1.2, 1.3], [1.0, 1.1, 1.2, 9.0]])
    e = energy_gap_evidence("E", o, ~o.general, o.general, 1.0, {})
    assert e.ok is None and e.measured["runs"] == [1, 7]


def test_a_clear_energy_gap_is_confirmed_or_refuted_by_its_side():
    o = _outcomes([[1.0] * 4, [0.1] * 4], [[1.0, 1.1, 1.0, 1.05], [2.0, 2.1, 1.9, 2.2]])
    assert energy_gap_evidence("E", o, ~o.general, o.general, 1.0, {}).ok is True
    wrong = energy_gap_evidence("E", o, ~o.general, o.general, -1.0, {})
    assert wrong.ok is False and wrong.discrepancy > 0.5


def test_networks_left_at_chance_do_not_pass():
    result = run_claim(get("li2.fig6"), control=False, overrides={
        "settings": (("Z7", 0.6),),
        "training": {"K": 8, "eta": 1e-3, "lrs": (10.0, 20.0), "seeds": tuple(range(6)),
                     "epochs": 10, "eval_every": 5, "optimizer": "adam", "activation": "x2",
                     "loss": "mse_class", "dtype": "float32"}})
    ran = {a.name: a.holds for a in result.assumptions if a.source == "ran"}
    assert ran[TRAINED] is False
    assert result.verdict is Verdict.INCONCLUSIVE
