r"""Explicit fixed-step integrators for batched ODEs :math:`\dot y = f(t, y)`, of known order:
Euler (1), Heun (2), RK4 (4). One step advances a whole batch; a non-finite state raises
:class:`~numerics.errors.Diverged` instead of returning numbers.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged

Field = Callable[[float, torch.Tensor], torch.Tensor]


def euler_step(field: Field, t: float, y: torch.Tensor, dt: float) -> torch.Tensor:
    """Explicit Euler (order 1): with the q = 1 field, one step of sign descent."""
    return y + dt * field(t, y)


def heun_step(field: Field, t: float, y: torch.Tensor, dt: float) -> torch.Tensor:
    """Heun's method, the explicit trapezoidal rule (order 2)."""
    k1 = field(t, y)
    k2 = field(t + dt, y + dt * k1)
    return y + 0.5 * dt * (k1 + k2)


def rk4_step(field: Field, t: float, y: torch.Tensor, dt: float) -> torch.Tensor:
    """Classical Runge-Kutta (order 4)."""
    k1 = field(t, y)
    k2 = field(t + 0.5 * dt, y + 0.5 * dt * k1)
    k3 = field(t + 0.5 * dt, y + 0.5 * dt * k2)
    k4 = field(t + dt, y + dt * k3)
    return y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


#: name -> (one step, classical order on smooth fields)
METHODS = {"euler": (euler_step, 1), "heun": (heun_step, 2), "rk4": (rk4_step, 4)}


@dataclass(frozen=True)
class Trajectory:
    """``times`` (R,), ``values`` (R, ...) of ``observe(t, y)`` at the records, ``final`` y."""

    times: torch.Tensor
    values: torch.Tensor
    final: torch.Tensor


def integrate(field: Field, y0: torch.Tensor, *, dt: float, steps: int, method: str = "rk4",
              record_every: int = 1,
              observe: Callable[[float, torch.Tensor], torch.Tensor] | None = None
              ) -> Trajectory:
    """Integrate ``dy/dt = field(t, y)`` from ``y0`` at ``t = 0`` with a fixed step, recording
    ``observe(t, y)`` (default ``y``) at ``t = 0`` and every ``record_every`` steps.

    Raises :class:`Diverged` when the state becomes NaN/Inf.
    """
    if method not in METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt: {dt!r} must be a finite number > 0")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps: {steps!r} must be an integer >= 1")
    if not (isinstance(record_every, int) and record_every >= 1):
        raise ValueError(f"record_every: {record_every!r} must be an integer >= 1")
    step, _ = METHODS[method]
    observe = observe or (lambda t, y: y)
    y = y0
    times, values = [0.0], [observe(0.0, y)]
    for k in range(1, steps + 1):
        y = step(field, (k - 1) * dt, y, dt)
        if k % record_every == 0 or k == steps:
            if not bool(torch.isfinite(y).all()):
                raise Diverged(f"{method}: non-finite state at t = {k * dt:.4g} (dt = {dt:.3g})")
            times.append(k * dt)
            values.append(observe(k * dt, y))
    return Trajectory(torch.tensor(times, dtype=torch.float64), torch.stack(values), y)


@dataclass(frozen=True)
class Rest:
    """Outcome of :func:`integrate_to_rest`: the final state, the number of steps, the speed
    at the end of each chunk and the chunk's duration."""

    final: torch.Tensor
    steps: int
    speeds: torch.Tensor
    chunk_time: float

    def remaining(self) -> float:
        r"""Distance still to travel if the speed keeps decaying at the rate
        :math:`\kappa` of the last two chunks: :math:`v/\kappa` (inf if not decaying)."""
        if self.speeds.numel() < 2 or self.speeds[-1] >= self.speeds[-2]:
            return math.inf
        kappa = math.log(float(self.speeds[-2] / self.speeds[-1])) / self.chunk_time
        return float(self.speeds[-1]) / kappa


def integrate_to_rest(field: Field, y0: torch.Tensor, *, dt: float, chunk: int,
                      speed: Callable[[float, torch.Tensor], float], tol: float,
                      max_steps: int, method: str = "rk4") -> Rest:
    """Integrate an autonomous ``field`` (each chunk restarts its clock at 0) in chunks of
    ``chunk`` steps until ``speed(t, y) <= tol`` (or ``max_steps``), recording the speed after
    each chunk (for :meth:`Rest.remaining`)."""
    y, t, steps, speeds = y0, 0.0, 0, []
    while steps < max_steps:
        trajectory = integrate(field, y, dt=dt, steps=chunk, method=method, record_every=chunk)
        y, steps = trajectory.final, steps + chunk
        t = steps * dt
        speeds.append(speed(t, y))
        if speeds[-1] <= tol:
            break
    return Rest(y, steps, torch.tensor(speeds, dtype=torch.float64), chunk * dt)
