r"""The mirror potential :math:`R_{L_p,L}` of the steepest flow on :math:`x = \prod_{i=1}^L w_i`
and its Legendre property (Never Saddle Cor. 4.11 and 4.12, submitted numbering; later
"Lemma 4.13" and Cor. 4.14), derived from the inverse metric of the parameter flow.

Everything starts from :math:`\nabla^2R = 1/M` with :math:`M` from
:func:`theory.ns.reparam_balance.derive_product_metric` (any balance offsets) or
:func:`theory.ns.metric_exponent.derive_zero_balance_metric_any_depth` (zero balance, symbolic
depth). :math:`M` is even in :math:`x`, so :math:`\nabla R` is odd and :math:`x > 0` is the
whole story.

* :func:`derive_potential_zero_balance`: :math:`\nabla R` and :math:`R` at zero balance for
  symbolic :math:`q, L` (a power law, a logarithm at :math:`m = 1`) with their normalisation;
* :func:`derive_legendre_case`: for one :math:`(q, L)` and balance (zero, or the Cor. 4.8
  offsets :math:`c_1 = 0`, :math:`c_{i\ge2} = \lambda`): in the variable :math:`u`
  (:math:`|x|^q = P(u)`) the mirror coordinate is :math:`\nabla R(x) = \int dx/M =
  \tfrac1q\int P(u)^{1/q-1}du`, whose power laws at :math:`u \to 0` and :math:`u \to \infty`
  decide the interior of the domain, strict convexity, essential smoothness, whether
  :math:`\nabla R` maps onto :math:`\mathbb R`, and the finite-time blow-up of the mirror flow
  under a gradient of fixed sign :math:`-G`: :math:`G^{q-1}T^\star = \sup\nabla R - \nabla
  R(x_0)`;
* :func:`derive_depth_threshold`: the exponent of that integrand at infinity written in the
  metric exponent :math:`m`, and the depth at which it changes sign.

Reading of "Legendre" (verify/claims/ns/SOURCES.md §3): proper, closed, strictly convex on the
interior of its
domain and essentially smooth (:math:`|\nabla R| \to \infty` at the boundary of the domain);
"valid" (a mirror flow driven by any gradient exists for all time) adds :math:`\nabla R`
onto :math:`\mathbb R`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.metric_exponent import DEPTH, derive_zero_balance_metric_any_depth
from theory.ns.reparam_balance import Q, U, derive_product_metric

#: Generic exponent symbol used while integrating x^(-m); substituted by q(L-1)/L at the end.
MU = sp.Symbol("mu", positive=True)
LAMBDA = sp.Symbol("lambda", positive=True)
X0 = sp.Symbol("x_0", positive=True)
#: The balances studied: all offsets zero, or Cor. 4.8's (w_1 = 0, w_i = a: c_i = a^q = lambda).
BALANCES = ("zero", "cor4.8")


@dataclass(frozen=True)
class ZeroBalancePotential:
    r"""Zero balance, symbolic ``q`` and ``L``, :math:`x > 0`: ``m`` (the exponent of
    :math:`M = Lx^m`), ``hessian`` :math:`= 1/M`, and for :math:`m \ne 1` ``gradient``
    :math:`x^{1-m}/(L(1-m))` (0 at :math:`x \to 0` if :math:`m < 1`, at :math:`x \to \infty`
    if :math:`m > 1`) and ``potential`` (:math:`R(0^+) = 0`, :math:`m < 2`); for
    :math:`m = 1` ``gradient_log`` :math:`\log(x)/L` and ``potential_log``."""

    x: sp.Symbol
    L: sp.Symbol
    m: sp.Expr
    hessian: sp.Expr
    gradient: sp.Expr
    potential: sp.Expr
    gradient_log: sp.Expr
    potential_log: sp.Expr


def _branches(piecewise: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(generic branch, special branch) of sympy's antiderivative of a power of x with a
    symbolic exponent (the special branch is the logarithm)."""
    piecewise = sp.piecewise_fold(piecewise)
    if not isinstance(piecewise, sp.Piecewise) or len(piecewise.args) != 2:
        raise ArithmeticError(f"expected a two-branch Piecewise, got {piecewise}")
    (generic, _), (special, _) = piecewise.args
    return generic, special


@cache
def derive_potential_zero_balance() -> Derivation:
    r""":math:`\nabla R = \int dx/M` and :math:`R = \int\nabla R` at zero balance.

    :math:`M = Lx^m` from the parameter flow (symbolic depth); integrate with a generic
    exponent :math:`\mu`, pick the normalisation by limits (:math:`\mu = 1 \mp s`, :math:`s > 0`),
    then :math:`\mu = m = q(L-1)/L`. ``result`` is a :class:`ZeroBalancePotential`.

    >>> derive_potential_zero_balance().result.gradient
    x**(1 - q*(L - 1)/L)/(L*(1 - q*(L - 1)/L))
    """
    d = Derivation("zero balance: the mirror potential R_{Lp,L} (symbolic q, L)")
    base = derive_zero_balance_metric_any_depth().result
    L, x, m = base.L, base.x, base.m
    form = DEPTH * x**MU
    residual = sp.expand(sp.powsimp(base.M / form.subs(MU, m), force=True))
    if residual != 1:
        raise ArithmeticError(f"M is not L x^m: ratio {residual}")
    d.step("M = L x^mu with mu = m (from the parameter flow)", form)
    hessian = d.step("Hessian of R: 1 / M", 1 / form)
    gradient, gradient_log = _branches(sp.integrate(hessian, x))
    d.step("antiderivative, mu != 1", gradient)
    d.step("antiderivative, mu = 1", gradient_log)
    s = sp.Symbol("s", positive=True)
    d.step("mu = 1 - s < 1: limit x -> 0+ of the antiderivative (grad R(0) = 0, R' finite "
           "at 0)", sp.limit(gradient.subs(MU, 1 - s), x, 0, "+"))
    d.step("mu = 1 + s > 1: limit x -> oo of the antiderivative (grad R(oo) = 0: bounded "
           "above)", sp.limit(gradient.subs(MU, 1 + s), x, sp.oo))
    d.step("mu = 1 + s > 1: limit x -> 0+ (grad R -> -oo at the boundary 0)",
           sp.limit(gradient.subs(MU, 1 + s), x, 0, "+"))
    potential, _ = _branches(sp.integrate(gradient, x))
    potential = d.step("R = int grad R, mu not in {1, 2}", sp.factor(potential))
    r = sp.Symbol("r", positive=True)
    d.step("mu = 2 - r < 2: R(0+) = 0", sp.limit(potential.subs(MU, 2 - r), x, 0, "+"))
    potential_log = d.step("R = int grad R, mu = 1", sp.integrate(gradient_log, x))
    d.step("mu = 1: R(0+) = 0", sp.limit(potential_log, x, 0, "+"))
    at_m = {MU: m}
    d.result = ZeroBalancePotential(
        x=x, L=L, m=m, hessian=d.step("Hessian with mu = q(L-1)/L", hessian.subs(at_m)),
        gradient=d.step("grad R with mu = q(L-1)/L (m != 1)", gradient.subs(at_m)),
        potential=d.step("R with mu = q(L-1)/L (m not in {1, 2})", potential.subs(at_m)),
        gradient_log=gradient_log, potential_log=potential_log)
    return d


@dataclass(frozen=True)
class LegendreCase:
    r"""The Legendre analysis of :math:`R_{L_p,L}` for one ``(q, L, balance)``.

    ``integrand``: :math:`\tfrac1q P(u)^{1/q-1}`, so :math:`\nabla R(x) = \int^{u(x)}`
    integrand :math:`du`; ``power_at_zero``/``power_at_infinity``: its power laws;
    ``interior``: ``"R"`` or ``"(0, oo)"`` (with its mirror image); ``gradient_at_zero``:
    :math:`\lim_{x\to0^+}\nabla R` (0 or :math:`-\infty`); ``blow_up``: :math:`G^{q-1}T^\star`
    from :math:`x_0` (``X0``; zero balance) or from :math:`x_0 = 0` (Cor. 4.8), or ``None``
    when :math:`\sup\nabla R = \infty` (no blow-up)."""

    q: sp.Expr
    L: int
    balance: str
    m: sp.Expr
    integrand: sp.Expr
    power_at_zero: sp.Expr
    power_at_infinity: sp.Expr
    interior: str
    gradient_at_zero: sp.Expr
    strictly_convex: bool
    essentially_smooth: bool
    onto: bool
    blow_up: sp.Expr | None

    @property
    def legendre(self) -> bool:
        return self.strictly_convex and self.essentially_smooth

    @property
    def valid(self) -> bool:
        """Legendre with :math:`\\nabla R` onto :math:`\\mathbb R` (a 'valid Bregman function')."""
        return self.legendre and self.onto


def balance_offsets_symbolic(L: int, balance: str) -> dict[sp.Symbol, sp.Expr]:
    """The offsets c_1..c_L of ``balance``: all 0, or c_1 = 0 and c_i = lambda (i >= 2)."""
    if balance not in BALANCES:
        raise ValueError(f"balance: {balance!r} is not one of {', '.join(BALANCES)}")
    c = derive_product_metric(L).result.c
    return {cj: (0 if balance == "zero" or k == 0 else LAMBDA) for k, cj in enumerate(c)}


def _check_case(q: sp.Expr, L: int) -> None:
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")
    if not (q.is_Rational and 1 <= q <= 2):
        raise ValueError(f"q: {q!r} must be a rational number in [1, 2]")


@cache
def _improper(power: sp.Expr, end: sp.Expr) -> sp.Expr:
    r""":math:`\int_0^1 u^{\text{power}}du` (``end`` 0) or :math:`\int_1^\infty` (``end``
    oo): the antiderivative's limit at ``end`` (finite, or oo for a divergent integral). A pure
    function of the power (cached: the balances and depths share powers)."""
    antiderivative = sp.integrate(U**power, U)
    value = sp.limit(antiderivative, U, end, "+" if end == 0 else "-") \
        - antiderivative.subs(U, 1)
    return sp.Abs(value)


@cache
def derive_legendre_case(q: sp.Expr, L: int, balance: str) -> Derivation:
    r"""Strict convexity, essential smoothness, surjectivity of :math:`\nabla R` and the
    blow-up time for one rational ``q`` in [1, 2], depth ``L`` and ``balance``.

    ``result`` is a :class:`LegendreCase`.

    >>> c = derive_legendre_case(sp.Integer(2), 3, "cor4.8").result
    >>> c.valid, c.blow_up
    (False, pi/(2*sqrt(lambda)))
    """
    q = sp.nsimplify(q)
    _check_case(q, L)
    d = Derivation(f"Legendre analysis of R_(Lp,L): q = {q}, L = {L}, balance {balance}")
    base = derive_product_metric(L).result
    P = d.step("P(u) = prod_i (u + c_i) = |x|^q with the balance offsets",
               base.P.subs(balance_offsets_symbolic(L, balance)))
    M = d.step("M = P'(u)", sp.expand(sp.diff(P, U)))
    coefficients = sp.Poly(M, U).coeffs()
    strictly_convex = bool(all(cf.is_positive for cf in coefficients))
    d.step("coefficients of P'(u) in u: all positive, so M > 0 and R'' = 1/M > 0 for u > 0 "
           "(x != 0)" if strictly_convex else "coefficients of P'(u): not all positive",
           sp.Matrix(coefficients))
    x_of_u = P ** (1 / q)
    check = sp.cancel(sp.diff(x_of_u, U) / x_of_u - sp.diff(P, U) / (q * P))
    if check != 0:
        raise ArithmeticError(f"d log x / du is not P'/(q P): residual {check}")
    d.step("x = P^(1/q): (dx/du) / x - P'(u) / (q P): 0, so dx / M = x / (q P) du = "
           "(1/q) P^(1/q - 1) du", check)
    candidate = P ** (1 / q - 1) / q
    integrand = d.step("integrand of grad R in u", sp.powsimp(sp.expand_power_base(
        candidate, force=True), force=True))
    poly = sp.Poly(P, U)
    lowest = min(k for (k,) in poly.monoms())
    power_at_zero = d.step("P ~ u^k (lowest power k) as u -> 0: integrand ~ u^(k (1/q - 1))",
                           lowest * (1 / q - 1))
    power_at_infinity = d.step("P ~ u^L as u -> oo: integrand ~ u^(L (1/q - 1))",
                               poly.degree() * (1 / q - 1))
    near_zero = d.step("int_0^1 u^(power at 0) du", _improper(power_at_zero, 0))
    near_infinity = d.step("int_1^oo u^(power at oo) du", _improper(power_at_infinity, sp.oo))
    finite_at_zero = bool(near_zero.is_finite)
    interior = "R" if finite_at_zero else "(0, oo)"
    gradient_at_zero = d.step(
        "lim_(x -> 0+) grad R: 0 (finite integral: grad R continuous and odd, domain R) or "
        "-oo (divergent: the domain is a half-line)",
        sp.Integer(0) if finite_at_zero else -sp.oo)
    essentially_smooth = interior == "R" or gradient_at_zero == -sp.oo
    d.step("essentially smooth: no boundary (domain R) or |grad R| -> oo at the boundary 0",
           sp.true if essentially_smooth else sp.false)
    sup_finite = bool(near_infinity.is_finite)
    onto = not sup_finite
    d.step("grad R onto R: sup grad R = +oo (divergent at oo) and inf = -oo (oddness, or "
           "divergence at 0)", sp.true if onto else sp.false)
    blow_up = None
    if sup_finite:
        start = X0 ** (q / L) if balance == "zero" else sp.Integer(0)
        d.step("u at the start: x_0^(q/L) (zero balance) or 0 (Cor. 4.8: w_1 = 0, x_0 = 0)",
               start)
        # A monomial c u^k (zero balance) integrates by its antiderivative and limits; by
        # default sympy tries Meijer G first, at many times the cost, for the same value.
        coefficient, _ = integrand.as_coeff_exponent(U)
        direct = {} if coefficient.has(U) else {"meijerg": False, "risch": False}
        blow_up = d.step("G^(q-1) T* = sup grad R - grad R(x_0) = int_(u_0)^oo integrand du",
                         sp.integrate(integrand, (U, start, sp.oo), conds="none", **direct))
    m = d.step("metric exponent q (L - 1) / L", q * (L - 1) / sp.Integer(L))
    d.result = LegendreCase(q=q, L=L, balance=balance, m=m, integrand=integrand,
                            power_at_zero=power_at_zero, power_at_infinity=power_at_infinity,
                            interior=interior, gradient_at_zero=gradient_at_zero,
                            strictly_convex=strictly_convex,
                            essentially_smooth=essentially_smooth, onto=onto, blow_up=blow_up)
    return d


@dataclass(frozen=True)
class DepthThreshold:
    r"""``excess``: the power of :math:`u` of the integrand at infinity plus 1, written in
    :math:`m` (:math:`\nabla R` is onto iff it is :math:`\ge 0`); ``depth``: the :math:`L` at
    which it vanishes, as a function of :math:`q > 1`."""

    m: sp.Symbol
    excess: sp.Expr
    depth: sp.Expr


@cache
def derive_depth_threshold() -> Derivation:
    r"""Symbolic :math:`q`, :math:`L`: the integrand :math:`\tfrac1qP^{1/q-1}` behaves as
    :math:`u^{L(1/q-1)}` at infinity for every balance (:math:`P \sim u^L`), so
    :math:`\int^\infty` diverges (:math:`\nabla R` onto) iff :math:`L(1/q-1) + 1 \ge 0`. Written
    in :math:`m = q(L-1)/L` this is :math:`(L/q)(1-m)`; solved for :math:`L` it is
    :math:`L = q/(q-1)`, the dual exponent :math:`p`.

    >>> derive_depth_threshold().result.depth
    q/(q - 1)
    """
    d = Derivation("the depth at which grad R stops being onto (symbolic q, L)")
    m_sym = sp.Symbol("m", positive=True)
    excess = d.step("power of u at infinity + 1: L (1/q - 1) + 1", DEPTH * (1 / Q - 1) + 1)
    # simplify=False in both solves (linear equations): the steps below factor the solutions,
    # and sympy's simplify pass (the solves' main cost) would change nothing they show.
    in_m = sp.solve(sp.Eq(m_sym, Q * (DEPTH - 1) / DEPTH), Q, simplify=False)
    (q_of_m,) = in_m
    written = d.step("with q = m L / (L - 1), i.e. in terms of m", sp.factor(excess.subs(
        Q, q_of_m)))
    # Both sides are rational functions of (L, m): cancel brings their ratio to lowest terms.
    d.step("ratio to (L/q)(1 - m) (at that q): 1", sp.cancel(
        written / ((DEPTH / q_of_m) * (1 - m_sym))))
    (depth,) = sp.solve(sp.Eq(excess, 0), DEPTH, simplify=False)
    d.result = DepthThreshold(m=m_sym, excess=written,
                              depth=d.step("L at which the excess vanishes", sp.factor(depth)))
    return d
