r"""li2.lemma5: Lemma 5, the KKT conditions of the memorisation problem (App. A.4), via
:math:`\phi(x)=\sigma'(x)/x`.

Routes: the stated relation :math:`p_g\phi(s^\star_g)=2\lambda` with the stated
:math:`\phi=\sigma'/x` (stated); sympy's stationarity of the Lagrangian for a generic
:math:`\sigma` and, numerically, the multiplier :math:`\lambda=\mathbf s^\top\nabla F/
(2\|\mathbf s\|^2)` computed from :math:`\sigma'` alone (derived); the optimum of
:math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` over :math:`\mathbf s\ge0,\|\mathbf s\|^2\le2`
found by projected gradient ascent from many starts for random Dirichlet :math:`\mathbf p`
(measured): at it, the budget must be tight and :math:`\lambda>0`.

This module also holds :func:`reduced_optima`, the optimisation that ``li2.lemma6`` checks
too (cached, one seed for both claims).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
import torch

from numerics.activations import Activation
from numerics.memorisation import (
    BUDGET,
    ascend_reduced,
    lagrange_multiplier,
    lagrangian_curvature,
    memorisation_activation,
    second_derivative_bound,
)
from theory.energy import freeze_activation, sigma_prime
from theory.memorisation import derive_kkt
from verify.claim import Assumption, Claim, NegativeControl
from verify.claims.li2 import PAPER
from verify.evidence import (
    Evidence,
    Route,
    Tolerance,
    at_least,
    compare,
    symbolic_identity,
    undecided,
)
from verify.registry import register
from verify.run import Run
from verify.tolerances import unit_roundoff

#: sigma = x^q for several q, the activations Thm. 5 names, and x^2 - x^3/3 (phi = 2 - x:
#: strictly decreasing with phi(0+) = 2, Lemma 6's thresholded branch).
ACTIVATIONS = ("x^1.5", "x^2", "x^3", "x^4", "relu", "silu", "tanh", "sigmoid", "x^2-x^3/3")


def stated_phi(dsigma, s):
    r"""Lemma 5 / Thm. 5: :math:`\phi(s)=\sigma'(s)/s`."""
    return dsigma(s) / s


def division_dropped_phi(dsigma, s):
    r"""Planted error: :math:`\phi=\sigma'` (the division by :math:`x` dropped)."""
    return dsigma(s)


# --- the reduced problem, shared with li2.lemma6 ----------------------------------------------

@dataclass(frozen=True)
class ReducedOptima:
    r"""For each of ``P`` random problems :math:`\mathbf p` (``(P, M)``): the best end point
    ``s`` of the ascent, its ``F``, its gradient-mapping norm, the multiplier
    :math:`\lambda=\mathbf s^\top\nabla F/(2\|\mathbf s\|^2)`, the radial part
    :math:`a=\hat{\mathbf s}^\top\nabla F` and tangent norm of :math:`\nabla F`, and the
    Lagrangian's tangent curvature there; the step size, the bound L on max_g p_g |sigma''|
    it was chosen from, steps and largest decrease of F."""

    p: torch.Tensor
    s: torch.Tensor
    value: torch.Tensor
    mapping: torch.Tensor
    lam: torch.Tensor
    radial: torch.Tensor
    tangential: torch.Tensor
    curvature: torch.Tensor
    lr: float
    smoothness: float
    steps: int
    largest_decrease: float
    starts: int

    def tangent_bound(self) -> torch.Tensor:
        r"""Per problem, a bound on the tangent gradient :math:`|\mathbf t|` from the
        gradient-mapping norm :math:`G`: the projected step :math:`\Pi(\mathbf s+\mathrm{lr}
        \nabla F)` moves tangentially by :math:`r\,\mathrm{lr}|\mathbf t|/|\mathbf y|` with
        :math:`|\mathbf y|\le r+\mathrm{lr}(a+|\mathbf t|)`, :math:`r=\sqrt2`, so
        :math:`|\mathbf t|\le G(1+\mathrm{lr}(a+|\mathbf t|)/r)`."""
        return self.mapping * (1 + self.lr * (self.radial.abs() + self.tangential)
                               / math.sqrt(BUDGET))

    def distance_bound(self) -> torch.Tensor:
        r"""Per problem, :math:`2|\mathbf t|/\mu` (curvature :math:`\mu`): the distance to
        the nondegenerate maximum the point converged to (the factor 2 covers the
        second-order terms while it is small)."""
        return 2 * self.tangent_bound() / self.curvature

    def multiplier_uncertainty(self) -> torch.Tensor:
        r"""Per problem, how far :math:`\lambda(\mathbf s)=\mathbf s^\top\nabla F/
        (2\|\mathbf s\|^2)` can be from its value at the maximum: its gradient in
        :math:`\mathbf s` is at most :math:`(|\nabla F|/|\mathbf s|+L)/|\mathbf s|`
        (:math:`L\ge\|\nabla^2F\|`), times the distance bound."""
        r = math.sqrt(BUDGET)
        grad = (self.radial.square() + self.tangential.square()).sqrt()
        return (grad / r + self.smoothness) / r * self.distance_bound()


def reduced_seed(run: Run, name: str) -> int:
    """One seed per (run seed, activation) for li2.lemma5 and li2.lemma6 alike."""
    digest = hashlib.sha256(f"{run.seed}:li2.memorisation-reduced:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def reduced_optima(run: Run, name: str) -> ReducedOptima:
    p = run.params
    return _reduced_optima(name, p["M"], p["problems"], p["random_starts"], p["alpha"],
                           p["lr_scale"], p["max_steps"], p["gtol_factor"],
                           reduced_seed(run, name), str(run.device), str(run.dtype))


@lru_cache(maxsize=64)
def _reduced_optima(name: str, M: int, problems: int, random_starts: int, alpha: float,
                    lr_scale: float, max_steps: int, gtol_factor: float, seed: int,
                    device: str, dtype: str) -> ReducedOptima:
    dt = getattr(torch, dtype.removeprefix("torch."))
    rng = np.random.default_rng(seed)
    p = torch.tensor(rng.dirichlet(np.full(M, alpha), size=problems), dtype=dt,
                     device=torch.device(device))
    return optimise_reduced(p, memorisation_activation(name), random_starts, lr_scale,
                            max_steps, gtol_factor, rng)


def optimise_reduced(p: torch.Tensor, act: Activation, random_starts: int, lr_scale: float,
                     max_steps: int, gtol_factor: float,
                     rng: np.random.Generator) -> ReducedOptima:
    """Projected ascent of F for each row of ``p`` from every focused point, the uniform
    point and ``random_starts`` |Gaussian| draws (so the best end point is the global
    maximum whether it is focused or spread); the best end point per row."""
    problems, M = p.shape
    fixed = torch.cat([math.sqrt(BUDGET) * torch.eye(M, dtype=torch.float64),
                       torch.full((1, M), math.sqrt(BUDGET / M), dtype=torch.float64)])
    rand = torch.tensor(np.abs(rng.standard_normal((problems, random_starts, M))))
    s0 = torch.cat([fixed.expand(problems, -1, -1), rand], 1).to(p)
    # lr <= 1/L with L >= max_g p_g |sigma''| on the feasible range keeps the projected
    # ascent monotone (descent lemma); [sqrt2/64, sqrt2] leaves out x^q's singular sigma''
    # at 0 (q < 2), where sigma is convex and the ascent moves away from 0. L >= max p keeps
    # lr bounded for a linear sigma (ReLU).
    pmax = float(p.max())
    L = max(pmax * second_derivative_bound(act, math.sqrt(BUDGET) / 64, math.sqrt(BUDGET),
                                           dtype=p.dtype), pmax)
    lr = lr_scale / L
    gtol = reduced_gtol(gtol_factor, p.dtype)
    result = ascend_reduced(s0, p[:, None, :], act, lr, max_steps, gtol)
    best = result.value.argmax(-1)
    rows = torch.arange(problems, device=p.device)
    s = result.s[rows, best]
    grad = p * act.derivative(s)
    lam = lagrange_multiplier(s, p, act)
    radial = (grad * s).sum(-1) / s.norm(dim=-1)
    tangential = (grad - 2 * lam[:, None] * s).norm(dim=-1)
    return ReducedOptima(p, s, result.value[rows, best], result.mapping_norm[rows, best], lam,
                         radial, tangential, lagrangian_curvature(s, p, act, lam), lr, L,
                         result.steps, float(result.largest_decrease.max()), s0.shape[1])


def reduced_gtol(factor: float, dtype: torch.dtype) -> float:
    r"""Gradient-mapping tolerance ``factor`` :math:`\cdot u^{2/3}` (1.5e-10 in float64 at
    factor 4, 1e-4 in float32): well above the rounding floor :math:`\approx u|\mathbf s|/
    \mathrm{lr}` of the mapping, and small enough for distance bounds
    :math:`\approx u^{2/3}/\mu`."""
    return factor * unit_roundoff(dtype) ** (2 / 3)


def active_threshold(opt: ReducedOptima) -> float:
    """Coordinates above this are active: converged inactive coordinates are within the
    distance bound of 0 (4x margin), with a floor of 1e-8 for an exact convergence."""
    return max(4 * float(opt.distance_bound().max()), 1e-8)


def record_reduced(run: Run, name: str, opt: ReducedOptima) -> None:
    """Assumptions and figures every reduced-problem check records."""
    u = unit_roundoff(run.dtype)
    run.assume(f"{name}: ascent monotone", opt.largest_decrease <= 64 * u,
               "F never decreased by more than rounding along the projected ascent",
               f"largest decrease {opt.largest_decrease:.2e}")
    gtol = reduced_gtol(run.params["gtol_factor"], run.dtype)
    run.assume(f"{name}: best end points converged", bool((opt.mapping <= gtol).all()),
               f"gradient-mapping norm <= {gtol:.1e} at every problem's best end point",
               f"largest {float(opt.mapping.max()):.2e} after {opt.steps} steps")
    run.figure(f"{name}: reduced ascent (lr, steps, starts per problem, largest gradient "
               f"mapping, smallest curvature, largest distance bound)",
               [opt.lr, opt.steps, opt.starts, float(opt.mapping.max()),
                float(opt.curvature.min()), float(opt.distance_bound().max())])


def sigma_positive(run: Run, act: Activation) -> bool:
    r"""Thm. 5's hypothesis :math:`\sigma'(x)>0` for :math:`x>0`, on a grid of
    :math:`(0,\sqrt2]` (where the reduced problem lives)."""
    z = torch.linspace(1e-6, math.sqrt(BUDGET), 4097, dtype=run.dtype, device=run.device)
    low = float(act.derivative(z).min())
    return run.assume(f"{act.name}: sigma' > 0 on (0, sqrt2]", low > 0,
                      "Thm. 5 assumes sigma'(x) > 0 for x > 0", f"min sigma' = {low:.3g}")


# --- checks -----------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    M = run.params["symbolic_M"]
    d = run.derivation(derive_kkt(M))
    per_s, s, p, lam = d.result
    stated = sp.Matrix([pg * run.stated["phi"](sigma_prime, sg) - 2 * lam
                        for pg, sg in zip(p, s)])
    a, b = freeze_activation([stated, per_s])
    yield symbolic_identity(
        f"stationarity on the active set: p_g phi(s_g) - 2 lambda = (dL/ds_g)/s_g (M={M}, "
        f"generic sigma)", stated=a, derived=b, parameters={"M": M},
        note="derived: sympy's derivative of L = sum_g p_g sigma(s_g) - lambda (|s|^2 - 2)")


def _numeric(run: Run, name: str) -> Iterator[Evidence]:
    act = memorisation_activation(name)
    sigma_positive(run, act)
    opt = reduced_optima(run, name)
    record_reduced(run, name, opt)
    u, M = unit_roundoff(run.dtype), opt.p.shape[1]
    params = {"sigma": name, "M": M, "problems": opt.p.shape[0], "starts": opt.starts}
    tau = active_threshold(opt)
    active = opt.s > tau
    ratio = (opt.p * run.stated["phi"](act.derivative, opt.s.clamp(min=tau))
             / (2 * opt.lam[:, None]))
    s_min = torch.where(active, opt.s, math.inf).amin(-1)
    # p_g phi(s_g) - 2 lambda = t_g / s_g exactly (t the tangent part of grad F), so the
    # relative residual is at most |t| / (s_min 2 lambda); |t| is bounded by the gradient
    # mapping (ReducedOptima.tangent_bound). Rounding: sigma', the division and lambda's
    # length-M sums, 8 (M + 2) u.
    conv = float((opt.tangent_bound() / (s_min * 2 * opt.lam)).max())
    yield compare(
        Route.NUMERIC, f"sigma = {name}: p_g phi(s*_g) / (2 lambda) on the active set",
        stated=ratio[active], derived=torch.ones_like(ratio[active]),
        tolerance=Tolerance(conv + 8 * (M + 2) * u,
                            f"convergence: tangent gradient bound / (s_min 2 lambda) = "
                            f"{conv:.1e}; rounding 8 (M+2) u"),
        parameters={**params, "active_threshold": tau,
                    "active coordinates": int(active.sum())},
        note="measured s*: best of the projected ascent starts; derived lambda = "
             "s.grad F / (2|s|^2) from sigma' alone")
    yield compare(
        Route.NUMERIC, f"sigma = {name}: budget sum_g s*_g^2 at the optimum (tight: 2)",
        stated=torch.full_like(opt.value, BUDGET), measured=opt.s.square().sum(-1),
        tolerance=Tolerance(4 * (M + 2) * u, "rounding of the projection onto the ball and "
                                             "of the squared norm: 4 (M+2) u"),
        parameters=params)
    quantity = f"sigma = {name}: the multiplier lambda > 0 at the optimum"
    # Resolution: an uncertainty above 1e-3 of the gradient scale max_g p_g sigma' means the
    # optimisation (e.g. in float32) cannot tell a small lambda from 0: undecided, not fail.
    z = torch.linspace(1e-6, math.sqrt(BUDGET), 257, dtype=run.dtype, device=run.device)
    scale = float(opt.p.max()) * float(act.derivative(z).abs().max())
    if float(opt.multiplier_uncertainty().max()) > 1e-3 * scale:
        yield undecided(Route.NUMERIC, quantity, "the optimum is not resolved finely enough "
                        "to bound lambda away from 0 at this precision",
                        tolerance=Tolerance(0.0, "a sign"), parameters=params)
        return
    yield at_least(
        Route.NUMERIC, quantity,
        measured=opt.lam, bound=opt.multiplier_uncertainty(),
        tolerance=Tolerance(0.0, "lambda must exceed its own uncertainty (a lambda within "
                                 "it of 0 does not show lambda > 0)"),
        parameters=params, note="bound: the uncertainty of lambda from the distance bound "
                                "(ReducedOptima.multiplier_uncertainty)")


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    for name in run.params["activations"]:
        yield from _numeric(run, name)


PARAMETERS = {
    "quick": {"activations": ACTIVATIONS, "M": 5, "problems": 6, "random_starts": 8,
              "alpha": 2.0, "lr_scale": 1.0, "max_steps": 2500, "gtol_factor": 4.0,
              "symbolic_M": 3},
    "full": {"activations": ACTIVATIONS, "M": 8, "problems": 24, "random_starts": 32,
             "alpha": 1.0, "lr_scale": 1.0, "max_steps": 40000, "gtol_factor": 0.5,
             "symbolic_M": 4},
}

ASSUMPTIONS = (
    Assumption("ascent step within the descent-lemma range",
               "lr = lr_scale / L with 0 < lr_scale <= 1 (L bounds max_g p_g |sigma''|)",
               lambda p: 0 < p["lr_scale"] <= 1),
    Assumption("at least two coordinates", "M >= 2 (with M = 1 the problem is trivial)",
               lambda p: p["M"] >= 2),
)

CLAIM = register(Claim(
    id="li2.lemma5",
    paper=PAPER,
    kind="lemma",
    title="KKT of the memorisation problem: p_g phi(s*_g) = 2 lambda, tight budget",
    source="Lemma 5, App. A.4 (proof of Thm. 5)",
    statement=r"\max_{\mathbf s\ge0,\ \sum_gs_g^2\le2}F(\mathbf s)=\sum_gp_g\sigma(s_g):\ "
              r"\exists\lambda>0:\ p_g\phi(s^\star_g)=2\lambda\ \text{on the active set},\ "
              r"\sum_g(s^\star_g)^2=2;\ \phi\ \text{strictly monotone}\Rightarrow "
              r"s^\star_g=\phi^{-1}(2\lambda/p_g),\quad\phi(x)=\sigma'(x)/x",
    reading=r"The optimum is the best end point of projected gradient ascent on "
            r"\{\mathbf s\ge0,\|\mathbf s\|^2\le2\} (starts: every focused point, the uniform "
            r"point and |Gaussian| draws) for P random \mathbf p\sim\mathrm{Dir}(\alpha); the "
            r"active set is \{s_g>\tau\} with \tau four times the distance bound 2G/\mu "
            r"(gradient mapping G, Lagrangian tangent curvature \mu). \lambda is measured as "
            r"\mathbf s^\top\nabla F/(2\|\mathbf s\|^2), from \sigma' alone; the stated "
            r"relation is checked as p_g\phi(s_g)/(2\lambda)=1. With \phi strictly monotone "
            r"the third bullet is the second one inverted; its closed form with \lambda "
            r"fixed by the budget is li2.lemma6's check. \sigma: x^q (q = 1.5, 2, 3, 4), "
            r"ReLU, SiLU, tanh, sigmoid and x^2-x^3/3; \sigma'>0 on (0,\sqrt2] is checked on "
            r"a grid.",
    parameters=PARAMETERS,
    stated={"phi": stated_phi},
    check=check,
    control=NegativeControl("division dropped: phi = sigma'", {"phi": division_dropped_phi}),
    assumptions=ASSUMPTIONS,
))
