r"""Hermite polynomials and the Hermite expansion of an activation (Li2 App. A: Lemma 3 and the
proof of Lemma 1), derived from definitions.

* :math:`\mathrm{He}_k` from Rodrigues' formula
  :math:`\mathrm{He}_k(z) = (-1)^k e^{z^2/2}\,\tfrac{d^k}{dz^k}e^{-z^2/2}` (probabilists'
  Hermite polynomials), and :math:`\phi_k = \mathrm{He}_k/\sqrt{k!}` (Lemma 3's normalisation).
* The Hermite coefficients of :math:`f_s(z) = \sigma(sz)`:
  :math:`a_l(s) = \mathbb E[\sigma(sZ)\phi_l(Z)]`, by :mod:`theory.li2.gaussian_moments`.
* The kernel :math:`\mathbb E[\sigma(s_1Z_1)\sigma(s_2Z_2)]` by direct Gaussian integration
  (polynomial activations), to compare with the proof's series
  :math:`\sum_la_l(s_1)a_l(s_2)\rho^l`.
* Lemma 3 by direct integration, and the steps of its proof (generating function, joint
  expectation, coefficient matching).

Activations are :class:`GaussianActivation` records: a polynomial :math:`p`
(:math:`\sigma = p`), or the positive part of :math:`z` (ReLU, :math:`\sigma(sz) =
sz\,\mathbf 1\{z>0\}` for :math:`s>0`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.li2.gaussian_moments import (
    derive_mgf,
    expect_bivariate,
    expect_polynomial,
    expect_positive_part,
    rho,
    t,
    u,
    z,
    z1,
    z2,
)

#: The norm scale of Lemma 1's inputs, :math:`s = \|\mathbf x\|_2 > 0`.
s = sp.Symbol("s", positive=True)


def _check_order(k: int, name: str) -> None:
    if not (isinstance(k, int) and k >= 0):
        raise ValueError(f"{name}: {k!r} must be a non-negative integer")


@cache
def he(k: int, var: sp.Symbol = z) -> sp.Expr:
    r""":math:`\mathrm{He}_k` by Rodrigues' formula.

    >>> he(3)
    z**3 - 3*z
    """
    _check_order(k, "k")
    gauss = sp.exp(-var**2 / 2)
    return sp.expand(sp.cancel((-1)**k * sp.diff(gauss, var, k) / gauss))


def phi(k: int, var: sp.Symbol = z) -> sp.Expr:
    r""":math:`\phi_k = \mathrm{He}_k/\sqrt{k!}` (orthonormal under the Gaussian measure)."""
    return he(k, var) / sp.sqrt(sp.factorial(k))


@dataclass(frozen=True)
class GaussianActivation:
    r"""An activation whose Gaussian integrals sympy can do exactly: ``polynomial`` in
    :data:`theory.li2.gaussian_moments.z` (:math:`\sigma = p`), or ``polynomial = None`` for
    ReLU."""

    name: str
    polynomial: sp.Expr | None = None

    def at(self, scale: sp.Expr, var: sp.Symbol = z) -> sp.Expr:
        r""":math:`\sigma(\text{scale}\cdot\text{var})` (ReLU: its positive branch,
        ``scale * var``, to be integrated over ``var > 0``)."""
        if self.polynomial is None:
            return scale * var
        return self.polynomial.subs(z, scale * var)

    def expect(self, expr: sp.Expr, var: sp.Symbol = z) -> sp.Expr:
        r""":math:`\mathbb E[\,\cdot\,]` of an ``expr`` built from :meth:`at`: over the whole
        line for a polynomial, over ``var > 0`` for ReLU (where it vanishes on ``var < 0``)."""
        return expect_polynomial(expr, var) if self.polynomial is not None \
            else expect_positive_part(expr, var)


alpha_, beta_ = sp.symbols("alpha beta", real=True)
SQUARE = GaussianActivation("x2", z**2)
RELU = GaussianActivation("relu")
LINEAR_PLUS_SQUARE = GaussianActivation("ax+bx2", alpha_ * z + beta_ * z**2)


def hermite_coefficients(act: GaussianActivation, order: int,
                         scale: sp.Expr = s) -> list[sp.Expr]:
    r""":math:`a_l(s) = \mathbb E[\sigma(sZ)\phi_l(Z)]` for :math:`l = 0..\text{order}`.

    >>> hermite_coefficients(SQUARE, 3)
    [s**2, 0, sqrt(2)*s**2, 0]
    """
    _check_order(order, "order")
    return [act.expect(act.at(scale) * phi(k)) for k in range(order + 1)]


def second_moment(act: GaussianActivation, scale: sp.Expr = s) -> sp.Expr:
    r""":math:`a = \mathbb E\,\sigma^2(sZ)` (the proof's :math:`a`, Parseval's
    :math:`\sum_la_l^2`).

    >>> second_moment(SQUARE), second_moment(RELU)
    (3*s**4, s**2/2)
    """
    return act.expect(act.at(scale)**2)


def direct_kernel(act: GaussianActivation, s1: sp.Expr, s2: sp.Expr,
                  corr: sp.Expr = rho) -> sp.Expr:
    r""":math:`\mathbb E[\sigma(s_1Z_1)\sigma(s_2Z_2)]` for a polynomial activation, by direct
    bivariate integration.

    >>> direct_kernel(SQUARE, s, s)
    2*rho**2*s**4 + s**4
    """
    if act.polynomial is None:
        raise ValueError(f"act: {act.name} is not a polynomial; its kernel has no finite "
                         f"bivariate expansion here")
    return expect_bivariate(act.at(s1, z1) * act.at(s2, z2), z1, z2, corr)


def kernel_series(coefficients_1: list[sp.Expr], coefficients_2: list[sp.Expr],
                  corr: sp.Expr = rho) -> sp.Expr:
    r""":math:`\sum_l a_l(s_1)a_l(s_2)\rho^l`, the proof's kernel, truncated at the given
    coefficients (exact for a polynomial activation of degree below their length)."""
    if len(coefficients_1) != len(coefficients_2):
        raise ValueError("coefficients_2: needs as many coefficients as coefficients_1")
    return sp.expand(sum(a * b * corr**k
                         for k, (a, b) in enumerate(zip(coefficients_1, coefficients_2))))


def slope_constant(coefficients: list[sp.Expr]) -> sp.Expr:
    r"""The proof's :math:`c = \sum_{l\ge1}l\,a_l^2` (truncated at the given coefficients)."""
    return sp.expand(sum(k * a**2 for k, a in enumerate(coefficients)))


def derivative_energy(act: GaussianActivation, scale: sp.Expr = s) -> sp.Expr:
    r""":math:`\mathbb E[f_s'(Z)^2]` for :math:`f_s(z) = \sigma(sz)`, which equals the proof's
    :math:`c = \sum_l l\,a_l^2` in closed form (:math:`\phi_l' = \sqrt l\,\phi_{l-1}`, so
    :math:`f_s' = \sum_l a_l\sqrt l\,\phi_{l-1}`, and Parseval); also the slope
    :math:`\mathcal K'(1)` of the kernel. ReLU: :math:`f_s' = s\,\mathbf 1\{z>0\}`.

    >>> derivative_energy(SQUARE), derivative_energy(RELU)
    (4*s**4, s**2/2)
    """
    return act.expect(sp.diff(act.at(scale), z)**2)


def derive_centred_kernel_gram(n: int) -> Derivation:
    r"""The Gram expansions of Lemma 1's proof in expectation, at size ``n``: with
    :math:`\mathbb E[\mathbf f\mathbf f^\top] = (a-b)I + b\mathbf 1\mathbf 1^\top` (constant
    norms, all kernel values off the diagonal equal to :math:`b`, i.e. :math:`\epsilon = 0`)
    and :math:`\mathbb E\mathbf f = \mu\mathbf 1`,

    * :math:`\mathbb E[\tilde F\tilde F^\top]/K = P_1^\perp((a-b)I + b\mathbf 1\mathbf 1^\top)
      P_1^\perp`, which reduces to :math:`(a-b)P_1^\perp`;
    * :math:`\mathbb E[\tilde F^\top\tilde F]_{jj} = \mathrm{tr}(P_1^\perp\,\mathbb E[\mathbf f
      \mathbf f^\top]) = (n-1)(a-b)` and, for :math:`j\ne j'` (independent columns),
      :math:`\mathbb E[\tilde F^\top\tilde F]_{jj'} = \mu^2\mathbf 1^\top P_1^\perp\mathbf 1 = 0`.

    ``result`` is ``(P E[ff^T] P, trace, off-diagonal mean, P)`` in the symbols ``a, b, mu``.

    >>> d = derive_centred_kernel_gram(3)
    >>> d.result[1], d.result[2]
    (2*a - 2*b, 0)
    """
    _check_order(n - 2, "n - 2")
    a, b, mu = sp.symbols("a b mu", real=True)
    d = Derivation(f"expected Gram matrices of the centred features at n = {n}")
    ones = sp.ones(n, 1)
    P = d.step("P = I - 1 1^T / n", sp.eye(n) - ones * ones.T / n)
    kernel = d.step("E[f f^T] = (a - b) I + b 1 1^T", (a - b) * sp.eye(n) + b * ones * ones.T)
    centred = d.step("E[Ft Ft^T] / K = P E[f f^T] P", (P * kernel * P).applyfunc(sp.expand))
    trace = d.step("E[Ft^T Ft]_jj = tr(P E[f f^T])", sp.expand((P * kernel).trace()))
    cross = d.step("E[Ft^T Ft]_jj' = mu^2 1^T P 1 (independent columns)",
                   sp.expand(mu**2 * (ones.T * P * ones)[0, 0]))
    d.result = (centred, trace, cross, P)
    return d


@dataclass(frozen=True)
class KernelConstants:
    r"""Lemma 1's kernel constants for one activation (sympy, in :data:`s` and :data:`rho`):
    the Hermite coefficients :math:`a_0..a_L`, :math:`a = \mathbb E\sigma^2(sZ)`,
    :math:`c = \sum_l l a_l^2`, and the kernel :math:`\mathcal K(\rho)` at equal norms
    (exact for a polynomial; for ReLU the series truncated at :math:`L`, whose tail is at most
    :math:`(a - \sum_{l\le L}a_l^2)|\rho|^{L+1}`, reported as ``tail_weight``
    :math:`= a - \sum_{l\le L}a_l^2`)."""

    coefficients: list[sp.Expr]
    a: sp.Expr
    c: sp.Expr
    kernel: sp.Expr
    tail_weight: sp.Expr


def derive_kernel_constants(act: GaussianActivation, order: int) -> Derivation:
    r"""The constants of :class:`KernelConstants` from Gaussian integrals; ``result`` is one.

    >>> derive_kernel_constants(SQUARE, 2).result.kernel
    2*rho**2*s**4 + s**4
    """
    d = Derivation(f"Hermite constants of sigma = {act.name} (Lemma 1's proof)")
    coefficients = d.step("a_l(s) = E[sigma(sZ) phi_l(Z)]",
                          sp.Matrix(hermite_coefficients(act, order)))
    a = d.step("a = E sigma(sZ)^2 (= sum_l a_l^2, Parseval)", second_moment(act))
    c = d.step("c = sum_l l a_l^2 = E[(d/dz sigma(sz))^2]", derivative_energy(act))
    if act.polynomial is not None:
        kernel = d.step("K(rho) = E[sigma(sZ1) sigma(sZ2)] by bivariate integration",
                        direct_kernel(act, s, s))
    else:
        kernel = d.step(f"K(rho) = sum_(l <= {order}) a_l^2 rho^l (Hermite series, truncated)",
                        kernel_series(list(coefficients), list(coefficients)))
    tail = d.step("tail weight a - sum_(l <= L) a_l^2",
                  sp.expand(a - sum(x**2 for x in coefficients)))
    d.result = KernelConstants(list(coefficients), a, c, kernel, tail)
    return d


# --- Lemma 3 and its proof --------------------------------------------------------------------

def derive_hermite_correlation(order: int) -> Derivation:
    r""":math:`C_{nm} = \mathbb E[\phi_n(Z_1)\phi_m(Z_2)]`, :math:`n, m\le` ``order``, by direct
    bivariate integration; ``result`` is the matrix (entries polynomials in :data:`rho`).

    >>> derive_hermite_correlation(2).result
    Matrix([
    [1,   0,      0],
    [0, rho,      0],
    [0,   0, rho**2]])
    """
    _check_order(order, "order")
    d = Derivation(f"E[phi_n(Z1) phi_m(Z2)] for n, m <= {order} by Gaussian integration")
    d.step("phi_k = He_k / sqrt(k!), He_k by Rodrigues' formula",
           sp.Matrix([phi(k) for k in range(order + 1)]))
    d.step("correlated pair: Z2 = rho Z1 + sqrt(1 - rho^2) Z3, Z3 independent of Z1",
           rho * z1 + sp.sqrt(1 - rho**2) * sp.Symbol("z3"))
    # Integer-coefficient He_n He_m first; the 1/sqrt(n! m!) after (sqrt coefficients make
    # sympy's polynomial arithmetic several times slower).
    raw = d.step("E[He_n(Z1) He_m(Z2)] (moments of Z1 and Z3)", sp.Matrix(
        order + 1, order + 1, lambda i, j: expect_bivariate(he(int(i), z1) * he(int(j), z2))))
    d.result = d.step("divided by sqrt(n! m!)", sp.Matrix(
        order + 1, order + 1,
        lambda i, j: raw[i, j] / sp.sqrt(sp.factorial(i) * sp.factorial(j))))
    return d


def generating_coefficients(order: int) -> list[sp.Expr]:
    r"""The coefficients of :math:`t^k`, :math:`k\le` ``order``, in the Taylor expansion of
    :math:`e^{tz-t^2/2}` (by sympy's series; polynomials in :data:`z`)."""
    _check_order(order, "order")
    series = sp.series(sp.exp(t * z - t**2 / 2), t, 0, order + 1).removeO()
    return [sp.expand(series.coeff(t, k)) for k in range(order + 1)]


def derive_joint_generating_expectation() -> Derivation:
    r""":math:`\mathbb E[e^{tZ_1-t^2/2}e^{uZ_2-u^2/2}]` for correlation :math:`\rho`: with
    :math:`Z_2 = \rho Z_1 + rZ_3` the expectation factorises into
    :math:`\mathbb Ee^{(t+\rho u)Z_1}\,\mathbb Ee^{urZ_3}`, each the MGF derived from the density
    (:func:`theory.li2.gaussian_moments.derive_mgf`). ``result``: the expression in ``t, u, rho``.

    >>> derive_joint_generating_expectation().result
    exp(rho*t*u)
    """
    d = Derivation("joint expectation of the Hermite generating functions (Lemma 3's proof)")
    mgf = d.step("E e^{tZ} from the density", derive_mgf().result)
    if not isinstance(mgf, sp.exp):
        raise TypeError(f"the derived MGF {mgf} is not a single exponential")
    r = sp.Dummy("r", positive=True)
    factors = [
        d.step("E e^{(t + rho u) Z1}", mgf.subs(t, t + rho * u)),
        # Only r^2 = 1 - rho^2 enters E e^{u r Z3}, so no square root appears.
        d.step("E e^{u r Z3}, r^2 = 1 - rho^2", mgf.subs(t, u * r).subs(r**2, 1 - rho**2)),
        d.step("the centring factor", sp.exp(-t**2 / 2 - u**2 / 2)),
    ]
    d.result = d.step("product, exponents added and expanded",
                      sp.exp(sp.expand(sum(f.args[0] for f in factors))))
    return d


def derive_coefficient_matching(order: int, normalisation: list[sp.Expr]) -> Derivation:
    r"""Lemma 3 read off the generating functions, as the proof does: if
    :math:`e^{tz-t^2/2} = \sum_k g_k\phi_k(z)t^k` then
    :math:`e^{\rho tu} = \sum_{n,m}g_ng_m\,\mathbb E[\phi_n\phi_m]\,t^nu^m`, so
    :math:`\mathbb E[\phi_n\phi_m] = [t^nu^m]e^{\rho tu}/(g_ng_m)`. ``normalisation`` is
    :math:`(g_0, \dots, g_{\text{order}})`: all 1 as the proof prints it, :math:`1/\sqrt{k!}`
    for :math:`\mathrm{He}_k` 's generating function. ``result`` is the matrix obtained.
    """
    _check_order(order, "order")
    if len(normalisation) != order + 1:
        raise ValueError(f"normalisation: needs {order + 1} entries, got {len(normalisation)}")
    d = Derivation(f"coefficient matching to order {order}")
    joint = derive_joint_generating_expectation().result
    series = d.step("e^{rho t u} to order t^N u^N",
                    sp.expand(sum((rho * t * u)**k / sp.factorial(k) for k in range(order + 1))))
    d.step("generating normalisation g_k", sp.Matrix(normalisation))
    d.step("joint expectation (derived)", joint)
    d.result = d.step("E[phi_n phi_m] = [t^n u^m] e^{rho t u} / (g_n g_m)", sp.Matrix(
        order + 1, order + 1,
        lambda i, j: sp.expand(series.coeff(t, i).coeff(u, j)
                               / (normalisation[int(i)] * normalisation[int(j)]))))
    return d
