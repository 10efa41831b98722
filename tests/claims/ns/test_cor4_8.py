"""ns.cor4.8: mu = lambda^(q(L-1)) at w_1 = 0, w_i = lambda; 'smaller q gives larger mu' fails
as stated (lambda > 1, smallest case L = 2, lambda = 2) and holds for lambda < 1."""
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.claims.ns.cor4_8 as cor
from numerics.ns.balance_manifold import factors_on_manifold, measured_inverse_metric
from numerics.random import make_generator
from numerics.ns.steepest_flows import depth_mask
from tests.claim_results import quick_result
from theory.ns.coercivity import LAM, derive_coercivity, derive_perturbed_coercivity
from theory.ns.reparam_balance import Q
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def result():
    return quick_result("ns.cor4.8")


def test_fails_as_stated_only_above_one_and_the_control_only_below_one():
    r = result()
    failed = {e.quantity for e in r.evidence if e.ok is False}
    assert failed and all("lambda > 1" in q for q in failed)
    assert all(e.ok for e in r.evidence if "lambda > 1" not in e.quantity)
    assert {e.route.value for e in r.evidence if e.ok is False} == {"symbolic", "property"}
    # The opposite ordering is caught on lambda < 1 by both the symbolic and property routes.
    control = {e.quantity: e for e in r.control.evidence if e.ok is False}
    assert {e.route.value for e in control.values()} == {"symbolic", "property"}
    assert all("0 < lambda < 1" in q for q in control)
    # lambda = 2 (the counterexample) is inside: the corollary states no bound on lambda
    assert all(a.holds for a in r.assumptions)


def test_scope_below_one_passes_and_above_one_fails():
    """The regime map stress draws: every item holds with lambda < 1 only, and lambda > 1
    alone fails on both the symbolic and the property route."""
    below = run_claim(get("ns.cor4.8"), control=False, overrides={"grid.lam": (0.1, 0.5)})
    assert below.verdict is Verdict.PASS and below.inside_assumptions
    above = run_claim(get("ns.cor4.8"), control=False, overrides={"grid.lam": (2.0,)})
    assert above.verdict is Verdict.FAIL and above.inside_assumptions
    assert {e.route.value for e in above.evidence if e.ok is False} == {"symbolic", "property"}


def test_smallest_counterexample_is_exact():
    mu = derive_coercivity(2).result.mu
    assert mu.subs({LAM: 2, Q: 1}) == 2 and mu.subs({LAM: 2, Q: 2}) == 4
    assert sp.simplify(mu.subs(LAM, 1) - 1) == 0


@pytest.mark.parametrize("L", [2, 3, 4, 5])
def test_derived_mu_is_the_offset_product(L):
    res = derive_coercivity(L).result
    assert sp.simplify(res.mu - LAM ** (Q * (L - 1))) == 0
    assert res.sign_below_one == -1 and res.sign_above_one == 1
    assert sp.simplify(res.exponent - Q * (L - 1) / L) == 0


def test_numeric_route_rejects_a_wrong_mu(monkeypatch):
    monkeypatch.setattr(cor, "derived_mu", lambda L, q, lam: lam ** (q * L))
    r = run_claim(get("ns.cor4.8"), control=False)
    numeric = [e for e in r.evidence if e.quantity.startswith("min over |x| <= 10")]
    assert numeric and numeric[0].ok is False


def _one_case(q, L, lam, seed):
    gen = make_generator(seed)
    mask = depth_mask(torch.tensor([L]), 5)
    qt = torch.tensor([[q]], dtype=torch.float64)
    offsets = torch.zeros(5, 1, 1, dtype=torch.float64)
    offsets[1:L] = lam**q * (0.5 + torch.rand(L - 1, 1, 1, generator=gen, dtype=torch.float64))
    x = 10 * (2 * torch.rand(1, 9, generator=gen, dtype=torch.float64) - 1)
    x[0, 0] = 0.0
    return qt, mask, offsets, x


@settings(max_examples=25)
@given(q=st.floats(1.0, 2.0), L=st.integers(2, 5), lam=st.floats(0.05, 3.0),
       seed=st.integers(0, 2**31 - 1))
def test_manifold_points_have_the_product_and_offsets(q, L, lam, seed):
    qt, mask, offsets, x = _one_case(q, L, lam, seed)
    W = factors_on_manifold(x, offsets, qt, mask)
    assert torch.allclose(W.prod(0), x, rtol=1e-13, atol=1e-300)
    powers = W.abs() ** qt
    assert torch.allclose(((powers - powers[0]) * mask)[:L], offsets[:L].expand(-1, -1, 9),
                          rtol=1e-10, atol=1e-12 * float(offsets.max()))


@settings(max_examples=25)
@given(q=st.floats(1.0, 2.0), L=st.integers(2, 5), lam=st.floats(0.05, 3.0),
       seed=st.integers(0, 2**31 - 1))
def test_inverse_metric_at_zero_is_the_perturbed_formula_and_the_minimum(q, L, lam, seed):
    qt, mask, offsets, x = _one_case(q, L, lam, seed)
    M = measured_inverse_metric(factors_on_manifold(x, offsets, qt, mask), qt, mask)[0]
    # |w_1| = 0 < |w_i| = (c_i)^(1/q): the derived prod_{i>=2}(|w_i|^q - |w_1|^q).
    res = derive_perturbed_coercivity(L).result
    values = {Q: sp.Float(q, 30), res.magnitudes[0]: 0}
    values.update({a: sp.Float(float(offsets[i, 0, 0]) ** (1 / q), 30)
                   for i, a in enumerate(res.magnitudes[1:], start=1)})
    derived = float(res.mu.subs(values).evalf(30))
    assert abs(float(M[0]) - derived) <= 64 * 2.3e-16 * derived
    assert bool((M >= M[0] * (1 - 64 * 2.3e-16)).all())
