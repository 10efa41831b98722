r"""Escape times from the saddle at the origin of the steepest flow on
:math:`x = \prod_{i=1}^L w_i` (Never Saddle, abstract and Fig. 3, verify/claims/ns/SOURCES.md
§4.14), and the first jump of Pesme & Flammarion 2023 (SOURCES §5.4), derived from the flows.

**Frozen gradient** (:func:`derive_frozen_escape`). One coordinate, :math:`f(x) = -Gx`
(:math:`G > 0`, so :math:`x` grows), start :math:`w_1 = 0`, :math:`w_i = a` (:math:`i \ge 2`,
the Cor. 4.8 start). The parameter flow is :func:`theory.ns.reparam_balance.product_flow`; its
conserved power :math:`r = q` (:func:`theory.ns.reparam_balance.derive_balance_exponent`) gives
:math:`w_i^q = w_1^q + a^q`, so

.. math:: \dot w_1 = G^{q-1}(w_1^q + a^q)^{\kappa/q},\qquad \kappa = (L-1)(q-1),

and with :math:`w_1 = a s` the time to reach :math:`x = X` is

.. math:: T = G^{1-q}a^{1-\kappa}\int_0^{s^\star}(1+s^q)^{-\kappa/q}ds
          = G^{1-q}a^{1-\kappa}\,s^\star\,{}_2F_1\!\big(\tfrac1q,\tfrac\kappa q;1+\tfrac1q;
          -s^{\star q}\big),\qquad a^Ls^\star(1+s^{\star q})^{(L-1)/q} = X .

The same integrand follows from the mirror map: :math:`T = G^{1-q}\int_0^X dx/M(x)` with the
inverse metric :math:`M = P'(u)` of :func:`theory.ns.reparam_balance.derive_product_metric`
(offsets :math:`c_1 = 0`, :math:`c_{i\ge2} = a^q`); its infimum is :math:`\mu = M(0) =
a^{q(L-1)}` (:math:`M` increases with :math:`|x|`).

As :math:`a \to 0` (:func:`asymptotic_law`) the integrand's tail :math:`s^{-\kappa}` decides:
:math:`T \sim a^{-(\kappa-1)}` for :math:`\kappa > 1`, :math:`T \sim G^{1-q}\log(1/a)` for
:math:`\kappa = 1`, and :math:`T \to G^{1-q}X^{(1-\kappa)/L}/(1-\kappa)` (bounded) for
:math:`\kappa < 1`. With the metric exponent :math:`m = q(L-1)/L` of zero balance,
:math:`\kappa - 1 = L(m - 1)`.

**Fig. 3** (:func:`derive_balance_curve`): for :math:`L = 2` the path in :math:`(w_1, w_2)` is
the balance curve :math:`w_2 = (w_1^q + a^q)^{1/q}` from :math:`(0, a)` to
:math:`w_1w_2 = X`; its Euclidean arc length.

**Pesme & Flammarion** (:func:`derive_first_jump`): :math:`\beta = u\odot v`, gradient flow,
:math:`u_0 = \sqrt2a`, :math:`v_0 = 0`: the mirror map :math:`\tfrac12\operatorname{arcsinh}
(\beta/a^2)`, the frozen-gradient jump time and its :math:`a \to 0` limit in accelerated time
:math:`t/\log(1/a)`, and the :math:`O(1/\log(1/a))` correction of a coordinate whose gradient
falls linearly, :math:`g(\beta) = -|g_0| + h\beta`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache

import mpmath
import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import (
    GAMMA,
    Q,
    U,
    derive_balance_exponent,
    derive_metric_zero_balance,
    derive_product_metric,
    product_flow,
)
from theory.ns.steepest import steepest_direction

#: initial scale, target |x|, scaled first factor s = w_1 / a, first factor, its end value
A = sp.Symbol("a", positive=True)
X = sp.Symbol("X", positive=True)
S = sp.Symbol("s", positive=True)
W1 = sp.Symbol("w_1", positive=True)
S_END = sp.Symbol("s_star", positive=True)
#: Pesme & Flammarion: beta, the gradient at 0 (magnitude), the curvature along e_i, a level
BETA = sp.Symbol("beta", positive=True)
G0 = sp.Symbol("g_0", positive=True)
H = sp.Symbol("h", positive=True)
B = sp.Symbol("B", positive=True)
TIME = sp.Symbol("t", positive=True)
EPS = sp.Symbol("epsilon", positive=True)


def _check_depth(L: int) -> None:
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")


@dataclass(frozen=True)
class FrozenEscape:
    r"""What :func:`derive_frozen_escape` arrives at, for depth ``L`` and symbolic ``q``
    (:data:`theory.ns.reparam_balance.Q`), ``G`` (:data:`theory.ns.reparam_balance.GAMMA`), ``a``,
    ``X``.

    ``rate``: :math:`\dot w_1` as a function of :math:`w_1`; ``prefactor`` and ``integrand``:
    :math:`dT/ds = \text{prefactor}\cdot\text{integrand}(s)`; ``endpoint``: the function of
    :data:`S_END` whose root is :math:`s^\star` (:math:`\log x(as^\star) - \log X`,
    increasing); ``balance_integrand`` and ``mirror_integrand``: :math:`dT/dw_1` from the
    balance and from :math:`\int dx/M`; ``kappa``: the tail exponent read off the integrand."""

    L: int
    rate: sp.Expr
    prefactor: sp.Expr
    integrand: sp.Expr
    endpoint: sp.Expr
    balance_integrand: sp.Expr
    mirror_integrand: sp.Expr
    kappa: sp.Expr


@cache
def derive_frozen_escape(L: int) -> Derivation:
    r"""Escape time of one coordinate under a frozen gradient :math:`-G`, from
    :math:`w_1 = 0`, :math:`w_{i\ge2} = a` to :math:`x = X` (see the module docstring).

    >>> derive_frozen_escape(2).result.integrand
    (s**q + 1)**(-(q - 1)/q)
    """
    _check_depth(L)
    d = Derivation(f"escape time under a frozen gradient, x = w_1 ... w_{L}, w_1(0) = 0, "
                   f"w_i(0) = a")
    flow = product_flow(L, (1,) * L, -1)
    d.step("parameter flow on the positive orthant, g = -G < 0 (magnitudes a_i = |w_i|)",
           sp.Matrix(flow.velocities))
    r = derive_balance_exponent(L).result.r
    d.step("conserved power (ns.lemma4.4's derivation): a_i^r - a_1^r constant, r =", r)
    # From w_1(0) = 0, w_i(0) = a: a_i^r = a_1^r + a^r for every i >= 2.
    others = {ai: (W1**r + A**r) ** (1 / r) for ai in flow.a[1:]}
    rate = sp.powsimp(sp.expand_power_base(
        flow.velocities[0].subs(flow.a[0], W1).subs(others), force=True), force=True)
    rate = d.step("dw_1/dt with a_i = (w_1^q + a^q)^(1/q)", rate)
    x_of_w1 = flow.x.subs(flow.a[0], W1).subs(others)
    d.step("x = w_1 prod_{i>=2} w_i along the balance curve", x_of_w1)
    balance_integrand = 1 / rate
    # w_1 = a s: dT/ds = a / rate(a s); pull a^q out of a^q + a^q s^q to separate a from s.
    scaled = sp.expand_power_base(A / rate.subs(W1, A * S), force=True).replace(
        lambda e: e.is_Pow and sp.expand(e.base - A**Q * (S**Q + 1)) == 0,
        lambda e: A ** (Q * e.exp) * (S**Q + 1) ** e.exp)
    scaled = sp.powsimp(scaled, force=True)
    prefactor = d.step("prefactor of dT/ds (the s-independent part), w_1 = a s",
                       scaled.subs(S, 0))
    integrand = d.step("dT/ds / prefactor", sp.powsimp(scaled / prefactor, force=True))
    if integrand.has(A) or integrand.has(GAMMA):
        raise ArithmeticError(f"dT/ds did not separate into a prefactor and f(s): {integrand}")
    endpoint = sp.expand_log(sp.log(x_of_w1.subs(W1, A * S_END)), force=True) - sp.log(X)
    d.step("s* solves log x(a s*) - log X = 0", endpoint)
    tail = sp.limit(S * sp.diff(sp.log(integrand), S), S, sp.oo)
    kappa = d.step("tail exponent: -lim_{s->oo} s d log(integrand)/ds = kappa", sp.factor(-tail))
    # Second route: xdot = M(x) G^{q-1} with M = P'(u), u = a_1^q = w_1^q, offsets c_1 = 0,
    # c_i = a^q; dT/dw_1 = (dx/dw_1) / (M G^{q-1}).
    metric = derive_product_metric(L).result
    M = metric.M.subs({metric.c[0]: 0, **{c: A**Q for c in metric.c[1:]}}).subs(U, W1**Q)
    d.step("mu = inf_x M = M(x = 0) (M = P'(u) increases with u)", M.subs(W1, 0))
    mirror = d.step("mirror-map route: dT/dw_1 = (dx/dw_1) / (G^(q-1) M(x)), M = P'(u)",
                    sp.diff(x_of_w1, W1) / (GAMMA ** (Q - 1) * M))
    d.result = FrozenEscape(L=L, rate=rate, prefactor=prefactor, integrand=integrand,
                            endpoint=endpoint, balance_integrand=balance_integrand,
                            mirror_integrand=mirror, kappa=kappa)
    return d


@cache
def integrand_ratio(L: int) -> sp.Expr:
    r"""Mirror-route over balance-route :math:`dT/dw_1` of :func:`derive_frozen_escape`, with
    every power of :math:`w_1^q + a^q` written over one base (1 when the routes agree)."""
    e = derive_frozen_escape(L).result
    base = W1**Q + A**Q
    c = sp.Symbol("c", positive=True)
    ratio = sp.powsimp(sp.expand_power_base(
        (e.mirror_integrand / e.balance_integrand).subs(base, c), force=True), force=True)
    return sp.cancel(sp.expand(sp.powsimp(sp.factor(ratio), force=True).subs(c, base)))


@cache
def derive_closed_form(L: int) -> Derivation:
    r""":math:`\int_0^{s^\star}(1+s^q)^{-\kappa/q}ds` in closed form (sympy's Meijer-G
    integration: a Gauss hypergeometric function). ``result`` is the expression in
    :data:`S_END`. Seconds of sympy: used at full fidelity, beside the quadrature."""
    e = derive_frozen_escape(L).result
    d = Derivation(f"closed form of the escape-time integral, L = {L}")
    z = sp.Symbol("z", positive=True)
    anti = sp.integrate(e.integrand.subs(S, z), (z, 0, S_END), conds="none")
    # sympy writes -s^q as a polar number (exp_polar(I pi)); on the principal branch it is the
    # real negative number.
    anti = sp.simplify(anti).replace(lambda h: isinstance(h, sp.hyper),
                                     lambda h: sp.hyper(h.ap, h.bq, sp.unpolarify(h.argument)))
    d.result = d.step("int_0^{s*} (1 + s^q)^(-kappa/q) ds", anti)
    return d


@cache
def derive_exponent_relation(L: int) -> Derivation:
    r""":math:`\kappa - 1` against :math:`L(m - 1)`, :math:`m` the metric exponent at zero
    balance (:func:`theory.ns.reparam_balance.derive_metric_zero_balance`). ``result`` is
    ``(kappa - 1, L (m - 1))``."""
    d = Derivation(f"escape exponent and metric exponent, L = {L}")
    kappa = derive_frozen_escape(L).result.kappa
    _, m = derive_metric_zero_balance(L).result
    d.step("metric exponent m at zero balance", m)
    d.result = (d.step("kappa - 1 (escape-time exponent of 1/a when > 0)", sp.expand(kappa - 1)),
                d.step("L (m - 1)", sp.expand(L * (m - 1))))
    return d


@dataclass(frozen=True)
class AsymptoticLaw:
    r"""The behaviour of :math:`T(a)` as :math:`a \to 0` at one :math:`(q, L)`: ``kind`` is
    ``"power"`` (:math:`T \propto a^{-\text{exponent}}`), ``"log"`` (:math:`T \approx
    \text{value}\cdot\log(1/a)`) or ``"bounded"`` (:math:`T \to \text{value}`); ``exponent``
    is the limit of :math:`d\log T/d\log(1/a)` (0 unless ``"power"``)."""

    kind: str
    value: sp.Expr
    exponent: sp.Expr


@cache
def asymptotic_law(L: int, q: sp.Rational) -> AsymptoticLaw:
    r"""Classify :math:`T(a)` from the tail :math:`\text{integrand} \sim s^{-\kappa}` and
    :math:`s^\star \sim X^{1/L}/a`: with :math:`I(S) = \int_0^S\text{integrand}`,
    :math:`I \sim S^{1-\kappa}/(1-\kappa)` (:math:`\kappa<1`), :math:`\log S` (:math:`\kappa=1`),
    a constant (:math:`\kappa > 1`); then :math:`T = \text{prefactor}\cdot I(s^\star)`.

    >>> asymptotic_law(2, sp.Integer(2)).kind
    'log'
    """
    e = derive_frozen_escape(L).result
    q = sp.nsimplify(q)
    if not (1 <= q <= 2):
        raise ValueError(f"q: {q} must lie in [1, 2]")
    kappa = e.kappa.subs(Q, q)
    coefficient = sp.limit(S**kappa * e.integrand.subs(Q, q), S, sp.oo)
    if coefficient != 1:
        raise ArithmeticError(f"tail coefficient {coefficient}, expected 1")
    prefactor = e.prefactor.subs(Q, q)
    s_star = X ** sp.Rational(1, L) / A  # leading order of the root of the endpoint equation
    if kappa > 1:
        # T a^(kappa - 1) -> G^(1-q) int_0^oo integrand (left unevaluated: a number)
        tail = sp.Integral(e.integrand.subs(Q, q), (S, 0, sp.oo))
        return AsymptoticLaw("power", sp.powsimp(prefactor * A ** (kappa - 1)) * tail,
                             kappa - 1)
    if kappa == 1:
        lead = prefactor * sp.log(s_star)
        return AsymptoticLaw("log", sp.limit(lead / sp.log(1 / A), A, 0), sp.Integer(0))
    lead = prefactor * s_star ** (1 - kappa) / (1 - kappa)
    return AsymptoticLaw("bounded", sp.powsimp(lead, force=True), sp.Integer(0))


#: working precision (decimal digits) of the quadratures and roots below; the checks compare
#: with float64 simulations at 1e-6 and closed forms at 1e-12
DIGITS = 20


def _check_values(q: float, a: float, X_value: float, G: float = 1.0) -> None:
    if not (1 <= q <= 2):
        raise ValueError(f"q: {q} must lie in [1, 2]")
    if not (a > 0 and G > 0 and X_value > 0):
        raise ValueError(f"a, G, X: must be > 0, got {a}, {G}, {X_value}")


@cache
def _escape_functions(L: int, q: float):
    """mpmath functions of the derived forms at one (L, q): endpoint(s*, a, X), integrand(s),
    prefactor(a, G), and the closed form's antiderivative(s*) when asked for."""
    e = derive_frozen_escape(L).result
    qq = {Q: sp.nsimplify(q)}
    return (sp.lambdify((S_END, A, X), e.endpoint.subs(qq), "mpmath"),
            sp.lambdify(S, e.integrand.subs(qq), "mpmath"),
            sp.lambdify((A, GAMMA), e.prefactor.subs(qq), "mpmath"))


def _log_root(f, guess: float) -> mpmath.mpf:
    """Root of an increasing function of ``log s`` (mpmath's secant from the guess)."""
    return mpmath.exp(mpmath.findroot(lambda v: f(mpmath.exp(v)), mpmath.log(guess)))


def _s_star(L: int, q: float, a: float, X_value: float) -> mpmath.mpf:
    endpoint = _escape_functions(L, q)[0]
    a_, X_ = mpmath.mpf(a), mpmath.mpf(X_value)
    return _log_root(lambda s: endpoint(s, a_, X_), X_value ** (1.0 / L) / a)


@lru_cache(maxsize=4096)
def escape_time(L: int, q: float, a: float, G: float, X_value: float) -> float:
    r""":math:`T(a)` by quadrature of the derived integrand (mpmath, sympy's arbitrary
    precision backend, :data:`DIGITS` digits), split at :math:`s = 1` and at decades up to
    :math:`s^\star`, where the integrand turns from 1 to its tail :math:`s^{-\kappa}`."""
    _check_values(q, a, X_value, G)
    _, integrand, prefactor = _escape_functions(L, q)
    with mpmath.workdps(DIGITS):
        s_star = _s_star(L, q, a, X_value)
        cuts = [mpmath.mpf(0)] + [mpmath.mpf(10) ** k for k in range(int(mpmath.log10(s_star))
                                                                     + 1) if 10**k < s_star]
        integral = mpmath.quad(integrand, cuts + [s_star])
        return float(prefactor(mpmath.mpf(a), mpmath.mpf(G)) * integral)


@lru_cache(maxsize=4096)
def closed_form_time(L: int, q: float, a: float, G: float, X_value: float) -> float:
    r""":math:`T(a)` from :func:`derive_closed_form` (mpmath's hypergeometric function)."""
    _check_values(q, a, X_value, G)
    anti = sp.lambdify(S_END, derive_closed_form(L).result.subs(Q, sp.nsimplify(q)), "mpmath")
    prefactor = _escape_functions(L, q)[2]
    with mpmath.workdps(DIGITS):
        return float(prefactor(mpmath.mpf(a), mpmath.mpf(G)) * anti(_s_star(L, q, a, X_value)))


@dataclass(frozen=True)
class BalanceCurve:
    r""":math:`L = 2`: the path :math:`w_2(w_1)`, the arc-length integrand
    :math:`\sqrt{1 + w_2'(w_1)^2}` and the end condition :math:`w_1w_2 = X` (as
    :math:`\log(w_1w_2) - \log X`)."""

    w2: sp.Expr
    arc_integrand: sp.Expr
    endpoint: sp.Expr


@cache
def derive_balance_curve() -> Derivation:
    r"""The Fig. 3 curve: the conserved :math:`w_2^q - w_1^q = a^q` from :math:`(0, a)`, and
    its Euclidean arc length to :math:`w_1w_2 = X`.

    >>> derive_balance_curve().result.w2
    (a**q + w_1**q)**(1/q)
    """
    d = Derivation("Fig. 3: the balance curve of x = w_1 w_2 from (0, a)")
    r = derive_balance_exponent(2).result.r
    w2 = d.step("w_2 from w_2^r - w_1^r = a^r (conserved, r = q)", (W1**r + A**r) ** (1 / r))
    slope = d.step("dw_2/dw_1", sp.powsimp(sp.diff(w2, W1), force=True))
    arc = d.step("arc-length integrand sqrt(1 + (dw_2/dw_1)^2)", sp.sqrt(1 + slope**2))
    endpoint = d.step("end: log(w_1 w_2) - log X = 0", sp.expand_log(sp.log(W1 * w2),
                                                                     force=True) - sp.log(X))
    d.result = BalanceCurve(w2=w2, arc_integrand=arc, endpoint=endpoint)
    return d


@cache
def _arc_functions(q: float):
    """mpmath functions of the derived curve at one q: endpoint(w_1, a, X), integrand(w_1, a)."""
    c = derive_balance_curve().result
    qq = {Q: sp.nsimplify(q)}
    return (sp.lambdify((W1, A, X), c.endpoint.subs(qq), "mpmath"),
            sp.lambdify((W1, A), c.arc_integrand.subs(qq), "mpmath"))


@lru_cache(maxsize=4096)
def arc_length(q: float, a: float, X_value: float = 1.0) -> float:
    r"""Euclidean arc length of the balance curve from :math:`(0, a)` to :math:`w_1w_2 = X`
    (mpmath quadrature, :data:`DIGITS` digits, split at :math:`w_1 = a` where the curve
    turns)."""
    _check_values(q, a, X_value)
    endpoint, integrand = _arc_functions(q)
    with mpmath.workdps(DIGITS):
        a_, X_ = mpmath.mpf(a), mpmath.mpf(X_value)
        w1_end = _log_root(lambda w: endpoint(w, a_, X_), math.sqrt(X_value))
        cut = min(a_, w1_end / 2)
        return float(mpmath.quad(lambda w: integrand(w, a_), [0, cut, w1_end]))


@dataclass(frozen=True)
class FirstJump:
    r"""What :func:`derive_first_jump` arrives at: ``mirror_map`` :math:`\nabla R(\beta)` for
    :math:`u_0 = \sqrt2a, v_0 = 0`; ``frozen_time`` the time to :math:`|\beta| = B` under a
    frozen gradient of magnitude :math:`g_0`; ``accelerated_limit`` its
    :math:`\lim_{a\to0}` of :math:`t/\log(1/a)`; ``offset`` the constant :math:`C` in
    :math:`t = \log(1/a)/g_0 + C + o(1)` when the gradient falls as :math:`g_0 - h\beta` and
    :math:`B = (1-\varepsilon)g_0/h` (:data:`EPS`: the fraction of the gradient left at
    :math:`B`); ``offset_at_half`` :math:`C` at :math:`B = \beta^1/2`,
    :math:`\beta^1 = g_0/h`."""

    mirror_map: sp.Expr
    frozen_time: sp.Expr
    accelerated_limit: sp.Expr
    offset: sp.Expr
    offset_at_half: sp.Expr


@cache
def derive_first_jump() -> Derivation:
    r"""Pesme & Flammarion 2023 (SOURCES §5.4), from the gradient flow on
    :math:`\beta = u\odot v` (one coordinate; the flow is separable given :math:`g`)."""
    d = Derivation("Pesme & Flammarion: mirror map and first jump time, beta = u v")
    u, v, g = sp.symbols("u v g", real=True)
    f = sp.Function("f")
    grads = [sp.diff(f(u * v), w).replace(lambda e: isinstance(e, sp.Subs), lambda e: g)
             for w in (u, v)]
    vel = [sp.simplify(steepest_direction(gr, 2).replace(sp.Abs, lambda z: sp.sign(z) * z)
                       .replace(lambda e: e.is_Pow and isinstance(e.base, sp.sign),
                                lambda e: 1))
           for gr in grads]
    vel = d.step("gradient flow (q = 2): (udot, vdot)", sp.Matrix(vel))
    conserved = d.step("d/dt (u^2 - v^2)", sp.expand(2 * u * vel[0] - 2 * v * vel[1]))
    if conserved != 0:
        raise ArithmeticError("u^2 - v^2 is not conserved")
    beta_dot = d.step("betadot = udot v + u vdot", sp.factor(vel[0] * v + u * vel[1]))
    if sp.expand(beta_dot + (u**2 + v**2) * g) != 0:
        raise ArithmeticError("betadot is not -(u^2 + v^2) g")
    delta = sp.Symbol("delta", positive=True)
    identity = sp.expand((u**2 + v**2) ** 2 - ((u**2 - v**2) ** 2 + 4 * (u * v) ** 2))
    d.step("(u^2 + v^2)^2 - ((u^2 - v^2)^2 + 4 beta^2)", identity)
    if identity != 0:
        raise ArithmeticError("u^2 + v^2 is not sqrt(delta^2 + 4 beta^2)")
    speed = sp.sqrt(delta**2 + 4 * BETA**2)
    d.step("so betadot = -sqrt(delta^2 + 4 beta^2) g, delta = u^2 - v^2 (conserved)",
           -speed * g)
    z = sp.Symbol("z", positive=True)
    potential_gradient = sp.integrate(1 / speed.subs(BETA, z), (z, 0, BETA))
    d.step("separate: grad R(beta) = int_0^beta dz / sqrt(delta^2 + 4 z^2) = -int_0^t g",
           potential_gradient)
    delta0 = d.step("delta from u_0 = sqrt(2) a, v_0 = 0", (sp.sqrt(2) * A) ** 2 - 0)
    mirror_map = d.step("grad R(beta) at that delta", sp.simplify(
        potential_gradient.subs(delta, delta0)))
    # frozen gradient of magnitude g_0: grad R(|beta|) = g_0 t
    frozen = d.step("frozen gradient: time to |beta| = B", sp.solve(
        sp.Eq(mirror_map.subs(BETA, B), G0 * TIME), TIME)[0])
    limit = d.step("lim_{a->0} t / log(1/a)", sp.limit(frozen / sp.log(1 / A), A, 0))
    # A gradient falling along the coordinate, |g| = g_0 - h beta, up to B = (1 - eps) g_0/h
    # (eps: the fraction of |g| left there): t(B) = int_0^B dbeta / (speed (g_0 - h beta)), and
    # 1/(g_0 - h beta) = 1/g_0 + h beta / (g_0 (g_0 - h beta)) splits it into the frozen time
    # and an extra time.
    rest_integrand = H * BETA / (G0 * (G0 - H * BETA)) / speed.subs(delta, delta0)
    d.step("extra time density over the frozen one", rest_integrand)
    # It is bounded uniformly in a by its a = 0 form (integrable on [0, B] for eps > 0):
    # dominated convergence takes the limit inside; then y = 1 - h beta / g_0.
    at_zero = d.step("its a -> 0 limit (dominated convergence)", sp.limit(rest_integrand, A, 0))
    y = sp.Symbol("y", positive=True)
    in_y = sp.simplify(at_zero.subs(BETA, G0 * (1 - y) / H) * G0 / H)
    rest = d.step("int_0^B of it, with y = 1 - h beta / g_0 from 1 to eps",
                  sp.integrate(in_y, (y, EPS, 1)))
    frozen_part = sp.limit(frozen - sp.log(1 / A) / G0, A, 0)
    offset = d.step("C = lim_{a->0} (t - log(1/a)/g_0) at B = (1 - eps) g_0 / h",
                    sp.expand_log(frozen_part.subs(B, (1 - EPS) * G0 / H) + rest, force=True))
    at_half = d.step("C at eps = 1/2: B = beta^1 / 2 with beta^1 = g_0 / h",
                     sp.simplify(sp.expand_log(offset.subs(EPS, sp.Rational(1, 2)),
                                               force=True)))
    d.result = FirstJump(mirror_map=mirror_map, frozen_time=frozen, accelerated_limit=limit,
                         offset=offset, offset_at_half=at_half)
    return d
