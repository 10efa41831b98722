r"""The top layer of Li2 with output scale :math:`\beta` (§C.3, §7): the model
:math:`\beta\tilde FV`, its loss, the two readings of :math:`G`, and its fixed point.

.. math:: J_\beta(F, V) = \tfrac12\|P_1^\perp(Y - \beta FV)\|_F^2 + \tfrac\eta2\|V\|_F^2
          = J_1(\beta F, V),

so the flow of :math:`V` under :math:`J_\beta` is the :math:`\beta = 1` flow
(:mod:`numerics.li2.small_time_flow`, :mod:`numerics.li2.top_layer_flow`) on features
:math:`\beta F`. The two readings of :math:`G` (verify/claims/li2/SOURCES.md §2.4):

* :func:`residual_gradient`: :math:`EV^\top`, :math:`E = P_1^\perp(Y - \beta FV)`;
* :func:`scaled_backprop_gradient`: :math:`-\partial J_\beta/\partial F` by autograd
  through the product :math:`\beta F` (no closed form used).
"""
from __future__ import annotations

import math

import torch

from numerics.li2.top_layer_flow import RidgeSolution, ridge_fixed_point
from numerics.li2.two_layer import backprop_gradient, loss


def _check_beta(beta: float) -> None:
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta: {beta!r} must be a finite number > 0")


def scaled_loss(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor, beta: float,
                eta: float = 0.0) -> torch.Tensor:
    r""":math:`J_\beta = \tfrac12\|P_1^\perp(Y - \beta FV)\|_F^2 + \tfrac\eta2\|V\|_F^2`,
    batched over leading dimensions."""
    _check_beta(beta)
    return loss(beta * F, V, Y, eta)


def scaled_backprop_gradient(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor, beta: float,
                             eta: float = 0.0) -> torch.Tensor:
    r""":math:`-\partial J_\beta/\partial F` by autograd (reading ``"-dJ/dF"``)."""
    F = F.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(scaled_loss(F, V, Y, beta, eta).sum(), F)
    return -g


def residual_gradient(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor,
                      beta: float) -> torch.Tensor:
    r""":math:`EV^\top`, :math:`E = P_1^\perp(Y - \beta FV)` (reading ``"EV^T"``): the
    :math:`\beta = 1` backpropagated gradient at features :math:`\beta F`,
    :math:`-\partial J_1/\partial(\beta F)`."""
    _check_beta(beta)
    return backprop_gradient(beta * F, V, Y)


def scaled_fixed_point(Ft: torch.Tensor, Yt: torch.Tensor, beta: float,
                       eta: float) -> RidgeSolution:
    r"""The stationary point of :math:`J_\beta` in :math:`V` for centred ``Ft``, ``Yt``:
    :math:`(\beta^2\tilde F^\top\tilde F + \eta I)V = \beta\tilde F^\top\tilde Y` (a Cholesky
    solve, :math:`\eta > 0`), with :math:`E^\star = \tilde Y - \beta\tilde FV^\star` and
    ``G`` :math:`= E^\star V^{\star\top}` (reading ``"EV^T"``)."""
    _check_beta(beta)
    return ridge_fixed_point(beta * Ft, Yt, eta)
