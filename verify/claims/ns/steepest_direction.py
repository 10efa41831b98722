r"""ns.steepest-direction: the steepest-descent direction of the :math:`\ell_p` norm (the
steepest-direction identity of the Section 4 definitions, verify/claims/ns/SOURCES.md §4.4).

Routes: the identity as stated (the normalised direction
:math:`-\operatorname{sign}(g)|g|^{q-1}/\|g\|_q^{q-1}`, its value :math:`-\|g\|_q`, and the
steepest flow's unnormalised direction :math:`-\operatorname{sign}(g)|g|^{q-1}`); sympy's KKT
solution of :math:`\min_{\|d\|_p\le1}\langle g,d\rangle`, the gradient of :math:`\|g\|_q` and
the box LP at :math:`q = 1` (:mod:`theory.ns.steepest_norm`), and the minimiser of
:math:`\langle g,d\rangle + \tfrac1p\|d\|_p^p` (:mod:`theory.ns.steepest`) (derived); SLSQP
and HiGHS on the constrained problem, bounded Brent on the penalised one, autograd on
:math:`\|g\|_q`, and random feasible points against the value (measured,
:mod:`numerics.ns.steepest_norm`), over random gradients of several sizes and scales.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import sympy as sp
import torch

from numerics.ns.steepest_norm import (
    constrained_minimiser,
    dual_norm_gradient,
    penalised_minimiser,
)
from theory.ns.steepest import derive_steepest_direction
from theory.ns.steepest_norm import derive_box_direction, derive_normalised_direction
from verify import (
    SEED,
    Assumption,
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
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._scope import gathered


def stated_direction(g, q):
    r"""The steepest direction of :math:`\|\cdot\|_p` at :math:`g`:
    :math:`-\operatorname{sign}(g)|g|^{q-1}/\|g\|_q^{q-1}` (written :math:`g|g|^{q-2}` for
    :math:`\operatorname{sign}(g)|g|^{q-1}`, every :math:`g_k \ne 0`; floats or sympy)."""
    norm = sum(abs(v) ** q for v in g) ** (1 / q)
    return [-v * abs(v) ** (q - 2) / norm ** (q - 1) for v in g]


def stated_value(g, q):
    r"""Its value :math:`\langle g, d^\star\rangle = -\|g\|_q`."""
    return -sum(abs(v) ** q for v in g) ** (1 / q)


def stated_unnormalised(g, q):
    r"""The steepest flow's direction :math:`-\operatorname{sign}(g)|g|^{q-1}`, the minimiser of
    :math:`\langle g,d\rangle + \tfrac1p\|d\|_p^p` (SOURCES §4.4)."""
    return [-v * abs(v) ** (q - 2) for v in g]


def wrong_exponent_direction(g, q):
    r"""Planted error: the exponent :math:`q` in place of :math:`q-1`,
    :math:`-\operatorname{sign}(g)|g|^q/\|g\|_q^q`."""
    norm = sum(abs(v) ** q for v in g) ** (1 / q)
    return [-v * abs(v) ** (q - 1) / norm**q for v in g]


def _column(values) -> sp.Matrix:
    return sp.Matrix([sp.powsimp(sp.expand_power_base(v, force=True), force=True)
                      for v in values])


# --- symbolic ---------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    sizes = run.params["symbolic_sizes"]
    unnormalised = run.derivation(derive_steepest_direction()).result
    for n in sizes:
        res = run.derivation(derive_normalised_direction(n)).result
        g, q = res.gradient, res.q
        params = {"n": n, "q": "symbolic, q > 1", "signs": list(res.signs)}
        yield symbolic_identity(f"argmin_(||d||_p <= 1) <g, d> (KKT), n = {n}",
                                stated=_column(run.stated["direction"](g, q)),
                                derived=res.direction, parameters=params)
        yield symbolic_identity(f"minus the gradient of ||g||_q, n = {n}",
                                stated=_column(run.stated["direction"](g, q)),
                                derived=-res.norm_gradient, parameters=params)
        yield symbolic_identity(f"min_(||d||_p <= 1) <g, d> = -||g||_q, n = {n}",
                                stated=run.stated["value"](g, q), derived=res.value,
                                parameters=params)
        yield symbolic_identity(f"argmin_d <g, d> + ||d||_p^p / p, n = {n}",
                                stated=_column(run.stated["unnormalised"](g, q)),
                                derived=sp.Matrix([unnormalised.direction.subs(
                                    {unnormalised.g: v, unnormalised.q: q}) for v in g]),
                                parameters=params)
        box_direction, box_value = run.derivation(derive_box_direction(n)).result
        one = sp.Integer(1)
        yield symbolic_identity(f"q = 1 (p = oo): the box LP's vertex and value, n = {n}",
                                stated=sp.Matrix([*_column(run.stated["direction"](g, one)),
                                                  run.stated["value"](g, one)]),
                                derived=sp.Matrix([*box_direction, box_value]),
                                parameters={**params, "q": 1})


# --- measured ---------------------------------------------------------------------------------

def _gradients(run: Run) -> list[tuple[dict, np.ndarray]]:
    """``draws`` gradients per size: N(0, 1) entries times a scale 10^U(-2, 2) (the identity
    is homogeneous in g; the scale tests that the normalisation carries it)."""
    rng = run.rng("gradients")
    out = []
    for n in run.params["n"]:
        for k in range(run.params["draws"]):
            out.append(({"n": n, "draw": k},
                        rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2)))
    return out


def _minimisers(run: Run) -> list[dict]:
    """Every (q, gradient): the constrained and penalised minimisers and the autograd
    gradient of ||g||_q; no stated form enters (memoised for the control's run)."""
    rng = run.rng("starts")
    rows = []
    for q in run.params["q"]:
        for config, g in _gradients(run):
            d, value = constrained_minimiser(g, q, rng, starts=run.params["starts"])
            rows.append({"config": {**config, "q": q}, "g": g, "q": q, "argmin": d,
                         "min": value,
                         "penalised": penalised_minimiser(g, q) if q > 1 else None,
                         "norm_gradient": dual_norm_gradient(torch.from_numpy(g), q).numpy()})
    return rows


def _measured(run: Run) -> Iterator[Evidence]:
    rows = run.memo("minimisers", lambda: _minimisers(run))
    direction, value, unnormalised = (run.stated[k] for k in ("direction", "value",
                                                              "unnormalised"))
    params = {"q": run.params["q"], "n": run.params["n"], "draws": run.params["draws"]}
    # SLSQP stops at a relative objective change of 1e-14, and an argmin found from values is
    # accurate to about the square root of that (1e-7; measured <= 5e-7 with n <= 50,
    # q <= 4); 1e-5 leaves a margin for an unlucky draw and is 5000x below a 5% error.
    # HiGHS returns the LP's vertex exactly.
    argmin_tol = Tolerance(1e-5, "argmin from SLSQP (ftol 1e-14): ~1e-7, so 1e-5")
    yield compare_cases(Route.NUMERIC, "stated direction vs the numerical argmin over "
                        "||d||_p <= 1", [(r["config"], np.asarray(direction(r["g"], r["q"])),
                                          r["argmin"]) for r in rows],
                        tolerance=argmin_tol, parameters=params)
    # the measured minimum is the value at a point of the sphere, second order in its error
    # (<= 1e-5 allowed above, so ~1e-10; measured <= 3e-14 with n <= 50)
    yield compare_cases(Route.NUMERIC, "stated value -||g||_q vs the numerical minimum",
                        [(r["config"], value(r["g"], r["q"]), r["min"]) for r in rows],
                        tolerance=Tolerance(1e-10, "value at a feasible point: second order "
                                                   "in the argmin error, 1e-10"),
                        parameters=params)
    u = unit_roundoff(torch.float64)
    n_max = max(run.params["n"])
    # autograd of (sum |g|^q)^(1/q): n powers summed and three more roundings per entry
    yield compare_cases(Route.NUMERIC, "stated direction vs minus autograd's gradient of "
                        "||g||_q", [(r["config"], np.asarray(direction(r["g"], r["q"])),
                                     -r["norm_gradient"]) for r in rows],
                        tolerance=Tolerance(64 * (n_max + 4) * u,
                                            "a sum of n powers and a few more roundings on "
                                            "each side: 64 (n + 4) u"),
                        parameters=params)
    smooth = [r for r in rows if r["penalised"] is not None]
    if smooth:
        # bounded Brent with xatol 1e-12 of the interval: the argmin is good to ~sqrt(u)
        # relative (measured <= 3e-8 over 180 draws); 1e-6
        yield compare_cases(Route.NUMERIC, "stated unnormalised direction vs the numerical "
                            "argmin of <g, d> + ||d||_p^p / p",
                            [(r["config"], np.asarray(unnormalised(r["g"], r["q"])),
                              r["penalised"]) for r in smooth],
                            tolerance=Tolerance(1e-6, "argmin from bounded Brent: ~sqrt(u) "
                                                      "relative, 1e-6"),
                            parameters={**params, "q": sorted({r["q"] for r in smooth})})
    yield from _feasible(run, rows)


def _feasible(run: Run, rows: list[dict]) -> Iterator[Evidence]:
    """Random feasible points (on the unit l_p sphere; inside the box for q = 1) never go
    below the stated minimum (Hoelder)."""
    rng = run.rng("feasible")
    values, bounds = [], []
    for r in rows:
        k = run.params["feasible"]
        d = rng.standard_normal((k, r["g"].size))
        if r["q"] == 1:
            d = np.sign(d) * rng.uniform(0, 1, d.shape) ** 0.1     # crowded near the faces
        else:
            p = r["q"] / (r["q"] - 1)
            d /= (np.abs(d) ** p).sum(1, keepdims=True) ** (1 / p)
        values.append(float((d @ r["g"]).min()))
        bounds.append(float(run.stated["value"](r["g"], r["q"])))
    u = unit_roundoff(torch.float64)
    yield at_least(Route.PROPERTY, "<g, d> >= stated minimum at random points of the unit "
                   "l_p ball", measured=np.array(values), bound=np.array(bounds),
                   tolerance=Tolerance(64 * max(run.params["n"]) * u,
                                       "inner products of n terms: 64 n u"),
                   parameters={"points per gradient": run.params["feasible"]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _measured(run)


CLAIM = register(Claim(
    id="ns.steepest-direction",
    paper=PAPER,
    kind="definition",
    title="Steepest-descent direction of the l_p norm: minus the dual-norm gradient",
    source="Section 4 definitions (steepest flow; SOURCES §3, §4.4)",
    statement=r"\text{(public description)}\ \arg\min_{\|d\|_p\le1}\langle g,d\rangle"
              r"=-\frac{\operatorname{sign}(g)|g|^{q-1}}{\|g\|_q^{q-1}}=-\nabla\|g\|_q,\ "
              r"\min_{\|d\|_p\le1}\langle g,d\rangle=-\|g\|_q,\ \tfrac1p+\tfrac1q=1;\ "
              r"-\operatorname{sign}(g)|g|^{q-1}=\arg\min_d\langle g,d\rangle+\tfrac1p"
              r"\|d\|_p^p.",
    reading=r"Toolkit's reading: q >= 1 and p = q/(q-1) in (1, oo] (p = oo at q = 1, where "
            r"|g|^0 = 1 and the ball is the box), g in R^n with every g_k != 0 (at g_k = 0 "
            r"with q = 1 the argmin is a whole edge of the box; Gaussian draws avoid it). "
            r"'Steepest direction' is the minimiser of the linear model <g, d> over the unit "
            r"ball of ||.||_p; the identity holds for every q >= 1, not only the flows' "
            r"q in [1, 2], and the space draws q up to 3. The unnormalised direction is the "
            r"catalogue's per-coordinate form (SOURCES §4.4, stationarity g + sign(d)|d|^(p-1) "
            r"= 0, (p-1)(q-1) = 1) and is ||g||_q^(q-1) times the normalised one. Derived: "
            r"KKT with an active constraint, nu = ||g||_q, d* on the unit sphere, unique for "
            r"1 < p < oo (strictly convex ball), value -||g||_q (Hoelder's equality case), "
            r"d* = -grad ||g||_q, n = 2, 3 symbolically for symbolic q > 1, and the box LP at "
            r"q = 1.",
    parameters={
        "quick": {"symbolic_sizes": [2, 3], "q": [1.0, 1.25, 1.5, 2.0, 3.0],
                  "n": [2, 5, 10], "draws": 4, "starts": 2, "feasible": 200},
        # the full size runs the default regression's dimension (d = 20, SOURCES §4.0) and
        # beyond
        "full": {"symbolic_sizes": [2, 3, 4], "q": [1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 3.0, 4.0],
                 "n": [2, 5, 10, 20], "draws": 10, "starts": 3, "feasible": 2000},
    },
    stated={"direction": stated_direction, "value": stated_value,
            "unnormalised": stated_unnormalised},
    check=check,
    control=NegativeControl("the exponent q in place of q - 1: -sign(g)|g|^q / ||g||_q^q",
                            {"direction": wrong_exponent_direction}),
    assumptions=(Assumption("dual exponent", "q >= 1: p = q/(q-1) lies in (1, oo], so "
                            "||.||_p is a norm (SOURCES §3)",
                            lambda p: all(float(q) >= 1 for q in gathered(p, "q"))),),
    space={"q": Choice(((1.0,), (1.1,), (1.25,), (1.5,), (2.0,), (3.0,), (1.0, 1.5, 2.0))),
           "n": Choice(((2,), (3,), (10,), (2, 5, 10), (20,))),
           "draws": IntRange(1, 6),
           "symbolic_sizes": Choice(((1,), (2,), (3,), (2, 3))),
           "seed": SEED},
))
