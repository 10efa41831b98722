r"""The metric exponent of the steepest flow on :math:`x = \prod_{i=1}^L w_i` (Never Saddle,
Fig. 2 left; the summaries' :math:`m = q(L-1)/L`), derived from the parameter flow.

The mirror flow of ns.thm4.6 is :math:`\dot x = -M(x)\operatorname{sign}(g)|g|^{q-1}` with the
inverse metric :math:`M = 1/\nabla^2R`. Here:

* :func:`derive_zero_balance_metric_any_depth`: at zero balance (every :math:`|w_i|` equal, the
  conserved :math:`|w_i|^q - |w_1|^q` of ns.lemma4.4 being 0) for a *symbolic* depth
  :math:`L`, from the chain rule and the steepest direction alone: :math:`M = L|x|^m` and the
  exponent :math:`m = d\log M/d\log|x|`;
* :func:`derive_local_exponent`: for any balance offsets :math:`c_i` (depth 2..5), the local
  exponent :math:`d\log M/d\log|x|` written in :math:`u` (:math:`P(u) = \prod_i(u + c_i) =
  |x|^q`, :math:`M = P'(u)`, :func:`theory.ns.reparam_balance.derive_product_metric`) and its
  limits at :math:`|x| \to \infty` (the metric exponent, whatever the balance) and at
  :math:`x \to 0`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import Q, U, derive_product_metric, odd_power
from theory.ns.steepest import steepest_direction

#: A symbolic depth (a positive integer) and a positive coordinate value.
DEPTH = sp.Symbol("L", positive=True, integer=True)
X = sp.Symbol("x", positive=True)


@dataclass(frozen=True)
class ZeroBalanceMetric:
    r"""``M`` :math:`= L x^m` (``x > 0``; :math:`M` is even in :math:`x`) and ``m``, for the
    symbolic depth ``L``."""

    x: sp.Symbol
    L: sp.Symbol
    M: sp.Expr
    m: sp.Expr


@cache
def derive_zero_balance_metric_any_depth() -> Derivation:
    r"""Zero balance, symbolic depth :math:`L`: all :math:`|w_i| = a`.

    For factor :math:`i`, :math:`\partial_{w_i}F = g\prod_{j\ne i}w_j` (chain rule), which on the
    positive orthant is :math:`g\,a^{L-1}`; the flow moves it by the steepest direction
    :math:`\dot w_i = -\operatorname{sign}(g a^{L-1})|g a^{L-1}|^{q-1}`, the same for every
    :math:`i`, so the balance stays zero. :math:`\dot x = \sum_i\prod_{j\ne i}w_j\,\dot w_i
    = L a^{L-1}\dot w`, and :math:`M = -\dot x/\psi_q(g)` is checked to be the same for both
    signs of :math:`g`; then :math:`a = x^{1/L}`. ``result`` is a :class:`ZeroBalanceMetric`.

    >>> derive_zero_balance_metric_any_depth().result.m
    q*(L - 1)/L
    """
    d = Derivation("zero balance, symbolic depth L: inverse metric and metric exponent")
    a, gamma = sp.symbols("a gamma", positive=True)
    j = sp.Symbol("j", positive=True, integer=True)
    others = d.step("prod_{j != i} w_j with every |w_j| = a (positive orthant)",
                    sp.Product(a, (j, 1, DEPTH - 1)).doit())
    metrics = set()
    for grad_sign in (1, -1):
        g = grad_sign * gamma
        velocity = steepest_direction(g * others, Q)
        xdot = DEPTH * others * velocity
        metric = sp.powsimp(sp.expand_power_base(-xdot / odd_power(g, Q), force=True),
                            force=True)
        metrics.add(metric)
        if grad_sign == 1:
            d.step("wdot_i = -sign(g a^(L-1)) |g a^(L-1)|^(q-1), the same for every i", velocity)
            d.step("xdot = sum_i prod_{j != i} w_j wdot_i = L a^(L-1) wdot", xdot)
    if len(metrics) != 1:
        raise ArithmeticError(f"-xdot / psi_q(g) depends on the sign of g: {metrics}")
    (metric,) = metrics
    d.step("M = -xdot / psi_q(g), the same for g > 0 and g < 0", metric)
    M = d.step("with a = x^(1/L) (x = a^L)", sp.powsimp(
        sp.expand_power_base(metric.subs(a, X ** (1 / DEPTH)), force=True), force=True))
    m = d.step("m = x dM/dx / M", sp.factor(sp.powsimp(X * sp.diff(M, X) / M, force=True)))
    d.result = ZeroBalanceMetric(x=X, L=DEPTH, M=M, m=m)
    return d


@dataclass(frozen=True)
class LocalExponent:
    r"""``local`` :math:`= d\log M/d\log|x|` as a function of :math:`u` and the offsets ``c``;
    ``at_infinity`` and ``at_zero`` its limits (``at_zero`` with :math:`c_1 = 0` and the
    other offsets positive, the Cor. 4.8 balance)."""

    L: int
    c: tuple[sp.Symbol, ...]
    local: sp.Expr
    at_infinity: sp.Expr
    at_zero: sp.Expr


@cache
def derive_local_exponent(L: int) -> Derivation:
    r""":math:`d\log M/d\log|x|` for any balance offsets, depth ``L``.

    With :math:`|x|^q = P(u)` and :math:`M = P'(u)`: :math:`d\log M/du = P''/P'` and
    :math:`d\log|x|/du = P'/(qP)`, so the local exponent is :math:`qPP''/P'^2`; its limit
    :math:`u \to \infty` (:math:`|x| \to \infty`) is the metric exponent for every balance, its
    limit :math:`u \to 0` with :math:`c_1 = 0 < c_{i\ge2}` is 0 (:math:`M \to P'(0) > 0`).

    >>> derive_local_exponent(3).result.at_infinity
    2*q/3
    """
    d = Derivation(f"local exponent d log M / d log |x|, x = w_1 ... w_{L}")
    base = derive_product_metric(L).result
    P, c = base.P, base.c
    dP, d2P = sp.diff(P, U), sp.diff(P, U, 2)
    d.step("d log M / du = P''(u) / P'(u)", d2P / dP)
    d.step("d log|x| / du = P'(u) / (q P(u))  (|x|^q = P(u))", dP / (Q * P))
    local = d.step("local exponent q P P'' / P'^2", Q * P * d2P / dP**2)
    poly = sp.Poly(P, U)
    first = poly.diff(U)
    second = first.diff(U)
    if poly.degree() + second.degree() != 2 * first.degree():
        raise ArithmeticError("P P'' and P'^2 differ in degree")
    d.step("deg_u(P P'') = deg_u(P'^2): the limit u -> oo is the ratio of leading coefficients "
           "LC(P) LC(P'') / LC(P')^2", sp.Integer(2 * first.degree()))
    at_infinity = d.step("limit u -> oo (|x| -> oo): the metric exponent", sp.factor(
        Q * poly.LC() * second.LC() / first.LC() ** 2))
    positive = {cj: sp.Symbol(f"lambda{k + 2}", positive=True) for k, cj in enumerate(c[1:])}
    slope0 = dP.subs(positive).subs({c[0]: 0, U: 0})
    if not slope0.is_positive:
        raise ArithmeticError(f"P'(0) = {slope0} is not positive for c_1 = 0 < c_i")
    d.step("P'(0) with c_1 = 0 < c_i (i >= 2): positive, so the local exponent is continuous "
           "at u = 0", slope0)
    at_zero = d.step("local exponent at u = 0 (x = 0)",
                     local.subs(positive).subs({c[0]: 0}).subs(U, 0))
    d.result = LocalExponent(L=L, c=c, local=local, at_infinity=at_infinity, at_zero=at_zero)
    return d
