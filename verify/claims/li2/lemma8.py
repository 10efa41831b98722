r"""li2.lemma8: Lemma 8 (App. B.3), the dynamics of Eq. 10: under :math:`\dot\alpha_j =
\mu_j\alpha_j^2` (interior) or its projection onto the sphere, the ratios :math:`r_i/r_k`,
:math:`r_j = \mu_j\alpha_j`, are monotone and the flow converges to
:math:`\boldsymbol\zeta_{l^\ast}`, :math:`l^\ast = \arg\max_l\mu_l\alpha_l(0)`: the initial
leader wins.

Routes: the paper's priority :math:`r_l = \mu_l\alpha_l` (stated); sympy's solution of the
interior flow, whose blow-up time is :math:`1/(\mu\alpha_0)` (the first coordinate to blow up
fixes the direction), and :math:`\frac{d}{dt}\log(\alpha_i/\alpha_k)` on the interior and the
projected flows (derived); RK4 and Heun on the projected flow from Fréchet initial conditions,
the winner at the end and the sign of every increment of :math:`\log(r_i/r_k)` along the way,
with the step-halving difference as the integrator's error (measured). Near-ties (top two
priorities within a relative ``margin``, by the derived priority) are excluded and counted.

Cost at full fidelity (20000 trials, 10 modes, t = 4000, three runs of 16000-32000 steps): a
trial stops being stepped once it sits at its vertex with every other coordinate below
sqrt(tiny), where nothing the check reads changes any more
(:func:`numerics.integrators.integrate_settling`), and the pairwise increments
``(records, trials, L, L)``, ~4 GB per array, are taken a slice of records at a time.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import sympy as sp
import torch

from numerics.integrators import integrate_settling
from numerics.li2.muon_dynamics import gradient_field, initial_nodes
from theory.derivation import Derivation
from theory.li2.muon_dynamics import (
    alpha0,
    derive_interior_solution,
    derive_log_ratio_rates,
    mu0,
)
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    ladder_tolerance,
    register,
    symbolic_identity,
)
from verify.claims.li2 import PAPER


def stated_priority(mu: Any, alpha: Any) -> Any:
    r"""Lemma 8: :math:`r_l = \mu_l\alpha_l`; the winner is :math:`\arg\max_lr_l(0)` and the
    ratios :math:`r_i/r_k` keep the order of :math:`r(0)`."""
    return mu * alpha


def coefficient_priority(mu: Any, alpha: Any) -> Any:
    r"""Planted error: the largest initial coefficient :math:`\alpha_l(0)` wins
    (:math:`\mu` ignored)."""
    return alpha + 0 * mu


@cache
def _interior_solution() -> Derivation:
    """:func:`derive_interior_solution`, once per process (pure; the control's run reuses it)."""
    return derive_interior_solution()


@cache
def _log_ratio_rates(L: int, projected: bool) -> Derivation:
    """:func:`derive_log_ratio_rates`, once per ``(L, projected)``."""
    return derive_log_ratio_rates(L, projected)


@cache
def _identity(quantity: str, stated: Any, derived: Any, L: int | None) -> Evidence:
    """:func:`symbolic_identity` memoised on its (hashable, exact) inputs."""
    return symbolic_identity(quantity, stated=stated, derived=derived,
                             parameters={} if L is None else {"L": L})


def _symbolic(run: Run) -> Iterator[Evidence]:
    priority = run.stated["priority"]
    _, blow_up = run.derivation(_interior_solution()).result
    yield _identity("interior flow: 1 / (blow-up time of alpha(t)) vs r(0)",
                    priority(mu0, alpha0), 1 / blow_up, None)
    L = run.params["symbolic_L"]
    for projected in (False, True):
        rates, alpha, mu = run.derivation(_log_ratio_rates(L, projected)).result
        r = [priority(m, x) for m, x in zip(mu, alpha)]
        where = "sphere (projected)" if projected else "interior"
        stated = sp.ImmutableMatrix(L, L, lambda i, k, r=r: r[i] - r[k])
        yield _identity(f"{where} flow: d/dt log(alpha_i/alpha_k) vs r_i - r_k, all pairs",
                        stated, sp.ImmutableMatrix(rates), L)


@cache
def _priority_function() -> Callable[[Any, Any], Any]:
    """The derived priority 1 / (blow-up time) as a numeric function of (mu, alpha_0)."""
    _, blow_up = _interior_solution().result
    return sp.lambdify((mu0, alpha0), 1 / blow_up, modules="math")


def derived_priority(mu: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """1 / (blow-up time) of each coordinate's interior flow, from the sympy solution."""
    return _priority_function()(mu, alpha)


def _simulate(run: Run) -> dict[str, Any]:
    """Initial conditions, near-tie exclusion (derived priority) and the three runs; memoised
    because the stated forms do not enter."""
    p = run.params

    def compute() -> dict[str, Any]:
        mu = torch.tensor(p["mu"], dtype=run.dtype, device=run.device)
        alpha = initial_nodes(p["trials"], mu, p["a"], run.generator("flows"))
        top2 = derived_priority(mu, alpha).topk(2, dim=-1).values
        kept = (1 - top2[:, 1] / top2[:, 0]) >= p["margin"]
        alpha = alpha[kept]
        steps, field = p["steps"], gradient_field(mu)
        dt = p["time"] / steps
        floor = _floor(run.dtype)

        def settled(alpha: torch.Tensor) -> torch.Tensor:
            # At a vertex up to coordinates below the floor: those only decay further
            # (rate ~ mu of the winner), the increments ignore them, and the winner stays
            # 1 to the last bit, so stepping the trial on changes nothing the check reads.
            return (alpha >= floor).sum(-1) <= 1

        runs = {name: integrate_settling(field, alpha, dt=dt / k, steps=steps * k,
                                         method=method, record_every=k * p["record_every"],
                                         settled=settled)
                for name, method, k in (("rk4 dt", "rk4", 1), ("rk4 dt/2", "rk4", 2),
                                        ("heun dt/2", "heun", 2))}
        return {"mu": mu, "alpha0": alpha, "excluded": int((~kept).sum()), "runs": runs,
                "dt": dt}

    return run.memo("flows", compute)


def _winners(run: Run, sim: dict[str, Any], name: str) -> tuple[torch.Tensor, int]:
    """The argmax coordinate at the end of run ``name``; NaN where no coordinate has reached
    ``level`` (not resolved: the comparison is then inconclusive, not passed)."""
    top, winner = sim["runs"][name].final.max(-1)
    resolved = top >= run.params["level"]
    return torch.where(resolved, winner.to(run.dtype), math.nan), int((~resolved).sum())


def _floor(dtype: torch.dtype) -> float:
    """sqrt(tiny): below it the logarithms of the coordinates lose their precision."""
    return torch.finfo(dtype).tiny ** 0.5


def _coordinate_logs(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log alpha at the records ``(R, B, L)`` and where alpha is at least :func:`_floor`."""
    logs = values.clamp_min(torch.finfo(values.dtype).tiny).log()
    return logs, values >= _floor(values.dtype)


#: Record intervals per slice of the pairwise increments ``(R-1, B, L, L)``: at full
#: fidelity the whole array is ~4 GB per tensor; a slice is ~0.1 GB.
SLICE = 8


def _pair_increments(logs: torch.Tensor, ok: torch.Tensor
                     ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Increments of log(alpha_i/alpha_k) between records ``(S, B, L, L)``, slice by slice
    of the record intervals, and where both coordinates are ``ok`` at both records."""
    for start in range(0, logs.shape[0] - 1, SLICE):
        part, fine = logs[start:start + SLICE + 1], ok[start:start + SLICE + 1]
        ratio = part[..., :, None] - part[..., None, :]
        valid = fine[..., :, None] & fine[..., None, :]
        yield ratio.diff(dim=0), valid[1:] & valid[:-1]


def _increments(run: Run) -> tuple[torch.Tensor, torch.Tensor, Tolerance]:
    """log alpha on the fine run, where the coordinates are valid on both runs, and the
    step-halving tolerance of the increments of log(alpha_i/alpha_k); memoised (the stated
    forms do not enter)."""
    p = run.params

    def compute() -> tuple[torch.Tensor, torch.Tensor, Tolerance]:
        sim = _simulate(run)
        (coarse, ok_coarse), (fine, ok_fine) = (_coordinate_logs(sim["runs"][k].values)
                                                for k in ("rk4 dt", "rk4 dt/2"))
        ok = ok_coarse & ok_fine
        # RK4 keeps each coordinate to a relative error that grows ~ u per step, i.e. an
        # absolute error ~ u per step in its logarithm: the roundoff floor's scale is 1.
        # Per slice, the floor is the same and the Richardson term is the slice's maximum:
        # the largest slice tolerance is the whole ladder's.
        tolerance = max((ladder_tolerance([torch.where(valid, d_coarse, 0.0),
                                           torch.where(valid, d_fine, 0.0)],
                                          dtype=run.dtype, steps=2 * p["steps"], scale=1.0,
                                          what="increments of log(alpha_i/alpha_k) between "
                                               "records")
                         for (d_coarse, valid), (d_fine, _) in zip(_pair_increments(coarse, ok),
                                                                   _pair_increments(fine, ok))),
                        key=lambda t: t.value)
        return fine, ok, tolerance

    return run.memo("increments", compute)


def _numeric(run: Run) -> Iterator[Evidence]:
    p = run.params
    sim = _simulate(run)
    mu, alpha = sim["mu"], sim["alpha0"]
    run.figure("near-ties excluded (relative gap of the top two priorities < margin)",
               {"excluded": sim["excluded"], "kept": alpha.shape[0], "margin": p["margin"]})
    priority = run.stated["priority"](mu, alpha)
    stated = priority.argmax(-1).to(run.dtype)
    derived = derived_priority(mu, alpha).argmax(-1).to(run.dtype)
    parameters = {"trials": alpha.shape[0], "mu": p["mu"], "a": p["a"], "time": p["time"],
                  "level": p["level"]}
    exact = Tolerance(0.0, "winners are integer labels: they agree or they do not")
    for name in ("rk4 dt/2", "heun dt/2"):
        measured, unresolved = _winners(run, sim, name)
        run.figure(f"{name}: trials not within level of a vertex at the end", unresolved)
        yield compare(Route.NUMERIC, f"winner: argmax r(0) vs first blow-up vs {name} end "
                                     f"point", stated=stated, derived=derived,
                      measured=measured, metric="absolute", tolerance=exact,
                      parameters={**parameters, "dt": sim["dt"] / 2})

    logs, ok, tolerance = _increments(run)
    direction = torch.sign(priority[:, :, None] - priority[:, None, :])
    violation = torch.zeros((), dtype=run.dtype, device=run.device)
    smallest, pairs = math.inf, 0
    for d_fine, valid in _pair_increments(logs, ok):
        violation = torch.maximum(violation, torch.where(valid, (-direction * d_fine)
                                                         .clamp_min(0), 0.0).amax())
        smallest = min(smallest, float(torch.where(valid, direction * d_fine, math.inf).amin()))
        pairs += int(valid.sum())
    run.figure("smallest increment of log(r_i/r_k) against the order of r(0)", smallest)
    yield compare(Route.NUMERIC, "largest decrease of r_i/r_k (i ahead of k at t=0) between "
                                 "records", stated=torch.zeros(()), measured=violation,
                  metric="absolute", tolerance=tolerance,
                  parameters={**parameters, "records": logs.shape[0], "pairs_checked": pairs})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _numeric(run)


_MU = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
#: Stress: the priorities mu (L = 2 to 10; the last two reach mu > 1, beyond Thm. 8's
#: mu_l <= 1, which the lemma's argument does not use).
_STRESS_MU = ([1.0, 0.5], [1.0, 0.9, 0.8], _MU, [1.0, 1.0, 0.7, 0.4],
              [1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2], [2.0, 1.5, 1.0, 0.5],
              [3.0, 1.0, 0.3])

CLAIM = register(Claim(
    id="li2.lemma8",
    paper=PAPER,
    kind="lemma",
    title="Eq. 10 dynamics: ratios mu_i alpha_i / mu_k alpha_k are monotone and the initial "
          "leader wins",
    source="Lemma 8, App. B.3 (used by Thm. 8)",
    statement=r"\dot\alpha_j=\mu_j\alpha_j^2\ (\text{or its projection onto the sphere}):\ "
              r"r_i/r_k\ \text{monotone},\ r_j=\mu_j\alpha_j;\ \mathbf w\to"
              r"\boldsymbol\zeta_{l^\ast},\ l^\ast=\arg\max_l\mu_l\alpha_l(0)",
    reading=r"\alpha_l(0)>0 (Thm. 8's Fr\'echet draws), \mu_l\in(0,1]; the projected flow is "
            r"\dot{\boldsymbol\alpha}=\mathbf g-\boldsymbol\alpha\langle\boldsymbol\alpha,"
            r"\mathbf g\rangle/\|\boldsymbol\alpha\|^2, g_l=\mu_l\alpha_l^2, from the unit "
            r"sphere. 'Monotone': r_i/r_k never decreases when r_i(0)>r_k(0). 'Converges to "
            r"\zeta_{l^\ast}': \alpha_{l^\ast}\ge level at the end (interior: the direction "
            r"of the flow as the first coordinate blows up). Near-ties are excluded.",
    parameters={
        # Quick: every kept trial is within level of its vertex by t = 16 (seed 0), so t = 60
        # (dt = 0.25 as at full fidelity) covers the whole transient; a trial that has not
        # arrived by the end is NaN (inconclusive), never a pass. Records every 1 time unit.
        "quick": {"symbolic_L": 3, "mu": _MU, "a": 2.0, "trials": 2000, "margin": 0.05,
                  "time": 60.0, "steps": 240, "record_every": 4, "level": 1 - 1e-3},
        "full": {"symbolic_L": 4, "mu": [1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2],
                 "a": 1.5, "trials": 20000, "margin": 0.02, "time": 4000.0, "steps": 16000,
                 "record_every": 64, "level": 1 - 1e-4},
    },
    stated={"priority": stated_priority},
    check=check,
    control=NegativeControl("the largest initial coefficient alpha_l(0) wins (mu ignored)",
                            {"priority": coefficient_priority}),
    assumptions=(Assumption("0 < mu <= 1", "Thm. 8's assumption 2 (mu_l <= 1), mu_l > 0",
                            lambda p: all(0 < m <= 1 for m in p["mu"])),
                 Assumption("a > 1", "Thm. 8's assumption 3 on the Frechet shape",
                            lambda p: p["a"] > 1)),
    space={"mu": Choice(_STRESS_MU), "a": LogUniform(0.5, 4.0), "seed": SEED},
))
