r"""The normalised steepest-descent direction of the :math:`\ell_p` norm and the dual-norm
gradient (Never Saddle §4, ``ns.steepest-direction``; verify/claims/ns/SOURCES.md §4.4).

Definitions used here, nothing else: the dual exponent :math:`p` of :math:`q \ge 1` solves
:math:`1/p + 1/q = 1` (:func:`theory.ns.steepest.dual_exponent`); the steepest direction of the
norm :math:`\|\cdot\|_p` at a gradient :math:`g \ne 0` is a minimiser of
:math:`\langle g, d\rangle` over :math:`\|d\|_p \le 1`.

:func:`derive_normalised_direction` solves that problem through its KKT conditions for a
gradient with ``n`` coordinates and a symbolic :math:`q \in (1, \infty)` and arrives at
:math:`d^\star = -\operatorname{sign}(g)|g|^{q-1}/\|g\|_q^{q-1}` with
:math:`\langle g, d^\star\rangle = -\|g\|_q`; it then differentiates :math:`\|g\|_q`
(:math:`d^\star = -\nabla\|g\|_q`) and relates :math:`d^\star` to the unnormalised direction of
:func:`theory.ns.steepest.derive_steepest_direction`. :func:`derive_box_direction` is the
:math:`q = 1` (:math:`p = \infty`) case, a linear programme over the box.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.steepest import derive_steepest_direction, dual_exponent

Q_DUAL = sp.Symbol("q", positive=True)


def _check_size(n: int) -> None:
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n: {n!r} must be an integer >= 1")


@dataclass(frozen=True)
class NormalisedDirection:
    r"""What :func:`derive_normalised_direction` arrives at, for ``n`` coordinates.

    ``magnitudes``: positive symbols :math:`\gamma_k = |g_k|`; ``signs``: the sign pattern
    :math:`\pm1` the expressions are written for (``g_k = signs[k] * magnitudes[k]``);
    ``multiplier``: the KKT multiplier :math:`\nu`; ``direction``: :math:`d^\star` (a column
    matrix); ``value``: :math:`\langle g, d^\star\rangle`; ``norm_gradient``:
    :math:`\nabla_g\|g\|_q`; ``unnormalised_ratio``: the unnormalised minimiser of
    :math:`\langle g, d\rangle + \tfrac1p\|d\|_p^p` divided by :math:`d^\star`, coordinate by
    coordinate.
    """

    q: sp.Symbol
    magnitudes: tuple[sp.Symbol, ...]
    signs: tuple[int, ...]
    multiplier: sp.Expr
    direction: sp.Matrix
    value: sp.Expr
    norm_gradient: sp.Matrix
    unnormalised_ratio: sp.Matrix

    @property
    def gradient(self) -> list[sp.Expr]:
        """:math:`g` itself, coordinate by coordinate."""
        return [s * m for s, m in zip(self.signs, self.magnitudes)]


def _signs(n: int) -> tuple[int, ...]:
    """A sign pattern with both signs once n >= 2 (+, -, +, -, ...)."""
    return tuple(1 if k % 2 == 0 else -1 for k in range(n))


@cache
def derive_normalised_direction(n: int) -> Derivation:
    r"""Minimise :math:`\langle g, d\rangle` subject to :math:`\tfrac1p\|d\|_p^p \le \tfrac1p`,
    :math:`q > 1`, every :math:`g_k \ne 0`.

    1. Flipping the sign of :math:`g_k` and :math:`d_k` together leaves the problem unchanged,
       so take :math:`g_k = \gamma_k > 0` and :math:`d_k = -u_k`, :math:`u_k \ge 0` (a
       positive :math:`d_k` raises the objective and the constraint), then restore the signs.
    2. Stationarity of :math:`\sum_k(-\gamma_ku_k) + \nu(\sum_ku_k^p - 1)/p`:
       :math:`u_k = (\gamma_k/\nu)^{1/(p-1)}`, :math:`1/(p-1) = q-1`.
    3. :math:`\nu > 0` (else stationarity fails for :math:`\gamma_k > 0`), so the constraint is
       active (complementary slackness); it fixes :math:`\nu`.
    4. The objective is linear and the constraint convex, so a KKT point with
       :math:`\nu \ge 0` is a global minimiser; it is unique because the :math:`\ell_p` ball is
       strictly convex for :math:`1 < p < \infty`.

    >>> r = derive_normalised_direction(2).result
    >>> r.value
    -(gamma_1**q + gamma_2**q)**(1/q)
    """
    _check_size(n)
    q = Q_DUAL
    gam = sp.symbols(f"gamma_1:{n + 1}", positive=True)
    u, nu, p_ = sp.symbols("u nu p", positive=True)
    signs = _signs(n)
    d = Derivation(f"steepest direction of the l_p norm: argmin_(||d||_p <= 1) <g, d> "
                   f"(n = {n})")
    p = d.step("dual exponent: 1/p + 1/q = 1", dual_exponent(q))
    stationary = d.step("d/du of -gamma u + nu u^p / p (one coordinate, g = gamma > 0, "
                        "d = -u)", sp.diff(-gam[0] * u + nu * u**p_ / p_, u))
    (root,) = sp.solve(sp.Eq(stationary, 0), u)
    d.step("stationary u_1", root)
    exponent = d.step("power of gamma in u, with p = q/(q-1): 1/(p-1) = q-1",
                      sp.cancel(sp.log(root).expand(force=True).coeff(sp.log(gam[0]))
                                .subs(p_, p)))
    mags = [(gk / nu) ** exponent for gk in gam]
    norm_p = d.step("sum_k u_k^p (the constraint, active since nu > 0)",
                    sp.powsimp(sp.expand_power_base(sum(m**p for m in mags), force=True),
                               force=True))
    (nu_star,) = sp.solve(sp.Eq(norm_p, 1), nu)
    nu_star = d.step("nu from sum_k u_k^p = 1: nu = ||g||_q", nu_star)
    norm_q = sum(gk**q for gk in gam) ** (1 / q)
    d.step("nu - ||g||_q", sp.simplify(nu_star - norm_q))
    magnitudes = [sp.powsimp(sp.expand_power_base(m.subs(nu, norm_q), force=True),
                             force=True) for m in mags]
    direction = d.step("d*_k = -sign(g_k) |g_k|^(q-1) / ||g||_q^(q-1) (signs restored)",
                       sp.Matrix([-s * m for s, m in zip(signs, magnitudes)]))
    g = [s * gk for s, gk in zip(signs, gam)]
    d.step("||d*||_p^p - 1: d* is on the unit sphere",
           sp.simplify(sp.powsimp(sp.expand_power_base(
               sum(m**p for m in magnitudes), force=True), force=True) - 1))
    value = d.step("<g, d*> = -||g||_q",
                   sp.simplify(sp.powsimp(sum(gk * dk for gk, dk in zip(g, direction)),
                                          force=True)))
    gs = sp.symbols(f"g_1:{n + 1}", real=True)
    abs_norm = sum(sp.Abs(v) ** q for v in gs) ** (1 / q)
    on_g = dict(zip(gs, g))
    gradient = d.step("grad_g ||g||_q (differentiated, then at g_k = sign_k gamma_k)",
                      sp.Matrix([sp.diff(abs_norm, v) for v in gs]).subs(on_g))
    gradient = sp.Matrix([sp.powsimp(sp.simplify(e), force=True) for e in gradient])
    d.step("d* + grad ||g||_q: the direction is minus the dual-norm gradient",
           sp.simplify(direction + gradient))
    unnormalised = derive_steepest_direction().result
    d_u = sp.Matrix([unnormalised.direction.subs({unnormalised.g: v, unnormalised.q: q})
                     for v in g])
    ratio = d.step("unnormalised minimiser of <g,d> + ||d||_p^p/p, divided by d*: "
                   "||g||_q^(q-1) in every coordinate",
                   sp.Matrix([sp.powsimp(sp.simplify(a / b), force=True)
                              for a, b in zip(d_u, direction)]))
    d.result = NormalisedDirection(q=q, magnitudes=gam, signs=signs, multiplier=nu_star,
                                   direction=direction, value=value, norm_gradient=gradient,
                                   unnormalised_ratio=ratio)
    return d


@cache
def derive_box_direction(n: int) -> Derivation:
    r""":math:`q = 1`, :math:`p = \infty`: :math:`\min\langle g, d\rangle` over the box
    :math:`|d_k| \le 1` separates into :math:`\min_{|d_k|\le1}g_kd_k = -|g_k|` at
    :math:`d_k = -\operatorname{sign}(g_k)`; ``result`` is ``(direction, value)``.

    >>> derive_box_direction(2).result[1]
    -gamma_1 - gamma_2
    """
    _check_size(n)
    gam = sp.symbols(f"gamma_1:{n + 1}", positive=True)
    signs = _signs(n)
    d = Derivation(f"steepest direction of the l_oo norm (q = 1, n = {n})")
    t = sp.Symbol("t", real=True)
    # a linear function on [-1, 1] is smallest at an end point: compare the two
    ends = [sp.Min((s * gk * t).subs(t, -1), (s * gk * t).subs(t, 1)) for s, gk in
            zip(signs, gam)]
    d.step("min over d_k in {-1, 1} of g_k d_k (a linear function on [-1, 1])",
           sp.Matrix(ends))
    direction = d.step("d*_k = -sign(g_k)", sp.Matrix([-s for s in signs]))
    value = d.step("<g, d*> = -||g||_1", sp.Add(*ends))
    d.result = (direction, value)
    return d
