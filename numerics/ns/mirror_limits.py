r"""Limits of steepest flows on :math:`x = w_1\odot w_2` for underdetermined regression, and
how far each is from the mirror-flow implicit bias :math:`\arg\min_{Ax=y}D_R(x, x_0)`
(Never Saddle ``ns.x.mirror-bias-p``; the later Theorem 3.4's "no longer holds for
:math:`p \ne 2`", verify/claims/ns/SOURCES.md §4.3).

* :class:`TimeChanged`: the parameter flow in the time :math:`\tau` with
  :math:`dt/d\tau = \|\nabla f(x)\|_\infty^{2-q}` (per entry): the same path, but for
  :math:`q < 2` no arrival at the solution set in finite time (there the field is not
  Lipschitz and a fixed step chatters), so :func:`verify.flow_limits` can run it to rest;
  at :math:`q = 2` it is the flow itself.
* :func:`two_factor_mirror_gradient`: :math:`\nabla R(x) = \int_0^x dz/\sqrt{\lambda^2 +
  4|z|^q} = (x/\lambda)\,{}_2F_1(\tfrac12, \tfrac1q; 1 + \tfrac1q; -4|x|^q/\lambda^2)`, the
  mirror map of the product flow with balance offsets :math:`(0, \lambda)`
  (:func:`theory.ns.reparam_balance.derive_metric_two_factors`), by scipy's ``hyp2f1``.
* :func:`kkt_residual`: the stationarity residual of :math:`\min_{Ax=y}D_R(x, x_0)`,
  :math:`\nabla R(x) - \nabla R(x_0) \in \operatorname{range}A^\top`, as the part of the
  mirror displacement in :math:`\ker A`, relative to the displacement.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import hyp2f1

from numerics.ns.steepest_flows import GradFn, ProductFlow


@dataclass(frozen=True)
class TimeChanged:
    r"""The product flow of exponent ``q`` ``(B, 1)`` (mask ``(L_max, B, 1)``) times
    :math:`\|\nabla f(x)\|_\infty^{2-q}` per entry: :math:`dw/d\tau` on ``(L_max, kB, d)``
    factors, the ``B`` entries repeated ``k`` times along dim 1 (:func:`verify.flow_limits`
    steps each run and its ``dt/2`` partner in one batch of ``2B``)."""

    grad: GradFn
    q: torch.Tensor
    mask: torch.Tensor

    def __call__(self, t: float, W: torch.Tensor) -> torch.Tensor:
        k = W.shape[1] // self.q.shape[0]
        q = self.q.repeat(k, 1)
        flow = ProductFlow(self.grad, q, self.mask.repeat(1, k, 1))
        g = self.grad(W.prod(0)).abs().amax(-1, keepdim=True)
        return flow(t, W) * g ** (2 - q)


def two_factor_mirror_gradient(x: torch.Tensor, lam: torch.Tensor | float,
                               q: torch.Tensor | float) -> torch.Tensor:
    r""":math:`\nabla R(x)` of the two-factor product with offsets :math:`(0, \lambda)`,
    :math:`\lambda > 0`, elementwise (``lam`` and ``q`` broadcast against ``x``)."""
    lam_t = torch.as_tensor(lam, dtype=x.dtype, device=x.device).expand_as(x)
    q_t = torch.as_tensor(q, dtype=x.dtype, device=x.device).expand_as(x)
    if bool((lam_t <= 0).any()):
        raise ValueError("lam: the balance offset must be > 0 (R is not defined at 0 for 0)")
    xs, ls, qs = (v.detach().cpu().double().numpy() for v in (x, lam_t, q_t))
    values = xs / ls * hyp2f1(0.5, 1 / qs, 1 + 1 / qs, -4 * abs(xs) ** qs / ls**2)
    # q = 2 has the closed form arcsinh(2x/lam)/2; scipy's hyp2f1 loses digits there (a = b,
    # 1e-10 relative at z = -4e8), so those entries take the closed form.
    values = np.where(qs == 2, np.arcsinh(2 * xs / ls) / 2, values)
    return torch.as_tensor(values, dtype=x.dtype, device=x.device)


def two_factor_mirror_hessian(x: torch.Tensor, lam: torch.Tensor | float,
                              q: torch.Tensor | float) -> torch.Tensor:
    r""":math:`\nabla^2R(x) = (\lambda^2 + 4|x|^q)^{-1/2}`."""
    return (torch.as_tensor(lam, dtype=x.dtype) ** 2 + 4 * x.abs() ** q) ** -0.5


def kkt_residual(A: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
    r""":math:`\|P_{\ker A}\,v\|_\infty/\|v\|_\infty` per row of ``displacement`` :math:`v =
    \nabla R(x) - \nabla R(x_0)` ``(B, d)``: 0 iff :math:`v \in \operatorname{range}A^\top`,
    i.e. iff some :math:`\nu` makes :math:`v + A^\top\nu = 0` (with :math:`Ax = y`, the KKT
    conditions of :math:`\min_{Ax=y}D_R(x, x_0)`, a convex problem: then :math:`x` is the
    minimiser). The projection is through an orthonormal basis of :math:`\ker A` from the
    full SVD."""
    null = torch.linalg.svd(A, full_matrices=True).Vh[A.shape[0]:]
    return (displacement @ null.T @ null).abs().amax(-1) / displacement.abs().amax(-1)
