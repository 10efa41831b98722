r"""li2.lemma4: Lemma 4, the Gaussian moment generating function
:math:`\mathbb Ee^{tZ} = e^{t^2/2}` for :math:`Z\sim\mathcal N(0,1)`.

Routes: the paper's :math:`e^{t^2/2}` (stated); sympy's integral of :math:`e^{tz}` against the
normal density, and the Taylor polynomial assembled from the moments
:math:`\int z^k\varphi` (derived); a seeded Monte Carlo mean of :math:`e^{tZ}` on a grid of
:math:`t`, compared in standard errors (measured).
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy as sp
import torch

from numerics.li2.gaussian_mc import mgf
from theory.li2.gaussian_moments import derive_mgf, derive_mgf_series, t
from verify import (
    SEED,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    compare,
    monte_carlo,
    register,
    symbolic_identity,
)
from verify.arrays import exp
from verify.bounds import Footprint, minimum, positive
from verify.claims.li2 import PAPER


def stated_mgf(x):
    r"""Lemma 4: :math:`\mathbb Ee^{tZ} = e^{t^2/2}`."""
    return exp(x**2 / 2)


def widened_mgf(x):
    """Planted error: the MGF of N(0, 1.1), e^(0.55 t^2) (the variance perturbed by 10%)."""
    return exp(sp.Rational(11, 20) * x**2 if isinstance(x, sp.Basic) else 0.55 * x**2)


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    stated = run.stated["mgf"]
    d = run.derivation(derive_mgf())
    yield symbolic_identity("E e^(tZ) by integration against the normal density",
                            stated=stated(t), derived=d.result)

    order = p["series_order"]
    series = run.derivation(derive_mgf_series(order)).result
    yield symbolic_identity(
        f"Taylor coefficients of t^0..t^{order}: moments E Z^k / k! vs e^(t^2/2)",
        stated=sp.expand(sp.series(stated(t), t, 0, order + 1).removeO()), derived=series,
        parameters={"order": order})

    ts = torch.linspace(-p["t_max"], p["t_max"], p["t_points"], dtype=run.dtype,
                        device=run.device)
    est = mgf(ts, p["samples"], run.generator("mgf"))
    unit = est.unit
    # |t| <= 1.5 keeps e^{tZ} a lognormal with sigma <= 1.5: finite variance, and at N >= 2^18
    # the skewness of the sample mean, (e^{t^2}+2)(e^{t^2}-1)^{1/2}/sqrt(N) <= 0.07, leaves
    # the normal approximation of the standardised error sound.
    yield compare(
        Route.MONTE_CARLO, "E e^(tZ) on a grid of t, in standard errors",
        stated=stated(ts) / unit, measured=est.mean / unit, metric="absolute",
        tolerance=monte_carlo(tests=len(ts), note="the unit adds the summation roundoff floor"),
        parameters={"t": ts, "samples": p["samples"]})
    run.figure("E e^(tZ): Monte Carlo mean, standard error, stated",
               {"t": ts, "mean": est.mean, "stderr": est.stderr, "stated": stated(ts)})


CLAIM = register(Claim(
    id="li2.lemma4",
    paper=PAPER,
    kind="lemma",
    title="Gaussian moment generating function",
    source="Lemma 4, App. A",
    statement=r"\mathbb E\,e^{tX}=e^{t^2/2}",
    reading=r"X\sim\mathcal N(0,1), t real. Exact: checked symbolically (the integral, and "
            r"the Taylor coefficients from the moments) and by Monte Carlo for |t|\le1.5 "
            r"(finite variance; larger |t| makes e^{tX} too heavy-tailed for the CLT at these "
            r"sample sizes).",
    parameters={
        "quick": {"series_order": 12, "t_max": 1.5, "t_points": 9, "samples": 2**18},
        "full": {"series_order": 24, "t_max": 1.5, "t_points": 25, "samples": 2**22},
    },
    stated={"mgf": stated_mgf},
    check=check,
    control=NegativeControl("variance perturbed: e^(0.55 t^2)", {"mgf": widened_mgf}),
    # The grid's half-width in t (at most 1.5, the Monte Carlo's CLT limit above) and the
    # Taylor order: the lemma holds for every real t.
    space={"t_max": LogUniform(0.05, 1.5), "series_order": IntRange(2, 16), "seed": SEED},
    bounds={"t_max": positive("the grid runs over [-t_max, t_max]: at t = 0 every "
                              "formula with value 1 holds"),
            "samples": minimum(2, "a standard error needs two samples")},
    # the Monte Carlo mean draws its samples in chunks: memory stays flat, time grows as
    # one exp per grid point and sample
    footprint=Footprint(work=(("t_points", "samples"),)),
))
