r"""Stage I of Li2 (App. C) in exact arithmetic: the small-time series of :math:`G_{\tilde F}`
(Prop. 1 Eq. 3, Prop. 2, Eq. 55), the :math:`\eta = 0` solution in singular coordinates
(Prop. 3), and the smallest non-realisable instance.

Everything starts from the top-layer objective of App. C,

.. math:: J(\tilde F, V) = \tfrac12\big(\|\tilde Y - \tilde FV\|_F^2 + \eta\|V\|_F^2\big),
          \qquad \dot V = -\partial J/\partial V,
          \qquad G_{\tilde F} = -\partial J/\partial\tilde F,

each derivative taken entry by entry; no closed form of the paper is used. The small-time
series comes from Picard iteration of the flow, :math:`V_{k+1}(t) = V_0 + \int_0^t
f(V_k(s))\,ds`: the :math:`k`-th iterate of a polynomial field agrees with :math:`V(t)` through
:math:`t^k`, so :math:`k` iterations give the Taylor polynomial of order :math:`k`.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.polys.rings import PolyElement, ring

from theory.derivation import Derivation
from theory.matrices import centering_matrix, gradient, symbolic_matrix
from theory.li2.ridge import top_layer_objective


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name}: {value!r} must be an integer >= 1")


def truncate_in_t(p: PolyElement, t_index: int, order: int) -> PolyElement:
    """``p`` with every monomial of degree above ``order`` in generator ``t_index`` dropped."""
    return p.ring.from_dict({m: c for m, c in p.items() if m[t_index] <= order})


def _integrate_from_zero(p: PolyElement, t_index: int) -> PolyElement:
    r""":math:`\int_0^t p\,dt` term by term (:math:`t^k \to t^{k+1}/(k+1)`)."""
    out = {}
    for m, c in p.items():
        k = m[t_index]
        out[(*m[:t_index], k + 1, *m[t_index + 1:])] = c / (k + 1)
    return p.ring.from_dict(out)


def coefficients(m: sp.Matrix, t: sp.Symbol, alpha: sp.Symbol) -> dict[tuple[int, int],
                                                                        sp.Matrix]:
    r"""The coefficient matrices :math:`C_{ab}` of :math:`m = \sum_{a,b} t^a\alpha^bC_{ab}`
    (entries polynomial in ``t``, ``alpha`` and their other symbols), computed in the sparse
    polynomial ring over Q (``Poly`` of the expanded Expr trees costs seconds here).

    >>> t, a, x = sp.symbols("t alpha x")
    >>> coefficients(sp.Matrix([[x * a + t], [t * a**2]]), t, a)
    {(0, 1): Matrix([
    [x],
    [0]]), (1, 0): Matrix([
    [1],
    [0]]), (1, 2): Matrix([
    [0],
    [1]])}
    """
    others = sorted(set().union(*(e.free_symbols for e in m)) - {t, alpha}, key=str)
    R = ring([t, alpha, *others], sp.QQ)[0]
    groups: dict[tuple[int, int], dict[int, dict]] = {}
    for idx, entry in enumerate(m):
        for mono, c in R.from_expr(entry).items():
            groups.setdefault(mono[:2], {}).setdefault(idx, {})[(0, 0, *mono[2:])] = c
    out = {}
    for key in sorted(groups):
        out[key] = sp.zeros(*m.shape)
        for idx, terms in groups[key].items():
            out[key][idx] = R.from_dict(terms).as_expr()
    return out


@dataclass(frozen=True)
class SmallTimeSeries:
    r"""The Taylor polynomial of :math:`G_{\tilde F}(t)` through :math:`t^{\rm order}` from
    :math:`V_0 = \alpha U`, in the symbols ``Ft`` (n x K), ``Yt`` (n x M), ``U`` (K x M),
    ``t``, ``alpha`` and ``eta`` (weight decay, any value); with the derivatives it came from,
    :math:`-\partial J/\partial V` and :math:`-\partial J/\partial\tilde F` at a free ``Vs``."""

    Ft: sp.Matrix
    Yt: sp.Matrix
    U: sp.Matrix
    t: sp.Symbol
    alpha: sp.Symbol
    eta: sp.Symbol
    order: int
    V: sp.Matrix
    G: sp.Matrix
    table: dict[tuple[int, int], sp.Matrix]  # C_ab: the coefficient of t^a alpha^b in G
    Vs: sp.Matrix  # a free K x M matrix V, in which the two derivatives below are written
    field: sp.Matrix  # -dJ/dV (the flow's velocity)
    G_of_V: sp.Matrix  # -dJ/dFt

    def coefficients(self) -> dict[tuple[int, int], sp.Matrix]:
        r""":math:`C_{ab}`: the coefficient of :math:`t^a\alpha^b` in ``G``."""
        return dict(self.table)

    def part(self, *, t_order: int | None = None, alpha_order: int | None = None) -> sp.Matrix:
        r"""The terms of ``G`` with the given power of ``t`` and/or of ``alpha`` (all powers of
        the one left as None)."""
        out = sp.zeros(*self.G.shape)
        for (a, b), c in self.coefficients().items():
            if (t_order is None or a == t_order) and (alpha_order is None or b == alpha_order):
                out += self.t**a * self.alpha**b * c
        return out


def derive_small_time_series(n: int, K: int, M: int, order: int = 1) -> Derivation:
    r"""Derive the Taylor polynomial of :math:`G_{\tilde F}(t)` through :math:`t^{\rm order}`
    for symbolic :math:`\tilde F, \tilde Y, U` with :math:`V(0) = \alpha U` and symbolic
    :math:`\eta`. ``result`` is a :class:`SmallTimeSeries`.

    >>> s = derive_small_time_series(1, 1, 1).result
    >>> sp.factor(s.coefficients()[(1, 0)][0])
    F_00*Y_00**2
    """
    _check_sizes(n=n, K=K, M=M, order=order)
    d = Derivation(f"small-time series of G_Ft through t^{order} (n={n}, K={K}, M={M})")
    Ft, Yt = symbolic_matrix("F", n, K), symbolic_matrix("Y", n, M)
    U, Vs = symbolic_matrix("U", K, M), symbolic_matrix("V", K, M)
    t, alpha = sp.symbols("t alpha", positive=True)
    eta = sp.Symbol("eta", nonnegative=True)
    J = d.step("objective J = 1/2 (||Yt - Ft V||^2 + eta ||V||^2) (App. C)",
               top_layer_objective(Ft, Vs, Yt, eta))
    field = d.step("flow field f(V) = -dJ/dV, entry by entry", (-gradient(J, Vs)).applyfunc(
        sp.expand))
    G_of_V = d.step("G_Ft = -dJ/dFt, entry by entry (a function of V)",
                    (-gradient(J, Ft)).applyfunc(sp.expand))
    d.step("V(0) = alpha U (A3: i.i.d. N(0, alpha^2) entries, U of unit scale)", alpha * U)
    # The iteration runs in the sparse polynomial ring over Q in every symbol: expanding the
    # products as Expr trees costs seconds at n=3, K=2, M=2; here it is exact and immediate.
    R = ring([*Ft, *Yt, *U, *Vs, t, alpha, eta], sp.QQ)[0]
    it = R.gens.index(R(t))
    f_ring = [R.from_expr(e) for e in field]
    G_ring = [R.from_expr(e) for e in G_of_V]
    V_gens = [R(v) for v in Vs]
    V = [R.from_expr(alpha * u) for u in U]
    for k in range(1, order + 1):
        at_V = list(zip(V_gens, V))
        V = [truncate_in_t(R.from_expr(alpha * u) + _integrate_from_zero(f.compose(at_V), it), it,
                       order) for u, f in zip(U, f_ring)]
        d.step(f"Picard iterate {k}: V0 + int_0^t f(V_{k - 1}(s)) ds (exact through t^{k})",
               sp.Matrix(K, M, [v.as_expr() for v in V]))
    at_V = list(zip(V_gens, V))
    G = d.step(f"G_Ft(t) = G_Ft(V(t)) through t^{order}",
               sp.Matrix(n, K, [truncate_in_t(g.compose(at_V), it, order).as_expr()
                                for g in G_ring]))
    V = sp.Matrix(K, M, [v.as_expr() for v in V])
    series = SmallTimeSeries(Ft=Ft, Yt=Yt, U=U, t=t, alpha=alpha, eta=eta, order=order, V=V,
                             G=G, table=coefficients(G, t, alpha), Vs=Vs, field=field,
                             G_of_V=G_of_V)
    for (a, b), c in series.coefficients().items():
        d.step(f"coefficient of t^{a} alpha^{b}", c)
    d.result = series
    return d


@dataclass(frozen=True)
class ModeSolution:
    r"""The :math:`\eta = 0` flow in singular coordinates: :math:`\tilde F =
    [\mathrm{diag}(\sigma); 0]` (n x K, n = K + extra), :math:`\tilde Y = \tilde FC` (A2),
    :math:`V(0) = U`; ``G`` is :math:`G_{\tilde F}(t)` in closed form (n x K), whose entry
    :math:`(i, i')` is the component on the singular directions :math:`u_i, w_{i'}`."""

    sigma: tuple[sp.Symbol, ...]
    C: sp.Matrix
    U: sp.Matrix
    t: sp.Symbol
    V: sp.Matrix
    G: sp.Matrix


def derive_eta0_modes(K: int, M: int, extra: int = 1) -> Derivation:
    r"""Solve :math:`\dot V = -\partial J/\partial V` at :math:`\eta = 0` for
    :math:`\tilde F = [\mathrm{diag}(\sigma_1..\sigma_K); 0_{{\rm extra}\times K}]` and a
    realisable :math:`\tilde Y = \tilde FC` (A2), entry by entry with ``dsolve``, and form
    :math:`G_{\tilde F}(t) = -\partial J/\partial\tilde F` there. Any full-rank
    :math:`\tilde F = U\Sigma W^\top` reduces to this one: the flow commutes with
    :math:`V \mapsto W^\top V` and :math:`G \mapsto U^\top GW`. ``result``: :class:`ModeSolution`.
    """
    _check_sizes(K=K, M=M, extra=extra)
    d = Derivation(f"eta = 0 flow in singular coordinates (K={K}, M={M}, n={K + extra})")
    sigma = sp.symbols(f"sigma1:{K + 1}", positive=True)
    t = sp.Symbol("t", positive=True)
    Fs, Vs = symbolic_matrix("F", K + extra, K), symbolic_matrix("V", K, M)
    C, U = symbolic_matrix("C", K, M), symbolic_matrix("U", K, M)
    Ft = d.step("Ft = [diag(sigma); 0]", sp.Matrix.vstack(sp.diag(*sigma),
                                                         sp.zeros(extra, K)))
    Yt = d.step("Yt = Ft C (realisable, A2)", Ft * C)
    J = top_layer_objective(Fs, Vs, Yt, sp.Integer(0))
    field = d.step("f(V) = -dJ/dV at Ft, eta = 0",
                   (-gradient(J, Vs)).xreplace(dict(zip(Fs, Ft))).applyfunc(sp.expand))
    solution = sp.zeros(K, M)
    for idx, (v, f) in enumerate(zip(Vs, field)):
        if f.free_symbols & (set(Vs) - {v}):
            raise ArithmeticError(f"the field of {v} involves other entries: not decoupled")
        y = sp.Function("y")
        ode = sp.Eq(y(t).diff(t), f.subs(v, y(t)))
        # A linear ODE with constant coefficients and a constant source: this hint solves it
        # directly (dsolve's default tries every classification first, ~10x slower).
        solution[idx] = sp.expand(sp.dsolve(
            ode, y(t), ics={y(0): U[idx]}, simplify=False,
            hint="nth_linear_constant_coeff_undetermined_coefficients").rhs)
    V = d.step("V(t): each entry solves its own linear ODE (dsolve, V(0) = U)", solution)
    if any(sp.expand(v.diff(t) - f.xreplace(dict(zip(Vs, V)))) != 0 for v, f in zip(V, field)):
        raise ArithmeticError("dsolve's V(t) does not satisfy the flow")
    G_of_V = (-gradient(J, Fs)).xreplace(dict(zip(Fs, Ft)))
    G = d.step("G_Ft(t) = -dJ/dFt at V(t)",
               G_of_V.xreplace(dict(zip(Vs, V))).applyfunc(sp.expand))
    d.result = ModeSolution(sigma=sigma, C=C, U=U, t=t, V=V, G=G)
    return d


def annihilated(g: sp.Expr, t: sp.Symbol, rates: tuple[sp.Expr, sp.Expr]) -> sp.Expr:
    r""":math:`(\partial_t + r_1)(\partial_t + r_2)\,g`: zero exactly when :math:`g` is a
    combination of :math:`e^{-r_1t}` and :math:`e^{-r_2t}` (for :math:`r_1 \ne r_2`)."""
    r1, r2 = rates
    return sp.expand(g.diff(t, 2) + (r1 + r2) * g.diff(t) + r1 * r2 * g)


def smallest_nonrealisable_case() -> Derivation:
    r"""n = 3, K = 1, M = 2, :math:`F = (0, 1, 3)^\top`, labels (0, 1, 0): full column rank
    (A1) but :math:`\mathrm{col}(\tilde Y)\not\subseteq\mathrm{col}(\tilde F)` (A2 fails).
    Derives the fixed point :math:`G^\star(\eta)` of the top-layer flow (stationarity of
    :math:`J`, then :math:`-\partial J/\partial\tilde F`) and its limit as :math:`\eta \to 0`,
    which is also the :math:`\eta = 0` limit of the flow (:math:`A = \tilde F^\top\tilde F > 0`).
    ``result``: ``(G_eta, G_limit, eta)``. With n = 2 every centred column is a multiple of
    (1, -1), so (A2) holds whenever (A1) does: no smaller case exists.
    """
    d = Derivation("smallest non-realisable instance: n=3, K=1, M=2")
    eta = sp.Symbol("eta", positive=True)
    P = centering_matrix(3)
    Ft = d.step("Ft = P F, F = (0, 1, 3)^T", P * sp.Matrix([0, 1, 3]))
    Yt = d.step("Yt = P Y, labels (0, 1, 0)", P * sp.Matrix([[1, 0], [0, 1], [1, 0]]))
    Fs, Vs = symbolic_matrix("F", 3, 1), symbolic_matrix("V", 1, 2)
    J = top_layer_objective(Fs, Vs, Yt, eta)
    stationary = gradient(J, Vs).xreplace(dict(zip(Fs, Ft)))
    (solution,) = sp.linsolve(list(stationary), list(Vs))
    V_star = d.step("V*(eta): dJ/dV = 0", sp.Matrix(1, 2, [sp.cancel(v) for v in solution]))
    G_eta = d.step("G*(eta) = -dJ/dFt at V*",
                   (-gradient(J, Fs)).xreplace({**dict(zip(Fs, Ft)), **dict(zip(Vs, V_star))})
                   .applyfunc(sp.cancel))
    G_limit = d.step("lim_{eta -> 0} G*(eta) (nonzero: G does not vanish without A2)",
                     G_eta.applyfunc(lambda e: sp.cancel(e).subs(eta, 0)))
    d.result = (G_eta, G_limit, eta)
    return d
