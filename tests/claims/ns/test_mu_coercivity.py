"""ns.mu-coercivity: the summaries' x^T (grad^2 R)^(-1) x >= mu |x|^2 and the diagonal reading
have the same best constant for R_(Lp,L), mu = prod of the non-smallest offsets, 0 at a tie;
the Hessian in place of its inverse is rejected."""
import numpy as np
import pytest
import sympy as sp
import torch

import verify.claims.ns.mu_coercivity as mc
from numerics.ns.balance_manifold import factors_on_manifold, measured_inverse_metric
from numerics.ns.steepest_flows import depth_mask
from tests.claim_results import quick_result
from theory.ns.inverse_coercivity import derive_offset_coercivity, derive_quadratic_form
from theory.ns.reparam_balance import Q
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def test_passes_and_the_hessian_form_is_rejected_on_every_stated_route():
    r = quick_result("ns.mu-coercivity")
    assert r.verdict is Verdict.PASS and r.inside_assumptions
    rejected = {e.route.value for e in r.control.evidence if e.ok is False}
    assert rejected == {"symbolic", "property", "rate"}
    # the diagonal reading does not read the stated form: it agrees in the control too
    assert all(e.ok for e in r.control.evidence if "diagonal reading" in e.quantity)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_quotient_is_a_convex_combination(n):
    res = derive_quadratic_form(n).result
    assert res.form == sum(m * x**2 for m, x in zip(res.M, res.x))
    assert list(res.on_axes) == list(res.M)


@pytest.mark.parametrize("L", [2, 3, 4, 5])
def test_mu_is_the_offset_product_and_zero_at_a_tie(L):
    unique = derive_offset_coercivity(L, "none").result
    assert sp.simplify(unique.mu - sp.Mul(*unique.c[1:])) == 0
    assert unique.order == Q
    tie = derive_offset_coercivity(L, "two").result
    assert tie.mu == 0 and tie.order == Q / 2


@pytest.mark.parametrize("q", [1.0, 1.5, 2.0])
def test_balanced_start_has_zero_mu_and_a_half_order_approach(q):
    """All factors equal (offsets 0): M = L|x|^(q(L-1)/L) for L = 2 is 2|x|^(q/2)."""
    mask = depth_mask(torch.tensor([2]), 2)
    t = torch.tensor([[0.0, 1e-4, 1e-2]], dtype=torch.float64)
    qs = torch.tensor([[q]], dtype=torch.float64)
    M = measured_inverse_metric(factors_on_manifold(t, torch.zeros(2, 1, 1), qs, mask),
                                qs, mask)[0]
    assert float(M[0]) == 0.0
    torch.testing.assert_close(M[1:], 2 * t[0, 1:] ** (q / 2), rtol=1e-12, atol=0)


def test_unique_rows_only_pass_with_order_q():
    r = run_claim(get("ns.mu-coercivity"), control=False,
                  overrides={"ties": ("none",), "q": (1.5,), "L": (3,), "draws": 2})
    assert r.verdict is Verdict.PASS and r.inside_assumptions
    orders = [e for e in r.evidence if "order vs stated 1.5" in e.quantity]
    assert len(orders) == 1 and orders[0].ok


def test_forms_on_arrays_and_symbols():
    M, x = np.array([2.0, 3.0]), np.array([1.0, -2.0])
    assert mc.stated_form(M, x) == 14.0 and mc.hessian_form(M, x) == pytest.approx(0.5 + 4 / 3)
