r"""Escape of steepest flows on :math:`x = \prod_{i=1}^L w_i` from random perturbations of
points of the saddle set :math:`S` (Never Saddle ``ns.x.perturbed-escape``: review 1's
objection that the Cor. 4.8 start is a measure-zero set, verify/claims/ns/SOURCES.md §4.11,
§4.14).

* :func:`saddle_point`: a point of :math:`S` with the first ``k`` factors zero in every
  coordinate and the others :math:`\pm U(0.5, 1.5)` (the origin when ``k = L``).
* :func:`escape_times`: the steepest flow from ``W0`` until the loss falls to ``fraction``
  of its value at the saddle, in relative time (:class:`numerics.events.RelativeTime`)
  measured on the vanishing factors only, so that one step is a bounded relative change of
  the small factors however small the perturbation, with the crossing located inside the
  step.
"""
from __future__ import annotations

import torch

from numerics.events import RelativeTime, integrate_to_event
from numerics.ns.escape import EscapeRun
from numerics.ns.steepest_flows import ProductFlow, Regression


def saddle_point(L: int, k: int, d: int, generator: torch.Generator, *,
                 dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu") -> torch.Tensor:
    """``(L, d)`` factors: rows ``0..k-1`` zero, the others ``±U(0.5, 1.5)``."""
    if not (2 <= k <= L):
        raise ValueError(f"k: {k} vanishing factors must lie in [2, L = {L}] (a point of S)")
    magnitudes = 0.5 + torch.rand(L, d, generator=generator, dtype=torch.float64)
    signs = torch.sign(torch.randn(L, d, generator=generator, dtype=torch.float64))
    W = magnitudes * signs
    W[:k] = 0.0
    return W.to(device=device, dtype=dtype)


def escape_times(problem: Regression, W0: torch.Tensor, q: torch.Tensor, k: torch.Tensor, *,
                 fraction: float, h: float | torch.Tensor, max_steps: int) -> EscapeRun:
    r"""Time for the steepest flow of exponent ``q`` ``(B, 1)`` from ``W0`` ``(L, B, d)`` (one
    depth for the batch) to bring the loss to ``fraction`` of :math:`f(0)` (its value on
    :math:`S`, where :math:`x = 0`); ``k`` ``(B,)``: the number of leading factors that vanish
    at the saddle, which set the relative time. NaN where not reached in ``max_steps``."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction: {fraction} must lie in (0, 1)")
    L, B, _ = W0.shape
    mask = torch.ones(L, B, 1, dtype=W0.dtype, device=W0.device)
    small = (torch.arange(L, device=W0.device)[:, None] < k.to(W0.device)[None, :]).to(
        W0.dtype)[..., None]
    field = RelativeTime(ProductFlow(problem.grad, q.to(W0.device, W0.dtype), mask), small)
    level = fraction * problem.loss(torch.zeros_like(W0[0]))
    ev = integrate_to_event(field, field.initial(W0), h=h, max_steps=max_steps,
                            event=lambda Y: level - problem.loss(Y[:L].prod(0)))
    return EscapeRun(RelativeTime.time(ev.state), RelativeTime.path_length(ev.state),
                     ev.steps)
