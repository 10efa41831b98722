r"""ns.cor4.12: when is :math:`R_{L_p,L}` a valid Bregman (Legendre) function, in terms of
:math:`q`, :math:`L` and the metric exponent :math:`m` (Corollary 4.12, submitted numbering;
later Corollary 4.14, the conditions stated separately for GF and SignGF;
verify/claims/ns/SOURCES.md
§4.12 and §7 questions 1 and 8). ns.cor4.11 holds the explicit potential at zero balance.

Routes: the toolkit's reading of the condition (stated: valid iff :math:`m = q(L-1)/L \le 1`);
sympy's Legendre analysis of the derived :math:`\nabla R = \tfrac1q\int P(u)^{1/q-1}du` for
each :math:`(q, L)` and balance, the depth at which :math:`\nabla R` stops being onto, and the
finite-time blow-up :math:`T^\star` under a gradient of fixed sign (derived); the parameter flow
on :math:`f(x) = -Gx` integrated through its blow-up by a time change (RK4 on a step-halving
ladder), whose clock gives the blow-up time, whether the clock converges, and the hitting
times of the valid cases (measured). The regression runs (an objective bounded below) are
reported as figures.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import sympy as sp
import torch
from scipy.integrate import quad

from numerics.errors import Diverged
from numerics.integrators import integrate
from numerics.ns.blow_up import balanced_start, clock_increment_ratio
from numerics.ns.steepest_flows import (
    ProductFlow,
    ProductInverseMetric,
    default_regression,
)
from numerics.step_studies import richardson_error
from theory.ns.legendre import (
    BALANCES,
    LAMBDA,
    X0,
    derive_depth_threshold,
    derive_legendre_case,
)
from theory.ns.metric_exponent import DEPTH
from theory.ns.reparam_balance import Q, U
from verify import (
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    compare_cases,
    order_evidence,
    register,
    roundoff_floors,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._fixed_sign_flow import fixed_sign_grid, fixed_sign_ladder
from verify.claims.ns._ladders import Grid
from verify.claims.ns._metric_exponent import stated_metric_exponent
from verify.claims.ns._scope import depth_scope, exponent_scope


def stated_valid(m):
    r"""The condition (toolkit's reading of Cor. 4.12 / later Cor. 4.14): :math:`R_{L_p,L}` is
    a valid Bregman function iff :math:`m \le 1`; with :math:`m = q(L-1)/L` this is
    :math:`L \le q/(q-1)`: GF (:math:`q = 2`) for :math:`L \le 2`, SignGF (:math:`q = 1`) for
    every depth."""
    return m <= 1


def strict_valid(m):
    r"""Planted error (a wrong depth threshold): valid iff :math:`m < 1`, which would exclude
    GF at :math:`L = 2` (the entropy-like case :math:`m = 1`)."""
    return m < 1


def _case(label: dict[str, Any]):
    return derive_legendre_case(sp.nsimplify(label["q"]), int(label["L"]),
                                label["balance"]).result


# --- symbolic ------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    metric_exponent, valid = run.stated["metric_exponent"], run.stated["valid"]
    threshold = run.derivation(derive_depth_threshold()).result
    (stated_depth,) = sp.solve(sp.Eq(metric_exponent(Q, DEPTH), 1), DEPTH)
    yield symbolic_identity("depth at which grad R stops being onto: solve m(q, L) = 1 vs the "
                            "zero of the integrand's excess power at infinity",
                            stated=stated_depth, derived=threshold.depth,
                            parameters={"q": "symbolic, > 1", "L": "symbolic"})
    p = run.params["legendre"]
    stated, derived, table = [], [], {}
    for q in p["q"]:
        for L in p["L"]:
            for balance in BALANCES:
                case = run.derivation(derive_legendre_case(sp.nsimplify(q), L, balance)).result
                stated.append(sp.Integer(int(bool(valid(metric_exponent(sp.nsimplify(q),
                                                                        sp.Integer(L)))))))
                derived.append(sp.Integer(int(case.valid)))
                table[f"q={q}, L={L}, {balance}"] = (
                    f"m={case.m}; interior {case.interior}; strictly convex "
                    f"{case.strictly_convex}; essentially smooth {case.essentially_smooth}; "
                    f"grad R onto {case.onto}; G^(q-1) T* = {case.blow_up}")
    run.figure("Legendre analysis per (q, L, balance) (derived)", table)
    yield symbolic_identity("valid Bregman function (1) or not (0): the condition on m vs the "
                            "derived Legendre analysis (strictly convex, essentially smooth, "
                            "grad R onto R)", stated=sp.Matrix(stated), derived=sp.Matrix(derived),
                            parameters={"q": p["q"], "L": p["L"], "balance": list(BALANCES)})


# --- dynamics on f(x) = -G x ---------------------------------------------------------------

def _derived_hitting_time(case, u_start: float, u_end: float, lam: float, G: float
                          ) -> tuple[float, float]:
    r""":math:`G^{1-q}\int_{u_0}^{u_1}` of the derived integrand (quadrature; below
    :math:`\lambda` in :math:`u`, above it in :math:`\log u`). Returns (time, error estimate)."""
    f = sp.lambdify((U, LAMBDA), case.integrand, modules="math")
    scale = G ** (1 - float(case.q))
    value, error = 0.0, 0.0
    lower = u_start
    if lower < lam:
        part, err = quad(lambda u: f(u, lam), lower, min(lam, u_end), epsabs=0, epsrel=1e-12,
                         limit=200)
        value, error, lower = value + part, error + err, min(lam, u_end)
    if u_end > lower:
        part, err = quad(lambda s: f(math.exp(s), lam) * math.exp(s), math.log(lower),
                         math.log(u_end), epsabs=0, epsrel=1e-12, limit=200)
        value, error = value + part, error + err
    return scale * value, scale * error


def _dynamics(run: Run) -> Iterator[Evidence]:
    p = run.params["dynamics"]
    G = fixed_sign_grid({"q": p["q"], "L": p["L"], "balance": BALANCES}, run)
    levels = fixed_sign_ladder(run, G, p)
    clocks = [v[:, -1, :, 0] for v in levels]  # (R, B)
    finest = clocks[-1]
    x_end = levels[-1][-1, :-1].prod(0)[:, 0]
    cases = [_case(lab) for lab in G.labels]
    lam = float(p["a"]) ** G.q[:, 0]

    metric_exponent, valid = run.stated["metric_exponent"], run.stated["valid"]
    stated_blow = np.array([float(not bool(valid(metric_exponent(lab["q"], lab["L"]))))
                            for lab in G.labels])
    derived_blow = np.array([float(c.blow_up is not None) for c in cases])
    span = (finest.shape[0] - 1) // 3
    ratio = clock_increment_ratio(finest, span)
    # A converging clock (blow-up) has increments shrinking geometrically in tau; one that
    # does not converge has non-shrinking increments (ratio >= 1). 1/2 splits the two.
    measured_blow = (ratio < 0.5).to(torch.float64)
    run.figure("clock increment ratio (t_N - t_(N-k)) / (t_(N-k) - t_(N-2k)) per (q, L, "
               "balance)", {f"q={lab['q']}, L={lab['L']}, {lab['balance']}": float(r)
                            for lab, r in zip(G.labels, ratio)})
    yield compare(Route.PROPERTY, "finite-time blow-up of |x| under f = -G x: m > 1 (stated "
                  "condition fails) vs sup grad R < oo (derived) vs the simulated clock "
                  "converges (measured)", stated=stated_blow, derived=derived_blow,
                  measured=measured_blow, metric="absolute",
                  tolerance=Tolerance(0.0, "0/1 indicators: every case must agree"),
                  parameters={"q": p["q"], "L": p["L"], "balance": list(BALANCES),
                              "tau": p["tau"], "span": span})

    blow = [b for b, c in enumerate(cases) if c.blow_up is not None]
    if blow:  # a (q, L) grid of valid cases only has no blow-up time to compare
        yield from _blow_up_times(run, G, cases, clocks, lam, blow, p)
    yield from _hitting_times(run, G, cases, clocks, x_end, lam, p)


def _blow_up_times(run: Run, G: Grid, cases, clocks: list[torch.Tensor], lam: torch.Tensor,
                   blow: list[int], p: dict[str, Any]) -> Iterator[Evidence]:
    """The cases that blow up: the derived T* against the simulated clock, and RK4's order."""
    finest = clocks[-1]
    t_star = []
    for b in blow:
        value = cases[b].blow_up.subs({LAMBDA: sp.Float(float(lam[b]), 30),
                                       X0: sp.Float(float(p["a"]) ** G.labels[b]["L"], 30)})
        t_star.append(float(value) * float(p["G"]) ** (1 - G.labels[b]["q"]))
    budget = []
    for k, b in enumerate(blow):
        estimate = _richardson_at_measured_order([c[-1, b] for c in clocks])
        tail = float(finest[-1, b] - finest[-2, b])
        budget.append((estimate + tail + 8 * p["steps"] * 2 ** (p["levels"] - 1)
                       * unit_roundoff(run.dtype) * t_star[k]) / t_star[k])
    relative = p["relative_tolerance"]
    run.assume("blow-up resolved", max(budget) < relative,
               "Richardson error (at the measured order) + the clock's last increment + "
               "roundoff, relative to T*, stays below the tolerance",
               f"largest budget {max(budget):.2e} vs tolerance {relative:g}")
    yield compare_cases(Route.NUMERIC, "blow-up time: derived T* = (sup grad R - grad R(x_0)) "
                        "/ G^(q-1) vs the simulated clock at the end", [
                            ({"q": G.labels[b]["q"], "L": G.labels[b]["L"],
                              "balance": G.labels[b]["balance"]}, t_star[k],
                             float(finest[-1, b])) for k, b in enumerate(blow)],
                        names=("derived", "measured"),
                        tolerance=Tolerance(relative, "SOURCES §4.12: relative 1e-3; the "
                                            "numerical budget is checked below it (assumption "
                                            "'blow-up resolved')"),
                        parameters={"a": p["a"], "G": p["G"], "tau": p["tau"],
                                    "steps": p["steps"], "levels": p["levels"]})
    # Differences of consecutive levels (the unreached tail of the clock, the same at every
    # level, cancels); the field is smooth for q = 2 and at zero balance (no factor is 0).
    smooth = [b for b in blow if G.labels[b]["q"] == 2.0 or G.labels[b]["balance"] == "zero"]
    differences = torch.stack([(fine[-1, smooth] - coarse[-1, smooth]).abs()
                               for coarse, fine in itertools.pairwise(clocks)]).cpu().double()
    yield order_evidence("RK4 order of the simulated blow-up time (differences of consecutive "
                         "levels; smooth cases: q = 2, or zero balance)", differences,
                         nominal_order=4,
                         floors=roundoff_floors(run.dtype, p["steps"], p["levels"],
                                                max(t_star))[1:],
                         parameters={"cases": [G.labels[b] for b in smooth]})


def _richardson_at_measured_order(values: list[torch.Tensor]) -> float:
    r"""Error estimate of the finest ladder entry, :math:`d/(2^p - 1)` with the observed order
    :math:`p` (at least 1: a non-smooth start, e.g. :math:`w_1 = 0` with :math:`q < 2`, lowers
    RK4's order)."""
    first_order, p_hat = richardson_error(values)
    order = max(1.0, p_hat) if math.isfinite(p_hat) else 1.0
    return first_order / (2.0**order - 1.0)


def _hitting_times(run: Run, G: Grid, cases, clocks, x_end: torch.Tensor, lam: torch.Tensor,
                   p: dict[str, Any]) -> Iterator[Evidence]:
    """Valid cases: the simulated clock at the end against the derived time to reach the
    simulated |x| (u from x alone, by Newton on the balance relation)."""
    valid = [b for b, c in enumerate(cases) if c.blow_up is None]
    if not valid:  # every case of the grid blows up
        return
    offsets = torch.zeros_like(G.mask)
    offsets[1:] = lam[None, :, None] * G.mask[1:]
    is_cor = torch.tensor([lab["balance"] == "cor4.8" for lab in G.labels], device=run.device)
    offsets = torch.where(is_cor[None, :, None], offsets, torch.zeros_like(offsets))
    u_end = ProductInverseMetric(offsets, G.q, G.mask).root(x_end[:, None])[:, 0]
    rows, budget = [], []
    for b in valid:
        lab = G.labels[b]
        u_start = 0.0 if lab["balance"] == "cor4.8" else float(p["a"]) ** lab["q"]
        derived, error = _derived_hitting_time(cases[b], u_start, float(u_end[b]),
                                               float(lam[b]), float(p["G"]))
        measured = float(clocks[-1][-1, b])
        estimate, _ = richardson_error([c[-1, b] for c in clocks])
        budget.append((2 * estimate + error) / measured)
        rows.append(({"q": lab["q"], "L": lab["L"], "balance": lab["balance"]}, derived,
                     measured))
    n = p["steps"] * 2 ** (p["levels"] - 1)
    tolerance = max(budget) + 8 * n * unit_roundoff(run.dtype)
    yield compare_cases(Route.NUMERIC, "valid cases (no blow-up): simulated clock at the end "
                        "vs the derived hitting time (1/q) int P^(1/q-1) du / G^(q-1) of the "
                        "simulated |x|", rows, names=("derived", "measured"),
                        tolerance=Tolerance(tolerance, f"largest per-case 2 x first-order "
                                            f"Richardson + quadrature error, relative "
                                            f"({max(budget):.1e}), + roundoff 8 n u (n = {n})"),
                        parameters={"tau": p["tau"], "|x| reached": float(x_end.abs().min())})


# --- regression: bounded below -------------------------------------------------------------

def _regression(run: Run) -> None:
    r"""Figures only: the same (q, L, balance) on the default regression problem (SOURCES §4.0). An
    objective bounded below cannot blow up in finite time: :math:`\tfrac{d}{dt}F =
    -\sum|\partial F|^q` gives :math:`\int_0^T\|\dot w\|_p^p = F(0) - F(T)` and, by Hoelder,
    :math:`\|w(T) - w(0)\|_p \le T^{1/q}(F(0) - F(T))^{1/p}`; the figure reports that ratio."""
    p = run.params["regression"]
    G = fixed_sign_grid({"q": p["q"], "L": p["L"], "balance": BALANCES}, run)

    def simulate():
        problem, _ = default_regression(run.generator("problem"), device=run.device,
                                        dtype=run.dtype)
        d = problem.A.shape[1]
        a = torch.full((G.size, d), float(p["a"]), dtype=run.dtype, device=run.device)
        first_zero = torch.tensor([[lab["balance"] == "cor4.8"] for lab in G.labels],
                                  device=run.device)
        W0 = balanced_start(G.mask, a, first_zero)
        flow = ProductFlow(problem.grad, G.q, G.mask)
        try:
            W = integrate(flow, W0, dt=p["T"] / p["steps"], steps=p["steps"],
                          record_every=p["record"]).values
        except Diverged as exc:
            return problem, W0, None, str(exc)
        return problem, W0, W, ""

    problem, W0, W, failure = run.memo("regression", simulate)
    if W is None:
        run.figure("regression: the parameter flow diverged", failure)
        return
    x = W.prod(1)
    loss = problem.loss(x)  # (R, B)
    report = {}
    for b, lab in enumerate(G.labels):
        q = lab["q"]
        shift = (W[-1, :, b] - W0[:, b]) * G.mask[:, b]
        if q == 1.0:
            displacement, bound = float(shift.abs().max()), p["T"]
        else:
            pp = q / (q - 1)
            displacement = float(shift.abs().pow(pp).sum() ** (1 / pp))
            bound = p["T"] ** (1 / q) * float(loss[0, b] - loss[-1, b]) ** (1 / pp)
        report[f"q={q}, L={lab['L']}, {lab['balance']}"] = {
            "max_t |x|_inf": float(x[:, b].abs().max()),
            "loss(0)": float(loss[0, b]), "loss(T)": float(loss[-1, b]),
            "||w(T) - w(0)||_p / (T^(1/q) (F(0) - F(T))^(1/p))": displacement / bound}
    run.figure(f"regression (bounded below), RK4 dt = {p['T'] / p['steps']:g}, T = {p['T']}: "
               "no blow-up; loss and the displacement bound", report)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _dynamics(run)
    _regression(run)


CLAIM = register(Claim(
    id="ns.cor4.12",
    paper=PAPER,
    kind="corollary",
    title="Legendre property of R_{Lp,L}: valid Bregman function iff m <= 1 (GF: L <= 2; "
          "SignGF: every L)",
    source="Corollary 4.12 (submitted numbering); later Corollary 4.14; SOURCES §4.12, §7 "
           "questions 1 and 8",
    statement=r"\text{(public description)}\ R_{L_p,L}\text{ is a Legendre (valid Bregman) "
              r"function depending on }q,\ L\text{ and the metric exponent }m\text{; the "
              r"conditions are stated separately for GF and SignGF; otherwise global "
              r"instability via finite-time explosion.}",
    reading=r"Toolkit's reading: coordinate-wise, \nabla^2R=1/M with M the inverse metric of "
            r"the parameter flow (ns.thm4.6), balance zero (all |w_i| equal) or Cor. 4.8's "
            r"(w_1=0, w_{i\ge2}=a: offsets c_{i\ge2}=\lambda=a^q). Legendre = strictly convex "
            r"on the interior of the domain and essentially smooth; valid = Legendre and "
            r"\nabla R onto \mathbb R (a mirror flow exists for all time under any "
            r"gradient). Condition (stated): valid iff m=q(L-1)/L\le1 \iff L\le q/(q-1)=p: "
            r"GF (q=2) only L\le2 (L=2: m=1, logarithmic \nabla R), SignGF (q=1) every L. "
            r"Derived: R is Legendre in every case (\lambda>0: on \mathbb R; \lambda=0: on "
            r"\mathbb R if m<1, on each half-line if m\ge1, where x cannot change sign); "
            r"what fails for m>1 is surjectivity: \sup\nabla R<\infty, so under a gradient "
            r"of fixed sign -G, |x| blows up at T^\star=(\sup\nabla R-\nabla R(x_0))/"
            r"G^{q-1} (both for \lambda=0 and \lambda>0). Review 1's question 8: R exists "
            r"(locally and along every trajectory) in every case; only its global validity "
            r"fails. On objectives bounded below no (q,L) blows up in finite time "
            r"(\|w(T)-w(0)\|_p\le T^{1/q}(F(0)-F(T))^{1/p}; figures on regression).",
    parameters={
        "quick": {
            "legendre": {"q": [1, 1.5, 2], "L": [2, 3, 5]},
            "dynamics": {"q": [1.0, 1.5, 2.0], "L": [2, 3, 5], "a": 0.5, "G": 1.0,
                         "tau": 20.0, "steps": 150, "levels": 3, "record": 5,
                         "relative_tolerance": 1e-3},
            "regression": {"q": [1.0, 1.5, 2.0], "L": [2, 3, 5], "a": 0.5, "T": 10.0,
                           "steps": 500, "record": 50},
        },
        "full": {
            "legendre": {"q": [1, 1.25, sp.Rational(4, 3), 1.5, 1.75, 2], "L": [2, 3, 4, 5]},
            "dynamics": {"q": [1.0, 1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5], "a": 0.5,
                         "G": 2.0, "tau": 24.0, "steps": 300, "levels": 4, "record": 10,
                         "relative_tolerance": 1e-3},
            "regression": {"q": [1.0, 1.25, 1.5, 2.0], "L": [2, 3, 5], "a": 0.5, "T": 40.0,
                           "steps": 4000, "record": 100},
        },
    },
    stated={"metric_exponent": stated_metric_exponent, "valid": stated_valid},
    equivalent_mutants={
        "metric_exponent:power": "m enters this claim only through the condition m <= 1 and "
                                 "the depth where m = 1; |m|^1.1 is increasing and fixes 1, so "
                                 "both are unchanged (m's value is checked by ns.fig2-metric "
                                 "and ns.thm4.6)"},
    check=check,
    control=NegativeControl("valid iff m < 1 (a wrong depth threshold: GF would need L < 2)",
                            {"valid": strict_valid}),
    assumptions=(exponent_scope("legendre.q", "dynamics.q", "regression.q"),
                 depth_scope("legendre.L", "dynamics.L", "regression.L")),
    space={"dynamics.q": Choice(((1.0,), (1.25,), (1.5,), (2.0,), (1.0, 2.0))),
           "dynamics.L": Choice(((2,), (3,), (4,), (5,), (2, 5))),
           "dynamics.a": LogUniform(0.1, 2.0),
           "dynamics.G": LogUniform(0.3, 3.0)},
))
