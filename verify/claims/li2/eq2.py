r"""li2.eq2 (alias li2.d0): the backpropagated gradient :math:`G_F = -\partial J/\partial F`
(Eq. 2) of the loss of Eq. 1.

Routes: the paper's Eq. 2 (stated); sympy's derivative of the loss entry by entry (derived);
torch autograd of the loss in the run's dtype (measured), at one size and over sampled sizes.
"""
from __future__ import annotations

from collections.abc import Iterator

import torch

from numerics.random import make_generator, randn
from numerics.li2.two_layer import backprop_gradient, one_hot_labels
from theory.li2.objective import derive_backprop_gradient
from verify import (
    SEED,
    Claim,
    Evidence,
    IntRange,
    NegativeControl,
    Route,
    Run,
    compare,
    compare_cases,
    draw,
    register,
    roundoff,
    symbolic_identity,
)
from verify.arrays import eye, ones, transpose
from verify.bounds import Footprint, minimum
from verify.claims.li2 import PAPER


def centering(n, like):
    return eye(n, like) - ones(n, like) @ transpose(ones(n, like)) / n


def stated_G_F(F, V, Y):
    """Eq. 2 as printed: :math:`P_1^\\perp (Y - FV) V^\\top`."""
    return centering(F.shape[0], F) @ (Y - F @ V) @ transpose(V)


def uncentred_G_F(F, V, Y):
    """Planted error: the centring dropped (what the author's code logs as dF_norm)."""
    return (Y - F @ V) @ transpose(V)


SPACE = {"n": IntRange(2, 40), "K": IntRange(1, 24), "M": IntRange(1, 9), "seed": SEED}


def _draw_problem(n: int, K: int, M: int, gen: torch.Generator, run: Run):
    F = randn(n, K, generator=gen, device=run.device, dtype=run.dtype)
    V = randn(K, M, generator=gen, device=run.device, dtype=run.dtype)
    Y = one_hot_labels(n, M, gen, device=run.device, dtype=run.dtype)
    return F, V, Y


def _tolerance(run: Run, n: int, K: int, M: int):
    # Each entry of P(Y - FV)V^T chains a length-K dot product, a length-n mean and a
    # length-M dot product; autograd sums the same products in another order. The forward
    # error of such sums is bounded by (their length) x u relative to the largest term; 2x
    # covers the two routes.
    return roundoff(run.dtype, 2 * (n + K + M), "summation error of both routes")


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    stated = run.stated["G_F"]

    s = p["symbolic_size"]
    d = run.derivation(derive_backprop_gradient(s["n"], s["K"], s["M"]))
    G, F, V, Y = d.result
    yield symbolic_identity("G_F on symbolic matrices", stated=stated(F, V, Y), derived=G,
                            parameters=s)

    n, K, M = p["n"], p["K"], p["M"]
    F, V, Y = _draw_problem(n, K, M, run.generator("problem"), run)
    yield compare(Route.NUMERIC, "G_F at one random problem",
                  stated=stated(F, V, Y), measured=backprop_gradient(F, V, Y),
                  tolerance=_tolerance(run, n, K, M), parameters={"n": n, "K": K, "M": M})

    rng = run.rng("property")
    cases = []
    for _ in range(p["property_cases"]):
        c = draw(SPACE, rng)
        F, V, Y = _draw_problem(c["n"], c["K"], c["M"], make_generator(c["seed"]),
                                run)
        cases.append((c, stated(F, V, Y), backprop_gradient(F, V, Y)))
    hi = {k: SPACE[k].hi for k in ("n", "K", "M")}
    yield compare_cases(Route.PROPERTY, "G_F over sampled sizes", cases,
                        tolerance=_tolerance(run, **hi), parameters={"space": str(SPACE)})


CLAIM = register(Claim(
    id="li2.eq2",
    aliases=("li2.d0",),
    paper=PAPER,
    kind="equation",
    title="Backpropagated gradient G_F of the centred MSE loss",
    source="Eqs. 1-2, §2",
    statement=r"J(V,W)=\tfrac12\|P_1^\perp(Y-\sigma(XW)V)\|_F^2,\quad "
              r"G_F=-\partial J/\partial F=P_1^\perp(Y-FV)V^\top",
    reading=r"F is treated as a free n\times K matrix (the identity does not depend on "
            r"\sigma); P_1^\perp=I_n-\tfrac1n\mathbf 1\mathbf 1^\top centres over samples, "
            r"and no weight decay enters the derivative in F. Labels Y are one-hot rows.",
    parameters={
        "quick": {"symbolic_size": {"n": 3, "K": 2, "M": 2}, "n": 64, "K": 16, "M": 5,
                  "property_cases": 25},
        "full": {"symbolic_size": {"n": 4, "K": 3, "M": 3}, "n": 2016, "K": 2048, "M": 71,
                 "property_cases": 200},
    },
    stated={"G_F": stated_G_F},
    check=check,
    control=NegativeControl("centring dropped: G_F = (Y - FV)V^T", {"G_F": uncentred_G_F}),
    # Up to the paper's Fig. 3 sizes (n = 2016, K = 2048, M = 71); the symbolic route's
    # entries grow as n K M, so its sizes stay small.
    space={"n": IntRange(2, 2016), "K": IntRange(1, 2048), "M": IntRange(2, 71),
           "symbolic_size.n": IntRange(2, 4), "symbolic_size.K": IntRange(1, 3), "seed": SEED},
    bounds={**{f"{at}n": minimum(2, "P_1^perp of one sample is 0: both sides vanish")
               for at in ("", "symbolic_size.")},
            **{f"{at}M": minimum(2, "one class makes Y constant: nothing to learn")
               for at in ("", "symbolic_size.")}},
    # the centring P_1^perp is n x n, beside F, Y and V
    footprint=Footprint(memory=(("n", "n"), ("n", "K"), ("n", "M"), ("K", "M"))),
))
