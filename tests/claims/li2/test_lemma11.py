"""li2.lemma11: false as stated (smallest case n=3, K=1, M=2), true once realisability (A2)
holds."""
import sympy as sp
import torch
from hypothesis import given

from verify.claims.li2.lemma11 import (
    SPACE,
    _draw,
    _sides,
    sigma_min,
    smallest_counterexample,
)
from verify.registry import get
from verify.run import Run
from verify.runner import run_claim
from verify.sampling import strategy
from verify.verdict import Verdict

RUN = Run(claim_id="li2.lemma11", fidelity="quick", params={}, stated={}, seed=0,
          device=torch.device("cpu"), dtype=torch.float64)


def test_smallest_counterexample_is_exact():
    lhs_sq, rhs_sq, Ft, Yt = smallest_counterexample().result
    assert lhs_sq == 0 and rhs_sq == sp.Rational(32, 9)
    assert (Ft.T * Yt)[0, 0] == 0  # the features are orthogonal to the centred labels


@given(strategy(SPACE))
def test_bound_holds_under_realisability(c):
    lhs, bound = _sides(*_draw(c, RUN, realisable=True), sigma_min)
    assert float(lhs) >= float(bound) * (1 - 1e-12)


def test_claim_fails_as_stated_but_holds_with_a2():
    result = run_claim(get("li2.lemma11"))
    assert result.verdict is Verdict.FAIL
    by_ok = {e.quantity: e.ok for e in result.evidence}
    assert [ok for q, ok in by_ok.items() if "A2 added" in q] == [True]
    assert sum(ok is False for ok in by_ok.values()) == 2
    # The planted sigma_max bound is caught even where the true bound holds.
    control = {e.quantity: e.ok for e in result.control.evidence}
    assert [ok for q, ok in control.items() if "A2 added" in q] == [False]
