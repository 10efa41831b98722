"""ns.thm4.3 (saddle set S of deep diagonal reparameterisations) and ns.x.thm4.3-decay (review
4's weight-decay statement): verdicts, controls, and the pieces of theory/ns/saddles.py."""
import math
from functools import cache

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.claim_results import quick_result
from theory.ns.saddles import ALPHA, G, derive_block, derive_decay_block, factors
from verify.registry import get
from verify.verdict import Verdict


result = quick_result


@cache
def block(L, zeros):
    return derive_block(L, zeros).result


def test_thm4_3_control_fails_on_symbolic_and_numeric_routes():
    failing = {e.route.value for e in result("ns.thm4.3").control.evidence if e.ok is False}
    assert {"symbolic", "numeric"} <= failing


def test_decay_statement_fails_exactly_for_L2_below_the_gradient():
    """The finding: with decay the origin is still a strict saddle for L = 2, alpha < |g|."""
    r = result("ns.x.thm4.3-decay")
    assert r.verdict is Verdict.FAIL
    coupled = [e for e in r.evidence if not e.quantity.startswith("decoupled")]
    failed = [e for e in coupled if e.ok is False]
    assert failed and all("saddle" in e.quantity for e in failed)
    assert all(e.ok for e in coupled if "saddle" not in e.quantity)
    # the derived saddle indicators: L = 2 with alpha/|g| < 1 only
    sym = next(e for e in r.evidence if e.route.value == "symbolic")
    ratios = get("ns.x.thm4.3-decay").parameters["quick"]["alpha_ratio"]
    expected = [int(L == 2 and a < 1) for L in (2, 3, 4) for a in ratios]
    assert [int(v) for v in sp.sympify(sym.derived["sympy"])] == expected


def test_decoupled_decay_near_S_goes_where_the_exponent_says():
    """Issue 20: from a small balanced start the decoupled flow leaves S for every alpha when
    (L-1)(q-1) < 1 (q < 2 at L = 2), is drawn into S for every alpha when > 1 (q = 2, L = 3),
    and leaves iff |g|^(q-1) > alpha when = 1; RK4 agrees with that in every coordinate, and
    both review 4's "stays" (0) and the control's "leaves" (1) disagree somewhere."""
    r = result("ns.x.thm4.3-decay")
    item = next(e for e in r.evidence if e.quantity.startswith("decoupled decay from"))
    assert item.comparisons["derived~measured"] == 0 and item.ok is False
    control = next(e for e in r.control.evidence if e.quantity.startswith("decoupled decay from"))
    assert control.ok is False and control.comparisons["derived~measured"] == 0
    on_s = next(e for e in r.evidence if e.quantity.startswith("decoupled decay, q in"))
    assert on_s.ok is True
    from verify.claims.ns.thm4_3 import crossover, decoupled_leaves

    assert [decoupled_leaves(q, L, 1.0, 0.5) for q, L in ((1.1, 2), (1.5, 2), (2.0, 3))] == \
        [1, 1, 0]
    assert decoupled_leaves(2.0, 2, 0.4, 0.5) == 1 and decoupled_leaves(2.0, 2, 0.6, 0.5) == 0
    # r_c is the nonzero root of |g|^(q-1) r^e = alpha r
    q, L, alpha, g = 1.5, 2, 0.3, 0.2
    r = crossover(q, L, alpha, g)
    assert abs(g) ** (q - 1) * r ** ((L - 1) * (q - 1)) == pytest.approx(alpha * r)
    assert math.isinf(crossover(2.0, 2, alpha, g))


@settings(max_examples=12)
@given(L=st.integers(2, 4), k=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_block_on_S_is_critical_with_order_k(L, k, seed):
    k = min(k, L)
    b = block(L, tuple(range(k)))
    assert all(e == 0 for e in b.gradient)
    assert b.order == k
    assert all(e == 0 for e in b.hessian) == (k >= 3)
    # leading term k! g P prod v_a, against nested autograd of f(x) = g x + x^2 (any f with f'(0)=g)
    gen = torch.Generator().manual_seed(seed)
    w = 0.5 + torch.rand(L, generator=gen, dtype=torch.float64)
    w[:k] = 0
    v = torch.randn(L, generator=gen, dtype=torch.float64)
    g = float(torch.randn(1, generator=gen, dtype=torch.float64))
    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    x = torch.prod(w + t * v)
    y = g * x + x**2
    for _ in range(k):
        (y,) = torch.autograd.grad(y, t, create_graph=True)
    syms = factors(L)
    vs = sp.symbols(f"v1:{L + 1}", real=True)
    sub = {**{syms[i]: float(w[i]) for i in range(L)},
           **{vs[i]: float(v[i]) for i in range(L)}, G: g}
    assert math.isclose(float(y.detach()), float(b.leading.subs(sub)),
                        rel_tol=1e-12, abs_tol=1e-300)


def test_one_vanishing_factor_is_not_critical():
    b = block(3, (0,))
    assert b.order == 1 and any(e != 0 for e in b.gradient)


@settings(max_examples=6)
@given(L=st.integers(2, 4), alpha=st.floats(1e-3, 1e3), g=st.floats(-10, 10))
def test_decay_spectrum_at_origin(L, alpha, g):
    d = derive_decay_block(L, (0, 1)).result
    assert d.critical_only_at_origin
    eigs = sorted(float(e.subs({ALPHA: alpha, G: g})) for e, m in
                  d.eigenvalues_at_origin.items() for _ in range(m))
    expected = sorted([alpha - abs(g), alpha + abs(g)] if L == 2 else [alpha] * L)
    assert eigs == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="L"):
        derive_block(1, ())
    with pytest.raises(ValueError, match="zeros"):
        derive_block(3, (0, 0))
    with pytest.raises(ValueError, match="zeros"):
        derive_decay_block(2, (0, 2))
