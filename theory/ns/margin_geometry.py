r"""The margin problem selected by the steepest flow of exponent :math:`q` on the diagonal
reparameterisation :math:`x = \prod_{i=1}^L w_i` (:math:`L = 1`: :math:`x = w`) for the
exponential loss on linearly separable data (Never Saddle, later "Cor. 4.13";
verify/claims/ns/SOURCES.md
§4.13, §5.5, §5.6), derived from the definitions.

Chain of the derivation:

1. :func:`derive_direction_alignment`: the flow's direction
   :math:`-\operatorname{sign}(g)|g|^{q-1}` is a positive multiple of the :math:`\ell_p`
   steepest direction :math:`\arg\max_{\|v\|_p \le 1}\langle -g, v\rangle`
   (:math:`1/p + 1/q = 1`), so the two flows trace the same paths (a positive time change).
   The steepest flow of a norm on a homogeneous model converges in direction to KKT points of
   :math:`\min\|w\|_p` s.t. :math:`y_n\langle a_n, x(w)\rangle \ge 1` (Lyu & Li 2020 for
   :math:`p = 2`; Tsilivis et al. 2025 for any norm, including :math:`p = \infty`); the model
   is :math:`L`-homogeneous in :math:`w` (:func:`derive_homogeneity`).
2. :func:`derive_factorisation_minimum`: :math:`\min\{\sum_i a_i^p : \prod_ia_i = X\} =
   LX^{p/L}` (Lagrange multipliers, then AM-GM), and :math:`\min\max_ia_i = X^{1/L}`
   (:math:`p = \infty`). So, over factorisations, :math:`\|w\|_p^p = L\|x\|_{p/L}^{p/L}` and
   the problem in :math:`x` is the :math:`\ell_r` margin with :math:`r = p/L`.
3. :func:`derive_margin_exponent`: :math:`r(q, L) = q/((q-1)L)`; :math:`q = 2`:
   :math:`2/L` (the known :math:`\ell_{2/L}` margin of deep diagonal networks); :math:`q \to 1`:
   :math:`r \to \infty` for every :math:`L` (sign descent: the :math:`\ell_\infty` margin,
   depth-independent as a problem in :math:`x`).
4. :func:`derive_zero_coordinate_stationarity`: for :math:`L \ge 2` the constraint gradients
   vanish in every factor of a coordinate whose factors all vanish, so a KKT point in
   :math:`w` may have any set of zero coordinates: its :math:`x` solves the :math:`\ell_r`
   margin problem restricted to its support. Depth does not change the problem in :math:`x`,
   it adds these restricted KKT points (at :math:`L = 1` the gradient there is :math:`z_k`, not
   0).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.steepest import dual_exponent

#: The flow exponent q in (1, 2] (q = 1 is a limit) and the depth L >= 1.
Q = sp.Symbol("q", positive=True)
DEPTH = sp.Symbol("L", positive=True)
#: The dual exponent p (1/p + 1/q = 1).
P = sp.Symbol("p", positive=True)
#: |x_k| > 0 of one coordinate.
X = sp.Symbol("X", positive=True)


@cache
def derive_direction_alignment() -> Derivation:
    r"""The exponent-:math:`q` direction is a positive multiple of the :math:`\ell_p`
    steepest direction.

    Maximise :math:`\langle\gamma, v\rangle` over :math:`\|v\|_p^p = 1` for a gradient magnitude
    vector :math:`\gamma = (\gamma_1, \gamma_2) > 0` (signs factor out coordinate-wise):
    Lagrange stationarity :math:`\gamma_k = \mu p v_k^{p-1}` gives :math:`v_k \propto
    \gamma_k^{1/(p-1)} = \gamma_k^{q-1}`, the flow's :math:`|g_k|^{q-1}`. ``result`` is the ratio
    :math:`v_1/v_2` divided by :math:`(\gamma_1/\gamma_2)^{q-1}` (1: the same direction).

    >>> derive_direction_alignment().result
    1
    """
    d = Derivation("exponent-q direction vs the l_p steepest direction")
    g1, g2, v1, v2, mu = sp.symbols("gamma_1 gamma_2 v_1 v_2 mu", positive=True)
    lagrangian = d.step("Lagrangian of max <gamma, v> s.t. ||v||_p^p = 1",
                        g1 * v1 + g2 * v2 - mu * (v1**P + v2**P - 1))
    # check=False: the substitution check of the one root costs most of the solve; an
    # unchecked root would show in the result (ns.x.margin requires the ratio to be 1).
    sols = [sp.solve(sp.diff(lagrangian, v), v, check=False)[0] for v in (v1, v2)]
    d.step("stationary v_k", sols)
    ratio = d.step("v_1 / v_2", sp.powsimp(sols[0] / sols[1], force=True))
    p_of_q = dual_exponent(Q)
    d.step("dual exponent p(q) (1/p + 1/q = 1)", p_of_q)
    flow_ratio = (g1 / g2) ** (Q - 1)
    relative = sp.simplify(sp.powsimp(sp.expand_power_base(
        (ratio / flow_ratio).subs(P, p_of_q), force=True), force=True))
    d.result = d.step("(v_1 / v_2) / (gamma_1 / gamma_2)^(q-1): the same direction as "
                      "-sign(g)|g|^(q-1), so the same paths up to a positive time change",
                      relative)
    return d


@cache
def derive_homogeneity(L: int) -> Derivation:
    r""":math:`x(cw) = c^Lx(w)` for :math:`x = \prod_{i=1}^L w_i` (concrete :math:`L`):
    the degree of homogeneity that normalises the margin, :math:`\min_n y_n\langle a_n,
    x\rangle/\|w\|^L`. ``result`` is the degree.

    >>> derive_homogeneity(3).result
    3
    """
    _check_depth(L)
    d = Derivation(f"homogeneity of x = w_1 ... w_{L}")
    c = sp.Symbol("c", positive=True)
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    x = sp.Mul(*w)
    scaled = d.step("x(c w)", sp.Mul(*[c * wi for wi in w]))
    d.result = d.step("degree: log_c (x(c w) / x(w))",
                      sp.simplify(sp.log(sp.powsimp(scaled / x)) / sp.log(c)))
    return d


@dataclass(frozen=True)
class FactorisationMinimum:
    r"""``value`` :math:`\min\{\sum_ia_i^p : \prod_ia_i = X\}` (symbolic :math:`p`), ``sup_value``
    :math:`\min\max_ia_i`, and ``exponent`` :math:`p/L`, the power of :math:`X`."""

    value: sp.Expr
    sup_value: sp.Expr
    exponent: sp.Expr


@cache
def derive_factorisation_minimum(L: int) -> Derivation:
    r"""Minimise the :math:`\ell_p` cost of the factors of one coordinate, concrete :math:`L`.

    Lagrange: :math:`p a_i^{p-1} = \mu\prod_{j \ne i}a_j`, times :math:`a_i`:
    :math:`pa_i^p = \mu X` for every :math:`i`, so the factors are balanced,
    :math:`a_i = X^{1/L}`, value :math:`LX^{p/L}`; it is the minimum by AM-GM,
    :math:`\sum_ia_i^p \ge L(\prod_ia_i^p)^{1/L}`. For :math:`p = \infty`:
    :math:`\max_ia_i \ge (\prod_ia_i)^{1/L} = X^{1/L}`, equality at balance. ``result`` is a
    :class:`FactorisationMinimum`.

    >>> derive_factorisation_minimum(2).result.value
    2*X**(p/2)
    """
    _check_depth(L)
    d = Derivation(f"min over factorisations of one coordinate, L = {L}")
    a = sp.symbols(f"a_1:{L + 1}", positive=True)
    mu = sp.Symbol("mu", positive=True)
    if L == 1:
        value = d.step("L = 1: the only factorisation is a_1 = X", X**P)
        d.result = FactorisationMinimum(value, X, P)
        return d
    lagrangian = d.step("Lagrangian", sp.Add(*[ai**P for ai in a]) - mu * (sp.Mul(*a) - X))
    for i, ai in enumerate(a):
        times_a = sp.expand(ai * sp.diff(lagrangian, ai))
        if sp.simplify(times_a - (P * ai**P - mu * sp.Mul(*a))) != 0:
            raise ArithmeticError(f"a_i dLagrangian/da_i has an unexpected form at i = {i}")
    d.step("a_i dLagrangian/da_i = p a_i^p - mu prod a: equal p a_i^p for all i, so balanced "
           "a_i = X^(1/L)", sp.Integer(0))
    balanced = {ai: X ** sp.Rational(1, L) for ai in a}
    if sp.simplify(sp.Mul(*a).subs(balanced) - X) != 0:
        raise ArithmeticError("balanced factors do not multiply to X")
    value = d.step("value at the balanced point", sp.powsimp(
        sp.Add(*[ai**P for ai in a]).subs(balanced), force=True))
    am_gm = d.step("AM-GM lower bound L (prod a_i^p)^(1/L) at prod a_i = X",
                   sp.powsimp(L * (X**P) ** sp.Rational(1, L), force=True))
    if sp.simplify(value - am_gm) != 0:
        raise ArithmeticError("the balanced value is not the AM-GM bound")
    sup_value = d.step("p = oo: max_i a_i >= (prod a_i)^(1/L) = X^(1/L), equal at balance",
                       X ** sp.Rational(1, L))
    exponent = d.step("power of X in the minimum", sp.simplify(
        X * sp.diff(value, X) / value))
    d.result = FactorisationMinimum(value, sup_value, exponent)
    return d


@dataclass(frozen=True)
class MarginGeometry:
    r"""``r`` :math:`= p/L` as a function of :math:`q` and :math:`L`, its values at
    :math:`q = 2` (``r_gf``) and as :math:`q \to 1^+` (``r_sign``), and ``p``
    (the parameter-space norm) in terms of :math:`q`."""

    p: sp.Expr
    r: sp.Expr
    r_gf: sp.Expr
    r_sign: sp.Expr


@cache
def derive_margin_exponent() -> Derivation:
    r"""The :math:`\ell_r` geometry of the margin in :math:`x`: :math:`r = p/L` with
    :math:`p = q/(q-1)`; the concrete-depth factorisation minima (:math:`L = 1, 2, 3, 5`) give
    the power :math:`p/L`, and :math:`\|w\|_\infty = \|x\|_\infty^{1/L}` gives :math:`r =
    \infty` at :math:`q = 1`. ``result`` is a :class:`MarginGeometry`.

    >>> g = derive_margin_exponent().result
    >>> g.r_gf, g.r_sign
    (2/L, oo)
    """
    d = Derivation("the margin problem in x: l_r with r = p / L")
    p = d.step("p(q) from 1/p + 1/q = 1 (theory.ns.steepest.dual_exponent)", dual_exponent(Q))
    for L in (1, 2, 3, 5):
        exponent = derive_factorisation_minimum(L).result.exponent
        if sp.simplify(exponent - P / L) != 0:
            raise ArithmeticError(f"factorisation exponent at L = {L} is {exponent}, not p/L")
    d.step("min over factorisations of ||w||_p^p = L ||x||_{p/L}^{p/L} (L = 1, 2, 3, 5): the "
           "power is p/L", P / DEPTH)
    r = d.step("r(q, L) = p(q) / L", sp.simplify(p / DEPTH))
    r_gf = d.step("q = 2 (gradient flow)", sp.simplify(r.subs(Q, 2)))
    r_sign = d.step("q -> 1+ (sign flow)", sp.limit(r, Q, 1, "+"))
    d.result = MarginGeometry(p=p, r=r, r_gf=r_gf, r_sign=r_sign)
    return d


@cache
def derive_zero_coordinate_stationarity(L: int) -> Derivation:
    r"""Gradient of the margin :math:`z\prod_iw_i` of one coordinate with respect to each factor,
    at a point where every factor of the coordinate vanishes: 0 for :math:`L \ge 2` (each
    partial keeps at least one zero factor), :math:`z` for :math:`L = 1`. ``result`` is the
    list of the :math:`L` partials there.

    >>> derive_zero_coordinate_stationarity(2).result
    [0, 0]
    """
    _check_depth(L)
    d = Derivation(f"constraint gradient at a coordinate whose {L} factors vanish")
    z = sp.Symbol("z", real=True)
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    margin = d.step("margin contribution z w_1 ... w_L", z * sp.Mul(*w))
    partials = [sp.diff(margin, wi).subs({wj: 0 for wj in w}) for wi in w]
    d.result = d.step("partials at w = 0", partials)
    return d


def _check_depth(L: int) -> None:
    if not (isinstance(L, int) and L >= 1):
        raise ValueError(f"L: {L!r} must be an integer >= 1")
