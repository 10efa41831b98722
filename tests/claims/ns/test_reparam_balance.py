"""theory.ns.reparam_balance (balance, decay and mirror metric, derived from the parameter flow)
against the flows and metrics of numerics.ns.steepest_flows."""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.errors import Diverged
from numerics.integrators import integrate
from numerics.random import make_generator
from numerics.ns.steepest_flows import (
    DifferenceOfPowersFlow,
    ProductFlow,
    ProductInverseMetric,
    SeparableQuadratic,
    balance_offsets,
    bregman_projection,
    default_regression,
    depth_mask,
    exclusive_products,
    factors_from_balance,
    steepest_descent,
)
from numerics.step_studies import ladder_differences, observed_order
from theory.ns.reparam_balance import (
    A_INT,
    ALPHA,
    GAMMA,
    Q,
    U,
    derive_balance_by_ratio,
    derive_balance_exponent,
    derive_coupled_balance,
    derive_decoupled_balance,
    derive_metric_two_factors,
    derive_metric_zero_balance,
    derive_product_metric,
    derive_woodworth_depth2,
    derive_woodworth_depth_D,
    magnitudes,
)

seeds = st.integers(0, 2**31 - 1)
depths = st.integers(2, 5)


# --- symbolic -----------------------------------------------------------------------------------

@pytest.mark.parametrize("L", [2, 3])
def test_conserved_power_is_the_update_exponent(L):
    assert derive_balance_exponent(L).result.r == Q


def test_ratio_route_gives_the_same_conserved_function():
    a1, a2 = magnitudes(2)
    assert sp.expand(derive_balance_by_ratio().result - (a2**Q - a1**Q)) == 0


def test_decoupled_decay_factor():
    assert derive_decoupled_balance(2).result == sp.exp(-Q * A_INT)


def test_coupled_decay_reduces_at_q2_and_depends_on_the_loss_otherwise():
    rate, at_two, slope = derive_coupled_balance().result
    a1, a2 = magnitudes(2)
    assert sp.expand(at_two + 2 * ALPHA * (a1**2 - a2**2)) == 0
    assert abs(float(slope)) > 0.1
    assert GAMMA in rate.free_symbols


def test_product_metric_is_the_derivative_of_the_balance_polynomial():
    r = derive_product_metric(3).result
    assert sp.expand(r.M - sp.diff(r.P, U)) == 0


def test_two_factor_and_zero_balance_closed_forms():
    two = derive_metric_two_factors().result
    assert two.M == sp.sqrt(two.lam**2 + 4 * two.x**Q)
    assert sp.simplify(two.gradient_q2 - sp.asinh(2 * two.x / two.lam) / 2) == 0
    for L in (2, 4):
        M, m = derive_metric_zero_balance(L).result
        assert sp.simplify(m - Q * (L - 1) / L) == 0


def test_woodworth_known_answers():
    mu, kappa, beta = derive_woodworth_depth2().result
    assert sp.simplify(mu - 4 * sp.sqrt(beta**2 + 4 * kappa**2)) == 0
    g = sp.Symbol("g")
    for D in (3, 5):
        assert sp.expand(derive_woodworth_depth_D(D).result - D * (D - 2) * g) == 0


def test_bad_depth_is_rejected():
    with pytest.raises(ValueError, match="L"):
        derive_balance_exponent(1)
    with pytest.raises(ValueError, match="D"):
        derive_woodworth_depth_D(2)


# --- the metric: numerics vs theory -------------------------------------------------------------

def _balanced(seed: int, q: float, L: int, B: int = 3, d: int = 5, *, positive=False):
    """Factors with |w_i|^q = u + c_i, u in [0.3, 0.8], c_i in [0, 0.5] (c_1 = 0): away from
    zero, so the smooth-case tests below stay smooth."""
    g = make_generator(seed)
    qt = torch.full((B, 1), q, dtype=torch.float64)
    mask = depth_mask(torch.full((B,), L), L)
    base = 0.3 + 0.5 * torch.rand(B, d, generator=g, dtype=torch.float64)
    offsets = 0.5 * torch.rand(L, B, d, generator=g, dtype=torch.float64)
    offsets[0] = 0
    signs = torch.ones(L, B, d, dtype=torch.float64) if positive else torch.sign(
        torch.randn(L, B, d, generator=g, dtype=torch.float64))
    return factors_from_balance(base, offsets, signs, qt, mask), qt, mask


@given(st.floats(1.0, 2.0), depths, seeds)
def test_metric_from_x_alone_equals_the_sum_over_factors(q, L, seed):
    W, qt, mask = _balanced(seed, q, L)
    direct = exclusive_products(W.abs() ** qt).sum(0)  # sum_i prod_{j != i} |w_j|^q
    metric = ProductInverseMetric(balance_offsets(W, qt, mask), qt, mask)
    torch.testing.assert_close(metric(W.prod(0)), direct, rtol=1e-12, atol=1e-14)


@given(st.floats(1.0, 2.0), st.floats(1e-3, 10.0), seeds)
def test_two_factor_metric_matches_the_closed_form(q, lam, seed):
    two = derive_metric_two_factors().result
    closed = sp.lambdify((two.x, two.lam, Q), two.M, "math")
    x = torch.randn(4, 6, generator=make_generator(seed), dtype=torch.float64)
    qt = torch.full((4, 1), q, dtype=torch.float64)
    offsets = torch.zeros(2, 4, 6, dtype=torch.float64)
    offsets[1] = lam
    metric = ProductInverseMetric(offsets, qt, torch.ones(2, 4, 1, dtype=torch.float64))
    expected = torch.tensor([[closed(abs(v), lam, q) for v in row] for row in x.tolist()],
                            dtype=torch.float64)
    torch.testing.assert_close(metric(x), expected, rtol=1e-12, atol=0)


@given(st.floats(1.0, 2.0), st.floats(1e-2, 10.0), st.floats(1e-3, 5.0))
def test_hypergeometric_gradient_integrates_the_hessian(q, lam, x):
    """d/dx of the derived grad R (a 2F1 for symbolic q) equals 1/M, by mpmath."""
    import mpmath

    two = derive_metric_two_factors().result
    gradient = sp.lambdify((two.x, two.lam, Q), two.gradient, "mpmath")
    hessian = sp.lambdify((two.x, two.lam, Q), two.hessian, "mpmath")
    slope = mpmath.diff(lambda z: gradient(z, lam, q), x)
    assert float(slope) == pytest.approx(float(hessian(x, lam, q)), rel=1e-10)


@pytest.mark.parametrize("L", [2, 3, 5])
def test_zero_balance_metric_and_zero_crossing(L):
    q = torch.full((1, 1), 1.5, dtype=torch.float64)
    mask = torch.ones(L, 1, 1, dtype=torch.float64)
    metric = ProductInverseMetric(torch.zeros(L, 1, 3, dtype=torch.float64), q, mask)
    x = torch.tensor([[0.0, 1e-3, -7.0]], dtype=torch.float64)
    expected = L * x.abs() ** (1.5 * (L - 1) / L)
    torch.testing.assert_close(metric(x), expected, rtol=1e-12, atol=0)


def test_metric_rejects_negative_offsets_and_bad_depths():
    q = torch.ones(1, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="offsets"):
        ProductInverseMetric(-torch.ones(2, 1, 1, dtype=torch.float64), q,
                             torch.ones(2, 1, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="depths"):
        depth_mask(torch.tensor([0, 2]), 3)


# --- the flow: conservation, orders, sign descent -----------------------------------------------

@settings(max_examples=8)
@given(st.floats(1.1, 1.9), depths, seeds)
def test_flow_conserves_power_q_and_not_power_p(q, L, seed):
    """The drift of |w_i|^q - |w_1|^q is discretisation error (falls ~16x per halving of
    dt, RK4); that of the planted power p = q/(q-1) is the flow's own and does not fall."""
    W0, qt, mask = _balanced(seed, q, L, positive=True)
    problem = SeparableQuadratic(torch.ones_like(W0[0]), W0.prod(0) + 2.0)
    flow = ProductFlow(problem.grad, qt, mask)
    ends = [integrate(flow, W0, dt=0.1 / n, steps=n).final for n in (20, 40)]
    for r, conserved in ((q, True), (q / (q - 1), False)):
        before = W0.abs() ** r
        drift = [float(((W.abs() ** r - W.abs()[:1] ** r) - (before - before[:1])).abs().max())
                 for W in ends]
        if conserved:
            assert drift[1] < max(drift[0] / 8, 1e-13)
        else:
            assert drift[1] > max(0.5 * drift[0], 1e-4)


@settings(max_examples=6)
@given(st.floats(1.1, 2.0), depths, seeds)
def test_measured_orders_are_four_and_two_on_smooth_cases(q, L, seed):
    W0, qt, mask = _balanced(seed, q, L, positive=True)
    problem = SeparableQuadratic(torch.ones_like(W0[0]), W0.prod(0) + 2.0)
    flow = ProductFlow(problem.grad, qt, mask)
    for method, order in (("rk4", 4), ("heun", 2)):
        ends = [integrate(flow, W0, dt=0.1 / n, steps=n, method=method).final.prod(0)
                for n in (4, 8, 16, 32)]
        # Differences of consecutive levels fall at the method's order (no reference run).
        assert float(observed_order(ladder_differences(ends))) == pytest.approx(order, abs=0.5)


def test_sign_descent_keeps_the_balance_between_crossings():
    problem, _ = default_regression(make_generator(0))
    g = make_generator(1)
    W0 = 0.5 * torch.randn(3, 2, 20, generator=g, dtype=torch.float64)
    mask = torch.ones(3, 2, 1, dtype=torch.float64)
    flow = ProductFlow(problem.grad, torch.ones(2, 1, dtype=torch.float64), mask)
    W = steepest_descent(flow, W0, lr=1e-2, steps=200).values
    D = W.abs()[:, 1:] - W.abs()[:, :1]
    flips = (torch.sign(W[1:]) != torch.sign(W[:-1])).any(1, keepdim=True).expand_as(D[1:])
    assert (D[1:] - D[:-1])[~flips].abs().max() < 1e-14
    assert bool(flips.any())  # the run does cross zero, so the exclusion is exercised


def test_woodworth_flow_conserves_the_product():
    problem, _ = default_regression(make_generator(0))
    flow = DifferenceOfPowersFlow(problem.grad, 2)
    W0 = torch.full((2, 1, 20), 0.7, dtype=torch.float64)
    W = integrate(flow, W0, dt=0.05, steps=200).final
    # Not exact under RK4: its error at dt = 0.05 over t = 10 is ~1e-9 relative.
    torch.testing.assert_close(W[0] * W[1], W0[0] * W0[1], rtol=1e-8, atol=0)


def test_bregman_projection_with_a_quadratic_potential_is_the_pseudo_inverse():
    problem, _ = default_regression(make_generator(3))
    x, _ = bregman_projection(lambda x: x, torch.ones_like, problem.A, problem.y,
                              torch.zeros(1, 20, dtype=torch.float64))
    torch.testing.assert_close(x[0], torch.linalg.pinv(problem.A) @ problem.y, rtol=1e-10,
                               atol=1e-12)


def test_a_blow_up_raises_diverged():
    with pytest.raises(Diverged):
        integrate(lambda t, y: y**2, torch.ones(1, dtype=torch.float64), dt=0.5, steps=20)


def test_balance_inputs_are_validated():
    q = torch.ones(1, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="base"):
        factors_from_balance(-torch.ones(1, 1, dtype=torch.float64),
                             torch.zeros(2, 1, 1, dtype=torch.float64),
                             torch.ones(2, 1, 1, dtype=torch.float64), q,
                             torch.ones(2, 1, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="decay"):
        ProductFlow(lambda x: x, q, torch.ones(2, 1, 1, dtype=torch.float64),
                    decoupled=-torch.ones(1, 1, dtype=torch.float64))
    assert math.isfinite(float(q))
