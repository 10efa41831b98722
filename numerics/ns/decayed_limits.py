r"""Measurements of weight decay on :math:`x = \prod_{i=1}^L w_i` (Never Saddle Thm 4.14,
Table 1), batched and built on :class:`numerics.ns.steepest_flows.ProductFlow`:

* pointwise, at balanced factors :math:`|w_i| = |x|^{1/L}`: the velocity of :math:`x` (the
  parameter flow pushed through the product map, :func:`x_velocity`), the measured mirror
  rate :math:`R''\dot x = \dot x/M` with the inverse metric :math:`M = -\dot x_{free}(g = 1)`
  measured the same way (:func:`mirror_rate`), the gradient at which :math:`\dot x` changes
  sign, i.e. the fixed point at this :math:`x` (:func:`switching_gradient`), and the
  :math:`q = 1` decoupled box radius (:func:`sign_box_radius`);
* the mirror flow with a drift, :math:`\dot x = -M(x; c(t))[\mathrm{drive}(g) +
  \nabla M_{reg}(x; c(t))]`, with balance offsets :math:`c(t) = s(t)c_0`
  (:class:`DecayedMirrorFlow`);
* the sign flow with the sign smoothed by :math:`\tanh(\cdot/\varepsilon)`
  (:class:`SmoothedSignFlow`);
* RK4 with step-doubling control run to rest (:func:`adaptive_rest`: the step grows as the
  flow settles, so slow tails near a limit cost few steps);
* discrete sign descent with a learning-rate drop (AdamW or Adam + L2 with
  :math:`\beta_1 = \beta_2 = 0`, :math:`\epsilon = 0`: :func:`dropped_sign_descent`, the last
  fraction of the steps at the dropped rate; :func:`settled_sign_descent`, a settle phase of
  a given time at the dropped rate with the iterate averaged), and the sparsity summary of a
  limit (:func:`sparsity`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.bisection import bisect
from numerics.errors import Diverged
from numerics.ns.steepest_flows import (
    GradFn,
    ProductFlow,
    ProductInverseMetric,
    exclusive_products,
    odd_power,
    steepest_descent,
)

Decay = torch.Tensor | None


def balanced_factors(x_abs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r"""Positive factors with :math:`w_i = |x|^{1/L}` for the active factors (1 where
    masked): ``x_abs`` ``(B, n)`` > 0, ``mask`` ``(L_max, B, 1)``; returns ``(L_max, B, n)``."""
    if bool((x_abs <= 0).any()):
        raise ValueError("x_abs: balanced factors need |x| > 0")
    depth = mask.sum(0)  # (B, 1)
    root = x_abs ** (1 / depth)
    return torch.where(mask > 0, root.expand(mask.shape[0], -1, -1), torch.ones_like(root))


def product_tangent(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r""":math:`\dot x = \sum_i V_i\prod_{j\ne i}w_j` of :math:`x = \prod_i w_i` along a
    parameter velocity ``V``: the directional derivative written out (what forward-mode
    autograd of ``W.prod(0)`` computes, without its per-call overhead)."""
    return (V * exclusive_products(W)).sum(0)


def x_velocity(W: torch.Tensor, g: torch.Tensor, q: torch.Tensor, mask: torch.Tensor, *,
               coupled: Decay = None, decoupled: Decay = None) -> torch.Tensor:
    r""":math:`\dot x` of the parameter flow at ``W`` with the gradient held at ``g``
    ``(B, n)``: the parameter velocity pushed through the product map by its directional
    derivative (:func:`product_tangent`, the same numbers as forward-mode autograd)."""
    flow = ProductFlow(lambda x: g, q, mask, coupled=coupled, decoupled=decoupled)
    return product_tangent(W, flow(0.0, W))


def mirror_rate(W: torch.Tensor, g: torch.Tensor, q: torch.Tensor, mask: torch.Tensor, *,
                coupled: Decay = None, decoupled: Decay = None) -> torch.Tensor:
    r"""Measured :math:`R''(x)\dot x = \dot x/M`: both :math:`\dot x` (decayed, at ``g``) and
    :math:`M = -\dot x_{free}` at the unit gradient (:math:`\psi_q(1) = 1`) come from the
    parameter flow; no formula for :math:`M` is used."""
    metric = -x_velocity(W, torch.ones_like(g), q, mask)
    return x_velocity(W, g, q, mask, coupled=coupled, decoupled=decoupled) / metric


def switching_gradient(W: torch.Tensor, q: torch.Tensor, mask: torch.Tensor, *,
                       coupled: Decay = None, decoupled: Decay = None, bound: float,
                       iterations: int = 200) -> torch.Tensor:
    r"""For positive factors (:math:`x > 0`), the gradient :math:`g^* \in [-\text{bound}, 0]` at
    which :math:`\dot x` changes sign (the fixed point of the flow at this :math:`x`), by
    bisection to roundoff; NaN where :math:`\dot x` has one sign on the whole bracket."""
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError(f"bound: {bound!r} must be a finite number > 0")
    shape = W.shape[1:]
    lo = torch.full(shape, -bound, dtype=W.dtype, device=W.device)
    hi = torch.zeros(shape, dtype=W.dtype, device=W.device)

    def rate(g: torch.Tensor) -> torch.Tensor:
        return x_velocity(W, g, q, mask, coupled=coupled, decoupled=decoupled)

    rising = rate(lo) > 0
    bracketed = rising & (rate(hi) <= 0)
    g = bisect(lambda mid: rate(mid) > 0, lo, hi, iterations=iterations,
               until_adjacent=True).midpoint
    return torch.where(bracketed, g, torch.full_like(lo, math.nan))


def sign_box_radius(mask: torch.Tensor, decoupled: torch.Tensor, *, lo: float, hi: float,
                    iterations: int = 200) -> torch.Tensor:
    r"""Sign flow (:math:`q = 1`) with decoupled decay at balanced factors and :math:`g < 0`:
    the :math:`|x|` at which :math:`\dot x` changes sign (inside it the flow pushes
    :math:`|x|` up, outside down), by bisection in :math:`\log|x|` on :math:`[lo, hi]`;
    ``(B, 1)``."""
    B = mask.shape[1]
    dtype, device = decoupled.dtype, decoupled.device
    q = torch.ones(B, 1, dtype=dtype, device=device)
    log_lo = torch.full((B, 1), math.log(lo), dtype=dtype, device=device)
    log_hi = torch.full((B, 1), math.log(hi), dtype=dtype, device=device)
    minus = -torch.ones(B, 1, dtype=dtype, device=device)

    def rate(log_x: torch.Tensor) -> torch.Tensor:
        W = balanced_factors(log_x.exp(), mask)
        return x_velocity(W, minus, q, mask, decoupled=decoupled)

    bracketed = (rate(log_lo) > 0) & (rate(log_hi) < 0)
    radius = bisect(lambda mid: rate(mid) > 0, log_lo, log_hi, iterations=iterations,
                    until_adjacent=True).midpoint.exp()
    return torch.where(bracketed, radius, torch.full_like(radius, math.nan))


@dataclass(frozen=True)
class SmoothedSignFlow:
    r"""The sign flow (:math:`q = 1`) with the sign smoothed,
    :math:`\dot w_i = -\tanh((\partial_{w_i}F + \alpha_c w_i)/\varepsilon) - \alpha_d w_i`,
    a field ``(t, W) -> dW/dt`` on ``(L_max, B, d)`` (verify/claims/ns/SOURCES.md §4.0: tanh(g/eps)
    for a
    continuous q = 1 flow). With coupled decay only its rest points are exactly those of the
    sign flow and of every q (:math:`\tanh(v/\varepsilon) = 0 \iff v = 0`), whatever
    :math:`\varepsilon`; ``coupled``, ``decoupled`` are ``(B, 1)``."""

    grad: GradFn
    mask: torch.Tensor
    eps: float
    coupled: torch.Tensor | None = None
    decoupled: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not self.eps > 0:
            raise ValueError(f"eps: {self.eps!r} must be > 0")

    def __call__(self, t: float, W: torch.Tensor) -> torch.Tensor:
        partial = self.grad(W.prod(0))[None] * exclusive_products(W)
        if self.coupled is not None:
            partial = partial + self.coupled * W
        velocity = -torch.tanh(partial / self.eps)
        if self.decoupled is not None:
            velocity = velocity - self.decoupled * W
        return velocity * self.mask


class DecayedMirrorFlow:
    r"""The steepest mirror flow with a drift, a field ``(t, x) -> dx/dt``:

    .. math:: \dot x = -M(x; c(t))\,[\mathrm{drive}(\nabla f(x), q) +
              \mathrm{regulariser}(t, x, M(x; c(t)))],

    with offsets :math:`c(t) = s(t)c_0` (``offset_scale(t)`` ``(B, 1)``). The metric at scaled
    offsets comes from one :class:`ProductInverseMetric` at :math:`c_0` by the scaling law
    :math:`M(x; sc_0) = s^{L-1}M(xs^{-L/q}; c_0)` (:math:`P_s(u) = s^LP_1(u/s)`), so Newton keeps
    its warm start.
    """

    def __init__(self, grad: GradFn, q: torch.Tensor, offsets: torch.Tensor,
                 mask: torch.Tensor, *, offset_scale: Callable[[float], torch.Tensor],
                 regulariser: Callable[[float, torch.Tensor, torch.Tensor], torch.Tensor],
                 drive: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = odd_power
                 ) -> None:
        self.grad, self.q, self.drive = grad, q, drive
        self.offset_scale, self.regulariser = offset_scale, regulariser
        self.depth = mask.sum(0)
        self.metric = ProductInverseMetric(offsets, q, mask)

    def inverse_metric(self, t: float, x: torch.Tensor) -> torch.Tensor:
        s = self.offset_scale(t)
        if bool((s <= 0).any()):
            raise ValueError("offset_scale: the scale of the offsets must stay > 0")
        return s ** (self.depth - 1) * self.metric(x * s ** (-self.depth / self.q))

    def __call__(self, t: float, x: torch.Tensor) -> torch.Tensor:
        M = self.inverse_metric(t, x)
        return -M * (self.drive(self.grad(x), self.q) + self.regulariser(t, x, M))


@dataclass(frozen=True)
class AdaptiveRest:
    """Outcome of :func:`adaptive_rest`: the final state, accepted and rejected steps, the
    final time, the speed of x at the end and the distance still to travel (inf if the speed
    was not decaying)."""

    final: torch.Tensor
    accepted: int
    rejected: int
    time: float
    speed: float
    remaining: float


def adaptive_rest(field: Callable[[float, torch.Tensor], torch.Tensor], y0: torch.Tensor,
                  to_x: Callable[[torch.Tensor], torch.Tensor], *, dt: float, tol: float,
                  speed_tol: float, max_steps: int, window: int = 20,
                  tangent: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None
                  ) -> AdaptiveRest:
    r"""RK4 with step doubling (one step of :math:`h` against two of :math:`h/2`; local error
    :math:`|y_h - y_{h/2}|/15`, accepted below ``tol`` x (1 + max|y|), step factor
    :math:`0.9(\text{tol}/\text{err})^{1/5}` in [0.2, 2]) on an autonomous field until the speed
    of :math:`x = ` ``to_x(y)`` is below ``speed_tol``. ``field`` must be a pure function of
    the state (its value at an accepted state is reused for the speed and the next steps).

    Near a stable rest point the local error falls with the speed, so the step grows up to the
    stability limit that the error control enforces; RK4's rest points are the field's zeros,
    so the step does not move the limit. ``remaining`` is :math:`v/\kappa` with :math:`\kappa`
    the speed's decay rate over the last ``window`` accepted steps. ``tangent(y, v)``, if
    given, is the velocity of x along v (e.g. :func:`product_tangent`); otherwise it comes
    from forward-mode autograd of ``to_x``.
    """
    if not (dt > 0 and tol > 0 and speed_tol > 0):
        raise ValueError(f"dt, tol, speed_tol: need positive numbers, got {dt}, {tol}, "
                         f"{speed_tol}")

    def speed(y: torch.Tensor, velocity: torch.Tensor) -> float:
        if tangent is not None:
            return float(tangent(y, velocity).abs().max())
        _, x_dot = torch.func.jvp(to_x, (y,), (velocity,))
        return float(x_dot.abs().max())

    # The field is autonomous and a pure function of y: its value at y serves the speed and
    # the first stage of both the big step and the first half step (rk4_step's arithmetic).
    y, h, t = y0, dt, 0.0
    k1 = field(0.0, y)
    accepted = rejected = 0
    times, speeds = [0.0], [speed(y0, k1)]
    while accepted + rejected < max_steps and speeds[-1] > speed_tol:
        big = _rk4_step_from(field, y, k1, h)
        middle = _rk4_step_from(field, y, k1, h / 2)
        half = _rk4_step_from(field, middle, field(0.0, middle), h / 2)
        if not bool(torch.isfinite(half).all()):
            raise Diverged(f"adaptive_rest: non-finite state at t = {t:.4g} (h = {h:.3g})")
        error = float((big - half).abs().max()) / 15
        allowed = tol * (1 + float(half.abs().max()))
        if error <= allowed:
            y, t, accepted = half, t + h, accepted + 1
            k1 = field(0.0, y)
            times.append(t)
            speeds.append(speed(y, k1))
        else:
            rejected += 1
        h *= min(2.0, max(0.2, 0.9 * (allowed / max(error, 1e-300)) ** 0.2))
    remaining = math.inf
    if len(speeds) > window and 0 < speeds[-1] < speeds[-1 - window]:
        kappa = math.log(speeds[-1 - window] / speeds[-1]) / (times[-1] - times[-1 - window])
        remaining = speeds[-1] / kappa
    return AdaptiveRest(y, accepted, rejected, t, speeds[-1], remaining)


def _rk4_step_from(field: Callable[[float, torch.Tensor], torch.Tensor], y: torch.Tensor,
                   k1: torch.Tensor, dt: float) -> torch.Tensor:
    """:func:`numerics.integrators.rk4_step` of an autonomous field (t = 0) with its first
    stage ``k1 = field(0, y)`` given (the same arithmetic, so the same bits)."""
    k2 = field(0.5 * dt, y + 0.5 * dt * k1)
    k3 = field(0.5 * dt, y + 0.5 * dt * k2)
    k4 = field(dt, y + dt * k3)
    return y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def dropped_sign_descent(flow: ProductFlow, W0: torch.Tensor, *, lr: float, steps: int,
                         final_fraction: float = 0.2, drop: float = 10.0) -> torch.Tensor:
    r"""``steps`` steps of :func:`numerics.ns.steepest_flows.steepest_descent`, the last
    ``final_fraction`` of them at ``lr / drop`` (the schedule of SOURCES §4.15: lr divided by 10 for
    the last 20% of steps); returns the final factors."""
    if not 0 < final_fraction < 1 or drop < 1:
        raise ValueError(f"final_fraction, drop: need 0 < final_fraction < 1 and drop >= 1, "
                         f"got {final_fraction}, {drop}")
    late = max(1, round(steps * final_fraction))
    early = steps - late
    if early < 1:
        raise ValueError(f"steps: {steps} leaves no step before the drop")
    W = steepest_descent(flow, W0, lr=lr, steps=early, record_every=early).final
    return steepest_descent(flow, W, lr=lr / drop, steps=late, record_every=late).final


@dataclass(frozen=True)
class SettledDescent:
    r"""Outcome of :func:`settled_sign_descent`: the final factors, the time average of
    :math:`x = \prod_iw_i` over the second half of the settle phase, and the steps taken."""

    final: torch.Tensor
    mean_x: torch.Tensor
    steps: int


def settled_sign_descent(flow: ProductFlow, W0: torch.Tensor, *, lr: float, steps: int,
                         drop: float, settle_time: float) -> SettledDescent:
    r"""``steps`` steps of :func:`numerics.ns.steepest_flows.steepest_descent` at ``lr``, then
    ``settle_time`` time units at ``lr / drop``; :math:`x` is averaged over the second half of
    that settle phase.

    Why a settle *time* rather than a fraction of the steps: at the drop the iterate carries the
    coarse rate's O(lr) chattering band and balance offsets, and with decoupled decay
    :math:`\alpha` the offsets relax only as :math:`e^{-q\alpha t}` (ns.lemma4.4), whatever
    the rate; a phase shorter than a few :math:`1/\alpha` ends before the fine band is
    reached. Why the average: a sign-descent iterate chatters about the sliding (Filippov)
    point with a phase that changes every step; its time average is the sliding point up to
    an O(lr) bias that is smooth in lr, which a step-halving ladder can bound.
    """
    if not (drop >= 1 and math.isfinite(drop)):
        raise ValueError(f"drop: {drop!r} must be a finite number >= 1")
    if not (settle_time > 0 and math.isfinite(settle_time)):
        raise ValueError(f"settle_time: {settle_time!r} must be a finite number > 0")
    W = steepest_descent(flow, W0, lr=lr, steps=steps, record_every=steps).final
    fine = lr / drop
    settle = max(2, math.ceil(settle_time / fine))
    relax = settle - settle // 2
    W = steepest_descent(flow, W, lr=fine, steps=relax, record_every=relax).final
    total = torch.zeros_like(W[0])
    for _ in range(settle // 2):
        W = W + fine * flow(0.0, W)
        total = total + W.prod(0)
    if not bool(torch.isfinite(W).all()):
        raise Diverged("settled_sign_descent: non-finite factors in the settle phase")
    return SettledDescent(W, total / (settle // 2), steps + settle)


@dataclass(frozen=True)
class Sparsity:
    """Support size at a threshold and the l1/l2 ratio (1 for one spike, sqrt(d) when flat)."""

    support: int
    l1_over_l2: float

    def as_dict(self) -> dict[str, float]:
        return {"support": self.support, "l1/l2": self.l1_over_l2}


def sparsity(x: torch.Tensor, threshold: float) -> Sparsity:
    r"""Of a limit ``x`` ``(d,)``: :math:`\#\{k: |x_k| > \text{threshold}\}` and
    :math:`\|x\|_1/\|x\|_2` (NaN for x = 0)."""
    norm = float(x.norm())
    return Sparsity(int((x.abs() > threshold).sum()),
                    float(x.abs().sum()) / norm if norm > 0 else math.nan)
