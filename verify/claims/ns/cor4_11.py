r"""ns.cor4.11: the explicit mirror potential :math:`R_{L_p,L}` at zero balance constant
(Corollary 4.11, submitted numbering; the summaries' later "Lemma 4.13";
verify/claims/ns/SOURCES.md §4.12).
ns.cor4.12 holds the validity (Legendre) conditions.

Routes: the toolkit's reading of the explicit potential (stated: :math:`R = |x|^{2-m}/(L(1-m)
(2-m))`, :math:`\nabla R = \operatorname{sign}(x)|x|^{1-m}/(L(1-m))`, and at :math:`m = 1`
:math:`R = (|x|\log|x| - |x|)/L`, with :math:`m = q(L-1)/L`); sympy's inverse metric of the
parameter flow for a symbolic depth and its integrals, and, independently, the sign-pattern
metric of :func:`theory.ns.reparam_balance.derive_metric_zero_balance` integrated at the special
cases (derived); the stated :math:`R''` by autograd against the parameter flow's velocity at
zero-balance points, and the mirror identity :math:`\nabla R(x_t) - \nabla R(x_0) = G^{q-1}t`
along the parameter flow on :math:`f(x) = -Gx`, integrated through its blow-up by a time
change (measured).
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import sympy as sp
import torch

from numerics.ns.steepest_flows import ProductFlow, depth_mask
from theory.ns.legendre import derive_potential_zero_balance
from theory.ns.metric_exponent import DEPTH, X, derive_zero_balance_metric_any_depth
from theory.ns.reparam_balance import Q, derive_metric_zero_balance
from verify import (
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare_cases,
    ladder_compare,
    ladder_tolerance,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import sign
from verify.claims.ns import PAPER
from verify.claims.ns._fixed_sign_flow import fixed_sign_grid, fixed_sign_ladder, velocity_of_x
from verify.claims.ns._scope import depth_scope, exponent_scope


def _log(x: Any) -> Any:
    """``log`` of a sympy expression or a tensor (stated forms serve both)."""
    return sp.log(x) if isinstance(x, sp.Basic) else torch.log(x)


def _exponent(q, L):
    return q * (L - 1) / L


def stated_gradient(x, q, L):
    r""":math:`\nabla R = \operatorname{sign}(x)|x|^{1-m}/(L(1-m))`, :math:`m = q(L-1)/L \ne 1`
    (toolkit's reading of the explicit zero-balance potential)."""
    m = _exponent(q, L)
    return sign(x) * abs(x) ** (1 - m) / (L * (1 - m))


def stated_potential(x, q, L):
    r""":math:`R = |x|^{2-m}/(L(1-m)(2-m))`, :math:`m \notin \{1, 2\}`: for SignGF
    :math:`R = \tfrac{L}{L+1}|x|^{1+1/L}`; for GF with :math:`L \ge 3`
    :math:`R = -\tfrac{L}{2(L-2)}|x|^{2/L}`."""
    m = _exponent(q, L)
    return abs(x) ** (2 - m) / (L * (1 - m) * (2 - m))


def stated_gradient_log(x, L):
    r""":math:`m = 1` (:math:`L = q/(q-1)`; GF at :math:`L = 2`): :math:`\nabla R =
    \operatorname{sign}(x)\log|x|/L` on each half-line."""
    return sign(x) * _log(abs(x)) / L


def stated_potential_log(x, L):
    r""":math:`m = 1`: :math:`R = (|x|\log|x| - |x|)/L` (the entropy for GF, :math:`L = 2`)."""
    return (abs(x) * _log(abs(x)) - abs(x)) / L


def unscaled_gradient(x, q, L):
    r"""Planted error: the factor :math:`1/L` dropped."""
    return L * stated_gradient(x, q, L)


def unscaled_potential(x, q, L):
    r"""Planted error: the factor :math:`1/L` dropped."""
    return L * stated_potential(x, q, L)


def unscaled_gradient_log(x, L):
    r"""Planted error: the factor :math:`1/L` dropped."""
    return L * stated_gradient_log(x, L)


def unscaled_potential_log(x, L):
    r"""Planted error: the factor :math:`1/L` dropped."""
    return L * stated_potential_log(x, L)


def _is_log(q: float, L: int) -> bool:
    return sp.nsimplify(q) * (L - 1) == L


def _gradient(run: Run, x, q, L):
    """The stated grad R of the branch that applies (m = 1: logarithmic)."""
    if _is_log(q, L):
        return run.stated["gradient_log"](x, L)
    return run.stated["gradient"](x, q, L)


def _potential(run: Run, x, q, L):
    if _is_log(q, L):
        return run.stated["potential_log"](x, L)
    return run.stated["potential"](x, q, L)


# --- symbolic ------------------------------------------------------------------------------

def _cancel_exponents(expr: sp.Expr) -> sp.Expr:
    """Rational-function exponents put over one denominator and cancelled (a substitution
    such as q = L/(L-1) leaves them unsimplified)."""
    return expr.replace(lambda e: e.is_Pow, lambda e: sp.Pow(e.base, sp.cancel(e.exp)))


def _symbolic(run: Run) -> Iterator[Evidence]:
    metric = run.derivation(derive_zero_balance_metric_any_depth()).result
    derived = run.derivation(derive_potential_zero_balance()).result
    x = X
    R = run.stated["potential"](x, Q, DEPTH)
    yield symbolic_identity("R'' x M = 1: the stated potential against the inverse metric of "
                            "the parameter flow (zero balance, symbolic q, L, m != 1)",
                            stated=sp.diff(R, x, 2) * metric.M, derived=sp.Integer(1),
                            parameters={"q": "symbolic", "L": "symbolic", "x": "> 0"})
    q_log = DEPTH / (DEPTH - 1)  # m = 1
    R_log = run.stated["potential_log"](x, DEPTH)
    yield symbolic_identity("R'' x M = 1 at m = 1 (q = L/(L-1)): the logarithmic potential",
                            stated=sp.diff(R_log, x, 2) * _cancel_exponents(
                                metric.M.subs(Q, q_log)),
                            derived=sp.Integer(1), parameters={"L": "symbolic", "x": "> 0"})
    yield symbolic_identity("grad R and R (power branch, then m = 1 branch): stated vs the "
                            "normalised integrals of 1/M (grad R(0) = 0 for m < 1, "
                            "grad R(oo) = 0 for m > 1, R(0+) = 0)",
                            stated=sp.Matrix([run.stated["gradient"](x, Q, DEPTH), R,
                                              run.stated["gradient_log"](x, DEPTH), R_log]),
                            derived=sp.Matrix([derived.gradient, derived.potential,
                                               derived.gradient_log, derived.potential_log]),
                            parameters={"q": "symbolic", "L": "symbolic", "x": "> 0"})
    yield from _special_cases(run)


@lru_cache(maxsize=None)
def _integrated_metric(q: sp.Rational, L: int) -> tuple[sp.Expr, sp.Expr]:
    r"""grad R and R from the sign-pattern metric :math:`M` of
    ``derive_metric_zero_balance(L)`` at this q: :math:`\int 1/M`, normalised by
    :math:`\nabla R(0) = 0` (m < 1), :math:`\nabla R(\infty) = 0` (m > 1), :math:`\nabla R(1)
    = 0` (m = 1), then :math:`R(0^+) = 0`. A pure function of (q, L): the negative control's
    run reuses it."""
    x, z = X, sp.Symbol("z", positive=True)
    M, _ = derive_metric_zero_balance(L).result
    hessian = 1 / M.subs(Q, q)
    m = q * (L - 1) / sp.Integer(L)
    # 1/M is a monomial c z^(-m) (and grad R a monomial or c log z): its antiderivative and
    # limits give the integral; sympy's default tries Meijer G first, for the same value.
    direct = {"meijerg": False, "risch": False}
    if m < 1:
        gradient = sp.integrate(hessian.subs(x, z), (z, 0, x), **direct)
    elif m > 1:
        gradient = -sp.integrate(hessian.subs(x, z), (z, x, sp.oo), **direct)
    else:
        gradient = sp.integrate(hessian.subs(x, z), (z, 1, x), **direct)
    return gradient, sp.integrate(gradient.subs(x, z), (z, 0, x), **direct)


def _special_cases(run: Run) -> Iterator[Evidence]:
    r"""For each (q, L): the sign-pattern metric of ``derive_metric_zero_balance(L)``
    integrated directly (a second derivation of :math:`M`), normalised as the reading says."""
    p = run.params["special"]
    stated, derived = [], []
    for q in p["q"]:
        q = sp.nsimplify(q)
        for L in p["L"]:
            run.derivation(derive_metric_zero_balance(L))
            stated += [_gradient(run, X, q, L), _potential(run, X, q, L)]
            derived += list(_integrated_metric(q, L))
    yield symbolic_identity("special cases: grad R and R, stated vs int of 1/M from the "
                            "sign-pattern derivation (SignGF: L/(L+1)|x|^(1+1/L); GF, L = 2: "
                            "the entropy; GF, L >= 3: -L x^(2/L) / (2(L-2)))",
                            stated=sp.Matrix(stated), derived=sp.Matrix(derived),
                            parameters={"q": p["q"], "L": p["L"]})


# --- autograd: R'' against the parameter flow's velocity -----------------------------------

def _hessian(run: Run) -> Iterator[Evidence]:
    p = run.params["hessian"]
    magnitudes = torch.logspace(-2, 2, p["points"], dtype=run.dtype, device=run.device)
    x = torch.cat([-magnitudes.flip(0), magnitudes])
    cases = []
    for q in p["q"]:
        for L in p["L"]:
            xs = x.clone().requires_grad_(True)
            # R'' as the derivative of the stated grad R (one autograd pass: the double
            # backward of abs would load torch's compiler for seconds).
            (second,) = torch.autograd.grad(_gradient(run, xs, q, L).sum(), xs)
            # Zero balance: every |w_i| = |x|^(1/L), the sign carried by w_1.
            W = x.abs().pow(1 / L)[None].repeat(L, 1)
            W[0] = W[0] * torch.sign(x)
            W = W[:, None, :]
            qt = torch.full((1, 1), q, dtype=run.dtype, device=run.device)
            one = torch.ones_like(x)[None]
            mask = depth_mask(torch.tensor([L]), L, dtype=run.dtype, device=run.device)
            velocity = ProductFlow(lambda _, g=one: g, qt, mask)(0.0, W)
            M = -velocity_of_x(W, velocity)[0]
            cases.append(({"q": q, "L": L}, second.detach() * M, torch.ones_like(M)))
    yield compare_cases(Route.PROPERTY, "R'' (autograd of the stated grad R) x M (the "
                        "parameter flow's velocity of x at zero balance, unit gradient) = 1",
                        cases, names=("stated", "measured"),
                        tolerance=Tolerance(64 * unit_roundoff(run.dtype),
                                            "a power (or log) differentiated twice by "
                                            "autograd times a product of <= 5 powers: a few "
                                            "ulps each, 64 u"),
                        parameters={"q": p["q"], "L": p["L"], "|x|": [1e-2, 1e2]})


# --- the mirror identity along the parameter flow ------------------------------------------

def _mirror_identity(run: Run) -> Iterator[Evidence]:
    p = run.params["dynamics"]
    G = fixed_sign_grid({"q": p["q"], "L": p["L"], "balance": ("zero", "cor4.8")}, run)
    levels = fixed_sign_ladder(run, G, p)
    zero = G.where(balance="zero")
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    for b in zero.tolist():
        lab = G.labels[b]
        q, L = lab["q"], lab["L"]
        logs_stated, logs_clock = [], []
        for values in levels:
            x = values[1:, :-1, b, 0].prod(1)
            x0 = values[0, :-1, b, 0].prod()
            increment = (_gradient(run, x, q, L) - _gradient(run, x0, q, L)) \
                / float(p["G"]) ** (q - 1)
            logs_stated.append(increment.log())
            logs_clock.append(values[1:, -1, b, 0].log())
        scale = float(max(v.abs().max() for v in logs_clock + logs_stated))
        t_s = ladder_tolerance(logs_stated, dtype=run.dtype, steps=finest, scale=scale,
                               what="log of the stated grad R increment")
        t_c = ladder_tolerance(logs_clock, dtype=run.dtype, steps=finest, scale=scale,
                               what="log of the clock")
        yield ladder_compare(f"log(grad R(x_t) - grad R(x_0)) / G^(q-1) (stated potential) vs "
                             f"log t (parameter flow's clock), f = -G x, zero balance, q = {q}, "
                             f"L = {L}", stated=logs_stated[-1], measured=logs_clock[-1],
                             tolerance=Tolerance(t_s.value + t_c.value,
                                                 f"({t_s.why}) + ({t_c.why})"),
                             parameters={"q": q, "L": L, "a": p["a"], "G": p["G"],
                                         "|x| reached": float(levels[-1][-1, :-1, b, 0]
                                                              .prod()),
                                         "tau": p["tau"]})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _hessian(run)
    yield from _mirror_identity(run)


_DYNAMICS = {"q": [1.0, 1.5, 2.0], "L": [2, 3, 5], "a": 0.5, "G": 1.0, "tau": 20.0,
             "steps": 150, "levels": 3, "record": 5}

CLAIM = register(Claim(
    id="ns.cor4.11",
    paper=PAPER,
    kind="corollary",
    title="Explicit mirror potential R_{Lp,L} at zero balance constant",
    source="Corollary 4.11 (submitted numbering); later 'Lemma 4.13'; SOURCES §4.12",
    statement=r"\text{(public description)}\ \text{an explicit }R_{L_p,L}\text{ at zero balance "
              r"constant }(\lambda=0)\text{, whose Legendre property depends on }q,\ L,\ m.",
    reading=r"Toolkit's reading: zero balance (all |w_i| equal, the \lambda=0 case of "
            r"ns.def4.5), coordinate-wise, m=q(L-1)/L: R(x)=|x|^{2-m}/(L(1-m)(2-m)), "
            r"\nabla R=\mathrm{sign}(x)|x|^{1-m}/(L(1-m)), \nabla^2R=|x|^{-m}/L (m\ne1); "
            r"m=1 (L=q/(q-1); GF at L=2): R=(|x|\log|x|-|x|)/L, \nabla R=\mathrm{sign}(x)"
            r"\log|x|/L. Up to affine terms, normalised by \nabla R(0)=0 (m<1), "
            r"\nabla R(\pm\infty)=0 (m>1), R(0^\pm)=0. Special cases: SignGF "
            r"R=\tfrac{L}{L+1}|x|^{1+1/L}; GF L=2 the entropy (x\log x-x)/2; GF L\ge3 "
            r"R=-\tfrac{L}{2(L-2)}|x|^{2/L}. For m\ge1 the formula lives on each half-line "
            r"(x cannot change sign at zero balance). Checked on the mirror identity "
            r"\nabla R(x_t)-\nabla R(x_0)=G^{q-1}t along the parameter flow on f=-Gx up to "
            r"|x|\sim10^{25..60} (and through the blow-up for m>1).",
    parameters={
        "quick": {"special": {"q": [1, 1.5, 2], "L": [2, 3, 5]},
                  "hessian": {"q": [1.0, 1.5, 2.0], "L": [2, 3, 5], "points": 9},
                  "dynamics": _DYNAMICS},
        "full": {"special": {"q": [1, 1.25, 1.5, 1.75, 2], "L": [2, 3, 4, 5]},
                 "hessian": {"q": [1.0, 1.25, 1.5, 1.75, 2.0], "L": [2, 3, 4, 5],
                             "points": 41},
                 "dynamics": {**_DYNAMICS, "steps": 300, "levels": 4}},
    },
    stated={"gradient": stated_gradient, "potential": stated_potential,
            "gradient_log": stated_gradient_log, "potential_log": stated_potential_log},
    check=check,
    control=NegativeControl("the factor 1/L dropped from R and grad R",
                            {"gradient": unscaled_gradient, "potential": unscaled_potential,
                             "gradient_log": unscaled_gradient_log,
                             "potential_log": unscaled_potential_log}),
    assumptions=(exponent_scope("special.q", "hessian.q", "dynamics.q"),
                 depth_scope("special.L", "hessian.L", "dynamics.L")),
    # L = 1 (m = 0, R = x^2/2) runs on every numeric route: the space reaches below the depth
    space={"dynamics.q": Choice(((1.0,), (1.25,), (1.5,), (1.75,), (2.0,), (1.0, 2.0))),
           "dynamics.L": Choice(((1,), (2,), (3,), (4,), (6,))),
           "dynamics.a": LogUniform(0.05, 2.0),
           "hessian.q": Choice(((1.0,), (1.25,), (1.5,), (2.0,))),
           "hessian.L": Choice(((1,), (2,), (3,), (5,), (7,)))},
))
