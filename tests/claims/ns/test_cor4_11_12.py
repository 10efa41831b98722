"""ns.cor4.11 (explicit R_{Lp,L} at zero balance) and ns.cor4.12 (its validity conditions):
the claims at quick fidelity with their controls, theory.ns.legendre's analysis against known
answers, and the time-changed blow-up integration of numerics.ns.blow_up."""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.blow_up import (
    ClockedFlow,
    LinearObjective,
    balanced_start,
    clock_increment_ratio,
    clocked_trajectory,
)
from numerics.errors import Diverged
from numerics.random import make_generator
from numerics.ns.steepest_flows import ProductFlow, depth_mask
from tests.claim_results import quick_result
from theory.ns.legendre import (
    LAMBDA,
    X0,
    derive_depth_threshold,
    derive_legendre_case,
    derive_potential_zero_balance,
)
from theory.ns.metric_exponent import DEPTH
from theory.ns.reparam_balance import Q
from theory.ns.steepest import dual_exponent
from verify.registry import get

CLAIMS = ["ns.cor4.11", "ns.cor4.12"]


result = quick_result


# --- the claims ----------------------------------------------------------------------------

@pytest.mark.parametrize("claim_id, routes", [
    ("ns.cor4.11", {"symbolic", "property", "numeric"}),
    ("ns.cor4.12", {"symbolic", "property"}),
])
def test_each_route_rejects_the_planted_error(claim_id, routes):
    failing = {e.route.value for e in result(claim_id).control.evidence if e.ok is False}
    assert routes <= failing


def test_wrong_threshold_is_caught_at_m_equal_1_only():
    from verify.claims.ns.cor4_12 import stated_valid, strict_valid

    params = get("ns.cor4.12").parameters["quick"]["dynamics"]
    differ = [(q, L) for q in params["q"] for L in params["L"]
              if stated_valid(q * (L - 1) / L) != strict_valid(q * (L - 1) / L)]
    assert differ == [(1.5, 3), (2.0, 2)]  # the m = 1 cases
    indicator = next(e for e in result("ns.cor4.12").control.evidence
                     if e.quantity.startswith("finite-time blow-up"))
    assert indicator.ok is False and indicator.comparisons["stated~measured"] == 1.0
    assert indicator.comparisons["derived~measured"] == 0.0


def test_blow_up_times_are_reported_per_case():
    blow = next(e for e in result("ns.cor4.12").evidence if e.quantity.startswith("blow-up"))
    assert blow.ok and blow.discrepancy < 1e-3
    assert "cases" in blow.derived and blow.derived["cases"] == 6


# --- theory --------------------------------------------------------------------------------

def test_gradient_flow_depth_three_blow_up_is_the_tangent():
    # w_1 = 0, w_2 = w_3 = a under GF on -G x: w_1' = G (w_1^2 + a^2) gives w_1 = a tan(a G t),
    # so T* = pi / (2 a G), i.e. G T* = pi / (2 sqrt(lambda)) with lambda = a^2.
    case = derive_legendre_case(sp.Integer(2), 3, "cor4.8").result
    assert sp.simplify(case.blow_up - sp.pi / (2 * sp.sqrt(LAMBDA))) == 0


def test_zero_balance_blow_up_integrates_the_power_law():
    # x' = L x^m G^(q-1), m > 1: T* = x_0^(1-m) / (L (m - 1) G^(q-1)).
    case = derive_legendre_case(sp.Integer(2), 5, "zero").result
    m = sp.Rational(8, 5)
    assert sp.simplify(case.blow_up - X0 ** (1 - m) / (5 * (m - 1))) == 0


def test_depth_threshold_is_the_dual_exponent():
    assert sp.simplify(derive_depth_threshold().result.depth - dual_exponent(Q)) == 0


def test_potential_is_the_entropy_for_gradient_flow_at_depth_two():
    potential = derive_potential_zero_balance().result
    x = potential.x
    assert sp.simplify(potential.potential_log.subs(DEPTH, 2) - (x * sp.log(x) - x) / 2) == 0


@settings(max_examples=12)
@given(numerator=st.integers(0, 12), L=st.integers(2, 5),
       balance=st.sampled_from(["zero", "cor4.8"]))
def test_validity_is_m_at_most_one_and_legendre_always(numerator, L, balance):
    q = 1 + sp.Rational(numerator, 12)
    case = derive_legendre_case(q, L, balance).result
    m = q * (L - 1) / L
    assert case.legendre
    assert case.valid == (m <= 1)
    assert (case.blow_up is None) == (m <= 1)
    assert (case.interior == "R") == (balance == "cor4.8" or m < 1)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="q"):
        derive_legendre_case(sp.Integer(3), 2, "zero")
    with pytest.raises(ValueError, match="L"):
        derive_legendre_case(sp.Integer(2), 1, "zero")
    with pytest.raises(ValueError, match="balance"):
        derive_legendre_case(sp.Integer(2), 2, "ones")


# --- numerics ------------------------------------------------------------------------------

@settings(max_examples=6)
@given(seed=st.integers(0, 2**31 - 1), q=st.floats(1.2, 2.0), L=st.integers(2, 4))
def test_time_change_keeps_the_balance_of_the_flow(seed, q, L):
    """The clocked field moves along the same orbits: |w_i|^q - |w_1|^q stays constant."""
    gen = make_generator(seed)
    W0 = 0.3 + torch.rand(L, 2, 1, generator=gen, dtype=torch.float64)
    mask = depth_mask(torch.tensor([L, L]), L)
    qt = torch.full((2, 1), q, dtype=torch.float64)
    flow = ProductFlow(LinearObjective(torch.ones(2, 1, dtype=torch.float64)).grad, qt, mask)
    records = clocked_trajectory(flow, W0, mask, tau=3.0, steps=150, record_every=150)
    before = W0.abs() ** q - W0[:1].abs() ** q
    after = records[-1, :-1].abs() ** q - records[-1, :1].abs() ** q
    scale = float((records[-1, :-1].abs() ** q).max())
    assert float((after - before).abs().max()) <= 1e-8 * scale


def test_clock_converges_at_blow_up_and_grows_without():
    mask = depth_mask(torch.tensor([3, 2]), 3)
    q = torch.full((2, 1), 2.0, dtype=torch.float64)
    a = torch.full((2, 1), 0.5, dtype=torch.float64)
    W0 = balanced_start(mask, a, torch.zeros(2, 1, dtype=torch.bool))
    flow = ProductFlow(LinearObjective(torch.ones(2, 1, dtype=torch.float64)).grad, q, mask)
    clock = clocked_trajectory(flow, W0, mask, tau=15.0, steps=300, record_every=10)[:, -1, :, 0]
    ratio = clock_increment_ratio(clock, 10)
    # L = 3, m = 4/3: |w| = a e^tau, dt/dtau ~ e^(-L (m - 1) tau); 10 records span tau = 5.
    assert math.isclose(float(ratio[0]), math.exp(-5.0), rel_tol=1e-4)
    # T* = x_0^(1-m) / (L (m - 1)) = (1/8)^(-1/3) = 2.
    assert math.isclose(float(clock[-1, 0]), 2.0, rel_tol=1e-6)
    assert math.isclose(float(ratio[1]), 1.0, rel_tol=1e-9)  # L = 2, m = 1: t = tau / G


def test_clock_rejects_a_rest_point_and_bad_spans():
    mask = depth_mask(torch.tensor([2]), 2)
    flow = ProductFlow(LinearObjective(torch.ones(1, 1, dtype=torch.float64)).grad,
                       torch.full((1, 1), 2.0, dtype=torch.float64), mask)
    with pytest.raises(Diverged):
        ClockedFlow(flow, mask)(0.0, torch.zeros(3, 1, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="span"):
        clock_increment_ratio(torch.zeros(5, 1), 3)
    with pytest.raises(ValueError, match="a"):
        balanced_start(mask, torch.zeros(1, 1, dtype=torch.float64),
                       torch.zeros(1, 1, dtype=torch.bool))
