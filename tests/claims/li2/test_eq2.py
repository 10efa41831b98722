"""li2.eq2: G_F = -dJ/dF = P(Y - FV)V^T, by sympy, autograd and sampled sizes."""
import torch
from hypothesis import given

from numerics.random import make_generator, randn
from numerics.li2.two_layer import backprop_gradient, one_hot_labels
from verify.claims.li2.eq2 import SPACE, stated_G_F, uncentred_G_F
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import strategy
from verify.verdict import Verdict


def _problem(c):
    g = make_generator(c["seed"])
    F, V = randn(c["n"], c["K"], generator=g), randn(c["K"], c["M"], generator=g)
    return F, V, one_hot_labels(c["n"], c["M"], g)


@given(strategy(SPACE))
def test_stated_gradient_matches_autograd(c):
    F, V, Y = _problem(c)
    torch.testing.assert_close(stated_G_F(F, V, Y), backprop_gradient(F, V, Y),
                               rtol=0, atol=1e-12 * (1 + F.abs().max() * V.abs().max() ** 2))


@given(strategy(SPACE))
def test_uncentred_gradient_differs_unless_residual_is_centred(c):
    F, V, Y = _problem(c)
    residual = Y - F @ V
    gap = (uncentred_G_F(F, V, Y) - backprop_gradient(F, V, Y)).abs().max()
    # The two differ by 1 (1^T R / n) V^T: zero only when the residual is already centred.
    expected = (residual.mean(0, keepdim=True) @ V.T).abs().max()
    torch.testing.assert_close(gap, expected, rtol=1e-9, atol=1e-12)


def test_each_route_is_present_and_each_fails_under_the_control():
    result = run_claim(get("li2.eq2"))
    assert {e.route.value for e in result.evidence} == {"symbolic", "numeric", "property"}
    # Every route of the control fails, not only one: each can detect the dropped centring.
    assert all(e.ok is False for e in result.control.evidence)


def test_float32_run_uses_float32_tolerances():
    result = run_claim(get("li2.eq2"), dtype="float32")
    assert result.verdict is Verdict.PASS, result.reason
    numeric = [e for e in result.evidence if e.route.value == "numeric"][0]
    assert numeric.tolerance.value > 1e-6  # scaled by float32's roundoff, not float64's
