r"""Exponential convergence of separable steepest mirror flows under a Polyak-Łojasiewicz
inequality only (Labarrière et al. 2024, verify/claims/ns/SOURCES.md §5.8: gradient flow on
:math:`\theta = \odot_ju^j` is a mirror flow that converges exponentially under PL), derived from
PL's definition and the flow, never from strong convexity.

* :func:`derive_pl_rate`: with :math:`f - f^\star \le \|\nabla f\|_2^2/(2\alpha)` (PL),
  :math:`M_k \ge \mu` and :math:`\|\nabla f\|_\infty \le B`, the dissipation
  :math:`\dot e = -\sum_kM_k|g_k|^q` (:func:`theory.ns.mirror_convergence.derive_dissipation`)
  gives :math:`\dot e \le -2\alpha\mu B^{q-2}e`, so
  :math:`-\tfrac{d}{dt}\log(f - f^\star) \ge 2\alpha\mu B^{q-2}` at every :math:`t` and
  :math:`f - f^\star \le \Delta e^{-2\alpha\mu B^{q-2}t}`: the strongly convex rate of
  Thm. 4.2 with :math:`\alpha` the PL constant.
* The underdetermined least squares :math:`f(x) = \|Ax - y\|^2/(2N)` (:math:`A` of shape
  :math:`N\times d`, :math:`N < d`, full row rank, :math:`y \in` range): PL with
  :math:`\alpha = s_{\min}(A)^2/N` (the smallest nonzero singular value; attained, so no
  larger constant holds), while its Hessian :math:`A^\top A/N` is singular (not strongly
  convex). At :math:`q = 2` with a constant metric :math:`M \equiv \mu` the late rate is exactly
  :math:`2\mu s_{\min}^2/N`: the bound is sharp.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.ns.mirror_convergence import ALPHA, DELTA, GAMMA, MU, B, M_K, T, derive_dissipation
from theory.ns.reparam_balance import Q

#: Two modes of :math:`AA^\top`: singular values :math:`s_1 < s_2 = s_1 + \delta`, the
#: residual's components :math:`z_i` along them, the sample count :math:`N`.
S1 = sp.Symbol("s_1", positive=True)
GAP = sp.Symbol("delta", positive=True)
Z1 = sp.Symbol("z_1", positive=True)
Z2 = sp.Symbol("z_2", real=True)
N_SAMPLES = sp.Symbol("N", positive=True)


@dataclass(frozen=True)
class PLRate:
    r"""``rate``: the lower bound :math:`2\alpha\mu B^{q-2}` on :math:`-\tfrac{d}{dt}\log(f -
    f^\star)`; ``envelope``: :math:`\Delta e^{-\mathrm{rate}\,t}`; ``least_squares_alpha``:
    the PL constant :math:`s_1^2/N` of :math:`\|Ax - y\|^2/(2N)` (``S1`` the smallest singular
    value); ``sharp``: :math:`\lim_{t\to\infty}-\tfrac{d}{dt}\log f` at :math:`q = 2`,
    :math:`M \equiv \mu`, two modes."""

    rate: sp.Expr
    envelope: sp.Expr
    least_squares_alpha: sp.Expr
    sharp: sp.Expr


@cache
def derive_pl_rate() -> Derivation:
    r"""The rate under PL only, the least-squares PL constant, and its sharpness.

    >>> derive_pl_rate().result.rate
    2*B**(q - 2)*alpha*mu
    >>> derive_pl_rate().result.least_squares_alpha
    s_1**2/N
    """
    d = Derivation("exponential convergence under PL (not strongly convex)")
    e = sp.Symbol("e", positive=True)  # f - f*
    g2 = sp.Symbol("G_2", positive=True)  # ||g||_2^2
    term = derive_dissipation().result  # -M_k |g_k|^q
    d.step("dissipation per coordinate, df/dt = sum_k of", term)
    d.step("M_k >= mu: the per-coordinate term minus -mu |g_k|^q (<= 0)",
           sp.factor(term + MU * GAMMA**Q).subs(M_K, MU + sp.Symbol("m", nonnegative=True)))
    d.step("||g||_q^q >= B^(q-2) ||g||_2^2 (per coordinate |g_k|^q = |g_k|^2 (|g_k|)^(q-2), "
           "|g_k| <= B, q <= 2): e' <= -mu B^(q-2) ||g||_2^2", -MU * B ** (Q - 2) * g2)
    pl = d.step("PL (definition): f - f* <= ||g||_2^2 / (2 alpha), i.e. ||g||_2^2 >= 2 alpha e; "
                "so e' <= ", -MU * B ** (Q - 2) * 2 * ALPHA * e)
    rate = d.step("-e'/e >= rate (no strong convexity used, only PL)", -pl / e)
    y = sp.Function("y")
    envelope = d.step("comparison ODE y' = -rate y, y(0) = Delta (Groenwall: e <= y)",
                      sp.dsolve(sp.Eq(y(T).diff(T), -rate * y(T)), y(T),
                                ics={y(0): DELTA}).rhs)
    # least squares, two modes of A A^T: r = A x - y, z = U^T r, ||g||^2 = sum s_i^2 z_i^2 / N^2
    s2 = S1 + GAP
    grad2 = (S1**2 * Z1**2 + s2**2 * Z2**2) / N_SAMPLES**2
    excess = (Z1**2 + Z2**2) / (2 * N_SAMPLES)
    ratio = d.step("least squares ||Ax - y||^2/(2N), y in range A: ||g||^2 / (2 (f - f*)) "
                   "along the modes of A A^T (s_1 < s_2 = s_1 + delta)",
                   sp.cancel(grad2 / (2 * excess)))
    gap = d.step("ratio - s_1^2 / N: >= 0 (so PL holds with alpha = s_1^2 / N)",
                 sp.factor(ratio - S1**2 / N_SAMPLES))
    if not gap.is_nonnegative:
        raise ArithmeticError(f"the PL gap {gap} is not shown nonnegative")
    alpha = d.step("attained at z_2 = 0: no larger PL constant; alpha =",
                   sp.simplify(ratio.subs(Z2, 0)))
    a1, a2 = sp.symbols("a_1 a_2", real=True)
    d.step("not strongly convex: a wide A (here 1 x 2) has det(A^T A) =",
           sp.Matrix([[a1, a2]]).T.multiply(sp.Matrix([[a1, a2]])).det())
    # q = 2, M = mu: r' = -mu A A^T r / N, z_i(t) = z_i(0) exp(-mu s_i^2 t / N)
    E1, E2 = sp.symbols("E_1 E_2", positive=True)  # exp(-2 mu s_i^2 t / N)
    modes = ((Z1, S1, E1), (Z2, s2, E2))
    f_t = sum(z**2 * E for z, _, E in modes)
    fdot = sum(-2 * MU * s**2 / N_SAMPLES * z**2 * E for z, s, E in modes)  # dE_i/dt
    u = sp.Symbol("u", nonnegative=True)  # E_2 / E_1 = exp(-2 mu delta (delta + 2 s_1) t / N)
    local = d.step("q = 2, M = mu constant: -d log f/dt with z_i(t) = z_i(0) exp(-mu s_i^2 t/N), "
                   "in u = E_2/E_1 = exp(-2 mu delta (delta + 2 s_1) t / N), which -> 0+",
                   sp.cancel((-fdot / f_t).subs(E2, u * E1)))
    sharp = d.step("t -> oo (u -> 0+, z_1(0) != 0): lim -d log f/dt",
                   sp.factor(sp.limit(local, u, 0, "+")))
    d.step("sharp: limit minus rate(alpha = s_1^2/N, q = 2)",
           sp.simplify(sharp - rate.subs({ALPHA: alpha, Q: 2})))
    d.result = PLRate(rate=rate, envelope=envelope, least_squares_alpha=alpha, sharp=sharp)
    return d
