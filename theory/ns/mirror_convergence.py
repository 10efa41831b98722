r"""Convergence of separable steepest mirror flows (Never Saddle Theorem 4.2, submitted
numbering), derived from the flow and the stated assumptions only.

The flow, coordinate by coordinate: :math:`\dot x_k = -M_k(x)\,\psi_q(g_k)`, :math:`g =
\nabla f(x)`, :math:`\psi_q(v) = \operatorname{sign}(v)|v|^{q-1}`, :math:`M_k = 1/\partial_k^2R`
(separable :math:`R`). Assumptions (the public description): inverse :math:`\mu`-coercivity
:math:`M_k \ge \mu > 0`; :math:`\|\nabla f(x_t)\|_\infty \le B` along the flow; :math:`f`
bounded below by :math:`f^\star`; for rates, :math:`f` :math:`\alpha`-strongly convex.

* :func:`derive_dissipation`: :math:`\tfrac{d}{dt}f = -\sum_kM_k|g_k|^q`, on every sign of
  :math:`g_k` (sympy, from :func:`theory.ns.steepest.steepest_direction`).
* :func:`derive_integral_bounds`: :math:`\int_0^\infty\|g\|_q^q\,dt \le \Delta/\mu` and
  :math:`\int_0^\infty\|g\|_2^2\,dt \le B^{2-q}\Delta/\mu`, :math:`\Delta = f(x_0) - f^\star`.
* :func:`derive_rates`: the linear rate :math:`f - f^\star \le \Delta e^{-2\alpha\mu B^{q-2}t}`
  (every :math:`q \in [1, 2]`), the finite extinction time
  :math:`T^\star \le \Delta^{1-q/2}/((1-q/2)\mu(2\alpha)^{q/2})` for :math:`q < 2` (which tends
  to the linear rate :math:`2\alpha\mu` as :math:`q \to 2`), and the exact time rescaling
  :math:`x_\mu(t) = x_1(\mu t)` of a constant metric :math:`M \equiv \mu`.
* :func:`derive_quartic`: a convex, not strongly convex :math:`f = \tfrac h4e^4` with
  :math:`M \equiv \mu`: closed form at :math:`q = 2` (no linear rate, :math:`f \sim t^{-2}`)
  and the decay class for every :math:`q`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import Q
from theory.ns.steepest import steepest_direction

GAMMA = sp.Symbol("gamma", positive=True)  # |g_k| > 0
M_K = sp.Symbol("M_k", positive=True)
MU = sp.Symbol("mu", positive=True)
B = sp.Symbol("B", positive=True)
DELTA = sp.Symbol("Delta", positive=True)  # f(x_0) - f*
ALPHA = sp.Symbol("alpha", positive=True)
H = sp.Symbol("h", positive=True)
T = sp.Symbol("t", nonnegative=True)
E0 = sp.Symbol("e_0", positive=True)


@cache
def derive_dissipation() -> Derivation:
    r""":math:`\tfrac{d}{dt}f = \sum_kg_k\dot x_k` with :math:`\dot x_k = M_k\cdot` (steepest
    direction of :math:`g_k`): each term is :math:`-M_k|g_k|^q` for :math:`g_k = \pm\gamma`
    and 0 for :math:`g_k = 0` (:math:`\operatorname{sign}(0) = 0`). ``result`` is the term.

    >>> derive_dissipation().result
    -M_k*gamma**q
    """
    d = Derivation("dissipation of f along a separable steepest mirror flow")
    terms = set()
    for s in (1, -1):
        g = s * GAMMA
        velocity = M_K * steepest_direction(g, Q)
        terms.add(d.step(f"g_k xdot_k at g_k = {'+' if s > 0 else '-'}gamma",
                         sp.powsimp(sp.expand(g * velocity), force=True)))
    d.step("g_k = 0: g_k xdot_k", sp.Integer(0) * M_K * steepest_direction(sp.Integer(0), Q))
    if len(terms) != 1:
        raise ArithmeticError(f"g_k xdot_k differs between the signs of g_k: {terms}")
    (term,) = terms
    d.result = d.step("df/dt = sum_k g_k xdot_k = -sum_k M_k |g_k|^q <= 0 (f is monotone)",
                      term)
    return d


@dataclass(frozen=True)
class IntegralBounds:
    r"""``q_norm``: the bound on :math:`\int_0^\infty\|g\|_q^q`; ``l2``: on
    :math:`\int_0^\infty\|g\|_2^2`; in the symbols ``DELTA``, ``MU``, ``B``, ``Q``."""

    q_norm: sp.Expr
    l2: sp.Expr


@cache
def derive_integral_bounds() -> Derivation:
    r"""Integrate the dissipation over :math:`[0, T]`: :math:`\int_0^T\sum_kM_k|g_k|^q =
    f(x_0) - f(x_T) \le \Delta`; with :math:`M_k \ge \mu`,
    :math:`\int_0^T\|g\|_q^q \le \Delta/\mu` for every :math:`T`. Per coordinate
    :math:`|g_k|^2 = |g_k|^q\,|g_k|^{2-q} \le B^{2-q}|g_k|^q` (:math:`q \le 2`,
    :math:`|g_k| \le B`). ``result`` is an :class:`IntegralBounds`.

    >>> derive_integral_bounds().result.l2
    B**(2 - q)*Delta/mu
    """
    d = Derivation("bounds on the time integrals of the gradient")
    term = derive_dissipation().result
    d.step("int_0^T sum_k M_k |g_k|^q dt = f(x_0) - f(x_T) <= f(x_0) - f* = Delta", -term)
    d.step("M_k >= mu: mu |g_k|^q <= M_k |g_k|^q; the difference", sp.factor(
        (-term) - MU * GAMMA**Q))
    q_norm = d.step("int_0^oo ||g||_q^q dt <= Delta / mu (T -> oo, monotone)", DELTA / MU)
    ratio = d.step("|g_k|^2 / (B^(2-q) |g_k|^q)", sp.powsimp(GAMMA**2 / (B ** (2 - Q) * GAMMA**Q),
                                                             force=True))
    d.step("= (|g_k|/B)^(2-q): base <= 1, exponent 2 - q >= 0 for q <= 2, so ratio <= 1",
           sp.simplify(ratio - (GAMMA / B) ** (2 - Q)))
    l2 = d.step("int_0^oo ||g||_2^2 dt <= B^(2-q) int ||g||_q^q dt <= B^(2-q) Delta / mu",
                sp.Mul(B ** (2 - Q), DELTA, 1 / MU, evaluate=False))
    d.step("q = 2 and M = mu constant: int ||g||^2 = (f(x_0) - f(x_oo)) / mu, so the bound "
           "is attained when f(x_oo) = f*", l2.subs(Q, 2))
    d.result = IntegralBounds(q_norm=q_norm, l2=l2)
    return d


@dataclass(frozen=True)
class Rates:
    r"""``linear``: the rate :math:`r` of :math:`f - f^\star \le \Delta e^{-rt}`;
    ``extinction``: the bound on the time at which :math:`f = f^\star` (:math:`q < 2`);
    ``extinction_q1``: its value at :math:`q = 1`; ``limit_q2``: the finite-time comparison
    solution as :math:`q \to 2`."""

    linear: sp.Expr
    extinction: sp.Expr
    extinction_q1: sp.Expr
    limit_q2: sp.Expr


@cache
def derive_rates() -> Derivation:
    r"""Rates for :math:`\alpha`-strongly convex :math:`f`, with :math:`e = f - f^\star`.

    Polyak-Łojasiewicz: :math:`e \le \|g\|^2/(2\alpha)` (shown for a diagonal quadratic:
    per coordinate :math:`g_k^2/(h_ke_k^2) = h_k \ge \alpha`). Then

    * linear: :math:`\|g\|_q^q \ge B^{q-2}\|g\|_2^2 \ge 2\alpha B^{q-2}e`, so
      :math:`\dot e \le -2\alpha\mu B^{q-2}e` and Grönwall (``dsolve`` of the comparison ODE);
    * finite time (:math:`q < 2`): :math:`\|g\|_q \ge \|g\|_2` for :math:`q \le 2`, so
      :math:`\dot e \le -\kappa e^{q/2}`, :math:`\kappa = \mu(2\alpha)^{q/2}`;
      :math:`\tfrac{d}{dt}e^{1-q/2} = (1-q/2)e^{-q/2}\dot e \le -(1-q/2)\kappa`;
    * constant metric :math:`M \equiv \mu`: :math:`y(t) = x_1(\mu t)` solves the flow with
      :math:`\mu`, so every time scale is :math:`\propto 1/\mu` exactly.

    ``result`` is a :class:`Rates`.

    >>> derive_rates().result.linear
    2*B**(q - 2)*alpha*mu
    """
    d = Derivation("convergence rates of the steepest mirror flow")
    e_k = sp.Symbol("e_k", positive=True)
    d.step("PL, diagonal quadratic: g_k^2 / (2 * (h_k e_k^2 / 2)) = h_k >= alpha",
           sp.simplify((H * e_k) ** 2 / (2 * (H * e_k**2 / 2))))
    e, kappa = sp.Symbol("e", positive=True), sp.Symbol("kappa", positive=True)
    rate = d.step("linear: mu ||g||_q^q >= mu B^(q-2) ||g||^2 >= 2 alpha mu B^(q-2) e; rate r",
                  2 * ALPHA * MU * B ** (Q - 2))
    y = sp.Function("y")
    comparison = sp.dsolve(sp.Eq(y(T).diff(T), -kappa * y(T)), y(T), ics={y(0): DELTA})
    d.step("comparison ODE y' = -r y, y(0) = Delta (Groenwall: e <= y)",
           comparison.rhs.subs(kappa, rate))
    d.step("finite time: kappa = mu (2 alpha)^(q/2), e' <= -kappa e^(q/2); "
           "d/dt e^(1-q/2) = (1-q/2) e^(-q/2) e' with e' = -kappa e^(q/2)",
           sp.powsimp((1 - Q / 2) * e ** (-Q / 2) * (-kappa * e ** (Q / 2)), force=True))
    extinction = d.step("e^(1-q/2) falls linearly to 0: extinction time T* <=",
                        DELTA ** (1 - Q / 2) / ((1 - Q / 2) * MU * (2 * ALPHA) ** (Q / 2)))
    q1 = d.step("T* at q = 1 (sign flow)", sp.simplify(extinction.subs(Q, 1)))
    eps = sp.Symbol("epsilon", positive=True)  # 1 - q/2
    finite = (DELTA**eps - eps * kappa * T) ** (1 / eps)
    limit = d.step("q -> 2 (epsilon = 1 - q/2 -> 0) of the comparison solution "
                   "(Delta^eps - eps kappa t)^(1/eps): the linear rate kappa(q=2) = 2 alpha mu",
                   sp.limit(finite, eps, 0).subs(kappa, MU * 2 * ALPHA))
    x1, field = sp.Function("x_1"), sp.Function("F")
    velocity = sp.diff(x1(MU * T), T).replace(lambda z: isinstance(z, sp.Subs),
                                               lambda z: field(x1(z.point[0])))
    d.step("constant metric: x_1' = F(x_1) with F = -psi_q(g); y(t) = x_1(mu t) has y' = ",
           velocity)
    d.step("y' - mu F(y): 0, so x_mu(t) = x_1(mu t) and every time scale is 1/mu exactly",
           sp.simplify(velocity - MU * field(x1(MU * T))))
    d.result = Rates(linear=rate, extinction=extinction, extinction_q1=q1, limit_q2=limit)
    return d


@dataclass(frozen=True)
class Quartic:
    r""":math:`f = \tfrac h4e^4` with :math:`M \equiv \mu`: ``f_q2`` the closed form of
    :math:`f(t)` at :math:`q = 2` (symbols ``H``, ``MU``, ``E0``, ``T``), ``loglog_q2``
    :math:`\lim t\,\tfrac{d}{dt}\log f`, ``log_rate_q2`` :math:`\lim\tfrac{d}{dt}\log f`
    (0: no linear rate),
    ``power`` the exponent :math:`p(q) = 3(q-1)` of :math:`\dot e = -\mu h^{q-1}e^p`,
    ``finite_below`` the :math:`q` below which :math:`e` reaches 0 in finite time."""

    f_q2: sp.Expr
    loglog_q2: sp.Expr
    log_rate_q2: sp.Expr
    power: sp.Expr
    finite_below: sp.Expr


@cache
def derive_quartic() -> Derivation:
    r"""A convex, not strongly convex example: :math:`f(x) = \tfrac h4(x - c)^4`, :math:`e = x -
    c > 0`, :math:`M \equiv \mu`: :math:`\dot e = -\mu\psi_q(he^3) = -\mu h^{q-1}e^{3(q-1)}`.
    At :math:`q = 2`, :math:`\tfrac{d}{dt}e^{-2}` is constant, so
    :math:`e(t) = (e_0^{-2} + 2\mu ht)^{-1/2}` (checked against the ODE); for general
    :math:`q`, :math:`\dot e = -ce^p` reaches 0 in finite time iff :math:`p < 1`.

    >>> derive_quartic().result.loglog_q2
    -2
    """
    d = Derivation("convex, not strongly convex: f = h e^4 / 4 with a constant metric")
    e = sp.Symbol("e", positive=True)
    velocity = d.step("edot = mu * steepest direction of f'(e) = h e^3",
                      sp.powsimp(sp.expand_power_base(MU * steepest_direction(H * e**3, Q),
                                                      force=True), force=True))
    power = d.step("power of e in edot: p(q)", sp.expand(sp.expand_log(
        sp.log(-velocity), force=True)).coeff(sp.log(e)))
    finite_below = d.step("p < 1 (finite-time extinction) iff", sp.solve(sp.Lt(power, 1), Q))
    at_two = velocity.subs(Q, 2)
    d.step("q = 2: d/dt e^(-2) = -2 e^(-3) edot, constant", sp.simplify(-2 * e**-3 * at_two))
    e_t = d.step("so e^(-2) = e_0^(-2) + 2 mu h t: e(t)",
                 1 / sp.sqrt(E0**-2 + 2 * MU * H * T))
    residual = sp.simplify(sp.diff(e_t, T) - at_two.subs(e, e_t))
    if residual != 0:
        raise ArithmeticError(f"e(t) does not solve the q = 2 flow: residual {residual}")
    d.step("check: de/dt - edot(e(t))", residual)
    f_t = d.step("f(t) = h e(t)^4 / 4", sp.factor(H * e_t**4 / 4))
    log_rate = d.step("lim d log f/dt (t -> oo): 0, so no bound f <= Delta e^(-rt) with r > 0 "
                      "holds", sp.limit(sp.diff(sp.log(f_t), T), T, sp.oo))
    loglog = d.step("lim t d log f/dt: the power of the polynomial decay f ~ t^(-2)",
                    sp.limit(T * sp.diff(sp.log(f_t), T), T, sp.oo))
    d.result = Quartic(f_q2=f_t, loglog_q2=loglog, log_rate_q2=log_rate, power=power,
                       finite_below=finite_below)
    return d
