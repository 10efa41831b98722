r"""Shared pieces of the Never Saddle claims: batched (q, L) grids, the regression problem's
parameter flow on a step-halving ladder (with time-varying weight decay), and what a run on it
must show (the gradient stays away from zero; how much the fixed-step scheme chatters).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from numerics.integrators import integrate
from numerics.ns.steepest_flows import (
    ProductFlow,
    Regression,
    default_regression,
    depth_mask,
)
from numerics.step_studies import sign_changes
from verify import Run, ladder

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
    """The parameter flow on the default regression problem (verify/claims/ns/SOURCES.md §4.0) for
    every entry of ``G``
    (label ``mode`` picks the decay, strength ``p['alpha']`` times :func:`decay_schedule`),
    from ``initial(d)`` ``(L_max, B, d)``, RK4 on the ladder ``p['steps']``, ``p['levels']``
    up to time ``p['T']``. Returns the problem, the record times and the factor records per
    level; memoised (the stated forms do not enter)."""

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

    return run.memo("regression ladder", simulate_all, key=stream)


def gradient_assumption(run: Run, problem: Regression, W: torch.Tensor, floor: float) -> None:
    """Record whether max_k |g_k| stays above ``floor`` on every record of ``W`` (the entries
    a verdict rests on; q = 1 runs are reported, not verdicted): for q < 2 the flow
    reaches the solution set in finite time, after which a fixed-step scheme chatters around
    it and no step-size expansion exists (SOURCES §4.0 stops below 1e-6)."""
    smallest = float(problem.grad(W.prod(1)).abs().amax(-1).min())
    run.assume("T ends before the gradient vanishes", smallest >= floor,
               "max_k |g_k(t)| stays above the floor on every record (no chattering phase)",
               f"min_t max_k |g_k| = {smallest:.3g}, floor {floor:g}")


def chattering(problem: Regression, W: torch.Tensor) -> dict[str, int]:
    """Sign changes along the records ``W`` ``(R, L_max, B, d)``: of the first factor and of
    the gradient coordinates (a fixed-step scheme on a discontinuous field chatters)."""
    return {"w_1": int(sign_changes(W[:, 0]).sum()),
            "g": int(sign_changes(problem.grad(W.prod(1))).sum())}
