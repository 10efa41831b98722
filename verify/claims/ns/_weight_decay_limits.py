r"""The limits of the regression's flows under weight decay, shared by ``ns.thm4.14`` and
``ns.x.thm4.14-limit`` (Theorem 4.14, submitted numbering; verify/claims/ns/SOURCES.md §4.15) and
``ns.table1``
(Table 1): the regression and its lasso weight (:func:`problem_for_limits`), gradient flow and
the q = 3/2 flow run to rest by adaptive RK4 (:func:`continuous_limits`, :class:`RestLimit`,
:func:`rest_compare`), sign descent with decay on a learning-rate ladder with its settle phase
(:func:`simulate_sign_ladder`, :func:`sign_settle_time`, :class:`SignLimit`,
:func:`sign_tolerance`), the support threshold and the limit runs' parameters. The shared
runs draw from ``ns.thm4.14``'s random streams (:data:`THM_ID`) and are memoised with
``scope="process"`` under the parameters they depend on, so the claims reuse one simulation.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import sympy as sp
import torch

from numerics.ns.decayed_limits import adaptive_rest, product_tangent, settled_sign_descent
from numerics.ns.steepest_flows import ProductFlow, Regression, default_regression, depth_mask
from numerics.penalised_least_squares import lasso, min_sup_norm
from theory.ns.reparam_balance import A_INT, Q, derive_decoupled_balance
from verify import (
    RESOLVED,
    Evidence,
    Route,
    Run,
    Tolerance,
    compare,
    undecided,
    unit_roundoff,
)

THM_ID = "ns.thm4.14"
THRESHOLD = 1e-3  # support threshold of SOURCES §4.15


#: The parameters each shared simulation depends on (its memo key, process scope: other
#: claims that pass more parameters still share the entry).
PROBLEM_KEYS = ("N", "d", "kappa")
CONTINUOUS_KEYS = (*PROBLEM_KEYS, "init_scale", "dt", "local_tol", "speed_tol_u",
                   "max_steps")
SIGN_KEYS = (*PROBLEM_KEYS, "init_scale", "lr", "T")


def _subset(p: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: p[k] for k in keys}


def _shared(run: Run) -> Run:
    """The same random streams for ns.thm4.14 and ns.x.thm4.14-limit (one simulation)."""
    return dataclasses.replace(run, claim_id=THM_ID)


@dataclasses.dataclass(frozen=True)
class Problem:
    r"""The regression, the lasso weight :math:`w` picked for conditioning, and
    :math:`b_0 = \min\{\|x\|_\infty : Ax = y\}`."""

    regression: Regression
    weight: float
    condition: float
    sup_norm: float
    rate: float


def _lasso_rate(A: torch.Tensor, y: torch.Tensor, weight: float) -> tuple[float, float]:
    r"""Slowest rate of gradient flow on :math:`x = w_1w_2` with decay :math:`w` linearised at
    the lasso point: :math:`w - |g_k|` off the support, the smallest eigenvalue of
    :math:`2|x_S|^{1/2}H_{SS}|x_S|^{1/2}` on it. Returns it and the lasso condition number."""
    x, condition = lasso(A, y, weight)
    N = A.shape[0]
    H = (A.T @ A / N).double()
    g = (H @ x.double() - A.T.double() @ y.double() / N)
    support = x != 0
    off = float((weight - g[~support].abs()).min()) if (~support).any() else math.inf
    s = (2 * x[support].abs().double()).sqrt()
    on = float(torch.linalg.eigvalsh(s[:, None] * H[support][:, support] * s[None]).min())
    return min(off, on), condition


def problem_for_limits(run: Run, p: dict[str, Any]) -> Problem:
    """The regression (sizes of SOURCES §4.0) and, among ``p['kappa']`` x ||grad f(0)||_inf, the
    lasso
    weight whose linearised flow decays fastest (a conditioning choice: it only sets how long
    the flows take to come to rest)."""
    shared = _shared(run)

    def build() -> Problem:
        regression, _ = default_regression(shared.generator("problem"), N=p["N"], d=p["d"],
                                           device=run.device, dtype=run.dtype)
        A, y = regression.A, regression.y
        g0 = float(regression.grad(torch.zeros(1, A.shape[1], dtype=run.dtype,
                                               device=run.device)).abs().max())
        best = max((_lasso_rate(A, y, k * g0) + (k * g0,) for k in p["kappa"]),
                   key=lambda t: t[0])
        return Problem(regression, best[2], best[1], min_sup_norm(A, y), best[0])

    key = (str(_subset(p, PROBLEM_KEYS)), shared.seed_for("problem"))
    return run.memo(f"{THM_ID} problem", build, key=key, scope="process")


@dataclasses.dataclass(frozen=True)
class RestLimit:
    """Limits in x of two adaptive RK4 runs to rest (local tolerances ``tol`` and ``tol/100``,
    so different step sequences), the distance still to travel at the end of the tighter run,
    and its accepted steps."""

    coarse: torch.Tensor
    fine: torch.Tensor
    remaining: float
    steps: int

    def entry(self, b: int) -> RestLimit:
        return RestLimit(self.coarse[b], self.fine[b], self.remaining, self.steps)


def rest_compare(quantity: str, target: torch.Tensor, limit: RestLimit, condition: float,
                 dtype: torch.dtype, parameters: dict[str, Any], *, stated: Any = None
                 ) -> Evidence:
    """A limit (measured) against a KKT solve (derived) and optionally a stated target, within
    :func:`rest_tolerance`. A run that did not come to rest has no limit, and one whose budget
    is not below ``RESOLVED`` x the compared values' size has not resolved it (e.g. float32's
    roundoff floor on the speed): NaN, inconclusive."""
    measured = limit.fine
    if not math.isfinite(limit.remaining):
        measured = torch.full_like(limit.fine, math.nan)
        limit = dataclasses.replace(limit, remaining=0.0)
    tolerance = rest_tolerance(limit, condition, dtype)
    size = max(float(target.abs().max()), float(limit.fine.abs().max()))
    if tolerance.value >= RESOLVED * size:
        measured = torch.full_like(limit.fine, math.nan)
        parameters = {**parameters, "unresolved": f"tolerance {tolerance.value:.1e} >= "
                                                  f"{RESOLVED} x the size {size:.1e}"}
    return compare(Route.NUMERIC, quantity, stated=stated, derived=target, measured=measured,
                   metric="absolute", tolerance=tolerance,
                   parameters={**parameters, "steps": limit.steps})


def rest_tolerance(limit: RestLimit, condition: float, dtype: torch.dtype) -> Tolerance:
    r"""Error budget of a limit against a KKT solve: 2 x the gap between the two runs (a
    different step sequence must not change the limit), 2 x the distance still to travel
    (:math:`v/\kappa` from the last steps; doubled because a faster mode left in the tail
    makes the measured rate too large), the solve's :math:`4\kappa u` x scale and the run's
    :math:`8nu` x scale."""
    u = unit_roundoff(dtype)
    scale = float(limit.fine.abs().max())
    gap = 2 * float((limit.coarse - limit.fine).abs().max())
    remaining = 2 * limit.remaining
    solve, floor = 4 * condition * u * scale, 8 * limit.steps * u * scale
    return Tolerance(gap + remaining + solve + floor,
                     f"2 x gap of two step sequences {gap:.1e} + 2 x distance left "
                     f"{remaining:.1e} + KKT solve 4 kappa u scale {solve:.1e} (kappa = "
                     f"{condition:.1e}) + roundoff 8 n u scale {floor:.1e}")


def continuous_limits(run: Run, p: dict[str, Any]) -> tuple[Problem, list[dict], RestLimit]:
    r"""Adaptive RK4 to rest from a random start (scale ``init_scale``, random signs),
    decoupled decay: q = 2, L = 2 with :math:`\alpha = w` and q = 3/2, L = 3 with
    :math:`\alpha = w^{q-1}` (the same lasso point under reading 2)."""
    problem = problem_for_limits(run, p)
    shared = _shared(run)
    cells = [{"q": 2.0, "L": 2, "alpha": problem.weight},
             {"q": 1.5, "L": 3, "alpha": problem.weight ** 0.5}]

    def simulate() -> RestLimit:
        mask = depth_mask(torch.tensor([c["L"] for c in cells]), 3, dtype=run.dtype,
                          device=run.device)
        q = torch.tensor([[c["q"]] for c in cells], dtype=run.dtype, device=run.device)
        alpha = torch.tensor([[c["alpha"]] for c in cells], dtype=run.dtype, device=run.device)
        d = problem.regression.A.shape[1]
        W0 = p["init_scale"] * torch.randn(3, len(cells), d, dtype=torch.float64,
                                           generator=shared.generator("continuous start"))
        W0 = torch.where(mask > 0, W0.to(run.device, run.dtype), torch.ones((), dtype=run.dtype))
        flow = ProductFlow(problem.regression.grad, q, mask, decoupled=alpha)
        runs = [adaptive_rest(flow, W0, lambda W: W.prod(0), dt=p["dt"], tol=tol,
                              speed_tol=p["speed_tol_u"] * unit_roundoff(run.dtype),
                              max_steps=p["max_steps"], tangent=product_tangent)
                for tol in (p["local_tol"], p["local_tol"] / 100)]
        return RestLimit(runs[0].final.prod(0), runs[1].final.prod(0), runs[1].remaining,
                         runs[1].accepted)

    key = (str(_subset(p, CONTINUOUS_KEYS)), shared.seed_for("continuous start"))
    return problem, cells, run.memo(f"{THM_ID} continuous", simulate, key=key, scope="process")


@dataclasses.dataclass(frozen=True)
class SignLimit:
    """Sign-descent limits at lr and lr/2 (``x``, ``g`` = grad f: lists of ``(B, d)``) for the
    ``cells`` (dicts with ``L``, ``coupled``, ``decoupled``), and the time spent at each
    dropped rate (``settle``; None where the caller does not record it)."""

    cells: list[dict[str, Any]]
    x: list[torch.Tensor]
    g: list[torch.Tensor]
    steps: int
    settle: float | None = None


#: The learning-rate drop at the end of a sign-descent run (SOURCES §4.15: lr / 10).
SIGN_DROP = 10.0


def sign_settle_time(run: Run, cells: list[dict[str, Any]]) -> float:
    r"""Time spent at the dropped rate: :math:`2\ln(\text{drop})/(r\,\alpha_{min})`, with
    :math:`r` the rate at which decoupled decay shrinks the balance offsets at q = 1
    (ns.lemma4.4: :math:`e^{-qA}`, :math:`A = \alpha t`, read from the derivation) and
    :math:`\alpha_{min}` the weakest decoupled decay among the cells with a box (``radius``).
    The first half shrinks the coarse rate's O(lr) offsets by the drop factor, to the fine band;
    the second half is averaged (:func:`numerics.ns.decayed_limits.settled_sign_descent`). The
    "last 20% of the steps at lr / 10" of SOURCES §4.15 is 0.02 T time units (0.2 quick, 0.4 full)
    against the 1.8 (quick) and 1.4 (full) this rule gives: the run ended mid-relaxation and the
    ladder compared two chattering phases (ns.table1's finding; the same rule as its
    ``settle_time``)."""
    factor = run.derivation(derive_decoupled_balance(2)).result
    rate = float((-sp.diff(sp.log(factor), A_INT)).subs(Q, 1))
    alphas = [c["decoupled"] for c in cells if "radius" in c]
    if not alphas or min(alphas) <= 0:
        raise ValueError(f"cells: need a cell with a box radius and decoupled decay > 0, "
                         f"got {cells}")
    return 2 * math.log(SIGN_DROP) / (rate * min(alphas))


def simulate_sign_ladder(problem: Problem, cells: list[dict[str, Any]], p: dict[str, Any],
                         generator: torch.Generator, settle: float, *, dtype: torch.dtype,
                         device: torch.device) -> SignLimit:
    r"""Sign descent (q = 1) with coupled and/or decoupled decay per cell (AdamW or Adam + L2
    with :math:`\beta_1 = \beta_2 = 0`, :math:`\epsilon = 0`) from a random start of scale
    ``init_scale``: ``T / lr`` steps at lr and a settle phase of ``settle`` time units
    (:func:`sign_settle_time`) at lr / 10, then as many steps at lr/2 from there and a settle
    phase at lr/20. ``x`` holds the settle phases' averaged iterates (the time average of the
    chattering is the sliding point up to an O(lr) bias the ladder bounds; a last iterate has a
    random chattering phase). Shared by ns.thm4.14 and ns.table1."""
    L_max = max(c["L"] for c in cells)
    mask = depth_mask(torch.tensor([c["L"] for c in cells]), L_max, dtype=dtype, device=device)
    q = torch.ones(len(cells), 1, dtype=dtype, device=device)
    decays = {name: torch.tensor([[c.get(name, 0.0)] for c in cells], dtype=dtype,
                                 device=device) for name in ("coupled", "decoupled")}
    d = problem.regression.A.shape[1]
    W0 = p["init_scale"] * torch.randn(L_max, len(cells), d, dtype=torch.float64,
                                       generator=generator)
    W0 = torch.where(mask > 0, W0.to(device, dtype), torch.ones((), dtype=dtype))
    flow = ProductFlow(problem.regression.grad, q, mask, **decays)
    steps = round(p["T"] / p["lr"])
    coarse = settled_sign_descent(flow, W0, lr=p["lr"], steps=steps, drop=SIGN_DROP,
                                  settle_time=settle)
    # The lr/2 run continues from the lr run: sign descent can stall at different
    # stationary points from one start (e.g. balanced factors chattering at a zero
    # coordinate), and the ladder must compare one point's chattering at two step sizes.
    fine = settled_sign_descent(flow, coarse.final, lr=p["lr"] / 2, steps=steps,
                                drop=SIGN_DROP, settle_time=settle)
    xs = [coarse.mean_x, fine.mean_x]
    return SignLimit(cells, xs, [problem.regression.grad(x) for x in xs],
                     coarse.steps + fine.steps, settle)


def sign_tolerance(limit: SignLimit, b: int, dtype: torch.dtype, solve_scale: float
                   ) -> Tolerance:
    r"""Error budget of the lr/2 limit's gradient: 2 x first-order Richardson
    :math:`\max|g_{lr} - g_{lr/2}|` (chattering of sign descent is O(lr)), the solver's
    roundoff :math:`4\kappa u` x scale and the run's :math:`8nu` x scale."""
    u = unit_roundoff(dtype)
    richardson = 2 * float((limit.g[0][b] - limit.g[1][b]).abs().max())
    scale = float(limit.g[1][b].abs().max()) + solve_scale
    floor = 8 * limit.steps * u * scale + 4 * solve_scale * u
    return Tolerance(richardson + floor,
                     f"2 x |g(lr) - g(lr/2)| = {richardson:.1e} (chattering, O(lr)) + roundoff "
                     f"{floor:.1e}")


def box_limit_compare(quantity: str, limit: SignLimit, b: int, *, derived: torch.Tensor,
                      dtype: torch.dtype, parameters: dict[str, Any], stated: Any = None
                      ) -> Evidence:
    r"""grad f at entry ``b``'s sign-descent limit (measured) against grad f at the box
    solution (derived), within :func:`sign_tolerance`; undecided where the run stalled at a
    saddle. On the box :math:`\|x\|_\infty \le r` a coordinate with :math:`|x_k| < r` has
    :math:`g_k = 0` (KKT), so a limit coordinate at 0 (below :data:`THRESHOLD`) with
    :math:`|g_k|` beyond the tolerance is no box point: it is the saddle :math:`x_k = 0`
    with both factors at 0 (ns.thm4.3), where AdamW's factors chatter as a period-2 cycle
    of amplitude O(lr) that a smaller lr does not remove (ns.table1 at lr = 0.05: 3
    coordinates, err 5.8e-3 at lr and lr/2 alike). The flow leaves it; the discrete run
    measures a stall, not the flow's limit."""
    tolerance = sign_tolerance(limit, b, dtype, float(derived.abs().max()))
    x, g = limit.x[1][b], limit.g[1][b]
    stalled = (x.abs() <= THRESHOLD) & (g.abs() > tolerance.value)
    if bool(stalled.any()):
        return undecided(Route.NUMERIC, quantity,
                         f"the run stalled at the saddle x_k = 0 on {int(stalled.sum())} "
                         f"coordinate(s) (max |g_k| there {float(g[stalled].abs().max()):.1e}): "
                         f"a stall of the discrete run, not the flow's limit; another start "
                         f"or lr would decide", tolerance=tolerance,
                         parameters={**parameters, "stalled coordinates": int(stalled.sum())})
    return compare(Route.NUMERIC, quantity, stated=stated, derived=derived, measured=g,
                   metric="absolute", tolerance=tolerance, parameters=parameters)


LIMITS_QUICK = {"N": 10, "d": 20, "kappa": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8], "init_scale": 0.5,
                "dt": 0.5, "local_tol": 1e-6, "speed_tol_u": 5000, "max_steps": 20000,
                "box_fraction": 0.5, "lr": 0.02, "T": 10.0}
LIMITS_FULL = {"N": 25, "d": 50, "kappa": [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
               "init_scale": 0.5, "dt": 0.5, "local_tol": 1e-9, "speed_tol_u": 500,
               "max_steps": 200000, "box_fraction": 0.5, "lr": 0.002, "T": 20.0}
