"""ns.fig2-metric (alias ns.x.metric-exponent): the claim at quick fidelity with its control,
and theory.ns.metric_exponent against the sign-pattern derivation of theory.ns.reparam_balance."""
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.random import make_generator
from numerics.ns.steepest_flows import product_velocity
from tests.claim_results import quick_result
from theory.ns.metric_exponent import (
    DEPTH,
    X,
    derive_local_exponent,
    derive_zero_balance_metric_any_depth,
)
from theory.ns.reparam_balance import Q, U, derive_metric_zero_balance
from verify.claims.ns._fixed_sign_flow import velocity_of_x
from verify.registry import get


def result():
    return quick_result("ns.fig2-metric")


def test_alias_resolves():
    assert get("ns.x.metric-exponent").id == "ns.fig2-metric"


def test_symbolic_and_rate_routes_each_reject_the_inverted_exponent():
    failing = {e.route.value for e in result().control.evidence if e.ok is False}
    assert {"symbolic", "rate"} <= failing


def test_band_figures_show_bounded_escape_only_below_one():
    escape = next(v for k, v in result().figures.items() if k.startswith("escape time"))
    signgf = escape["q=1.0, L=5 (m=0.800)"]
    gf = escape["q=2.0, L=3 (m=1.333)"]
    # m < 1: the escape time hardly moves from a = 1e-2 to 1e-3; m > 1: it grows ~ a^(-1).
    assert signgf["a=0.001"] < 1.01 * signgf["a=0.01"]
    assert gf["a=0.001"] > 5 * gf["a=0.01"]


@pytest.mark.parametrize("L", [2, 3, 4, 5])
def test_symbolic_depth_matches_the_sign_pattern_derivation(L):
    M_any = derive_zero_balance_metric_any_depth().result.M.subs(DEPTH, L)
    M_L, _ = derive_metric_zero_balance(L).result
    assert X in M_L.free_symbols  # both derivations use the same positive x
    assert sp.simplify(sp.powsimp(M_any - M_L, force=True)) == 0


@settings(max_examples=10)
@given(L=st.integers(2, 5), seed=st.integers(0, 2**31 - 1))
def test_local_exponent_tends_to_m_for_random_offsets(L, seed):
    gen = make_generator(seed)
    local = derive_local_exponent(L).result
    offsets = (torch.rand(L, generator=gen, dtype=torch.float64) * 3).tolist()
    q = sp.Rational(int(torch.randint(0, 13, (1,), generator=gen)), 12) + 1
    expr = local.local.subs(dict(zip(local.c, [sp.nsimplify(c) for c in offsets]))).subs(Q, q)
    far = float(expr.subs(U, 10**12))
    assert abs(far - float(q * (L - 1) / L)) < 1e-9
    # The limit agrees with the derivation's leading-coefficient ratio.
    assert sp.simplify(local.at_infinity - Q * (L - 1) / L) == 0


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 1), L=st.integers(2, 5))
def test_reverse_mode_velocity_of_x_matches_forward_mode(seed, L):
    gen = make_generator(seed)
    W = torch.randn(L, 3, 4, generator=gen, dtype=torch.float64)
    V = torch.randn(L, 3, 4, generator=gen, dtype=torch.float64)
    assert torch.allclose(velocity_of_x(W, V), product_velocity(W, V), rtol=1e-13, atol=1e-14)
