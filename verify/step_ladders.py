r"""Step-halving ladders and the evidence they justify: a flow identity is checked at the finest
step of a halving ladder :math:`h, h/2, h/4`; its tolerance is the integrator's own error
estimate there (Richardson, :func:`ladder_tolerance`) plus the roundoff the run accumulates. A
deviation that is a real discrepancy does not shrink with the step and ends far outside; one
that is discretisation error shrinks at the measured order, which :func:`order_evidence`
compares with the method's classical order on smooth cases. :func:`flow_limits` runs flows to
rest at a step and its half, and :func:`limit_evidence` compares such a limit with a solve.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from numerics.integrators import integrate_to_rest
from numerics.step_studies import observed_order, richardson_error
from verify.evidence import Evidence, Route, Tolerance, compare, undecided
from verify.tolerances import unit_roundoff

#: Largest accepted |measured order - classical order| on smooth cases. The observed order
#: of an order-p method is p + O(h); 0.5 accepts next-order contamination of the error ratio
#: up to a factor 2^0.5 between two halvings.
ORDER_SLACK = 0.5

#: A ladder error is used for an order fit only when it is this many times above the
#: roundoff floor (closer to it, roundoff bends the log-log line; the floor is the
#: worst-case linear accumulation, typically far above the actual roundoff).
ABOVE_FLOOR = 10.0


def ladder(simulate: Callable[[int, int], torch.Tensor], steps: int, levels: int
           ) -> list[torch.Tensor]:
    """``simulate(n, record_every)`` at ``n = steps * 2^k`` steps with ``record_every = 2^k``,
    ``k < levels``: the records of every level fall on the same times."""
    return [simulate(steps * 2**k, 2**k) for k in range(levels)]


def ladder_tolerance(values: list[torch.Tensor], *, dtype: torch.dtype, steps: int,
                     scale: float, what: str) -> Tolerance:
    r"""Twice the first-order Richardson estimate of the finest level's error
    (:func:`numerics.ns.steepest_flows.richardson_error`: the error at least halves per halving)
    plus the roundoff floor :math:`8\,n\,u\,\text{scale}` of the finest run's n steps."""
    estimate, p_hat = richardson_error(values)
    floor = 8 * steps * unit_roundoff(dtype) * scale
    return Tolerance(2 * estimate + floor,
                     f"{what}: 2 x first-order Richardson estimate {estimate:.2e} of the finest "
                     f"step's error (observed order {p_hat:.2f}) + roundoff floor 8 n u scale "
                     f"= {floor:.1e} (n = {steps} steps)")


#: A ladder comparison decides only if its tolerance is below this fraction of the compared
#: quantity's size; above it the step ladder has not resolved the flow (e.g. q near 1) and
#: the item is reported as undecided (NaN) instead of passing vacuously.
RESOLVED = 0.1


def ladder_compare(quantity: str, *, stated: torch.Tensor, measured: torch.Tensor,
                   tolerance: Tolerance, parameters: dict[str, Any]) -> Evidence:
    """``compare`` (absolute) of a ladder's finest level, undecided when unresolved."""
    size = float(max(stated.abs().max(), measured.abs().max()))
    if tolerance.value >= RESOLVED * size:
        measured = torch.full_like(measured, math.nan)
        parameters = {**parameters, "unresolved": f"tolerance {tolerance.value:.2e} >= "
                                                  f"{RESOLVED} x size {size:.2e}"}
    return compare(Route.NUMERIC, quantity, stated=stated, measured=measured,
                   metric="absolute", tolerance=tolerance, parameters=parameters)


def resolved_records(ladders: Sequence[list[torch.Tensor]]) -> int:
    r"""How many leading records (dim 0 of every level: a :func:`ladder` records its levels at
    the same times) the step-halving ladders resolve together: the largest n such that at each
    record before n, twice the summed change :math:`\sum_j\max|v^j_k - v^j_{k+1}|` of every
    rung pair k stays below :data:`RESOLVED` x the size :math:`\max|v|` of the finest levels up
    to that record. Twice, as in :func:`ladder_tolerance`: on those records the ladders'
    Richardson budget is below the resolution bar of :func:`ladder_compare`. Every rung pair,
    not only the finest: a chattering ladder can have two rungs that agree by chance."""
    changes = sum(torch.stack([(a - b).abs().flatten(1).amax(1) for a, b in zip(v, v[1:])])
                  for v in ladders)
    sizes = torch.stack([v[-1].abs().flatten(1).amax(1) for v in ladders]).amax(0)
    resolved = 2 * changes.amax(0) < RESOLVED * sizes.cummax(0).values
    unresolved = (~resolved).nonzero()
    return int(unresolved[0]) if unresolved.numel() else resolved.numel()


def order_evidence(quantity: str, errors: torch.Tensor, *, nominal_order: int,
                   floors: torch.Tensor, parameters: dict[str, Any]) -> Evidence:
    r"""Measured order per case (columns of ``errors``, rows the ladder :math:`h, h/2, ...`)
    against the classical order. A level whose error is within ``ABOVE_FLOOR`` x its roundoff
    floor (``floors``, one per level) is dropped; a case left with fewer than two levels
    carries no order information and is left out (counted). No case left: NaN, inconclusive.
    """
    orders = case_orders(errors, floors)
    tolerance = Tolerance(ORDER_SLACK, f"observed order of an order-{nominal_order} method is "
                                       f"{nominal_order} + O(h); {ORDER_SLACK} allows a factor "
                                       f"2^{ORDER_SLACK} of higher-order contamination in the "
                                       f"error ratio")
    parameters = {**parameters, "cases_with_an_order": len(orders), "cases": errors.shape[1],
                  "largest_error_by_level": errors.max(-1).values}
    if not orders:
        return undecided(Route.RATE, quantity, "no case has two step sizes above the roundoff "
                         "floor: the order cannot be measured at this precision",
                         tolerance=tolerance, parameters=parameters)
    measured = np.array(orders)
    return compare(Route.RATE, quantity, derived=np.full_like(measured, nominal_order),
                   measured=measured, metric="absolute", tolerance=tolerance,
                   parameters=parameters)


def case_orders(errors: torch.Tensor, floors: torch.Tensor) -> list[float]:
    """The observed order of each case (column of ``errors``, rows the ladder's levels) from
    its levels above ``ABOVE_FLOOR`` x the level's roundoff floor; a case with fewer than two
    such levels has none and is left out. What :func:`order_evidence` fits, for plots."""
    orders = []
    for column in errors.T:
        kept = column[column > ABOVE_FLOOR * floors]
        if kept.numel() >= 2:
            orders.append(float(observed_order(kept)))
    return orders


def roundoff_floors(dtype: torch.dtype, steps: int, levels: int, scale: float
                    ) -> torch.Tensor:
    r""":math:`8\,n_k\,u\,\text{scale}` for the ladder's step counts
    :math:`n_k = \text{steps}\cdot2^k` (worst-case linear accumulation of roundoff)."""
    return torch.tensor([8 * steps * 2**k * unit_roundoff(dtype) * scale
                         for k in range(levels)], dtype=torch.float64)


def level_errors(values: list[torch.Tensor], reference: Callable[[torch.Tensor], torch.Tensor],
                 reduce_dims: tuple[int, ...]) -> torch.Tensor:
    """``max |values_k - reference(values_k)|`` over ``reduce_dims`` for each level: the
    deviation of an identity at each step size (rows: levels)."""
    return torch.stack([(v - reference(v)).abs().amax(reduce_dims) for v in values])


@dataclass(frozen=True)
class Limit:
    """The end of a flow run to rest at ``dt`` (``coarse``) and of the same run at ``dt/2``
    (``fine``), mapped to x; ``remaining``: the distance still to travel at the coarse end."""

    coarse: torch.Tensor
    fine: torch.Tensor
    remaining: float
    steps: int
    dt: float


def flow_limits(field: Callable[[float, torch.Tensor], torch.Tensor], y0: torch.Tensor,
                to_x: Callable[[torch.Tensor], torch.Tensor], *, dt: Sequence[float],
                sizes: Sequence[int], chunk: int, tol: float, max_steps: int,
                tangent: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None
                ) -> list[Limit]:
    """Run ``field`` (RK4) until the speed of x is below ``tol``, then the same number of time
    units at ``dt/2``, for several runs in one batch. The state's dim 1 (x's dim 0) holds the
    runs' entries one after another: ``sizes[r]`` entries of run ``r``, stepped at ``dt[r]``.
    Each run stops on its own, when the largest speed of x over its entries is below ``tol``
    (its entries are then frozen), and its ``dt/2`` run (in the same batch: ``field`` sees
    the entries twice, so it must broadcast over dim 1) takes twice its own steps, so each
    limit is the one that run gives alone. ``tangent(y, v)``, if given, is
    the velocity of x along v (e.g. ``numerics.ns.decayed_limits.product_tangent``); otherwise
    it comes from forward-mode autograd of ``to_x``."""
    if len(dt) != len(sizes) or sum(sizes) != y0.shape[1]:
        raise ValueError(f"dt, sizes: one step and one size per run, sizes summing to "
                         f"y0.shape[1] = {y0.shape[1]}; got {list(dt)}, {list(sizes)}")
    run_of = torch.repeat_interleave(torch.arange(len(sizes), device=y0.device),
                                     torch.tensor(list(sizes), device=y0.device))
    step = torch.tensor(list(dt), dtype=y0.dtype, device=y0.device)[run_of]

    def speed(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        velocity = field(t, y)
        if tangent is not None:
            x_dot = tangent(y, velocity)
        else:
            _, x_dot = torch.func.jvp(to_x, (y,), (velocity,))
        entry = x_dot.abs().reshape(x_dot.shape[0], -1).amax(1)
        run = torch.zeros(len(sizes), dtype=entry.dtype, device=entry.device).scatter_reduce(
            0, run_of, entry, "amax", include_self=False)
        return run[run_of]

    rest = integrate_to_rest(field, y0, dt=step, chunk=chunk, speed=speed, tol=tol,
                             max_steps=max_steps, halved=True)
    coarse, fine, remaining = to_x(rest.final), to_x(rest.halved), rest.remaining()
    limits = []
    for r, run_dt in enumerate(dt):
        entries = run_of == r
        first = int(entries.nonzero()[0])
        limits.append(Limit(coarse[entries], fine[entries], float(remaining[first]),
                            int(rest.steps[first]), run_dt))
    return limits


def limit_evidence(quantity: str, stated: torch.Tensor, limit: Limit, condition: float,
                   dtype: torch.dtype, parameters: dict[str, Any]) -> Evidence:
    r"""A flow limit against a KKT solve. Error budget: 2 x first-order Richardson
    :math:`\max|x_{dt} - x_{dt/2}|`, the distance still to travel, the solve's forward error
    :math:`4\kappa u\,\text{scale}` and the run's roundoff :math:`8nu\,\text{scale}`. A run
    that did not come to rest (speed not decaying) has no limit: NaN, inconclusive."""
    u = unit_roundoff(dtype)
    scale = float(limit.fine.abs().max())
    richardson = 2 * float((limit.coarse - limit.fine).abs().max())
    solve = 4 * condition * u * scale
    floor = 8 * 2 * limit.steps * u * scale
    measured = limit.fine
    if not math.isfinite(limit.remaining):
        measured = torch.full_like(limit.fine, math.nan)
        remaining = 0.0
    else:
        remaining = limit.remaining
    return compare(Route.NUMERIC, quantity, stated=stated, measured=measured, metric="absolute",
                   tolerance=Tolerance(
                       richardson + remaining + solve + floor,
                       f"2 x |x(dt) - x(dt/2)| = {richardson:.1e} (dt = {limit.dt:.3g}) + "
                       f"distance left at rest {limit.remaining:.1e} + KKT solve 4 kappa u "
                       f"scale = {solve:.1e} (kappa = {condition:.1e}) + roundoff 8 n u scale "
                       f"= {floor:.1e}"),
                   parameters={**parameters, "steps": limit.steps, "dt": limit.dt})
