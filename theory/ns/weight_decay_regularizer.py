r"""Weight decay on the diagonal reparameterisation :math:`x = \prod_{i=1}^L w_i`: the manifold
regulariser of the steepest mirror flow (Never Saddle Thm 4.14), the fixed points of the
decayed flows, and Table 1's regulariser types, derived from the parameter flow alone.

The flows (verify/claims/ns/SOURCES.md §3), coordinate by coordinate, with :math:`\psi_q(v) =
\operatorname{sign}(v)|v|^{q-1}` and :math:`g = f'(x)`:

.. math:: \text{decoupled: } \dot w_i = -\psi_q(\partial_{w_i}F) - \alpha w_i, \qquad
          \text{coupled: } \dot w_i = -\psi_q(\partial_{w_i}F + \alpha w_i).

Two readings of "weight decay induces a regulariser :math:`M_{reg}`" are derived here:

1. *drift* (review 4's form): :math:`R''(x)\dot x = -\psi_q(g) - \nabla M_{reg}(x)`, with
   :math:`R'' = 1/M` the inverse of the metric of ``ns.thm4.6``. Decoupled decay adds
   :math:`-\alpha L x` to :math:`\dot x` for every balance, so :math:`\nabla M_{reg}(x; c) =
   \alpha L x / M(x; c)`, free of :math:`g` (:func:`derive_decoupled_drift`); at zero balance
   :math:`\nabla M_{reg} = \alpha\operatorname{sign}(x)|x|^{1-m}`, :math:`m = q(L-1)/L`,
   :math:`M_{reg} = \alpha|x|^{2-m}/(2-m)` (:func:`derive_decoupled_regularizer`). Coupled decay
   has no such form for :math:`q < 2`: on the balanced manifold the regulariser sits *inside*
   the drive, :math:`R''\dot x = -\psi_q(g + \nabla M_c(x))`,
   :math:`M_c = \tfrac{\alpha L}{2}|x|^{2/L}` (:func:`derive_coupled_fixed_points`).
2. *limit*: the function whose stationary points are the flow's fixed points. Decoupled:
   :math:`\psi_q(g) = -\nabla M_{reg}(x)`, i.e. :math:`g = -\nabla\tilde M(x)` with
   :math:`\tilde M = \alpha^{1/(q-1)}|x|^k/k`, :math:`k = 1 + (1-m)/(q-1)`; at :math:`q = 1` the
   box :math:`\|x\|_\infty \le \alpha^{-L}` (:func:`derive_decoupled_fixed_points`). Coupled:
   the stationary points of :math:`F + \tfrac\alpha2\|w\|^2`, i.e. of :math:`f + M_c` for every
   :math:`q` (Kolb et al.'s penalty, :func:`derive_kolb_penalty`).

Readings 1 and 2 agree at :math:`q = 2` and nowhere else. :func:`derive_table_cells` lists the
types per Table 1 cell. Everything works on :math:`x > 0` (:math:`g` of either sign); the
model is odd in :math:`x`, so :math:`M_{reg}` is even.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.reparam_balance import (
    ALPHA,
    GAMMA,
    ProductFlow,
    Q,
    U,
    derive_decoupled_balance,
    derive_product_metric,
    magnitudes,
    odd_power,
    product_flow,
    sign_patterns,
)

#: Symbolic depth (an integer >= 1 in the model; L = 1 is the plain flow on x).
DEPTH = sp.Symbol("L", positive=True)
#: |x| (x > 0 without loss: the flows are odd in x).
X = sp.Symbol("x", positive=True)
#: The common magnitude |w_i| = a of balanced factors.
A_MAG = sp.Symbol("a", positive=True)
#: The initial balance constant lambda (L = 2, offsets (0, lambda)).
LAM = sp.Symbol("lambda", positive=True)

#: Concrete depths on which the symbolic-depth forms are checked against the flow itself.
CHECK_DEPTHS = (2, 3, 4)
CELL_DECAYS = ("decoupled", "coupled")
CELL_QS = (1, 2)
CELL_DEPTHS = (2, sp.oo)


@lru_cache(maxsize=2048)
def tidy(e: sp.Expr) -> sp.Expr:
    """Expand, collect powers of positive symbols (exact for the positive symbols used here)
    and put every symbolic exponent over one denominator, so equal powers compare equal.

    Cached (a pure function of an immutable expression): the negative control tidies the same
    derived sides again."""
    for _ in range(2):
        e = sp.powsimp(sp.expand_power_base(e, force=True), force=True)
        e = e.replace(lambda t: t.is_Pow and not t.exp.is_Number,
                      lambda t: sp.Pow(t.base, sp.factor(sp.cancel(t.exp))))
        e = sp.expand(e, power_exp=False)
    return e


def regularizer_type(exponent: sp.Expr) -> str:
    r"""Name of :math:`\sum_k|x_k|^e` by its exponent: 1 is :math:`L_1`, 0 the logarithm
    (:math:`\nabla \propto 1/x`), otherwise :math:`L_e`.

    >>> regularizer_type(sp.Rational(3, 2)), regularizer_type(sp.Integer(0))
    ('L_{3/2}', 'log')
    """
    exponent = sp.nsimplify(exponent)
    if exponent == 1:
        return "L1"
    if exponent == 0:
        return "log"
    return f"L_{{{exponent}}}"


# --- reading 1: the drift in mirror coordinates -------------------------------------------------

@dataclass(frozen=True)
class PatternVelocity:
    r"""One sign pattern of the decoupled flow: ``g`` (:math:`\pm\gamma`), ``x``
    (:math:`\prod_i s_ia_i`), ``xdot`` (with decay) and ``metric``
    :math:`\sum_i\prod_{j\ne i}a_j^q` (the inverse metric of ``ns.thm4.6`` as a function of the
    magnitudes, any balance)."""

    g: sp.Expr
    x: sp.Expr
    xdot: sp.Expr
    metric: sp.Expr


def _x_velocity(flow: ProductFlow) -> sp.Expr:
    r""":math:`\dot x = \sum_i \partial x/\partial w_i\,\dot w_i`, with
    :math:`\partial x/\partial w_i = s_i\,\partial x/\partial a_i`."""
    return sp.expand(sum(sp.diff(flow.x, ai) / s * v
                         for ai, s, v in zip(flow.a, flow.signs, flow.velocities)))


@cache
def derive_decoupled_drift(L: int) -> Derivation:
    r"""The velocity of :math:`x` under decoupled decay, every sign pattern, any balance.

    Chain rule on the decayed and the undecayed parameter flows; their difference must be
    :math:`-\alpha L x` on every pattern (each factor contributes :math:`-\alpha x`), so the
    decay adds :math:`-\alpha L x/M` to :math:`R''\dot x`, free of :math:`g`: that is
    :math:`-\nabla M_{reg}(x; c)` with :math:`\nabla M_{reg} = \alpha L x/M(x; c)`. ``result``
    is the list of :class:`PatternVelocity` (for the stated drive to be composed with).

    >>> d = derive_decoupled_drift(2)
    >>> len(d.result), d.steps[-1].expr
    (8, -L*alpha*x/M)
    """
    d = Derivation(f"decoupled decay on x = w_1 ... w_{L}: the drift of x")
    a = magnitudes(L)
    metric = sp.Add(*[sp.Mul(*[a[j] ** Q for j in range(L) if j != i]) for i in range(L)])
    records = []
    for signs, grad_sign in sign_patterns(L):
        decayed = product_flow(L, signs, grad_sign, "decoupled")
        free = product_flow(L, signs, grad_sign, "none")
        xdot, xdot0 = _x_velocity(decayed), _x_velocity(free)
        if sp.expand(xdot - xdot0 + ALPHA * L * decayed.x) != 0:
            raise ArithmeticError(f"decoupled decay does not add -alpha L x at {signs}, "
                                  f"{grad_sign}: {sp.expand(xdot - xdot0)}")
        records.append(PatternVelocity(g=grad_sign * GAMMA, x=decayed.x, xdot=xdot,
                                       metric=metric))
        if signs == (1,) * L and grad_sign == 1:
            d.step("xdot with decoupled decay (positive orthant, g > 0)", xdot)
    d.step(f"xdot(decayed) - xdot(free) + alpha L x: 0 on all {2 ** (L + 1)} sign patterns",
           sp.Integer(0))
    d.step("inverse metric (ns.thm4.6): M = sum_i prod_(j != i) |w_j|^q", metric)
    xs, Ms = sp.Symbol("x", real=True), sp.Symbol("M", positive=True)
    d.step("so R'' xdot + psi_q(g) = (xdot - xdot_free)/M = -grad M_reg(x; c), free of g:",
           -DEPTH * ALPHA * xs / Ms)
    d.result = records
    return d


@dataclass(frozen=True)
class DecoupledRegularizer:
    r"""Zero balance, symbolic :math:`q, L`: the balanced velocities ``xdot[s]`` (for
    :math:`g = s\gamma`, in the magnitude ``a``), the inverse metric ``metric_a`` (in ``a``) and
    ``metric`` (in :math:`x`), the metric exponent ``m``, :math:`\nabla M_{reg}` (``gradient``),
    :math:`M_{reg}` (``potential``) and its exponent :math:`2 - m`."""

    xdot: dict[int, sp.Expr]
    metric_a: sp.Expr
    metric: sp.Expr
    m: sp.Expr
    gradient: sp.Expr
    potential: sp.Expr
    exponent: sp.Expr


@cache
def balanced_rate(decay: str) -> dict[int, sp.Expr]:
    r""":math:`\dot a` of balanced factors :math:`|w_i| = a` on the positive orthant, for
    :math:`g = s\gamma` (``s`` = +-1) and symbolic depth: :math:`\partial_{w_i}F = g\,a^{L-1}`,
    then the flow's definition. Checked against :func:`product_flow` at :math:`L = 2..4`.
    """
    rates = {}
    for s in (1, -1):
        partial = s * GAMMA * A_MAG ** (DEPTH - 1)
        if decay == "decoupled":
            rate = -odd_power(partial, Q) - ALPHA * A_MAG
        elif decay == "coupled":
            rate = -odd_power(partial + ALPHA * A_MAG, Q)
        else:
            rate = -odd_power(partial, Q)
        rates[s] = rate
        for L in CHECK_DEPTHS:
            flow = product_flow(L, (1,) * L, s, decay)
            equal = {ai: A_MAG for ai in flow.a}
            for r in flow.magnitude_rates:
                if tidy(r.subs(equal) - rate.subs(DEPTH, L)) != 0:
                    raise ArithmeticError(f"balanced {decay} rate disagrees with the flow at "
                                          f"L = {L}, s = {s}")
    return rates


@cache
def derive_decoupled_regularizer() -> Derivation:
    r"""Reading 1 at zero balance, symbolic :math:`q` and :math:`L`.

    Balanced factors stay balanced under decoupled decay (ns.lemma4.4: the offsets decay as
    :math:`e^{-qA}`, so zero stays zero). With :math:`x = a^L`: :math:`\dot x = La^{L-1}\dot a`;
    the undecayed velocity gives :math:`M = -\dot x_{free}/\psi_q(g) = La^{q(L-1)} =
    L x^{m}`; the decay's share of :math:`\dot x/M` is :math:`-\nabla M_{reg}`; integrating
    from 0 gives :math:`M_{reg}`. ``result`` is a :class:`DecoupledRegularizer`.

    >>> r = derive_decoupled_regularizer().result
    >>> r.exponent.subs({Q: 2, DEPTH: 2}), r.exponent.subs({Q: 1, DEPTH: 2})
    (1, 3/2)
    """
    d = Derivation("decoupled decay at zero balance: the manifold regulariser M_reg")
    rates = balanced_rate("decoupled")
    d.step("adot of balanced factors, g = +gamma (checked against the flow, L = 2..4)",
           rates[1])
    xdot = {s: tidy(DEPTH * A_MAG ** (DEPTH - 1) * r) for s, r in rates.items()}
    free = {s: xdot[s].subs(ALPHA, 0) for s in xdot}
    metric_a = d.step("M = -xdot_free / psi_q(g) (the same for g = +-gamma)",
                      tidy(-free[1] / odd_power(GAMMA, Q)))
    if tidy(-free[-1] / odd_power(-GAMMA, Q) - metric_a) != 0:
        raise ArithmeticError("the inverse metric depends on the sign of g")
    to_x = {A_MAG: X ** (1 / DEPTH)}
    metric = d.step("M in x (a = x^(1/L))", tidy(metric_a.subs(to_x)))
    m = d.step("metric exponent m = x M'(x) / M", sp.factor(tidy(X * sp.diff(metric, X)
                                                                   / metric)))
    drift = d.step("decay's share of xdot / M (the same for g = +-gamma)",
                   tidy((xdot[1] - free[1]) / metric_a))
    if tidy((xdot[-1] - free[-1]) / metric_a - drift) != 0:
        raise ArithmeticError("the decay's drift depends on the sign of g")
    gradient = d.step("grad M_reg(x) = minus that drift, in x", tidy(-drift.subs(to_x)))
    exponent = d.step("exponent of M_reg: 1 + (power of x in grad M_reg)",
                      sp.factor(1 + tidy(X * sp.diff(gradient, X) / gradient)))
    d.step("exponent - (2 - m)", tidy(exponent - (2 - m)))
    potential = d.step("M_reg = int_0^x grad M_reg (exponent 2 - m > 0 for q <= 2)",
                       ALPHA * X ** exponent / exponent)
    if tidy(sp.diff(potential, X) - gradient) != 0:
        raise ArithmeticError("M_reg' differs from grad M_reg")
    d.result = DecoupledRegularizer(xdot=xdot, metric_a=metric_a, metric=metric, m=m,
                                    gradient=gradient, potential=potential, exponent=exponent)
    return d


@cache
def derive_balance_dependence() -> Derivation:
    r"""How a non-zero initial balance enters (:math:`L = 2`, offsets :math:`(0, \lambda)`):
    :math:`\nabla M_{reg} = 2\alpha x/M(x;\lambda)` with ns.thm4.6's
    :math:`M = \sqrt{\lambda^2 + 4x^q}`, and :math:`\lambda(t) = \lambda_0 e^{-qA(t)}`
    (ns.lemma4.4); :math:`\lambda \to 0` recovers the zero-balance form, and at :math:`q = 2`
    a large balance turns the :math:`L_1` drift into a ridge one. ``result`` is
    :math:`\nabla M_{reg}(x; \lambda_0 e^{-qA})`.

    >>> derive_balance_dependence().result
    2*alpha*x/sqrt(lambda**2*exp(-2*A*q) + 4*x**q)
    """
    d = Derivation("non-zero balance, L = 2: the time-dependent regulariser")
    base = derive_product_metric(2).result
    P = base.P.subs({base.c[0]: 0, base.c[1]: LAM})
    (u,) = [r for r in sp.solve(sp.Eq(P, X**Q), U) if r.subs({X: 1, LAM: 1, Q: 2}) > 0]
    M = d.step("M = P'(u) at the root u >= 0 of u (u + lambda) = x^q (ns.thm4.6)",
               sp.sqrt(sp.expand(sp.diff(P, U).subs(U, u) ** 2)))
    gradient = d.step("grad M_reg = 2 alpha x / M(x; lambda)", 2 * ALPHA * X / M)
    at_zero = d.step("lambda = 0: alpha x^(1 - q/2), the zero-balance form at L = 2",
                     tidy(gradient.subs(LAM, 0)))
    zero_form = derive_decoupled_regularizer().result.gradient.subs(DEPTH, 2)
    if tidy(at_zero - zero_form) != 0:
        raise ArithmeticError("lambda -> 0 does not give the zero-balance regulariser")
    d.step("q = 2, lambda >> x: leading term (2 alpha / lambda) x, a ridge drift",
           sp.limit(gradient.subs(Q, 2) * LAM / X, LAM, sp.oo) * X / LAM)
    factor = derive_decoupled_balance(2).result
    d.result = d.step("lambda(t) = lambda_0 D(t)/D(0) = lambda_0 exp(-q A) (ns.lemma4.4)",
                      gradient.subs(LAM, LAM * factor))
    return d


# --- reading 2: the fixed points ---------------------------------------------------------------

@dataclass(frozen=True)
class DecoupledFixedPoints:
    r"""Fixed points of the decoupled flow (:math:`x > 0`, :math:`g = -\gamma^*`):
    ``gamma_star`` (:math:`q > 1`), the limit's regulariser ``potential`` :math:`\tilde M` with
    exponent ``exponent``, and the :math:`q = 1` box radius ``box_radius``."""

    gamma_star: sp.Expr
    potential: sp.Expr
    exponent: sp.Expr
    box_radius: sp.Expr


@cache
def derive_decoupled_fixed_points() -> Derivation:
    r"""Stationarity of the decoupled flow in :math:`w` and in :math:`x`.

    In :math:`w` (concrete :math:`L = 2..4`, positive orthant, :math:`g = -\gamma`):
    :math:`a_i^{q-1}\dot a_i = (\gamma x)^{q-1} - \alpha a_i^q`, so a fixed point with
    :math:`x \ne 0` has :math:`a_i^q = (\gamma x)^{q-1}/\alpha` for every :math:`i`: it is
    balanced. Balanced (symbolic :math:`L`): :math:`\dot a = 0` gives :math:`\gamma^*(x)`; it
    equals :math:`\psi_q^{-1}(\nabla M_{reg})`, so in :math:`x` the condition is
    :math:`\psi_q(g) = -\nabla M_{reg}(x)`, the stationarity of :math:`f + \tilde M`. At
    :math:`q = 1`: :math:`\dot a = 1 - \alpha a` (for :math:`g < 0`), so either :math:`|w_i| =
    1/\alpha`, :math:`|x| = \alpha^{-L}`, or :math:`g = 0` with :math:`\alpha a \le 1` (the
    Filippov set of sign at 0): the KKT conditions of :math:`\min f` on the box
    :math:`\|x\|_\infty \le \alpha^{-L}`. ``result`` is a :class:`DecoupledFixedPoints`.

    >>> r = derive_decoupled_fixed_points().result
    >>> r.box_radius, r.exponent.subs({Q: 2, DEPTH: 2})
    (alpha**(-L), 1)
    """
    d = Derivation("fixed points of the decoupled flow")
    for L in CHECK_DEPTHS:
        flow = product_flow(L, (1,) * L, -1, "decoupled")
        x = sp.Mul(*flow.a)
        for ai, rate in zip(flow.a, flow.magnitude_rates):
            if tidy(ai ** (Q - 1) * rate - ((GAMMA * x) ** (Q - 1) - ALPHA * ai ** Q)) != 0:
                raise ArithmeticError(f"a_i^(q-1) adot_i is not (gamma x)^(q-1) - alpha "
                                      f"a_i^q at L = {L}")
    d.step("a_i^(q-1) adot_i = (gamma x)^(q-1) - alpha a_i^q (L = 2..4, every factor): a fixed "
           "point has a_i^q = (gamma x)^(q-1)/alpha, the same for all i, so it is balanced",
           (GAMMA * X) ** (Q - 1) / ALPHA)
    rate = balanced_rate("decoupled")[-1]
    # check=False skips sympy's back-substitution (most of solve's cost here): the root is
    # checked below against psi_q^{-1}(grad M_reg), derived independently from the drift.
    gamma_a = sp.solve(sp.Eq(tidy(rate), 0), GAMMA, check=False)
    if len(gamma_a) != 1:
        raise ArithmeticError(f"balanced fixed point: {gamma_a}")
    gamma_star = d.step("balanced, adot = 0, in x = a^L: |g*| = gamma*(x)",
                        tidy(gamma_a[0].subs(A_MAG, X ** (1 / DEPTH))))
    reg = derive_decoupled_regularizer().result
    inverse = tidy(reg.gradient ** (1 / (Q - 1)))
    d.step("psi_q^{-1}(grad M_reg) - gamma*: 0, so in x the fixed points solve "
           "psi_q(g) = -grad M_reg(x)", tidy(gamma_star - inverse))
    if tidy(gamma_star - inverse) != 0:
        raise ArithmeticError("the w-fixed points do not solve psi_q(g) = -grad M_reg")
    exponent = d.step("exponent k of the limit's regulariser: 1 + (power of x in gamma*)",
                      sp.factor(1 + tidy(X * sp.diff(gamma_star, X) / gamma_star)))
    d.step("k - p/L with the dual exponent p = q/(q-1): the limit's regulariser is L_(p/L)",
           tidy(exponent - Q / (Q - 1) / DEPTH))
    potential = d.step("M~ = int_0^x gamma* (g = -grad M~ at the fixed points)",
                       ALPHA ** (1 / (Q - 1)) * X ** exponent / exponent)
    if tidy(sp.diff(potential, X) - gamma_star) != 0:
        raise ArithmeticError("M~' differs from gamma*")
    d.step("q = 2: M~ - M_reg", tidy((potential - reg.potential).subs(Q, 2)))
    sign_rate = d.step("q = 1 (sign), g < 0: adot", tidy(rate.subs(Q, 1)))
    (a_star,) = sp.solve(sp.Eq(sign_rate, 0), A_MAG)
    box = d.step("q = 1: |w_i| = 1/alpha at a fixed point with g != 0, so |x| = alpha^(-L); "
                 "g = 0 needs alpha |w_i| <= 1: KKT of min f on ||x||_inf <= alpha^(-L)",
                 tidy(a_star ** DEPTH))
    d.result = DecoupledFixedPoints(gamma_star=gamma_star, potential=potential,
                                    exponent=exponent, box_radius=box)
    return d


@dataclass(frozen=True)
class CoupledFixedPoints:
    r"""Coupled decay (any :math:`q`): ``gamma_star`` = :math:`\nabla M_c(x)`, ``potential``
    :math:`M_c`, its ``exponent``; on the balanced manifold, for :math:`g = s\gamma`:
    ``mirror_rate[s]`` = :math:`R''\dot x` (in the magnitude ``a``) and ``inner[s]`` =
    :math:`g + \nabla M_c(x)`, with :math:`R''\dot x = -\psi_q(\text{inner})`."""

    gamma_star: sp.Expr
    potential: sp.Expr
    exponent: sp.Expr
    mirror_rate: dict[int, sp.Expr]
    inner: dict[int, sp.Expr]


@cache
def derive_coupled_fixed_points() -> Derivation:
    r"""Stationarity and dynamics of the coupled flow.

    :math:`\psi_q(v) = 0 \iff v = 0`, so the fixed points are the critical points of
    :math:`F + \tfrac\alpha2\|w\|^2` for every :math:`q`. In :math:`w` (:math:`L = 2..4`,
    :math:`g = -\gamma`): :math:`a_i(\partial_{w_i}F + \alpha w_i) = -\gamma x + \alpha a_i^2`,
    so :math:`a_i^2 = \gamma x/\alpha` for every :math:`i` (balanced); then
    :math:`\gamma^* = \alpha x^{2/L - 1} = \nabla M_c`, :math:`M_c = \tfrac{\alpha L}2x^{2/L}`.
    On the balanced manifold (invariant: the rates of all factors agree) :math:`R''\dot x =
    -\psi_q(g + \nabla M_c(x))`: the regulariser enters inside the drive. ``result`` is a
    :class:`CoupledFixedPoints`.

    >>> derive_coupled_fixed_points().result.potential
    L*alpha*x**(2/L)/2
    """
    d = Derivation("fixed points and dynamics of the coupled flow")
    for L in CHECK_DEPTHS:
        flow = product_flow(L, (1,) * L, -1, "coupled")
        x = sp.Mul(*flow.a)
        for i, ai in enumerate(flow.a):
            partial = -GAMMA * sp.Mul(*[a for j, a in enumerate(flow.a) if j != i])
            if sp.expand(ai * (partial + ALPHA * ai) - (-GAMMA * x + ALPHA * ai**2)) != 0:
                raise ArithmeticError("a_i (dF/dw_i + alpha w_i) is not -gamma x + alpha a_i^2")
            if tidy(flow.magnitude_rates[i] + odd_power(partial + ALPHA * ai, Q)) != 0:
                raise ArithmeticError(f"coupled rate of factor {i} at L = {L} is not "
                                      "-psi_q(dF/dw_i + alpha w_i)")
    d.step("a_i (dF/dw_i + alpha w_i) = -gamma x + alpha a_i^2 (L = 2..4): fixed points have "
           "a_i^2 = gamma x / alpha for all i (balanced)", GAMMA * X / ALPHA)
    argument = -GAMMA * A_MAG ** (DEPTH - 1) + ALPHA * A_MAG  # dF/dw_i + alpha w_i, g < 0
    (gamma_a,) = sp.solve(sp.Eq(argument, 0), GAMMA)
    gamma_star = d.step("balanced, zero drive argument, in x: gamma* (the same for every q)",
                        tidy(gamma_a.subs(A_MAG, X ** (1 / DEPTH))))
    exponent = d.step("exponent of M_c", sp.factor(1 + tidy(X * sp.diff(gamma_star, X)
                                                             / gamma_star)))
    potential = d.step("M_c = int_0^x gamma*", ALPHA * X ** exponent / exponent)
    if tidy(sp.diff(potential, X) - gamma_star) != 0:
        raise ArithmeticError("M_c' differs from gamma*")
    metric_a = derive_decoupled_regularizer().result.metric_a
    mirror_rate, inners = {}, {}
    for s, rate in balanced_rate("coupled").items():
        # The drive's argument s gamma a^(L-1) + alpha a = a^(L-1) (g + alpha a^(2-L)); sympy
        # pulls the positive factor out of sign and Abs: psi_q(c v) = c^(q-1) psi_q(v), c > 0.
        inner = s * GAMMA + ALPHA * A_MAG ** (2 - DEPTH)
        factored = A_MAG ** (DEPTH - 1) * inner
        if tidy(factored - (s * GAMMA * A_MAG ** (DEPTH - 1) + ALPHA * A_MAG)) != 0:
            raise ArithmeticError("the factored drive argument differs from the flow's")
        if rate != -odd_power(s * GAMMA * A_MAG ** (DEPTH - 1) + ALPHA * A_MAG, Q):
            raise ArithmeticError("balanced coupled rate is not -psi_q(dF/dw + alpha w)")
        xdot = DEPTH * A_MAG ** (DEPTH - 1) * -odd_power(factored, Q)
        mirror_rate[s], inners[s] = tidy(xdot / metric_a), inner
        if tidy(mirror_rate[s] + odd_power(inner, Q)) != 0:
            raise ArithmeticError(f"coupled: R'' xdot is not -psi_q(g + grad M_c), s = {s}")
    d.step("R'' xdot + psi_q(g + grad M_c(x)) on the balanced manifold (g = +-gamma)",
           sp.Integer(0))
    d.result = CoupledFixedPoints(gamma_star=gamma_star, potential=potential,
                                  exponent=exponent, mirror_rate=mirror_rate, inner=inners)
    return d


@cache
def derive_kolb_penalty(L: int) -> Derivation:
    r""":math:`\min\{\sum_i a_i^2 : \prod_i a_i = x\}` by Lagrange multipliers (concrete
    :math:`L`): stationarity :math:`2a_i = \mu\prod_{j\ne i}a_j` gives :math:`2a_i^2 = \mu x`
    for every :math:`i`, so :math:`a_i = x^{1/L}`; the value is a minimum by AM-GM,
    :math:`\sum_ia_i^2 \ge L(\prod_ia_i^2)^{1/L}`. ``result`` is the minimum value.

    >>> derive_kolb_penalty(3).result
    3*x**(2/3)
    """
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")
    d = Derivation(f"min sum_i w_i^2 subject to prod_i w_i = x, L = {L}")
    a = magnitudes(L)
    mu = sp.Symbol("mu", positive=True)
    lagrangian = d.step("Lagrangian", sp.Add(*[ai**2 for ai in a]) - mu * (sp.Mul(*a) - X))
    equations = [sp.diff(lagrangian, v) for v in (*a, mu)]
    solutions = sp.solve(equations, [*a, mu], dict=True)
    values = {tidy(sp.Add(*[ai**2 for ai in a]).subs(s)) for s in solutions}
    if len(values) != 1:
        raise ArithmeticError(f"Lagrange points disagree: {values}")
    (value,) = values
    d.step("the positive stationary point(s)", solutions)
    am_gm = tidy(L * sp.Mul(*[ai**2 for ai in a]) ** sp.Rational(1, L))
    d.step("AM-GM lower bound L (prod a_i^2)^(1/L) at prod a_i = x",
           tidy(am_gm.subs(a[0], X / sp.Mul(*a[1:]))))
    d.result = d.step("minimum value", value)
    return d


# --- Table 1 -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CellType:
    r"""One Table 1 cell: the regulariser's exponent (gradient power + 1) and type under
    reading 1 (drift; coupled: inside the drive) and reading 2 (the limit's regulariser;
    ``box`` is the :math:`q = 1` decoupled box radius, else None). At :math:`L = \infty` the
    exponents are limits; ``gradient`` is :math:`\nabla M` (reading 1) at that depth or its
    limit."""

    decay: str
    q: int
    L: sp.Expr
    exponent: sp.Expr
    kind: str
    gradient: sp.Expr
    limit_exponent: sp.Expr | None
    limit_kind: str
    box: sp.Expr | None


def _at_depth(e: sp.Expr, L: sp.Expr) -> sp.Expr:
    """``e`` at depth ``L``; at ``L = oo`` its limit."""
    return sp.limit(e, DEPTH, sp.oo) if L == sp.oo else e.subs(DEPTH, L)


def _gradient_type(gradient: sp.Expr) -> tuple[sp.Expr, str]:
    e = sp.factor(1 + tidy(X * sp.diff(gradient, X) / gradient))
    return e, regularizer_type(e)


@cache
def derive_table_cells() -> Derivation:
    r"""Every cell {coupled, decoupled} x q in {1, 2} x L in {2, oo} under both readings; at
    :math:`L = \infty` the gradient's limit (:math:`\alpha` is :math:`L_1`, :math:`\alpha/x` the
    logarithm). ``result`` maps ``(decay, q, L)`` to a :class:`CellType`.

    >>> cells = derive_table_cells().result
    >>> cells["decoupled", 1, 2].kind, cells["decoupled", 1, sp.oo].kind
    ('L_{3/2}', 'L1')
    """
    d = Derivation("Table 1: regulariser types per cell, both readings")
    reg = derive_decoupled_regularizer().result
    fixed = derive_decoupled_fixed_points().result
    coupled = derive_coupled_fixed_points().result
    cells = {}
    for decay in CELL_DECAYS:
        for q in CELL_QS:
            for L in CELL_DEPTHS:
                if decay == "decoupled":
                    gradient = reg.gradient.subs(Q, q)
                    limit_gradient = fixed.gamma_star.subs(Q, q) if q > 1 else None
                else:
                    gradient = limit_gradient = coupled.gamma_star
                grad_L = tidy(_at_depth(gradient, L))
                exponent, kind = _gradient_type(grad_L)
                box = None
                if limit_gradient is None:
                    # alpha^(-L) -> oo (alpha < 1: no constraint) or 0 (alpha > 1: collapse)
                    # as L -> oo; kept as a function of L.
                    box = fixed.box_radius.subs(DEPTH, L) if L != sp.oo else fixed.box_radius
                    limit_exponent, limit_kind = None, f"box ||x||_inf <= {box}"
                else:
                    limit_exponent, limit_kind = _gradient_type(
                        tidy(_at_depth(limit_gradient, L)))
                cells[decay, q, L] = CellType(decay=decay, q=q, L=L, exponent=exponent,
                                              kind=kind, gradient=grad_L,
                                              limit_exponent=limit_exponent,
                                              limit_kind=limit_kind, box=box)
                d.step(f"{decay}, q = {q}, L = {L}: reading 1 grad M = {grad_L} ({kind}); "
                       f"reading 2: {limit_kind}", grad_L)
    d.result = cells
    return d
