r"""Escape times of steepest flows from near the saddle at the origin, measured by
integrating the parameter flow (Never Saddle ``ns.x.escape`` / Fig. 3; Pesme & Flammarion
2023's first jump), batched over configurations.

* :func:`frozen_gradient_escape`: one coordinate, :math:`f(x) = -Gx`, from :math:`w_1 = 0`,
  :math:`w_{i\ge2} = a`, until :math:`x = X`: the time and the path length
  :math:`\int\|\dot w\|dt` in factor space, in relative time (:class:`numerics.events.
  RelativeTime`) so that :math:`a = 10^{-4}` costs about as many steps as :math:`a = 0.1`.
* :func:`loss_fraction_time`: the same start on a regression problem, until the loss falls
  below a fraction of its initial value.
* :func:`first_jump_time`: gradient flow on :math:`\beta = u\odot v` from
  :math:`u = \sqrt2a`, :math:`v = 0` until some :math:`|\beta_i|` reaches its level, in plain
  time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.events import RelativeTime, integrate_to_event
from numerics.ns.steepest_flows import ProductFlow, Regression, depth_mask


@dataclass(frozen=True)
class EscapeRun:
    """Per entry ``(B,)``: the time, the factor-space path length, and the steps taken."""

    time: torch.Tensor
    path_length: torch.Tensor
    steps: int


def cor48_start(depth: torch.Tensor, a: torch.Tensor, d: int, *, dtype: torch.dtype,
                device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Factors ``(L_max, B, d)`` with :math:`w_1 = 0`, :math:`w_i = a_b` for
    :math:`2 \le i \le L_b` and 1 for the masked rows, and the mask ``(L_max, B, 1)``."""
    if bool((a <= 0).any()):
        raise ValueError(f"a: initial scales must be > 0, got {a.flatten().tolist()}")
    L_max = int(depth.max())
    mask = depth_mask(depth, L_max, dtype=dtype, device=device)
    W0 = a.reshape(1, -1, 1).to(device=device, dtype=dtype).expand(L_max, -1, d).clone()
    W0[0] = 0.0
    return torch.where(mask > 0, W0, torch.ones_like(W0)), mask


def frozen_gradient_escape(q: torch.Tensor, depth: torch.Tensor, a: torch.Tensor, *,
                           G: float, X: float, h: float | torch.Tensor, max_steps: int,
                           dtype: torch.dtype = torch.float64,
                           device: torch.device | str = "cpu") -> EscapeRun:
    r"""Time for :math:`x = \prod_i w_i` to reach ``X`` under :math:`\nabla f = -G`
    (constant), from the Cor. 4.8 start; ``q`` ``(B, 1)``, ``depth`` ``(B,)``, ``a``
    ``(B,)``; RK4 with step ``h`` (one number or one per entry ``(B,)``) in relative time,
    the crossing located inside the step."""
    if not (G > 0 and X > 0):
        raise ValueError(f"G, X: must be > 0, got {G}, {X}")
    W0, mask = cor48_start(depth, a, 1, dtype=dtype, device=device)
    flow = ProductFlow(lambda x: torch.full_like(x, -G), q.to(device, dtype), mask)
    field = RelativeTime(flow, mask)
    L_max = W0.shape[0]
    ev = integrate_to_event(field, field.initial(W0), h=h, max_steps=max_steps,
                            event=lambda Y: Y[:L_max].prod(0)[:, 0] - X)
    return EscapeRun(RelativeTime.time(ev.state), RelativeTime.path_length(ev.state), ev.steps)


def loss_fraction_time(problem: Regression, q: torch.Tensor, depth: torch.Tensor,
                       a: torch.Tensor, *, fraction: float | torch.Tensor,
                       h: float | torch.Tensor, max_steps: int) -> EscapeRun:
    r"""First time the loss :math:`f(\prod_i w_i)` falls to ``fraction`` of its initial value,
    from the Cor. 4.8 start (every coordinate), steepest flow of exponent ``q`` ``(B, 1)``.
    ``fraction`` and the step ``h`` are one number or one per entry ``(B,)`` (several
    fractions or ladder levels in one batch: one integration; ``steps`` is then the batch's)."""
    fraction = torch.as_tensor(fraction, dtype=problem.A.dtype, device=problem.A.device)
    if not bool(((fraction > 0) & (fraction < 1)).all()):
        raise ValueError(f"fraction: {fraction.tolist()} must lie in (0, 1)")
    A = problem.A
    W0, mask = cor48_start(depth, a, A.shape[1], dtype=A.dtype, device=A.device)
    flow = ProductFlow(problem.grad, q.to(A.device, A.dtype), mask)
    field = RelativeTime(flow, mask)
    L_max = W0.shape[0]
    level = fraction * problem.loss(W0.prod(0))
    ev = integrate_to_event(field, field.initial(W0), h=h, max_steps=max_steps,
                            event=lambda Y: level - problem.loss(Y[:L_max].prod(0)))
    return EscapeRun(RelativeTime.time(ev.state), RelativeTime.path_length(ev.state), ev.steps)


@dataclass(frozen=True)
class Jump:
    """Per entry ``(B,)``: the jump time and the coordinate that reached its level first."""

    time: torch.Tensor
    coordinate: torch.Tensor


def first_jump_time(problem: Regression, a: torch.Tensor, levels: torch.Tensor, *,
                    dt: float | torch.Tensor, max_steps: int) -> Jump:
    r"""Gradient flow on :math:`\beta = u\odot v` (:math:`\dot u = -v\odot\nabla f(\beta)`,
    :math:`\dot v = -u\odot\nabla f(\beta)`) from :math:`u = \sqrt2a_b`, :math:`v = 0`, one
    entry per scale ``a`` ``(B,)``, until some coordinate reaches its level:
    :math:`\max_i|\beta_i|/\ell_i = 1` with ``levels`` :math:`\ell` ``(d,)`` (RK4 with step
    ``dt``, one number or one per entry ``(B,)``, the crossing located inside the step)."""
    if bool((a <= 0).any()) or not bool((levels > 0).all()):
        raise ValueError("a, levels: initial scales and the levels must be > 0")
    A = problem.A
    B, d = a.numel(), A.shape[1]
    if levels.shape != (d,):
        raise ValueError(f"levels: need shape ({d},), got {tuple(levels.shape)}")
    W0 = torch.zeros(2, B, d, dtype=A.dtype, device=A.device)
    W0[0] = math.sqrt(2) * a.to(A.device, A.dtype)[:, None]
    mask = torch.ones(2, B, 1, dtype=A.dtype, device=A.device)
    # q = 2 as a Python number: odd_power's fast path, the same bits as a (B, 1) tensor of 2s
    flow = ProductFlow(problem.grad, 2.0, mask)
    scale = levels.to(A.device, A.dtype)
    h = dt.to(A.device, A.dtype) if isinstance(dt, torch.Tensor) else dt
    ev = integrate_to_event(flow, W0, h=h, max_steps=max_steps,
                            event=lambda W: ((W[0] * W[1]).abs() / scale).amax(-1) - 1)
    return Jump(ev.at, ((ev.state[0] * ev.state[1]).abs() / scale).argmax(-1))
