r"""li2.lemma2: Muon's direction :math:`\hat G = UV^\top` is an ascent direction for
:math:`\mathcal E_{\rm joint}`, with :math:`\langle \hat G, G\rangle = \operatorname{tr}D =
\|G\|_\ast \ge 0`, and it vanishes exactly where :math:`G` does (Lemma 2, §6).

Routes: the paper's :math:`\operatorname{tr} D` (stated, a function of the singular values);
the Frobenius inner product reduced from its definition in sympy for every real 2x2 matrix and
for symbolic factors of any size (derived); the SVD polar factor against singular values from a
symmetric eigensolver, a second polar route via :math:`G(G^\top G)^{-1/2}`, forward-mode autograd
of the energy along :math:`\hat G`, and :math:`\|\hat G\|_F^2 = \operatorname{rank} G` over
sampled shapes and ranks (measured). Figures: how far the author's five-step Newton-Schulz
iteration (verify/claims/li2/SOURCES.md §6.4) is from the exact polar factor.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import sympy as sp
import torch

from numerics.li2.energy import directional_derivative, joint_energy_gradient
from numerics.polar import (
    AUTHOR_NS_COEFFICIENTS,
    frobenius_inner,
    newton_schulz,
    polar_eigh,
    polar_svd,
    singular_values_eigvalsh,
)
from numerics.random import (
    make_generator,
    randn,
    random_low_rank,
    random_with_singular_values,
)
from numerics.li2.two_layer import one_hot_labels
from theory.li2.polar import (
    derive_newton_schulz_sign,
    derive_polar_inner_product_2x2,
    derive_trace_argument,
)
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
    conditioned,
    draw,
    register,
    roundoff,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import transpose
from verify.claims.li2 import PAPER


def _sum_last(values: Any) -> Any:
    """Sum of a sympy sequence, or of a tensor over its last axis."""
    if isinstance(values, (list, tuple, sp.MatrixBase)):
        return sp.Add(*values)
    return values.sum(-1)


def stated_nuclear_norm(singular_values: Any) -> Any:
    r"""Lemma 2 as printed: :math:`\langle \hat G, G\rangle = \operatorname{tr}D = \|G\|_\ast`,
    the sum of the singular values (a sympy sequence, or a tensor over its last axis)."""
    return _sum_last(singular_values)


def frobenius_norm_instead(singular_values: Any) -> Any:
    r"""Planted error: :math:`\|G\|_F = (\sum_i d_i^2)^{1/2}` in place of :math:`\|G\|_\ast`
    (equal only for rank <= 1)."""
    if isinstance(singular_values, (list, tuple, sp.MatrixBase)):
        return sp.sqrt(_sum_last([d**2 for d in singular_values]))
    return _sum_last(singular_values.square()).sqrt()


def stated_proof_trace(U: Any, D: Any, V: Any) -> Any:
    r"""The proof's rewriting :math:`\langle UV^\top, UDV^\top\rangle =
    \operatorname{tr}(VU^\top UDV^\top)`, evaluated on given factors."""
    M = V @ transpose(U) @ U @ D @ transpose(V)
    return M.trace() if isinstance(M, sp.MatrixBase) else M.diagonal(0, -2, -1).sum(-1)


# Largest error bound at which the two polar routes are still compared (see _polar_numeric).
ROUTE_BOUND = 1e-2

SHAPE_SPACE = {"m": IntRange(1, 24), "n": IntRange(1, 24), "seed": SEED}
ENERGY_SPACE = {"n": IntRange(4, 60), "d": IntRange(1, 12), "M": IntRange(2, 6),
                "K": IntRange(1, 16), "seed": SEED}


def _energy_problem(n: int, d: int, M: int, K: int, gen: torch.Generator, run: Run):
    """Gaussian inputs X (n x d), one-hot labels Y (n x M), Gaussian W (d x K)."""
    X = randn(n, d, generator=gen, device=run.device, dtype=run.dtype)
    Y = one_hot_labels(n, M, gen, device=run.device, dtype=run.dtype)
    W = randn(d, K, generator=gen, device=run.device, dtype=run.dtype)
    return W, X, Y


def _ascent_values(size: dict[str, int], gen: torch.Generator, run: Run):
    """(stated ||G||_*, measured d/de E_joint(W + e G_hat) at 0) with G = grad E_joint(W)."""
    W, X, Y = _energy_problem(size["n"], size["d"], size["M"], size["K"], gen, run)
    G = joint_energy_gradient(W, X, Y)
    stated = run.stated["nuclear_norm"](singular_values_eigvalsh(G))
    return G, stated, directional_derivative(W, X, Y, polar_svd(G))


def _ascent_tolerance(run: Run, n: int, d: int, M: int, K: int):
    # Both routes chain sums of length n (over samples, also in the centring), d (X w),
    # M (Y~^T F) and K (nodes); the forward error of such sums is <~ (length) x u relative to
    # the sum of |terms|, and every term of <G_hat, G> = sum_i d_i is nonnegative. 2x covers
    # the two routes.
    return roundoff(run.dtype, 2 * (n + d + M + K),
                    "sum lengths of the forward-mode and eigenvalue routes")


def _symbolic(run: Run) -> Iterator[Evidence]:
    nuclear = run.stated["nuclear_norm"]
    for reflection in (False, True):
        d = run.derivation(derive_polar_inner_product_2x2(reflection))
        inner, singular_values = d.result
        label = "det G <= 0 (U a reflection)" if reflection else "det G >= 0 (U a rotation)"
        yield symbolic_identity(f"<U V^T, G> for every real 2x2 G, {label}",
                                stated=nuclear(list(singular_values)), derived=inner,
                                parameters={"U": "R(theta) diag(1,-1)" if reflection
                                            else "R(theta)", "V": "R(phi)"})

    s = run.params["symbolic_size"]
    d = run.derivation(derive_trace_argument(s["rows"], s["cols"], s["rank"]))
    inner, gram_form, trace_d, U, D, V = d.result
    proof = run.stated["proof_trace"](U, D, V)
    yield symbolic_identity("proof step: <U V^T, U D V^T> = tr(V U^T U D V^T), any U, V",
                            stated=proof, derived=inner, parameters=s)
    yield symbolic_identity("cyclicity: tr(V U^T U D V^T) = tr((U^T U) D (V^T V)), any U, V",
                            stated=proof, derived=gram_form, parameters=s)
    yield symbolic_identity("<U V^T, U D V^T> with orthonormal U, V (general rank)",
                            stated=nuclear(list(D.diagonal())), derived=trace_d, parameters=s)


def _polar_numeric(run: Run) -> Iterator[Evidence]:
    p = run.params
    gen = run.generator("shapes")
    inner_cases, route_cases = [], []
    kappa_max, size_max = 1.0, 1
    for m, n, r in p["shapes"]:
        G = random_low_rank(p["batch"], m, n, r, gen, device=run.device, dtype=run.dtype)
        singular_values = singular_values_eigvalsh(G)
        config = {"m": m, "n": n, "rank": r, "batch": p["batch"]}
        inner_cases.append((config, run.stated["nuclear_norm"](singular_values),
                            frobenius_inner(polar_svd(G), G)))
        if r == min(m, n):
            kappa = singular_values[..., 0] / singular_values[..., -1]
            # G (G^T G)^{-1/2} is only checkable where its error bound 4 n kappa^2 u (below)
            # is at most 1e-2; ill-conditioned draws (float32, square G) are left out, counted.
            kept = 4 * max(m, n) * kappa.square() * unit_roundoff(run.dtype) <= ROUTE_BOUND
            if bool(kept.any()):
                kappa_kept = float(kappa[kept].max())
                kappa_max, size_max = max(kappa_max, kappa_kept), max(size_max, m, n)
                route_cases.append(({**config, "kept": int(kept.sum()), "kappa": kappa_kept},
                                    polar_svd(G[kept]), polar_eigh(G[kept])))
    m_max = max(m for m, _, _ in p["shapes"])
    n_max = max(n for _, n, _ in p["shapes"])
    # Each route is backward stable with error <~ (m+n) u ||G||_2 <= (m+n) u ||G||_*: the SVD
    # of G and the symmetric eigensolver on the (m+n)-square Jordan-Wielandt matrix; 2x for two.
    yield compare_cases(Route.NUMERIC, "<polar(G), G> (SVD) vs ||G||_* (eigvalsh), batched",
                        inner_cases, names=("stated", "measured"),
                        tolerance=roundoff(run.dtype, 2 * (m_max + n_max),
                                           "backward errors of SVD and eigvalsh"),
                        parameters={"shapes": p["shapes"], "batch": p["batch"]})
    # G (G^T G)^{-1/2} passes through the Gram matrix, whose condition number is kappa^2.
    yield compare_cases(Route.NUMERIC, "polar factor: SVD U V^T vs G (G^T G)^{-1/2}",
                        route_cases, names=("measured", "derived"),
                        tolerance=conditioned(run.dtype, kappa_max**2, size_max,
                                              "inverse square root of the Gram matrix"),
                        parameters={"kappa_max": kappa_max})


def _ascent(run: Run) -> Iterator[Evidence]:
    p = run.params
    size = p["energy"]
    G, stated, measured = _ascent_values(size, run.generator("energy"), run)
    run.assume("gradient nonzero", bool(stated > 0),
               "G = grad E_joint(W) != 0 at the sampled W, so the ascent is strict",
               f"||G||_* = {float(stated):.3e}, ||G||_F = {float(G.square().sum().sqrt()):.3e}")
    run.figure("directional derivative along G_hat at the one problem", float(measured))
    yield compare(Route.NUMERIC, "d/de E_joint(W + e G_hat) at e=0 vs ||G||_*",
                  stated=stated, measured=measured, tolerance=_ascent_tolerance(run, **size),
                  parameters=size)

    rng = run.rng("energy-property")
    cases, smallest = [], math.inf
    for _ in range(p["energy_cases"]):
        c = draw(ENERGY_SPACE, rng)
        size_c = {k: c[k] for k in ("n", "d", "M", "K")}
        _, stated, measured = _ascent_values(size_c, make_generator(c["seed"]), run)
        smallest = min(smallest, float(measured))
        cases.append((c, stated, measured))
    run.figure("smallest directional derivative over sampled problems", smallest)
    hi = {k: ENERGY_SPACE[k].hi for k in ("n", "d", "M", "K")}
    yield compare_cases(Route.PROPERTY, "ascent rate = ||G||_* over sampled energy problems",
                        cases, names=("stated", "measured"),
                        tolerance=_ascent_tolerance(run, **hi),
                        parameters={"space": str(ENERGY_SPACE)})


def _stationarity(run: Run) -> Iterator[Evidence]:
    p = run.params
    rng = run.rng("stationarity")
    cases = []
    for k in range(p["stationarity_cases"]):
        c = draw(SHAPE_SPACE, rng)
        # The first case is G = 0, where the convention polar(0) = 0 is what is tested.
        c["rank"] = 0 if k == 0 else int(rng.integers(0, min(c["m"], c["n"]) + 1))
        G = random_low_rank(1, c["m"], c["n"], c["rank"], make_generator(c["seed"]),
                            device=run.device, dtype=run.dtype)
        cases.append((c, float(c["rank"]), float(polar_svd(G).square().sum())))
    hi = max(SHAPE_SPACE["m"].hi, SHAPE_SPACE["n"].hi)
    # ||U_r V_r^T||_F^2 = sum of r squared column norms of orthonormal factors; each is 1 up
    # to the SVD's orthogonality error <~ max(m, n) u; 2x for U and V.
    yield compare_cases(Route.PROPERTY, "||G_hat||_F^2 = rank(G) (so G_hat = 0 iff G = 0)",
                        cases, names=("stated", "measured"),
                        tolerance=roundoff(run.dtype, 2 * hi, "orthogonality of U and V"),
                        parameters={"space": str(SHAPE_SPACE), "rank": "uniform in 0..min(m,n)"})


def _newton_schulz_figures(run: Run) -> None:
    p = run.params
    d = run.derivation(derive_newton_schulz_sign(
        [tuple(sp.Rational(str(x)) for x in abc) for abc in AUTHOR_NS_COEFFICIENTS]))
    run.figure("NS: every step keeps singular values positive (exact)", d.result)
    gen = run.generator("newton-schulz")
    rows = []
    for m, n in p["ns_shapes"]:
        k = min(m, n)
        for condition in p["ns_conditions"]:
            spectrum = torch.logspace(0, -math.log10(condition), k, dtype=torch.float64)
            G = random_with_singular_values(spectrum, m, n, p["batch"], gen,
                                            device=run.device, dtype=run.dtype)
            NS, exact = newton_schulz(G), polar_svd(G)
            ns_values = torch.linalg.svdvals(NS)
            inner = frobenius_inner(NS, G)
            # G was built with this spectrum, so ||G||_* = sum(spectrum) up to rounding.
            ratio = inner / spectrum.sum().item()
            distance = torch.linalg.matrix_norm(NS - exact) / torch.linalg.matrix_norm(exact)
            rows.append({"m": m, "n": n, "condition": condition,
                         "sv_NS_min": float(ns_values.min()), "sv_NS_max": float(ns_values.max()),
                         "rel_distance_to_UV^T_max": float(distance.max()),
                         "<NS,G>/||G||_*_min": float(ratio.min()),
                         "<NS,G>/||G||_*_max": float(ratio.max()),
                         "<NS,G> >= 0 in all": bool((inner >= 0).all())})
    run.figure("NS(G) against the exact polar factor", rows)


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _polar_numeric(run)
    yield from _ascent(run)
    yield from _stationarity(run)
    if not run.is_control:  # figures inform, they do not decide: no need to redo them
        _newton_schulz_figures(run)


CLAIM = register(Claim(
    id="li2.lemma2",
    paper=PAPER,
    kind="lemma",
    title="Muon's direction U V^T ascends E_joint at rate ||G||_* and vanishes only where G does",
    source="Lemma 2, §6",
    statement=r"G=UDV^\top,\ \hat G=UV^\top:\ \langle\hat G,G\rangle=\operatorname{tr}D="
              r"\|G\|_\ast\ge0\ \text{for}\ "
              r"\mathcal E_{\rm joint}(W)=\sum_j\mathcal E(\mathbf w_j),"
              r"\ \text{and}\ \hat G=0\iff G=0",
    reading=r"G=\nabla_W\mathcal E_{\rm joint}\in\mathbb R^{d\times K} with "
            r"\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|^2, \sigma(x)=x^2, "
            r"\tilde Y=P_1^\perp Y; \langle\cdot,\cdot\rangle is the Frobenius inner product; "
            r"the SVD is the compact one over nonzero singular values, so \hat 0=0 (a full SVD "
            r"of a rank-deficient G has arbitrary singular vectors and \hat G\ne0 at G=0); "
            r"'ascent' means d/d\epsilon\,\mathcal E_{\rm joint}(W+\epsilon\hat G)|_0\ge0. "
            r"Muon as run by the author uses 5 Newton-Schulz steps, which only approximate "
            r"\hat G (reported as figures, not as the claim).",
    parameters={
        "quick": {"symbolic_size": {"rows": 3, "cols": 2, "rank": 2},
                  "shapes": [[6, 4, 4], [4, 6, 4], [5, 5, 5], [16, 8, 3], [8, 16, 8],
                             [12, 12, 0], [64, 32, 1], [7, 9, 2]],
                  "batch": 16,
                  "energy": {"n": 30, "d": 8, "M": 3, "K": 5}, "energy_cases": 20,
                  "stationarity_cases": 40,
                  "ns_shapes": [[16, 16], [32, 8]], "ns_conditions": [1.0, 1e2, 1e4, 1e8]},
        "full": {"symbolic_size": {"rows": 4, "cols": 3, "rank": 3},
                 "shapes": [[6, 4, 4], [4, 6, 4], [5, 5, 5], [16, 8, 3], [8, 16, 8],
                            [12, 12, 0], [64, 32, 1], [7, 9, 2], [142, 512, 142],
                            [142, 512, 40], [128, 128, 128]],
                 "batch": 8,
                 "energy": {"n": 400, "d": 22, "M": 11, "K": 64}, "energy_cases": 100,
                 "stationarity_cases": 300,
                 "ns_shapes": [[16, 16], [32, 8], [142, 512], [142, 2048]],
                 "ns_conditions": [1.0, 1e2, 1e4, 1e8]},
    },
    stated={"nuclear_norm": stated_nuclear_norm, "proof_trace": stated_proof_trace},
    check=check,
    control=NegativeControl("wrong norm: <G_hat, G> = ||G||_F instead of ||G||_* "
                            "(equal only for rank <= 1)",
                            {"nuclear_norm": frobenius_norm_instead}),
    # The energy problem's sizes (samples n, input d, classes M, nodes K): the lemma has no
    # hypothesis on them (any G), so the whole space is inside.
    space={"energy.n": IntRange(2, 60), "energy.d": IntRange(1, 12),
           "energy.M": IntRange(2, 8), "energy.K": IntRange(1, 16), "seed": SEED},
))
