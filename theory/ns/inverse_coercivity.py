r"""Inverse :math:`\mu`-coercivity of a separable potential: the summaries' quadratic form, the
toolkit's diagonal reading, and their common best constant for :math:`R_{L_p,L}` (Never Saddle
Section 4 definitions, ``ns.mu-coercivity``; verify/claims/ns/SOURCES.md §3, §4.4).

Definitions used here: a separable :math:`R(x) = \sum_kR_k(x_k)` has the diagonal Hessian
:math:`\operatorname{diag}(R_k'')`; its inverse metric is :math:`M_k = 1/R_k''`. The summaries'
form is :math:`x^\top(\nabla^2R(x))^{-1}x \ge \mu\|x\|^2` for all :math:`x`; the diagonal
reading is :math:`M_k(t) \ge \mu` for all :math:`k, t`.

* :func:`derive_quadratic_form`: the form is :math:`\sum_kM_k(x_k)x_k^2`, its quotient by
  :math:`\|x\|^2` a convex combination of the :math:`M_k(x_k)`, equal to :math:`M_k(t)` at
  :math:`x = te_k`; so the form's best constant is :math:`\min_k\inf_{t\ne0}M_k(t)`, the
  diagonal reading's with :math:`t = 0` excluded (the same where :math:`M_k` is continuous).
* :func:`derive_offset_coercivity`: for :math:`R_{L_p,L}` (inverse metric :math:`M = P'(u)`,
  :math:`P(u) = \prod_i(u + c_i) = |x|^q`, :func:`theory.ns.reparam_balance.derive_product_metric`)
  the infimum :math:`M(0)` with one zero offset (a unique smallest factor) and with two (a
  tie), and the order in :math:`|x|` at which :math:`M(x)` approaches it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import Q, U, derive_product_metric

#: Offset patterns of one coordinate, after sorting (c_1 = 0 is the smallest factor): a unique
#: smallest factor, or two factors tied at the smallest magnitude.
TIES = ("none", "two")


@dataclass(frozen=True)
class QuadraticForm:
    r"""What :func:`derive_quadratic_form` arrives at (``n`` coordinates): symbols ``M``
    (:math:`M_k(x_k) > 0`) and ``x``; ``form`` :math:`x^\top(\nabla^2R)^{-1}x`; ``gaps`` the
    quotient minus :math:`M_j`, one per ``j``, each written as
    :math:`\sum_k(M_k - M_j)x_k^2/\|x\|^2`; ``on_axes`` the quotient at :math:`x = te_k`."""

    M: tuple[sp.Symbol, ...]
    x: tuple[sp.Symbol, ...]
    form: sp.Expr
    gaps: tuple[sp.Expr, ...]
    on_axes: sp.Matrix


@cache
def derive_quadratic_form(n: int) -> Derivation:
    r"""The summaries' quadratic form for a separable :math:`R` in ``n`` coordinates.

    >>> derive_quadratic_form(2).result.form
    M_1*x_1**2 + M_2*x_2**2
    """
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n: {n!r} must be an integer >= 1")
    M = sp.symbols(f"M_1:{n + 1}", positive=True)
    x = sp.symbols(f"x_1:{n + 1}", real=True)
    t = sp.Symbol("t", real=True, nonzero=True)
    d = Derivation(f"x^T (grad^2 R)^(-1) x for a separable R (n = {n})")
    hessian = d.step("grad^2 R = diag(R_k'') = diag(1/M_k) (separable R)",
                     sp.diag(*[1 / m for m in M]))
    X = sp.Matrix(x)
    form = d.step("x^T (grad^2 R)^(-1) x", sp.expand((X.T * hessian.inv() * X)[0, 0]))
    norm2 = sum(v**2 for v in x)
    quotient = form / norm2
    gaps = []
    for j in range(n):
        written = sum((M[k] - M[j]) * x[k] ** 2 for k in range(n)) / norm2
        d.step(f"quotient - M_{j + 1} - sum_k (M_k - M_{j + 1}) x_k^2 / |x|^2: 0, so the "
               f"quotient >= M_{j + 1} whenever M_{j + 1} is the smallest",
               sp.simplify(quotient - M[j] - written))
        gaps.append(written)
    on_axes = d.step("quotient at x = t e_k (t != 0): M_k, so the best constant is "
                     "min_k inf_(t != 0) M_k(t)",
                     sp.Matrix([sp.simplify(quotient.subs({v: (t if i == k else 0)
                                                           for i, v in enumerate(x)}))
                                for k in range(n)]))
    d.result = QuadraticForm(M=M, x=x, form=form, gaps=tuple(gaps), on_axes=on_axes)
    return d


@dataclass(frozen=True)
class OffsetCoercivity:
    r"""What :func:`derive_offset_coercivity` arrives at for ``L`` factors and offset pattern
    ``ties``: ``c`` the offsets (``c[0] = 0``, and ``c[1] = 0`` for a tie), ``mu`` the infimum
    :math:`M(0)`, ``order`` the power of :math:`|x|` in :math:`M(x) - \mu` as
    :math:`x \to 0`, ``leading`` its coefficient in :math:`X = |x|^q` raised to
    ``order / q``."""

    L: int
    ties: str
    c: tuple[sp.Expr, ...]
    mu: sp.Expr
    order: sp.Expr
    leading: sp.Expr


@cache
def derive_offset_coercivity(L: int, ties: str) -> Derivation:
    r""":math:`\inf_xM(x)` and how :math:`M(x)` approaches it, for :math:`R_{L_p,L}` with
    offsets :math:`c_1 = 0` (``ties="none"``) or :math:`c_1 = c_2 = 0` (``"two"``), the other
    offsets positive symbols.

    1. :math:`M = P'(u)` has a polynomial :math:`P''` with non-negative coefficients, so it
       increases with :math:`u`, and :math:`u = 0` exactly at :math:`x = 0`: the infimum is
       :math:`M(u = 0)`, and :math:`M` is continuous there (:math:`u(|x|)` is continuous), so
       excluding :math:`x = 0` does not change it.
    2. Order: :math:`M - \mu \sim a u^s` and :math:`P \sim b u^r` as :math:`u \to 0` give
       :math:`M - \mu \sim a(X/b)^{s/r}` with :math:`X = |x|^q`: the order in :math:`|x|` is
       :math:`qs/r` (:math:`q` for a unique smallest factor, :math:`q/2` for a tie).

    >>> derive_offset_coercivity(3, "none").result.mu
    c2*c3
    >>> derive_offset_coercivity(3, "two").result.order
    q/2
    """
    if ties not in TIES:
        raise ValueError(f"ties: {ties!r} is not one of {', '.join(TIES)}")
    zeros = 1 if ties == "none" else 2
    if not (isinstance(L, int) and L >= zeros):
        raise ValueError(f"L: {L!r} must be an integer >= {zeros} for ties={ties!r}")
    base = derive_product_metric(L).result
    c = tuple(sp.Integer(0) if i < zeros else sp.Symbol(f"c{i + 1}", positive=True)
              for i in range(L))
    d = Derivation(f"infimum of the inverse metric of R_(Lp,{L}), {zeros} zero offset(s)")
    on = dict(zip(base.c, c))
    P = d.step("P(u) = prod_i (u + c_i)", sp.factor(base.P.subs(on)))
    M = d.step("M = P'(u)", sp.expand(base.M.subs(on)))
    second = sp.Poly(sp.expand(sp.diff(M, U)), U).all_coeffs()
    if not all(sp.ask(sp.Q.nonnegative(co)) for co in second):
        raise ArithmeticError(f"P''(u) has a coefficient that is not >= 0: {second}")
    d.step("coefficients of P''(u) in u, all >= 0: M increases with u >= 0",
           sp.Matrix(second))
    mu = d.step("mu = inf_x M = M(u = 0)", sp.factor(M.subs(U, 0)))
    gap = sp.expand(M - mu)
    s = sp.Poly(gap, U).monoms()[-1][0]          # lowest power of u in M - mu
    r = sp.Poly(P, U).monoms()[-1][0]            # lowest power of u in P
    a = sp.Poly(gap, U).coeff_monomial(U**s)
    b = sp.Poly(P, U).coeff_monomial(U**r)
    d.step("lowest powers (s in M - mu, r in P) and their coefficients",
           sp.Matrix([s, r, a, b]))
    order = d.step("order of M - mu in |x|: q s / r", Q * sp.Rational(s, r))
    leading = d.step("M - mu ~ a (X / b)^(s/r), X = |x|^q: coefficient of X^(s/r)",
                     sp.simplify(a / b ** sp.Rational(s, r)))
    d.result = OffsetCoercivity(L=L, ties=ties, c=c, mu=mu, order=order, leading=leading)
    return d
