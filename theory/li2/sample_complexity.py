r"""The algebra of Thm. 4's sample-complexity bound (Li2 App. A.3), derived from the sampling
model, not from the paper's formulas.

Sampling model (App. A.3): each of the :math:`M^2` pairs :math:`(h_1,h_2)` is kept
independently with probability :math:`p`, :math:`\xi_{h,j}\sim\mathrm{Bernoulli}(p)`, where the
pairs with product :math:`h` are indexed by :math:`j=1..M` (a group's Cayley table is a Latin
square: each target has exactly :math:`M` pairs). From this alone:

* the Horvitz-Thompson sum :math:`\hat z_h=\tfrac1p\sum_j\xi_{h,j}s_{h,j}` is unbiased;
* the per-target weight :math:`w_h=\hat m_h/(pM)`, :math:`\hat m_h=\sum_j\xi_{h,j}`, has
  :math:`\mathbb E w_h=1` and :math:`\mathbb E w_h^2=1+\tfrac{1-p}{pM}`, the same for every
  :math:`h`, so :math:`\mathbb E\hat{\mathsf A}=\mathsf A` and
  :math:`\mathbb E\hat{\mathsf A}^{(2)}=\mathbb E[w^2]\,\mathsf A` for any operators of the form
  :math:`\tfrac1M\sum_hw_h^{(2)}K_h`;
* on the simplex of block masses, :math:`\hat{\mathcal E}(c)=\tfrac M8c^\top(D+E)c` with
  :math:`D=\mathrm{diag}(1/d_k)`: the slope at a vertex when mass :math:`\varepsilon` leaks to
  another block, and the largest :math:`\|E\|_{op}` that keeps every such slope negative;
* solving :math:`\sqrt{L/(Mp)}<\kappa/d_a` (:math:`L=\log(M/\delta)`) for :math:`p`.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import sympy as sp

from theory.derivation import Derivation

p = sp.Symbol("p", positive=True)
M = sp.Symbol("M", positive=True, integer=True)
d_a = sp.Symbol("d_a", positive=True)
d_b = sp.Symbol("d_b", positive=True)
eta = sp.Symbol("eta", positive=True)
log_term = sp.Symbol("L", positive=True)  # log(M / delta)


def bernoulli_expectation(expr: sp.Expr, xis: Sequence[sp.Symbol], prob: sp.Expr) -> sp.Expr:
    r""":math:`\mathbb E[\text{expr}]` for independent :math:`\xi_j\sim\mathrm{Bernoulli}(p)`:
    expand, use :math:`\xi_j^k=\xi_j` (:math:`k\ge1`), then independence,
    :math:`\mathbb E\prod_{j\in S}\xi_j=p^{|S|}`.

    >>> x = sp.symbols("x0:2"); q = sp.Symbol("q")
    >>> bernoulli_expectation((x[0] + x[1])**2, x, q)
    2*q**2 + 2*q
    """
    poly = sp.Poly(sp.expand(expr), *xis)
    total = sp.Integer(0)
    for monom, coeff in poly.terms():
        total += coeff * prob ** sum(1 for k in monom if k > 0)
    return sp.expand(total)


@lru_cache(maxsize=4)
def derive_weight_moments(check_sizes: Sequence[int] = (1, 2, 3, 4, 5, 6)) -> Derivation:
    r"""Moments of :math:`w=\hat m/(pM)` for :math:`\hat m=\sum_{j=1}^M\xi_j`, general
    :math:`M`, and the Horvitz-Thompson mean. ``result``: ``(E w, E w^2, Var w, E zhat - z)``.

    General :math:`M`: :math:`\mathbb E\hat m^2=\sum_{i,j}\mathbb E\xi_i\xi_j` splits into the
    :math:`M` diagonal terms (:math:`\mathbb E\xi_i^2=p`) and the :math:`M(M-1)` off-diagonal ones
    (:math:`p^2`, independence); the same value is confirmed for each ``check_sizes`` m by
    expanding :math:`(\sum_j\xi_j)^2` directly.
    """
    d = Derivation("moments of the Horvitz-Thompson weight w = m_hat/(pM) (Bernoulli model)")
    i, j = sp.symbols("i j", integer=True, positive=True)
    first = d.step("E m_hat = sum_j E xi_j = sum_{j=1}^M p =", sp.Sum(p, (j, 1, M)).doit())
    diagonal = sp.Sum(p, (i, 1, M)).doit()
    off = sp.Sum(sp.Sum(p**2, (j, 1, M - 1)), (i, 1, M)).doit()
    second = d.step("E m_hat^2 = sum_i E xi_i^2 + sum_i sum_{j != i} E xi_i xi_j "
                    "(xi^2 = xi; M - 1 indices j != i; independence) =",
                    sp.expand(diagonal + off))
    for m in check_sizes:
        xs = sp.symbols(f"xi0:{m}")
        direct = bernoulli_expectation(sp.Add(*xs) ** 2, xs, p)
        if sp.expand(direct - second.subs(M, m)) != 0:
            raise ArithmeticError(f"E m_hat^2 at m = {m}: direct {direct} != {second.subs(M, m)}")
    d.step(f"the same by direct expansion of (xi_1 + ... + xi_m)^2 for m = "
           f"{', '.join(map(str, check_sizes))}")
    mean_w = d.step("E w = E m_hat / (pM) =", sp.cancel(first / (p * M)))
    second_w = d.step("E w^2 = E m_hat^2 / (pM)^2 =", sp.cancel(second / (p * M) ** 2))
    var_w = d.step("Var w = E w^2 - (E w)^2 =", sp.factor(sp.cancel(second_w - mean_w**2)))
    d.step("1/(pM) - Var w =", sp.cancel(1 / (p * M) - var_w))
    s, xi = sp.IndexedBase("s"), sp.Symbol("xi")
    mean_xi = bernoulli_expectation(xi, [xi], p)
    zhat_mean = d.step("E zhat_h = (1/p) sum_j E[xi_hj] s_hj =",
                       sp.Sum(mean_xi * s[j], (j, 1, M)) / p)
    bias = d.step("E zhat_h - z_h =",
                  sp.simplify(sp.expand(zhat_mean.doit()) - sp.Sum(s[j], (j, 1, M)).doit()))
    d.step("every target h has exactly M pairs (Latin square), so E w_h and E w_h^2 are the "
           "same for all h: E[(1/M) sum_h w_h K_h] = E[w] A and "
           "E[(1/M) sum_h w_h^2 K_h] = E[w^2] A, with A = (1/M) sum_h K_h")
    d.result = (mean_w, second_w, var_w, bias)
    return d


@lru_cache(maxsize=1)
def derive_vertex_slope() -> Derivation:
    r"""Leak mass :math:`\varepsilon` from vertex :math:`a` to block :math:`b` of
    :math:`\hat{\mathcal E}(c)=\tfrac M8c^\top(D+E)c`, :math:`c=(1-\varepsilon)e_a+\varepsilon
    e_b`. ``result``: ``(slope at E, slope at E = 0, worst slope factor over ||E|| <= eta,
    the eta at which it vanishes)``.

    The worst case: :math:`E_{ab}-E_{aa}=e_a^\top E(e_b-e_a)\le\|E\|\,\|e_b-e_a\|=\sqrt2\|E\|`
    (Cauchy-Schwarz), attained by :math:`E=\eta\begin{pmatrix}\cos\theta&\sin\theta\\
    \sin\theta&-\cos\theta\end{pmatrix}` (eigenvalues :math:`\pm\eta`) at
    :math:`\theta=3\pi/4`.
    """
    d = Derivation("slope of E(c) = (M/8) c^T (D + E) c at a vertex of the simplex")
    eps = sp.Symbol("epsilon", nonnegative=True)
    e_aa, e_ab, e_bb = sp.symbols("E_aa E_ab E_bb", real=True)
    c = sp.Matrix([1 - eps, eps])
    D = sp.diag(1 / d_a, 1 / d_b)
    E = sp.Matrix([[e_aa, e_ab], [e_ab, e_bb]])
    energy = d.step("E(c) on blocks a, b with c = ((1 - epsilon), epsilon):",
                    sp.expand((M / 8 * c.T * (D + E) * c)[0, 0]))
    slope = d.step("dE/d epsilon at epsilon = 0:", sp.factor(sp.diff(energy, eps).subs(eps, 0)))
    free = d.step("with E = 0 (full data):", sp.simplify(slope.subs({e_aa: 0, e_ab: 0})))
    theta = sp.Symbol("theta", real=True)
    R = sp.Matrix([[sp.cos(theta), sp.sin(theta)], [sp.sin(theta), -sp.cos(theta)]])
    d.step("E = eta R(theta), R = [[cos, sin], [sin, -cos]]: eigenvalues of R",
           sp.Matrix(sorted(R.eigenvals(), key=sp.default_sort_key)).applyfunc(sp.simplify))
    gain = eta * (sp.sin(theta) - sp.cos(theta))
    stationary = [-sp.pi / 4, 3 * sp.pi / 4]
    d.step("E_ab - E_aa = eta (sin theta - cos theta); its derivative at theta = -pi/4, "
           "3 pi/4 (the stationary points mod 2 pi):",
           sp.Matrix([sp.simplify(sp.diff(gain, theta).subs(theta, t)) for t in stationary]))
    worst = d.step("largest E_ab - E_aa over ||E||_op <= eta (the larger stationary value; "
                   "Cauchy-Schwarz, e_a^T E (e_b - e_a) <= ||E|| sqrt(2), bounds every E by "
                   "the same):", sp.Max(*[sp.simplify(gain.subs(theta, t)) for t in stationary]))
    factor = d.step("worst slope / (M/4) = -1/d_a + worst:", -1 / d_a + worst)
    threshold = d.step("every leak slope stays negative iff eta <", sp.solve(factor, eta)[0])
    d.result = (slope, free, factor, threshold)
    return d


@lru_cache(maxsize=8)
def derive_required_ratio(kappa: sp.Expr) -> Derivation:
    r"""Solve :math:`\sqrt{L/(Mp)}=\kappa/d_a` for :math:`p` (the deviation bound E1 against
    the vertex condition :math:`\|E\|<\kappa/d_a`): ``result`` is the critical :math:`p`."""
    d = Derivation(f"training ratio at which sqrt(L/(Mp)) = kappa/d_a, kappa = {kappa}")
    sol = sp.solve(sp.Eq(sp.sqrt(log_term / (M * p)), kappa / d_a), p)
    d.result = d.step("p =", sp.simplify(sol[0]))
    d.step("n = p M^2 =", sp.simplify(d.result * M**2))
    return d
