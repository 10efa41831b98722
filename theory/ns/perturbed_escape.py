r"""Escape from random perturbations of points of the saddle set :math:`S` of
:math:`F = f(\prod_{i=1}^L w_i)` under the steepest flow of exponent :math:`q` (Never Saddle
``ns.x.perturbed-escape``; review 1: the Cor. 4.8 start is a measure-zero set;
verify/claims/ns/SOURCES.md §4.6, §4.14).

Near a point of :math:`S` where, in a coordinate, ``k`` factors vanish and the others have
product :math:`P`, the gradient is frozen at :math:`g = \nabla f(0)` to leading order. The
``k`` small factors then follow the depth-``k`` flow with gradient :math:`gP`
(:func:`derive_reduction`: the velocities of the first ``k`` factors of the depth-``L`` flow
equal those of the depth-``k`` flow with :math:`\gamma \to \gamma P`), and the others move at
a rate carrying the small factors to the power :math:`q - 1`, so they stay put.

The depth-``k`` velocities are homogeneous of degree :math:`\kappa = (k-1)(q-1)` in the
small factors (:func:`derive_homogeneity`): scaling a start by :math:`\delta` scales time by
:math:`\delta^{1-\kappa}` until the factors are of order one. Hence, for a random
perturbation of size :math:`\delta` (any shape, so the Cor. 4.8 start too): :math:`T \propto
\delta^{-(\kappa-1)}` if :math:`\kappa > 1`, :math:`T \approx (\gamma P)^{1-q}\log(1/\delta)`
if :math:`\kappa = 1` (linear growth at rate :math:`(\gamma P)^{q-1}`), and :math:`T` bounded if
:math:`\kappa < 1`: the law :func:`theory.ns.escape_time.asymptotic_law` derives at depth
``k`` for the Cor. 4.8 start. With several coordinates the fastest (largest
:math:`|g_jP_j|`) sets the log coefficient.
"""
from __future__ import annotations

from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.escape_time import AsymptoticLaw, asymptotic_law
from theory.ns.reparam_balance import GAMMA, product_flow

#: the perturbation's scale
DELTA = sp.Symbol("delta", positive=True)


@cache
def derive_reduction(L: int, k: int) -> Derivation:
    r"""The first ``k`` velocities of the depth-``L`` flow (positive factors, :math:`g =
    -\gamma`) minus the depth-``k`` velocities with :math:`\gamma \to \gamma\prod_{j>k}a_j`.
    ``result``: the differences (zero)."""
    if not 2 <= k <= L:
        raise ValueError(f"k: {k} must lie in [2, L = {L}]")
    d = Derivation(f"k = {k} vanishing factors of L = {L}: reduction to the depth-k flow")
    deep = product_flow(L, (1,) * L, -1)
    others = sp.Mul(*deep.a[k:])
    d.step("velocities of the k small factors in the depth-L flow",
           sp.Matrix(deep.velocities[:k]))
    if k == L:
        d.result = d.step("k = L: the depth-k flow itself", sp.zeros(k, 1))
        return d
    shallow = product_flow(k, (1,) * k, -1)
    rename = dict(zip(shallow.a, deep.a[:k]))
    reduced = sp.Matrix([v.xreplace(rename).subs(GAMMA, GAMMA * others)
                         for v in shallow.velocities])
    d.step("depth-k velocities with gamma -> gamma * prod_(j > k) a_j", reduced)
    d.result = d.step("difference", sp.simplify(
        sp.powsimp(sp.expand_power_base(sp.Matrix(deep.velocities[:k]) - reduced, force=True),
                   force=True)))
    return d


@cache
def derive_homogeneity(k: int) -> Derivation:
    r"""Degree of homogeneity of the depth-``k`` velocities in the factors: ``result`` is
    :math:`\kappa` with :math:`v(\delta a) = \delta^\kappa v(a)`."""
    d = Derivation(f"homogeneity of the depth-{k} steepest flow in its factors")
    flow = product_flow(k, (1,) * k, -1)
    scaled = {a: DELTA * a for a in flow.a}
    ratios = [sp.simplify(sp.powsimp(sp.expand_power_base(v.xreplace(scaled) / v, force=True),
                                     force=True)) for v in flow.velocities]
    d.step("v(delta a) / v(a), per factor", sp.Matrix(ratios))
    if len(set(ratios)) != 1:
        raise ArithmeticError(f"velocities scale differently: {ratios}")
    kappa = d.step("kappa: the exponent of delta", sp.factor(sp.log(ratios[0]).expand(
        force=True) / sp.log(DELTA)))
    d.result = kappa
    return d


def perturbed_law(k: int, q: sp.Rational) -> AsymptoticLaw:
    r"""The :math:`\delta \to 0` law of the escape time from a perturbation of size
    :math:`\delta` of a point of :math:`S` with ``k`` vanishing factors (value in terms of
    :data:`theory.ns.reparam_balance.GAMMA` :math:`= |gP|` of the fastest coordinate)."""
    return asymptotic_law(k, sp.nsimplify(q))

