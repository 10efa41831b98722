"""ns.fig3-path (alias ns.x.escape): the claim at quick fidelity, its theory (escape time,
asymptotic law, balance curve) and numerics (event-located RK4, relative time, frozen-gradient
escape) over drawn parameters, and that each route can fail."""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.escape import frozen_gradient_escape
from numerics.events import RelativeTime, integrate_to_event
from numerics.random import make_generator
from tests.claim_results import quick_result
from theory.ns.escape_time import (
    arc_length,
    asymptotic_law,
    derive_exponent_relation,
    derive_frozen_escape,
    escape_time,
    integrand_ratio,
)
from theory.ns.reparam_balance import Q
from verify.error_trends import geometric_tail, pair_estimates
from verify.evidence import symbolic_identity
from verify.registry import get


def result():
    return quick_result("ns.fig3-path")


def test_runs_inside_its_assumptions_and_the_alias_resolves():
    r = result()
    assert all(a.holds for a in r.assumptions)
    assert get("ns.x.escape") is get("ns.fig3-path")


def test_arc_length_and_escape_time_are_reported_separately_with_the_findings():
    r = result()
    quantities = [e.quantity for e in r.evidence]
    assert any(q.startswith("Fig. 3 (as stated)") for q in quantities)
    assert any(q.startswith("escape time (separately)") for q in quantities)
    probe = next(v for k, v in r.figures.items() if k.startswith("Fig. 3 probe"))
    # beyond small a the arc-length order over q = (1, 1.5, 2) is not increasing
    assert probe["a=1"]["ranks"] != [0.0, 1.0, 2.0]
    tau = next(v for k, v in r.figures.items() if k.startswith("equal initial step norm"))
    assert all(entry["ranks"] == [2.0, 1.0, 0.0] for entry in tau.values())


def test_the_gap_between_gf_and_signgf_grows_with_depth():
    # the summaries' "the gap grows with depth" (issue 20): L = 2, 3, 4 at a = 1e-2 on the
    # quick regression, measured T_GF / T_SignGF about 6e2, 1e4, 6e5
    r = result()
    rank, at_least_one = (next(e for e in r.evidence if e.quantity.startswith(start))
                          for start in ("regression: rank over depth L of the gap",
                                        "regression: GF escapes more slowly than SignGF"))
    assert rank.ok and at_least_one.ok
    gaps = rank.parameters["gap T_GF / T_SignGF (measured)"]
    assert gaps[0] > 100 and gaps[1] > 10 * gaps[0] and gaps[2] > 10 * gaps[1]
    control = next(e for e in r.control.evidence if e.quantity == rank.quantity)
    assert control.ok is False


def test_every_route_of_the_control_that_carries_the_statement_fails():
    failing = {e.route.value for e in result().control.evidence if e.ok is False}
    assert {"numeric", "rate"} <= failing


def test_symbolic_route_can_fail():
    kappa_minus_one, from_metric = derive_exponent_relation(3).result
    wrong = symbolic_identity("planted: kappa - 1 vs L (m - 1) + 1", stated=from_metric + 1,
                              derived=kappa_minus_one)
    assert wrong.ok is False
    assert integrand_ratio(2) == 1 and integrand_ratio(3) == 1


@pytest.mark.parametrize("L, q, kind, exponent", [
    (2, 1, "bounded", 0), (2, sp.Rational(3, 2), "bounded", 0), (2, 2, "log", 0),
    (3, 1, "bounded", 0), (3, sp.Rational(3, 2), "log", 0), (3, 2, "power", 1),
    (4, 2, "power", 2), (4, sp.Rational(5, 4), "bounded", 0)])
def test_asymptotic_law(L, q, kind, exponent):
    law = asymptotic_law(L, sp.nsimplify(q))
    assert (law.kind, law.exponent) == (kind, exponent)
    assert derive_frozen_escape(L).result.kappa.subs(Q, q) == (L - 1) * (q - 1)


@settings(max_examples=10)
@given(st.floats(1.0, 2.0), st.sampled_from([2, 3]), st.floats(-3.0, -0.7),
       st.floats(0.1, 10.0))
def test_escape_time_scales_with_the_loss_as_G_to_the_1_minus_q(q, L, log_a, G):
    a = 10**log_a
    assert escape_time(L, q, a, G, 1.0) * G ** (q - 1) == pytest.approx(
        escape_time(L, q, a, 1.0, 1.0), rel=1e-12)


@settings(max_examples=10)
@given(st.floats(-4.0, -0.5), st.floats(0.3, 3.0))
def test_sign_flow_arc_length_is_a_straight_segment(log_a, X):
    """q = 1: the balance curve is w_2 = w_1 + a, so the length is sqrt(2) w_1* with
    w_1*(w_1* + a) = X."""
    a = 10**log_a
    w1 = (-a + math.sqrt(a * a + 4 * X)) / 2
    assert arc_length(1.0, a, X) == pytest.approx(math.sqrt(2) * w1, rel=1e-12)


@settings(max_examples=3)
@given(st.floats(1.0, 2.0), st.sampled_from([2, 3]), st.floats(-3.0, -1.0))
def test_flow_escape_time_matches_the_derivation(q, L, log_a):
    a = 10**log_a
    run = frozen_gradient_escape(torch.tensor([[q]], dtype=torch.float64),
                                 torch.tensor([L]), torch.tensor([a], dtype=torch.float64),
                                 G=0.5, X=1.0, h=0.02, max_steps=20000)
    # relative-time RK4 at h = 0.02: first order at worst (q = 1's kink at t = 0), ~1e-4
    assert float(run.time[0]) == pytest.approx(escape_time(L, q, a, 0.5, 1.0), rel=1e-3)
    if L == 2:
        assert float(run.path_length[0]) == pytest.approx(arc_length(q, a, 1.0), rel=1e-3)


@settings(max_examples=6)
@given(st.integers(0, 2**31 - 1))
def test_event_is_located_inside_the_step(seed):
    """y' = -lambda y from y_0: the level c is crossed at log(y_0 / c) / lambda."""
    gen = make_generator(seed)
    lam = 0.5 + 2 * torch.rand(3, generator=gen, dtype=torch.float64)
    y0 = (1 + torch.rand(3, generator=gen, dtype=torch.float64)).reshape(1, 3, 1)
    level = 0.2 + 0.7 * torch.rand(3, generator=gen, dtype=torch.float64)
    ev = integrate_to_event(lambda t, y: -lam[None, :, None] * y, y0, h=0.01,
                            event=lambda y: level - y[0, :, 0], max_steps=100000)
    exact = torch.log(y0[0, :, 0] / level) / lam
    # RK4 on y' = -lambda y: relative error of the crossing time ~ (h lambda)^4 / 120 < 4e-9
    assert torch.allclose(ev.at, exact, rtol=1e-8, atol=0)
    assert torch.allclose(ev.state[0, :, 0], level, rtol=1e-8, atol=0)


@settings(max_examples=10)
@given(st.integers(0, 2**31 - 1))
def test_relative_time_carries_time_and_path_length(seed):
    """A constant velocity v from w_0: time t and path length |v| t at the event w_1 = c."""
    gen = make_generator(seed)
    v = 0.5 + torch.rand(2, 1, 1, generator=gen, dtype=torch.float64)
    w0 = 0.1 + torch.rand(2, 1, 1, generator=gen, dtype=torch.float64)
    mask = torch.ones(2, 1, 1, dtype=torch.float64)
    field = RelativeTime(lambda t, w: v.expand_as(w), mask)
    target = float(w0[0]) + 2.0
    ev = integrate_to_event(field, field.initial(w0), h=0.05,
                            event=lambda Y: Y[0, :, 0] - target, max_steps=10000)
    t = 2.0 / float(v[0])
    assert float(RelativeTime.time(ev.state)[0]) == pytest.approx(t, rel=1e-10)
    assert float(RelativeTime.path_length(ev.state)[0]) == pytest.approx(
        t * float(v.norm()), rel=1e-10)


@given(st.floats(-1.0, 1.0), st.floats(0.5, 2.0), st.floats(0.05, 0.9))
def test_geometric_tail_is_exact_on_geometric_sequences(limit, c, rho):
    seq = [limit + c * rho**k for k in range(4)]
    assert geometric_tail(seq) == pytest.approx(abs(seq[-1] - limit), rel=1e-6)


def test_geometric_tail_refuses_non_contracting_sequences():
    assert geometric_tail([0.0, 1.0, 2.5]) == math.inf
    with pytest.raises(ValueError, match="estimates"):
        geometric_tail([1.0, 2.0])


def test_pair_estimates_recover_power_and_log_laws():
    a = [1e-1, 1e-2, 1e-3]
    slopes, _ = pair_estimates(a, [x**-2 for x in a], "power")
    assert slopes == pytest.approx([2.0, 2.0])
    coefficients, _ = pair_estimates(a, [3 * math.log(1 / x) for x in a], "log")
    assert coefficients == pytest.approx([3.0, 3.0])


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="q"):
        escape_time(2, 2.5, 0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="a, G, X"):
        arc_length(1.5, -0.1)
    with pytest.raises(ValueError, match="L"):
        derive_frozen_escape(1)
    with pytest.raises(ValueError, match="a"):
        frozen_gradient_escape(torch.tensor([[1.5]], dtype=torch.float64), torch.tensor([2]),
                               torch.tensor([0.0], dtype=torch.float64), G=1.0, X=1.0,
                               h=0.1, max_steps=10)
