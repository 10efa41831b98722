r"""Points of the balance manifold of :math:`x = \prod_{i=1}^L w_i` with a prescribed product,
and the inverse metric there measured from the parameter flow's velocity (Never Saddle
Cor. 4.8's route independent of any formula for the metric).

The manifold (conserved offsets :math:`c_i \ge 0`, ``numerics.ns.steepest_flows``):
:math:`|w_i|^q = u + c_i`, so :math:`|x|^q = P(u) = \prod_i(u + c_i)`. :func:`factors_on_manifold`
solves :math:`P(u) = |x|^q` by bisection (not Newton, which
:class:`numerics.ns.steepest_flows.ProductInverseMetric` uses) and returns the factors;
:func:`measured_inverse_metric` is :math:`-\dot x` of the parameter flow at unit gradient,
:math:`\dot x = -M(x)\psi_q(1) = -M(x)`, by forward-mode autograd of the product map.
"""
from __future__ import annotations

import torch

from numerics.bisection import bisect
from numerics.errors import Diverged
from numerics.ns.steepest_flows import ProductFlow, check_exponent, product_velocity

#: Bisection halves the bracket until it spans adjacent floats; 2100 halvings reach the
#: smallest subnormal from any finite float64 bracket.
MAX_HALVINGS = 2100


def factors_on_manifold(x: torch.Tensor, offsets: torch.Tensor, q: torch.Tensor,
                        mask: torch.Tensor) -> torch.Tensor:
    r"""Factors ``(L_max, B, N)`` with :math:`|w_i|^q = u + c_i` and :math:`\prod_i w_i = x`.

    ``x`` ``(B, N)``; ``offsets`` :math:`c_i \ge 0` ``(L_max, B, 1)`` (0 where masked; factor 0
    carries the sign of x, so it should have the zero offset); ``q`` ``(B, 1)``; ``mask``
    ``(L_max, B, 1)``. :math:`u \in [0, X^{1/L}]` with :math:`X = |x|^q`, since
    :math:`P(u) \ge u^L` brackets the root; :math:`P` is increasing on :math:`u \ge 0`.
    """
    check_exponent(q)
    if bool((offsets < 0).any()):
        raise ValueError("offsets: balance offsets must be >= 0")
    X = x.abs() ** q
    depth = mask.sum(0)

    def P(u: torch.Tensor) -> torch.Tensor:
        return torch.where(mask > 0, u[None] + offsets, torch.ones_like(offsets)).prod(0)

    lo, hi, _, adjacent = bisect(lambda mid: P(mid) < X, torch.zeros_like(X), X ** (1 / depth),
                                 iterations=MAX_HALVINGS, until_adjacent=True)
    if not adjacent:
        raise Diverged("factors_on_manifold: bisection did not reach adjacent floats")
    u = torch.where((P(lo) - X).abs() <= (P(hi) - X).abs(), lo, hi)
    magnitudes = (u[None] + offsets) ** (1 / q)
    signs = torch.ones_like(magnitudes)
    signs[0] = torch.where(x < 0, -1.0, 1.0).to(x.dtype)
    return torch.where(mask > 0, signs * magnitudes, torch.ones_like(magnitudes))


def measured_inverse_metric(W: torch.Tensor, q: torch.Tensor, mask: torch.Tensor
                            ) -> torch.Tensor:
    r""":math:`M = -\dot x` of the parameter flow at unit gradient (:math:`\psi_q(1) = 1`) at the
    factors ``W`` ``(L_max, B, N)``, by forward-mode autograd of :math:`\prod_iw_i`."""
    flow = ProductFlow(lambda x: torch.ones_like(x), q, mask)
    return -product_velocity(W, flow(0.0, W))
