r"""Coupon collecting with unequal probabilities (Li2 Thm. 8, Eq. 41, Eq. 45, Lemma 10).

Nodes are drawn one after another; node :math:`n` lands on mode :math:`l` with probability
:math:`p_l` (:math:`\sum_lp_l = 1`), independently. Everything below is derived from that
definition:

* the Markov chain on the set :math:`S` of modes found so far: from :math:`S` the wait for a new
  mode is geometric with success probability :math:`q_S` and the new mode is :math:`l\notin S`
  with probability :math:`p_l/\sum_{k\notin S}p_k`, so the expected number of further nodes is
  :math:`E_S = 1/q_S + \sum_{l\notin S}\frac{p_l}{\sum_{k\notin S}p_k}E_{S\cup\{l\}}`,
  :math:`E_{\text{all}} = 0`. Independent learning has :math:`q_S = \sum_{l\notin S}p_l`; the
  proof's model of Muon (found modes' :math:`\mu` divided by 2, so their weight
  :math:`\mu^a` by :math:`2^a`) has :math:`q_S = \sum_{l\notin S}p_l / (\theta\sum_{l\in S}p_l
  + \sum_{l\notin S}p_l)` with :math:`\theta = 2^{-a}`;
* the Poissonised time :math:`\int_0^\infty(1-\prod_l(1-e^{-p_lt}))\,dt` (Eq. 41), integrated
  term by term after expanding the product;
* Lemma 10's concave term :math:`h(p) = \log(1-e^{-pt})` and its second derivative.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import sympy as sp

from theory.derivation import Derivation

t = sp.Symbol("t", positive=True)
theta = sp.Symbol("theta", positive=True)
q = sp.Symbol("q", positive=True)
p = sp.Symbol("p", positive=True)


def probabilities(L: int) -> tuple[sp.Expr, ...]:
    r"""Symbolic :math:`p_1, \dots, p_{L-1}` and :math:`p_L = 1 - \sum_{l<L}p_l`."""
    if not (isinstance(L, int) and L >= 1):
        raise ValueError(f"L: {L!r} must be an integer >= 1")
    free = sp.symbols(f"p_1:{L}", positive=True) if L > 1 else ()
    return (*free, 1 - sp.Add(*free))


def _check_probabilities(probs: Sequence[sp.Expr]) -> None:
    if len(probs) < 1:
        raise ValueError("probs: at least one mode is needed")
    if sp.simplify(sp.Add(*probs) - 1) != 0:
        raise ValueError(f"probs: {list(probs)} must sum to 1")


def derive_collection_integral(probs: Sequence[sp.Expr]) -> Derivation:
    r"""Eq. 41, :math:`T_0 = \int_0^\infty(1-\prod_l(1-e^{-p_lt}))dt`, integrated term by term
    (inclusion-exclusion). ``result`` is :math:`T_0`."""
    _check_probabilities(probs)
    d = Derivation(f"Eq. 41: T_0 = int_0^oo (1 - prod_l (1 - e^(-p_l t))) dt, L = {len(probs)}")
    integrand = d.step("1 - prod_l (1 - e^(-p_l t))",
                       1 - sp.Mul(*[1 - sp.exp(-q * t) for q in probs]))
    d.result = d.step("expanded, integrated term by term over t in (0, oo)",
                      integrate_over_time(integrand))
    return d


_RATE = sp.Dummy("rate", positive=True)


@cache
def _exponential_integral() -> sp.Expr:
    r""":math:`\int_0^\infty e^{-\lambda t}dt` for a positive symbol :math:`\lambda` (sympy
    integrates it once; every term reuses it by substitution)."""
    return sp.integrate(sp.exp(-_RATE * t), (t, 0, sp.oo))


def integrate_over_time(integrand: sp.Expr) -> sp.Expr:
    r""":math:`\int_0^\infty` of a finite sum of exponentials in :math:`t`, term by term after
    expanding (each term :math:`c\,e^{-\lambda t}` gives :math:`c/\lambda`, the integral
    :math:`\int_0^\infty e^{-\lambda t}dt` evaluated at its rate :math:`\lambda`)."""
    integrals = []
    for term in sp.Add.make_args(sp.expand(integrand)):
        coefficient, factor = term.as_independent(t, as_Add=False)
        factor = sp.powsimp(factor)  # e^{-a t} e^{-b t} -> e^{-(a+b) t}
        rate = sp.expand(-factor.exp / t) if isinstance(factor, sp.exp) else None
        if rate is None or rate.has(t):
            raise ValueError(f"integrand: term {term} is not c exp(-lambda t)")
        integrals.append(coefficient * _exponential_integral().subs(_RATE, rate))
    return sp.factor(sp.together(sp.Add(*integrals)))


def _waiting_chain(probs: Sequence[sp.Expr], success) -> sp.Expr:
    """:math:`E_\\emptyset` of the chain in the module docstring, ``success(S)`` = q_S."""
    L = len(probs)

    @cache
    def remaining(found: frozenset) -> sp.Expr:
        if len(found) == L:
            return sp.Integer(0)
        rest = [l for l in range(L) if l not in found]
        unfound = sp.Add(*[probs[l] for l in rest])
        return 1 / success(found) + sp.Add(*[probs[l] / unfound * remaining(found | {l})
                                             for l in rest])

    return remaining(frozenset())


def derive_expected_nodes(probs: Sequence[sp.Expr], suppression: sp.Expr | int = 1
                          ) -> Derivation:
    r"""Expected number of nodes until every mode is found, when a found mode's weight
    :math:`p_l` is multiplied by ``suppression`` (1: independent learning; :math:`\theta =
    2^{-a}`: the proof's Muon model). ``result`` is the rational function."""
    _check_probabilities(probs)
    L = len(probs)
    suppression = sp.sympify(suppression)
    d = Derivation(f"expected nodes to find all L = {L} modes, found weights x {suppression}")

    def success(found: frozenset) -> sp.Expr:
        unfound = sp.Add(*[probs[l] for l in range(L) if l not in found])
        kept = sp.Add(*[probs[l] for l in found])
        return unfound / (suppression * kept + unfound)

    d.step("from S, a new mode with probability q_S = sum_{l not in S} p_l / (c sum_{l in S} "
           "p_l + sum_{l not in S} p_l)", success(frozenset({0})))
    d.result = d.step("E_empty by the recursion E_S = 1/q_S + sum_{l not in S} p_l/(sum_{k not "
                      "in S} p_k) E_{S + l}", sp.factor(sp.together(_waiting_chain(probs,
                                                                                  success))))
    return d


def derive_step_bound() -> Derivation:
    r"""Eq. 45's step: :math:`1/p_{\rm new}` in the proof's Muon model, for a set found so far
    whose unfound weight is :math:`q`: ``result`` is
    :math:`(\theta(1-q)+q)/q` expanded (:math:`q` the module's symbol)."""
    d = Derivation("Eq. 45: expected wait for a new mode when found weights are x theta")
    found, unfound = d.step("weights of the found modes (x theta) and of the unfound ones",
                            sp.Matrix([theta * (1 - q), q]))
    p_new = d.step("p_new = unfound / (found + unfound)", unfound / (found + unfound))
    d.result = d.step("E wait = 1 / p_new, expanded", sp.expand(1 / p_new))
    return d


def derive_uniform_time(L: int) -> Derivation:
    r""":math:`T_0` of Eq. 41 at :math:`p_l = 1/L`; ``result`` is the rational number."""
    if not (isinstance(L, int) and L >= 1):
        raise ValueError(f"L: {L!r} must be an integer >= 1")
    d = derive_collection_integral([sp.Rational(1, L)] * L)
    d.title = f"T_0 at uniform p, L = {L}"
    d.result = sp.nsimplify(d.result)
    return d


def derive_log_term_curvature() -> Derivation:
    r"""Lemma 10's :math:`h(p) = \log(1-e^{-pt})` and :math:`h''(p)`; ``result`` is
    ``(h, h'')``."""
    d = Derivation("Lemma 10: h(p) = log(1 - e^(-p t)) and its second derivative in p")
    h = d.step("h(p)", sp.log(1 - sp.exp(-p * t)))
    first = d.step("h'(p)", sp.together(sp.diff(h, p)))
    d.result = (h, d.step("h''(p)", sp.factor(sp.together(sp.diff(first, p)))))
    return d

