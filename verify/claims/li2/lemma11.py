r"""li2.lemma11: Lemma 11, :math:`\|\tilde Y\tilde Y^\top\tilde F\|_F\ge\sigma_{\min}(\tilde F)
\|\tilde Y\tilde Y^\top\|_F` for :math:`\tilde F` of full column rank and :math:`\tilde Y\ne0`.

Routes: the paper's lower bound (stated) against the left side computed from its definition,
exactly on the smallest instance we know and in float64 over sampled instances (measured);
and over instances that also satisfy realisability (A2), :math:`\mathrm{col}(\tilde Y)
\subseteq\mathrm{col}(\tilde F)`, an assumption the lemma does not state.

Why (A2) matters: :math:`\|A\tilde F\|_F^2=\mathrm{tr}(A\tilde F\tilde F^\top A^\top)`, and the
proof's step :math:`\tilde F\tilde F^\top\succeq\sigma_{\min}^2I` fails whenever :math:`K<n`
(:math:`\tilde F\tilde F^\top` has a null space); the bound holds on the columns of
:math:`\tilde Y\tilde Y^\top` that lie in :math:`\mathrm{col}(\tilde F)`, i.e. under (A2).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import sympy as sp
import torch

from numerics.random import make_generator, randn
from numerics.li2.two_layer import center, one_hot_labels
from theory.li2.bounds import smallest_counterexample
from verify import (
    EXACT,
    SEED,
    Assumption,
    Claim,
    Evidence,
    IntRange,
    NegativeControl,
    Route,
    Run,
    at_least,
    draw,
    register,
    roundoff,
)
from verify.claims.li2 import PAPER


def sigma_min(Ft: torch.Tensor) -> torch.Tensor:
    """The singular value in the paper's bound: the smallest of the K singular values."""
    return torch.linalg.svdvals(Ft)[..., -1]


def sigma_max(Ft: torch.Tensor) -> torch.Tensor:
    """Planted error: the largest singular value in place of the smallest."""
    return torch.linalg.svdvals(Ft)[..., 0]


def _sides(Ft: torch.Tensor, Yt: torch.Tensor, sigma) -> tuple[torch.Tensor, torch.Tensor]:
    A = Yt @ Yt.transpose(-1, -2)
    lhs = torch.linalg.matrix_norm(A @ Ft)
    return lhs, sigma(Ft) * torch.linalg.matrix_norm(A)


SPACE = {"n": IntRange(3, 40), "K": IntRange(1, 39), "M": IntRange(2, 8), "seed": SEED}
SIZES = ("n", "K", "M")


def _configs(run: Run) -> list[dict]:
    """The sampled instances: sizes drawn from SPACE, except those the parameters fix (a
    drawn K is kept at most n - 1, full column rank after centring; a fixed K is kept as
    given, so K >= n is a setting outside the lemma's assumption)."""
    fixed = {k: run.params[k] for k in SIZES if run.params[k] is not None}
    rng = run.rng("property")
    configs = []
    for _ in range(run.params["property_cases"]):
        c = {**draw(SPACE, rng), **fixed}
        if "K" not in fixed:
            c["K"] = min(c["K"], c["n"] - 1)
        configs.append(c)
    return configs


def _rank_possible(p: Mapping[str, Any]) -> bool:
    """K <= n - 1 for every instance: a drawn K always is; a fixed K against the fixed n,
    or against the smallest n SPACE draws."""
    return p["K"] is None or p["K"] <= (p["n"] if p["n"] is not None else SPACE["n"].lo) - 1


def _draw(c: dict, run: Run, realisable: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = make_generator(c["seed"])
    n, K, M = c["n"], c["K"], c["M"]
    Ft = center(randn(n, K, generator=g, device=run.device, dtype=run.dtype))
    if realisable:  # (A2): every column of Yt is a combination of the columns of Ft
        Yt = Ft @ randn(K, M, generator=g, device=run.device, dtype=run.dtype)
    else:
        Yt = center(one_hot_labels(n, M, g, device=run.device, dtype=run.dtype))
    return Ft, Yt


def check(run: Run) -> Iterator[Evidence]:
    d = run.derivation(smallest_counterexample())
    lhs_sq, rhs_sq, Ft, Yt = d.result
    sigma = run.stated["sigma"]
    # The stated bound at the exact instance: sigma applied to the exact Ft (K = 1, so any
    # singular value is |Ft|; the float conversion happens after the exact arithmetic).
    bound_sq = float(sigma(torch.tensor([[float(x)] for x in Ft], dtype=torch.float64)) ** 2
                     * float(sp.nsimplify(sum(e**2 for e in Yt * Yt.T))))
    yield at_least(Route.SYMBOLIC, "||Yt Yt^T Ft||^2 >= bound^2 at n=3, K=1, M=2 (exact sides)",
                   measured=float(lhs_sq), bound=bound_sq, tolerance=EXACT,
                   parameters={"n": 3, "K": 1, "M": 2, "F": [0, 1, 2], "labels": [0, 1, 0]},
                   note=f"left side {lhs_sq}, right side {rhs_sq} exactly")

    configs = _configs(run)
    for realisable, label in ((False, "one-hot labels (the lemma's assumptions)"),
                              (True, "realisable Yt = Ft C (A2 added)")):
        sides = [_sides(*_draw(c, run, realisable), sigma) for c in configs]
        lhs = torch.stack([s[0] for s in sides])
        bound = torch.stack([s[1] for s in sides])
        full_rank = all(bool(torch.linalg.matrix_rank(_draw(c, run, realisable)[0]) == c["K"])
                        for c in configs)
        run.assume(f"full column rank ({label})", full_rank, "Ft has rank K <= n-1",
                   probe=realisable)
        ratio = lhs / bound
        worst = int(torch.argmin(ratio))
        run.figure(f"min of lhs / bound: {label}",
                   {"min": float(ratio.min()), "median": float(ratio.median()),
                    "worst case": configs[worst]})
        n_max = max(c["n"] for c in configs)
        yield at_least(Route.PROPERTY, f"||Yt Yt^T Ft|| >= sigma_min ||Yt Yt^T||: {label}",
                       measured=lhs, bound=bound,
                       tolerance=roundoff(run.dtype, 8 * n_max,
                                          "Gram products and an SVD of length-n columns"),
                       parameters={"cases": len(configs), "space": str(SPACE)},
                       note=f"worst case {configs[worst]}")


CLAIM = register(Claim(
    id="li2.lemma11",
    paper=PAPER,
    kind="lemma",
    title="Lower bound ||Yt Yt^T Ft|| >= sigma_min(Ft) ||Yt Yt^T||",
    source="Lemma 11, App. C",
    statement=r"\tilde F\text{ of full column rank},\ \tilde Y\ne0\ \Rightarrow\ "
              r"\|\tilde Y\tilde Y^\top\tilde F\|_F\ge\sigma_{\min}(\tilde F)\,"
              r"\|\tilde Y\tilde Y^\top\|_F",
    reading=r"\sigma_{\min} is the K-th singular value of the n\times K matrix \tilde F "
            r"(K\le n-1 after centring); \tilde Y=P_1^\perp Y with one-hot Y. Checked as "
            r"stated, and separately with realisability (A2) added, which the proof needs.",
    # n, K, M: None draws each instance's sizes from SPACE; a number fixes that size for
    # every instance (what a stress search varies).
    parameters={"quick": {"property_cases": 60, "n": None, "K": None, "M": None},
                "full": {"property_cases": 2000, "n": None, "K": None, "M": None}},
    stated={"sigma": sigma_min},
    check=check,
    control=NegativeControl("sigma_max in place of sigma_min", {"sigma": sigma_max}),
    assumptions=(Assumption("K <= n - 1", "full column rank of Ft (Lemma 11) is possible "
                            "after centring for every instance", _rank_possible),),
    space={"n": IntRange(2, 40), "K": IntRange(1, 40), "M": IntRange(2, 8), "seed": SEED},
))
