r"""Shared pieces of the Never Saddle claims: batched (q, L) grids, step-halving ladders, and
the tolerances and order evidence a ladder justifies.

A flow identity is checked at the finest step of a halving ladder :math:`h, h/2, h/4`; its
tolerance is the integrator's own error estimate there (Richardson, :func:`ladder_tolerance`)
plus the roundoff the run accumulates. A deviation that is a real discrepancy does not shrink
with the step and ends far outside; one that is discretisation error shrinks at the measured
order, which :func:`order_evidence` compares with the method's classical order on smooth
cases.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from numerics.integrators import integrate, integrate_to_rest
from numerics.steepest_flows import (
    ProductFlow,
    Regression,
    default_regression,
    depth_mask,
)
from numerics.step_studies import observed_order, richardson_error, sign_changes
from verify.evidence import Evidence, Route, Tolerance, compare, undecided
from verify.run import Run
from verify.tolerances import unit_roundoff

T = TypeVar("T")

#: Largest accepted |measured order - classical order| on smooth cases. The observed order
#: of an order-p method is p + O(h); 0.5 accepts next-order contamination of the error ratio
#: up to a factor 2^0.5 between two halvings.
ORDER_SLACK = 0.5

#: A ladder error is used for an order fit only when it is this many times above the
#: roundoff floor (closer to it, roundoff bends the log-log line; the floor is the
#: worst-case linear accumulation, typically far above the actual roundoff).
ABOVE_FLOOR = 10.0


@dataclass(frozen=True)
class Grid:
    """A batch of (q, L) configurations: ``q`` ``(B, 1)``, ``depth`` ``(B,)``, ``mask``
    ``(L_max, B, 1)`` and one label dict per entry."""

    q: torch.Tensor
    depth: torch.Tensor
    mask: torch.Tensor
    labels: list[dict[str, Any]]

    @property
    def size(self) -> int:
        return len(self.labels)

    def where(self, **conditions: Any) -> torch.Tensor:
        """Indices of the entries whose labels match all ``conditions``."""
        return torch.tensor([b for b, lab in enumerate(self.labels)
                             if all(lab[k] == v for k, v in conditions.items())],
                            dtype=torch.long)


def grid(axes: dict[str, Sequence[Any]], *, L_max: int, dtype: torch.dtype,
         device: torch.device) -> Grid:
    """The product of ``axes`` (must include ``q`` and ``L``) as one batch."""
    names = list(axes)
    labels = [dict(zip(names, combo)) for combo in _product([list(axes[n]) for n in names])]
    q = torch.tensor([[float(lab["q"])] for lab in labels], dtype=dtype, device=device)
    depth = torch.tensor([int(lab["L"]) for lab in labels], device=device)
    return Grid(q=q, depth=depth, mask=depth_mask(depth, L_max, dtype=dtype, device=device),
                labels=labels)


def _product(lists: list[list[Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [()]
    for values in lists:
        out = [prefix + (v,) for prefix in out for v in values]
    return out


def ladder(simulate: Callable[[int, int], torch.Tensor], steps: int, levels: int
           ) -> list[torch.Tensor]:
    """``simulate(n, record_every)`` at ``n = steps * 2^k`` steps with ``record_every = 2^k``,
    ``k < levels``: the records of every level fall on the same times."""
    return [simulate(steps * 2**k, 2**k) for k in range(levels)]


def ladder_tolerance(values: list[torch.Tensor], *, dtype: torch.dtype, steps: int,
                     scale: float, what: str) -> Tolerance:
    r"""Twice the first-order Richardson estimate of the finest level's error
    (:func:`numerics.steepest_flows.richardson_error`: the error at least halves per halving)
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


def order_evidence(quantity: str, errors: torch.Tensor, *, nominal_order: int,
                   floors: torch.Tensor, parameters: dict[str, Any]) -> Evidence:
    r"""Measured order per case (columns of ``errors``, rows the ladder :math:`h, h/2, ...`)
    against the classical order. A level whose error is within ``ABOVE_FLOOR`` x its roundoff
    floor (``floors``, one per level) is dropped; a case left with fewer than two levels
    carries no order information and is left out (counted). No case left: NaN, inconclusive.
    """
    orders = []
    for column in errors.T:
        kept = column[column > ABOVE_FLOOR * floors]
        if kept.numel() >= 2:
            orders.append(float(observed_order(kept)))
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


_CACHE: OrderedDict[str, Any] = OrderedDict()


def cached(key: str, compute: Callable[[], T], *, size: int = 64) -> T:
    """Memoise a simulation that the stated forms do not enter, so the negative control's run
    (same parameters, seed, dtype, device) reuses it instead of recomputing it.

    One cache per process, least recently used entries dropped beyond ``size``: it must hold
    every entry a claim makes before its control asks for the first one again (some claims make
    a few dozen), so the default is 64."""
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = compute()
    _CACHE[key] = value
    while len(_CACHE) > size:
        _CACHE.popitem(last=False)
    return value


#: Weight-decay modes of the parameter flow.
MODES = ("none", "decoupled", "coupled")


def decay_schedule(t: float) -> float:
    """alpha_t / alpha_0: time-varying, so a check sees int alpha, not alpha t."""
    return 1.0 + 0.5 * math.sin(2.0 * t)


def decay_integral(t: torch.Tensor) -> torch.Tensor:
    r""":math:`\int_0^t` of :func:`decay_schedule`."""
    return t + 0.25 * (1.0 - torch.cos(2.0 * t))


def regression_ladder(run: Run, stream: str, G: Grid, initial: Callable[[int], torch.Tensor],
                      p: dict[str, Any]) -> tuple[Regression, torch.Tensor, list[torch.Tensor]]:
    """The parameter flow on the catalogue's regression problem for every entry of ``G``
    (label ``mode`` picks the decay, strength ``p['alpha']`` times :func:`decay_schedule`),
    from ``initial(d)`` ``(L_max, B, d)``, RK4 on the ladder ``p['steps']``, ``p['levels']``
    up to time ``p['T']``. Returns the problem, the record times and the factor records per
    level; cached (the stated forms do not enter)."""
    key = f"{run.claim_id} {stream} {run.seed_for(stream)} {p} {run.dtype} {run.device}"

    def simulate_all():
        problem, _ = default_regression(run.generator("problem"), device=run.device,
                                        dtype=run.dtype)
        W0 = initial(problem.A.shape[1])
        alpha = torch.full((G.size, 1), float(p["alpha"]), dtype=run.dtype, device=run.device)
        is_mode = {m: torch.tensor([[lab["mode"] == m] for lab in G.labels],
                                   device=run.device) for m in MODES}
        flow = ProductFlow(problem.grad, G.q, G.mask, coupled=alpha * is_mode["coupled"],
                           decoupled=alpha * is_mode["decoupled"], schedule=decay_schedule)
        values = ladder(lambda n, every: integrate(flow, W0, dt=p["T"] / n, steps=n,
                                                   record_every=every).values,
                        p["steps"], p["levels"])
        times = torch.linspace(0, p["T"], values[0].shape[0], dtype=run.dtype,
                               device=run.device)
        return problem, times, values

    return cached(key, simulate_all)


def gradient_assumption(run: Run, problem: Regression, W: torch.Tensor, floor: float) -> None:
    """Record whether max_k |g_k| stays above ``floor`` on every record of ``W`` (the entries
    a verdict rests on; q = 1 runs are reported, not verdicted): for q < 2 the flow
    reaches the solution set in finite time, after which a fixed-step scheme chatters around
    it and no step-size expansion exists (the catalogue stops below 1e-6)."""
    smallest = float(problem.grad(W.prod(1)).abs().amax(-1).min())
    run.assume("T ends before the gradient vanishes", smallest >= floor,
               "max_k |g_k(t)| stays above the floor on every record (no chattering phase)",
               f"min_t max_k |g_k| = {smallest:.3g}, floor {floor:g}")


def chattering(problem: Regression, W: torch.Tensor) -> dict[str, int]:
    """Sign changes along the records ``W`` ``(R, L_max, B, d)``: of the first factor and of
    the gradient coordinates (a fixed-step scheme on a discontinuous field chatters)."""
    return {"w_1": int(sign_changes(W[:, 0]).sum()),
            "g": int(sign_changes(problem.grad(W.prod(1))).sum())}


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
    the velocity of x along v (e.g. ``numerics.decayed_limits.product_tangent``); otherwise
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
