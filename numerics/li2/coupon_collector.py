r"""Coupon collecting in torch (Li2 Thm. 8, Eq. 41, Lemma 10): the collection-time integral
by quadrature, and sequential node-by-node simulation.

Eq. 41's integral :math:`T_0 = \int_0^\infty(1-\prod_l(1-e^{-p_lt}))\,dt` is evaluated after
the substitution :math:`t = (e^x - 1)/p_{\max}`, which spreads the two scales of the integrand
(the rise near :math:`1/p_{\max}`, the tail in :math:`1/p_{\min}`) evenly over :math:`x`, with
composite Gauss-Legendre on :math:`[0, x_{\max}]`; :math:`x_{\max}` puts the cut tail,
:math:`\le\sum_le^{-p_lt_{\max}}/p_l`, below :math:`e^{-40}T_0`. The error estimate is the
change when the panels are halved, plus the tail bound.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

#: Gauss-Legendre nodes per panel.
NODES = 8

#: p_min t_max: the cut tail is <= L e^(-TAIL) / p_min <= L e^(-TAIL) T_0.
TAIL = 40.0


@dataclass(frozen=True)
class Quadrature:
    """``value`` and ``error`` (estimate) of :math:`T_0` for each row of ``p``."""

    value: torch.Tensor
    error: torch.Tensor


def _check_probabilities(p: torch.Tensor) -> None:
    if p.dim() < 1 or p.shape[-1] < 1:
        raise ValueError(f"p: needs shape (..., L) with L >= 1, got {tuple(p.shape)}")
    if not bool((p > 0).all()):
        raise ValueError("p: every probability must be > 0")
    total = p.sum(-1)
    if not bool(((total - 1).abs() <= 64 * p.shape[-1] * torch.finfo(p.dtype).eps).all()):
        raise ValueError(f"p: rows must sum to 1, got sums {total}")


def _gauss_legendre(panels: int, upper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes and weights of ``panels`` equal panels on ``[0, upper]`` (per batch entry)."""
    x, w = np.polynomial.legendre.leggauss(NODES)
    x = torch.as_tensor(x, dtype=upper.dtype, device=upper.device)
    w = torch.as_tensor(w, dtype=upper.dtype, device=upper.device)
    width = upper[..., None] / panels  # (..., 1)
    left = torch.arange(panels, dtype=upper.dtype, device=upper.device) * width  # (..., P)
    nodes = left[..., :, None] + width[..., None] * (x + 1) / 2  # (..., P, NODES)
    weights = (width[..., None] / 2 * w).expand_as(nodes)
    return nodes.flatten(-2), weights.flatten(-2)


Integrand = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def uncollected(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    r""":math:`1-\prod_l(1-e^{-p_lt})` for ``p`` ``(..., L)`` at times ``t`` ``(..., N)``,
    as :math:`-\mathrm{expm1}(\sum_l\mathrm{log1p}(-e^{-p_lt}))`: no cancellation near
    :math:`t = 0` or :math:`\infty`."""
    return -torch.expm1(torch.log1p(-torch.exp(-p[..., :, None] * t[..., None, :])).sum(-2))


def _integral(p: torch.Tensor, panels: int, integrand: Integrand) -> torch.Tensor:
    p_max = p.amax(-1)
    p_min = p.amin(-1)
    t_max = (TAIL + math.log(p.shape[-1])) / p_min
    x, w = _gauss_legendre(panels, torch.log1p(t_max * p_max))
    t = torch.expm1(x) / p_max[..., None]  # (..., N)
    jacobian = torch.exp(x) / p_max[..., None]
    return (w * integrand(p, t) * jacobian).sum(-1)


def collection_time(p: torch.Tensor, *, panels: int = 256,
                    integrand: Integrand = uncollected) -> Quadrature:
    r""":math:`T_0` of Eq. 41 for each row of ``p`` (``(..., L)``, rows summing to 1);
    ``integrand(p, t)`` (default :func:`uncollected`, the definition) may be replaced by
    another form of it, e.g. a paper's as printed."""
    _check_probabilities(p)
    if not (isinstance(panels, int) and panels >= 2):
        raise ValueError(f"panels: {panels!r} must be an integer >= 2")
    coarse = _integral(p, panels // 2, integrand)
    fine = _integral(p, panels, integrand)
    tail = (torch.exp(-p * ((TAIL + math.log(p.shape[-1])) / p.amin(-1, keepdim=True)))
            / p).sum(-1)
    return Quadrature(fine, (fine - coarse).abs() + tail)


Winner = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Collection:
    """Per trial: ``nodes`` until every mode was found, and ``found`` ``(R, L)`` how many nodes
    landed on each mode."""

    nodes: torch.Tensor
    found: torch.Tensor


def collect(winner: Winner, L: int, trials: int, *, max_nodes: int,
            device: torch.device | str = "cpu") -> Collection:
    """Add nodes one at a time to each of ``trials`` independent runs until all ``L`` modes
    are found. ``winner(found)`` gets the ``(R_active, L)`` counts of the active runs and
    returns the mode ``(R_active,)`` their next node lands on.

    Raises ``RuntimeError`` if some run has not found every mode after ``max_nodes``.
    """
    for label, value in (("L", L), ("trials", trials), ("max_nodes", max_nodes)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{label}: {value!r} must be an integer >= 1")
    found = torch.zeros(trials, L, dtype=torch.long, device=device)
    nodes = torch.zeros(trials, dtype=torch.long, device=device)
    active = torch.arange(trials, device=device)
    for _ in range(max_nodes):
        if active.numel() == 0:
            break
        landed = winner(found[active])
        found[active, landed] += 1
        nodes[active] += 1
        active = active[(found[active] == 0).any(-1)]
    if active.numel():
        raise RuntimeError(f"max_nodes: {active.numel()} of {trials} runs have not found all "
                           f"{L} modes after {max_nodes} nodes")
    return Collection(nodes, found)
