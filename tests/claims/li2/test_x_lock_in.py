"""li2.x.lock-in: the quick run's findings (what the third party's detector and level metric do
at a scaled-down size), its rejected control, the surrogate negative control and the
fraction rule."""
import dataclasses
import math

import pytest
import torch

from numerics.li2.lock_in import first_fire, slopes
from verify.claims.li2._trained import TRAINED
from verify.claims.li2.x_lock_in import _fraction, surrogate_ratios
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

ID = "li2.x.lock-in"


@pytest.fixture(scope="module")
def quick():
    return run_claim(get(ID))


def _item(result, form):
    (e,) = [e for e in result.evidence if e.parameters.get("form") == form]
    return e


def test_quick_findings(quick):
    """Z_23, K=128, 8 seeds per group, grokking on the third party's clock (test 0.99 at epochs
    120-142): the detector fires in 8/8 decay runs and at window 5 in 8/8 controls (both as
    stated); at window 20 it also fires in 6/8 controls and within a few epochs of test 0.99
    rather than 35 after (both undecided); rho's scaled threshold is crossed before test 0.5
    in 5/8 decay runs (undecided) and in 8/8 scarce runs that do not grok (as stated)."""
    assert quick.verdict is Verdict.INCONCLUSIVE, quick.reason
    assert _item(quick, "fires_with_decay").ok is True
    assert _item(quick, "short_window_fires_in_controls").ok is True
    assert _item(quick, "rho_without_grokking").ok is True
    for form in ("fires_in_controls", "lags", "rho_leads"):
        assert _item(quick, form).ok is None, form
    controls = _item(quick, "fires_in_controls").parameters
    assert controls["hits"] <= 3          # "does not fire" held in at most 3 of 8 controls
    lag = quick.figures["lag and lead (decay runs, epochs)"]["fire - t_0.99"]
    assert all(-10 <= x <= 20 for x in lag)
    assert quick.control.rejected
    assert all(a.holds for a in quick.assumptions)


def test_the_routes_agree_and_the_surrogate_does_not_fire(quick):
    routes = [e for e in quick.evidence if e.quantity.startswith("|")]
    assert len(routes) == 2 and all(e.ok is True for e in routes)
    (surrogate,) = [e for e in quick.evidence if "random directions" in e.quantity]
    assert surrogate.ok is True and surrogate.parameters["hits"] == 8


def test_every_quick_run_trained_and_the_decay_runs_grokked(quick):
    ran = [(a.name, a.holds) for a in quick.assumptions if a.source == "ran"]
    assert ran == [(TRAINED, True), ("the decay runs grokked", True)]


def test_a_stated_direction_can_fail(quick):
    claim = get(ID)
    variant = dataclasses.replace(claim, stated={**claim.stated,
                                                 "fires_with_decay": lambda: -1.0})
    result = run_claim(variant, control=False)             # the training is memoised
    assert result.verdict is Verdict.FAIL
    assert _item(result, "fires_with_decay").ok is False


def test_the_fraction_rule_confirms_refutes_and_abstains():
    ok = _fraction("q", 8, 8, 0.99, {})
    bad = _fraction("q", 0, 8, 0.99, {})
    mid = _fraction("q", 4, 8, 0.99, {})
    none = _fraction("q", 0, 0, 0.99, {})
    assert (ok.ok, bad.ok, mid.ok, none.ok) == (True, False, None, None)
    # 5/5 does not clear 1/2 at a family-wise level of 0.99: the >= 8 seeds assumption
    assert _fraction("q", 5, 5, 0.99, {}).ok is None


def test_surrogate_windows_of_equal_norms_stay_flat_and_do_not_fire():
    T = 200
    norms = torch.ones(T, 3, dtype=torch.float64)
    ratio = surrogate_ratios(norms, 5000, 20, seed=0)
    assert ratio.shape == (T + 1, 3) and torch.isnan(ratio[:3]).all()
    # random directions in 5000 dimensions: cosines ~ 1/sqrt(5000), levels within a few %
    assert float(ratio[20:].max()) < 1.5
    assert torch.isinf(first_fire(slopes(ratio, 25), 0.04, 100)).all()
    # the norms alone set the levels: one large change makes sigma_1, not sigma_2 / sigma_3
    norms[100] = 10.0
    spike = surrogate_ratios(norms, 5000, 20, seed=0)
    assert float(spike[101:120].max()) < 1.5


def test_surrogate_rejects_fewer_dimensions_than_changes():
    with pytest.raises(ValueError, match="size"):
        surrogate_ratios(torch.ones(10, 1, dtype=torch.float64), 5, 3, seed=0)


def test_parameters_keep_the_third_partys_detector_and_size_at_full():
    full = get(ID).parameters["full"]
    assert (full["group"], full["K"], full["p"], full["lr"], full["eta"]) == \
        ("Z71", 2048, 0.4, 1e-3, 2e-4)
    assert (full["window"], full["lag"], full["slope"], full["t_min"]) == (20, 25, 0.04, 100)
    assert full["rho_reference"] is None and full["relu"] == {"epochs": 800}
    assert math.isclose(full["rho_threshold"], 0.075)
