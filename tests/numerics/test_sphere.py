"""numerics.sphere: Riemannian gradient and Hessian on the unit sphere."""
from __future__ import annotations

import math

import torch

from numerics.sphere import riemannian_hessian, tangent, tangent_projection


def _quadratic(B: int = 3, d: int = 5):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(d, d, generator=g, dtype=torch.float64)
    A = A + A.T
    b = torch.randn(d, generator=g, dtype=torch.float64)
    w = torch.randn(B, d, generator=g, dtype=torch.float64)
    return A, b, w / w.norm(dim=-1, keepdim=True)


def test_riemannian_hessian_is_the_second_derivative_along_geodesics():
    A, b, w = _quadratic()
    grad, H = w @ A + b, A.expand(w.shape[0], -1, -1)   # f(x) = x^T A x / 2 + b^T x
    Hr = riemannian_hessian(w, grad, H)
    v = tangent(w, torch.randn(w.shape, generator=torch.Generator().manual_seed(1),
                               dtype=torch.float64))
    v = v / v.norm(dim=-1, keepdim=True)
    t = 1e-4

    def f(x):
        return 0.5 * ((x @ A) * x).sum(-1) + x @ b

    second = (f(w * math.cos(t) + v * math.sin(t)) - 2 * f(w)
              + f(w * math.cos(-t) + v * math.sin(-t))) / t**2
    assert torch.allclose(((Hr @ v[..., None])[..., 0] * v).sum(-1), second, atol=1e-6)
    assert torch.allclose(Hr @ w[..., None], torch.zeros_like(w[..., None]), atol=1e-12)
    assert torch.allclose(Hr, Hr.transpose(-1, -2), atol=1e-12)


def test_tangent_is_orthogonal_to_w_and_the_projection_is_the_same_bits():
    A, b, w = _quadratic()
    g = w @ A + b
    assert torch.allclose((tangent(w, g) * w).sum(-1), torch.zeros(w.shape[0],
                          dtype=torch.float64), atol=1e-12)
    eye = torch.eye(w.shape[-1], dtype=w.dtype)
    P = eye - w[:, :, None] * w[:, None, :]
    H = A.expand(w.shape[0], -1, -1)
    radial = (w * g).sum(-1)[:, None, None]
    # the formula that landscape, memorisation and top_down each wrote out before
    assert torch.equal(riemannian_hessian(w, g, H), P @ (H - radial * eye) @ P)
    assert torch.equal(tangent_projection(w, H), P @ H @ P)
