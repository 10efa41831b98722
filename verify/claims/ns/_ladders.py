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
from verify import (
    RESOLVED,
    Evidence,
    Route,
    Run,
    Tolerance,
    ladder,
    ladder_compare,
    ladder_tolerance,
    resolved_records,
    undecided,
)

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


#: The trajectories decide only on a resolved window [0, t_r] of at least this fraction of T.
#: The two flows share one velocity field, so a discrepancy in it moves them apart from t = 0
#: on; a tenth of T (ten records of the coarsest rung at full fidelity) still holds the
#: opening transient, where x moves most. A shorter window (a stiff phase from the start) is a
#: run that did not resolve the flow.
MIN_WINDOW = 0.1


@dataclass(frozen=True)
class Window:
    """A parameter-flow/mirror-flow comparison on its resolved window: the evidence, and
    ``short`` (why it decided nothing) when the window is shorter than :data:`MIN_WINDOW` T."""

    evidence: Evidence
    short: str | None


def windowed_flow_compare(quantity: str, x_param: list[torch.Tensor],
                          x_mirror: list[torch.Tensor], *, grad: Callable, q: float,
                          p: dict[str, Any], dtype: torch.dtype, parameters: dict[str, Any]
                          ) -> Window:
    r"""x(t) of the parameter flow against the mirror flow, both on the step-halving ladder
    ``p['steps']``, ``p['levels']`` up to ``p['T']`` (records of one q: ``(R, B, d)``), on
    the window :math:`[0, t_r]` that both ladders resolve (:func:`verify.resolved_records`).

    For q < 2 the drive's slope :math:`(q-1)|g|^{q-2}` is unbounded as a gradient coordinate
    is pinned near 0 (:math:`dg_k/dt = b - c\,\psi_q(g_k)` rests at
    :math:`|g_k| \sim (b/c)^{1/(q-1)}`), which puts RK4's fixed steps past their stability
    limit: from there on the ladders chatter instead of converging, which is no evidence
    either way. The identity is pointwise (one velocity field for both flows), so the flows
    are compared where both ladders resolve them, measured from the ladders themselves (ns.thm4.14,
    issue 19: a stock implicit scheme does not resolve the pinned coordinate either)."""
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    record_dt = p["T"] / p["steps"]
    read_dt = p["T"] / (p["steps"] * 2 ** max(p["levels"] - 3, 0))  # coarsest rung read
    # The window reads the three finest rungs, those the tolerance reads (the finest pair for
    # Richardson, the next for its observed order): RK4's stability limit scales with the
    # step, so a coarser rung chatters earlier and says nothing about the finer ones.
    n = resolved_records([x_param[-3:], x_mirror[-3:]])
    t_r = (n - 1) * record_dt
    xp, xm = [v[:n] for v in x_param], [v[:n] for v in x_mirror]
    scale = float(xp[-1].abs().max())
    tp = ladder_tolerance(xp, dtype=dtype, steps=finest, scale=scale,
                          what="parameter-flow ladder")
    tm = ladder_tolerance(xm, dtype=dtype, steps=finest, scale=scale, what="mirror-flow ladder")
    window = "[0, T]"
    if n < len(x_param[0]):
        # Where the ladders stop resolving: the smallest gradient coordinate there and the
        # drive's slope at it, times the coarsest step read, against RK4's real stability
        # interval h |lambda| < 2.79 (an indication, not the field's Jacobian).
        g_min = float(grad(x_param[-1][n]).abs().min())
        slope = (q - 1) * g_min ** (q - 2)
        window = (f"[0, t_r]: at the next record a step-halving change >= {RESOLVED / 2} x "
                  f"size; there min_k |g_k| = {g_min:.1e}, the drive's slope (q-1)|g|^(q-2) = "
                  f"{slope:.1e}, x the coarsest step read {slope * read_dt:.2g} (RK4's real "
                  f"stability interval: h |lambda| < 2.79)")
    tolerance = Tolerance(tp.value + tm.value, f"({tp.why}) + ({tm.why})")
    parameters = {**parameters, "t_r": t_r, "window": window, "dt": p["T"] / finest}
    if t_r < MIN_WINDOW * p["T"]:
        short = f"q = {q}: resolved only up to t_r = {t_r:.3g} < {MIN_WINDOW} T"
        return Window(undecided(Route.NUMERIC, quantity, short, tolerance=tolerance,
                                parameters=parameters), short)
    return Window(ladder_compare(quantity, stated=xm[-1], measured=xp[-1], tolerance=tolerance,
                                 parameters=parameters), None)


def ran_resolved(run: Run, unresolved: list[str]) -> None:
    """Record that every q's ladders resolved x(t) on at least :data:`MIN_WINDOW` T."""
    run.ran(f"the fixed-step ladders resolve x(t) on at least {MIN_WINDOW} T (no stiff phase "
            f"from the start)", not unresolved,
            "; ".join(unresolved) + " (the drive's slope (q-1)|g|^(q-2) where a gradient "
            "coordinate is pinned near 0 exceeds RK4's stability at these steps)" if unresolved
            else "every q resolved on its window [0, t_r]")
