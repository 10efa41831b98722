r"""Extreme-value facts behind Li2 Lemma 7 (Fréchet / log-Gumbel selection), derived from the
Fréchet CDF :math:`F(x) = e^{-x^{-a}}` (:math:`x > 0`, shape :math:`a > 0`).

* The law of :math:`w_jx_j`: :math:`P(w_jx_j\le y) = F(y/w_j) = e^{-w_j^a y^{-a}}`.
* Selection: :math:`P(\arg\max_j w_jx_j = i) = \int_0^\infty \partial_yF(y/w_i)
  \prod_{j\ne i}F(y/w_j)\,dy`, integrated by sympy from these definitions.
* The maximum: :math:`P(\max_j w_jx_j \le y) = \prod_jF(y/w_j)`; with :math:`y = e^g` it is a
  Gumbel CDF :math:`\exp(-e^{-(g-m)/\beta})`, whose location :math:`m` and scale :math:`\beta`
  are solved for, and whose mean :math:`m + \gamma\beta` follows from
  :math:`g = m - \beta\log u` with :math:`u = e^{-(g-m)/\beta}\sim\mathrm{Exp}(1)` and
  :math:`\mathbb E\log u = \Gamma'(1) = -\gamma`.
"""
from __future__ import annotations

import sympy as sp

from theory.derivation import Derivation

a = sp.Symbol("a", positive=True)
y = sp.Symbol("y", positive=True)
g = sp.Symbol("g", real=True)
u = sp.Symbol("u", positive=True)
s = sp.Symbol("s", positive=True)


def frechet_cdf(x: sp.Expr, shape: sp.Expr = a) -> sp.Expr:
    r""":math:`F(x) = e^{-x^{-a}}`, the CDF the lemma (and Thm. 8's assumption 3) names.

    >>> frechet_cdf(sp.Integer(1), sp.Integer(2))
    exp(-1)
    """
    return sp.exp(-x**(-shape))


def weights(L: int) -> tuple[sp.Symbol, ...]:
    """Positive symbols :math:`w_1, \\dots, w_L`."""
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")
    return sp.symbols(f"w_1:{L + 1}", positive=True)


def _scaled_cdf(w: sp.Symbol) -> sp.Expr:
    """:math:`P(w x \\le y) = F(y/w)`, with the power of the quotient expanded (w, y > 0)."""
    return sp.powsimp(sp.expand_power_base(frechet_cdf(y / w), force=True), force=True)


def derive_selection(L: int) -> Derivation:
    r""":math:`P(\arg\max_j w_jx_j = i)` for :math:`i = 1..L`, symbolic :math:`w_j` and
    :math:`a`. ``result`` is ``(probabilities, w)``: a list of :math:`L` expressions and the
    weight symbols."""
    w = weights(L)
    d = Derivation(f"P(argmax_j w_j x_j = i), x_j iid Frechet(a), L = {L}")
    cdfs = [d.step(f"CDF of w_{j + 1} x_{j + 1}: F(y / w_{j + 1})", _scaled_cdf(wj))
            for j, wj in enumerate(w)]
    probabilities = []
    for i in range(L):
        others = sp.Mul(*[c for j, c in enumerate(cdfs) if j != i])
        integrand = d.step(f"i = {i + 1}: density of w_{i + 1} x_{i + 1} times P(all others "
                           f"below y)", sp.powsimp(sp.diff(cdfs[i], y) * others, force=True))
        probabilities.append(d.step(f"i = {i + 1}: integrate over y in (0, oo)",
                                    sp.cancel(sp.integrate(integrand, (y, 0, sp.oo)))))
    d.result = (probabilities, w)
    return d


def derive_maximum_law(L: int) -> Derivation:
    r"""The law of :math:`\log\max_j w_jx_j`: a Gumbel law; ``result`` is
    ``(location, scale, mean, w)``."""
    w = weights(L)
    d = Derivation(f"law of log max_j w_j x_j, L = {L}")
    cdf = d.step("P(max_j w_j x_j <= y) = prod_j F(y / w_j)",
                 sp.powsimp(sp.Mul(*[_scaled_cdf(wj) for wj in w]), force=True))
    in_g = d.step("y = e^g: P(log max <= g)", sp.powsimp(cdf.subs(y, sp.exp(g)), force=True))
    m, beta = sp.symbols("m beta", real=True)
    tail = d.step("-log P(log max <= g), common factor taken out",
                  sp.factor_terms(sp.expand(-sp.log(in_g))))
    exponent = sp.expand(sp.expand_log(sp.log(tail), force=True))
    # log(-log CDF) of a Gumbel(m, beta) law is -(g - m)/beta: match slope and intercept in g.
    slope, intercept = sp.Poly(exponent, g).all_coeffs()
    scale = d.step("scale beta from the slope of log(-log CDF) in g", sp.cancel(-1 / slope))
    location = d.step("location m from the intercept: m / beta = intercept",
                      sp.expand(sp.logcombine(intercept * scale, force=True)))
    gumbel = d.step("so P(log max <= g) = exp(-exp(-(g - m)/beta))",
                    sp.exp(-sp.exp(-(g - m) / beta)).subs({m: location, beta: scale}))
    exponents = sp.expand(sp.powsimp(sp.expand_power_exp(sp.expand(sp.log(gumbel))),
                                     force=True)) - sp.expand(sp.log(in_g))
    if sp.expand(exponents) != 0:
        raise ArithmeticError(f"the Gumbel form does not match the law: {exponents}")
    # g = m - beta log u with u = exp(-(g - m)/beta) ~ Exp(1). E[log u] = Gamma'(1): d/ds of
    # int_0^oo u^(s-1) e^(-u) du at s = 1 (sympy integrates log(u) e^(-u) directly too, but
    # through Meijer G functions, ~15x slower).
    mellin = d.step("int_0^oo u^(s-1) e^(-u) du", sp.integrate(u**(s - 1) * sp.exp(-u),
                                                             (u, 0, sp.oo)))
    log_mean = d.step("E[log u] = d/ds of it at s = 1", sp.diff(mellin, s).subs(s, 1))
    mean = d.step("E[log max] = E[m - beta log u] with m, beta as found",
                  sp.expand(location - scale * log_mean))
    d.result = (location, scale, mean, w)
    return d
