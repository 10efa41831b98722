r"""li2.lemma9: Lemma 9 (App. B.3), the Muon projection: for :math:`A = [Q, \mathbf v]` with
orthonormal :math:`Q`, the last column of the polar factor is
:math:`\hat{\mathbf v} = \mathbf v_\perp/\|\mathbf v_\perp\| + \mathbf v_\parallel/(1 +
\|\mathbf v_\perp\|) + O(\|\mathbf v_\perp\|^2)`; in general the last block of
:math:`A(A^\top A)^{-1/c}` is :math:`B_\perp T^{-1/c} + B_\parallel(I - T^{1-1/c})(I - T)^{-1}`,
:math:`T = B_\perp^\top B_\perp` (Eq. 38), from an expansion in :math:`C = Q^\top B`.

Routes: the two printed expansions and their remainders (stated); sympy's series in
:math:`\|\mathbf v_\parallel\|` of the last column of :math:`A(A^\top A)^{-1/c}` from the
defining equation of the root, :math:`c = 2, 4`, and the exact polar factor of the reduced
:math:`2\times2` problem checked against the polar decomposition's definition (derived); the
exact polar factor / :math:`A(A^\top A)^{-1/c}` in float64 for random :math:`Q` and directions,
whose distance to each expansion is fitted as :math:`\|\mathbf v_\perp\|\to0`,
:math:`\|\mathbf v_\parallel\|\to0` and :math:`\mathbf v\to0` along rays (measured).

Finding: the expansion is exact to first order in :math:`\mathbf v_\parallel` (the proof's
expansion in :math:`C`), its remainder is :math:`\Theta(\|\mathbf v_\parallel\|^2)`, and at fixed
:math:`\mathbf v_\parallel` it does not vanish as :math:`\|\mathbf v_\perp\|\to0` (its limit is
:math:`(\mathbf v_\parallel + \mathbf e)(1/\sqrt{1+\|\mathbf v_\parallel\|^2} - 1)`), so the
printed :math:`O(\|\mathbf v_\perp\|^2)` holds only along rays :math:`\mathbf v\to0`. The ratio of
the two coefficients, :math:`\|\mathbf v_\perp\|/(1+\|\mathbf v_\perp\|)`, is exact.
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
import torch

from numerics.polar import fractional_polar, polar_svd
from numerics.random import make_generator
from theory.derivation import Derivation
from theory.li2.muon_dynamics import (
    b,
    derive_fractional_series,
    derive_polar_2x2,
    eps,
    q,
    s,
)
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    compare_cases,
    conditioned,
    draw,
    fit_trend,
    geometric_grid,
    order_along,
    register,
    symbolic_identity,
    trend_evidence,
    unit_roundoff,
)
from verify.arrays import eye, inv, transpose
from verify.claims.li2 import PAPER


def _norm(v: Any) -> Any:
    """Euclidean norm of a sympy column, or of tensors along the last axis (kept)."""
    if isinstance(v, sp.MatrixBase):
        return sp.sqrt(v.dot(v))
    return v.norm(dim=-1, keepdim=True)


def stated_last_column(v_par: Any, v_perp: Any) -> Any:
    r"""Lemma 9: :math:`\mathbf v_\perp/\|\mathbf v_\perp\| + \mathbf v_\parallel/(1 +
    \|\mathbf v_\perp\|)`."""
    n = _norm(v_perp)
    return v_perp / n + v_par / (1 + n)


def squared_norm_column(v_par: Any, v_perp: Any) -> Any:
    r"""Planted error: :math:`\mathbf v_\parallel/(1 + \|\mathbf v_\perp\|^2)` (wrong power)."""
    n = _norm(v_perp)
    return v_perp / n + v_par / (1 + n**2)


def _matrix_power(T: Any, exponent: Any) -> Any:
    """A symmetric positive definite matrix to a real power (sympy: 1x1 only)."""
    if isinstance(T, sp.MatrixBase):
        if T.shape != (1, 1):
            raise ValueError(f"T: symbolic powers are taken of 1x1 matrices, got {T.shape}")
        return sp.Matrix([[T[0, 0] ** exponent]])
    values, vectors = torch.linalg.eigh(T)
    return (vectors * values.pow(exponent)[..., None, :]) @ vectors.mT


def stated_general_block(B_perp: Any, B_par: Any, c: int) -> Any:
    r"""Eq. 38: :math:`B_\perp T^{-1/c} + B_\parallel(I - T^{1-1/c})(I-T)^{-1}`,
    :math:`T = B_\perp^\top B_\perp`."""
    k = B_perp.shape[-1]
    T = transpose(B_perp) @ B_perp
    power = sp.Rational(1, c) if isinstance(T, sp.MatrixBase) else 1.0 / c
    identity = eye(k, T)
    return B_perp @ _matrix_power(T, -power) \
        + B_par @ (identity - _matrix_power(T, 1 - power)) @ inv(identity - T)


def printed_remainder(perp: Any, par: Any) -> Any:
    r"""The printed remainder's scale, :math:`\|\mathbf v_\perp\|^2`."""
    return perp**2


def expansion_remainder(perp: Any, par: Any) -> Any:
    r"""The proof's: an expansion to first order in :math:`C = Q^\top B` leaves
    :math:`O(\|C\|^2) = O(\|\mathbf v_\parallel\|^2)`."""
    return par**2


# --- symbolic --------------------------------------------------------------------------------

@cache
def _fractional_series(c: int) -> Derivation:
    """:func:`derive_fractional_series` through eps^2, once per ``c`` (pure; the control's run
    reuses it)."""
    return derive_fractional_series(c, 2)


@cache
def _polar_limit() -> tuple[Derivation, Evidence]:
    """The 2x2 polar factor and the limit identity built on it (the stated forms do not
    enter), once per process."""
    d = derive_polar_2x2()
    _, column, _ = d.result
    expansion = sp.Matrix([b / (1 + s), 1])
    return d, symbolic_identity(
        "lim_{||v_perp|| -> 0} (exact last column - expansion) at fixed ||v_par|| = b: 0 if "
        "the remainder were O(||v_perp||^2)", stated=sp.zeros(2, 1),
        derived=(column - expansion).subs(s, 0).applyfunc(sp.radsimp),
        parameters={"reduced": "R = [[1, b], [0, s]]"})


def _symbolic(run: Run) -> Iterator[Evidence]:
    for c in run.params["c_values"]:
        v0, v1, v2 = run.derivation(_fractional_series(c)).result
        derived = v0 + eps * v1
        B_perp = sp.Matrix([0, q ** sp.Rational(c, 2)])
        B_par = sp.Matrix([eps * b, 0])
        parameters = {"c": c, "reduced": "v_par = eps b Q c_hat, v_perp = q^(c/2) e"}
        if c == 2:
            yield symbolic_identity(
                "c = 2: printed last column vs the series through eps^1 in ||v_par||",
                stated=run.stated["last_column"](B_par, B_perp), derived=derived,
                parameters=parameters)
        yield symbolic_identity(
            f"c = {c}: Eq. 38 vs the series through eps^1 in ||v_par||",
            stated=run.stated["general_block"](B_perp, B_par, c), derived=derived,
            parameters=parameters)
        run.figure(f"c = {c}: eps^2 coefficient of the last column (the remainder's leading "
                   f"term)", sp.Matrix(v2))
    polar, limit = _polar_limit()
    run.derivation(polar)
    yield limit


# --- numeric ---------------------------------------------------------------------------------

def _frames(run: Run, seed: int, n: int, m: int, k: int) -> tuple[torch.Tensor, ...]:
    """Orthonormal Q (n x m), E (n x k) with E ⟂ col(Q), and a unit direction c_hat in R^m."""
    gen = make_generator(seed)
    frame, _ = torch.linalg.qr(torch.randn(n, m + k, generator=gen, dtype=torch.float64))
    c_hat = torch.randn(m, generator=gen, dtype=torch.float64)
    tensors = frame[:, :m], frame[:, m:], c_hat / c_hat.norm()
    return tuple(x.to(device=run.device, dtype=run.dtype) for x in tensors)


def _last_columns(run: Run, perp: np.ndarray, par: np.ndarray, seed: int):
    """Exact and printed last columns for v = par Q c_hat + perp e at each grid point."""
    p = run.params
    Q, E, c_hat = _frames(run, seed, p["n"], p["m"], 1)
    perp_t = torch.as_tensor(perp, dtype=run.dtype, device=run.device)[:, None]
    par_t = torch.as_tensor(par, dtype=run.dtype, device=run.device)[:, None]
    v_par, v_perp = par_t * (Q @ c_hat), perp_t * E[:, 0]
    A = torch.cat([Q.expand(len(perp), -1, -1), (v_par + v_perp)[..., None]], -1)
    exact = polar_svd(A)[..., -1]
    # The polar factor moves by <~ ||dA|| / sigma_min(A) for a backward error ||dA|| <~ n u.
    sigma_min = torch.linalg.svdvals(A)[..., -1]
    floor = 8 * (p["n"] + p["m"] + 1) * unit_roundoff(run.dtype) / sigma_min
    return exact, run.stated["last_column"](v_par, v_perp), floor


def _trend(run: Run, name: str, perp: np.ndarray, par: np.ndarray, sizes: np.ndarray,
           remainder: Any, scale) -> Iterator[Evidence]:
    p = run.params
    errors = torch.empty(p["seeds"], len(sizes), dtype=torch.float64)
    floors = torch.empty_like(errors)
    for k in range(p["seeds"]):
        exact, printed, floor = _last_columns(run, perp, par, run.seed_for(f"{name} {k}"))
        errors[k] = (exact - printed).norm(dim=-1).to(torch.float64)
        floors[k] = floor.to(torch.float64)
    fit = fit_trend(sizes, errors, floors=floors)
    stated = order_along(lambda x: float(scale(remainder, x)), sizes)
    run.figure(f"trend: {name}", fit.figure(stated))
    yield from trend_evidence(f"last column: {name}", fit, stated_order=stated,
                              parameters={"n": p["n"], "m": p["m"]})


def _numeric_trends(run: Run) -> Iterator[Evidence]:
    p = run.params
    fixed = p["fixed"]
    grid = geometric_grid(*p["grid"][:2], int(p["grid"][2]))
    ray = geometric_grid(*p["ray_grid"][:2], int(p["ray_grid"][2]))
    ones = np.ones_like(grid)
    yield from _trend(run, f"||v_perp|| -> 0 at ||v_par|| = {fixed} (printed O(||v_perp||^2))",
                      grid, fixed * ones, grid, run.stated["remainder"],
                      lambda r, x: r(x, fixed))
    yield from _trend(run, f"||v_par|| -> 0 at ||v_perp|| = {fixed} (the proof's O(||C||^2))",
                      fixed * ones, grid, grid, run.stated["expansion_remainder"],
                      lambda r, x: r(fixed, x))
    direction = p["ray_direction"]
    yield from _trend(run, f"v -> 0 along the ray (||v_perp||, ||v_par||) = x {direction} "
                           f"(printed O(||v_perp||^2))", direction[0] * ray,
                      direction[1] * ray, ray, run.stated["remainder"],
                      lambda r, x: r(direction[0] * x, direction[1] * x))


def _eq38_trend(run: Run, c: int) -> Iterator[Evidence]:
    p = run.params
    k, sizes = p["k"], geometric_grid(*p["grid"][:2], int(p["grid"][2]))
    eps_t = torch.as_tensor(sizes, dtype=run.dtype, device=run.device)[:, None, None]
    errors = torch.empty(p["seeds"], len(sizes), dtype=torch.float64)
    floors = torch.empty_like(errors)
    for j in range(p["seeds"]):
        seed = run.seed_for(f"eq38 {c} {j}")
        Q, E, _ = _frames(run, seed, p["n"], p["m"], k)
        gen = make_generator(seed + 1)
        C0 = torch.randn(p["m"], k, generator=gen, dtype=torch.float64)
        rotation, _ = torch.linalg.qr(torch.randn(k, k, generator=gen, dtype=torch.float64))
        spread = torch.linspace(*p["perp_singular_values"], k, dtype=torch.float64)
        S = (rotation * spread).to(device=run.device, dtype=run.dtype)
        C0 = (C0 / C0.norm()).to(device=run.device, dtype=run.dtype)
        B_par, B_perp = eps_t * (Q @ C0), (E @ S).expand(len(sizes), -1, -1)
        A = torch.cat([Q.expand(len(sizes), -1, -1), B_par + B_perp], -1)
        exact = fractional_polar(A, c)[..., -k:]
        stated = run.stated["general_block"](B_perp, B_par, c)
        errors[j] = torch.linalg.matrix_norm(exact - stated).to(torch.float64)
        # The eigensolver route errs by ~ kappa(A^T A) u = kappa(A)^2 u (relative).
        kappa = torch.linalg.cond(A)
        floors[j] = (8 * (p["n"] + p["m"] + k) * kappa**2 * unit_roundoff(run.dtype)) \
            .to(torch.float64)
    fit = fit_trend(sizes, errors, floors=floors)
    stated = order_along(lambda x: float(run.stated["expansion_remainder"](0.5, x)), sizes)
    name = f"Eq. 38, c = {c}, {k} columns: ||C|| -> 0 (the proof's O(||C||^2))"
    run.figure(f"trend: {name}", fit.figure(stated))
    yield from trend_evidence(name, fit, stated_order=stated,
                              parameters={"n": p["n"], "m": p["m"], "k": k, "c": c,
                                          "perp_singular_values": p["perp_singular_values"]})


RATIO_SPACE = {"perp": LogUniform(1e-3, 10.0), "par": LogUniform(1e-3, 10.0), "seed": SEED}


def _coefficients(column: torch.Tensor, v_par: torch.Tensor, v_perp: torch.Tensor
                  ) -> torch.Tensor:
    """(beta_par, beta_perp) of a vector beta_par v_par + beta_perp v_perp (v_par ⟂ v_perp)."""
    return torch.stack([(column * v).sum(-1) / v.square().sum(-1) for v in (v_par, v_perp)])


def _suppression_ratio(run: Run) -> Iterator[Evidence]:
    """beta_par / beta_perp of the exact polar factor vs of the printed expansion."""
    p = run.params
    rng = run.rng("ratio")
    cases, worst_kappa = [], 1.0
    for _ in range(p["ratio_cases"]):
        case = draw(RATIO_SPACE, rng)
        Q, E, c_hat = _frames(run, case["seed"], p["n"], p["m"], 1)
        v_par, v_perp = case["par"] * (Q @ c_hat), case["perp"] * E[:, 0]
        A = torch.cat([Q, (v_par + v_perp)[:, None]], -1)
        exact = _coefficients(polar_svd(A)[:, -1], v_par, v_perp)
        printed = _coefficients(run.stated["last_column"](v_par, v_perp), v_par, v_perp)
        worst_kappa = max(worst_kappa, float(torch.linalg.cond(A)))
        cases.append((case, exact[0] / exact[1], printed[0] / printed[1]))
    yield compare_cases(Route.PROPERTY, "coefficient of v_par / coefficient of v_perp: exact "
                                        "polar factor vs printed expansion", cases,
                        names=("measured", "stated"),
                        tolerance=conditioned(run.dtype, worst_kappa, p["n"] + p["m"] + 1,
                                              "polar factor by SVD, two projections"),
                        parameters={"space": str(RATIO_SPACE), "n": p["n"], "m": p["m"]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _numeric_trends(run)
    for c in run.params["c_values"]:
        yield from _eq38_trend(run, c)
    yield from _suppression_ratio(run)


CLAIM = register(Claim(
    id="li2.lemma9",
    paper=PAPER,
    kind="lemma",
    title="Muon projection: last column of polar([Q, v]) = v_perp/||v_perp|| + "
          "v_par/(1+||v_perp||) + O(||v_perp||^2); Eq. 38 for A (A^T A)^(-1/c)",
    source="Lemma 9, Eq. 38, App. B.3 (used by Thm. 8)",
    statement=r"A=[Q,\mathbf v]:\ \hat{\mathbf v}=\frac{\mathbf v_\perp}{\|\mathbf v_\perp\|}+"
              r"\frac{\mathbf v_\parallel}{1+\|\mathbf v_\perp\|}+O(\|\mathbf v_\perp\|^2);\ "
              r"\hat A^{(c)}=A(A^\top A)^{-1/c}:\ B_\perp T^{-1/c}+B_\parallel(I-T^{1-1/c})"
              r"(I-T)^{-1},\ T=B_\perp^\top B_\perp",
    reading=r"Q\in\mathbb R^{n\times m} orthonormal, \mathbf v_\parallel=QQ^\top\mathbf v, "
            r"\mathbf v_\perp=\mathbf v-\mathbf v_\parallel\ne0; \hat{\mathbf v} is the last "
            r"column of the polar factor (c=2). 'O(\|\mathbf v_\perp\|^2)' is read as printed: "
            r"the error is at most a constant times \|\mathbf v_\perp\|^2 as \|\mathbf "
            r"v_\perp\|\to0 at fixed \mathbf v_\parallel; also tested: \mathbf v\to0 along "
            r"rays, and \|\mathbf v_\parallel\|\to0 (the proof's expansion in C=Q^\top B, "
            r"remainder O(\|C\|^2)). Eq. 38 for c\in\{2,4\} and B with several columns.",
    parameters={
        "quick": {"c_values": [2, 4], "n": 8, "m": 3, "k": 2, "seeds": 6, "fixed": 0.5,
                  "grid": [1e-1, 1e-5, 5], "ray_grid": [1e-1, 1e-4, 4],
                  "ray_direction": [1.0, 0.5], "perp_singular_values": [0.3, 0.7],
                  "ratio_cases": 40},
        "full": {"c_values": [2, 4], "n": 32, "m": 8, "k": 4, "seeds": 12, "fixed": 0.5,
                 "grid": [1e-1, 1e-6, 11], "ray_grid": [1e-1, 1e-5, 9],
                 "ray_direction": [1.0, 0.5], "perp_singular_values": [0.2, 0.8],
                 "ratio_cases": 400},
    },
    stated={"last_column": stated_last_column, "general_block": stated_general_block,
            "remainder": printed_remainder, "expansion_remainder": expansion_remainder},
    equivalent_mutants={
        f"{form}:{op}": "a remainder's scale enters an order check (the log-log slope of the "
                        "error against it), which a constant factor leaves as is"
        for form in ("remainder", "expansion_remainder") for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("v_par / (1 + ||v_perp||^2) in place of v_par / (1 + ||v_perp||)",
                            {"last_column": squared_norm_column}),
    assumptions=(Assumption("m + k <= n", "Q (n x m) orthonormal with v_perp != 0 and B_perp "
                            "of rank k (T invertible in Eq. 38) need m + k orthonormal "
                            "columns in R^n", lambda p: p["m"] + p["k"] <= p["n"]),),
    # Sizes of Q and B, the fixed ||v_par|| (= ||v_perp||) of the one-sided trends, and the
    # roots c of Eq. 38. m + k <= 6 <= n everywhere: outside it the construction does not
    # exist (there is no v_perp != 0), so there is nothing to run.
    space={"n": IntRange(6, 16), "m": IntRange(1, 4), "k": IntRange(1, 2),
           "fixed": LogUniform(0.05, 2.0), "c_values": Choice(([2], [3], [4], [2, 4])),
           "seed": SEED},
))
