r"""Output scale :math:`\beta` of Li2 (§C.3, Eqs. 68-69; §7) in exact arithmetic: the small-time
series of :math:`G_{\tilde F}` and the fixed point of the top layer when the model is
:math:`\beta\tilde FV`.

Everything starts from the :math:`\beta`-scaled top-layer objective

.. math:: J_\beta(\tilde F, V) = \tfrac12\big(\|\tilde Y - \beta\tilde FV\|_F^2
          + \eta\|V\|_F^2\big), \qquad \dot V = -\partial J_\beta/\partial V,

(§7 writes it without the :math:`\tfrac12`, which rescales time only; Eq. 68's model has
:math:`\eta = 0`). The paper leaves open which object is :math:`G` (verify/claims/li2/SOURCES.md
§2.4); both
readings are derived here:

* ``"EV^T"``: :math:`G = EV^\top`, :math:`E = \tilde Y - \beta\tilde FV` (App. C's definition
  of :math:`G_{\tilde F}`, with the residual of the scaled model);
* ``"-dJ/dF"``: :math:`G = -\partial J_\beta/\partial\tilde F` (the gradient the features
  receive), which the derivation shows equals :math:`\beta EV^\top`.

The fixed point also depends on how :math:`\eta` moves with :math:`\beta`: ``"fixed"`` keeps
it, ``"beta^2"`` takes :math:`\eta_\beta = \beta^2\eta` (what substituting
:math:`\tilde Y \to \tilde Y/\beta` in the :math:`\beta = 1` problem amounts to, since
:math:`J_\beta = \beta^2[\tfrac12\|\tilde Y/\beta - \tilde FV\|^2
+ \tfrac{\eta}{2\beta^2}\|V\|^2]`).

The small-time series reuses the :math:`\beta = 1` series of
:mod:`theory.li2.stage1_expansion` through an identity derived (and checked) here:
:math:`J_\beta(\tilde F, V) = J_1(\beta\tilde F, V)`, so the flow of :math:`V` under
:math:`J_\beta` is the :math:`\beta = 1` flow with features :math:`\beta\tilde F`.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.polys.rings import PolyElement, ring

from theory.derivation import Derivation
from theory.matrices import frobenius_sq, gradient, symbolic_matrix
from theory.li2.ridge import reduced_product, top_layer_objective
from theory.li2.stage1_expansion import SmallTimeSeries, truncate_in_t

READINGS = ("EV^T", "-dJ/dF")
ETA_SCALINGS = ("fixed", "beta^2")


def scaled_objective(Ft: sp.Matrix, V: sp.Matrix, Yt: sp.Matrix, eta: sp.Expr,
                     beta: sp.Expr) -> sp.Expr:
    r""":math:`J_\beta = \tfrac12(\|\tilde Y - \beta\tilde FV\|_F^2 + \eta\|V\|_F^2)`.

    >>> F, V, Y = sp.Matrix([[1]]), sp.Matrix([[sp.Symbol("v")]]), sp.Matrix([[1]])
    >>> sp.expand(scaled_objective(F, V, Y, sp.Integer(0), sp.Integer(2)))
    2*v**2 - 2*v + 1/2
    """
    return (frobenius_sq(Yt - beta * Ft * V) + eta * frobenius_sq(V)) / 2


def _check_reading(reading: str) -> None:
    if reading not in READINGS:
        raise ValueError(f"reading: {reading!r} is not one of {', '.join(READINGS)}")


def _check_eta_scaling(eta_scaling: str) -> None:
    if eta_scaling not in ETA_SCALINGS:
        raise ValueError(f"eta_scaling: {eta_scaling!r} is not one of "
                         f"{', '.join(ETA_SCALINGS)}")


def _expanded_zero(m: sp.Matrix | sp.Expr) -> bool:
    entries = list(m) if isinstance(m, sp.MatrixBase) else [m]
    return all(sp.expand(e) == 0 for e in entries)


@dataclass(frozen=True)
class ScaledSmallTimeSeries:
    r"""The Taylor polynomials through :math:`t^{\rm order}` of :math:`G(t)` under each reading,
    for the :math:`\beta`-scaled flow from :math:`V_0 = \alpha U`, in the symbols of the
    :math:`\beta = 1` series (``Ft``, ``Yt``, ``U``, ``t``, ``alpha``, ``eta``) and ``beta``.
    ``tables[reading][(a, b)]`` is the coefficient of :math:`t^a\alpha^b` (entries polynomial
    in the matrix entries, :math:`\beta` and :math:`\eta`)."""

    Ft: sp.Matrix
    Yt: sp.Matrix
    U: sp.Matrix
    t: sp.Symbol
    alpha: sp.Symbol
    eta: sp.Symbol
    beta: sp.Symbol
    order: int
    V: sp.Matrix
    tables: dict[str, dict[tuple[int, int], sp.Matrix]]

    def part(self, reading: str, *, t_order: int | None = None,
             alpha_order: int | None = None) -> sp.Matrix:
        r"""The terms of :math:`G` (under ``reading``) with the given power of ``t`` and/or of
        ``alpha`` (all powers of the one left as None)."""
        _check_reading(reading)
        out = sp.zeros(self.Ft.rows, self.Ft.cols)
        for (a, b), c in self.tables[reading].items():
            if (t_order is None or a == t_order) and (alpha_order is None or b == alpha_order):
                out += self.t**a * self.alpha**b * c
        return out


def _table(polys: list[PolyElement], shape: tuple[int, int], t_index: int,
           alpha_index: int) -> dict[tuple[int, int], sp.Matrix]:
    r"""Group ring elements (the entries of a matrix, row-major) by their powers of
    :math:`t` and :math:`\alpha`: the coefficient matrices :math:`C_{ab}`."""
    groups: dict[tuple[int, int], dict[int, dict]] = {}
    for idx, p in enumerate(polys):
        for mono, c in p.items():
            key = (mono[t_index], mono[alpha_index])
            rest = tuple(0 if i in (t_index, alpha_index) else e for i, e in enumerate(mono))
            groups.setdefault(key, {}).setdefault(idx, {})[rest] = c
    R = polys[0].ring
    out = {}
    for key in sorted(groups):
        out[key] = sp.zeros(*shape)
        for idx, terms in groups[key].items():
            out[key][idx] = R.from_dict(terms).as_expr()
    return out


def derive_scaled_small_time_series(base: SmallTimeSeries) -> Derivation:
    r"""From the :math:`\beta = 1` series ``base`` (:func:`theory.li2.stage1_expansion.
    derive_small_time_series`), derive the series of :math:`G(t)` for :math:`J_\beta`,
    :math:`\beta` symbolic, under both readings. ``result``: :class:`ScaledSmallTimeSeries`.

    Steps: :math:`J_\beta(\tilde F, V) = J_1(\beta\tilde F, V)` (expanded difference 0), so
    :math:`-\partial J_\beta/\partial V` is the :math:`\beta = 1` field at
    :math:`\beta\tilde F` (checked) and :math:`V_\beta(t) = V(t)|_{\tilde F\to\beta\tilde F}`
    through :math:`t^{\rm order}`; then :math:`G` is formed from its definition at
    :math:`V_\beta(t)` and truncated (in the sparse polynomial ring over Q: the same products
    as Expr trees cost seconds at n=3, K=2, M=2).

    >>> from theory.li2.stage1_expansion import derive_small_time_series
    >>> s = derive_scaled_small_time_series(derive_small_time_series(1, 1, 1).result).result
    >>> s.tables["EV^T"][(0, 2)]
    Matrix([[-F_00*U_00**2*beta]])
    """
    n, K, M = base.Ft.rows, base.Ft.cols, base.Yt.cols
    d = Derivation(f"small-time series of G for the beta-scaled model through t^{base.order} "
                   f"(n={n}, K={K}, M={M})")
    beta = sp.Symbol("beta", positive=True)
    Ft, Yt, Vs, eta, t, alpha = base.Ft, base.Yt, base.Vs, base.eta, base.t, base.alpha
    J = d.step("objective J_beta = 1/2 (||Yt - beta Ft V||^2 + eta ||V||^2) (§C.3, §7)",
               scaled_objective(Ft, Vs, Yt, eta, beta))
    if not _expanded_zero(J - top_layer_objective(beta * Ft, Vs, Yt, eta)):
        raise ArithmeticError("J_beta(Ft, V) is not J_1(beta Ft, V)")
    d.step("J_beta(Ft, V) - J_1(beta Ft, V) expands to 0: the model with output scale beta is "
           "the beta = 1 model on features beta Ft", sp.Integer(0))
    field = d.step("flow field -dJ_beta/dV, entry by entry",
                   (-gradient(J, Vs)).applyfunc(sp.expand))
    if not _expanded_zero(field - base.field.xreplace(dict(zip(Ft, beta * Ft)))):
        raise ArithmeticError("-dJ_beta/dV is not the beta = 1 field at beta Ft")
    G_of_V = (-gradient(J, Ft)).applyfunc(sp.expand)
    E_of_V = Yt - beta * Ft * Vs
    if not _expanded_zero(G_of_V - beta * E_of_V * Vs.T):
        raise ArithmeticError("-dJ_beta/dFt is not beta E V^T")
    d.step("-dJ_beta/dFt = beta E V^T, E = Yt - beta Ft V (expanded difference 0)",
           beta * E_of_V * Vs.T)
    R = ring([*Ft, *Yt, *base.U, *Vs, t, alpha, eta, beta], sp.QQ)[0]
    it, ia = R.gens.index(R(t)), R.gens.index(R(alpha))
    scaled_F = [(R(f), R(beta) * R(f)) for f in Ft]
    V = [R.from_expr(v).compose(scaled_F) for v in base.V]
    d.step(f"same field and V(0) = alpha U: V_beta(t) = V(t)|(Ft -> beta Ft) through "
           f"t^{base.order}", sp.Matrix(K, M, [v.as_expr() for v in V]))
    E = [R.from_expr(Yt[i, j]) - R(beta) * sum((R.from_expr(Ft[i, k]) * V[k * M + j]
                                                 for k in range(K)), R.zero)
         for i in range(n) for j in range(M)]
    at_V = list(zip([R(v) for v in Vs], V))
    raw = {"EV^T": [sum((E[i * M + j] * V[k * M + j] for j in range(M)), R.zero)
                    for i in range(n) for k in range(K)],
           "-dJ/dF": [R.from_expr(g).compose(at_V) for g in G_of_V]}
    tables = {}
    for reading, polys in raw.items():
        tables[reading] = _table([truncate_in_t(p, it, base.order) for p in polys], (n, K), it, ia)
        for (a, b), c in tables[reading].items():
            d.step(f"G = {reading} at V_beta(t): coefficient of t^{a} alpha^{b}", c)
    d.result = ScaledSmallTimeSeries(Ft=Ft, Yt=Yt, U=base.U, t=t, alpha=alpha, eta=eta,
                                     beta=beta, order=base.order,
                                     V=sp.Matrix(K, M, [v.as_expr() for v in V]),
                                     tables=tables)
    return d


@dataclass(frozen=True)
class ScaledFixedPoint:
    r"""The stationary point of :math:`J_\beta` for symbolic ``F`` (n x K), ``Y`` (n x M),
    :math:`\eta > 0`, :math:`\beta > 0` (the symbols of :func:`theory.li2.ridge.
    derive_ridge_fixed_point`, plus ``beta``): :math:`V^\star_\beta`,
    :math:`E^\star = \tilde Y - \beta\tilde FV^\star_\beta` and :math:`G^\star_\beta` per
    reading, at the weight decay ``eta`` (:math:`\eta` fixed)."""

    F: sp.Matrix
    Y: sp.Matrix
    eta: sp.Symbol
    beta: sp.Symbol
    V: sp.Matrix
    E: sp.Matrix
    G_fixed: dict[str, sp.Matrix]

    def G(self, reading: str, eta_scaling: str) -> sp.Matrix:
        r""":math:`G^\star_\beta` under ``reading`` with :math:`\eta` ``"fixed"`` or
        :math:`\eta_\beta = \beta^2\eta` (``"beta^2"``)."""
        _check_reading(reading)
        _check_eta_scaling(eta_scaling)
        G = self.G_fixed[reading]
        return G if eta_scaling == "fixed" else G.xreplace({self.eta: self.beta**2 * self.eta})

    def sandwich(self, eta_scaling: str) -> tuple[sp.Matrix, sp.Matrix]:
        r"""Invertible ``(L, R)`` that clear every denominator of :math:`G^\star_\beta` and of
        :math:`G^\star_1`: :math:`L = S_1S_\beta`, :math:`R = A_\beta A_1` with
        :math:`S_\beta = \beta^2\tilde F\tilde F^\top + \eta_\beta I`,
        :math:`A_\beta = \beta^2\tilde F^\top\tilde F + \eta_\beta I` (positive definite for
        :math:`\eta > 0`; :math:`S_1, S_\beta` commute, as do :math:`A_1, A_\beta`), so
        :math:`LXR = LX'R` iff :math:`X = X'`."""
        _check_eta_scaling(eta_scaling)
        n, K = self.F.shape
        eta_b = self.eta if eta_scaling == "fixed" else self.beta**2 * self.eta
        S1 = self.F * self.F.T + self.eta * sp.eye(n)
        A1 = self.F.T * self.F + self.eta * sp.eye(K)
        Sb = self.beta**2 * self.F * self.F.T + eta_b * sp.eye(n)
        Ab = self.beta**2 * self.F.T * self.F + eta_b * sp.eye(K)
        return S1 * Sb, Ab * A1

    @property
    def symbols(self) -> list[sp.Symbol]:
        return [*self.F, *self.Y, self.eta, self.beta]


def derive_scaled_fixed_point(n: int, K: int, M: int) -> Derivation:
    r"""Derive the stationary point of :math:`J_\beta` (entry-by-entry derivative, ``linsolve``)
    and :math:`G^\star_\beta` under both readings. ``result``: :class:`ScaledFixedPoint`.

    >>> fp = derive_scaled_fixed_point(1, 1, 1).result
    >>> sp.factor(fp.V[0])
    F_00*Y_00*beta/(F_00**2*beta**2 + eta)
    """
    for name, value in (("n", n), ("K", K), ("M", M)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name}: {value!r} must be an integer >= 1")
    d = Derivation(f"fixed point of the beta-scaled top layer (n={n}, K={K}, M={M})")
    F, Y = symbolic_matrix("F", n, K), symbolic_matrix("Y", n, M)
    Vs = symbolic_matrix("V", K, M)
    eta, beta = sp.Symbol("eta", positive=True), sp.Symbol("beta", positive=True)
    J = d.step("objective J_beta = 1/2 (||Yt - beta Ft V||^2 + eta ||V||^2)",
               scaled_objective(F, Vs, Y, eta, beta))
    grad = d.step("dJ_beta/dV, entry by entry", gradient(J, Vs).applyfunc(sp.expand))
    # Linear in the entries of V with determinant a polynomial led by eta^(KM): unique.
    (solution,) = sp.linsolve(list(grad), list(Vs))
    V = d.step("V*_beta: the solution of dJ_beta/dV = 0",
               sp.Matrix(K, M, [sp.cancel(v) for v in solution]))
    E = d.step("E* = Yt - beta Ft V*_beta", Y - beta * F * V)
    G_of_V = -gradient(J, F)
    G_fixed = {"EV^T": d.step("G*_beta = E* V*^T (reading EV^T)", E * V.T),
               "-dJ/dF": d.step("G*_beta = -dJ_beta/dFt at V* (reading -dJ/dF)",
                                G_of_V.xreplace(dict(zip(Vs, V))))}
    d.result = ScaledFixedPoint(F=F, Y=Y, eta=eta, beta=beta, V=V, E=E, G_fixed=G_fixed)
    return d


def scaling_law(fp: ScaledFixedPoint, reading: str, eta_scaling: str) -> Derivation:
    r"""How :math:`G^\star_\beta` relates to the :math:`\beta = 1` fixed point
    :math:`G^\star_1(\eta) = G^\star_\beta|_{\beta=1}`, derived exactly:

    =======  =========================================  =================================
    reading  :math:`\eta` fixed                         :math:`\eta_\beta = \beta^2\eta`
    =======  =========================================  =================================
    EV^T     :math:`\beta^{-1}G^\star_1(\eta/\beta^2)`  :math:`\beta^{-1}G^\star_1(\eta)`
    -dJ/dF   :math:`G^\star_1(\eta/\beta^2)`            :math:`G^\star_1(\eta)`
    =======  =========================================  =================================

    Each row follows from :math:`W = \beta V` solving the :math:`\beta = 1` problem with weight
    decay :math:`\eta_\beta/\beta^2`; the step checks the law exactly, both sides sandwiched
    by :meth:`ScaledFixedPoint.sandwich`, in sparse polynomial arithmetic.
    ``result``: ``(power, eta_argument)`` with :math:`G^\star_\beta = \beta^{\rm power}
    G^\star_1(\text{eta\_argument})`.
    """
    _check_reading(reading)
    _check_eta_scaling(eta_scaling)
    d = Derivation(f"scaling law of G*_beta (reading {reading}, eta {eta_scaling})")
    power = -1 if reading == "EV^T" else 0
    argument = fp.eta / fp.beta**2 if eta_scaling == "fixed" else fp.eta
    G1 = fp.G_fixed[reading].xreplace({fp.beta: 1})
    law = fp.beta**power * G1.xreplace({fp.eta: argument})
    L, R = fp.sandwich(eta_scaling)
    difference = (reduced_product(L, fp.G(reading, eta_scaling), R, fp.symbols)
                  - reduced_product(L, law, R, fp.symbols))
    if not _expanded_zero(difference):
        raise ArithmeticError(f"G*_beta is not beta^{power} G*_1({argument})")
    d.step(f"G*_beta = beta^{power} G*_1(eta -> {argument}) (sandwiched difference expands "
           f"to 0)", law)
    d.result = (power, argument)
    return d
