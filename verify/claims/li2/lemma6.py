r"""li2.lemma6: Lemma 6, memorisation (focused) versus spreading maximisers of
:math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` on :math:`\mathbf s\ge0,\ \|\mathbf s\|^2\le2`.

Routes: the lemma's maximiser (stated): :math:`s_{g^\ast}=\sqrt2`, others 0, when
:math:`\phi=\sigma'/x` is nondecreasing on :math:`(0,\sqrt2]`; :math:`s_g=\phi^{-1}
(2\lambda/p_g)` with :math:`\lambda` fixed by the budget (0 below the threshold
:math:`\phi(0^+)`) when :math:`\phi` is strictly decreasing; which branch applies, and
:math:`\phi(0^+)`, are derived by sympy from :math:`\sigma`'s definition (exactly or by
interval arithmetic); the maximiser found by projected gradient ascent from many starts for
random Dirichlet :math:`\mathbf p` (measured; the same optimisation as ``li2.lemma5``).
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy as sp
import torch

from numerics.activations import Activation
from numerics.li2.memorisation import (
    focused_profile,
    inverse_phi,
    memorisation_activation,
    phi_sensitivity,
    solve_budget,
)
from theory.li2.memorisation import derive_phi
from verify import (
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
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
    ReducedOptima,
    active_threshold,
    at_descent_step,
    record_reduced,
    reduced_optima,
    sigma_positive,
)

#: The activations Lemma 6 names as having phi(0+) = infinity.
INFINITE_AT_ZERO = ("relu", "silu")

def stated_profile(p: torch.Tensor, act: Activation, monotonicity: str) -> torch.Tensor:
    r"""Lemma 6's maximiser for each row of ``p``: focused (:math:`\sqrt2` at
    :math:`\arg\max p`) when :math:`\phi` is nondecreasing; :math:`s_g=\phi^{-1}
    (2\lambda/p_g)` (0 where :math:`2\lambda/p_g\ge\phi(0^+)`) with
    :math:`\sum_gs_g^2=2` when it is strictly decreasing."""
    if monotonicity == "nondecreasing":
        return focused_profile(p)
    if monotonicity != "strictly decreasing":
        raise ValueError(f"monotonicity: {monotonicity!r} is covered by neither branch")
    lam = solve_budget(lambda lam: inverse_phi(act, 2 * lam / p), p)
    return inverse_phi(act, 2 * lam / p)


def numerator_profile(p: torch.Tensor, act: Activation, monotonicity: str) -> torch.Tensor:
    r"""Planted error: :math:`p_g` in the numerator, :math:`s_g=\phi^{-1}(2\lambda p_g)`."""
    if monotonicity == "nondecreasing":
        return focused_profile(p)
    lam = solve_budget(lambda lam: inverse_phi(act, 2 * lam * p), p)
    return inverse_phi(act, 2 * lam * p)


def support_ranks(s: torch.Tensor, threshold: float) -> torch.Tensor:
    """Per row: the rank (1 = smallest) of each coordinate above ``threshold`` among those,
    0 for the others."""
    active = s > threshold
    keyed = torch.where(active, s, -torch.inf)
    order = keyed.argsort(-1).argsort(-1)  # 0-based rank among all coordinates
    inactive = (~active).sum(-1, keepdim=True)
    return torch.where(active, order - inactive + 1, 0).to(s.dtype)


def _symbolic(run: Run) -> Iterator[Evidence]:
    facts = [run.derivation(derive_phi(name)).result for name in INFINITE_AT_ZERO]
    yield symbolic_identity(
        "1/phi(0+) for ReLU and SiLU (phi(0+) = infinity: all coordinates positive)",
        stated=sp.Matrix([0] * len(facts)),
        derived=sp.Matrix([1 / f.phi_at_zero for f in facts]),
        parameters={"activations": list(INFINITE_AT_ZERO)},
        note="derived: sympy's limit of sigma'(x)/x as x -> 0+")


def _optimum_tolerance(run: Run, opt: ReducedOptima, act: Activation,
                       stated: torch.Tensor, focused: bool) -> Tolerance:
    # Measured: within 2G/mu of its maximum (ReducedOptima.distance_bound), G at the step 1/L
    # and at most gtol when the run counts (at_descent_step), so bounded by the dtype, not
    # by how wrong the stated profile is. Stated: exact for the focused point; for the
    # spread one each bisection ends at float spacing, so phi is matched to ~4u relative and
    # s to 4u phi/|phi'|, at the stated profile's own coordinates (where its bisections
    # ran, not at the measured point); the budget's lambda adds as much again per
    # coordinate: 16 (M + 2) u max phi/|phi'| covers both.
    u, M = unit_roundoff(run.dtype), opt.p.shape[1]
    conv = float(opt.distance_bound().max())
    sensitivity = 0.0 if focused else float(phi_sensitivity(act, stated,
                                                            active_threshold(opt)).max())
    stated_tol = 4 * u if focused else 16 * (M + 2) * u * sensitivity
    return Tolerance(conv + stated_tol, f"convergence 2G/mu = {conv:.1e}; stated profile's "
                                        f"bisections {stated_tol:.1e}")


def _numeric(run: Run, name: str) -> Iterator[Evidence]:
    act = memorisation_activation(name)
    sigma_positive(run, act)
    facts = run.derivation(derive_phi(name)).result
    run.figure(f"{name}: phi(0+), monotonicity of phi on (0, sqrt2] and how decided",
               [str(facts.phi_at_zero), facts.monotonicity, facts.method])
    opt = reduced_optima(run, name)
    record_reduced(run, name, opt)
    opt = at_descent_step(run, name, act, opt)
    params = {"sigma": name, "M": opt.p.shape[1], "problems": opt.p.shape[0],
              "starts": opt.starts, "phi": facts.monotonicity}
    quantity = f"sigma = {name}: the maximiser s* ({facts.monotonicity} phi)"
    if facts.monotonicity not in ("nondecreasing", "strictly decreasing"):
        yield undecided(Route.NUMERIC, quantity, f"phi is {facts.monotonicity} on (0, sqrt2]: "
                        f"neither branch of Lemma 6 applies",
                        tolerance=Tolerance(0.0, "no prediction"), parameters=params)
        return
    focused = facts.monotonicity == "nondecreasing"
    stated = run.stated["profile"](opt.p, act, facts.monotonicity)
    yield compare(Route.NUMERIC, quantity, stated=stated, measured=opt.s, metric="absolute",
                  tolerance=_optimum_tolerance(run, opt, act, stated, focused),
                  parameters=params,
                  note="measured: best end point of projected ascent; the branch is chosen "
                       "by the sign of phi' derived by sympy")
    if focused:
        return
    tau = active_threshold(opt)
    thresholded = int((stated <= tau).sum())
    run.figure(f"{name}: coordinates at 0 in the stated profile (thresholded), of "
               f"{stated.numel()}", thresholded)
    yield compare(
        Route.NUMERIC, f"sigma = {name}: support and order of s* (ranks by size, 0 off the "
                       f"support)",
        stated=support_ranks(stated, tau), measured=support_ranks(opt.s, tau),
        metric="absolute", tolerance=Tolerance(0.0, "integer ranks"),
        parameters={**params, "active_threshold": tau, "phi(0+)": str(facts.phi_at_zero)},
        note="Lemma 6: all coordinates positive and ordered by p_g when phi(0+) = infinity; "
             "zero below the threshold 2 lambda / p_g >= phi(0+) otherwise")


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    for name in run.params["activations"]:
        yield from _numeric(run, name)


CLAIM = register(Claim(
    id="li2.lemma6",
    paper=PAPER,
    kind="lemma",
    title="Memorisation vs spreading: phi nondecreasing gives sqrt2 e_g*, decreasing "
          "gives phi^{-1}(2 lambda / p_g)",
    source="Lemma 6, App. A.4 (proof of Thm. 5)",
    statement=r"\phi\ \text{nondecreasing on}\ (0,\sqrt2]\Rightarrow\ \text{unique maximiser}"
              r"\ s_{g^\ast}=\sqrt2,\ s_g=0\ (g\ne g^\ast);\ \phi\ \text{strictly decreasing}"
              r"\Rightarrow s^\star_g=\phi^{-1}(2\lambda/p_g),\ \text{thresholded if}\ "
              r"\phi(0^+)<\infty;\ \phi(0^+)=\infty\ (\text{ReLU, SiLU}):\ \text{all}\ "
              r"s^\star_g>0,\ \text{ordered by}\ p_g",
    reading=r"Maximise F(\mathbf s)=\sum_gp_g\sigma(s_g) on \mathbf s\ge0,\ \|\mathbf s\|^2\le2 "
            r"(App. A.4) for P random \mathbf p\sim\mathrm{Dir}(\alpha) (a unique "
            r"\arg\max almost surely). \lambda is the one with \sum_gs_g^2=2 (bisection); "
            r"\phi^{-1} by bisection on [0,\sqrt2], 0 where 2\lambda/p_g\ge\phi(0^+) (the "
            r"threshold). The branch is decided by the sign of x^2\phi'=x\sigma''-\sigma' on "
            r"(0,\sqrt2], derived by sympy (exact where sympy signs a factored form, else "
            r"certified by interval arithmetic). 'Ordered by p_g' is read as: the ranks of "
            r"s^\star_g equal the ranks of p_g on the support. \sigma: x^q (q = 1.5, 2, 3, "
            r"4), ReLU, SiLU, tanh, sigmoid and x^2-x^3/3 (\phi=2-x, the thresholded "
            r"branch).",
    parameters=PARAMETERS,
    stated={"profile": stated_profile},
    check=check,
    control=NegativeControl("p_g in the numerator: s_g = phi^{-1}(2 lambda p_g)",
                            {"profile": numerator_profile}),
    assumptions=ASSUMPTIONS,
    space=REDUCED_SPACE,
))
