r"""ns.cor4.8: the inverse-coercivity constant :math:`\mu(\lambda, q, L)` of the steepest mirror
flow of :math:`x = \prod_{i=1}^L w_i` at the initialisation :math:`w_1 = 0`,
:math:`w_{i\ge2} = \lambda` (Corollary 4.8, submitted numbering; later Corollary 4.10), and
review 1's two objections (verify/claims/ns/SOURCES.md §7, questions 1 and 2).

Routes: the public description's ordering "smaller q gives larger mu" (stated, a sign of
:math:`\partial\mu/\partial q`, for every :math:`\lambda > 0`); sympy's infimum of the inverse
metric derived from the parameter flow (:mod:`theory.ns.coercivity`, derived); the minimum over a
grid :math:`|x| \le 10` of the inverse metric measured as :math:`-\dot x` of the parameter flow
at unit gradient (forward-mode autograd) at points of the balance manifold found by bisection
(:mod:`numerics.ns.balance_manifold`, measured), also at perturbed initialisations.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cache

import numpy as np
import sympy as sp
import torch

from numerics.ns.balance_manifold import factors_on_manifold, measured_inverse_metric
from numerics.ns.steepest_flows import balance_offsets
from theory.ns.coercivity import LAM, derive_coercivity, derive_perturbed_coercivity
from theory.ns.reparam_balance import Q
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Reading,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    compare_cases,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._ladders import Grid, grid
from verify.claims.ns._scope import depth_scope, exponent_scope


def stated_ordering(lam):
    r"""Review 1's description: at :math:`w_1 = 0`, :math:`w_{i\ge2} = \lambda > 0`, a smaller
    q gives a larger :math:`\mu`, i.e. :math:`\operatorname{sign}\partial\mu/\partial q = -1`
    (no restriction on :math:`\lambda` is stated)."""
    return -1


def opposite_ordering(lam):
    r"""Planted error: the opposite monotonicity, a larger q gives a larger :math:`\mu`."""
    return 1


@cache
def derived_mu(L: int, q: float, lam: float) -> float:
    """The derived infimum evaluated in 30-digit arithmetic, then rounded once to float."""
    mu = derive_coercivity(L).result.mu
    return float(mu.subs({Q: sp.nsimplify(q), LAM: sp.nsimplify(lam)}).evalf(30))


def _offsets(G: Grid, lam: torch.Tensor) -> torch.Tensor:
    """c_1 = 0, c_i = lambda^q (i >= 2), 0 where masked: ``(L_max, B, 1)``."""
    c = (lam**G.q)[None].expand(G.mask.shape[0], -1, -1).clone()
    c[0] = 0
    return c * G.mask


def _x_grid(run: Run, B: int, half_points: int, x_max: float) -> torch.Tensor:
    """k x_max / half_points for k = -half_points..half_points: x = 0 exactly in the grid."""
    k = torch.arange(-half_points, half_points + 1, dtype=run.dtype, device=run.device)
    return (k * (x_max / half_points))[None].expand(B, -1)


# --- symbolic ---------------------------------------------------------------------------------

#: The scope of the ordering "smaller q gives larger mu": every lambda > 0 as printed (no
#: restriction is stated), or 0 < lambda < 1 (small initialisation), the reading under
#: which it holds. mu itself is checked for every lambda under both.
SCOPES = ("every lambda > 0", "0 < lambda < 1")


def _all_lambdas(run: Run) -> bool:
    return run.params["ordering_scope"] == SCOPES[0]


def _symbolic(run: Run) -> Iterator[Evidence]:
    depths = run.params["symbolic_depths"]
    results = [run.derivation(derive_coercivity(L)).result for L in depths]
    run.derivation(derive_perturbed_coercivity(max(depths)))
    stated = run.stated["ordering"]
    # each range of lambda is checked where the grid's lambdas reach it, so the regime map of
    # `stress` sees the symbolic route hold below 1 and fail above
    lams = run.params["grid"]["lam"]
    if any(lam < 1 for lam in lams):
        yield symbolic_identity("sign of d mu/dq for 0 < lambda < 1 (lambda = 1/(1+s), s > 0)",
                                stated=sp.Matrix([stated(LAM) for _ in results]),
                                derived=sp.Matrix([r.sign_below_one for r in results]),
                                parameters={"L": depths, "lambda": "(0, 1)"})
    if any(lam > 1 for lam in lams) and _all_lambdas(run):
        yield symbolic_identity("sign of d mu/dq for lambda > 1 (lambda = 1+s, s > 0): as "
                                "stated, for every lambda > 0",
                                stated=sp.Matrix([stated(LAM) for _ in results]),
                                derived=sp.Matrix([r.sign_above_one for r in results]),
                                parameters={"L": depths, "lambda": "(1, oo)"})
    run.figure("derived mu(lambda, q, L) = inf_x M(x), attained at x = 0 only",
               {f"L={r.L}": str(r.mu) for r in results})
    run.figure("Legendre (grad R onto R) at lambda > 0: M ~ L|x|^m, onto iff m <= 1",
               {f"L={r.L}": {"m": str(r.exponent), "onto iff": str(r.onto_condition)}
                for r in results})


# --- the grid minimum -------------------------------------------------------------------------

def _grid(run: Run) -> Iterator[Evidence]:
    p = run.params["grid"]
    G = grid({"q": p["q"], "L": p["L"], "lam": p["lam"]}, L_max=max(p["L"]), dtype=run.dtype,
             device=run.device)
    lam = torch.tensor([[lab["lam"]] for lab in G.labels], dtype=run.dtype, device=run.device)
    x = _x_grid(run, G.size, p["half_points"], p["x_max"])
    W = factors_on_manifold(x, _offsets(G, lam), G.q, G.mask)
    M = measured_inverse_metric(W, G.q, G.mask)
    smallest, where = M.min(-1)
    derived = [derived_mu(lab["L"], lab["q"], lab["lam"]) for lab in G.labels]
    u = unit_roundoff(run.dtype)
    # Both routes are products of <= 5 powers: a root of a product of (lambda^q)^(1/q) terms
    # (measured) and one rounding of the exact value (derived): a few ulps; 64 u covers L <= 5.
    yield compare_cases(Route.NUMERIC, "min over |x| <= 10 of the measured inverse metric vs "
                        "the derived mu", [(lab, d, float(s)) for lab, d, s in
                                           zip(G.labels, derived, smallest)],
                        names=("derived", "measured"),
                        tolerance=Tolerance(64 * u, "products of <= 5 powers, each a few ulps: "
                                                    "64 u"),
                        parameters={"q": p["q"], "L": p["L"], "lambda": p["lam"],
                                    "grid": f"{2 * p['half_points'] + 1} points, |x| <= "
                                            f"{p['x_max']}"})
    yield compare(Route.NUMERIC, "where the grid minimum is attained (x)",
                  derived=torch.zeros(G.size), measured=x[torch.arange(G.size), where],
                  metric="absolute",
                  tolerance=Tolerance(0.0, "x = 0 is a grid point; the argmin is a grid point"),
                  parameters={"grid spacing": p["x_max"] / p["half_points"]})
    centre = p["half_points"]
    outward = torch.cat([M[:, centre:], M[:, :centre + 1].flip(-1)])
    yield at_least(Route.PROPERTY, "M increases with |x| (each grid value >= its inner "
                   "neighbour, both sides)", measured=outward[:, 1:], bound=outward[:, :-1],
                   tolerance=Tolerance(64 * u, "two measured values, each a few ulps: 64 u"),
                   parameters={"cases": G.size})
    yield from _ordering(run, G, smallest)


def _ordering(run: Run, G: Grid, measured_mu: torch.Tensor) -> Iterator[Evidence]:
    """Signs of mu(q_{j+1}) - mu(q_j) along the q grid for each (L, lambda), split at
    lambda = 1."""
    p = run.params["grid"]
    qs = sorted(p["q"])
    rows: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}
    gaps = []
    for L, lam in itertools.product(p["L"], p["lam"]):
        idx = [int(G.where(q=q, L=L, lam=lam)[0]) for q in qs]
        for a, b in itertools.pairwise(idx):
            d_measured = float(measured_mu[b] - measured_mu[a])
            d_derived = derived_mu(L, G.labels[b]["q"], lam) - derived_mu(L, G.labels[a]["q"],
                                                                           lam)
            gaps.append(abs(d_measured) / float(max(measured_mu[a], measured_mu[b])))
            rows[lam < 1].append((int(run.stated["ordering"](lam)), int(np.sign(d_derived)),
                                  int(np.sign(d_measured))))
    u = unit_roundoff(run.dtype)
    run.assume("q-differences of mu resolved", min(gaps) > 1e3 * 64 * u,
               "every measured difference mu(q') - mu(q) is far above its roundoff (64 u)",
               f"smallest relative difference {min(gaps):.2e}")
    for below, label in ((True, "0 < lambda < 1"), (False, "lambda > 1")):
        if not rows[below] or not (below or _all_lambdas(run)):
            continue
        st, de, me = (np.array(col) for col in zip(*rows[below]))
        yield compare(Route.PROPERTY, f"sign of mu(q') - mu(q) for q < q' (stated: smaller q "
                      f"gives larger mu), {label}", stated=st, derived=de, measured=me,
                      metric="absolute",
                      tolerance=Tolerance(0.0, "signs of differences resolved far above "
                                               "roundoff (assumption checked): exact"),
                      parameters={"q": qs, "L": p["L"],
                                  "lambda": [v for v in p["lam"] if (v < 1) == below]})


# --- review 1: perturbed initialisations ------------------------------------------------------

def _perturbed_minima(run: Run, G: Grid, p: dict) -> tuple[torch.Tensor, torch.Tensor,
                                                             list[float]]:
    """Perturbed starts ``W0`` (w_1 ~ N(0, (sigma lambda)^2), w_i = lambda (1 + spread U)),
    the grid minimum of the measured inverse metric on their manifolds and the derived mu
    evaluated to 30 digits."""
    L_max = G.mask.shape[0]
    gen = run.generator("perturbed")
    z = torch.randn(G.size, generator=gen, dtype=torch.float64)
    spread = 2 * torch.rand(L_max, G.size, generator=gen, dtype=torch.float64) - 1
    W0 = torch.empty(L_max, G.size, 1, dtype=torch.float64)
    for b, lab in enumerate(G.labels):
        jitter = p["spread"] * spread[:, b] if lab["shape"] == "unequal" else 0.0
        W0[:, b, 0] = lab["lam"] * (1 + jitter)
        W0[0, b, 0] = lab["sigma"] * lab["lam"] * z[b]
    W0 = torch.where(G.mask > 0, W0.to(run.device, run.dtype), torch.ones(1, dtype=run.dtype,
                                                                           device=run.device))
    offsets = balance_offsets(W0, G.q, G.mask)
    x = _x_grid(run, G.size, p["half_points"], p["x_max"])
    M = measured_inverse_metric(factors_on_manifold(x, offsets, G.q, G.mask), G.q, G.mask)
    smallest = M.min(-1).values
    derived = []
    for b, lab in enumerate(G.labels):
        res = derive_perturbed_coercivity(lab["L"]).result
        values = {Q: sp.nsimplify(lab["q"]), **{a: sp.Float(float(abs(W0[i, b, 0])), 30)
                                                for i, a in enumerate(res.magnitudes)}}
        derived.append(float(res.mu.subs(values).evalf(30)))
    return W0, smallest, derived


def _perturbed(run: Run) -> Iterator[Evidence]:
    p = run.params["perturbed"]
    G = grid({"sigma": p["sigma"], "shape": ("equal", "unequal"), "q": p["q"], "L": p["L"],
              "lam": p["lam"]}, L_max=max(p["L"]), dtype=run.dtype, device=run.device)
    # the stated ordering does not enter: the control's run reuses the grid and the 30-digit
    # evaluations of the derived mu
    W0, smallest, derived = run.memo("perturbed", lambda: _perturbed_minima(run, G, p))
    u = unit_roundoff(run.dtype)
    yield compare_cases(Route.NUMERIC, "perturbed w_1 ~ N(0, sigma^2), unequal w_i: grid "
                        "minimum vs prod_{i>=2}(|w_i|^q - |w_1|^q)",
                        [(lab, d, float(s)) for lab, d, s in zip(G.labels, derived, smallest)],
                        names=("derived", "measured"),
                        tolerance=Tolerance(64 * u, "as for the unperturbed grid: 64 u"),
                        parameters={"sigma / lambda": p["sigma"], "spread": p["spread"],
                                    "q": p["q"], "L": p["L"], "lambda": p["lam"]})
    reference = {(lab["shape"], lab["q"], lab["L"], lab["lam"]): float(smallest[b])
                 for b, lab in enumerate(G.labels) if lab["sigma"] == 0}
    change: dict[str, float] = {}
    bound: dict[str, float] = {}
    for b, lab in enumerate(G.labels):
        if lab["shape"] != "equal" or lab["sigma"] == 0:
            continue
        key = f"sigma/lambda={lab['sigma']:g}"
        mu0 = reference[("equal", lab["q"], lab["L"], lab["lam"])]
        change[key] = max(change.get(key, 0.0), abs(float(smallest[b]) - mu0) / mu0)
        bound[key] = max(bound.get(key, 0.0), (lab["L"] - 1) * float(
            abs(W0[0, b, 0]) / lab["lam"]) ** lab["q"])
    run.figure("continuity in sigma: max relative change of mu (w_i = lambda), and the "
               "derived bound (L-1)(|w_1|/lambda)^q", {"measured": change, "bound": bound})
    # Any trajectory from W0 keeps the offsets (ns.lemma4.4), so M >= mu(sigma) along it, and
    # since M increases with |x| its minimum lies in [mu(sigma), M(x_0)].
    start = measured_inverse_metric(W0, G.q, G.mask)[:, 0]
    gap: dict[str, float] = {}
    for b, lab in enumerate(G.labels):
        key = f"sigma/lambda={lab['sigma']:g}"
        gap[key] = max(gap.get(key, 0.0), float(start[b]) / derived[b] - 1)
    run.figure("min of M along any trajectory from the perturbed start lies in [mu(sigma), "
               "M(x_0)]: max M(x_0)/mu(sigma) - 1", gap)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _grid(run)
    yield from _perturbed(run)


CLAIM = register(Claim(
    id="ns.cor4.8",
    aliases=("ns.cor4.10",),
    paper=PAPER,
    kind="corollary",
    title="Coercivity constant of the steepest mirror flow at w_1 = 0, w_i = lambda",
    source="Corollary 4.8 (submitted numbering; later Corollary 4.10); SOURCES §7 q. 1-2",
    statement=r"\text{(public description)}\ \text{at } w_1=0,\ w_i=\lambda>0\ (i\ge2)\text{, "
              r"}R_{L_p,L}\text{ is inverse }\mu\text{-coercive with an explicit }\mu(\lambda,"
              r"q,L)\text{; a smaller }q\text{ gives a larger }\mu.",
    reading=r"Toolkit's reading: inverse mu-coercive means every diagonal entry of "
            r"(\nabla^2R)^{-1} is >= mu, i.e. the inverse metric M=1/R'' of "
            r"\dot x=-M(x)sign(g)|g|^{q-1} satisfies M(x)>=mu for all x; mu is the best "
            r"constant inf_x M(x). lambda is the factor value (not the balance constant, "
            r"under which mu=lambda^{L-1} would not depend on q): offsets c_1=0, "
            r"c_i=lambda^q, P(u)=u(u+lambda^q)^{L-1}=|x|^q, M=P'(u). Derived: M increases "
            r"strictly with |x|, so mu=M(0)=lambda^{q(L-1)}, attained at x=0 only, and "
            r"d mu/dq=(L-1)log(lambda) mu. Finding: 'smaller q gives larger mu' holds exactly "
            r"for 0<lambda<1 (small initialisation), is reversed for lambda>1 and void at "
            r"lambda=1 (mu=1 for every q); smallest case L=2, lambda=2: mu=2^q, so q=1 gives "
            r"mu=2 < 4 (q=2). As stated for every lambda>0 the claim fails; under "
            r"reading B (lambda<1 added, parameter ordering_scope) it holds. Review 1, q. 1: "
            r"for lambda>0, "
            r"R''=1/M<=1/mu is finite and positive, R is strictly convex and C^1 on all of R "
            r"(so essentially smooth), and M~L|x|^m, m=q(L-1)/L, so grad R is onto R iff "
            r"m<=1, i.e. q<=L/(L-1) (every q for L=2; q<=3/2 for L=3; q<=5/4 for L=5): "
            r"Thm 4.2's hypotheses (separable, inverse mu-coercive, mu>0) hold for every "
            r"(q, L) at lambda>0, Legendre type onto R only for m<=1; at lambda=0, mu=0. "
            r"Review 1, q. 2: w_1 ~ N(0, sigma^2) and unequal w_i give "
            r"mu=prod_{i>=2}(|w_i|^q-|w_1|^q), continuous in the initialisation with "
            r"relative change <=(L-1)(|w_1|/lambda)^q (Hoelder of order q); measured and "
            r"reported as figures (escape times are ns.x.escape's).",
    parameters={
        "quick": {
            "ordering_scope": SCOPES[0],
            "symbolic_depths": [2, 3, 5],
            "grid": {"q": [1.0, 1.5, 2.0], "L": [2, 3, 5], "lam": [0.01, 0.1, 0.5, 2.0],
                     "half_points": 200, "x_max": 10.0},
            "perturbed": {"sigma": [0.0, 1e-6, 1e-3], "spread": 0.1, "q": [1.0, 1.5, 2.0],
                          "L": [2, 3, 5], "lam": [0.1, 2.0], "half_points": 50,
                          "x_max": 10.0},
        },
        "full": {
            "ordering_scope": SCOPES[0],
            "symbolic_depths": [2, 3, 4, 5],
            "grid": {"q": [1.0, 1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5],
                     "lam": [0.01, 0.1, 0.5, 0.9, 1.1, 2.0], "half_points": 2000,
                     "x_max": 10.0},
            "perturbed": {"sigma": [0.0, 1e-6, 1e-3], "spread": 0.1,
                          "q": [1.0, 1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5],
                          "lam": [0.01, 0.1, 0.5, 2.0], "half_points": 200, "x_max": 10.0},
        },
    },
    stated={"ordering": stated_ordering},
    check=check,
    control=NegativeControl("the opposite monotonicity: a larger q gives a larger mu",
                            {"ordering": opposite_ordering}),
    assumptions=(
        # no "lambda < 1": Cor. 4.8 states none, so lambda > 1 is inside the claim and the
        # reversal there is the finding (stress draws both sides through grid.lam)
        exponent_scope("grid.q", "perturbed.q"),
        depth_scope("grid.L", "perturbed.L", "symbolic_depths"),
    ),
    readings=(Reading("B (lambda < 1)", "the ordering read with the scope 0 < lambda < 1 "
                      "(small initialisation) that the statement omits",
                      parameters={"ordering_scope": SCOPES[1]}, compares_only=True),),
    space={"ordering_scope": Choice(SCOPES),
           "grid.lam": Choice(((0.01,), (0.1,), (0.5,), (0.9,), (1.1,), (2.0,), (5.0,),
                               (0.1, 2.0))),
           "grid.q": Choice(((1.0, 2.0), (1.0, 1.5, 2.0), (1.25, 1.75), (1.5, 2.0),
                             (1.0, 1.25))),
           "grid.L": Choice(((2,), (3,), (5,), (2, 3, 5))),
           "perturbed.lam": Choice(((0.1,), (0.5,), (2.0,))),
           "seed": SEED},
))
