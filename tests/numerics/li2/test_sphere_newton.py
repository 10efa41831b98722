"""numerics.li2.sphere_newton: saddle-free Newton on the sphere reaches a maximum to rounding,
and its second-order data certify it (used by li2.x.activations, Thm. 2 reading B and Thm. 7)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.sphere_newton import gradient_and_hessian, newton_polish


def _quadratic_form(seed: int, d: int):
    gen = torch.Generator().manual_seed(seed)
    Q = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))[0]
    values = torch.linspace(-1.0, 2.0, d, dtype=torch.float64)  # distinct, top = 2
    A = Q @ torch.diag(values) @ Q.T
    return A, Q, values


@given(seed=st.integers(0, 2**31 - 1), d=st.integers(3, 8))
@settings(max_examples=20, deadline=None)
def test_reaches_the_top_eigenvector_from_near_a_saddle(seed, d):
    # f(w) = w^T A w / 2 on the sphere: critical points are eigenvectors, the only maxima
    # +-the top one; start next to the second eigenvector (a saddle): saddle-free Newton
    # steps go up, not to the saddle, and end at the top eigenvector to rounding
    A, Q, values = _quadratic_form(seed, d)
    start = (Q[:, -2] + 0.05 * Q[:, -1])[None]
    out = newton_polish(start, lambda x: 0.5 * ((x @ A) * x).sum(-1), steps=80, radius=0.2)
    cos = float((out.w[0] @ Q[:, -1]).abs())
    assert cos == pytest.approx(1.0, abs=1e-12)
    assert float(out.energy[0]) == pytest.approx(float(values[-1]) / 2, rel=1e-12)
    assert float(out.grad_norm[0]) < 1e-12
    # tangent spectrum at the maximum: (lambda_i - lambda_top), all negative, one per
    # tangent direction
    expected = (values[:-1] - values[-1]).sort().values
    assert torch.allclose(out.spectrum[0].sort().values, expected, atol=1e-12)


def test_gradient_and_hessian_match_the_closed_form():
    A, Q, _ = _quadratic_form(3, 5)
    w = torch.nn.functional.normalize(torch.randn(2, 5, dtype=torch.float64,
                                                  generator=torch.Generator().manual_seed(1)),
                                      dim=-1)
    e, g, R = gradient_and_hessian(w, lambda x: 0.5 * ((x @ A) * x).sum(-1))
    P = torch.eye(5, dtype=torch.float64) - w[:, :, None] * w[:, None, :]
    Aw = w @ A
    assert torch.allclose(e, 0.5 * (Aw * w).sum(-1))
    assert torch.allclose(g, (P @ Aw[:, :, None])[..., 0])
    radial = (Aw * w).sum(-1)[:, None, None]
    assert torch.allclose(R, P @ (A - radial * torch.eye(5, dtype=torch.float64)) @ P)


def test_a_maximum_stays_put_and_bad_arguments_are_refused():
    A, Q, _ = _quadratic_form(0, 4)
    top = Q[:, -1][None]
    out = newton_polish(top, lambda x: 0.5 * ((x @ A) * x).sum(-1))
    assert torch.allclose(out.w.abs(), top.abs(), atol=1e-14)
    with pytest.raises(ValueError, match="steps"):
        newton_polish(top, lambda x: x.sum(-1), steps=-1)
    with pytest.raises(ValueError, match="radius"):
        newton_polish(top, lambda x: x.sum(-1), radius=0.0)
