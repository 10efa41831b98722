r"""Explicit fixed-step integrators for batched ODEs :math:`\dot y = f(t, y)`, of known order:
Euler (1), Heun (2), RK4 (4). One step advances a whole batch; a non-finite state raises
:class:`~numerics.errors.Diverged` instead of returning numbers. The step ``dt`` may be one
number or a tensor that broadcasts against the state (one step per batch entry: runs at
different steps share one batch).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged

Field = Callable[[float, torch.Tensor], torch.Tensor]


Step = float | torch.Tensor


def _finite_positive(dt: Step) -> bool:
    value = torch.as_tensor(dt)
    return bool(((value > 0) & torch.isfinite(value)).all())


def euler_step(field: Field, t: float, y: torch.Tensor, dt: Step) -> torch.Tensor:
    """Explicit Euler (order 1): with the q = 1 field, one step of sign descent."""
    return y + dt * field(t, y)


def heun_step(field: Field, t: float, y: torch.Tensor, dt: Step) -> torch.Tensor:
    """Heun's method, the explicit trapezoidal rule (order 2)."""
    k1 = field(t, y)
    k2 = field(t + dt, y + dt * k1)
    return y + 0.5 * dt * (k1 + k2)


def rk4_step(field: Field, t: float, y: torch.Tensor, dt: Step) -> torch.Tensor:
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
    """``times`` (R,) (``(R, *dt.shape)`` for a tensor step), ``values`` (R, ...) of
    ``observe(t, y)`` at the records, ``final`` y."""

    times: torch.Tensor
    values: torch.Tensor
    final: torch.Tensor


def integrate(field: Field, y0: torch.Tensor, *, dt: Step, steps: int, method: str = "rk4",
              record_every: int = 1,
              observe: Callable[[float, torch.Tensor], torch.Tensor] | None = None
              ) -> Trajectory:
    """Integrate ``dy/dt = field(t, y)`` from ``y0`` at ``t = 0`` with a fixed step, recording
    ``observe(t, y)`` (default ``y``) at ``t = 0`` and every ``record_every`` steps. A tensor
    ``dt`` (broadcast against ``y``) gives each entry its own step; ``t`` is then a tensor too.

    Raises :class:`Diverged` when the state becomes NaN/Inf.
    """
    if method not in METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    if not _finite_positive(dt):
        raise ValueError(f"dt: {dt!r} must be finite and > 0")
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
                at = (f"after {k} steps" if isinstance(dt, torch.Tensor)
                      else f"at t = {k * dt:.4g} (dt = {dt:.3g})")
                raise Diverged(f"{method}: non-finite state {at}")
            times.append(k * dt)
            values.append(observe(k * dt, y))
    if isinstance(dt, torch.Tensor):
        times = torch.stack([torch.zeros_like(dt) + t for t in times])
    else:
        times = torch.tensor(times, dtype=torch.float64)
    return Trajectory(times, torch.stack(values), y)


def integrate_settling(field: Field, y0: torch.Tensor, *, dt: float, steps: int,
                       record_every: int, settled: Callable[[torch.Tensor], torch.Tensor],
                       method: str = "rk4") -> Trajectory:
    """:func:`integrate` for an autonomous ``field`` whose rows (dim 0 of ``y0``) evolve
    independently, stepping only the rows not yet ``settled``: after each record a row for
    which ``settled(y)`` ``(B,)`` is true keeps its state (repeated in the later records)
    and leaves the batch. For rows whose remaining motion the caller does not read (e.g.
    coordinates decaying below a floor it ignores), this gives the same records as
    :func:`integrate` at the cost of the rows still moving. ``steps`` must be a multiple of
    ``record_every``; raises :class:`Diverged` like :func:`integrate`."""
    if steps % record_every:
        raise ValueError(f"steps: {steps} must be a multiple of record_every {record_every}")
    y = y0
    active = torch.arange(y0.shape[0], device=y0.device)
    values = [y0]
    for record in range(1, steps // record_every + 1):
        if active.numel():
            moved = integrate(field, y[active], dt=dt, steps=record_every, method=method,
                              record_every=record_every).final
            y = y.index_copy(0, active, moved)
            active = active[~settled(moved)]
        values.append(y)
    return Trajectory(torch.arange(len(values), dtype=torch.float64) * (record_every * dt),
                      torch.stack(values), y)


@dataclass(frozen=True)
class Rest:
    """Outcome of :func:`integrate_to_rest`, per batch entry ``(B,)``: the final state, the
    number of steps, the speeds at the end of the entry's last two chunks ``(2, B)`` (NaN
    where it ran fewer), its chunks' duration, and (``halved`` runs) the final state of the
    same run at half the step for twice the steps (else None)."""

    final: torch.Tensor
    steps: torch.Tensor
    speeds: torch.Tensor
    chunk_time: torch.Tensor
    halved: torch.Tensor | None = None

    def remaining(self) -> torch.Tensor:
        r"""Distance still to travel per entry if the speed keeps decaying at the rate
        :math:`\kappa` of the last two chunks: :math:`v/\kappa` (inf if not decaying)."""
        previous, last = self.speeds
        kappa = torch.log(previous / last) / self.chunk_time
        return torch.where(last < previous, last / kappa, torch.full_like(last, math.inf))


def integrate_to_rest(field: Field, y0: torch.Tensor, *, dt: Step, chunk: int,
                      speed: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], tol: float,
                      max_steps: int, method: str = "rk4", batch_dim: int = 1,
                      halved: bool = False) -> Rest:
    """Integrate an autonomous ``field`` (each chunk restarts its clock at 0) in chunks of
    ``chunk`` steps until ``speed(t, y) <= tol`` (or ``max_steps``), recording the speed after
    each chunk (for :meth:`Rest.remaining`). Per entry along ``batch_dim`` of the state
    (``B`` entries): ``dt`` is one number or one step per entry ``(B,)``, ``speed`` returns
    ``(B,)`` (entries that must stop together share a value), and an entry at rest is frozen
    (its state no longer changes) while the others go on.

    With ``halved``, each entry's run at ``dt/2`` for twice its steps (the Richardson
    partner) goes along in the same batch: ``field`` then sees ``2B`` entries (the runs, then
    their halved copies), while ``speed`` sees the ``B`` runs only. Frozen entries and the
    chunked clock do not change the arithmetic of an autonomous field: each entry's numbers
    are those of its own run alone."""
    if not _finite_positive(dt):
        raise ValueError(f"dt: {dt!r} must be finite and > 0")
    if not (isinstance(chunk, int) and chunk >= 1 and max_steps >= 1):
        raise ValueError(f"chunk, max_steps: {chunk!r}, {max_steps!r} must be integers >= 1")
    B = y0.shape[batch_dim]
    layout = [1] * batch_dim + [-1] + [1] * (y0.dim() - batch_dim - 1)
    dt = torch.as_tensor(dt, dtype=y0.dtype, device=y0.device).expand(B)
    step, y = dt, y0
    if halved:
        step, y = torch.cat([dt, dt / 2]), torch.cat([y0, y0], batch_dim)
    step = step.reshape(layout)
    done = torch.zeros(B, dtype=torch.bool, device=y0.device)
    halved_done = done.clone()
    count = torch.zeros(B, dtype=torch.long, device=y0.device)
    previous = last = torch.full((B,), math.nan, dtype=torch.float64, device=y0.device)
    steps = 0
    while True:
        y_new = integrate(field, y, dt=step, steps=chunk, method=method,
                          record_every=chunk).final
        steps += chunk
        frozen = torch.cat([done, halved_done]) if halved else done
        y = torch.where(frozen.reshape(layout), y, y_new)
        if not bool(done.all()):
            v = torch.as_tensor(speed(steps * dt, y.narrow(batch_dim, 0, B)),
                                dtype=torch.float64).expand(B)
            active = ~done
            previous = torch.where(active, last, previous)
            last = torch.where(active, v, last)
            count = torch.where(active, count + chunk, count)
            done = done | (v <= tol) | (steps >= max_steps)
        halved_done = done & (steps >= 2 * count)
        if bool((done & halved_done).all() if halved else done.all()):
            break
    return Rest(y.narrow(batch_dim, 0, B), count, torch.stack([previous, last]),
                chunk * dt.to(torch.float64),
                y.narrow(batch_dim, B, B) if halved else None)
