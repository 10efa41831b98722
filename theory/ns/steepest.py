r"""The steepest direction of exponent :math:`q \in [1, 2]` and its dual exponent :math:`p`
(Never Saddle §3-§4, the steepest flow :math:`dx = -\operatorname{sign}(\nabla f)\odot
|\nabla f|^{q-1}dt`).

Definitions used here, nothing else:

* the dual exponent :math:`p` solves :math:`1/p + 1/q = 1`;
* the unnormalised :math:`L_p` steepest direction for a gradient coordinate :math:`g` minimises
  :math:`\phi(d) = g\,d + \tfrac1p|d|^p` over :math:`d \in \mathbb R`.

:func:`derive_steepest_direction` solves that minimisation and arrives at
:math:`d^\star = -\operatorname{sign}(g)|g|^{q-1}` with the value :math:`-|g|^q/q`;
:func:`derive_sign_limit` takes :math:`p \to \infty` (:math:`q = 1`, sign descent).
:func:`steepest_direction` is the definition the other derivations build their flows from.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from theory.derivation import Derivation


def steepest_direction(g: sp.Expr, q: sp.Expr) -> sp.Expr:
    r"""The flow's direction :math:`-\operatorname{sign}(g)|g|^{q-1}` for one coordinate
    (§3; :math:`\operatorname{sign}(0) = 0`, so :math:`q = 1` gives sign descent).

    >>> g = sp.Symbol("g", positive=True)
    >>> steepest_direction(-g, sp.Rational(3, 2))
    sqrt(g)
    """
    return -sp.sign(g) * sp.Abs(g) ** (q - 1)


def dual_exponent(q: sp.Expr) -> sp.Expr:
    r"""The :math:`p` with :math:`1/p + 1/q = 1`, solved by sympy (:math:`q > 1`).

    >>> dual_exponent(sp.Rational(3, 2))
    3
    """
    p = sp.Symbol("p", positive=True)
    (solution,) = sp.solve(sp.Eq(1 / p + 1 / q, 1), p)
    return solution


@dataclass(frozen=True)
class SteepestDirection:
    r"""What :func:`derive_steepest_direction` arrives at.

    ``direction`` is :math:`d^\star(g)` for a symbolic real ``g``; ``value`` is
    :math:`\phi(d^\star)`; ``p`` is the dual exponent in terms of ``q``; ``exponent`` is the
    power of :math:`|g|` in :math:`|d^\star|` (derived, then rewritten in ``q``).
    """

    g: sp.Symbol
    q: sp.Symbol
    p: sp.Expr
    exponent: sp.Expr
    direction: sp.Expr
    value: sp.Expr


def derive_steepest_direction() -> Derivation:
    r"""Minimise :math:`\phi(d) = g\,d + \tfrac1p|d|^p` for :math:`q \in (1, 2]`, :math:`g \ne 0`.

    For :math:`g > 0` a minimiser has :math:`d \le 0` (a positive :math:`d` raises both terms),
    so write :math:`d = -u`, :math:`u \ge 0`; stationarity :math:`-g + u^{p-1} = 0` gives
    :math:`u = g^{1/(p-1)}`, a minimum since :math:`\phi'' = (p-1)u^{p-2} > 0`. :math:`g < 0` is
    the mirror image. With :math:`p` from :func:`dual_exponent`, :math:`1/(p-1) = q-1`.
    ``result`` is a :class:`SteepestDirection`.

    >>> r = derive_steepest_direction().result
    >>> r.exponent, r.value
    (q - 1, -Abs(g)**q/q)
    """
    q = sp.Symbol("q", positive=True)
    g = sp.Symbol("g", real=True)
    gp, u, p_ = sp.symbols("gamma u p", positive=True)
    d = Derivation("L_p steepest direction: argmin_d g d + |d|^p / p")
    p = d.step("dual exponent: solve 1/p + 1/q = 1 for p", dual_exponent(q))
    d.step("(p - 1)(q - 1), simplified: the exponents are conjugate",
           sp.factor(sp.cancel((p - 1) * (q - 1))))
    phi = d.step("phi(-u) for g = gamma > 0, u >= 0", -gp * u + u**p_ / p_)
    stationary = d.step("d phi / du", sp.diff(phi, u))
    (root,) = sp.solve(sp.Eq(stationary, 0), u)
    d.step("stationary point u*", root)
    d.step("phi''(u) = (p-1) u^(p-2) > 0 for p > 1: the stationary point is the minimum",
           sp.diff(phi, u, 2))
    exponent = d.step("power of gamma in u*, with p = q/(q-1)",
                      sp.cancel(sp.log(root).expand(force=True).coeff(sp.log(gp))
                                .subs(p_, p)))
    d.step("g = -gamma < 0, d = +u >= 0: phi(+u) - phi(-u) with g -> -g vanishes, same u*",
           (-gp) * u + u**p_ / p_ - phi)
    direction = d.step("d* = -sign(g) |g|^(q-1) (both signs of g)",
                       -sp.sign(g) * sp.Abs(g) ** exponent)
    value_pos = sp.powsimp(sp.expand_power_base(
        phi.subs(u, gp**exponent).subs(p_, p), force=True), force=True)
    value = d.step("phi(d*) = -|g|^q + |g|^q / p = -|g|^q / q",
                   sp.factor(sp.simplify(value_pos)).subs(gp, sp.Abs(g)))
    d.result = SteepestDirection(g=g, q=q, p=p, exponent=exponent, direction=direction,
                                 value=value)
    return d


def derive_sign_limit() -> Derivation:
    r""":math:`q \to 1` is :math:`p \to \infty`: the magnitude :math:`u^\star = |g|^{1/(p-1)}`
    of the minimiser tends to 1, so the direction is :math:`-\operatorname{sign}(g)`
    (:math:`\tfrac1p|d|^p` tends to the indicator of :math:`|d| \le 1`; sign descent).
    ``result`` is the limit of :math:`u^\star`.

    >>> derive_sign_limit().result
    1
    """
    gp, p = sp.symbols("gamma p", positive=True)
    d = Derivation("q = 1 (p -> infinity): sign descent")
    u = d.step("u* = gamma^(1/(p-1)) for gamma = |g| > 0", gp ** (1 / (p - 1)))
    d.result = d.step("lim_{p -> oo} u*", sp.limit(u, p, sp.oo))
    return d
