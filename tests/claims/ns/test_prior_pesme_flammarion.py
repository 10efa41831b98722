"""ns.prior.pesme-flammarion: the claim at quick fidelity, the derivation of the first jump
against the gradient flow on one coordinate over drawn problems, the stated forms on sympy and
torch, and that each route can fail."""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.escape import first_jump_time
from numerics.ns.steepest_flows import Regression
from tests.claim_results import quick_result
from theory.ns.escape_time import BETA, EPS, G0, A, B, H, derive_first_jump
from verify.claims.ns.prior_pesme_flammarion import (
    l2_first_jump,
    stated_first_jump,
    stated_mirror_map,
)

JUMP = derive_first_jump().result


def result():
    return quick_result("ns.prior.pesme-flammarion")


def test_each_route_fails_under_the_l2_control():
    failing = {e.route.value for e in result().control.evidence if e.ok is False}
    assert {"symbolic", "numeric", "rate"} <= failing


def test_error_shrinks_and_the_criterion_holds_at_the_smallest_scale():
    r = result()
    criterion = next(e for e in r.evidence if "accelerated time t/log(1/a)" in e.quantity)
    assert criterion.ok and criterion.discrepancy < 0.05
    trend = next(v for k, v in r.figures.items() if "relative error of t~" in k)
    errors = [abs(x) for x in trend["relative error"]]
    assert errors == sorted(errors, reverse=True)


def test_derivation_steps():
    assert sp.simplify(JUMP.mirror_map - sp.asinh(BETA / A**2) / 2) == 0
    assert sp.simplify(JUMP.accelerated_limit - 1 / G0) == 0
    # the offset: log(2B)/(2 g_0) from the frozen part, log(1/eps)/(2 g_0) from the fall
    expected = (sp.log(2 * (1 - EPS) * G0 / H) + sp.log(1 / EPS)) / (2 * G0)
    assert sp.simplify(sp.expand_log(JUMP.offset - expected, force=True)) == 0
    assert sp.simplify(sp.expand_log(JUMP.offset_at_half - sp.log(2 * G0 / H) / (2 * G0),
                                     force=True)) == 0


@settings(max_examples=4)
@given(st.floats(1.0, 2.0), st.floats(1.0, 2.0), st.floats(-5.0, -3.0))
def test_one_coordinate_flow_matches_the_derived_jump(alpha, gamma, log_a):
    """N = d = 1: grad L(beta) = alpha (alpha beta - gamma), so g_0 = alpha gamma, h = alpha^2
    exactly as in the derivation; at a <= 1e-3 the o(1) is O(a^2) (no runner-up). RK4 at
    dt = 0.02 and rates <= 2 g_0 <= 8: relative error ~1e-7."""
    a = 10**log_a
    problem = Regression(torch.tensor([[alpha]], dtype=torch.float64),
                         torch.tensor([gamma], dtype=torch.float64))
    g0, h = alpha * gamma, alpha**2
    beta1 = g0 / h
    jump = first_jump_time(problem, torch.tensor([a], dtype=torch.float64),
                           torch.tensor([beta1 / 2], dtype=torch.float64), dt=0.02,
                           max_steps=10**6)
    t = float(jump.time[0])
    assert int(jump.coordinate[0]) == 0
    derived = math.log(1 / a) / g0 + float(JUMP.offset_at_half.subs({G0: g0, H: h}))
    assert t == pytest.approx(derived, rel=1e-5)
    frozen = float(JUMP.frozen_time.subs({A: a, B: beta1 / 2, G0: g0}))
    assert frozen < t  # the gradient falls along the way, so the true jump is later


@given(st.lists(st.integers(-40, 40).filter(bool), min_size=2, max_size=6))
def test_stated_forms_agree_on_sympy_and_torch(entries):
    g = [sp.Rational(e, 16) for e in entries]
    exact = stated_first_jump(sp.Matrix(g))
    tensor = stated_first_jump(torch.tensor([float(x) for x in g], dtype=torch.float64))
    assert float(exact) == pytest.approx(float(tensor), rel=1e-15)
    l2 = l2_first_jump(sp.Matrix(g))
    assert float(l2) == pytest.approx(float(l2_first_jump(torch.tensor(
        [float(x) for x in g], dtype=torch.float64))), rel=1e-15)
    assert float(l2) <= float(exact)  # ||g||_2 >= ||g||_inf


@given(st.floats(-5.0, 5.0), st.floats(0.01, 1.0))
def test_mirror_map_on_sympy_and_torch(beta, a):
    exact = stated_mirror_map(sp.Float(beta), sp.Float(a))
    tensor = stated_mirror_map(torch.tensor(beta, dtype=torch.float64),
                               torch.tensor(a, dtype=torch.float64))
    assert float(exact) == pytest.approx(float(tensor), rel=1e-12, abs=1e-15)


def test_bad_input_names_the_parameter():
    problem = Regression(torch.ones(1, 1, dtype=torch.float64),
                         torch.ones(1, dtype=torch.float64))
    with pytest.raises(ValueError, match="a, levels"):
        first_jump_time(problem, torch.tensor([0.0], dtype=torch.float64),
                        torch.tensor([0.5], dtype=torch.float64), dt=0.1, max_steps=10)
    with pytest.raises(ValueError, match="levels: need shape"):
        first_jump_time(problem, torch.tensor([0.1], dtype=torch.float64),
                        torch.tensor([0.5, 0.5], dtype=torch.float64), dt=0.1, max_steps=10)


def test_a_scale_without_a_jump_is_inconclusive_not_a_crash():
    """Found by stress over the problem's size (issue 30 item 10): at N = 5, d = 29, seed
    18691 no coordinate reaches half its plateau at a = 0.1 or 0.01 within max_steps; the
    check raised on the NaN jump time, and now says which scales had no jump."""
    from verify.registry import get
    from verify.runner import run_claim
    r = run_claim(get("ns.prior.pesme-flammarion"), seed=18691, control=False, readings=False,
                  overrides={"N": 5, "d": 29, "dt": 1.0,
                             "a": (0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6)})
    assert r.verdict.value == "inconclusive"
    missing = [a for a in r.assumptions if not a.holds]
    assert any("no coordinate reached half its plateau" in a.detail and "0.1" in a.detail
               for a in missing), missing
