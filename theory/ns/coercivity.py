r"""The inverse-coercivity constant of the steepest mirror flow of :math:`x = \prod_{i=1}^L w_i`
(Never Saddle Corollary 4.8, submitted numbering; later Corollary 4.10), derived from the flow.

*Inverse* :math:`\mu`*-coercivity* (toolkit's reading): a separable :math:`R` is inverse
:math:`\mu`-coercive when every diagonal entry of :math:`(\nabla^2R)^{-1}` is at least
:math:`\mu`, i.e. the inverse metric :math:`M = 1/R''` of the mirror flow
:math:`\dot x = -M(x)\operatorname{sign}(g)|g|^{q-1}` satisfies :math:`M(x) \ge \mu` for every
:math:`x`; the best constant is :math:`\mu = \inf_x M(x)`.

Nothing here starts from a formula for :math:`\mu`: :func:`derive_coercivity` takes the inverse
metric :math:`M = P'(u)`, :math:`P(u) = \prod_i(u + c_i) = |x|^q` derived from the parameter
flow (:func:`theory.ns.reparam_balance.derive_product_metric`), evaluates the conserved offsets
:math:`c_i = |w_i|^q - \min_j|w_j|^q` at the initialisation :math:`w_1 = 0`,
:math:`w_{i\ge2} = \lambda`, shows that :math:`M` increases with :math:`|x|` and reads off the
infimum and its :math:`q`-monotonicity. :func:`derive_perturbed_coercivity` does the same for a
perturbed :math:`w_1` and unequal :math:`w_{i\ge2}` (review 1's measure-zero objection).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import Q, U, derive_product_metric, magnitudes

LAM = sp.Symbol("lambda", positive=True)
S_POS = sp.Symbol("s", positive=True)
ABS_X = sp.Symbol("X", positive=True)  # |x| > 0


def _check_depth(L: int) -> None:
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")


@dataclass(frozen=True)
class Coercivity:
    r"""What :func:`derive_coercivity` arrives at (``L`` factors, initialisation
    :math:`w_1 = 0`, :math:`w_{i\ge2} = \lambda`).

    ``offsets``: the conserved :math:`c_i`; ``M``: :math:`M(u) = P'(u)`; ``mu``: the infimum
    :math:`\inf_x M`, attained at :math:`x = 0` only; ``dmu_dq``: :math:`\partial\mu/\partial q`;
    ``sign_below_one`` / ``sign_above_one``: the sign of :math:`\partial\mu/\partial q` for
    :math:`\lambda = 1/(1+s)` and :math:`\lambda = 1+s` (:math:`s > 0`); ``exponent``: the power
    :math:`m` with :math:`M \sim L|x|^m` as :math:`|x| \to \infty`; ``onto_condition``: the
    :math:`q` for which :math:`\nabla R = \int_0^x dz/M` is onto :math:`\mathbb R`.
    """

    L: int
    offsets: tuple[sp.Expr, ...]
    P: sp.Expr
    M: sp.Expr
    mu: sp.Expr
    dmu_dq: sp.Expr
    sign_below_one: sp.Expr
    sign_above_one: sp.Expr
    exponent: sp.Expr
    onto_condition: sp.Expr


@cache
def derive_coercivity(L: int) -> Derivation:
    r""":math:`\mu(\lambda, q, L) = \inf_x M(x)` at :math:`w_1 = 0`, :math:`w_{i\ge2} = \lambda`.

    1. Offsets at the initialisation: :math:`\min_j|w_j|^q = 0`, so :math:`c_1 = 0`,
       :math:`c_{i\ge2} = \lambda^q`.
    2. :math:`u \mapsto |x|`: :math:`P(u) = |x|^q` with :math:`P(0) = 0` and :math:`P' > 0` on
       :math:`u \ge 0`, so :math:`u(|x|)` is increasing with :math:`u = 0 \iff x = 0`
       (implicit differentiation).
    3. :math:`M = P'(u)` is increasing in :math:`u`: :math:`P''(u)` is a polynomial in
       :math:`u` with positive coefficients (checked coefficient by coefficient), and
       :math:`P''(0) > 0`, so the infimum over :math:`x` is :math:`M(u = 0)`, attained at
       :math:`x = 0` only.
    4. :math:`\partial\mu/\partial q` and its sign on either side of :math:`\lambda = 1`.
    5. Growth :math:`M \sim L|x|^m` (:math:`m = \lim u P''/P'` over :math:`\lim uP'/P`, in
       :math:`|x|`), and :math:`\nabla R(\infty) = \int_0^\infty dz/M(z) < \infty` iff
       :math:`m > 1` (comparison with :math:`\int^\infty z^{-m}dz`).

    >>> derive_coercivity(3).result.mu
    lambda**(2*q)
    """
    _check_depth(L)
    d = Derivation(f"coercivity constant at w_1 = 0, w_i = lambda (L = {L})")
    base = derive_product_metric(L).result
    a = magnitudes(L)
    init = {a[0]: sp.Integer(0), **{ai: LAM for ai in a[1:]}}
    powers = [init[ai] ** Q for ai in a]
    smallest = d.step("min_j |w_j|^q at the initialisation", sp.Min(*powers))
    offsets = tuple(p - smallest for p in powers)
    d.step("conserved offsets c_i = |w_i|^q - min_j |w_j|^q", sp.Matrix(offsets))
    on_init = dict(zip(base.c, offsets))
    P = d.step("P(u) = prod_i (u + c_i) = |x|^q", sp.factor(base.P.subs(on_init)))
    M = d.step("inverse metric M = P'(u)", sp.expand(base.M.subs(on_init)))
    d.step("P'(u) - M: 0 (M is the derivative of P)", sp.expand(sp.diff(P, U) - M))
    # u(|x|): differentiate P(u(X)) = X^q implicitly.
    u_of_x = sp.Function("u")(ABS_X)
    implicit = sp.expand(sp.diff(P.subs(U, u_of_x) - ABS_X**Q, ABS_X))
    slope = sp.Derivative(u_of_x, ABS_X)
    # The differentiated equation is linear in u'(X): A u' + rest = 0.
    A = implicit.coeff(slope)
    du_dx = -sp.expand(implicit - A * slope) / A
    d.step("du/d|x| from P(u(|x|)) = |x|^q: q|x|^(q-1) / P'(u) > 0", sp.factor(du_dx))
    d.step("P(0): 0, so u = 0 exactly at x = 0", P.subs(U, 0))
    second = sp.Poly(sp.expand(sp.diff(M, U)), U)
    coefficients = second.all_coeffs()
    if not all(c.is_positive for c in coefficients):
        raise ArithmeticError(f"dM/du has a coefficient that is not positive: {coefficients}")
    d.step("dM/du = P''(u): coefficients in u, all positive (so M increases with u >= 0)",
           sp.Matrix(coefficients))
    d.step("P''(0) > 0: M is strictly increasing, the infimum is attained at x = 0 only",
           second.as_expr().subs(U, 0))
    mu = d.step("mu = inf_x M(x) = M(u = 0)", sp.powsimp(M.subs(U, 0), force=True))
    dmu = d.step("d mu / d q", sp.diff(mu, Q))
    below = d.step("sign of d mu/dq at lambda = 1/(1+s), s > 0 (lambda < 1)",
                   sp.sign(dmu.subs(LAM, 1 / (1 + S_POS))))
    above = d.step("sign of d mu/dq at lambda = 1 + s, s > 0 (lambda > 1)",
                   sp.sign(dmu.subs(LAM, 1 + S_POS)))
    d.step("d mu/dq at lambda = 1: mu = 1 for every q", dmu.subs(LAM, 1))
    # Growth: |x|^q = P(u) ~ u^L and M ~ L u^(L-1); the exponent of |x| in M is
    # (d log M / d log u) / (d log P / d log u) * q, taken as u -> oo.
    exponent = d.step("m = q lim_{u->oo} (u M'/M) / (u P'/P): M ~ L|x|^m",
                      sp.simplify(Q * sp.limit(U * sp.diff(M, U) / M, U, sp.oo)
                                  / sp.limit(U * sp.diff(P, U) / P, U, sp.oo)))
    d.step("lim_{u->oo} M / P^(m/q) (the constant of M ~ const |x|^m)",
           sp.limit(M / P ** (exponent / Q), U, sp.oo))
    (threshold,) = sp.solve(sp.Eq(exponent, 1), Q)  # m is increasing in q
    onto = d.step("grad R = int_0^x dz/M is onto R iff int^oo z^(-m) dz diverges: m <= 1",
                  sp.Le(Q, threshold))
    d.result = Coercivity(L=L, offsets=offsets, P=P, M=M, mu=mu, dmu_dq=dmu,
                          sign_below_one=below, sign_above_one=above, exponent=exponent,
                          onto_condition=onto)
    return d


@dataclass(frozen=True)
class PerturbedCoercivity:
    r"""What :func:`derive_perturbed_coercivity` arrives at: ``magnitudes`` :math:`|w_i|`
    (``magnitudes[0]`` the smallest), ``mu`` for those, ``mu_equal`` for :math:`|w_1| =
    \varepsilon`, :math:`|w_{i\ge2}| = \lambda`, and ``relative_bound`` :math:`\ge
    1 - \mu/\mu(0)` (Bernoulli), with ``eps`` the symbol :math:`\varepsilon`."""

    magnitudes: tuple[sp.Symbol, ...]
    mu: sp.Expr
    eps: sp.Symbol
    mu_equal: sp.Expr
    relative_bound: sp.Expr


@cache
def derive_perturbed_coercivity(L: int) -> Derivation:
    r"""Review 1's measure-zero objection: :math:`w_1 \ne 0` and unequal :math:`w_{i\ge2}`.

    With :math:`|w_1|` the smallest magnitude, the offsets are :math:`c_1 = 0`,
    :math:`c_i = |w_i|^q - |w_1|^q`; the argument of :func:`derive_coercivity` (it only used
    :math:`c \ge 0` with one zero offset) gives :math:`\mu = P'(0) = \prod_{i\ge2}c_i`, a
    continuous function of the initialisation. At :math:`|w_{i\ge2}| = \lambda`:
    :math:`\mu(\varepsilon) = (\lambda^q - \varepsilon^q)^{L-1} \to \lambda^{q(L-1)}`, with
    relative change at most :math:`(L-1)(\varepsilon/\lambda)^q` (Hölder of order q in
    :math:`\varepsilon`).

    >>> derive_perturbed_coercivity(2).result.mu_equal
    -epsilon**q + lambda**q
    """
    _check_depth(L)
    d = Derivation(f"coercivity constant at a perturbed initialisation (L = {L})")
    base = derive_product_metric(L).result
    a = magnitudes(L)
    offsets = [sp.Integer(0)] + [ai**Q - a[0] ** Q for ai in a[1:]]
    d.step("offsets with |w_1| = a1 the smallest magnitude", sp.Matrix(offsets))
    M = base.M.subs(dict(zip(base.c, offsets)))
    mu = d.step("mu = M(u = 0) (x = 0; M increasing in u as before)",
                sp.factor(M.subs(U, 0)))
    eps = sp.Symbol("epsilon", positive=True)
    mu_equal = d.step("|w_1| = epsilon, |w_i| = lambda (i >= 2)",
                      mu.subs({a[0]: eps, **{ai: LAM for ai in a[1:]}}))
    d.step("limit epsilon -> 0: the corollary's mu (continuity)", sp.limit(mu_equal, eps, 0))
    bound = d.step("1 - mu(eps)/mu(0) <= (L-1)(eps/lambda)^q (Bernoulli's inequality)",
                   (L - 1) * (eps / LAM) ** Q)
    d.result = PerturbedCoercivity(magnitudes=a, mu=mu, eps=eps, mu_equal=mu_equal,
                                   relative_bound=bound)
    return d
