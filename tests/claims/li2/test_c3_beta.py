"""li2.c3-beta (aliases li2.eq68, li2.eq69): Eq. 68 holds under G = E V^T (eta = 0); Eq. 69
fails under every reading of G and of eta (it is exact only for G = (Yt/beta - Ft V) V^T with
eta scaled by beta^2); each route rejects a planted error and accepts the derived law."""
import dataclasses

import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.output_scale import (
    residual_gradient,
    scaled_backprop_gradient,
    scaled_fixed_point,
)
from numerics.random import make_generator, randn
from numerics.li2.stage1_problems import draw_problems
from numerics.li2.two_layer import center
from theory.li2.output_scale import (
    derive_scaled_fixed_point,
    derive_scaled_small_time_series,
    scaling_law,
)
from theory.li2.stage1_expansion import derive_small_time_series
from verify.claims.li2.c3_beta import stated_small_time
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

EQ69 = {
    "Eq. 69 G*_beta = G*/beta^2, sandwiched by L = S_1 S_beta, R = A_beta A_1 ({r})",
    "Eq. 69 G*_beta vs G*/beta^2 (K<n (A1, A2), {r})",
    "Eq. 69 exponent of ||G*_beta||/||G*|| over beta (K<n (A1, A2), {r})",
    "Eq. 69 G*_beta vs G*/beta^2 (K>n, {r})",
    "Eq. 69 exponent of ||G*_beta||/||G*|| over beta (K>n, {r})",
}


def _failed(evidence):
    return {e.quantity for e in evidence if e.ok is False}


def test_eq68_holds_and_eq69_fails_under_the_default_reading():
    result = run_claim(get("li2.eq69"))  # the alias resolves to li2.c3-beta
    assert result.claim["id"] == "li2.c3-beta"
    assert _failed(result.evidence) == {q.format(r="G = EV^T, eta fixed") for q in EQ69}
    eq68 = [e for e in result.evidence if e.quantity.startswith("Eq. 68")]
    assert len(eq68) == 5 + 2 * 2 and all(e.ok for e in eq68)
    assert all(a.holds or a.probe for a in result.assumptions)
    # The control (beta^2 R_3) is caught by the symbolic and the simulation route alike.
    failed = _failed(result.control.evidence)
    assert "Eq. 68 coefficient of t^1 alpha^2 (t beta^3 R_3(V0)), G = EV^T, eta = 0" in failed
    assert sum(q.startswith("Eq. 68 remainder") for q in failed) == 2
    laws = result.figures["derived scaling laws of G*_beta (exact, every reading)"]
    assert laws["G = EV^T, eta fixed"] == "G*_beta = beta^-1 G*_1(eta -> eta/beta**2)"
    assert laws["G = -dJ/dF, eta beta^2"] == "G*_beta = beta^0 G*_1(eta -> eta)"
    table = result.figures["fitted exponent of ||G*_beta||/||G*|| over beta (mean over seeds), "
                           "every reading and case"]
    exact = table["K<n (A1, A2): G = (Yt/beta - Ft V) V^T, eta beta^2 (the derivation's "
                  "substitution)"]
    assert all(abs(v + 2) < 1e-9 for v in exact.values())
    # -dJ/dF with eta fixed: -2 only as eta/sigma^2 -> 0, and only under (A2).
    assert abs(table["K<n (A1, A2): G = -dJ/dF, eta fixed"]["eta=0.001"] + 2) < 1e-2
    assert abs(table["K<n (A1, A2): G = -dJ/dF, eta fixed"]["eta=10"] + 2) > 1
    assert abs(table["K<n Gaussian (A2 fails): G = -dJ/dF, eta fixed"]["eta=0.001"]) < 1e-2
    assert result.figures["every t^a alpha^b coefficient of -dJ_beta/dFt is beta x that of E V^T "
                          "(derived)"] is True


def test_eq68_fails_under_the_gradient_reading():
    result = run_claim(get("li2.eq68"), control=False,
                       overrides={"reading": {"G": "-dJ/dF", "eta": "fixed"}})
    failed = _failed(result.evidence)
    assert sum(q.startswith("Eq. 68 coefficient") for q in failed) == 5
    assert sum(q.startswith("Eq. 68 remainder") and "order" in q for q in failed) == 2


def test_the_derived_law_passes_every_route():
    # Under G = E V^T with eta scaled by beta^2 the derived law is G*_1 / beta: stated so,
    # the symbolic, entrywise and exponent routes of Eq. 69 all agree, within their
    # tolerances, and the claim passes with its control rejected.
    claim = get("li2.c3-beta")
    derived_law = dataclasses.replace(claim, stated={**claim.stated,
                                                     "fixed_point": lambda G, beta: G / beta})
    result = run_claim(derived_law, overrides={"reading": {"G": "EV^T", "eta": "beta^2"}})
    assert result.verdict is Verdict.PASS, result.reason
    assert result.control.rejected


def test_a_bad_reading_is_a_clear_error():
    result = run_claim(get("li2.c3-beta"), control=False,
                       overrides={"reading": {"G": "E", "eta": "fixed"}})
    assert result.verdict is Verdict.ERROR
    assert "reading.G" in result.reason


@settings(max_examples=4)
@given(n=st.integers(1, 2), K=st.integers(1, 2), M=st.integers(1, 2))
def test_scaled_series_reduces_to_the_beta1_series_and_eq68(n, K, M):
    base = derive_small_time_series(n, K, M).result
    s = derive_scaled_small_time_series(base).result
    at_one = {s.beta: 1}
    for key, c in base.coefficients().items():
        assert (s.tables["EV^T"][key].xreplace(at_one) - c).applyfunc(sp.expand) \
            == sp.zeros(n, K)
    stated = stated_small_time(s.Ft, s.Yt, s.alpha * s.U, s.t, s.beta)
    derived = s.part("EV^T").xreplace({s.eta: 0})
    assert (stated - derived).applyfunc(sp.expand) == sp.zeros(n, K)


@settings(max_examples=3)
@given(n=st.integers(1, 2), M=st.integers(1, 2))
def test_scaling_laws_hold_at_small_sizes(n, M):
    fp = derive_scaled_fixed_point(n, 1, M).result
    assert scaling_law(fp, "EV^T", "fixed").result == (-1, fp.eta / fp.beta**2)
    assert scaling_law(fp, "-dJ/dF", "beta^2").result == (0, fp.eta)


@given(n=st.integers(4, 12), K=st.integers(1, 6), M=st.integers(2, 4),
       beta=st.floats(0.5, 8.0), eta=st.floats(1e-2, 10.0), seed=st.integers(0, 2**31 - 1))
def test_numerical_fixed_point_follows_the_derived_law(n, K, M, beta, eta, seed):
    g = make_generator(seed)
    F, Y = draw_problems(1, n, K, M, g, realisable=False)
    F, Y, Ft, Yt = F[0], Y[0], center(F[0]), center(Y[0])
    G_beta = scaled_fixed_point(Ft, Yt, beta, eta).G
    G_law = scaled_fixed_point(Ft, Yt, 1.0, eta / beta**2).G / beta
    torch.testing.assert_close(G_beta, G_law, rtol=1e-7, atol=1e-12)
    # Reading -dJ/dF by autograd through beta F is beta E V^T (chain rule).
    V = randn(K, M, generator=g)
    torch.testing.assert_close(scaled_backprop_gradient(F, V, Y, beta),
                               beta * residual_gradient(F, V, Y, beta), rtol=1e-12, atol=1e-12)
