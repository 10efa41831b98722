r"""li2.lemma5: Lemma 5, the KKT conditions of the memorisation problem (App. A.4), via
:math:`\phi(x)=\sigma'(x)/x`.

Routes: the stated relation :math:`p_g\phi(s^\star_g)=2\lambda` with the stated
:math:`\phi=\sigma'/x` (stated); sympy's stationarity of the Lagrangian for a generic
:math:`\sigma` and, numerically, the multiplier :math:`\lambda=\mathbf s^\top\nabla F/
(2\|\mathbf s\|^2)` computed from :math:`\sigma'` alone (derived); the optimum of
:math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` over :math:`\mathbf s\ge0,\|\mathbf s\|^2\le2`
found by projected gradient ascent from many starts for random Dirichlet :math:`\mathbf p`
(measured): at it, the budget must be tight and :math:`\lambda>0`.

The optimisation, :func:`reduced_optima`, which ``li2.lemma6`` checks too (cached, one seed
for both claims), lives in :mod:`verify.claims.li2._reduced_memorisation`.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import sympy as sp
import torch

from numerics.li2.memorisation import BUDGET, memorisation_activation
from theory.li2.energy import freeze_activation, sigma_prime
from theory.li2.memorisation import derive_kkt
from verify import (
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
    undecided,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._reduced_memorisation import (
    ASSUMPTIONS,
    PARAMETERS,
    REDUCED_SPACE,
    active_threshold,
    at_descent_step,
    record_reduced,
    reduced_optima,
    sigma_positive,
)


def stated_phi(dsigma, s):
    r"""Lemma 5 / Thm. 5: :math:`\phi(s)=\sigma'(s)/s`."""
    return dsigma(s) / s


def division_dropped_phi(dsigma, s):
    r"""Planted error: :math:`\phi=\sigma'` (the division by :math:`x` dropped)."""
    return dsigma(s)


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
    opt = at_descent_step(run, name, act, opt)
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
    # One activation per run, M (from 2: at M = 1 the sphere's tangent space is empty and
    # the optimum's curvature undefined), the Dirichlet concentration of p and the ascent's
    # step scale (above 1 outside the descent-lemma range): li2.lemma6's space, the same
    # reduced problem.
    space=REDUCED_SPACE,
))
