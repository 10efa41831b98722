"""theory.ns.steepest (the L_p steepest direction, derived) against numerical minimisation and
numerics.ns.steepest_flows' direction and integrators."""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from numerics.integrators import METHODS, integrate
from numerics.random import make_generator
from numerics.ns.steepest_flows import (
    check_exponent,
    odd_power,
)
from numerics.step_studies import observed_order, richardson_error
from theory.ns.steepest import derive_sign_limit, derive_steepest_direction, dual_exponent

DIRECTION = derive_steepest_direction().result

exponents = st.floats(1.05, 2.0)
gradients = st.floats(-5.0, 5.0).filter(lambda g: abs(g) > 1e-3)


def test_derivation_arrives_at_the_direction_and_value():
    q, g = DIRECTION.q, DIRECTION.g
    assert sp.simplify(DIRECTION.p - q / (q - 1)) == 0
    assert DIRECTION.exponent == q - 1
    assert DIRECTION.direction == -sp.sign(g) * sp.Abs(g) ** (q - 1)
    assert sp.simplify(DIRECTION.value + sp.Abs(g) ** q / q) == 0


def test_dual_exponent_and_sign_limit():
    assert dual_exponent(sp.Integer(2)) == 2
    assert dual_exponent(sp.Rational(4, 3)) == 4
    assert derive_sign_limit().result == 1


@given(exponents, gradients)
def test_direction_minimises_the_model(q, g):
    p = q / (q - 1)
    best = minimize_scalar(lambda d: g * d + abs(d) ** p / p, bounds=(-50, 50),
                           method="bounded", options={"xatol": 1e-12})
    derived = float(DIRECTION.direction.subs({DIRECTION.g: g, DIRECTION.q: q}))
    assert derived == pytest.approx(best.x, rel=1e-5, abs=1e-7)
    value = float(DIRECTION.value.subs({DIRECTION.g: g, DIRECTION.q: q}))
    assert value == pytest.approx(best.fun, rel=1e-8, abs=1e-10)


@given(exponents, gradients)
def test_planted_dual_exponent_is_not_the_minimiser(q, g):
    """|g|^(p-1) in place of |g|^(q-1): its model value is higher unless q = 2 or |g| = 1."""
    p = q / (q - 1)
    model = lambda d: g * d + abs(d) ** p / p  # noqa: E731
    right = -math.copysign(abs(g) ** (q - 1), g)
    wrong = -math.copysign(abs(g) ** (p - 1), g)
    if abs(q - 2) > 1e-3 and abs(abs(g) - 1) > 1e-2:
        assert model(wrong) > model(right)


@given(st.floats(1.0, 2.0), st.integers(0, 2**31 - 1))
def test_odd_power_matches_the_derived_direction(q, seed):
    g = torch.randn(32, generator=make_generator(seed), dtype=torch.float64)
    expected = torch.tensor([-float(DIRECTION.direction.subs({DIRECTION.g: float(v),
                                                               DIRECTION.q: q}))
                             for v in g], dtype=torch.float64)
    torch.testing.assert_close(odd_power(g, q), expected, rtol=1e-13, atol=0)


def test_q1_is_sign_with_sign_zero_zero():
    v = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64)
    assert odd_power(v, 1.0).tolist() == [-1.0, 0.0, 1.0]
    assert odd_power(v, 2.0).tolist() == v.tolist()


@pytest.mark.parametrize("q", [0.5, 2.5, float("nan")])
def test_exponent_outside_one_two_is_rejected(q):
    with pytest.raises(ValueError, match="q"):
        check_exponent(torch.tensor([[q]]))


@pytest.mark.parametrize("method", ["rk4", "heun", "euler"])
def test_integrator_order_on_a_linear_test_equation(method):
    """y' = -y: the measured order equals the classical order of each method."""
    _, order = METHODS[method]
    y0 = torch.ones(1, dtype=torch.float64)
    errors = []
    for k in range(4):
        n = 8 * 2**k
        y = integrate(lambda t, y: -y, y0, dt=1.0 / n, steps=n, method=method).final
        errors.append(float((y - math.exp(-1.0)).abs()))
    assert float(observed_order(torch.tensor(errors))) == pytest.approx(order, abs=0.1)


def test_richardson_estimate_bounds_a_first_order_error():
    values = [torch.tensor([1.0 + 0.1 / 2**k], dtype=torch.float64) for k in range(3)]
    estimate, p_hat = richardson_error(values)
    assert estimate == pytest.approx(0.1 / 4)  # the finest error exactly, at order 1
    assert p_hat == pytest.approx(1.0)


def test_integrate_rejects_bad_arguments():
    y0 = torch.ones(1, dtype=torch.float64)
    with pytest.raises(ValueError, match="dt"):
        integrate(lambda t, y: y, y0, dt=-1.0, steps=1)
    with pytest.raises(ValueError, match="method"):
        integrate(lambda t, y: y, y0, dt=0.1, steps=1, method="rk45")
    with pytest.raises(ValueError, match="steps"):
        integrate(lambda t, y: y, y0, dt=0.1, steps=0)
