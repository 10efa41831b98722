r"""Step-halving studies: from solutions at steps :math:`h, h/2, h/4, \dots` to a measured order
of convergence and a Richardson error estimate; and a count of sign changes (chattering of a
discontinuous field under a fixed step).
"""
from __future__ import annotations

import math

import torch

from numerics.slopes import least_squares_slope


def ladder_differences(values: list[torch.Tensor]) -> torch.Tensor:
    r""":math:`\max|v_{h/2^k} - v_{h/2^{k+1}}|` for consecutive entries of a halving ladder."""
    return torch.stack([(a - b).abs().max() for a, b in zip(values, values[1:])])


def observed_order(errors: torch.Tensor) -> torch.Tensor:
    r"""Least-squares slope of :math:`\log_2 e` against :math:`-\log_2 h` over a halving ladder
    (errors at :math:`h, h/2, h/4, \ldots`): the measured order."""
    k = torch.arange(errors.numel(), dtype=torch.float64)
    return -least_squares_slope(k, torch.log2(errors.to(torch.float64)))


def richardson_error(values: list[torch.Tensor], *, order: float = 1.0) -> tuple[float, float]:
    r"""Error estimate of the finest entry of a halving ladder, and the observed order.

    With :math:`d = \max|v_{K-2} - v_{K-1}|` the finest value is off by about
    :math:`d/(2^{p} - 1)` when the error falls at order :math:`p`; the default :math:`p = 1`
    assumes only first-order convergence, which the non-Lipschitz (:math:`1 < q < 2`) and
    discontinuous (:math:`q = 1`) fields still give, however irregular the observed order.
    The observed order :math:`\log_2(d_{K-3}/d_{K-2})` needs three entries (NaN with two).
    """
    if len(values) < 2:
        raise ValueError(f"values: a ladder needs >= 2 step sizes, got {len(values)}")
    if order <= 0:
        raise ValueError(f"order: {order!r} must be > 0")
    diffs = ladder_differences(values)
    d_fine = float(diffs[-1])
    p_hat = math.nan
    if len(values) >= 3 and d_fine > 0 and float(diffs[-2]) > 0:
        p_hat = math.log2(float(diffs[-2]) / d_fine)
    return d_fine / (2.0**order - 1.0), p_hat


def sign_changes(values: torch.Tensor) -> torch.Tensor:
    """Number of sign changes along dim 0 (records), per entry: chattering of a gradient
    coordinate around 0, or zero crossings of a factor."""
    s = torch.sign(values)
    return ((s[1:] * s[:-1]) < 0).sum(0)
