"""ns.x.attention-kq: gradient flow conserves Q^T Q - K^T K on the key-query product, the origin
is a strict saddle, the paper's sign-descent balance holds on diagonal factors only; each route
rejects a planted wrong form, and the swapped-transpose control is rejected."""
import dataclasses

import pytest
import sympy as sp
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics.integrators import integrate
from numerics.ns.attention_kq import (
    KeyQueryFlow,
    autograd_saddle,
    column_balance,
    initial_factors,
    make_tasks,
)
from theory.ns.attention_kq import (
    derive_brackets,
    derive_gram_rates,
    derive_saddle,
    derive_sign_rates,
)
from verify.claims.ns import x_attention_kq as claim_module
from verify.registry import get
from verify.runner import run_claim

CLAIM = get("ns.x.attention-kq")


@pytest.fixture(scope="module")
def result():
    return run_claim(CLAIM)


def _variant(**stated):
    return run_claim(dataclasses.replace(CLAIM, stated={**CLAIM.stated, **stated}),
                     control=False, readings=False)


def _failed(result):
    return {e.quantity.split(":")[0] for e in result.evidence if e.ok is False}


def test_the_claim_passes_and_reading_b_fails(result):
    assert result.verdict.value == "pass"
    assert all(e.ok for e in result.evidence)
    (reading,) = result.readings
    assert reading.verdict.value == "fail"


def test_the_swapped_balance_control_is_rejected_by_symbolic_and_simulation_routes(result):
    assert result.control.rejected
    failed = {e.route.value for e in result.control.evidence if e.ok is False}
    assert failed == {"symbolic", "numeric", "rate"}


def test_a_wrong_spectrum_fails_the_symbolic_and_the_autograd_routes():
    variant = _variant(spectrum=lambda sigma, r: [2 * s for s in
                                                  claim_module.stated_spectrum(sigma, r)])
    routes = {e.route.value for e in variant.evidence if e.ok is False}
    assert variant.verdict.value == "fail" and routes == {"symbolic", "numeric"}


def test_the_squared_power_for_sign_descent_fails_the_symbolic_and_per_step_routes():
    variant = _variant(sign_power=lambda q: 2 * q)
    failed = [e for e in variant.evidence if e.ok is False]
    assert {e.route.value for e in failed} == {"symbolic", "numeric"}
    assert any("diagonal factors" in e.quantity for e in failed)


def test_a_diagonal_reading_of_the_full_product_fails_the_bracket_count():
    variant = _variant(noncommuting=lambda d: 0)
    assert {e.route.value for e in variant.evidence if e.ok is False} == {"symbolic"}


def test_derived_laws():
    assert derive_gram_rates(3, 2).result.is_zero_matrix
    s = derive_saddle(2, 1).result
    assert s.gradient.is_zero_matrix and s.trace == 0
    assert sp.expand(s.charpoly - s.singular_poly) == 0
    assert derive_brackets(2, 2, diagonal=True).result.noncommuting == ()
    rates = derive_sign_rates(*claim_module.WITNESS).result
    assert rates.balance != sp.zeros(1, 1) and rates.column_l1 != sp.zeros(1, 1)


@given(d=st.integers(2, 4), r=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_gd_balance_drift_is_second_order_in_lr(d, r, seed):
    """One GD step moves Q^T Q - K^T K by O(lr^2): halving lr quarters the change."""
    tasks = make_tasks([seed], N=3, n=4, d=d, singular=[2.0])
    y0 = initial_factors([seed], d=d, r=r, scale=1.0)
    flow = KeyQueryFlow(tasks, 2.0)
    changes = []
    for lr in (1e-2, 5e-3):
        y1 = integrate(flow, y0, dt=lr, steps=1, method="euler").final
        changes.append(float((claim_module.stated_balance(y1[:, 0], y1[:, 1])
                              - claim_module.stated_balance(y0[:, 0], y0[:, 1])).abs().max()))
    assert changes[1] <= 0.26 * changes[0] + 1e-15


@given(d=st.integers(2, 4), seed=st.integers(0, 10**6))
def test_sign_descent_keeps_the_l1_balance_on_diagonal_factors(d, seed):
    tasks = make_tasks([seed], N=3, n=4, d=d, singular=[2.0])
    y0 = initial_factors([seed], d=d, r=d, scale=1.0, diagonal=True)
    y1 = integrate(KeyQueryFlow(tasks, 1.0, diagonal=True), y0, dt=1e-3, steps=1,
                   method="euler").final
    assert torch.allclose(column_balance(y1, 1.0), column_balance(y0, 1.0), atol=1e-14)
    off = ~torch.eye(d, dtype=torch.bool)
    assert (y1[..., off] == 0).all()


def test_autograd_hessian_at_zero_is_symmetric_and_indefinite():
    tasks = make_tasks([0, 1], N=4, n=5, d=3, singular=[3.0])
    _, spectra = autograd_saddle(tasks, 2)
    assert torch.allclose(spectra, -spectra.flip(-1), atol=1e-14)
    assert (spectra[:, 0] < 0).all()
