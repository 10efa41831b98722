r"""li2.lemma7: Lemma 7 (App. B.3), Fréchet / log-Gumbel selection: for :math:`x_j` i.i.d. with
CDF :math:`e^{-x^{-a}}` and weights :math:`w_j > 0`,
:math:`P(\arg\max_jw_jx_j = i) = w_i^a/\sum_jw_j^a`.

Routes: the paper's selection rule (stated) and the log-Gumbel law it rests on, whose location
:math:`\frac1a\log\sum_jw_j^a` makes the rule a softmax of :math:`a\log w_j` (stated); sympy's
integral of the argmax probability from the Fréchet CDF, and the law of the maximum solved for
its Gumbel location, scale and mean (derived); seeded Monte Carlo of the argmax frequencies
and of :math:`\mathbb E\log\max_jw_jx_j`, compared in standard errors with a Bonferroni limit,
and the Monte Carlo error's decay in the number of draws, whose order must be the CLT's
:math:`N^{-1/2}` (a wrong rule leaves a bias that does not decay).
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
import torch

from numerics.li2.extreme_values import weighted_selection
from numerics.random import make_generator
from theory.derivation import Derivation
from theory.li2.extreme_values import a as shape_symbol
from theory.li2.extreme_values import derive_maximum_law, derive_selection
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
    compare,
    fit_trend,
    monte_carlo,
    register,
    symbolic_identity,
    trend_evidence,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._clt_regime import MIN_COUNT


def _log(x: Any) -> Any:
    return sp.log(x) if isinstance(x, sp.Basic) else torch.log(x)


def _powers(w: Any, a: Any) -> tuple[Any, Any]:
    """(w_j^a, sum_j w_j^a): a sympy sequence, or tensors ``(C, L)`` with ``a`` ``(C, 1)``."""
    if isinstance(w, (list, tuple)):
        powers = [x**a for x in w]
        return powers, sp.Add(*powers)
    powers = w**a
    return powers, powers.sum(-1, keepdim=True)


def stated_selection(w: Any, a: Any) -> Any:
    r"""Lemma 7: :math:`P(\arg\max_jw_jx_j = i) = w_i^a/\sum_jw_j^a`."""
    powers, total = _powers(w, a)
    return [x / total for x in powers] if isinstance(powers, list) else powers / total


def stated_location(w: Any, a: Any) -> Any:
    r"""The log-Gumbel reading: :math:`\log(w_jx_j) = \log w_j + G_j/a` with :math:`G_j`
    standard Gumbel, so :math:`\log\max_jw_jx_j` is Gumbel with scale :math:`1/a` and location
    :math:`\frac1a\log\sum_jw_j^a` (a softmax of :math:`a\log w`)."""
    _, total = _powers(w, a)
    return _log(total) / a if isinstance(total, sp.Basic) else _log(total[..., 0]) / a[..., 0]


def unit_scale_selection(w: Any, a: Any) -> Any:
    r"""Planted error: :math:`\log x_j` taken as a *standard* Gumbel (scale 1, not
    :math:`1/a`), which makes the rule :math:`w_i/\sum_jw_j`."""
    return stated_selection(w, 1 if isinstance(w, (list, tuple)) else torch.ones_like(a))


def unit_scale_location(w: Any, a: Any) -> Any:
    r"""The same planted error in the location: :math:`\log\sum_jw_j` (and scale 1)."""
    return stated_location(w, 1 if isinstance(w, (list, tuple)) else torch.ones_like(a))


@cache
def _selection_law(L: int) -> Derivation:
    """:func:`derive_selection`, once per ``L`` (pure; the control's run reuses it)."""
    return derive_selection(L)


@cache
def _maximum_law(L: int) -> Derivation:
    """:func:`derive_maximum_law`, once per ``L``."""
    return derive_maximum_law(L)


def _symbolic(run: Run) -> Iterator[Evidence]:
    L = run.params["symbolic_L"]
    probabilities, w = run.derivation(_selection_law(L)).result
    yield symbolic_identity(f"P(argmax_j w_j x_j = i), i = 1..{L}, symbolic w_j and a",
                            stated=sp.Matrix(run.stated["selection"](list(w), shape_symbol)),
                            derived=sp.Matrix(probabilities), parameters={"L": L})
    location, _, _, w = run.derivation(_maximum_law(L)).result
    yield symbolic_identity("Gumbel location of log max_j w_j x_j",
                            stated=run.stated["location"](list(w), shape_symbol),
                            derived=location, parameters={"L": L})


def _configs(run: Run) -> tuple[torch.Tensor, torch.Tensor]:
    configs = run.params["configs"]
    width = max(len(c["weights"]) for c in configs)
    if any(len(c["weights"]) != width for c in configs):
        raise ValueError("configs: every weight vector must have the same length L")
    w = torch.tensor([c["weights"] for c in configs], dtype=run.dtype, device=run.device)
    a = torch.tensor([c["a"] for c in configs], dtype=run.dtype, device=run.device)
    return w, a


@cache
def gumbel_mean_offset(L: int) -> sp.Expr:
    r"""The derived :math:`\mathbb E\log\max - \text{location} = \gamma/a` (a sympy expression
    in the shape symbol)."""
    location, _, mean, _ = _maximum_law(L).result
    return sp.simplify(mean - location)


def _monte_carlo(run: Run) -> Iterator[Evidence]:
    p = run.params
    w, a = _configs(run)
    # The simulation does not depend on the stated forms: the control's run reuses it.
    est = run.memo("selection",
                   lambda: weighted_selection(w, a, p["samples"], run.generator("selection")))
    stated = run.stated["selection"](w, a[:, None])
    counts = p["samples"] * stated * (1 - stated)
    run.assume("CLT regime for every frequency", bool((counts >= MIN_COUNT).all()),
               f"N p (1 - p) >= {MIN_COUNT:g} for every compared frequency",
               f"smallest N p (1 - p) = {float(counts.min()):.3g}")
    offset = gumbel_mean_offset(2)
    stated_mean = run.stated["location"](w, a[:, None]) + torch.tensor(
        [float(offset.subs(shape_symbol, float(x))) for x in a], dtype=run.dtype,
        device=run.device)
    entries = w.numel() + a.numel()
    tol = monte_carlo(tests=entries, note="the unit adds the summation roundoff floor")
    parameters = {"configs": p["configs"], "samples": p["samples"]}
    unit = est.frequency.unit
    yield compare(Route.MONTE_CARLO, "argmax frequencies, in standard errors",
                  stated=stated / unit, measured=est.frequency.mean / unit, metric="absolute",
                  tolerance=tol, parameters=parameters)
    unit = est.log_max.unit
    yield compare(Route.MONTE_CARLO, "E log max_j w_j x_j = location + gamma / a, in standard "
                                     "errors", stated=stated_mean / unit,
                  measured=est.log_max.mean / unit, metric="absolute", tolerance=tol,
                  parameters={**parameters, "derived offset": str(offset)})
    run.figure("argmax frequencies: Monte Carlo vs stated", {
        "measured": est.frequency.mean, "stated": stated,
        "max |z|": float(((est.frequency.mean - stated) / est.frequency.unit).abs().max())})


def _trend_frequencies(run: Run, w: torch.Tensor, a: torch.Tensor, p: dict[str, Any]
                       ) -> list[list[torch.Tensor]]:
    """Argmax frequencies for every (seed, sample size) of the trend (stated forms absent)."""
    return [[weighted_selection(w, a, int(n), make_generator(run.seed_for(f"trend {s} {n}")))
             .frequency.mean for n in p["samples"]] for s in range(p["seeds"])]


def _trend(run: Run) -> Iterator[Evidence]:
    p = run.params["trend"]
    w, a = _configs(run)
    stated = run.stated["selection"](w, a[:, None])
    sizes = np.asarray(p["samples"], dtype=np.float64)
    frequencies = run.memo("trend", lambda: _trend_frequencies(run, w, a, p))
    errors = torch.empty(p["seeds"], len(sizes), dtype=torch.float64)
    for s in range(p["seeds"]):
        for k in range(len(sizes)):
            errors[s, k] = (frequencies[s][k] - stated).square().mean().sqrt()
    fit = fit_trend(sizes, errors, limit="infinity")
    run.figure("trend: RMS error of the argmax frequencies in 1/N", fit.figure(0.5))
    # An unbiased frequency has error ~ N^(-1/2) (CLT); a wrong rule leaves a bias, order 0.
    yield from trend_evidence("RMS error of the argmax frequencies as N grows (order in 1/N)",
                              fit, stated_order=0.5, bound="at_least",
                              parameters={"samples": p["samples"], "seeds": p["seeds"]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _monte_carlo(run)
    yield from _trend(run)


_CONFIGS = [{"weights": [1.0, 1.25, 1.5, 2.0], "a": 2.0},
            {"weights": [1.0, 1.1, 1.2, 1.4], "a": 8.0},
            {"weights": [0.5, 1.0, 1.5, 2.0], "a": 1.5},
            {"weights": [1.0, 1.0, 1.0, 3.0], "a": 1.2},
            {"weights": [0.5, 1.0, 2.0, 4.0], "a": 0.7}]

#: Stress: one (weights, shape a) per run. a = 1 is left out: there the planted rule
#: w_i / sum_j w_j is the stated one, so the check has no power; a < 1 (Thm. 8 assumes
#: a > 1, the lemma only a > 0) is in.
_STRESS_CONFIGS = tuple([{"weights": w, "a": a}]
                        for w in ([1.0, 1.25, 1.5, 2.0], [0.5, 1.0, 2.0, 4.0],
                                  [1.0, 1.0, 1.0, 3.0])
                        for a in (0.5, 0.8, 2.0, 5.0))

CLAIM = register(Claim(
    id="li2.lemma7",
    paper=PAPER,
    kind="lemma",
    title="Frechet (log-Gumbel) selection: P(argmax w_j x_j = i) = w_i^a / sum_j w_j^a",
    source="Lemma 7, App. B.3 (used by Thm. 8)",
    statement=r"x_j\overset{\rm iid}{\sim}F(x)=e^{-x^{-a}}\ \Rightarrow\ "
              r"\Pr[\arg\max_jw_jx_j=i]=\frac{w_i^{a}}{\sum_jw_j^{a}}",
    reading=r"x_j>0 i.i.d. Fr\'echet with shape a>0 (the lemma calls it \alpha; Thm. 8 "
            r"assumes a>1, the lemma needs only a>0), weights w_j>0 fixed. Exact. The proof's "
            r"log-Gumbel reading: \log x_j is Gumbel with scale 1/a, so \log\max_jw_jx_j is "
            r"Gumbel with location \frac1a\log\sum_jw_j^a and scale 1/a; its mean "
            r"(location + \gamma/a) is what the Monte Carlo measures.",
    parameters={
        "quick": {"symbolic_L": 3, "configs": _CONFIGS, "samples": 2**18,
                  "trend": {"samples": [2**10, 2**12, 2**14, 2**16], "seeds": 6}},
        "full": {"symbolic_L": 4, "configs": _CONFIGS, "samples": 2**22,
                 "trend": {"samples": [2**10, 2**12, 2**14, 2**16, 2**18, 2**20],
                           "seeds": 10}},
    },
    stated={"selection": stated_selection, "location": stated_location},
    check=check,
    control=NegativeControl("log x_j read as a standard Gumbel (scale 1 instead of 1/a): "
                            "P = w_i / sum_j w_j, location log sum_j w_j",
                            {"selection": unit_scale_selection,
                             "location": unit_scale_location}),
    assumptions=(Assumption("a > 0 and w > 0", "Frechet shape and weights positive",
                            lambda p: all(c["a"] > 0 and min(c["weights"]) > 0
                                          for c in p["configs"])),),
    space={"configs": Choice(_STRESS_CONFIGS), "symbolic_L": IntRange(2, 4), "seed": SEED},
))
