r"""Riemannian Newton steps on the unit sphere, to certify a local maximum of a smooth energy.

Projected gradient ascent slows to a crawl along the nearly flat directions that a
non-quadratic activation leaves where :math:`x^2` has flat families of maxima (Cor. 1): its
end points can sit far from the critical point in those directions. :func:`newton_polish`
takes such end points the rest of the way, with Newton's method on the tangent space
(quadratic convergence near a non-degenerate critical point), and :func:`second_order`
says whether the point reached is a strict local maximum (every tangent Hessian eigenvalue
negative). Newton's method goes to the nearest critical point of any kind, so the second-order
test is what certifies a maximum; the energy is never assumed to have increased.

Works for any energy ``f`` that maps rows ``(B, d)`` to ``(B,)`` and is twice differentiable
by autograd (SiLU, :math:`x^2`; not ReLU, whose Hessian is 0 a.e. and undefined on kinks).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics import sphere

Energy = Callable[[torch.Tensor], torch.Tensor]


def gradient_and_hessian(w: torch.Tensor, f: Energy) -> tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor]:
    r"""Energy, Riemannian gradient :math:`P_T\nabla f` and Riemannian Hessian
    :math:`P_T(\nabla^2f-(\mathbf w^\top\nabla f)I)P_T` at unit rows ``w`` (reverse over reverse:
    one backward pass per coordinate, all rows at once; the rows do not interact)."""
    x = w.detach().requires_grad_(True)
    e = f(x)
    (g,) = torch.autograd.grad(e.sum(), x, create_graph=True)
    rows = [torch.autograd.grad(g[:, j].sum(), x, retain_graph=True)[0]
            for j in range(w.shape[-1])]
    H = torch.stack(rows, 1).detach()
    g = g.detach()
    return e.detach(), sphere.tangent(w.detach(), g), sphere.riemannian_hessian(w.detach(), g, H)


def _tangent_eigen(w: torch.Tensor, R: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenpairs of the Riemannian Hessian on the tangent space: the pair whose vector is
    (closest to) ``±w`` comes from the projection and is dropped."""
    values, vectors = torch.linalg.eigh(R)
    normal = (vectors * w[:, :, None]).sum(1).abs().argmax(-1)
    keep = torch.ones_like(values, dtype=torch.bool)
    keep[torch.arange(w.shape[0], device=w.device), normal] = False
    B, d = w.shape
    return values[keep].reshape(B, d - 1), vectors.transpose(1, 2)[keep].reshape(B, d - 1, d)


@dataclass(frozen=True)
class Polished:
    """End points ``w`` (unit rows), energies, Riemannian gradient norms after the last step,
    the tangent Hessian spectra there (ascending, ``(B, d-1)``) and the Newton steps taken."""

    w: torch.Tensor
    energy: torch.Tensor
    grad_norm: torch.Tensor
    spectrum: torch.Tensor
    steps: int


def newton_polish(w: torch.Tensor, f: Energy, steps: int = 40, radius: float = 0.05,
                  null_rtol: float | None = None, halvings: int = 12) -> Polished:
    r"""Up to ``steps`` saddle-free Newton steps (Dauphin et al. 2014) from the unit rows of
    ``w``: on the tangent space, :math:`\delta=\sum_i(\mathbf v_i^\top\mathrm{grad})
    \mathbf v_i/|\lambda_i|` over the Riemannian Hessian's eigenpairs (eigenvalues with
    :math:`|\lambda|\le` ``null_rtol`` times the largest are left out: flat directions), so
    every step is an ascent direction, and near a strict local maximum (all
    :math:`\lambda_i<0`) it is Newton's step, which converges quadratically. A step longer
    than ``radius`` is cut to it; a step that does not raise :math:`f` is halved (up to
    ``halvings`` times: a step cut by :math:`2^{-12}` that still fails is at rounding, or at a
    kink where the Hessian says nothing) and the row stays put when none raises it.
    Retraction :math:`\mathbf w\leftarrow(\mathbf w+\delta)/\|\cdot\|`. Stops early once no
    row moves (rounding reached)."""
    if steps < 0:
        raise ValueError(f"steps: {steps} must be >= 0")
    if radius <= 0:
        raise ValueError(f"radius: {radius} must be > 0")
    eps = torch.finfo(w.dtype).eps
    null_rtol = eps ** 0.5 if null_rtol is None else null_rtol
    w = w / w.norm(dim=-1, keepdim=True)
    e, g, R = gradient_and_hessian(w, f)
    taken = 0
    for _ in range(steps):
        values, vectors = _tangent_eigen(w, R)
        scale = values.abs().amax(-1, keepdim=True)
        inverse = torch.where(values.abs() > null_rtol * scale, 1 / values.abs(),
                              torch.zeros_like(values))
        coeff = (vectors @ g[:, :, None])[..., 0] * inverse
        delta = (coeff[:, :, None] * vectors).sum(1)
        length = delta.norm(dim=-1, keepdim=True)
        delta = delta * torch.clamp(radius / length.clamp(min=torch.finfo(w.dtype).tiny),
                                    max=1.0)
        moved_any = False
        factor = torch.ones_like(e)[:, None]
        pending = torch.ones_like(e, dtype=torch.bool)
        new_w = w.clone()
        for _ in range(halvings + 1):
            trial = w + factor * delta
            trial = trial / trial.norm(dim=-1, keepdim=True)
            up = f(trial).detach() > e
            accept = pending & up
            new_w = torch.where(accept[:, None], trial, new_w)
            moved_any |= bool(accept.any())
            pending &= ~up
            if not bool(pending.any()):
                break
            factor = torch.where(pending[:, None], factor / 2, factor)
        if not moved_any:
            break
        w = new_w
        e, g, R = gradient_and_hessian(w, f)
        taken += 1
    values, _ = _tangent_eigen(w, R)
    return Polished(w, e, g.norm(dim=-1), values, taken)
