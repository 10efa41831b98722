r"""The reduced memorisation problem of App. A.4: maximise
:math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` over :math:`\mathbf s\ge0,\ \|\mathbf s\|^2\le2`
by projected gradient ascent from many starts (:func:`optimise_reduced`), for random Dirichlet
:math:`\mathbf p` (:func:`reduced_optima`, memoised, one seed for both lemmas), with the
optimum's convergence bounds (:class:`ReducedOptima`), the active-set threshold, the
assumptions and figures every reduced-problem check records, Thm. 5's hypothesis
:math:`\sigma'>0`, and the activations, parameters and assumptions Lemmas 5 and 6 share.

Used by ``li2.lemma5`` (Lemma 5), ``li2.lemma6`` (Lemma 6) and ``li2.thm5`` (Thm. 5).
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch

from numerics.activations import Activation
from numerics.li2.memorisation import (
    BUDGET,
    ascend_reduced,
    lagrange_multiplier,
    lagrangian_curvature,
    memorisation_activation,
    project_feasible,
    second_derivative_bound,
)
from verify import SEED, Assumption, Choice, IntRange, LogUniform, Run, unit_roundoff

#: sigma = x^q for several q, the activations Thm. 5 names, and x^2 - x^3/3 (phi = 2 - x:
#: strictly decreasing with phi(0+) = 2, Lemma 6's thresholded branch).
ACTIVATIONS = ("x^1.5", "x^2", "x^3", "x^4", "relu", "silu", "tanh", "sigmoid", "x^2-x^3/3")


#: Stress space of the reduced problem (li2.lemma5 and li2.lemma6): one activation per run, the
#: number of coordinates M, the Dirichlet concentration of p, and the ascent's step scale
#: (above 1, outside the descent-lemma range). M starts at 2: at M = 1 the tangent space of
#: the sphere is empty and the optimum's curvature (lagrangian_curvature) is undefined.
REDUCED_SPACE = {"activations": Choice(tuple((name,) for name in ACTIVATIONS)),
         "M": IntRange(2, 10), "alpha": LogUniform(0.1, 10.0), "lr_scale": LogUniform(0.05, 4.0),
         "seed": SEED}


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
    """The reduced optima for activation ``name``, memoised for every claim in the process
    (``scope="process"``): they depend on these parameters, :func:`reduced_seed`, device and
    dtype alone, so li2.lemma5 and li2.lemma6 share them."""
    p = run.params
    args = (name, p["M"], p["problems"], p["random_starts"], p["alpha"], p["lr_scale"],
            p["max_steps"], p["gtol_factor"], reduced_seed(run, name))
    return run.memo("li2 reduced optima",
                    lambda: _reduced_optima(*args, str(run.device), str(run.dtype)), key=args,
                    scope="process")


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


def at_descent_step(run: Run, name: str, act: Activation,
                    opt: ReducedOptima) -> ReducedOptima:
    r"""``opt`` with its gradient mapping taken at the descent-lemma step :math:`1/L`,
    whatever step the ascent took, and whether that is within the ascent's tolerance
    recorded (:meth:`Run.ran`: not converged makes the verdict inconclusive).

    The mapping at step lr is at most the feasible set's diameter over lr, so after an ascent
    with too large a step it is small whether or not :math:`\mathbf s` is stationary, and
    the bounds built on it (:meth:`ReducedOptima.tangent_bound`'s factor
    :math:`1+\mathrm{lr}(\cdot)`) grow with lr. At :math:`1/L` neither happens: the
    tolerances and the active threshold below are then bounded through gtol, fixed by dtype,
    and cannot grow with an ascent that failed. At lr_scale = 1 this is the ascent's own."""
    lr = 1 / opt.smoothness
    mapping = (project_feasible(opt.s + lr * opt.p * act.derivative(opt.s)) - opt.s
               ).norm(dim=-1) / lr
    gtol, largest = reduced_gtol(run.params["gtol_factor"], run.dtype), float(mapping.max())
    run.ran(f"{name}: ascent converged to its gradient tolerance", largest <= gtol,
            f"gradient mapping at step 1/L {largest:.2e} vs tolerance {gtol:.1e} after "
            f"{opt.steps} steps")
    return dataclasses.replace(opt, mapping=mapping, lr=lr)
