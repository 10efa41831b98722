r"""Riemannian gradient and Hessian on the unit sphere :math:`S^{d-1}`, written once.

For :math:`f:\mathbb R^d\to\mathbb R` restricted to the sphere, at a unit :math:`\mathbf w`
with Euclidean gradient :math:`\mathbf g = \nabla f(\mathbf w)` and Hessian
:math:`H = \nabla^2 f(\mathbf w)`, and :math:`P_T = I - \mathbf w\mathbf w^\top` the projector
onto the tangent space :math:`\mathbf w^\perp`:

* Riemannian gradient: :math:`\operatorname{grad} f = P_T\mathbf g`;
* Riemannian Hessian (as an operator on :math:`\mathbb R^d`, zero on :math:`\mathbf w`):
  :math:`\operatorname{Hess} f = P_T\,(H - (\mathbf w^\top\mathbf g)\,I)\,P_T`. The term
  :math:`-(\mathbf w^\top\mathbf g)I` is the curvature of the sphere (the Weingarten map): along
  a geodesic :math:`\gamma(t) = \mathbf w\cos t + \mathbf v\sin t`, :math:`\|\mathbf v\| = 1`,
  :math:`\mathbf v\perp\mathbf w`, :math:`\tfrac{d^2}{dt^2}f(\gamma)|_0 = \mathbf v^\top H\mathbf v
  - \mathbf w^\top\mathbf g`.

Rows of a batch: ``w`` ``(B, d)`` (unit rows), ``g`` ``(B, d)``, ``H`` ``(B, d, d)``.
"""
from __future__ import annotations

import torch


def tangent(w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    r"""Riemannian gradient on the unit sphere: :math:`(I-\mathbf w\mathbf w^\top)\mathbf g`
    (``w`` of unit norm, rows of a batch).

    >>> w = torch.tensor([[1.0, 0.0]])
    >>> tangent(w, torch.tensor([[3.0, 4.0]])).tolist()
    [[0.0, 4.0]]
    """
    return g - (g * w).sum(-1, keepdim=True) * w


def riemannian_hessian(w: torch.Tensor, g: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    r"""Riemannian Hessian on the unit sphere, :math:`P_T(H-(\mathbf w^\top\mathbf g)I)P_T` with
    :math:`P_T = I-\mathbf w\mathbf w^\top`, at each unit row of ``w`` (``(B, d)``), from the
    Euclidean gradient ``g`` (``(B, d)``) and Hessian ``H`` (``(B, d, d)``); ``(B, d, d)``.

    :math:`f(\mathbf x) = x_1` at the north pole :math:`\mathbf w = e_1` (its maximum on the
    sphere): :math:`H = 0`, :math:`\mathbf w^\top\mathbf g = 1`, so the tangent block is
    :math:`-I`.

    >>> w, g = torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    >>> riemannian_hessian(w, g, torch.zeros(1, 3, 3))[0].tolist()
    [[0.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]
    """
    eye = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
    radial = (w * g).sum(-1)[:, None, None]
    return tangent_projection(w, H - radial * eye)


def tangent_projection(w: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r""":math:`P_TAP_T` with :math:`P_T = I-\mathbf w\mathbf w^\top`: the symmetric operator
    ``A`` (``(B, d, d)``) restricted to the tangent space :math:`\mathbf w^\perp` of each unit
    row of ``w`` (``(B, d)``), e.g. a Lagrangian's Hessian, which already holds the
    curvature term.

    >>> tangent_projection(torch.tensor([[0.0, 1.0]]), torch.ones(1, 2, 2)).tolist()
    [[[1.0, 0.0], [0.0, 0.0]]]
    """
    P = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device) - w[:, :, None] * w[:, None, :]
    return P @ A @ P
