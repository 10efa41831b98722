r"""The abstract dynamics of Li2 §6 (Eq. 10) and the Muon projection (Lemmas 8 and 9), sympy only.

Eq. 10 in the basis :math:`\{\boldsymbol\zeta_l\}`: :math:`\mathbf w = \sum_l\alpha_l
\boldsymbol\zeta_l`, :math:`A(\mathbf w)\mathbf w = \sum_l\mu_l\alpha_l^2\boldsymbol\zeta_l`.
The interior flow is :math:`\dot\alpha_l = \mu_l\alpha_l^2`; the flow on the sphere is its
projection :math:`\dot{\boldsymbol\alpha} = \mathbf g - \boldsymbol\alpha\,
\langle\boldsymbol\alpha,\mathbf g\rangle/\|\boldsymbol\alpha\|^2`, :math:`g_l = \mu_l\alpha_l^2`.

Lemma 9's setting reduces to two dimensions. For :math:`A = [Q, \mathbf v]` with orthonormal
:math:`Q` and :math:`\mathbf v = Q\mathbf c + s\mathbf e` (:math:`\mathbf e\perp
\mathrm{col}(Q)` a unit vector, :math:`s = \|\mathbf v_\perp\|`), right-multiplying the
:math:`Q` block by an orthogonal matrix that turns :math:`\mathbf c` into
:math:`b\,\mathbf e_1` (:math:`b = \|\mathbf v_\parallel\|`) leaves the last column of
:math:`A(A^\top A)^{-1/c}` unchanged, and in the orthonormal basis
:math:`\{Q\hat{\mathbf c}, \mathbf e\}` the two columns that matter are
:math:`R = \begin{pmatrix}1 & b\\ 0 & s\end{pmatrix}`.
"""
from __future__ import annotations

import sympy as sp

from theory.derivation import Derivation

t = sp.Symbol("t", nonnegative=True)
mu0, alpha0 = sp.symbols("mu alpha_0", positive=True)
b = sp.Symbol("b", nonnegative=True)
s = sp.Symbol("s", positive=True)
eps = sp.Symbol("epsilon", nonnegative=True)
q = sp.Symbol("q", positive=True)


def derive_interior_solution() -> Derivation:
    r""":math:`\dot\alpha = \mu\alpha^2`, :math:`\alpha(0) = \alpha_0 > 0`, solved by ``dsolve``;
    ``result`` is ``(alpha(t), blow-up time)``."""
    d = Derivation("interior flow of Eq. 10 on one coordinate: d alpha/dt = mu alpha^2")
    alpha = sp.Function("alpha")
    solution = d.step("dsolve with alpha(0) = alpha_0",
                      sp.dsolve(sp.Eq(alpha(t).diff(t), mu0 * alpha(t)**2), alpha(t),
                                ics={alpha(0): alpha0}).rhs)
    _, denominator = sp.fraction(sp.together(solution))
    blow_up = sp.solve(sp.Eq(denominator, 0), t)
    if len(blow_up) != 1:
        raise ArithmeticError(f"expected one blow-up time, found {blow_up}")
    d.step("check: d/dt alpha - mu alpha^2", sp.cancel(sp.diff(solution, t) - mu0 * solution**2))
    d.result = (solution, d.step("blow-up time: the denominator's root", blow_up[0]))
    return d


def coordinates(L: int) -> tuple[tuple[sp.Symbol, ...], tuple[sp.Symbol, ...]]:
    """Positive symbols :math:`\\alpha_1..\\alpha_L` and :math:`\\mu_1..\\mu_L`."""
    if not (isinstance(L, int) and L >= 2):
        raise ValueError(f"L: {L!r} must be an integer >= 2")
    return (sp.symbols(f"alpha_1:{L + 1}", positive=True),
            sp.symbols(f"mu_1:{L + 1}", positive=True))


def derive_log_ratio_rates(L: int, projected: bool) -> Derivation:
    r""":math:`\frac{d}{dt}\log(\alpha_i/\alpha_k) = \dot\alpha_i/\alpha_i - \dot\alpha_k/\alpha_k`
    for every pair, on the interior flow or its projection onto the sphere. ``result`` is
    ``(rates, alpha, mu)`` with ``rates[i, k]`` the rate of the pair."""
    alpha, mu = coordinates(L)
    where = "sphere (projected)" if projected else "interior"
    d = Derivation(f"d/dt log(alpha_i / alpha_k) on the {where} flow of Eq. 10, L = {L}")
    g = sp.Matrix([m * x**2 for m, x in zip(mu, alpha)])
    a = sp.Matrix(alpha)
    field = g - a * (a.dot(g) / a.dot(a)) if projected else g
    d.step("the field d alpha/dt", field)
    rates = sp.Matrix(L, L, lambda i, k: sp.cancel(field[i] / alpha[i] - field[k] / alpha[k]))
    d.result = (d.step("rates (i, k), cancelled", rates), alpha, mu)
    return d


def derive_polar_2x2() -> Derivation:
    r"""The polar factor of :math:`R = \begin{pmatrix}1 & b\\ 0 & s\end{pmatrix}`
    (:math:`s > 0`) from its definition: the orthogonal :math:`P` with :math:`P^\top R`
    symmetric positive definite (unique for invertible :math:`R`). The candidate
    :math:`(R + \operatorname{cof}R)/N` is checked against the definition. ``result`` is
    ``(P, last column, N)``."""
    d = Derivation("polar factor of R = [[1, b], [0, s]] (Lemma 9, reduced)")
    R = sp.Matrix([[1, b], [0, s]])
    cofactor = d.step("cofactor matrix det(R) R^-T", sp.simplify(R.det() * R.inv().T))
    N = sp.sqrt((1 + s)**2 + b**2)
    P = d.step("candidate P = (R + cof R) / N, N = sqrt((1+s)^2 + b^2)", (R + cofactor) / N)
    orthogonality = d.step("P^T P - I", (P.T * P - sp.eye(2)).applyfunc(
        lambda e: sp.cancel(sp.expand(e))))
    H = P.T * R
    asymmetry = d.step("H = P^T R: H - H^T", (H - H.T).applyfunc(sp.cancel))
    trace, det = d.step("trace and determinant of H (both > 0: H is positive definite)",
                        sp.Matrix([sp.cancel(sp.expand(H.trace() * N)) / N,
                                   sp.cancel(sp.expand(H.det() * N**2)) / N**2]))
    if orthogonality != sp.zeros(2, 2) or asymmetry != sp.zeros(2, 2) \
            or not (trace.is_positive and det.is_positive):
        raise ArithmeticError("the candidate is not the polar factor of R")
    d.result = (P, d.step("last column: (b, 1 + s) / N", P[:, 1]), N)
    return d


def derive_fractional_series(c: int, order: int = 2) -> Derivation:
    r"""Series in :math:`\epsilon` of the last column of :math:`A(A^\top A)^{-1/c}` for
    :math:`A = \begin{pmatrix}1 & \epsilon b\\ 0 & s\end{pmatrix}` (:math:`\|\mathbf
    v_\parallel\| = \epsilon b`), with :math:`s = q^{c/2}` so that every root is rational.

    :math:`Z = (A^\top A)^{1/c}` is the symmetric positive definite root: writing
    :math:`Z = \sum_k\epsilon^kZ_k`, :math:`Z_0 = \mathrm{diag}(1, q)`, the equations
    :math:`[\epsilon^k]\,Z^c = [\epsilon^k]\,A^\top A` are linear in :math:`Z_k` (a Sylvester
    equation with positive spectrum, so uniquely solvable); then
    :math:`Z^{-1} = \sum_k\epsilon^kY_k` by the Neumann series. Series are kept as lists of
    coefficient matrices. ``result`` is the list of coefficient vectors
    ``[v_0, v_1, ..., v_order]`` (rows: the :math:`Q\hat{\mathbf c}` and :math:`\mathbf e`
    components)."""
    if not (isinstance(c, int) and c >= 1):
        raise ValueError(f"c: {c!r} must be an integer >= 1")
    if not (isinstance(order, int) and 0 <= order <= 3):
        raise ValueError(f"order: {order!r} must be an integer in 0..3")
    d = Derivation(f"series in epsilon of the last column of A (A^T A)^(-1/{c})")
    A = [sp.Matrix([[1, 0], [0, q**sp.Rational(c, 2)]]), sp.Matrix([[0, b], [0, 0]])]
    A += [sp.zeros(2, 2)] * (order - 1)
    X = _series_product([a.T for a in A], A, order)
    d.step("A^T A, coefficients of eps^0..eps^order", sp.Matrix.hstack(*X))
    Z = [sp.diag(1, q)] + [sp.zeros(2, 2)] * order
    for k in range(1, order + 1):
        x11, x12, x22 = sp.symbols(f"z{k}_11 z{k}_12 z{k}_22")
        Z[k] = sp.Matrix([[x11, x12], [x12, x22]])
        power = _series_power(Z, c, order)[k]
        solution = sp.solve(list(power - X[k]), [x11, x12, x22], dict=True)
        if len(solution) != 1:
            raise ArithmeticError(f"order {k}: the root's equations gave {solution}")
        Z[k] = d.step(f"Z_{k} from [eps^{k}] Z^{c} = [eps^{k}] A^T A",
                      Z[k].subs(solution[0]).applyfunc(sp.factor))
    # Z^-1 = (Z0 (I + Z0^-1 dZ))^-1 = sum_j (-Z0^-1 dZ)^j Z0^-1, truncated at eps^order.
    Z0_inv = [sp.diag(1, 1 / q)] + [sp.zeros(2, 2)] * order
    step = [sp.zeros(2, 2)] + [-Z0_inv[0] * z for z in Z[1:]]
    inverse, term = Z0_inv, Z0_inv
    for _ in range(order):
        term = _series_product(step, term, order)
        inverse = [x + y for x, y in zip(inverse, term)]
    column = _series_product(A, inverse, order)
    d.result = [d.step(f"[eps^{k}] of the last column", m[:, 1].applyfunc(sp.factor))
                for k, m in enumerate(column)]
    return d


def _series_product(left: list[sp.Matrix], right: list[sp.Matrix], order: int
                    ) -> list[sp.Matrix]:
    """Coefficients of the product of two matrix series, up to ``eps^order``."""
    return [sum((left[i] * right[k - i] for i in range(k + 1)), sp.zeros(2, 2))
            .applyfunc(sp.cancel) for k in range(order + 1)]


def _series_power(series: list[sp.Matrix], c: int, order: int) -> list[sp.Matrix]:
    out = [sp.eye(2)] + [sp.zeros(2, 2)] * order
    for _ in range(c):
        out = _series_product(out, series, order)
    return out
