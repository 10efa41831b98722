r"""Flows that may blow up in finite time, integrated through the blow-up by a time change.

A fixed-step scheme in the flow's own time :math:`t` cannot approach a blow-up time
:math:`T^\star` (the solution grows without bound while the step stays fixed). With a new time
:math:`\tau`,

.. math:: \frac{dW}{d\tau} = s(W)\,F(t, W), \qquad \frac{dt}{d\tau} = s(W), \qquad
          s(W) = \frac{\|W\|}{\|F(t, W)\|},

the orbit is the same (only its parametrisation changes), :math:`\|W\|` grows at most like
:math:`e^\tau`, and the clock :math:`t(\tau)` converges to :math:`T^\star` as
:math:`\tau \to \infty` when the flow blows up, or grows without bound when it does not. The
norms run over the factor axis (dim 0) only, so every coordinate of every batch entry keeps
its own clock: this is exact for separable objectives, which is what the blow-up studies here
use (:class:`LinearObjective`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged
from numerics.integrators import integrate

Field = Callable[[float, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class LinearObjective:
    r""":math:`f(x) = -\sum_k G_k x_k`: a gradient of fixed sign, :math:`\nabla f = -G`, that
    pushes every coordinate with :math:`G_k > 0` upward without bound (``G`` ``(B, d)``)."""

    G: torch.Tensor

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        return -(self.G * x).sum(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return (-self.G).expand_as(x)


@dataclass(frozen=True)
class ClockedFlow:
    r"""The time-changed field on ``Y = cat(W, t[None])`` of shape ``(L_max + 1, B, d)``:
    ``W`` the factors of the parameter ``field`` (``(L_max, B, d)``), ``t`` the flow's own
    time per coordinate. ``mask`` ``(L_max, B, 1)`` selects the active factors for the norms.
    Raises :class:`Diverged` at a rest point (:math:`F = 0`: no clock can be defined there)."""

    field: Field
    mask: torch.Tensor

    def speed_ratio(self, W: torch.Tensor, F: torch.Tensor) -> torch.Tensor:
        r""":math:`s = \|W\| / \|F\|` over the active factors, ``(B, d)``."""
        norm_W = (W * self.mask).square().sum(0).sqrt()
        norm_F = (F * self.mask).square().sum(0).sqrt()
        if bool((norm_F == 0).any()):
            raise Diverged("ClockedFlow: the field vanishes (a rest point): no time change")
        return norm_W / norm_F

    def __call__(self, tau: float, Y: torch.Tensor) -> torch.Tensor:
        W, t = Y[:-1], Y[-1]
        # The parameter field is autonomous here; its time argument is the batch's mean
        # clock only to keep the signature (ProductFlow ignores it without a decay schedule).
        F = self.field(float(t.mean()), W)
        s = self.speed_ratio(W, F)
        return torch.cat([F * s[None], s[None]])


def clock_increment_ratio(times: torch.Tensor, span: int) -> torch.Tensor:
    r"""How the clock's increments over ``span`` records change at the end of a run:
    :math:`(t_N - t_{N-k}) / (t_{N-k} - t_{N-2k})` per entry (``times`` ``(R, ...)``,
    :math:`k` = ``span``). Equal :math:`\tau`-spans: a clock that converges (blow-up) has
    geometrically shrinking increments, one that does not has non-shrinking ones."""
    if not (isinstance(span, int) and span >= 1 and 2 * span < times.shape[0]):
        raise ValueError(f"span: {span!r} must be an integer >= 1 with 2 span < "
                         f"{times.shape[0]} records")
    late = times[-1] - times[-1 - span]
    earlier = times[-1 - span] - times[-1 - 2 * span]
    return late / earlier


def balanced_start(mask: torch.Tensor, a: torch.Tensor, first_zero: torch.Tensor
                   ) -> torch.Tensor:
    r"""Factors ``(L_max, B, d)`` with every active :math:`w_i = a` (zero balance) or, where
    ``first_zero`` (``(B, 1)`` bool), :math:`w_1 = 0` and :math:`w_{i\ge2} = a` (Cor. 4.8's
    start: balance offsets :math:`c_{i\ge2} = a^q`); masked factors are 1. ``a`` ``(B, d)``."""
    if bool((a <= 0).any()):
        raise ValueError("a: the initial scale must be > 0")
    W0 = torch.where(mask > 0, a[None].expand(mask.shape[0], *a.shape), torch.ones_like(mask))
    W0[0] = torch.where(first_zero, torch.zeros_like(a), W0[0])
    return W0


def clocked_trajectory(field: Field, W0: torch.Tensor, mask: torch.Tensor, *, tau: float,
                       steps: int, record_every: int, method: str = "rk4") -> torch.Tensor:
    r"""Integrate :class:`ClockedFlow` from ``W0`` at :math:`t = 0` to the new time ``tau``;
    returns the records ``(R, L_max + 1, B, d)`` (factors, then the clock :math:`t`)."""
    Y0 = torch.cat([W0, torch.zeros_like(W0[:1])])
    return integrate(ClockedFlow(field, mask), Y0, dt=tau / steps, steps=steps,
                     method=method, record_every=record_every).values
