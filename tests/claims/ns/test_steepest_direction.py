"""ns.steepest-direction: the l_p steepest direction -sign(g)|g|^(q-1)/||g||_q^(q-1) = -grad
||g||_q with value -||g||_q, derived (KKT) and measured (SLSQP, HiGHS, Brent, autograd); the
planted exponent q in place of q - 1 is rejected on the direction items only."""
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.claims.ns.steepest_direction as sd
from numerics.ns.steepest_norm import (
    constrained_minimiser,
    dual_norm_gradient,
    penalised_minimiser,
)
from tests.claim_results import quick_result
from theory.ns.steepest_norm import derive_box_direction, derive_normalised_direction
from verify.runner import run_claim
from verify.verdict import Verdict


def test_passes_and_the_control_fails_on_the_direction_only():
    r = quick_result("ns.steepest-direction")
    assert r.verdict is Verdict.PASS and r.inside_assumptions
    assert {e.route.value for e in r.evidence} == {"symbolic", "numeric", "property"}
    failed = [e.quantity for e in r.control.evidence if e.ok is False]
    untouched = ("= -||g||_q", "stated value", "+ ||d||_p^p / p")
    assert failed and not any(t in q for q in failed for t in untouched)
    assert any(e.route.value == "numeric" for e in r.control.evidence if e.ok is False)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_derivation_arrives_at_the_dual_norm(n):
    res = derive_normalised_direction(n).result
    norm = sum(g**res.q for g in res.magnitudes) ** (1 / res.q)
    assert sp.simplify(res.multiplier - norm) == 0
    assert sp.simplify(res.value + norm) == 0
    assert sp.simplify(res.direction + res.norm_gradient) == sp.zeros(n, 1)
    # the unnormalised direction is ||g||_q^(q-1) times the normalised one
    assert all(sp.simplify(r - norm ** (res.q - 1)) == 0 for r in res.unnormalised_ratio)


def test_box_direction_is_minus_the_sign():
    direction, value = derive_box_direction(3).result
    assert list(direction) == [-1, 1, -1]
    assert value == -sum(sp.symbols("gamma_1:4", positive=True))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1.0, 1.2, 1.5, 2.0, 2.5]), st.integers(1, 6),
       st.integers(0, 2**31 - 1))
def test_numerical_minimisers_reproduce_the_stated_forms(q, n, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n)
    d, value = constrained_minimiser(g, q, rng)
    np.testing.assert_allclose(d, sd.stated_direction(g, q), rtol=1e-5, atol=1e-6)
    assert value == pytest.approx(sd.stated_value(g, q), rel=1e-7)
    np.testing.assert_allclose(-dual_norm_gradient(torch.from_numpy(g), q).numpy(),
                               sd.stated_direction(g, q), rtol=1e-12)
    if q > 1:
        np.testing.assert_allclose(penalised_minimiser(g, q), sd.stated_unnormalised(g, q),
                                   rtol=1e-6, atol=1e-9)


def test_planted_exponent_is_far_from_the_argmin():
    g = np.array([0.3, -2.0, 1.1])
    rng = np.random.default_rng(0)
    d, _ = constrained_minimiser(g, 1.5, rng)
    assert np.max(np.abs(np.asarray(sd.wrong_exponent_direction(g, 1.5)) - d)) > 0.1


def test_scope_beyond_the_flows_exponents_passes():
    """q = 3 (p = 3/2) lies outside the flows' [1, 2] but inside the identity's q >= 1."""
    from verify.registry import get
    r = run_claim(get("ns.steepest-direction"), control=False,
                  overrides={"q": (3.0,), "n": (4,), "draws": 2, "symbolic_sizes": (2,)})
    assert r.verdict is Verdict.PASS and r.inside_assumptions
