"""li2.prop4: the Stage-I fixed point G* of Eq. 60 and the rate of the top-layer flow."""
import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.errors import Diverged
from numerics.random import make_generator, randn
from numerics.li2.top_layer_flow import (
    centred_features_with_spectrum,
    deviation_bound,
    integrate_top_layer_flow,
    ridge_fixed_point,
    stable_step,
    top_layer_field,
    top_layer_velocity,
)
from numerics.li2.two_layer import center, one_hot_labels
from theory.identity import ZeroStatus, is_zero
from theory.li2.ridge import derive_ridge_fixed_point, reduced_product
from verify.claim import NegativeControl
from verify.claims.li2.prop4 import PROPERTY_SPACE, stated_G_star, stated_rate
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import strategy
from verify.verdict import Verdict


def _problem(c):
    g = make_generator(c["seed"])
    F = randn(c["n"], c["K"], generator=g) + randn(1, c["K"], generator=g)
    Y = one_hot_labels(c["n"], c["M"], g)
    return F, Y, center(F), center(Y)


# --- the claim ------------------------------------------------------------------------------

def test_each_route_is_present_and_the_control_is_caught_by_every_eq60_route():
    result = run_claim(get("li2.prop4"))
    assert {e.route.value for e in result.evidence} == {"symbolic", "numeric", "rate",
                                                         "property"}
    # The doubled prefactor is caught by every route that sees Eq. 60: the symbolic identity,
    # the flow/solve comparison and both property groups.
    failed = {e.quantity for e in result.control.evidence if e.ok is False}
    assert any(q.startswith("G* sandwiched") for q in failed)
    assert any(q.startswith("G_F at the end of the V-flow") for q in failed)
    assert sum(q.startswith("Eq. 60 vs the ridge solve") for q in failed) == 2
    # K > n is checked and reported as outside (A1), not hidden.
    a1 = {a.name: a.holds for a in result.assumptions if a.name.startswith("A1")}
    assert a1["A1 full column rank (rate case K<n)"]
    assert not a1["A1 full column rank (rate case K>n)"]


def test_rate_route_rejects_a_wrong_rate():
    claim = get("li2.prop4")
    # sigma_min^2 without eta: the eta = 0 rate of Prop. 3, wrong here by eta/lambda_min.
    variant = dataclasses.replace(claim, control=NegativeControl(
        "rate without eta", {"rate": lambda Ft, eta: stated_rate(Ft, eta) - eta}))
    result = run_claim(variant)
    rate_items = [e for e in result.control.evidence if e.route.value == "rate"]
    assert len(rate_items) == len(claim.parameters["quick"]["rate_cases"])
    assert all(e.ok is False for e in rate_items)
    assert result.control.verdict is Verdict.FAIL


def _power_rate(Ft, eta):
    """Planted: sigma_min^2.5 + eta."""
    return (stated_rate(Ft, eta) - eta) ** 1.25 + eta


@pytest.mark.parametrize("rate", [_power_rate, lambda Ft, eta: 1.05 * stated_rate(Ft, eta),
                                  lambda Ft, eta: 1.001 * stated_rate(Ft, eta)],
                         ids=["sigma_min^2.5 + eta", "1.05 (sigma_min^2 + eta)",
                              "1.001 (sigma_min^2 + eta): below the late fit's tolerance, "
                              "not the identity's"])
def test_a_wrong_power_or_scale_of_the_stated_rate_fails(rate):
    # Issue 22: with sigma_min = 1 (K < n) and 0 (K > n) alone, sigma_min^2.5 was
    # sigma_min^2; the rate case at sigma_min = 1.6 tells them apart.
    claim = get("li2.prop4")
    planted = dataclasses.replace(claim, stated={**claim.stated, "rate": rate})
    result = run_claim(planted, control=False)
    assert result.verdict is Verdict.FAIL
    assert any(e.ok is False for e in result.evidence if "sigma_min=1.6" in e.quantity)


# --- theory ---------------------------------------------------------------------------------

@settings(max_examples=6)
@given(n=st.integers(1, 3), K=st.integers(1, 2), M=st.integers(1, 2))
def test_derived_fixed_point_is_stationary(n, K, M):
    fp = derive_ridge_fixed_point(n, K, M).result
    A = fp.F.T * fp.F + fp.eta * sp.eye(K)
    # The solution satisfies the linear stationarity equation exactly ...
    assert is_zero(A * fp.V - fp.F.T * fp.Y).status is ZeroStatus.ZERO
    # ... and E* = P Yt column by column, P the residual operator.
    assert is_zero(fp.E[:, 0] - fp.P * fp.Y[:, 0]).status is ZeroStatus.ZERO


def test_derivation_rejects_bad_sizes():
    with pytest.raises(ValueError, match="K"):
        derive_ridge_fixed_point(3, 0, 1)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 1))
def test_reduced_product_equals_the_product(seed):
    rng = np.random.default_rng(seed)
    x, y = sp.symbols("x y")

    def rational():
        coefficients = [int(c) for c in rng.integers(-3, 4, size=3)]
        return (coefficients[0] * x + coefficients[1] * y + coefficients[2]) / (
            x**2 + int(rng.integers(1, 4)) * y**2 + 1)

    L, M, R = (sp.Matrix(2, 2, lambda i, j: rational()) for _ in range(3))
    got = reduced_product(L, M, R, [x, y])
    # Lowest terms: numerator and denominator of each entry share no factor.
    for entry in got:
        num, den = sp.fraction(entry)
        assert sp.gcd(num, den).is_number
    # Equal to the plain product: exactly at rational points (the product itself is too
    # large to cancel quickly, which is the reason reduced_product exists).
    for _ in range(3):
        point = {x: sp.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 7))),
                 y: sp.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 7)))}
        assert (got.subs(point) - (L * M * R).subs(point)).is_zero_matrix


# --- numerics -------------------------------------------------------------------------------

@given(strategy(PROPERTY_SPACE))
def test_ridge_solution_zeroes_the_autograd_gradient(c):
    F, Y, Ft, Yt = _problem(c)
    fixed = ridge_fixed_point(Ft, Yt, c["eta"])
    # Autograd of the loss of Eq. 1 in the *uncentred* F: the loss centres, so V* of the
    # centred problem is its stationary point.
    g = top_layer_velocity(F, fixed.V, Y, c["eta"])
    A = Ft.T @ Ft + c["eta"] * torch.eye(c["K"], dtype=Ft.dtype)
    scale = torch.linalg.matrix_norm(A, ord=2) * fixed.V.abs().max() + (Ft.T @ Yt).abs().max()
    assert float(g.abs().max()) <= 1e-12 * float(scale) * c["n"]


@given(strategy(PROPERTY_SPACE), st.integers(1, 3))
def test_written_out_field_matches_autograd(c, B):
    # The flow integrates the written-out velocity; it must be autograd's -dJ/dV of the loss of
    # Eq. 1 in the uncentred F, Y, at batched V (B x K x M) away from the fixed point.
    F, Y, Ft, Yt = _problem(c)
    V = randn(B, c["K"], c["M"], generator=make_generator(c["seed"] + 1))
    want = top_layer_velocity(F, V, Y, c["eta"])
    got = top_layer_field(Ft, Yt, V, c["eta"])
    # Both are sums of n K products of O(|F|^2 |V| + |F||Y|) terms: roundoff 8 (n + K) u scale.
    scale = (torch.linalg.matrix_norm(Ft, ord=2) ** 2 + c["eta"]) * V.abs().max() \
        + (Ft.T @ Yt).abs().max()
    u = torch.finfo(torch.float64).eps / 2
    assert float((got - want).abs().max()) <= 8 * (c["n"] + c["K"]) * u * float(scale)
    # ... and it can fail: dropping the weight decay is detected whenever it matters.
    if c["eta"] * float(V.abs().max()) > 1e-6 * float(scale):
        assert not torch.allclose(top_layer_field(Ft, Yt, V, 0.0), want, rtol=0, atol=1e-12)


@given(strategy(PROPERTY_SPACE))
def test_eq60_matches_the_solve_beyond_full_rank(c):
    _, _, Ft, Yt = _problem(c)
    torch.testing.assert_close(stated_G_star(Ft, Yt, c["eta"]),
                               ridge_fixed_point(Ft, Yt, c["eta"]).G, rtol=1e-6, atol=1e-9)


@given(n=st.integers(2, 20), K=st.integers(1, 20), seed=st.integers(0, 2**31 - 1))
def test_features_have_the_requested_spectrum(n, K, seed):
    r = min(K, n - 1)
    s = torch.linspace(0.5, 3.0, r, dtype=torch.float64)
    F = centred_features_with_spectrum(n, s, K, make_generator(seed))
    got = torch.linalg.svdvals(center(F))[:r]
    torch.testing.assert_close(got, s.flip(0), rtol=1e-12, atol=1e-12)
    assert F.mean(0).abs().max() > 0  # the mean is there for the loss to remove


def test_features_reject_too_many_singular_values():
    with pytest.raises(ValueError, match="singular_values"):
        centred_features_with_spectrum(4, torch.ones(4), 6, make_generator(0))


def _linear_problem(seed, n=12, K=4, M=3, eta=0.3):
    g = make_generator(seed)
    F = randn(n, K, generator=g)
    Y = one_hot_labels(n, M, g)
    V0 = 0.1 * randn(2, K, M, generator=g)
    return F, Y, V0, eta


def _exact_V(F, Y, V0, eta, t):
    """V(t) = V* + e^{-At}(V0 - V*) by the eigendecomposition of A (no integrator)."""
    Ft, Yt = center(F), center(Y)
    V_star = ridge_fixed_point(Ft, Yt, eta).V
    lam, Q = torch.linalg.eigh(Ft.T @ Ft + eta * torch.eye(F.shape[1], dtype=F.dtype))
    return V_star + Q @ torch.diag(torch.exp(-lam * t)) @ Q.T @ (V0 - V_star)


def test_rk4_converges_at_fourth_order():
    F, Y, V0, eta = _linear_problem(1)
    T, base = 1.0, stable_step(F, eta)
    exact = _exact_V(F, Y, V0, eta, T)
    errors, steps = [], []
    for k in (1, 2, 4, 8):
        n_steps = math.ceil(T / base) * k
        traj = integrate_top_layer_flow(F, Y, V0, eta, dt=T / n_steps, steps=n_steps,
                                        record_every=n_steps)
        errors.append(float((traj.V - exact).abs().max()))
        steps.append(n_steps)
    slope = np.polyfit(np.log(steps), np.log(errors), 1)[0]
    assert -4.3 < slope < -3.7, (slope, errors)


@settings(max_examples=8)
@given(seed=st.integers(0, 2**31 - 1))
def test_deviation_stays_under_its_bound(seed):
    F, Y, V0, eta = _linear_problem(seed)
    Ft, Yt = center(F), center(Y)
    fixed = ridge_fixed_point(Ft, Yt, eta)
    dt = stable_step(F, eta)
    traj = integrate_top_layer_flow(F, Y, V0, eta, dt=dt, steps=200, record_every=10)
    bound = deviation_bound(Ft, eta, V0, fixed, dt)
    for t, G in zip(traj.times.tolist(), traj.G_F):
        distance = torch.linalg.matrix_norm(G - fixed.G)
        assert bool((distance <= bound.residual(t) * (1 + 1e-9) + 1e-12).all())


def test_flow_rejects_bad_input():
    F, Y, V0, eta = _linear_problem(0)
    with pytest.raises(ValueError, match="eta"):
        integrate_top_layer_flow(F, Y, V0, -1.0, dt=0.01, steps=1)
    with pytest.raises(ValueError, match="dt"):
        integrate_top_layer_flow(F, Y, V0, eta, dt=10.0, steps=1)
    with pytest.raises(ValueError, match="V0"):
        integrate_top_layer_flow(F, Y, V0[0], eta, dt=0.01, steps=1)
    with pytest.raises(ValueError, match="eta"):
        ridge_fixed_point(center(F), center(Y), 0.0)


def test_flow_reports_divergence():
    F, Y, V0, eta = _linear_problem(0)
    with pytest.raises(Diverged):
        integrate_top_layer_flow(F, Y, V0 * math.inf, eta, dt=0.01, steps=1)
