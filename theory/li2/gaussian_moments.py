r"""Gaussian expectations from the density alone (Li2 App. A: Lemmas 3-4 and the Hermite
kernel of Lemma 1's proof).

Every expectation here is an integral against the standard normal density
:math:`\varphi(z) = e^{-z^2/2}/\sqrt{2\pi}` computed by sympy: the moments
:math:`\mathbb E Z^k = \int z^k\varphi`, the half-line moments :math:`\int_0^\infty z^k\varphi`
(for ReLU) and the moment generating function :math:`\int e^{tz}\varphi`. A polynomial's
expectation is then the sum of its coefficients times these moments.

A pair of standard normals with correlation :math:`\rho` is built as
:math:`Z_2 = \rho Z_1 + r Z_3`, :math:`r = \sqrt{1-\rho^2}`, with :math:`Z_3` independent of
:math:`Z_1`: the pair is jointly normal with unit variances and covariance :math:`\rho`, which
is the definition of the law. After integrating :math:`Z_3` out only even powers of
:math:`r` survive, and :math:`r^2 = 1-\rho^2` leaves a polynomial in :math:`\rho`.
"""
from __future__ import annotations

from functools import cache

import sympy as sp

from theory.derivation import Derivation

z, z1, z2 = sp.symbols("z z1 z2", real=True)
t, u = sp.symbols("t u", real=True)
rho = sp.Symbol("rho", real=True)


def standard_normal_density(x: sp.Expr) -> sp.Expr:
    r""":math:`\varphi(x) = e^{-x^2/2}/\sqrt{2\pi}`."""
    return sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi)


def _check_order(k: int, name: str = "k") -> None:
    if not (isinstance(k, int) and k >= 0):
        raise ValueError(f"{name}: {k!r} must be a non-negative integer")


@cache
def moment(k: int) -> sp.Expr:
    r""":math:`\mathbb E Z^k = \int_{\mathbb R} z^k\varphi(z)\,dz` by sympy's integral.

    >>> [moment(k) for k in range(7)]
    [1, 0, 1, 0, 3, 0, 15]
    """
    _check_order(k)
    return sp.integrate(z**k * standard_normal_density(z), (z, -sp.oo, sp.oo))


@cache
def half_moment(k: int) -> sp.Expr:
    r""":math:`\mathbb E[Z^k\,\mathbf 1\{Z>0\}] = \int_0^\infty z^k\varphi(z)\,dz`.

    >>> half_moment(0), half_moment(2)
    (1/2, 1/2)
    """
    _check_order(k)
    return sp.integrate(z**k * standard_normal_density(z), (z, 0, sp.oo))


def _polynomial(expr: sp.Expr, gens: tuple[sp.Symbol, ...]) -> sp.Poly:
    try:
        return sp.Poly(sp.expand(expr), *gens)
    except sp.PolynomialError as exc:
        raise ValueError(f"expr: {expr} is not a polynomial in {gens}") from exc


def expect_polynomial(expr: sp.Expr, var: sp.Symbol = z) -> sp.Expr:
    r""":math:`\mathbb E\,p(Z)` for a polynomial ``expr`` in ``var`` (other symbols are
    constants), term by term with :func:`moment`.

    >>> a = sp.Symbol("a")
    >>> expect_polynomial((a * z + 1)**2)
    a**2 + 1
    """
    p = _polynomial(expr, (var,))
    return sp.expand(sum(c * moment(k) for (k,), c in p.terms()))


def expect_positive_part(expr: sp.Expr, var: sp.Symbol = z) -> sp.Expr:
    r""":math:`\mathbb E[p(Z)\,\mathbf 1\{Z>0\}]` for a polynomial ``expr`` in ``var``, term by
    term with :func:`half_moment` (ReLU: :math:`\mathrm{relu}(sz) = sz\,\mathbf 1\{z>0\}` for
    :math:`s>0`).

    >>> expect_positive_part(z**2)
    1/2
    """
    p = _polynomial(expr, (var,))
    return sp.expand(sum(c * half_moment(k) for (k,), c in p.terms()))


def expect_bivariate(expr: sp.Expr, x1: sp.Symbol = z1, x2: sp.Symbol = z2,
                     corr: sp.Expr = rho) -> sp.Expr:
    r""":math:`\mathbb E\,p(Z_1, Z_2)` for standard normals of correlation ``corr`` and a
    polynomial ``expr`` in ``x1, x2``: with :math:`Z_2 = \rho Z_1 + rZ_3` (module docstring),
    each monomial gives

    .. math:: \mathbb E[Z_1^iZ_2^j] = \sum_k\binom jk\rho^k\,\mathbb EZ_1^{i+k}\,
              r^{j-k}\,\mathbb EZ_3^{j-k},

    where only even :math:`j-k` survive, so :math:`r^{j-k} = (1-\rho^2)^{(j-k)/2}`.

    >>> expect_bivariate(z1 * z2), expect_bivariate(z1**2 * z2**2)
    (rho, 2*rho**2 + 1)
    """
    p = _polynomial(expr, (x1, x2))
    total = sp.Integer(0)
    for (i, j), c in p.terms():
        total += c * sum(sp.binomial(j, k) * corr**k * moment(i + k) * moment(j - k)
                         * (1 - corr**2) ** ((j - k) // 2)
                         for k in range(j + 1) if (j - k) % 2 == 0)
    return sp.expand(total)


@cache
def derive_mgf() -> Derivation:
    r"""Lemma 4's left side :math:`\mathbb E e^{tZ} = \int e^{tz}\varphi(z)\,dz` for real
    :math:`t`, integrated by sympy; ``result`` is the expression in :data:`t`. Computed once
    per process (the integral takes about a second); treat the returned record as read-only.

    >>> sp.simplify(derive_mgf().result - sp.exp(t**2 / 2))
    0
    """
    d = Derivation("Gaussian moment generating function from the density (Lemma 4)")
    integrand = d.step("integrand e^{tz} phi(z)", sp.exp(t * z) * standard_normal_density(z))
    d.step("exponent: tz - z^2/2 = -(z - t)^2/2 + t^2/2 (completing the square)",
           sp.expand(-(z - t)**2 / 2 + t**2 / 2))
    value = d.step("sympy's integral over the real line",
                   sp.integrate(integrand, (z, -sp.oo, sp.oo)))
    # sympy answers with erfc terms that cancel; expanding the products lets them cancel.
    d.result = d.step("expanded (the erfc terms cancel)", sp.expand(value))
    return d


def derive_mgf_series(order: int) -> Derivation:
    r"""The Taylor polynomial of :math:`\mathbb E e^{tZ}` to degree ``order`` from the moments:
    :math:`\sum_{k\le\text{order}}\mathbb E Z^k\,t^k/k!` (exchanging sum and expectation is
    allowed since :math:`\mathbb E e^{|tZ|}<\infty`); ``result`` is that polynomial in
    :data:`t`.

    >>> derive_mgf_series(4).result
    t**4/8 + t**2/2 + 1
    """
    _check_order(order, "order")
    d = Derivation(f"E e^(tZ) to order t^{order} from the moments E Z^k")
    d.step("moments E Z^k, k = 0..order", sp.Matrix([moment(k) for k in range(order + 1)]))
    d.result = d.step("sum_k E Z^k t^k / k!",
                      sp.expand(sum(moment(k) * t**k / sp.factorial(k)
                                    for k in range(order + 1))))
    return d
