r"""Batched RK4 integration up to an event, with the event located inside the step, and the
relative-time reparameterisation that lets one fixed step resolve a slow start near a saddle
and a fast exit alike.

* :func:`integrate_to_event`: fixed-step RK4 on an autonomous field until ``event(y) >= 0``
  for every entry of the batch (dim 1 of the state); the crossing inside the last step is
  found by the Illinois variant of regula falsi on the RK4 one-step map, so the located time
  carries the method's own order and no interpolation error.
* :class:`RelativeTime`: for a field :math:`\dot w = F(w)`, the augmented field in a new
  variable :math:`\sigma` with :math:`dt/d\sigma = \|w\|/\|F(w)\|` (per entry), carrying the
  time :math:`t` and the path length :math:`\ell = \int\|\dot w\|dt` as two extra rows. One unit
  of :math:`\sigma` changes :math:`\log\|w\|` by at most 1, so a step :math:`h` in
  :math:`\sigma` is a relative change :math:`\le h` whatever the speed.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged
from numerics.integrators import Field, rk4_step

EventFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Event:
    """Where each entry's event happened: the state there ``(K, B, m)``, the independent
    variable ``at`` ``(B,)`` and the number of full steps taken."""

    state: torch.Tensor
    at: torch.Tensor
    steps: int


def _step(field: Field, y: torch.Tensor, h: torch.Tensor | float) -> torch.Tensor:
    """One RK4 step; ``h`` may be a per-entry ``(B,)`` tensor (an autonomous field)."""
    if isinstance(h, torch.Tensor):
        h = h[None, :, None]
    return rk4_step(field, 0.0, y, h)


def _locate(field: Field, y: torch.Tensor, event: EventFn, h: float | torch.Tensor,
            f_lo: torch.Tensor, f_hi: torch.Tensor, active: torch.Tensor, *,
            max_iter: int = 100) -> torch.Tensor:
    r"""The :math:`\delta \in [0, h]` with ``event(step(y, delta)) = 0`` for the ``active``
    entries (those with ``f_lo < 0 <= f_hi``), by Illinois regula falsi: a secant on the
    bracket whose retained end has its value halved when it is kept twice in a row, which
    restores superlinear convergence. Stops when every active iterate moves by at most
    ``4 eps h``."""
    lo = torch.zeros_like(f_lo)
    hi = torch.zeros_like(f_hi) + h  # h: one number or one per entry (B,)
    side = torch.zeros_like(f_lo)
    c = hi.clone()
    tol = 4 * torch.finfo(y.dtype).eps * h
    for _ in range(max_iter):
        denominator = f_hi - f_lo
        new = torch.where(denominator > 0, (lo * f_hi - hi * f_lo) / denominator, hi)
        new = torch.minimum(torch.maximum(new, lo), hi)
        moved = torch.where(active, (new - c).abs(), torch.zeros_like(c))
        c = new
        f_c = event(_step(field, y, c))
        upper = f_c >= 0
        f_lo = torch.where(upper & (side > 0), f_lo / 2, f_lo)
        f_hi = torch.where(~upper & (side < 0), f_hi / 2, f_hi)
        hi, f_hi = torch.where(upper, c, hi), torch.where(upper, f_c, f_hi)
        lo, f_lo = torch.where(upper, lo, c), torch.where(upper, f_lo, f_c)
        side = torch.where(upper, torch.ones_like(side), -torch.ones_like(side))
        if bool((moved <= tol).all()):
            return c
    raise Diverged(f"event location did not converge in {max_iter} iterations")


def integrate_to_event(field: Field, y0: torch.Tensor, *, h: float | torch.Tensor,
                       event: EventFn, max_steps: int) -> Event:
    r"""RK4 with step ``h`` on the autonomous ``field`` (called as ``field(0.0, y)``) from
    ``y0`` ``(K, B, m)`` until ``event(y) >= 0`` (``event`` maps a state to ``(B,)``) for
    every entry; ``h`` may be one step per entry ``(B,)`` (a step ladder in one batch: its
    levels cost the finest level's steps, not their sum). An entry whose event has happened
    is frozen (its state no longer changes, so nothing after its event can overflow).
    Assumes at most one crossing per step.

    Raises :class:`Diverged` on a non-finite state, and ``ValueError`` if an event holds at
    the start or ``h``/``max_steps`` are not positive; an entry without an event within
    ``max_steps`` gets ``at = NaN``.
    """
    if not bool(((torch.as_tensor(h) > 0) & torch.isfinite(torch.as_tensor(h))).all()):
        raise ValueError(f"h: {h!r} must be finite and > 0")
    if not (isinstance(max_steps, int) and max_steps >= 1):
        raise ValueError(f"max_steps: {max_steps!r} must be an integer >= 1")
    value = event(y0)
    if bool((value >= 0).any()):
        raise ValueError("event: already reached at the start for some entries")
    done = torch.zeros_like(value, dtype=torch.bool)
    at = torch.full_like(value, math.nan)
    final = y0.clone()
    y, steps = y0, 0
    for steps in range(1, max_steps + 1):
        y_new = _step(field, y, h)
        if not bool(torch.isfinite(y_new).all()):
            raise Diverged(f"rk4: non-finite state after {steps} steps (h = {h})")
        new_value = event(y_new)
        hit = ~done & (new_value >= 0)
        if bool(hit.any()):
            delta = _locate(field, y, event, h, torch.where(hit, value, -torch.ones_like(value)),
                            torch.where(hit, new_value, torch.ones_like(value)), hit)
            located = _step(field, y, torch.where(hit, delta, torch.zeros_like(delta)))
            final = torch.where(hit[None, :, None], located, final)
            at = torch.where(hit, (steps - 1) * h + delta, at)
            done = done | hit
            if bool(done.all()):
                break
        y = torch.where(done[None, :, None], y, y_new)
        value = torch.where(done, value, new_value)
    return Event(state=final, at=at, steps=steps)


class RelativeTime:
    r"""The field :math:`F` (``(L, B, m)`` states, ``(t, w) -> dw/dt``, autonomous) in
    relative time: on :math:`Y = (w, t, \ell)` stacked as ``(L + 2, B, m)`` (the rows
    :math:`t` and :math:`\ell` repeat one number per entry along ``m``),

    .. math:: \frac{dY}{d\sigma} = \rho\,(F(w), 1, \|F(w)\|),\qquad
              \rho = \frac{\|w\odot\text{mask}\|}{\|F(w)\|},

    norms over dims 0 and 2 (``mask`` ``(L, B, 1)`` marks the active rows of ``w``)."""

    def __init__(self, field: Field, mask: torch.Tensor) -> None:
        self.field, self.mask = field, mask

    def initial(self, w0: torch.Tensor) -> torch.Tensor:
        """:math:`Y_0 = (w_0, 0, 0)`."""
        return torch.cat([w0, torch.zeros_like(w0[:2])])

    def __call__(self, t: float, Y: torch.Tensor) -> torch.Tensor:
        w = Y[:-2]
        velocity = self.field(0.0, w)
        speed = velocity.pow(2).sum((0, 2)).sqrt()
        rho = ((w * self.mask).pow(2).sum((0, 2)).sqrt() / speed)[None, :, None]
        ones = torch.ones_like(Y[:1])
        return torch.cat([velocity * rho, ones * rho, ones * (speed[None, :, None] * rho)])

    @staticmethod
    def time(Y: torch.Tensor) -> torch.Tensor:
        """:math:`t` per entry ``(B,)``."""
        return Y[-2, :, 0]

    @staticmethod
    def path_length(Y: torch.Tensor) -> torch.Tensor:
        r""":math:`\ell = \int_0^t\|\dot w\|dt` per entry ``(B,)``."""
        return Y[-1, :, 0]
