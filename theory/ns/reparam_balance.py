r"""Balance and mirror metric of the steepest flow on the diagonal reparameterisation
:math:`x = \prod_{i=1}^L w_i` (Never Saddle Example 3.2, Def. 3.3, Lemma 4.4, Def. 4.5,
Thm 4.6), derived from the parameter flow alone.

The flow (verify/claims/ns/SOURCES.md §3), coordinate by coordinate (the model is separable, so one
coordinate is the whole story), with :math:`g = f'(x)`:

.. math:: \dot w_i = -\operatorname{sign}(\partial_{w_i}F + \alpha_c w_i)\,
          |\partial_{w_i}F + \alpha_c w_i|^{q-1} - \alpha_d w_i,
          \qquad \partial_{w_i}F = g\prod_{j\ne i} w_j,

with :math:`\alpha_c` (coupled) or :math:`\alpha_d` (decoupled) weight decay, or neither.
:math:`\partial_{w_i}F` comes from sympy's chain rule on :math:`f(\prod_i w_i)`; the direction
from :func:`theory.ns.steepest.steepest_direction`. Signs are enumerated: :math:`w_i = s_i a_i`,
:math:`g = s_g\gamma` with :math:`a_i, \gamma > 0` and every :math:`s \in \{\pm1\}^{L+1}`, so
``sign`` and ``Abs`` evaluate exactly and nothing is assumed about which pattern occurs.

What is derived here (no closed form of the paper is used):

* which power :math:`r` makes :math:`|w_i|^r - |w_j|^r` constant: the logarithm of the ratio
  of :math:`\tfrac{d}{dt}|w_i|^r` and :math:`\tfrac{d}{dt}|w_j|^r` is linear in
  :math:`\log a_i - \log a_j` with coefficient :math:`r - q` (:func:`derive_balance_exponent`);
  independently, integrating :math:`dw_j/dw_i` (:func:`derive_balance_by_ratio`);
* its time dependence under decoupled decay (an ODE solved by sympy) and under coupled decay
  (:func:`derive_decoupled_balance`, :func:`derive_coupled_balance`);
* the velocity of :math:`x` and the inverse metric :math:`M(x)` with
  :math:`\dot x = -M(x)\operatorname{sign}(g)|g|^{q-1}`, i.e. :math:`\nabla^2R = 1/M`
  (:func:`derive_product_metric`), its closed forms (:func:`derive_metric_two_factors`,
  :func:`derive_metric_zero_balance`);
* the :math:`q = 2` known answers: Woodworth et al. 2020 (:func:`derive_woodworth_depth2`,
  :func:`derive_woodworth_depth_D`); Azulay et al. 2021 is the :math:`L = 2`, :math:`q = 2`
  case of :func:`derive_metric_two_factors`.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.steepest import steepest_direction

DECAYS = ("none", "decoupled", "coupled")

Q = sp.Symbol("q", positive=True)
R_EXP = sp.Symbol("r", positive=True)
GAMMA = sp.Symbol("gamma", positive=True)
ALPHA = sp.Symbol("alpha", positive=True)
U = sp.Symbol("u", nonnegative=True)
T = sp.Symbol("t", nonnegative=True)
A_INT = sp.Symbol("A", nonnegative=True)  # int_0^t alpha(s) ds


def magnitudes(L: int) -> tuple[sp.Symbol, ...]:
    """Positive symbols :math:`a_1..a_L = |w_1|..|w_L|`."""
    _check_depth(L)
    return sp.symbols(f"a1:{L + 1}", positive=True)


def _check_depth(L: int) -> None:
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")


def odd_power(v: sp.Expr, q: sp.Expr) -> sp.Expr:
    r""":math:`\psi_q(v) = \operatorname{sign}(v)|v|^{q-1}`, minus the steepest direction."""
    return -steepest_direction(v, q)


@dataclass(frozen=True)
class ProductFlow:
    r"""The parameter flow at one sign pattern: :math:`w_i = s_i a_i`, :math:`g = s_g\gamma`.

    ``velocities[i]`` is :math:`\dot w_i`; ``magnitude_rates[i]`` is
    :math:`\dot a_i = s_i\dot w_i` (valid where :math:`a_i > 0`).
    """

    L: int
    signs: tuple[int, ...]
    grad_sign: int
    decay: str
    a: tuple[sp.Symbol, ...]
    x: sp.Expr
    velocities: tuple[sp.Expr, ...]

    @property
    def magnitude_rates(self) -> tuple[sp.Expr, ...]:
        return tuple(s * v for s, v in zip(self.signs, self.velocities))

    @property
    def sign_of_gx(self) -> int:
        return self.grad_sign * int(sp.prod(self.signs))


#: Placeholder for :math:`f'(\prod_i w_i)` in the chain rule, replaced by :math:`g` per pattern.
_F_PRIME = sp.Dummy("fprime")


@lru_cache(maxsize=None)
def _chain_rule(L: int) -> tuple[tuple[sp.Symbol, ...], tuple[sp.Expr, ...]]:
    r"""Real symbols :math:`w_1..w_L` and sympy's :math:`\partial_{w_i}f(\prod_j w_j)` for an
    undefined :math:`f`, with :math:`f'` then written :data:`_F_PRIME` (the same for every sign
    pattern, so derived once per depth)."""
    w_free = sp.symbols(f"w1:{L + 1}", real=True)
    f = sp.Function("f")
    return w_free, tuple(
        sp.diff(f(sp.Mul(*w_free)), wi).replace(lambda e: isinstance(e, sp.Subs),
                                                lambda e: _F_PRIME)
        for wi in w_free)


def product_flow(L: int, signs: Sequence[int], grad_sign: int,
                 decay: str = "none") -> ProductFlow:
    r"""The steepest flow of :math:`F(w) = f(\prod_i w_i)` at one sign pattern.

    The chain rule is sympy's derivative of :math:`f(\prod_i w_i)` for an undefined
    :math:`f`, with :math:`f'` then replaced by :math:`g = s_g\gamma`.

    >>> fl = product_flow(2, (1, 1), 1)
    >>> fl.velocities
    (-a2**(q - 1)*gamma**(q - 1), -a1**(q - 1)*gamma**(q - 1))
    """
    _check_depth(L)
    if len(signs) != L or any(s not in (1, -1) for s in (*signs, grad_sign)):
        raise ValueError(f"signs: need {L} entries in {{1, -1}} and grad_sign in {{1, -1}}, "
                         f"got {tuple(signs)}, {grad_sign}")
    if decay not in DECAYS:
        raise ValueError(f"decay: {decay!r} is not one of {', '.join(DECAYS)}")
    a = magnitudes(L)
    w_free, gradient = _chain_rule(L)
    g = grad_sign * GAMMA
    on_pattern = {wf: s * ai for wf, s, ai in zip(w_free, signs, a)}
    # f' and every w_i replaced at once, structurally (a product of symbols: no subs needed).
    at_pattern = {_F_PRIME: g, **on_pattern}
    velocities = []
    for wi, dF in zip(w_free, gradient):
        dF = dF.xreplace(at_pattern)
        w_val = on_pattern[wi]
        argument = dF + (ALPHA * w_val if decay == "coupled" else 0)
        v = steepest_direction(argument, Q) - (ALPHA * w_val if decay == "decoupled" else 0)
        velocities.append(sp.expand_power_base(v, force=True))
    return ProductFlow(L=L, signs=tuple(signs), grad_sign=grad_sign, decay=decay, a=a,
                       x=sp.Mul(*on_pattern.values()), velocities=tuple(velocities))


def sign_patterns(L: int) -> list[tuple[tuple[int, ...], int]]:
    """Every ``(signs, grad_sign)`` in :math:`\\{\\pm1\\}^{L} \\times \\{\\pm1\\}`."""
    _check_depth(L)
    return [(s[:L], s[L]) for s in itertools.product((1, -1), repeat=L + 1)]


def power_rate(flow: ProductFlow, i: int, r: sp.Expr) -> sp.Expr:
    r""":math:`\tfrac{d}{dt}|w_i|^r = r a_i^{r-1}\dot a_i` along ``flow`` (where :math:`a_i>0`)."""
    a = flow.a[i]
    return sp.expand_power_base(r * a ** (r - 1) * flow.magnitude_rates[i], force=True)


def balance_rate(flow: ProductFlow, i: int, j: int, r: sp.Expr) -> sp.Expr:
    r""":math:`\tfrac{d}{dt}(|w_i|^r - |w_j|^r)` along ``flow``."""
    return power_rate(flow, i, r) - power_rate(flow, j, r)


@dataclass(frozen=True)
class BalanceExponent:
    """The exponent ``r`` (in terms of ``q``) for which every pair balance is conserved, and
    the sign patterns over which it was derived."""

    r: sp.Expr
    patterns: int


@lru_cache(maxsize=None)
def derive_balance_exponent(L: int) -> Derivation:
    r"""Which power :math:`r` makes :math:`|w_i|^r - |w_j|^r` constant along the flow.

    For every sign pattern and every pair :math:`(1, j)`: form
    :math:`\rho = \tfrac{d}{dt}a_1^r \big/ \tfrac{d}{dt}a_j^r`, expand :math:`\log\rho` and read
    its coefficient of :math:`\log a_1`; :math:`\rho \equiv 1` for all magnitudes iff that
    coefficient vanishes. The solutions over all patterns and pairs must agree. ``result`` is a
    :class:`BalanceExponent`.

    >>> derive_balance_exponent(2).result.r
    q
    """
    d = Derivation(f"conserved power of the steepest flow on x = w_1 ... w_{L}")
    positive = product_flow(L, (1,) * L, 1)
    d.step("parameter flow on the positive orthant, g > 0: wdot_i", sp.Matrix(positive.velocities))
    d.step("d/dt |w_1|^r there", power_rate(positive, 0, R_EXP))
    solutions = set()
    for signs, grad_sign in sign_patterns(L):
        flow = product_flow(L, signs, grad_sign)
        for j in range(1, L):
            ratio = power_rate(flow, 0, R_EXP) / power_rate(flow, j, R_EXP)
            coefficient = sp.expand(sp.expand_log(sp.log(ratio), force=True)).coeff(
                sp.log(flow.a[0]))
            solutions.update(sp.solve(sp.Eq(coefficient, 0), R_EXP))
            if signs == (1,) * L and grad_sign == 1 and j == 1:
                d.step("ratio rho = (d/dt a_1^r) / (d/dt a_2^r) (positive orthant)", ratio)
                d.step("coefficient of log a_1 in log rho", coefficient)
    if len(solutions) != 1:
        raise ArithmeticError(f"sign patterns disagree on the conserved power: {solutions}")
    (r,) = solutions
    d.step(f"the unique solution, the same for all {2 ** (L + 1)} sign patterns and pairs", r)
    d.result = BalanceExponent(r=r, patterns=2 ** (L + 1))
    return d


@lru_cache(maxsize=None)
def derive_balance_by_ratio() -> Derivation:
    r"""Second route: integrate :math:`da_j/da_i = \dot a_j/\dot a_i` (positive orthant, any
    depth: the ratio involves only :math:`a_i, a_j`) with ``dsolve``; ``result`` is the
    conserved function :math:`a_j^q - a_i^q` read off from the general solution.

    >>> derive_balance_by_ratio().result
    -a1**q + a2**q
    """
    d = Derivation("integrate the ratio of the component flows (L = 3 shown; any L)")
    flow = product_flow(3, (1, 1, 1), 1)
    a1, a2 = flow.a[0], flow.a[1]
    slope = d.step("da_2/da_1 = adot_2 / adot_1",
                   sp.powsimp(flow.magnitude_rates[1] / flow.magnitude_rates[0], force=True))
    z, y = sp.Symbol("z", positive=True), sp.Function("y")
    ode = sp.Eq(y(z).diff(z), slope.subs({a1: z, a2: y(z)}))
    solution = d.step("dsolve: a_2 as a function of a_1 = z", sp.dsolve(ode, y(z)))
    C1 = sp.Symbol("C1")
    constant = sp.solve(sp.Eq(solution.rhs ** Q, y(z) ** Q), C1)
    d.step("solve the general solution for its constant (C1 in terms of z, y)", constant[0])
    conserved = sp.expand(Q * constant[0]).subs({z: a1, y(z): a2})
    d.result = d.step("conserved: q C1 = a_2^q - a_1^q", conserved)
    return d


def _integrate_linearly(e: sp.Expr, t: sp.Symbol) -> sp.Expr:
    r"""Every indefinite ``Integral`` over ``t`` in ``e`` by linearity: the factor free of
    ``t`` is taken out, :math:`\int c\,f(t)dt = c\int f(t)dt`; what is left is integrated
    by sympy unless it holds an undefined function (then it stays an ``Integral``)."""
    def integrate(integral: sp.Integral) -> sp.Expr:
        if integral.limits != ((t,),):
            return integral
        constant, rest = integral.function.as_independent(t, as_Add=False)
        if constant == 0:
            return sp.Integer(0)
        inner = sp.Integral(rest, t)
        return constant * (inner if rest.atoms(sp.core.function.AppliedUndef) else inner.doit())
    return e.replace(lambda s: isinstance(s, sp.Integral), integrate)


@lru_cache(maxsize=None)
def derive_decoupled_balance(L: int) -> Derivation:
    r"""Time dependence of :math:`D = |w_i|^q - |w_j|^q` under decoupled decay.

    Along the flow with :math:`-\alpha w_i` added, :math:`\dot D/D` is reduced for every sign
    pattern and pair; it must be one expression, free of :math:`w` and :math:`g`. Then
    ``dsolve`` solves :math:`\dot D = (\dot D/D)\,D` with a time-dependent :math:`\alpha(t)`.
    ``result`` is the factor :math:`D(t)/D(0)` written in :math:`A = \int_0^t\alpha`.

    >>> derive_decoupled_balance(2).result
    exp(-A*q)
    """
    d = Derivation(f"balance under decoupled weight decay, x = w_1 ... w_{L}")
    rates = set()
    for signs, grad_sign in sign_patterns(L):
        flow = product_flow(L, signs, grad_sign, "decoupled")
        for j in range(1, L):
            D = flow.a[0] ** Q - flow.a[j] ** Q
            rates.add(sp.cancel(sp.expand(balance_rate(flow, 0, j, Q)) / D))
    if len(rates) != 1:
        raise ArithmeticError(f"dD/dt / D differs between patterns: {rates}")
    (rate,) = rates
    d.step(f"dD/dt / D, the same for all {2 ** (L + 1)} sign patterns and pairs", rate)
    alpha_t, Dt = sp.Function("alpha"), sp.Function("D")
    ode = sp.Eq(Dt(T).diff(T), rate.subs(ALPHA, alpha_t(T)) * Dt(T))
    # D' = (rate) D is first-order linear: naming that hint and skipping odesimp (most of
    # dsolve's cost) gives the same solution C1 exp(-q int alpha) as the default hint. Its
    # integrals are left unevaluated ("_Integral") and done by linearity here: integrate()
    # would only pull the constant factor out of int q alpha(t) dt too, after a long, failing
    # search (Meijer G, heuristics) for an antiderivative of the undefined alpha.
    solution = d.step("dsolve with alpha = alpha(t)", _integrate_linearly(
        sp.dsolve(ode, Dt(T), hint="1st_linear_Integral", simplify=False), T))
    integral = sp.Integral(alpha_t(T), T)
    factor = solution.rhs / solution.rhs.subs(integral, 0)
    if factor.free_symbols & {sp.Symbol("C1")}:
        raise ArithmeticError(f"D(t)/D(0) still holds the integration constant: {factor}")
    d.result = d.step("D(t) / D(0) with A = int_0^t alpha(s) ds", factor.subs(integral, A_INT))
    return d


def _canonical_sign_factor(e: sp.Expr) -> sp.Expr:
    r"""``Abs(v)`` or ``sign(v)`` with the common factor of ``v`` pulled out (sympy then drops
    a positive one) and ``sign(-v)`` written :math:`-\operatorname{sign}(v)`."""
    e = e.func(sp.factor_terms(e.args[0]))
    if isinstance(e, sp.sign) and e.args[0].could_extract_minus_sign():
        return -sp.sign(-e.args[0])
    return e


def _reduce_signed(e: sp.Expr) -> sp.Expr:
    """``e`` reduced to 0 if it is identically 0: first a cheap normal form (common factors out
    of every ``Abs``/``sign``, one sign convention, powers of products split and expanded),
    which settles the sign-pattern checks here; else ``simplify``, as a fallback."""
    cheap = sp.expand(sp.powsimp(sp.expand_power_base(
        e.replace(lambda s: isinstance(s, (sp.Abs, sp.sign)), _canonical_sign_factor),
        force=True), force=True))
    return cheap if cheap == 0 else sp.simplify(sp.powsimp(e, force=True))


@lru_cache(maxsize=None)
def derive_coupled_balance() -> Derivation:
    r"""Time dependence of :math:`D = |w_1|^q - |w_2|^q` under coupled decay (:math:`L = 2`;
    :math:`x = w_1w_2`).

    Writes :math:`\tfrac{d}{dt}a_i^q` as :math:`-q\,\psi_q(\sigma\gamma|x| + \alpha a_i^2)`
    (:math:`\sigma = \operatorname{sign}(gx)`), checks that form for every sign pattern,
    reduces :math:`\dot D` at :math:`q = 2` to :math:`-2\alpha D`, and evaluates
    :math:`\partial\dot D/\partial\gamma` at a rational point for :math:`q = 3/2`.
    ``result`` is ``(rate, rate at q = 2, d rate / d gamma at the witness)``.

    >>> derive_coupled_balance().result[1]
    -2*alpha*(a1 - a2)*(a1 + a2)
    """
    d = Derivation("balance under coupled weight decay, x = w_1 w_2")
    sigma = sp.Symbol("sigma")
    forms = set()
    for signs, grad_sign in sign_patterns(2):
        flow = product_flow(2, signs, grad_sign, "coupled")
        a = flow.a
        X = a[0] * a[1]
        for i in range(2):
            candidate = -Q * odd_power(flow.sign_of_gx * GAMMA * X + ALPHA * a[i] ** 2, Q)
            difference = sp.expand_power_base(power_rate(flow, i, Q) - candidate, force=True)
            forms.add(_reduce_signed(difference))
    if forms != {0}:
        raise ArithmeticError(f"d/dt a_i^q is not -q psi(sigma gamma |x| + alpha a_i^2): {forms}")
    a1, a2 = magnitudes(2)
    X = a1 * a2
    rate = d.step("dD/dt = -q [psi(sigma gamma |x| + alpha a_1^2) - psi(... a_2^2)], checked on "
                  "all 8 sign patterns",
                  -Q * (odd_power(sigma * GAMMA * X + ALPHA * a1**2, Q)
                        - odd_power(sigma * GAMMA * X + ALPHA * a2**2, Q)))
    # sign(v)|v| = sign(v)^2 v, and sign(v)^2 v = v for every real v (both sides 0 at v = 0).
    at_two = rate.subs(Q, 2).replace(sp.Abs, lambda v: sp.sign(v) * v).replace(
        lambda e: e.is_Pow and isinstance(e.base, sp.sign) and e.exp == 2, lambda e: 1)
    at_two = d.step("q = 2: psi(v) = sign(v)|v| = v", sp.factor(sp.expand(at_two)))
    # With sigma = 1 every argument is a sum of positive symbols: sign and Abs evaluate.
    slope = sp.diff(rate.subs(sigma, 1), GAMMA)
    witness = {Q: sp.Rational(3, 2), GAMMA: 1, ALPHA: 1, a1: 1, a2: 2}
    slope = d.step("d(dD/dt)/d gamma at q = 3/2, sigma = gamma = alpha = a_1 = 1, a_2 = 2: "
                   "nonzero, so D(t) depends on the loss", sp.radsimp(slope.subs(witness)))
    d.result = (rate, at_two, slope)
    return d


@dataclass(frozen=True)
class ProductMetric:
    r"""The inverse metric of the flow in :math:`x`: :math:`\dot x = -M\psi_q(g)`, with
    :math:`M = P'(u)`, :math:`P(u) = \prod_i(u + c_i)`, :math:`P(u) = |x|^q`,
    :math:`u = \min_i|w_i|^q` and balance offsets :math:`c_i = |w_i|^q - u \ge 0`."""

    L: int
    c: tuple[sp.Symbol, ...]
    P: sp.Expr
    M: sp.Expr


@lru_cache(maxsize=None)
def derive_product_metric(L: int) -> Derivation:
    r"""The velocity of :math:`x = \prod_i w_i` along the parameter flow, as a function of
    :math:`x` and the conserved balance offsets.

    Chain rule :math:`\dot x = \sum_i(\prod_{j\ne i}w_j)\dot w_i`, checked to equal
    :math:`-\psi_q(g)\sum_i\prod_{j\ne i}a_j^q` on every sign pattern; then :math:`a_j^q = u +
    c_j` (conserved offsets, :func:`derive_balance_exponent`) turns the sum into
    :math:`P'(u)` and :math:`|x|^q = \prod_j a_j^q` into :math:`P(u)`. ``result`` is a
    :class:`ProductMetric`.

    >>> derive_product_metric(2).result.M
    c1 + c2 + 2*u
    """
    d = Derivation(f"inverse metric of the steepest flow on x = w_1 ... w_{L}")
    a = magnitudes(L)
    summed = sp.Add(*[sp.Mul(*[a[j] ** Q for j in range(L) if j != i]) for i in range(L)])
    d.step("candidate: xdot = -psi_q(g) * sum_i prod_{j != i} a_j^q", summed)
    for signs, grad_sign in sign_patterns(L):
        flow = product_flow(L, signs, grad_sign)
        xdot = sum(sp.diff(flow.x, ai) / s * v
                   for ai, s, v in zip(a, signs, flow.velocities))
        residual = sp.powsimp(sp.expand_power_base(sp.expand(
            xdot + odd_power(grad_sign * GAMMA, Q) * summed), force=True), force=True)
        if sp.expand(residual) != 0:
            raise ArithmeticError(f"xdot does not have the candidate form at {signs}, "
                                  f"{grad_sign}: residual {residual}")
    d.step(f"xdot + psi_q(g) * sum, expanded: 0 on all {2 ** (L + 1)} sign patterns",
           sp.Integer(0))
    c = sp.symbols(f"c1:{L + 1}", nonnegative=True)
    P = d.step("P(u) = prod_j (u + c_j) = |x|^q, with a_j^q = u + c_j",
               sp.Mul(*[U + cj for cj in c]))
    M = d.step("the sum with a_j^q = u + c_j", sp.expand(summed.subs(
        {a[j] ** Q: U + c[j] for j in range(L)})))
    d.step("minus dP/du: 0, so M = P'(u)", sp.expand(M - sp.diff(P, U)))
    d.result = ProductMetric(L=L, c=c, P=P, M=M)
    return d


@dataclass(frozen=True)
class TwoFactorMetric:
    r""":math:`L = 2` with offsets :math:`(0, \lambda)`: ``M`` (inverse metric, a function of
    ``x`` and ``lam``), ``hessian`` :math:`= 1/M`, ``gradient`` :math:`\nabla R` with
    :math:`\nabla R(0) = 0`, and the :math:`q = 2` forms ``gradient_q2``, ``potential_q2``."""

    x: sp.Symbol
    lam: sp.Symbol
    M: sp.Expr
    hessian: sp.Expr
    gradient: sp.Expr
    gradient_q2: sp.Expr
    potential_q2: sp.Expr


def _two_factor_gradient(hessian: sp.Expr, x: sp.Symbol, lam: sp.Symbol) -> sp.Expr:
    r""":math:`\int_0^x dz/\sqrt{\lambda^2 + 4z^q}` as
    :math:`\tfrac x\lambda\,{}_2F_1(\tfrac12, \tfrac1q; 1 + \tfrac1q; s)`,
    :math:`s = -4x^q/\lambda^2` (what ``sp.integrate`` returns via Meijer G, at a fraction of
    its cost), checked here by differentiating term by term: :math:`\lambda/M =
    (1 - s)^{-1/2} = \sum_n (\tfrac12)_n s^n/n!` (checked by squaring; both sides are
    positive), and :math:`\tfrac{d}{dx}[x s^n] = (1 + qn)s^n` with
    :math:`(1/q)_n(1 + qn)/(1 + 1/q)_n = 1`, so the series' derivative is that of
    :math:`\lambda/M`; the value at 0 is 0. On the principal branch the hypergeometric series
    continues analytically to :math:`s \le -1`."""
    half, b = sp.S.Half, 1 / Q
    s = -4 * x**Q / lam**2
    if sp.cancel((hessian * lam) ** 2 * (1 - s)) != 1:
        raise ArithmeticError(f"lambda / M is not (1 - s)^(-1/2): {hessian}")
    n = sp.Symbol("n", integer=True, nonnegative=True)
    term = x / lam * sp.rf(half, n) * sp.rf(b, n) / sp.rf((Q + 1) / Q, n) * s**n \
        / sp.factorial(n)
    series = sp.rf(half, n) * s**n / sp.factorial(n) / lam
    if sp.gammasimp(sp.diff(term, x) / series) != 1:
        raise ArithmeticError("the hypergeometric antiderivative's series differs from 1/M's")
    return x * sp.hyper((half, b), ((Q + 1) / Q,), s) / lam


@lru_cache(maxsize=None)
def derive_metric_two_factors() -> Derivation:
    r"""Closed forms for :math:`x = w_1w_2` (:math:`m \odot w` of Example 3.2), :math:`x > 0`
    (:math:`M` is even in :math:`x`, :math:`\nabla R` odd).

    Solve :math:`P(u) = u(u + \lambda) = x^q` for :math:`u \ge 0`, :math:`M = P'(u)`;
    :math:`\nabla R = \int_0^x dz/M(z)` (a hypergeometric function for symbolic
    :math:`q`, :func:`_two_factor_gradient`); at :math:`q = 2` the integral and
    :math:`R = \int_0^x\nabla R` by sympy. ``result`` is a
    :class:`TwoFactorMetric`.

    >>> derive_metric_two_factors().result.M
    sqrt(lambda**2 + 4*x**q)
    """
    d = Derivation("two factors: inverse metric and mirror potential")
    base = derive_product_metric(2).result
    x, lam = sp.Symbol("x", positive=True), sp.Symbol("lambda", positive=True)
    P = base.P.subs({base.c[0]: 0, base.c[1]: lam})
    roots = sp.solve(sp.Eq(P, x**Q), U)
    (u,) = [r for r in roots if r.subs({x: 1, lam: 1, Q: 2}).is_nonnegative]
    d.step("nonnegative root u of u (u + lambda) = x^q", u)
    M = d.step("M = P'(u)", sp.simplify(sp.diff(P, U).subs(U, u)))
    hessian = d.step("Hessian of R: 1 / M", 1 / M)
    z = sp.Symbol("z", positive=True)
    gradient = d.step("grad R = int_0^x dz / M(z), hypergeometric form",
                      _two_factor_gradient(hessian, x, lam))
    gradient_q2 = d.step("q = 2: grad R", sp.integrate(hessian.subs({Q: 2, x: z}), (z, 0, x)))
    potential_q2 = d.step("q = 2: R = int_0^x grad R",
                          sp.integrate(gradient_q2.subs(x, z), (z, 0, x)))
    d.result = TwoFactorMetric(x=x, lam=lam, M=M, hessian=hessian, gradient=gradient,
                               gradient_q2=gradient_q2, potential_q2=potential_q2)
    return d


@lru_cache(maxsize=None)
def derive_metric_zero_balance(L: int) -> Derivation:
    r"""All offsets zero (:math:`|w_i| = |w_j|`): :math:`u = |x|^{q/L}` and
    :math:`M = L|x|^{m}`; ``result`` is ``(M, m)`` with the exponent :math:`m` read off as a
    power of :math:`|x|`.

    >>> derive_metric_zero_balance(3).result
    (3*x**(2*q/3), 2*q/3)
    """
    d = Derivation(f"zero balance, x = w_1 ... w_{L}: the metric exponent")
    base = derive_product_metric(L).result
    x = sp.Symbol("x", positive=True)
    zero = {cj: 0 for cj in base.c}
    # simplify=False: the roots of u^L = x^q come out as plain powers of x already; sympy's
    # simplify pass over them is the solve's main cost and changes nothing here.
    (u,) = [r for r in sp.solve(sp.Eq(base.P.subs(zero), x**Q), U, simplify=False)
            if r.is_positive]
    d.step("u from u^L = x^q", u)
    M = d.step("M = P'(u)", sp.powsimp(sp.diff(base.P.subs(zero), U).subs(U, u), force=True))
    # M is a constant times a power of x, so x M'/M is a ratio of monomials: cancel reduces it.
    m = d.step("exponent of x in M: x dM/dx / M", sp.cancel(x * sp.diff(M, x) / M))
    d.result = (M, m)
    return d


@lru_cache(maxsize=None)
def derive_woodworth_depth2() -> Derivation:
    r"""Woodworth et al. 2020, depth 2: :math:`\beta = w_+^2 - w_-^2`, gradient flow.

    Find a conserved monomial :math:`w_+^kw_-^l` (its logarithmic derivative must vanish),
    then :math:`\dot\beta = -\mu(\beta)g` and write :math:`\mu` in :math:`\beta` and the
    conserved :math:`\kappa = w_+w_-`. ``result`` is ``(mu, kappa, beta)``: the inverse
    metric (:math:`\nabla^2R = 1/\mu`) and the symbols it is written in.

    >>> derive_woodworth_depth2().result[0]
    4*sqrt(beta**2 + 4*kappa**2)
    """
    d = Derivation("Woodworth et al. 2020, depth 2: beta = w_+^2 - w_-^2")
    wp, wm, g = sp.symbols("w_p w_m g", real=True)
    k, l_ = sp.symbols("k l", real=True)
    f = sp.Function("f")
    beta_expr = wp**2 - wm**2
    grads = [sp.diff(f(beta_expr), v).replace(lambda e: isinstance(e, sp.Subs), lambda e: g)
             for v in (wp, wm)]
    vel = [steepest_direction(gr, 2) for gr in grads]
    vel = d.step("gradient flow: (wdot_+, wdot_-)", sp.Matrix([sp.simplify(v) for v in vel]))
    log_rate = d.step("d/dt log(w_+^k w_-^l) = k wdot_+/w_+ + l wdot_-/w_-",
                      sp.simplify(k * vel[0] / wp + l_ * vel[1] / wm))
    (solution,) = sp.solve(sp.Eq(log_rate, 0), k)
    d.step("conserved monomial needs k =", solution)
    beta_dot = d.step("betadot = 2 w_+ wdot_+ - 2 w_- wdot_-",
                      sp.factor(sp.expand(2 * wp * vel[0] - 2 * wm * vel[1])))
    beta, kappa = sp.symbols("beta kappa", positive=True)
    squares = d.step("(w_+^2 + w_-^2)^2 - (beta^2 + 4 kappa^2) with kappa = w_+ w_-",
                     sp.expand((wp**2 + wm**2) ** 2 - (beta_expr**2 + 4 * (wp * wm) ** 2)))
    if squares != 0:
        raise ArithmeticError("w_+^2 + w_-^2 is not sqrt(beta^2 + 4 kappa^2)")
    mu = d.step("inverse metric mu = -betadot / g in (beta, kappa)",
                sp.factor(-beta_dot / g).subs(wp**2 + wm**2, sp.sqrt(beta**2 + 4 * kappa**2)))
    d.result = (mu, kappa, beta)
    return d


@lru_cache(maxsize=None)
def derive_woodworth_depth_D(D: int) -> Derivation:
    r"""Woodworth et al. 2020, depth :math:`D \ge 3`: the gradient flow of
    :math:`f(w_+^D - w_-^D)` in :math:`w_+`, and :math:`\tfrac{d}{dt}w_+^{2-D}`. ``result`` is
    that rate in terms of :math:`g = f'(\beta)` (a constant multiple of :math:`g`).

    >>> derive_woodworth_depth_D(3).result
    3*g
    """
    if not (isinstance(D, int) and D >= 3):
        raise ValueError(f"D: {D!r} must be an integer >= 3")
    d = Derivation(f"Woodworth et al. 2020, depth D = {D}")
    wp, wm, g = sp.Symbol("w_p", positive=True), sp.Symbol("w_m", positive=True), sp.Symbol("g")
    f = sp.Function("f")
    grad = sp.diff(f(wp**D - wm**D), wp).replace(lambda e: isinstance(e, sp.Subs), lambda e: g)
    vel = d.step("wdot_+ (gradient flow; sign(g)|g| = g)",
                 sp.simplify(steepest_direction(grad, 2)))
    rate = d.step("d/dt w_+^(2-D) = (2-D) w_+^(1-D) wdot_+",
                  sp.simplify(sp.diff(wp ** (2 - D), wp) * vel))
    d.result = rate
    return d
