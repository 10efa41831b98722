"""li2.prop2 (alias li2.eq55): false as printed (the t^0 term -Ft V0 V0^T is missing, smallest
case n=2, K=1, M=2); with Eq. 68's t^0 term kept, every route passes."""
import dataclasses

import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.random import make_generator, randn
from numerics.li2.small_time_flow import flow_to_times
from numerics.li2.stage1_problems import draw_problems
from numerics.li2.two_layer import center
from theory.li2.stage1_expansion import coefficients, derive_small_time_series
from verify.claim import NegativeControl
from verify.claims.li2.prop2 import assumption_items, eq68_small_time, stated_small_time
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def _failed(evidence):
    return {e.quantity for e in evidence if e.ok is False}


def test_claim_fails_as_printed_on_the_missing_t0_term():
    result = run_claim(get("li2.eq55"))  # the alias resolves to li2.prop2
    assert result.claim["id"] == "li2.prop2"
    assert _failed(result.evidence) == {
        "t^0 part of G_Ft(t), every power of alpha (stated: Yt V0^T)",
        "Prop. 2 remainder as t -> 0 (alpha fixed, eta=0): order vs stated 1",
        "Prop. 2 remainder as t -> 0 (alpha fixed, eta=0.1): order vs stated 1"}
    # The rest holds: the t^1 alpha^0 coefficient and the alpha << t^2 trend, for both eta.
    ok = {e.quantity: e.ok for e in result.evidence}
    assert ok["t^1 alpha^0 coefficient of G_Ft(t) (Yt Yt^T Ft)"] is True
    assert ok["Prop. 2 remainder as t -> 0 (alpha << t^2, eta=0): order vs stated 2"] is True
    assert all(a.holds for a in result.assumptions)
    assert result.figures[next(k for k in result.figures if k.startswith("smallest"))] == [
        "1/2", "-1/2"]


def test_corrected_statement_passes_and_its_control_is_rejected():
    claim = get("li2.prop2")
    corrected = dataclasses.replace(claim, stated={**claim.stated,
                                                   "small_time": eq68_small_time})
    result = run_claim(corrected)
    assert result.verdict is Verdict.PASS, result.reason
    assert result.control.rejected
    failed = _failed(result.control.evidence)
    assert "t^1 alpha^0 coefficient of G_Ft(t) (Yt Yt^T Ft)" in failed
    assert any(q.startswith("Prop. 2 remainder as t -> 0 (alpha << t^2") for q in failed)


def test_a_wrong_remainder_order_is_rejected():
    claim = get("li2.prop2")
    variant = dataclasses.replace(claim, stated={**claim.stated,
                                                 "small_time": eq68_small_time},
                                  control=NegativeControl("O(t alpha^2 + t^3)", {
                                      "remainder": lambda t, a: t * a**2 + t**3}))
    failed = _failed(run_claim(variant).control.evidence)
    assert any(q.startswith("Prop. 2 remainder as t -> 0 (alpha << t^2") for q in failed)
    assert any(q.startswith("Prop. 2 remainder as alpha -> 0") for q in failed)


@settings(max_examples=4)
@given(n=st.integers(2, 3), K=st.integers(1, 2), M=st.integers(1, 2))
def test_t0_part_of_the_series_is_eq68s(n, K, M):
    s = derive_small_time_series(n, K, M).result
    stated = coefficients(eq68_small_time(s.Ft, s.Yt, s.alpha * s.U, s.t), s.t, s.alpha)
    derived = s.coefficients()
    for key in ((0, 1), (0, 2), (1, 0)):
        assert (stated[key] - derived[key]).applyfunc(sp.expand) == sp.zeros(n, K)
    # Prop. 2's printed form has no alpha^2 t^0 term.
    printed = coefficients(stated_small_time(s.Ft, s.Yt, s.alpha * s.U, s.t), s.t, s.alpha)
    assert (0, 2) not in printed


@given(n=st.integers(6, 16), M=st.integers(2, 4), seed=st.integers(0, 2**31 - 1),
       alpha=st.floats(1e-3, 1.0))
def test_autograd_gradient_at_t0_keeps_the_quadratic_term(n, M, seed, alpha):
    K = min(M + 1, n - 1)
    g = make_generator(seed)
    F, Y = draw_problems(2, n, K, M, g, realisable=True)
    V0 = alpha * randn(2, K, M, generator=g)
    G0, _ = flow_to_times(F, Y, V0, 0.1, torch.zeros(2, dtype=F.dtype), steps=1)
    Ft, Yt = center(F), center(Y)
    torch.testing.assert_close(G0, eq68_small_time(Ft, Yt, V0, 0.0), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(G0 - stated_small_time(Ft, Yt, V0, 0.0), -Ft @ V0 @ V0.mT,
                               rtol=1e-9, atol=1e-14)


def test_each_setup_relation_rejects_its_planted_error():
    """A without eta, B with its sign flipped and E = Yt + Ft V: each setup item (App. C,
    Eqs. 47-52) fails on its own, and the untouched field and G items still hold."""
    claim = get("li2.prop2")
    variant = dataclasses.replace(claim, control=NegativeControl("A, B, E wrong", {
        "A": lambda Ft, eta: Ft.T @ Ft,
        "B": lambda Ft, Yt: -(Ft.T @ Yt),
        "E": lambda Ft, Yt, V: Yt + Ft @ V}))
    result = run_claim(variant)
    ok = {e.quantity: e.ok for e in result.control.evidence}
    setup = {q: v for q, v in ok.items() if q.startswith("App. C setup")}
    assert len(setup) == 5
    assert [q for q, v in setup.items() if v is False] == [
        "App. C setup (Eqs. 47-52): A = Ft^T Ft + eta I, as I_M (x) A = -d vec(dV/dt)/d vec(V)",
        "App. C setup (Eqs. 47-52): B = Ft^T Yt, the flow field at V = 0",
        "App. C setup: E = Yt - Ft V, the residual in -dJ/dV = Ft^T E - eta V"]
    # On the claim's own run, every setup and (A1)-(A4) item holds.
    assert all(e.ok for e in result.evidence
               if e.quantity.startswith(("App. C setup", "(A1)", "(A2)", "(A3)", "(A4)")))


def _assumption_problems(seed=0, S=4, n=12, K=4, M=3):
    g = make_generator(seed)
    F, Y = draw_problems(S, n, K, M, g, realisable=True)
    return center(F), center(Y), randn(S, K, M, generator=g)


def _failed_assumptions(Ft, Yt, U):
    return {e.quantity.split(" ")[0] + (" variance" if "variance" in e.quantity else "")
            for e in assumption_items(Ft, Yt, U) if e.ok is False}


def test_assumption_items_hold_on_the_claims_problems():
    assert _failed_assumptions(*_assumption_problems()) == set()


def test_each_assumption_item_rejects_data_that_break_it():
    Ft, Yt, U = _assumption_problems()
    # (A1): a repeated column (rank K - 1)
    repeated = Ft.clone()
    repeated[..., -1] = repeated[..., 0]
    assert "(A1)" in _failed_assumptions(repeated, Yt, U)
    # (A2): labels with a centred component off col(Ft)
    g = make_generator(7)
    off = center(randn(*Yt.shape, generator=g))
    assert _failed_assumptions(Ft, Yt + off, U) >= {"(A2)"}
    # (A3): V0 / alpha with standard deviation 2 (variance 4), and with mean 1
    assert "(A3) variance" in _failed_assumptions(Ft, Yt, 2 * U)
    assert "(A3)" in _failed_assumptions(Ft, Yt, U + 1)
    # (A4): features not centred over samples
    assert "(A4)" in _failed_assumptions(Ft + 1.0, Yt, U)
