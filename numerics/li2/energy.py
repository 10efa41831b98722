r"""Li2's energy (Eq. 7) in torch, its gradient, the Stage-II node update (Eq. 6), and
projected gradient ascent on the unit sphere (Thm. 1).

.. math:: \mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|_2^2 .

Shapes: ``X`` is ``n x d``, ``Yt`` the centred labels ``n x M``; a batch of weights ``w`` is
``(..., d)``, one energy per batch entry. Nothing here uses the closed form of Thm. 1.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.activations import Activation, activation
from numerics.errors import Diverged
from numerics.li2.two_layer import center
from numerics.sphere import tangent

Direction = Callable[[torch.Tensor], torch.Tensor]


def energy(w: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor, act: Activation) -> torch.Tensor:
    r""":math:`\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|^2` for each
    row of ``w`` (shape ``(..., d)``; returns ``(...)``)."""
    projections = act(w @ X.T) @ Yt  # row b: (Yt^T sigma(X w_b))^T
    return 0.5 * projections.square().sum(-1)


def energy_gradient(w: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor,
                    act: Activation) -> torch.Tensor:
    r""":math:`\nabla\mathcal E(\mathbf w)` by autograd, one row per batch entry (the entries
    do not interact, so the gradient of the summed energy separates)."""
    w = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(energy(w, X, Yt, act).sum(), w)
    return g


def stage2_node_update(W: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor,
                       act: Activation) -> torch.Tensor:
    r"""Eq. 6 for all nodes at once: :math:`\dot W=-\partial J/\partial W` with
    :math:`-\partial J/\partial F` replaced by the Stage-II value
    :math:`G_F=\tilde Y\tilde Y^\top\tilde F`, :math:`\tilde F=P_1^\perp\sigma(XW)`.

    Computed by backprop through the network :math:`F=\sigma(XW)` with ``G_F`` as the
    cotangent (``grad_outputs``); ``W`` is ``(..., d, K)`` (columns are nodes) and so is the
    result.
    """
    W = W.detach().requires_grad_(True)
    F = act(X @ W)
    G_F = (Yt @ (Yt.T @ center(F))).detach()  # a fixed cotangent, as in Stage II
    (update,) = torch.autograd.grad(F, W, grad_outputs=G_F)
    return update


def sphere_step(w: torch.Tensor, direction: torch.Tensor, lr: float) -> torch.Tensor:
    r"""One projected ascent step: :math:`\mathbf w\leftarrow(\mathbf w+\mathrm{lr}\,\xi)/
    \|\mathbf w+\mathrm{lr}\,\xi\|` with :math:`\xi` the tangent part of ``direction``."""
    moved = w + lr * tangent(w, direction)
    return moved / moved.norm(dim=-1, keepdim=True)


def activation_bounds(act: Activation, radius: float, points: int = 4097,
                      dtype: torch.dtype = torch.float64) -> tuple[float, float, float]:
    r""":math:`(\max|\sigma|,\max|\sigma'|,\max|\sigma''|)` on :math:`[-r,r]`, estimated on a
    grid of ``points`` with derivatives by autograd (ReLU's :math:`\sigma''` is 0 a.e.).

    The grid misses an interior maximum by :math:`O(h^2)` relative (:math:`h=2r/\text{points}`),
    about :math:`10^{-6}` here; callers add a margin.
    """
    if not radius > 0:
        raise ValueError(f"radius: {radius} must be > 0")
    z = torch.linspace(-radius, radius, points, dtype=dtype).requires_grad_(True)
    s = act(z)
    (ds,) = torch.autograd.grad(s.sum(), z, create_graph=True)
    d2s = torch.autograd.grad(ds.sum(), z, allow_unused=True)[0] if ds.requires_grad else None
    a2 = 0.0 if d2s is None else float(d2s.abs().max())
    return float(s.detach().abs().max()), float(ds.detach().abs().max()), a2


def sphere_smoothness_bound(X: torch.Tensor, Yt: torch.Tensor, act: Activation,
                            margin: float = 1.01) -> float:
    r"""An upper bound :math:`L` on :math:`|f''(t)|/\|\xi\|^2` along every ascent arc
    :math:`f(t)=\mathcal E\big((\mathbf w+t\xi)/\|\mathbf w+t\xi\|\big)` on the unit sphere.

    With :math:`c(t)` that arc, :math:`\|c'\|\le\|\xi\|` and :math:`\|c''\|\le1.65\|\xi\|^2`,
    so :math:`|f''|\le\|\xi\|^2(\|\nabla^2\mathcal E\|+1.65\|\nabla\mathcal E\|)`. On the
    sphere :math:`|z_i|=|\mathbf x_i^\top\mathbf w|\le r=\max_i\|\mathbf x_i\|`; with
    :math:`A_k=\max_{|z|\le r}|\sigma^{(k)}(z)|`,

    .. math:: \|\nabla^2\mathcal E\|\le\|X\|^2\|\tilde Y\|^2(A_1^2+A_2\sqrt n A_0),\quad
              \|\nabla\mathcal E\|\le\|X\|\,\|\tilde Y\|^2A_1\sqrt nA_0 .

    Then :math:`\mathrm{lr}\le1/L` gives :math:`\Delta\mathcal E\ge\tfrac{\mathrm{lr}}2\|\xi\|^2`
    for :math:`\xi` the Riemannian gradient (the descent lemma). ``margin`` covers the grid
    estimate of the :math:`A_k`. For ReLU the bound ignores the kinks (:math:`\sigma''` is a
    delta there), so it guarantees nothing across a kink.
    """
    n = X.shape[0]
    radius = float(X.norm(dim=1).max())
    a0, a1, a2 = (margin * a for a in activation_bounds(act, radius))
    x_norm = float(torch.linalg.matrix_norm(X, ord=2))
    y_sq = float(torch.linalg.matrix_norm(Yt, ord=2)) ** 2
    hessian = x_norm**2 * y_sq * (a1**2 + a2 * n**0.5 * a0)
    grad = x_norm * y_sq * a1 * n**0.5 * a0
    return hessian + 1.65 * grad


def energy_rounding_scale(w: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor,
                          act: Activation) -> torch.Tensor:
    r""":math:`\tfrac12\sum_m(\sum_i|\tilde Y_{im}\sigma(z_i)|)^2\ge\mathcal E`: the scale of the
    rounding error of :math:`\mathcal E` (each sum of products errs by at most its length
    times :math:`u` times the sum of absolute terms)."""
    return 0.5 * (act(w @ X.T).abs() @ Yt.abs()).square().sum(-1)


def gradient_rounding_scale(w: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor,
                            act: Activation) -> torch.Tensor:
    r""":math:`|X|^\top|D|\,|\tilde Y|\,|\tilde Y|^\top|\sigma(X\mathbf w)|` row by row: the
    sum of absolute terms that bounds the rounding error of any evaluation of
    :math:`\nabla\mathcal E` as chained sums of products (Higham, ch. 3)."""
    z = w @ X.T
    return (act.derivative(z).abs() * (act(z).abs() @ Yt.abs() @ Yt.abs().T)) @ X.abs()


@dataclass(frozen=True)
class AscentTrace:
    """Energies ``(steps + 1, ...)`` and squared tangent norms ``(steps, ...)`` of the steps
    taken; per batch entry, the largest rounding scale of the energy
    (:func:`energy_rounding_scale`) and the largest norm of ``direction`` met on the way."""

    energy: torch.Tensor
    tangent_sq: torch.Tensor
    rounding_scale: torch.Tensor
    direction_norm: torch.Tensor


def ascend(w0: torch.Tensor, X: torch.Tensor, Yt: torch.Tensor, act: Activation,
           direction: Direction, lr: float, steps: int) -> AscentTrace:
    """``steps`` projected ascent steps from ``w0`` (rows normalised first) along
    ``direction(w)``; raises :class:`Diverged` on a non-finite iterate or energy."""
    if not lr > 0:
        raise ValueError(f"lr: {lr} must be > 0")
    if steps < 1:
        raise ValueError(f"steps: {steps} must be >= 1")
    w = w0 / w0.norm(dim=-1, keepdim=True)
    energies, tangents = [energy(w, X, Yt, act)], []
    scale = energy_rounding_scale(w, X, Yt, act)
    norm = torch.zeros_like(scale)
    for step in range(steps):
        g = direction(w)
        tangents.append(tangent(w, g).square().sum(-1))
        norm = torch.maximum(norm, g.norm(dim=-1))
        w = sphere_step(w, g, lr)
        energies.append(energy(w, X, Yt, act))
        scale = torch.maximum(scale, energy_rounding_scale(w, X, Yt, act))
        if not (torch.isfinite(w).all() and torch.isfinite(energies[-1]).all()):
            raise Diverged(f"projected ascent produced a non-finite value at step {step + 1}")
    return AscentTrace(torch.stack(energies), torch.stack(tangents), scale, norm)


def joint_energy(W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathcal E_{\rm joint}(W) = \sum_j \tfrac12\|\tilde Y^\top \sigma(X\mathbf w_j)\|^2
    = \tfrac12\|\tilde Y^\top (XW)^{\circ 2}\|_F^2` with :math:`\tilde Y = P_1^\perp Y`
    (Li2 Eq. 7 summed over nodes, :math:`\sigma(x) = x^2`); batched over leading axes."""
    return energy(W.mT, X, center(Y), activation("x2")).sum(-1)


def joint_energy_gradient(W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    r""":math:`\nabla_W \mathcal E_{\rm joint}` by reverse-mode autograd (no closed form)."""
    W = W.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(joint_energy(W, X, Y).sum(), W)
    return g


def directional_derivative(W: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                           direction: torch.Tensor) -> torch.Tensor:
    r""":math:`\frac{d}{d\epsilon}\mathcal E_{\rm joint}(W + \epsilon\,\Delta)\big|_{\epsilon=0}`
    by forward-mode autograd (``torch.func.jvp``), independent of the reverse-mode gradient."""
    _, tangent = torch.func.jvp(lambda w: joint_energy(w, X, Y), (W,), (direction,))
    return tangent
