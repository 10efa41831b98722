r"""li2.lemma10: Lemma 10 (App. B.3), a lower bound on the expected number of nodes
:math:`T_0 = \int_0^\infty(1-\prod_l(1-e^{-p_lt}))\,dt` (Eq. 41):
:math:`T_0\ge\max(\min_l1/p_l,\ L\sum_{l=1}^L1/l)`, with equality iff :math:`p` is uniform; the
proof applies Jensen to :math:`h(p) = \log(1-e^{-pt})`, :math:`h'' = -t^2/(4\sinh^2(pt/2))`.
Thm. 8's main text prints the bound as :math:`\max(1/\min_lp_l,\ \sum_{l=1}^L1/l)`.

Routes: both printed bounds and :math:`h''` (stated); sympy's :math:`h''` and the Eq. 41
integral at uniform :math:`p`, :math:`L = 1..6`, and at rational :math:`p` (derived); Eq. 41 by
Gauss-Legendre quadrature with a panel-halving error estimate, over random (Dirichlet) and
structured (:math:`p_l\propto\mu_l^a`, Zipf) distributions (measured).

Both printed bounds hold, but one term of each max is never active: :math:`\min_l1/p_l\le L
\le LH_L` (Lemma 10) and :math:`H_L\le L\le1/\min_lp_l` (main text); the sharp combination
:math:`\max(1/\min_lp_l, LH_L)` also holds (a figure). Lemma 10's form is attained at
uniform :math:`p`; the main text's :math:`1/\min_lp_l` term at :math:`L=1`, and approached as
:math:`\min_lp_l\to0`, where a tightness item compares the exact slack with 1, so a weaker
bound fails there too.
"""
from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
import torch

from numerics.li2.coupon_collector import collection_time
from theory.li2.coupon_collector import (
    derive_collection_integral,
    derive_log_term_curvature,
    derive_uniform_time,
)
from theory.li2.coupon_collector import (
    p as p_symbol,
)
from theory.li2.coupon_collector import (
    t as t_symbol,
)
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.li2 import PAPER


def _harmonic(L: int, like: Any) -> Any:
    return sp.harmonic(L) if isinstance(like, (list, tuple)) else float(sp.harmonic(L))


def _max(x: Any, y: Any) -> Any:
    """``max`` of a tensor and a number (tensor result), or of sympy expressions."""
    if isinstance(x, torch.Tensor):
        return torch.maximum(x, torch.as_tensor(y, dtype=x.dtype, device=x.device))
    return sp.Max(x, y)


def _min_inverse(p: Any) -> Any:
    """min_l 1/p_l (a sympy sequence, or rows of a tensor)."""
    return sp.Min(*[1 / x for x in p]) if isinstance(p, (list, tuple)) else (1 / p).amin(-1)


def _inverse_min(p: Any) -> Any:
    """1 / min_l p_l."""
    return 1 / sp.Min(*p) if isinstance(p, (list, tuple)) else 1 / p.amin(-1)


def _width(p: Any) -> int:
    return len(p) if isinstance(p, (list, tuple)) else p.shape[-1]


def stated_bound(p: Any) -> Any:
    r"""Lemma 10: :math:`\max(\min_l1/p_l,\ L\sum_{l=1}^L1/l)`."""
    L = _width(p)
    return _max(_min_inverse(p), L * _harmonic(L, p))


def main_text_bound(p: Any) -> Any:
    r"""Thm. 8 (main text): :math:`\max(1/\min_lp_l,\ \sum_{l=1}^L1/l)`."""
    L = _width(p)
    return _max(_inverse_min(p), _harmonic(L, p))


def squared_width_bound(p: Any) -> Any:
    r"""Planted error: :math:`\max(\min_l1/p_l,\ L^2\sum_{l=1}^L1/l)` (wrong power of
    :math:`L`)."""
    L = _width(p)
    return _max(_min_inverse(p), L**2 * _harmonic(L, p))


def stated_curvature(p: Any, t: Any) -> Any:
    r"""The proof's :math:`h''(p) = -t^2/(4\sinh^2(pt/2))`."""
    return -t**2 / (4 * sp.sinh(p * t / 2)**2)


# --- symbolic --------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    _, second = run.derivation(derive_log_term_curvature()).result
    yield symbolic_identity("h''(p) for h(p) = log(1 - e^(-p t))",
                            stated=run.stated["curvature"](p_symbol, t_symbol)
                            .rewrite(sp.exp), derived=second,
                            note="sinh rewritten through exp before the targeted reduction")
    sizes = run.params["uniform_L"]
    derived = []
    for L in sizes:
        derived.append(run.derivation(derive_uniform_time(L)).result)
    stated = [run.stated["bound"]([sp.Rational(1, L)] * L) for L in sizes]
    yield symbolic_identity("equality case: T_0 (Eq. 41) at uniform p vs the bound",
                            stated=sp.Matrix(stated), derived=sp.Matrix(derived),
                            parameters={"L": sizes})
    run.figure("main-text bound at uniform p (not attained for L >= 2)",
               {"L": sizes, "main text": [str(main_text_bound([sp.Rational(1, L)] * L))
                                          for L in sizes],
                "T_0": [str(x) for x in derived]})


def _main_text_tightness(run: Run) -> Evidence:
    r"""The main text's :math:`1/\min_lp_l` term is sharp: :math:`T_0` is the expected time of
    the last of :math:`L` independent exponential clocks, at least the rarest one's
    :math:`1/p_{\min}` and at most that plus the others' :math:`\sum_{l\ne\min}1/p_l`
    (a union bound). So :math:`T_0/\text{bound} = 1` at :math:`L=1` and tends to 1 as
    :math:`p_{\min}\to0`: a bound larger by any factor fails there."""
    rows = [[sp.Rational(Fraction(x).limit_denominator(10**8)) for x in row]
            for row in run.params["tight_cases"]]
    slack, excess = [], []
    for row in rows:
        T0 = run.derivation(derive_collection_integral(row)).result
        slack.append(float(T0 / run.stated["main_text_bound"](row)))
        rare = min(row)
        excess.append(float(rare * sum(1 / x for x in row) - 1))
    return compare(
        Route.NUMERIC, "tightness of the main text's bound: T_0 / max(1/min p, H_L) -> 1 as "
                       "min p -> 0 (attained at L = 1), exact T_0",
        stated=np.ones(len(rows)), measured=np.array(slack), metric="absolute",
        tolerance=Tolerance(max(excess) + 64 * unit_roundoff(run.dtype),
                            f"T_0 <= 1/p_min + sum_(l != min) 1/p_l (union bound), so the "
                            f"slack exceeds 1 by at most p_min sum_(l != min) 1/p_l = "
                            f"{max(excess):.2e}, + roundoff of the ratio"),
        parameters={"p": run.params["tight_cases"]},
        note="Lemma 10's own form is sharp at uniform p (the equality case above)")


# --- numeric ---------------------------------------------------------------------------------

def _exact_cases(run: Run) -> Iterator[Evidence]:
    rows = [[sp.Rational(Fraction(x).limit_denominator(10**6)) for x in row]
            for row in run.params["exact_cases"]]
    exact, measured, errors = [], [], []
    for row in rows:
        exact.append(float(derive_collection_integral(row).result))
        quad = collection_time(torch.tensor([[float(x) for x in row]], dtype=run.dtype,
                                            device=run.device))
        measured.append(float(quad.value[0]))
        errors.append(float(quad.error[0]))
    scale = max(exact)
    floor = 64 * unit_roundoff(run.dtype) * scale
    yield compare(Route.NUMERIC, "Eq. 41: exact rational integral vs quadrature",
                  derived=np.array(exact), measured=np.array(measured), metric="absolute",
                  tolerance=Tolerance(2 * max(errors) + floor,
                                      f"2 x the panel-halving + tail estimate "
                                      f"{max(errors):.1e} + roundoff 64 u T_0 = {floor:.1e}"),
                  parameters={"p": run.params["exact_cases"]})


def _distributions(run: Run) -> tuple[list[torch.Tensor], list[dict[str, Any]]]:
    """Random (Dirichlet, flat and concentrated) and structured p, one row each."""
    p = run.params
    rng = run.rng("distributions")
    rows, labels = [], []
    for _ in range(p["random_cases"]):
        L = int(rng.integers(p["L_range"][0], p["L_range"][1] + 1))
        concentration = float(rng.choice(p["concentrations"]))
        rows.append(rng.dirichlet(np.full(L, concentration)))
        labels.append({"kind": "dirichlet", "L": L, "concentration": concentration})
    for mu in p["mu_patterns"]:
        for a in p["shapes"]:
            weights = np.asarray(mu) ** a
            rows.append(weights / weights.sum())
            labels.append({"kind": "mu^a", "mu": mu, "a": a})
    for L in p["zipf_L"]:
        weights = 1.0 / np.arange(1, L + 1)
        rows.append(weights / weights.sum())
        labels.append({"kind": "zipf", "L": L})
    tensors = [torch.tensor(r / r.sum(), dtype=run.dtype, device=run.device) for r in rows]
    return tensors, labels


def _bounds(run: Run) -> Iterator[Evidence]:
    rows, labels = _distributions(run)
    values, errors, lemma, main = [], [], [], []
    for row in rows:
        quad = collection_time(row[None])
        values.append(float(quad.value[0]))
        errors.append(float(quad.error[0]) / float(quad.value[0]))
        lemma.append(float(run.stated["bound"](row)))
        main.append(float(run.stated["main_text_bound"](row)))
    T0 = np.array(values)
    # The quadrature's relative error estimate, doubled, plus the float roundoff of the
    # sum over the nodes.
    tol = Tolerance(2 * max(errors) + 64 * unit_roundoff(run.dtype),
                    f"2 x largest relative quadrature error estimate {max(errors):.1e} + "
                    f"roundoff")
    parameters = {"cases": len(rows), "L_range": run.params["L_range"]}
    yield at_least(Route.PROPERTY, "T_0 >= Lemma 10's bound over sampled p", measured=T0,
                   bound=np.array(lemma), tolerance=tol, parameters=parameters)
    yield at_least(Route.PROPERTY, "T_0 >= the main text's bound (Thm. 8) over sampled p",
                   measured=T0, bound=np.array(main), tolerance=tol, parameters=parameters)
    widths = np.array([r.shape[-1] for r in rows])
    harmonic = np.array([float(sp.harmonic(int(L))) for L in widths])
    inverse_min = np.array([float(1 / r.min()) for r in rows])
    # Equality only at uniform p: every sampled p is non-uniform, so T_0 > L H_L strictly.
    gap = (T0 - widths * harmonic) / T0
    yield at_least(Route.PROPERTY, "strictness: (T_0 - L H_L) / T_0 above the quadrature "
                                   "error at non-uniform p", measured=gap,
                   bound=np.full_like(gap, 2 * tol.value), tolerance=Tolerance(
                       0.0, "a strict inequality: the gap must exceed the error itself"),
                   parameters={**parameters, "smallest relative gap": float(gap.min())})
    run.figure("which term of each printed max is active", {
        "Lemma 10: min_l 1/p_l > L H_L in": int((np.array(
            [float((1 / r).min()) for r in rows]) > widths * harmonic).sum()),
        "main text: H_L > 1/min p in": int((harmonic > inverse_min).sum()),
        "cases": len(rows)})
    run.figure("the two sharp terms combined: min over p of T_0 / max(1/min p, L H_L)",
               float((T0 / np.maximum(inverse_min, widths * harmonic)).min()))
    run.figure("worst cases", {"smallest T_0 / Lemma 10 bound": float((T0 / lemma).min()),
                               "smallest T_0 / main-text bound": float((T0 / main).min()),
                               "at": labels[int(np.argmin(T0 / np.array(main)))]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield _main_text_tightness(run)
    yield from _exact_cases(run)
    yield from _bounds(run)


# Where the main text's bound is attained (L = 1) or nearly (a rare coupon: the slack exceeds
# 1 by at most 1e-4 there, below the 1e-3 of the smallest wrong constant worth catching).
_TIGHT = [[1.0], [1e-4, 1 - 1e-4], [1e-5, 0.5 - 5e-6, 0.5 - 5e-6]]
_MU = [[1.0, 0.8, 0.6, 0.5, 0.4], [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]]

CLAIM = register(Claim(
    id="li2.lemma10",
    paper=PAPER,
    kind="lemma",
    title="Coupon-collector bound T_0 >= max(min_l 1/p_l, L H_L), equality iff p uniform",
    source="Lemma 10, Eq. 41, App. B.3 (Thm. 8)",
    statement=r"T_0=\int_0^\infty\Big(1-\prod_l(1-e^{-p_lt})\Big)dt\ \ge\ "
              r"\max\Big(\min_l\frac1{p_l},\ L\sum_{l=1}^L\frac1l\Big),\ \text{equality iff "
              r"}p\text{ uniform};\ h''(p)=-\frac{t^2}{4\sinh^2(pt/2)}",
    reading=r"p_l>0, \sum_lp_l=1, L\ge1. Both printed forms are tested: Lemma 10's "
            r"\max(\min_l1/p_l, LH_L) and the main text's \max(1/\min_lp_l, H_L). 'Equality "
            r"iff uniform' is read for T_0=LH_L. h(p)=\log(1-e^{-pt}), t>0.",
    parameters={
        "quick": {"uniform_L": [1, 2, 3, 4, 5, 6],
                  "exact_cases": [[0.5, 0.3, 0.2], [0.7, 0.2, 0.05, 0.05],
                                  [0.4, 0.3, 0.15, 0.1, 0.05]],
                  "tight_cases": _TIGHT,
                  "random_cases": 40, "L_range": [2, 20], "concentrations": [0.3, 1.0, 10.0],
                  "mu_patterns": _MU, "shapes": [1.5, 2.0, 4.0, 8.0], "zipf_L": [5, 20]},
        "full": {"uniform_L": list(range(1, 11)),
                 "exact_cases": [[0.5, 0.3, 0.2], [0.7, 0.2, 0.05, 0.05],
                                 [0.4, 0.3, 0.15, 0.1, 0.05],
                                 [0.3, 0.2, 0.2, 0.1, 0.1, 0.1]],
                 "tight_cases": _TIGHT,
                 "random_cases": 1000, "L_range": [2, 60],
                 "concentrations": [0.1, 0.3, 1.0, 10.0, 100.0],
                 "mu_patterns": _MU, "shapes": [1.5, 2.0, 4.0, 8.0, 16.0],
                 "zipf_L": [5, 20, 100]},
    },
    stated={"bound": stated_bound, "main_text_bound": main_text_bound,
            "curvature": stated_curvature},
    check=check,
    control=NegativeControl("L^2 sum_l 1/l in place of L sum_l 1/l (wrong power of L)",
                            {"bound": squared_width_bound}),
    # The width L (sampled, Zipf, and the exact uniform cases) and how far p is from uniform
    # (Dirichlet concentration: 0.1 puts most mass on few l, 1000 is nearly uniform, where the
    # strict gap is smallest). p_l > 0, sum_l p_l = 1 hold by construction.
    space={"L_range": Choice(([2, 5], [2, 20], [10, 60], [50, 200])),
           "concentrations": Choice(([0.1], [0.3, 1.0, 10.0], [100.0], [1000.0])),
           "zipf_L": Choice(([5, 20], [2, 100], [1000])),
           "uniform_L": Choice(([1, 2, 3], [1, 2, 3, 4, 5, 6], [7, 8])), "seed": SEED},
))
