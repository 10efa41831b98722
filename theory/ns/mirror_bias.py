r"""When is the limit of a steepest mirror flow the Bregman projection of its start?
(Never Saddle, the later Theorem 3.4's mirror-flow implicit bias and the summaries' "no longer
holds for :math:`p \ne 2`", verify/claims/ns/SOURCES.md §4.3.)

:func:`derive_kkt_conditions`: the Lagrangian of :math:`\min_{Ax=y}D_R(x, x_0)` for a
separable :math:`R`; its stationarity condition is :math:`\nabla R(x) - \nabla R(x_0) +
A^\top\nu = 0`, i.e. the mirror displacement lies in :math:`\operatorname{range}A^\top`
(sufficient as well, :math:`D_R(\cdot, x_0)` being convex).

:func:`derive_one_row_bias`: the steepest mirror flow :math:`d\nabla R = -\psi_q(g)dt`,
:math:`\psi_q(v) = \operatorname{sign}(v)|v|^{q-1}`, on one equation :math:`a^\top x = y`
with :math:`a = (1, 2)`. There :math:`g = a\,r/N` with the scalar residual
:math:`r = a^\top x - y`, which never changes sign (:math:`\dot r = a^\top\dot x` has the sign
of :math:`-r`), so the displacement is :math:`-\psi_q(a)\int_0^\infty|r/N|^{q-1}dt` times
:math:`\operatorname{sign}(r_0)`: a positive multiple of :math:`\psi_q(a)`. The KKT
condition holds iff :math:`\psi_q(a) \in \operatorname{span}(a)`, iff its component along
:math:`\ker a^\top = \operatorname{span}(2, -1)` vanishes: :math:`2 - 2^{q-1} = 0`, whose
only root in :math:`[1, 2]` is :math:`q = 2`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import Q
from theory.ns.steepest import steepest_direction


@dataclass(frozen=True)
class OneRowBias:
    """``component``: the drive's component along ker a^T as a function of q; ``holds``:
    the set of q in [1, 2] where the KKT condition holds."""

    component: sp.Expr
    holds: sp.Set


@cache
def derive_kkt_conditions() -> Derivation:
    r"""Stationarity of :math:`L(x, \nu) = D_R(x, x_0) + \nu^\top(Ax - y)` for a separable
    :math:`R` on two coordinates and one equation (the general case is the same coordinate by
    coordinate). ``result``: the stationarity residuals, linear in :math:`\nu`."""
    d = Derivation("KKT conditions of argmin_(Ax = y) D_R(x, x_0), separable R")
    x = sp.symbols("x_1 x_2", real=True)
    x0 = sp.symbols("x_01 x_02", real=True)
    a = sp.symbols("a_1 a_2", real=True)
    nu, y = sp.symbols("nu y", real=True)
    R = sp.Function("R")
    breg = sum(R(xi) - R(x0i) - sp.Subs(sp.diff(R(sp.Symbol("z")), sp.Symbol("z")),
                                        sp.Symbol("z"), x0i) * (xi - x0i)
               for xi, x0i in zip(x, x0))
    lagrangian = d.step("Lagrangian D_R(x, x0) + nu (a^T x - y)",
                        breg + nu * (sum(ai * xi for ai, xi in zip(a, x)) - y))
    d.result = d.step("stationarity: grad R(x) - grad R(x0) + a nu = 0",
                      sp.Matrix([sp.diff(lagrangian, xi).doit() for xi in x]))
    return d


@cache
def derive_one_row_bias() -> Derivation:
    r"""The one-row problem of the module docstring: the set of :math:`q \in [1, 2]` where
    the steepest mirror flow's limit satisfies the KKT conditions."""
    d = Derivation("one equation a^T x = y, a = (1, 2): limit of d grad R = -psi_q(g) dt vs "
                   "the KKT conditions")
    a = sp.Matrix([1, 2])
    r = sp.Symbol("r", positive=True)   # the residual's sign is fixed along the flow
    drive = d.step("drive -psi_q(a r) (residual r > 0; r < 0 flips the sign)",
                   a.applyfunc(lambda v: steepest_direction(v * r, Q)))
    direction = d.step("the displacement grad R(x_inf) - grad R(x_0) is int drive dt: a "
                       "positive multiple of", sp.simplify(drive / drive[0]))
    kernel = sp.Matrix([2, -1])
    component = d.step("its component along ker a^T = span(2, -1)",
                       sp.simplify(direction.dot(kernel)))
    holds = d.step("KKT condition (component = 0) for q in [1, 2]",
                   sp.solveset(sp.Eq(component, 0), Q, sp.Interval(1, 2)))
    d.result = OneRowBias(component=component, holds=holds)
    return d
