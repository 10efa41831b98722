r"""Stage I of Li2 at small times, batched: many problems, initial scales and times at once.

Each batch entry ``b`` has its own features :math:`F_b` (uncentred, n x K), one-hot labels
:math:`Y_b`, start :math:`V_b(0)` and time :math:`t_b`; the top layer follows
:math:`\dot V = -\partial J/\partial V` (Eq. 1's loss, autograd, sample-centred, weight decay
:math:`\eta`) for ``steps`` classical RK4 steps of size :math:`t_b/\text{steps}`, and
:math:`G_F(t_b) = -\partial J/\partial F` is read off by autograd
(:func:`numerics.li2.two_layer.backprop_gradient`). :func:`error_bound` bounds how far the computed
:math:`G_F` can be from the exact flow's (RK4 truncation plus roundoff), the floor below which
a measured remainder means nothing.
"""
from __future__ import annotations

import math

import torch

from numerics.errors import Diverged
from numerics.li2.top_layer_flow import rk4_step
from numerics.li2.two_layer import backprop_gradient, center

#: The RK4 truncation bound of :func:`error_bound` needs every mode's z = dt * lambda <= 1.
MAX_STEP_RATE = 1.0


def hessian_norms(F: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`\lambda_{\max}(\tilde F^\top\tilde F + \eta I) = \|\tilde F\|_2^2 + \eta` per
    batch entry: the fastest rate of the flow."""
    return torch.linalg.matrix_norm(center(F), ord=2) ** 2 + eta


def flow_to_times(F: torch.Tensor, Y: torch.Tensor, V0: torch.Tensor, eta: float,
                  times: torch.Tensor, *, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(G_F(t_b), V(t_b))`` for every batch entry: ``steps`` RK4 steps of size
    :math:`t_b/\text{steps}` from ``V0`` ``(B, K, M)``; ``F`` ``(B, n, K)``, ``Y`` ``(B, n, M)``,
    ``times`` ``(B,)``, all :math:`\ge 0`. Raises ``ValueError`` when a step exceeds
    ``MAX_STEP_RATE / lambda_max`` and :class:`Diverged` on NaN/Inf."""
    if not (math.isfinite(eta) and eta >= 0):
        raise ValueError(f"eta: {eta!r} must be a finite number >= 0")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps: {steps!r} must be an integer >= 1")
    B = V0.shape[0]
    if F.dim() != 3 or Y.dim() != 3 or V0.dim() != 3 or F.shape[0] != B or Y.shape[0] != B \
            or times.shape != (B,) or V0.shape[1:] != (F.shape[2], Y.shape[2]) \
            or Y.shape[1] != F.shape[1]:
        raise ValueError(f"shapes: F {tuple(F.shape)}, Y {tuple(Y.shape)}, V0 {tuple(V0.shape)}, "
                         f"times {tuple(times.shape)} must be (B,n,K), (B,n,M), (B,K,M), (B,)")
    if not bool((times >= 0).all()):
        raise ValueError("times: must be >= 0")
    dt = (times / steps).to(dtype=V0.dtype, device=V0.device)
    rate = float((dt * hessian_norms(F, eta)).max())
    if rate > MAX_STEP_RATE:
        raise ValueError(f"steps: dt * lambda_max = {rate:.3g} > {MAX_STEP_RATE}; take more "
                         f"steps or smaller times")
    V, h = V0, dt.view(B, 1, 1)
    for _ in range(steps):
        V = rk4_step(F, V, Y, eta, h)
    G = backprop_gradient(F, V, Y, eta)
    if not (torch.isfinite(G).all() and torch.isfinite(V).all()):
        raise Diverged("small-time flow: non-finite V or G_F")
    return G, V.detach()


def error_bound(F: torch.Tensor, Y: torch.Tensor, V0: torch.Tensor, V: torch.Tensor,
                eta: float, times: torch.Tensor, *, steps: int) -> torch.Tensor:
    r"""A bound on :math:`\|G_F^{\rm computed}(t_b) - G_F(t_b)\|_F` per batch entry.

    RK4 on :math:`\dot D = -AD`, :math:`D = V - V^\star`, multiplies each mode by
    :math:`R(z)^s` instead of :math:`e^{-sz}` (:math:`z = \lambda t/s \le 1`); both lie in
    :math:`[0, 1]` and :math:`|R(z) - e^{-z}| \le z^5/120` (R is the quartic Taylor polynomial
    of :math:`e^{-z}`), so :math:`\|\delta V\|_F \le s\,z_{\max}^5/120\,\|D_0\|_F`, with
    :math:`V^\star = A^+\tilde F^\top\tilde Y`. Roundoff adds :math:`8 s (n + K) u` times the
    larger of :math:`\|V_0\|_F, \|V\|_F` (s steps, each with length-n and length-K sums).
    :math:`G = EV^\top`, :math:`E = \tilde Y - \tilde FV`, so
    :math:`\|\delta G\|_F \le \|\delta V\|_F(\|\tilde F\|_2\|V\|_2 + \|E\|_2)
    + \|\tilde F\|_2\|\delta V\|_F^2`, plus :math:`(n + K + M)u\|E\|_F\|V\|_F` for the
    products that form :math:`G` itself.
    """
    n, K = F.shape[-2:]
    M = Y.shape[-1]
    u = torch.finfo(F.dtype).eps
    Ft, Yt = center(F), center(Y)
    A = Ft.transpose(-1, -2) @ Ft + eta * torch.eye(K, dtype=F.dtype, device=F.device)
    V_star = torch.linalg.pinv(A, hermitian=True) @ (Ft.transpose(-1, -2) @ Yt)
    z = hessian_norms(F, eta) * times.to(F.dtype) / steps
    D0 = torch.linalg.matrix_norm(V0 - V_star)
    size = torch.maximum(torch.linalg.matrix_norm(V0), torch.linalg.matrix_norm(V))
    dV = steps * z**5 / 120 * D0 + 8 * steps * (n + K) * u * size
    E = Yt - Ft @ V
    F2 = torch.linalg.matrix_norm(Ft, ord=2)
    return (dV * (F2 * torch.linalg.matrix_norm(V, ord=2) + torch.linalg.matrix_norm(E, ord=2))
            + F2 * dV**2
            + (n + K + M) * u * torch.linalg.matrix_norm(E) * torch.linalg.matrix_norm(V))
