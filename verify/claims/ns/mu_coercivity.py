r"""ns.mu-coercivity: inverse :math:`\mu`-coercivity of a separable potential (the Section 4
definitions, verify/claims/ns/SOURCES.md §3, §4.4): the summaries' quadratic form
:math:`x^\top(\nabla^2R(x))^{-1}x \ge \mu\|x\|^2` against the toolkit's diagonal reading
:math:`M_k \ge \mu`, and the best constant of :math:`R_{L_p,L}` (Thm. 4.6's potential) from
any start.

Routes: the quadratic form as stated; sympy's form of :math:`x^\top(\nabla^2R)^{-1}x` for a
separable :math:`R` and the infimum and local order of the inverse metric of :math:`R_{L_p,L}`
for a unique smallest factor and for a tie (:mod:`theory.ns.inverse_coercivity`, derived); the
inverse metric measured as :math:`-\dot x` of the parameter flow at unit gradient on the
balance manifold (:mod:`numerics.ns.balance_manifold`), at :math:`x = 0`, at random points of
:math:`\mathbb R^n` and along the coordinate axes as :math:`t \to 0` (measured, with the
quotient's approach to the best constant fitted as a trend).
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import numpy as np
import sympy as sp
import torch

from numerics.ns.balance_manifold import factors_on_manifold, measured_inverse_metric
from numerics.ns.steepest_flows import balance_offsets
from theory.ns.inverse_coercivity import derive_offset_coercivity, derive_quadratic_form
from theory.ns.reparam_balance import Q
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    IntRange,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_least,
    compare_cases,
    fit_trend,
    geometric_grid,
    register,
    symbolic_identity,
    trend_evidence,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._ladders import Grid, grid
from verify.claims.ns._scope import depth_scope, exponent_scope


def stated_form(M, x):
    r"""The summaries' :math:`x^\top(\nabla^2R(x))^{-1}x` for a separable :math:`R`, with
    ``M`` the diagonal of :math:`(\nabla^2R(x))^{-1}` (arrays, last axis the coordinates)."""
    return (M * x**2).sum(-1)


def hessian_form(M, x):
    r"""Planted error: the Hessian in place of its inverse, :math:`x^\top\nabla^2R(x)x`."""
    return (x**2 / M).sum(-1)


# --- symbolic ---------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    for n in run.params["symbolic_sizes"]:
        res = run.derivation(derive_quadratic_form(n)).result
        stated = run.stated["form"](np.array(res.M, dtype=object),
                                    np.array(res.x, dtype=object))
        yield symbolic_identity(f"x^T (grad^2 R)^(-1) x for a separable R, n = {n}",
                                stated=sp.expand(stated), derived=res.form,
                                parameters={"n": n})
    orders = {}
    for L in run.params["L"]:
        for ties in run.params["ties"]:
            res = run.derivation(derive_offset_coercivity(L, ties)).result
            orders[f"L={L}, ties={ties}"] = {"mu": str(res.mu), "order": str(res.order),
                                             "leading": str(res.leading)}
    run.figure("derived inf_x M(x) of R_(Lp,L) and the order of M - mu in |x| (x -> 0)",
               orders)


# --- measured ---------------------------------------------------------------------------------

def _rows(run: Run) -> Grid:
    """One batch row per (q, L, ties, draw, coordinate k)."""
    p = run.params
    return grid({"q": p["q"], "L": p["L"], "ties": p["ties"], "draw": range(p["draws"]),
                 "k": range(p["n"])}, L_max=max(p["L"]), dtype=run.dtype, device=run.device)


def _magnitudes(run: Run, G: Grid) -> torch.Tensor:
    """``(L_max, B, 1)`` factor magnitudes: |w_1| ~ U(0.2, 0.5) the smallest, the others
    0.3 to 1 above it (a unique smallest factor kept away from a tie, so the trend's grid
    sees the leading term), except |w_2| = |w_1| in coordinate 0 of a tied row."""
    gen = run.generator("magnitudes")
    L_max = G.mask.shape[0]
    low = 0.2 + 0.3 * torch.rand(G.size, generator=gen, dtype=torch.float64)
    above = 0.3 + 0.7 * torch.rand(L_max, G.size, generator=gen, dtype=torch.float64)
    a = low[None] + above
    a[0] = low
    for b, lab in enumerate(G.labels):
        if lab["ties"] == "two" and lab["k"] == 0:
            a[1, b] = a[0, b]
    a = torch.where(G.mask[..., 0] > 0, a.to(run.dtype), torch.ones((), dtype=run.dtype))
    return a[..., None]


def _points(run: Run) -> torch.Tensor:
    """Per configuration, ``samples`` random points of R^n: coordinates +-10^U(-6, 0.5)
    (near the axes and near 0 as well as far out); ``(configs, samples, n)``."""
    p = run.params
    configs = len(p["q"]) * len(p["L"]) * len(p["ties"]) * p["draws"]
    rng = run.rng("points")
    x = (rng.choice([-1.0, 1.0], (configs, p["samples"], p["n"]))
         * 10.0 ** rng.uniform(-6, 0.5, (configs, p["samples"], p["n"])))
    return torch.as_tensor(x, dtype=run.dtype)


@cache
def derived_mu(L: int, ties: str, offsets: tuple[float, ...]) -> float:
    """The derived inf of M for these offsets (factor 0 the smallest), in 30 digits."""
    res = derive_offset_coercivity(L, ties).result
    values = {c: sp.Float(o, 30) for c, o in zip(res.c, offsets) if isinstance(c, sp.Symbol)}
    return float(sp.sympify(res.mu).subs(values).evalf(30))


def _measure(run: Run) -> dict:
    """The measured inverse metric of every row at x = 0, along the axis ladder and at the
    coordinates of the random points; the derived mu of every row. No stated form enters."""
    p = run.params
    G = _rows(run)
    sizes = geometric_grid(p["t"]["start"], p["t"]["stop"], p["t"]["points"])
    W0 = _magnitudes(run, G)
    offsets = balance_offsets(W0, G.q, G.mask)
    x_points = _points(run)
    # the row (config c, coordinate k) evaluates M_k at 0, at the ladder and at x[c, :, k]
    n = p["n"]
    config_of_row = torch.arange(G.size) // n
    along = torch.as_tensor(sizes, dtype=run.dtype)
    x = torch.cat([torch.zeros(G.size, 1, dtype=run.dtype), along.expand(G.size, -1),
                   x_points[config_of_row, :, torch.arange(G.size) % n]], dim=1)
    M = measured_inverse_metric(factors_on_manifold(x, offsets, G.q, G.mask), G.q, G.mask)
    mu = [derived_mu(lab["L"], lab["ties"] if lab["k"] == 0 else "none",
                     tuple(float(offsets[i, b, 0]) for i in range(lab["L"])))
          for b, lab in enumerate(G.labels)]
    J = sizes.size
    return {"labels": G.labels, "sizes": sizes, "M0": M[:, 0], "M_axis": M[:, 1:1 + J],
            "M_points": M[:, 1 + J:], "x_points": x_points,
            "mu": torch.tensor(mu, dtype=run.dtype)}


def _configs(labels: list[dict], n: int) -> list[dict]:
    return [{k: v for k, v in labels[c * n].items() if k != "k"}
            for c in range(len(labels) // n)]


def _measured(run: Run) -> Iterator[Evidence]:
    p = run.params
    m = run.memo("inverse metric", lambda: _measure(run))
    n = p["n"]
    configs = _configs(m["labels"], n)
    def by_config(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(len(configs), n, *t.shape[1:])

    mu_rows, M0 = by_config(m["mu"]), by_config(m["M0"])
    mu_star = mu_rows.min(1).values
    u = unit_roundoff(run.dtype)
    # measured: a product of <= 5 powers of bisected factors, a few ulps each; derived: one
    # rounding of a 30-digit value
    yield compare_cases(Route.NUMERIC, "diagonal reading: min_k M_k(0) measured vs the derived "
                        "inf of R_(Lp,L)'s inverse metric",
                        [(cfg, float(d), float(me)) for cfg, d, me in
                         zip(configs, mu_star, M0.min(1).values)],
                        names=("derived", "measured"),
                        tolerance=Tolerance(64 * u, "products of <= 5 powers, a few ulps "
                                                    "each: 64 u"),
                        parameters={"q": p["q"], "L": p["L"], "ties": p["ties"],
                                    "n": n, "draws": p["draws"]})
    form = run.stated["form"]
    # the form at random points: M_k at each point's own coordinates
    M_pts = by_config(m["M_points"]).transpose(1, 2)          # (configs, samples, n)
    x_pts = m["x_points"]
    values = form(M_pts, x_pts)
    bound = mu_star[:, None] * (x_pts**2).sum(-1)
    yield at_least(Route.PROPERTY, "stated form >= mu |x|^2 at random points (mu the derived "
                   "best constant)", measured=values, bound=bound,
                   tolerance=Tolerance(64 * n * u, "n products, each a few ulps: 64 n u"),
                   parameters={"samples per configuration": p["samples"],
                               "coordinates": "+-10^U(-6, 0.5)"})
    yield from _sharpness(run, m, configs, mu_star)


def _sharpness(run: Run, m: dict, configs: list[dict], mu_star: torch.Tensor
               ) -> Iterator[Evidence]:
    """The stated form's best constant along the axes, x = t e_k, t -> 0: min_k of
    form / t^2, and its distance to the derived mu as a trend in t."""
    p = run.params
    n = p["n"]
    sizes = m["sizes"]
    M_axis = m["M_axis"].reshape(len(configs), n, -1)          # (configs, k, J)
    form = run.stated["form"]
    best = []
    for j, t in enumerate(sizes):
        # x = t e_k: the other coordinates are 0 and contribute nothing (x_i^2 times a finite
        # entry of the inverse Hessian), so the form is evaluated on coordinate k alone
        x = torch.full((1, n, 1), float(t), dtype=run.dtype)
        best.append((form(M_axis[:, :, j, None], x) / float(t) ** 2).min(1).values)
    best = torch.stack(best, dim=1)                               # (configs, J)
    gap = (best - mu_star[:, None]).abs()
    u = unit_roundoff(run.dtype)
    # a few ulps of the measured M (at most its largest value on the ladder) on each side
    scale = torch.maximum(mu_star, M_axis.amax((1, 2)))
    floors = (64 * u * scale)[:, None].expand_as(gap)
    figures = {}
    for q in p["q"]:
        for ties in p["ties"]:
            rows = [c for c, cfg in enumerate(configs) if cfg["q"] == q and cfg["ties"] == ties]
            derived = {derive_offset_coercivity(L, ties).result.order for L in p["L"]}
            if len(derived) != 1:
                raise ArithmeticError(f"the derived order depends on L: {derived}; the "
                                      f"trend pools depths as seeds")
            order = float(derived.pop().subs(Q, q))
            fit = fit_trend(sizes, gap[rows], floors=floors[rows])
            name = (f"q = {q:g}, {'a tie' if ties == 'two' else 'a unique smallest factor'}"
                    f": |min_k form(t e_k) / t^2 - mu| as t -> 0")
            figures[f"q={q:g}, ties={ties}"] = fit.figure(order)
            yield from trend_evidence(name, fit, stated_order=order, bound="exact",
                                      parameters={"q": q, "ties": ties, "L": p["L"],
                                                  "seeds": "L x draws"})
    run.figure("approach of the stated form's best constant along the axes", figures)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _measured(run)


CLAIM = register(Claim(
    id="ns.mu-coercivity",
    paper=PAPER,
    kind="definition",
    title="Inverse mu-coercivity: the summaries' quadratic form and the diagonal reading",
    source="Section 4 definitions (inverse mu-coercivity; SOURCES §3, §4.4)",
    statement=r"\text{(summaries)}\ R\text{ is inverse }\mu\text{-coercive: }x^\top(\nabla^2"
              r"R(x))^{-1}x\ge\mu\|x\|^2\ \text{for all }x.",
    reading=r"Toolkit's reading: for a separable R (the paper's), (nabla^2 R)^{-1} = "
            r"diag(M_k(x_k)), M_k = 1/R_k'', so the form is sum_k M_k(x_k) x_k^2 and its "
            r"quotient by |x|^2 is a convex combination of the M_k(x_k); the form's best "
            r"constant is min_k inf_{t != 0} M_k(t), the diagonal reading's ('every diagonal "
            r"entry of the inverse Hessian >= mu everywhere') min_k inf_t M_k(t), and the "
            r"uniform reading's (v^T (nabla^2 R(x))^{-1} v >= mu |v|^2 for all x, v) the "
            r"same: the three agree wherever each M_k is continuous at 0, which holds for "
            r"R_(Lp,L). For R_(Lp,L) (Thm. 4.6) from a start with offsets c_i = |w_i|^q - "
            r"min_j |w_j|^q per coordinate: M = P'(u) increases with |x|, so mu = min_k "
            r"prod_{i != smallest} c_{i,k}; mu > 0 iff every coordinate has a unique "
            r"smallest factor magnitude. Finding: where two factors tie at the smallest "
            r"magnitude in some coordinate (e.g. the fully balanced start |w_i| = a for all i, "
            r"or a lambda-L_p-balanced start with lambda = 0), mu = 0: R_(Lp,L) is inverse "
            r"mu-coercive for no mu > 0 and Thm. 4.2's bound is void; M then vanishes like "
            r"|x|^(q/2) (order q for a unique smallest factor). Checked: the form "
            r"symbolically, mu and the orders derived and measured on n = 3 coordinates.",
    parameters={
        "quick": {"symbolic_sizes": [2, 3], "q": [1.0, 1.5, 2.0], "L": [2, 3],
                  "ties": ["none", "two"], "n": 3, "draws": 3, "samples": 200,
                  "t": {"start": 1e-2, "stop": 1e-5, "points": 7}},
        "full": {"symbolic_sizes": [1, 2, 3, 4], "q": [1.0, 1.25, 1.5, 1.75, 2.0],
                 "L": [2, 3, 4, 5], "ties": ["none", "two"], "n": 4, "draws": 6,
                 "samples": 500, "t": {"start": 1e-2, "stop": 1e-6, "points": 9}},
    },
    stated={"form": stated_form},
    check=check,
    control=NegativeControl("the Hessian in place of its inverse: x^T grad^2 R(x) x >= mu "
                            "|x|^2", {"form": hessian_form}),
    assumptions=(exponent_scope("q"), depth_scope("L")),
    space={"q": Choice(((1.0,), (1.25,), (1.5,), (2.0,), (1.0, 2.0))),
           "L": Choice(((2,), (3,), (5,), (2, 3))),
           "ties": Choice((("none",), ("two",), ("none", "two"))),
           "draws": IntRange(2, 5),
           "n": IntRange(1, 4),
           "seed": SEED},
))
