"""li2.sec3.2-zero-init (alias li2.sec3-zeroinit): from V(0) = 0, G_F(t) = t Yt Yt^T Ft + O(t^2)
(exact through t^1, remainder of order 2), while V(0) = alpha U leaves an O(alpha) plateau."""
import dataclasses

import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.random import make_generator
from numerics.li2.small_time_flow import flow_to_times, hessian_norms
from numerics.li2.stage1_problems import draw_problems
from numerics.li2.two_layer import center
from theory.li2.stage1_expansion import derive_small_time_series
from verify.claim import NegativeControl
from verify.claims.li2.sec3_zero_init import stated_zero_init
from verify.registry import get
from verify.runner import run_claim


def _failed(evidence):
    return {e.quantity for e in evidence if e.ok is False}


def test_alias_resolves_and_the_control_fails_the_zero_init_items():
    result = run_claim(get("li2.sec3-zeroinit"))
    assert result.claim["id"] == "li2.sec3.2-zero-init"
    assert all(a.holds for a in result.assumptions)
    failed = _failed(result.control.evidence)
    assert "G_F(t) at V(0) = 0 through t^1 (every O(alpha) term gone) vs t Yt Yt^T Ft" in failed
    assert sum(q.startswith("zero init") and "order" in q for q in failed) == 2
    t2 = next(v for k, v in result.figures.items() if k.startswith("t^2 coefficient"))
    assert t2["nonzero"] is True


def test_wrong_orders_are_rejected_by_each_trend():
    claim = get("li2.sec3.2-zero-init")
    variant = dataclasses.replace(claim, control=NegativeControl(
        "O(t^3) from zero init, O(alpha t) from the regular one",
        {"zero_init_remainder": lambda t, a: t**3, "regular_remainder": lambda t, a: a * t}))
    failed = _failed(run_claim(variant).control.evidence)
    assert sum(q.startswith("zero init") and "order vs stated 3" in q for q in failed) == 2
    assert sum(q.startswith("regular init") and "order vs stated 1" in q for q in failed) == 2


@settings(max_examples=4)
@given(n=st.integers(1, 3), K=st.integers(1, 2), M=st.integers(1, 2))
def test_series_from_zero_has_no_alpha_terms_through_t1(n, K, M):
    s = derive_small_time_series(n, K, M).result
    at_zero = s.G.xreplace({s.alpha: 0})
    assert (at_zero - stated_zero_init(s.Ft, s.Yt, s.t)).applyfunc(sp.expand) == sp.zeros(n, K)


@given(n=st.integers(4, 16), K=st.integers(1, 6), M=st.integers(2, 4),
       eta=st.sampled_from([0.0, 0.1]), seed=st.integers(0, 2**31 - 1))
def test_remainder_from_zero_quarters_when_t_halves(n, K, M, eta, seed):
    F, Y = draw_problems(2, n, K, M, make_generator(seed), realisable=False)
    V0 = torch.zeros(2, K, M, dtype=F.dtype)
    t = 1e-3 / hessian_norms(F, eta)
    Ft, Yt = center(F), center(Y)
    remainders = []
    for scale in (1.0, 0.5):
        G, _ = flow_to_times(F, Y, V0, eta, scale * t, steps=4)
        remainders.append(torch.linalg.matrix_norm(G - stated_zero_init(Ft, Yt, (scale * t)
                                                                         [:, None, None])))
    ratio = remainders[0] / remainders[1]
    # t^2 C_2 (1 + O(t)): the ratio is 4 up to the O(t) correction at tau = 1e-3.
    assert bool(((ratio > 3.9) & (ratio < 4.1)).all()), ratio
