r"""The top-layer (ridge) fixed point of Li2 App. C, derived from the objective alone.

.. math:: J(V) = \tfrac12\big(\|\tilde Y - \tilde F V\|_F^2 + \eta\|V\|_F^2\big)

(App. C; Eq. 1 with :math:`\tilde F = P_1^\perp F` fixed and only :math:`V` learning). The
derivation differentiates :math:`J` entry by entry, solves the stationarity equations
:math:`\partial J/\partial V = 0` for :math:`V^\star`, and forms
:math:`E^\star = \tilde Y - \tilde F V^\star` and :math:`G^\star = E^\star V^{\star\top}`
(Prop. 4 / Eq. 60 state the closed form of :math:`G^\star`; nothing of it is used here).
The residual operator :math:`P_\eta` is read off as the Jacobian of the map
:math:`\tilde y \mapsto \tilde y - \tilde F v^\star(\tilde y)` of one output column.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.polys.rings import PolyElement, ring

from theory.derivation import Derivation
from theory.matrices import frobenius_sq, gradient, symbolic_matrix


@dataclass(frozen=True)
class RidgeFixedPoint:
    """What :func:`derive_ridge_fixed_point` arrives at (all sympy, exact).

    ``F`` (``n x K``), ``Y`` (``n x M``) and ``eta`` are the symbols the result is written in;
    ``V`` is :math:`V^\\star`, ``E`` is :math:`E^\\star`, ``G`` is :math:`G^\\star`, ``P`` the
    ``n x n`` residual operator :math:`\\partial e^\\star_m/\\partial \\tilde y_m`.
    """

    F: sp.Matrix
    Y: sp.Matrix
    eta: sp.Symbol
    gradient: sp.Matrix
    V: sp.Matrix
    E: sp.Matrix
    G: sp.Matrix
    P: sp.Matrix

    @property
    def symbols(self) -> list[sp.Symbol]:
        """The free symbols: entries of ``F``, then of ``Y``, then ``eta``."""
        return [*self.F, *self.Y, self.eta]

    @property
    def S(self) -> sp.Matrix:
        r""":math:`\tilde F\tilde F^\top + \eta I_n`, positive definite for :math:`\eta > 0`."""
        return self.F * self.F.T + self.eta * sp.eye(self.F.rows)

    @property
    def A(self) -> sp.Matrix:
        r""":math:`\tilde F^\top\tilde F + \eta I_K`, positive definite for :math:`\eta > 0`."""
        return self.F.T * self.F + self.eta * sp.eye(self.F.cols)


def top_layer_objective(F: sp.Matrix, V: sp.Matrix, Y: sp.Matrix, eta: sp.Expr) -> sp.Expr:
    r""":math:`J(V) = \tfrac12(\|\tilde Y - \tilde FV\|_F^2 + \eta\|V\|_F^2)` (App. C).

    >>> F, V, Y = sp.Matrix([[2]]), sp.Matrix([[sp.Symbol("v")]]), sp.Matrix([[1]])
    >>> sp.expand(top_layer_objective(F, V, Y, sp.Integer(3)))
    7*v**2/2 - 2*v + 1/2
    """
    return (frobenius_sq(Y - F * V) + eta * frobenius_sq(V)) / 2


def derive_ridge_fixed_point(n: int, K: int, M: int) -> Derivation:
    r"""Derive :math:`V^\star, E^\star, G^\star, P_\eta` for symbolic ``n x K`` :math:`\tilde F`,
    ``n x M`` :math:`\tilde Y` and :math:`\eta > 0`.

    The entries of :math:`\tilde F, \tilde Y` are free symbols (no centring imposed): the
    fixed point is a rational function of them, valid wherever
    :math:`\tilde F^\top\tilde F + \eta I` is invertible, which :math:`\eta > 0` ensures.
    ``result`` is a :class:`RidgeFixedPoint`.

    >>> fp = derive_ridge_fixed_point(1, 1, 1).result
    >>> sp.factor(fp.V[0])
    F_00*Y_00/(F_00**2 + eta)
    """
    for name, value in (("n", n), ("K", K), ("M", M)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name}: {value!r} must be an integer >= 1")
    d = Derivation(f"ridge fixed point of the top layer (n={n}, K={K}, M={M})")
    F, Y = symbolic_matrix("F", n, K), symbolic_matrix("Y", n, M)
    V = symbolic_matrix("V", K, M)
    eta = sp.Symbol("eta", positive=True)
    J = d.step("objective J(V) = 1/2 (||Yt - Ft V||^2 + eta ||V||^2) (App. C)",
               top_layer_objective(F, V, Y, eta))
    grad = d.step("dJ/dV, entry by entry", gradient(J, V).applyfunc(sp.expand))
    # Recognise the linear form the numerical route solves (numerics.li2.top_layer_flow).
    linear = d.step("= (Ft^T Ft + eta I) V - Ft^T Yt (their difference expands to 0)",
                    (F.T * F + eta * sp.eye(K)) * V - F.T * Y)
    if (grad - linear).applyfunc(sp.expand) != sp.zeros(K, M):
        raise ArithmeticError("dJ/dV is not (Ft^T Ft + eta I) V - Ft^T Yt")
    # The stationarity equations are linear in the entries of V; linsolve returns the unique
    # solution as long as the coefficient determinant (a polynomial with leading term eta^KM)
    # is nonzero, which holds identically for a symbolic eta.
    (solution,) = sp.linsolve(list(grad), list(V))
    V_star = d.step("V*: the solution of dJ/dV = 0",
                    sp.Matrix(K, M, [sp.cancel(v) for v in solution]))
    # E* and G* are kept as the products they are: putting their entries over a common
    # denominator costs seconds at n=3, K=2 and shows nothing more.
    E_star = d.step("E* = Yt - Ft V*", Y - F * V_star)
    G_star = d.step("G* = E* V*^T (the fixed point of G_Ft = E V^T)", E_star * V_star.T)
    P = d.step("residual operator: Jacobian of column 0 of E* in column 0 of Yt",
               E_star[:, 0].jacobian(Y[:, 0]).applyfunc(sp.cancel))
    d.result = RidgeFixedPoint(F=F, Y=Y, eta=eta, gradient=grad, V=V_star, E=E_star, G=G_star,
                               P=P)
    return d


Fraction = tuple[PolyElement, PolyElement]


def _fraction(expr: sp.Expr, R) -> Fraction:
    """``expr`` as numerator/denominator in the polynomial ring ``R``, without gcds (cheap);
    sums over one shared denominator (the usual case here) keep it."""
    if expr.is_Add:
        p, q = _fraction(expr.args[0], R)
        for term in expr.args[1:]:
            p2, q2 = _fraction(term, R)
            p, q = (p + p2, q) if q == q2 else (p * q2 + p2 * q, q * q2)
        return p, q
    if expr.is_Mul:
        p, q = R.one, R.one
        for factor in expr.args:
            p2, q2 = _fraction(factor, R)
            p, q = p * p2, q * q2
        return p, q
    if expr.is_Pow and expr.exp.is_Integer:
        p, q = _fraction(expr.base, R)
        k = int(expr.exp)
        return (p**k, q**k) if k >= 0 else (q**-k, p**-k)
    return R.from_expr(expr), R.one


def _lowest_terms(p: PolyElement, q: PolyElement) -> Fraction:
    """``p/q`` in lowest terms, denominator with leading coefficient 1. An exact division is
    tried first: it is cheap, and it is the case whenever the identity at hand holds."""
    quotient, remainder = p.div(q)
    if not remainder:
        return quotient, p.ring.one
    g = p.gcd(q)
    p, q = p.exquo(g), q.exquo(g)
    c = q.LC
    return p.quo_ground(c), q.quo_ground(c)


def reduced_product(left: sp.Matrix, middle: sp.Matrix, right: sp.Matrix,
                    symbols: list[sp.Symbol]) -> sp.Matrix:
    r"""The exact product ``left * middle * right`` of rational-function matrices in
    ``symbols``, each entry in lowest terms.

    The arithmetic runs in sympy's sparse polynomial ring over :math:`\mathbb Q`, keeping a
    shared denominator where the terms have one (so no gcd until the end), which is fast where
    ``cancel`` on nested Expr trees, such as the entries of a symbolic 3x3 inverse, is not.
    Multiplying an identity by invertible factors on both sides (``left X right =
    left X' right`` iff ``X = X'``) can leave small polynomials to compare.

    >>> x, y = sp.symbols("x y")
    >>> reduced_product(sp.Matrix([[x]]), sp.Matrix([[1 / x + 1 / y]]), sp.Matrix([[y]]),
    ...                 [x, y])
    Matrix([[x + y]])
    """
    R = ring(symbols, sp.QQ)[0]
    L, m, Rt = ([[_fraction(e, R) for e in a.row(i)] for i in range(a.rows)]
                for a in (left, middle, right))
    out = sp.zeros(left.rows, right.cols)
    for i in range(left.rows):
        for col in range(right.cols):
            p, q = R.zero, R.one
            for j in range(middle.rows):
                for k in range(middle.cols):
                    (a, qa), (b, qb), (c, qc) = L[i][j], m[j][k], Rt[k][col]
                    p2, q2 = a * b * c, qa * qb * qc
                    p, q = (p + p2, q) if q == q2 else (p * q2 + p2 * q, q * q2)
            p, q = _lowest_terms(p, q)
            out[i, col] = p.as_expr() / q.as_expr()
    return out
