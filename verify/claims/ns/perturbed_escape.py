r"""ns.x.perturbed-escape: steepest flows escape the saddle set :math:`S` from random
perturbations of its points (not only from the measure-zero Cor. 4.8 start, review 1's
objection), from the origin and from other points of :math:`S`, with an escape time whose
growth as the perturbation :math:`\delta \to 0` follows the depth-k law
(verify/claims/ns/SOURCES.md §4.6, §4.11, §4.14).

Routes: the reading as forms (stated: every perturbed start escapes; the exponent of
:math:`1/\delta` in :math:`T(\delta)` is that of the Cor. 4.8 start at depth k, the number of
vanishing factors); sympy's reduction of the k small factors to the depth-k flow with
gradient :math:`gP`, its homogeneity degree :math:`\kappa = (k-1)(q-1)` and the resulting
law (derived, :mod:`theory.ns.perturbed_escape`); the parameter flow on the default regression
from :math:`w_S + \delta\xi`, :math:`\xi \sim \mathcal N(0, I)`, in relative time with the
event located inside the step, at h and h/2 (measured, :mod:`numerics.ns.perturbed_escape`).
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import sympy as sp
import torch

from numerics.ns.perturbed_escape import escape_times, saddle_point
from numerics.ns.steepest_flows import default_regression
from theory.ns.perturbed_escape import derive_homogeneity, derive_reduction, perturbed_law
from theory.ns.reparam_balance import GAMMA
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    equally_spaced,
    pair_estimates,
    register,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._scope import exponent_scope


def stated_escaped(q, k):
    r"""Never Saddle, read for non-measure-zero starts: every perturbed start leaves
    :math:`S` (the fraction that escapes is 1)."""
    return 1.0


def stated_exponent(q, k):
    r"""The reading: :math:`T(\delta) \propto \delta^{-e}` with the exponent of the Cor. 4.8
    start at depth k (ns.x.escape), :math:`e = \max((k-1)(q-1) - 1, 0)` (0: logarithmic or
    bounded growth)."""
    return max((k - 1) * (q - 1) - 1, 0)


def strict_saddle_exponent(q, k):
    r"""Planted error: every point of S is escaped like a strict saddle, :math:`T \sim
    \log(1/\delta)` (exponent 0) for every q and k."""
    return 0


def _symbolic(run: Run) -> Iterator[Evidence]:
    p = run.params
    L = p["L"]
    for k in sorted({s["k"] for s in p["saddles"]}):
        yield symbolic_identity(f"velocities of the k = {k} small factors (L = {L}) vs the "
                                f"depth-k flow with gradient g P",
                                stated=sp.zeros(k, 1),
                                derived=run.derivation(derive_reduction(L, k)).result,
                                parameters={"L": L, "k": k})
        run.derivation(derive_homogeneity(k))
    grid = [(sp.nsimplify(q), k) for q in p["symbolic_q"] for k in p["symbolic_k"]]
    yield symbolic_identity("exponent of 1/delta in T(delta) over (q, k): stated vs the law of "
                            "the depth-k homogeneous flow",
                            stated=sp.Matrix([sp.nsimplify(run.stated["exponent"](q, k))
                                              for q, k in grid]),
                            derived=sp.Matrix([perturbed_law(k, q).exponent for q, k in grid]),
                            parameters={"q": p["symbolic_q"], "k": p["symbolic_k"]})


def _simulate(run: Run) -> dict:
    """Escape times per (saddle, q, draw, delta, level); the stated forms do not enter."""
    p = run.params
    e = p["escape"]
    problem, _ = default_regression(run.generator("problem"), device=run.device,
                                    dtype=run.dtype)
    d = problem.A.shape[1]
    L = p["L"]
    gen = run.generator("saddles")
    points = {s["name"]: saddle_point(L, s["k"], d, gen, dtype=run.dtype, device=run.device)
              for s in p["saddles"]}
    noise = torch.randn(e["draws"], L, d, generator=run.generator("perturbations"),
                        dtype=torch.float64).to(run.device, run.dtype)
    keys = [(s["name"], s["k"], q, j, delta, lvl) for s in p["saddles"] for q in e["q"]
            for j in range(e["draws"]) for delta in e["delta"] for lvl in range(e["levels"])]
    W0 = torch.stack([points[n] + delta * noise[j] for n, _, _, j, delta, _ in keys], dim=1)
    q = torch.tensor([[key[2]] for key in keys], dtype=run.dtype, device=run.device)
    k = torch.tensor([key[1] for key in keys], device=run.device)
    h = torch.tensor([e["h"] / 2**key[5] for key in keys], dtype=run.dtype, device=run.device)
    out = escape_times(problem, W0, q, k, fraction=e["fraction"], h=h,
                       max_steps=e["max_steps"])
    g0 = problem.grad(torch.zeros(1, d, dtype=run.dtype, device=run.device))[0]
    rates = {n: float((g0 * W[k_:].prod(0)).abs().max()) for n, W, k_ in
             ((s["name"], points[s["name"]], s["k"]) for s in p["saddles"])}
    return {"times": dict(zip(keys, out.time.tolist())), "steps": out.steps, "gamma": rates}


def _series(times: dict, name: str, k: int, q: float, j: int, deltas, level: int) -> list[float]:
    return [times[(name, k, q, j, delta, level)] for delta in deltas]


def _tail(estimates: list[float], derived_ratio: float) -> float:
    r"""Distance from the last pair estimate to its limit, :func:`verify.geometric_tail`
    with the ratio of successive differences at least ``derived_ratio``: the law's next term
    is :math:`\delta^{|1-\kappa|}` relative (bounded: :math:`T_0 - c\delta^{1-\kappa}`;
    power: :math:`\delta^{1-\kappa}(\tau + O(\delta^{\kappa-1}))`), so the differences
    shrink by :math:`e^{-|1-\kappa|\,\text{span}}` per pair at most asymptotically, and
    a sequence that shrinks faster at moderate :math:`\delta` (two correction terms
    competing) must not make the tail look smaller than that (seed 1 at q = 1.25: measured
    ratios 0.18, 0.27 below the asymptotic 0.32)."""
    (e1, e2, e3) = estimates[-3:]
    c1, c2 = e2 - e1, e3 - e2
    rho = max(abs(c2 / c1) if c1 != 0 else math.inf, derived_ratio)
    return abs(c2) * rho / (1 - rho) if rho < 1 else math.inf


def _numeric(run: Run) -> Iterator[Evidence]:
    p = run.params
    e = p["escape"]
    sim = run.memo("escape", lambda: _simulate(run))
    times, deltas, levels = sim["times"], e["delta"], e["levels"]
    u = unit_roundoff(run.dtype)
    figure = {}
    for s in p["saddles"]:
        name, k = s["name"], s["k"]
        for q in e["q"]:
            runs = [[_series(times, name, k, q, j, deltas, lvl) for lvl in range(levels)]
                    for j in range(e["draws"])]
            finite = [math.isfinite(t) for r in runs for level in r for t in level]
            params = {"saddle": name, "k": k, "L": p["L"], "q": q, "draws": e["draws"],
                      "delta": deltas}
            yield compare(Route.NUMERIC, f"fraction of perturbed starts that escape, {name} "
                          f"(k = {k}), q = {q}", stated=float(run.stated["escaped"](q, k)),
                          measured=sum(finite) / len(finite), metric="absolute",
                          tolerance=Tolerance(0.0, "a count: every start either reaches the "
                                                   "loss level within max_steps or not"),
                          parameters=params)
            if not all(finite):
                continue
            law = perturbed_law(k, q)
            kappa = (k - 1) * (q - 1)
            estimates, tails, propagated = [], [], []
            for r in runs:
                fine, coarse = r[-1], r[-2]
                # relative error of each time: 2 x the change under halving h, plus roundoff
                # of the run's steps (8 n u)
                rel = [2 * abs(f - c) / f + 8 * sim["steps"] * u for f, c in zip(fine, coarse)]
                est, spans = pair_estimates(deltas, fine, law.kind)
                estimates.append(est)
                tails.append(_tail(est, math.exp(-abs(1 - kappa) * spans[-1])))
                propagated.append((rel[-1] + rel[-2]) / spans[-1])
            figure[f"{name}, q={q}"] = {"law": law.kind, "pair estimates": estimates,
                                        "T(delta), finest": [r[-1] for r in runs]}
            if law.kind == "log":
                # Reported, not verdicted: the log coefficient tends to (gamma P)^(1-q) of the
                # fastest coordinate only after the crossover from the runner-up (rates 1/23.2
                # and 1/25.7 at the default seed's w1 = w2 = 0 saddle), which the decades
                # tested do not reach; the pair estimates then do not converge geometrically.
                figure[f"{name}, q={q}"]["derived coefficient (gamma P)^(1-q)"] = float(
                    law.value.subs(GAMMA, sim["gamma"][name]))
                continue
            if not all(math.isfinite(t) for t in tails):
                yield undecided(Route.RATE, f"T(delta) law, {name}, q = {q}", "the pair "
                                "estimates do not converge geometrically over these scales",
                                tolerance=Tolerance(0.0, "no finite-delta bias estimate"),
                                parameters=params)
                continue
            last = [est[-1] for est in estimates]
            yield compare(Route.RATE, f"exponent of 1/delta in T(delta), {name} (k = {k}), "
                          f"q = {q} ({law.kind})",
                          stated=[float(run.stated["exponent"](q, k))] * len(last),
                          derived=[float(law.exponent)] * len(last), measured=last,
                          metric="absolute",
                          tolerance=Tolerance(max(2 * t + pr for t, pr in zip(tails, propagated)),
                                              "finite-delta bias: 2 x the geometric tail of the "
                                              "pair estimates (ratio >= the law's next term "
                                              "delta^|1-kappa|), plus the ladder error (h, h/2) "
                                              "propagated; worst draw"),
                          parameters=params)
    run.figure("escape times T(delta) (finest step) and their pair estimates (exponent of "
               "1/delta, or coefficient of log(1/delta)) per saddle and q", figure)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _numeric(run)


_SADDLES = ({"name": "origin", "k": 3}, {"name": "w1 = w2 = 0", "k": 2})

CLAIM = register(Claim(
    id="ns.x.perturbed-escape",
    paper=PAPER,
    kind="experiment",
    title="Escape from perturbed starts near S and from points of S other than the origin",
    source="Abstract (steeper descent escapes saddles); review 1 (the Cor. 4.8 start is a "
           "measure-zero set); SOURCES §4.6, §4.11, §4.14",
    statement=r"\text{(public description)}\ \text{steepest flows escape the saddle set }S"
              r"\text{ of }f(\prod_iw_i)\text{; review 1: the escape argument starts from a "
              r"measure-zero set.}",
    reading=r"Toolkit's reading: from w_S+\delta\xi, \xi\sim N(0,I) (every factor perturbed; "
            r"not measure-zero), w_S a point of S with k vanishing factors in every coordinate "
            r"(the origin, k=L, or w_1=w_2=0 with the other factors \pm U(0.5,1.5), k=2), the "
            r"steepest flow of exponent q on the default regression leaves S: the loss reaches "
            r"90% of f(0) (stated: from every start); and T(\delta) grows as \delta\to0 like "
            r"the Cor. 4.8 start at depth k (ns.x.escape): \delta^{-(\kappa-1)} if "
            r"\kappa=(k-1)(q-1)>1, (\gamma P)^{1-q}\log(1/\delta) if \kappa=1 (\gamma P = "
            r"max_j|g_jP_j|, g=\nabla f(0), P_j the product of the non-vanishing factors), "
            r"bounded if \kappa<1. Derived: near S the k small factors follow the depth-k "
            r"flow with gradient gP (sympy), whose velocities are homogeneous of degree "
            r"\kappa, so the shape of the start does not change the law. Measured: the "
            r"exponent from successive pairs of \delta, with a geometric-tail bias estimate, "
            r"per perturbation draw, h and h/2; the \log coefficient is reported, not "
            r"verdicted (coordinates with near-equal rates, 1/23.2 and 1/25.7 at the default "
            r"seed, cross over more slowly than the decades tested reach). Domain: q\in(1,2] "
            r"(q=1 is the "
            r"discontinuous Filippov field), L=3.",
    parameters={
        "quick": {"L": 3, "saddles": list(_SADDLES), "symbolic_q": [1.25, 1.5, 2],
                  "symbolic_k": [2, 3, 4],
                  "escape": {"q": [1.25, 1.5, 2.0],
                             "delta": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5], "draws": 2, "fraction": 0.9,
                             "h": 0.1, "levels": 2, "max_steps": 20000}},
        "full": {"L": 3, "saddles": list(_SADDLES), "symbolic_q": [1.1, 1.25, 1.5, 1.75, 2],
                 "symbolic_k": [2, 3, 4, 5],
                 "escape": {"q": [1.1, 1.25, 1.5, 1.75, 2.0],
                            "delta": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5], "draws": 16,
                            "fraction": 0.9, "h": 0.05, "levels": 2, "max_steps": 200000}},
    },
    stated={"escaped": stated_escaped, "exponent": stated_exponent},
    check=check,
    control=NegativeControl("every point of S escaped like a strict saddle: T ~ log(1/delta) "
                            "(exponent 0) for every q and k",
                            {"exponent": strict_saddle_exponent}),
    assumptions=(exponent_scope("escape.q", "symbolic_q", above_one=True),
                 Assumption("saddle", "2 <= k <= L: at least two factors vanish (a point of S, "
                            "ns.thm4.3)", lambda p: all(2 <= s["k"] <= p["L"]
                                                        for s in p["saddles"])),
                 Assumption("decades", "the perturbation sizes are equally spaced in log delta, "
                            "decreasing, at most 0.1 (near S)",
                            lambda p: equally_spaced(p["escape"]["delta"])
                            and max(p["escape"]["delta"]) <= 0.1)),
    space={"escape.q": Choice(((1.25,), (1.5,), (1.75,), (2.0,), (1.5, 2.0))),
           "escape.delta": Choice(((1e-1, 1e-2, 1e-3, 1e-4), (3e-2, 3e-3, 3e-4, 3e-5),
                                   (1e-2, 1e-3, 1e-4, 1e-5))),
           "escape.draws": Choice((1, 2, 3)),
           "seed": SEED},
))
