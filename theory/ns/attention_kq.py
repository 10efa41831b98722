r"""The key-query product :math:`W = QK^\top` (:math:`Q = W_Q`, :math:`K = W_K`, both
:math:`d\times r`) as a reparameterisation (Never Saddle, reviewer question 12;
verify/claims/ns/SOURCES.md §7, §4.18): sympy derivations from the definition
:math:`F(Q, K) = f(QK^\top)` for an undefined :math:`f`.

* :func:`derive_parameter_flow`: the chain rule gives :math:`\nabla_QF = GK`,
  :math:`\nabla_KF = G^\top Q` with :math:`G = \nabla f(W)` (entries kept as symbols
  :math:`g_{ab}`), so gradient flow is :math:`\dot Q = -GK`, :math:`\dot K = -G^\top Q`; with
  ``diagonal`` the factors are :math:`\operatorname{diag}(u)`, :math:`\operatorname{diag}(v)`
  and only :math:`G`'s diagonal enters (Never Saddle's :math:`x = u\odot v`).
* :func:`derive_gram_rates`: :math:`\tfrac{d}{dt}Q^\top Q` and :math:`\tfrac{d}{dt}K^\top K`
  along that flow: both are :math:`-(Q^\top GK + K^\top G^\top Q)`, so the balance
  :math:`Q^\top Q - K^\top K` is conserved whatever :math:`f` is.
* :func:`derive_gd_drift`: one GD step :math:`Q' = Q - \eta GK`, :math:`K' = K - \eta G^\top Q`
  moves the balance by exactly :math:`\eta^2(K^\top G^\top GK - Q^\top GG^\top Q)`.
* :func:`derive_saddle`: at :math:`Q = K = 0` the gradient vanishes and the Hessian's
  characteristic polynomial is :math:`\det(\lambda^2I - GG^\top)^r`: eigenvalues
  :math:`\pm\sigma_j(G)`, :math:`r` times each, so the origin is a strict saddle whenever
  :math:`\nabla f(0)\ne0` (trace 0, :math:`\operatorname{tr}H^2 = 2r\|G\|_F^2`).
* :func:`derive_sign_rates`: under the sign flow :math:`\dot Q = -\operatorname{sign}(GK)`,
  :math:`\dot K = -\operatorname{sign}(G^\top Q)` the rates of the balance and of the column
  :math:`\ell_1` balance :math:`\|q_c\|_1 - \|k_c\|_1` at exact points.
* :func:`derive_brackets`: the Lie brackets :math:`[X_{ab}, X_{ce}]` of the fields
  :math:`X_{ab} = \nabla_{(Q,K)}W_{ab}` (Li, Wang, Lee, Arora 2022, SOURCES §5.3: GF on a
  commuting parameterisation is a mirror flow): zero for the diagonal restriction, nonzero for
  every pair of entries of :math:`W` that share a row or a column.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from theory.derivation import Derivation

LAM = sp.Symbol("lambda")
ETA = sp.Symbol("eta", positive=True)


def _check_sizes(d: int, r: int) -> None:
    if not (isinstance(d, int) and isinstance(r, int) and 1 <= r and 1 <= d <= 4):
        raise ValueError(f"d, r: {d!r}, {r!r} need integers with 1 <= d <= 4, r >= 1")


def factor_matrices(d: int, r: int, *, diagonal: bool = False
                    ) -> tuple[sp.Matrix, sp.Matrix, tuple[sp.Symbol, ...]]:
    r"""Real symbolic :math:`Q, K` (:math:`d\times r`) and the parameters in order (Q's
    entries, then K's); ``diagonal``: :math:`Q = \operatorname{diag}(u)`,
    :math:`K = \operatorname{diag}(v)` (:math:`r = d`)."""
    _check_sizes(d, r)
    if diagonal:
        u, v = sp.symbols(f"u1:{d + 1}", real=True), sp.symbols(f"v1:{d + 1}", real=True)
        return sp.diag(*u), sp.diag(*v), (*u, *v)
    Q = sp.Matrix(d, r, lambda a, c: sp.Symbol(f"q{a + 1}{c + 1}", real=True))
    K = sp.Matrix(d, r, lambda a, c: sp.Symbol(f"k{a + 1}{c + 1}", real=True))
    return Q, K, (*Q, *K)


def gradient_symbols(d: int) -> sp.Matrix:
    r""":math:`G = \nabla f(W)`, entries :math:`g_{ab}` (real)."""
    return sp.Matrix(d, d, lambda a, b: sp.Symbol(f"g{a + 1}{b + 1}", real=True))


def _as_gradient(expr: sp.Expr, d: int) -> sp.Expr:
    r"""Replace sympy's ``Subs(Derivative(f(..., xi, ...), xi), xi, W_k)`` by :math:`g_k`, the
    first derivative in the k-th argument (row-major entry of :math:`W`)."""
    G = gradient_symbols(d)

    def symbol(e: sp.Subs) -> sp.Expr:
        derivative = e.expr
        (variable, order), = derivative.variable_count
        if order != 1:
            raise ValueError("only first derivatives of f enter the flow")
        return G[list(derivative.expr.args).index(variable)]

    return expr.replace(lambda e: isinstance(e, sp.Subs), symbol)


@dataclass(frozen=True)
class ParameterFlow:
    r"""Gradient flow of :math:`f(QK^\top)`: the factors, :math:`G`, and the velocities
    :math:`\dot Q = -\nabla_QF`, :math:`\dot K = -\nabla_KF` by the chain rule."""

    Q: sp.Matrix
    K: sp.Matrix
    G: sp.Matrix
    Q_dot: sp.Matrix
    K_dot: sp.Matrix


def derive_parameter_flow(d: int, r: int, *, diagonal: bool = False) -> Derivation:
    r"""The chain rule on :math:`F(Q, K) = f(QK^\top)` with an undefined :math:`f` of the
    :math:`d^2` entries of :math:`W`, and the gradient flow it defines."""
    Q, K, theta = factor_matrices(d, r, diagonal=diagonal)
    d_ = Derivation(f"gradient flow of f(Q K^T), d = {d}, r = {r}"
                    + (" (diagonal factors)" if diagonal else ""))
    W = d_.step("W = Q K^T", Q * K.T)
    f = sp.Function("f")
    F = f(*W)
    grads = [_as_gradient(sp.diff(F, p), d) for p in theta]
    n = len(theta) // 2
    G = gradient_symbols(d)
    if diagonal:
        Q_dot, K_dot = sp.diag(*[-e for e in grads[:n]]), sp.diag(*[-e for e in grads[n:]])
    else:
        Q_dot = sp.Matrix(d, r, [-e for e in grads[:n]])
        K_dot = sp.Matrix(d, r, [-e for e in grads[n:]])
    d_.step("dQ/dt = -dF/dQ (chain rule, g_ab = df/dW_ab)", Q_dot)
    d_.step("dK/dt = -dF/dK", K_dot)
    d_.step("the same as -G K (diagonal: the diagonal of -G K)",
            sp.simplify(Q_dot + (G * K if not diagonal else sp.diag(*(G * K).diagonal()))))
    d_.result = ParameterFlow(Q, K, G, Q_dot, K_dot)
    return d_


def derive_gram_rates(d: int, r: int) -> Derivation:
    r""":math:`\tfrac{d}{dt}Q^\top Q` and :math:`\tfrac{d}{dt}K^\top K` along
    :func:`derive_parameter_flow`; result: their difference, the balance's rate (expanded)."""
    flow = derive_parameter_flow(d, r).result
    d_ = Derivation(f"Gram matrices along gradient flow, d = {d}, r = {r}")
    Q, K = flow.Q, flow.K
    rate_Q = d_.step("d/dt Q^T Q = Qdot^T Q + Q^T Qdot",
                     (flow.Q_dot.T * Q + Q.T * flow.Q_dot).expand())
    rate_K = d_.step("d/dt K^T K = Kdot^T K + K^T Kdot",
                     (flow.K_dot.T * K + K.T * flow.K_dot).expand())
    d_.result = d_.step("d/dt (Q^T Q - K^T K), expanded", (rate_Q - rate_K).expand())
    return d_


def derive_gd_drift(d: int, r: int) -> Derivation:
    r"""One GD step of size :math:`\eta` on the flow of :func:`derive_parameter_flow`: the
    exact change of :math:`Q^\top Q - K^\top K` (result, expanded)."""
    flow = derive_parameter_flow(d, r).result
    d_ = Derivation(f"balance change over one GD step, d = {d}, r = {r}")
    Q1 = d_.step("Q' = Q + eta dQ/dt", flow.Q + ETA * flow.Q_dot)
    K1 = d_.step("K' = K + eta dK/dt", flow.K + ETA * flow.K_dot)
    change = d_.step("(Q'^T Q' - K'^T K') - (Q^T Q - K^T K), expanded",
                     (Q1.T * Q1 - K1.T * K1 - flow.Q.T * flow.Q + flow.K.T * flow.K).expand())
    G, Q, K = flow.G, flow.Q, flow.K
    d_.step("minus eta^2 (K^T G^T G K - Q^T G G^T Q): zero",
            (change - ETA**2 * (K.T * G.T * G * K - Q.T * G * G.T * Q)).expand())
    d_.result = change
    return d_


@dataclass(frozen=True)
class Saddle:
    r"""At :math:`Q = K = 0`: the gradient of :math:`F` (zero), the Hessian :math:`H` (with
    :math:`G = \nabla f(0)`), its characteristic polynomial in :data:`LAM`, and the polynomial
    :math:`\det(\lambda^2I - GG^\top)^r`; :math:`\operatorname{tr}H` and
    :math:`\operatorname{tr}H^2`."""

    gradient: sp.Matrix
    hessian: sp.Matrix
    charpoly: sp.Expr
    singular_poly: sp.Expr
    trace: sp.Expr
    trace_square: sp.Expr


def derive_saddle(d: int, r: int) -> Derivation:
    r"""Gradient and Hessian of :math:`F(Q, K) = f(QK^\top)` at the origin by the chain rule
    of second order, :math:`\nabla F = J^\top g`, :math:`\nabla^2F = J^\top H_fJ +
    \sum_k g_k\nabla^2W_k` (:math:`J = \partial W/\partial\theta`, :math:`g = \nabla f`,
    :math:`H_f = \nabla^2f` as symbols), then evaluated at :math:`Q = K = 0`."""
    Q, K, theta = factor_matrices(d, r)
    d_ = Derivation(f"F = f(Q K^T) at Q = K = 0, d = {d}, r = {r}")
    W = list(Q * K.T)
    G = gradient_symbols(d)
    g = sp.Matrix(list(G))
    Hf = sp.Matrix(d * d, d * d, lambda k, m: sp.Symbol(f"h{min(k, m)}_{max(k, m)}", real=True))
    J = d_.step("J = dW/dtheta (W row-major)", sp.Matrix(W).jacobian(theta))
    origin = {p: 0 for p in theta}
    gradient = d_.step("gradient J^T g at the origin", (J.T * g).subs(origin))
    second = sum((g[k] * sp.hessian(W[k], theta) for k in range(d * d)),
                 sp.zeros(len(theta)))
    H = d_.step("Hessian J^T H_f J + sum_k g_k Hess W_k at the origin (J(0) = 0)",
                (J.T * Hf * J + second).subs(origin))
    charpoly = d_.step("characteristic polynomial det(lambda I - H)",
                       H.charpoly(LAM).as_expr().expand())
    singular = d_.step("det(lambda^2 I - G G^T)^r",
                       ((LAM**2 * sp.eye(d) - G * G.T).det() ** r).expand())
    trace = d_.step("tr H", H.trace())
    trace_square = d_.step("tr H^2 (= 2 r ||G||_F^2: some eigenvalue nonzero when G != 0, and "
                           "the spectrum is symmetric: both signs)", (H * H).trace().expand())
    d_.result = Saddle(gradient, H, charpoly, singular, trace, trace_square)
    return d_


@dataclass(frozen=True)
class SignRates:
    r"""Sign flow at one exact point: the rate of :math:`Q^\top Q - K^\top K` and of the
    column :math:`\ell_1` balance :math:`(\|q_c\|_1 - \|k_c\|_1)_c`."""

    balance: sp.Matrix
    column_l1: sp.Matrix


def derive_sign_rates(Q0: sp.Matrix, K0: sp.Matrix, G0: sp.Matrix, *,
                      diagonal: bool = False) -> Derivation:
    r"""The sign flow :math:`\dot Q = -\operatorname{sign}(\nabla_QF)`, :math:`\dot K =
    -\operatorname{sign}(\nabla_KF)` (sign descent's flow, :math:`q = 1`, sign(0) = 0) at the
    exact point ``Q0, K0`` with :math:`\nabla f = ` ``G0``, the gradients from
    :func:`derive_parameter_flow`; ``diagonal``: the factors' diagonals only. Where no factor
    entry is zero, :math:`\tfrac{d}{dt}|Q_{ac}| = \operatorname{sign}(Q_{ac})\dot Q_{ac}`."""
    d, r = Q0.shape
    flow = derive_parameter_flow(d, r, diagonal=diagonal).result
    d_ = Derivation(f"sign flow at a point, d = {d}, r = {r}"
                    + (" (diagonal factors)" if diagonal else ""))
    at = {**dict(zip(flow.Q, Q0)), **dict(zip(flow.K, K0)), **dict(zip(flow.G, G0))}
    if any(v == 0 for s, v in at.items() if s in flow.Q.free_symbols | flow.K.free_symbols):
        raise ValueError("the point's parameters must be nonzero (|.| differentiable there)")
    Qd = d_.step("dQ/dt = sign(dQ/dt of gradient flow)", flow.Q_dot.subs(at).applyfunc(sp.sign))
    Kd = d_.step("dK/dt", flow.K_dot.subs(at).applyfunc(sp.sign))
    balance = d_.step("d/dt (Q^T Q - K^T K)", Qd.T * Q0 + Q0.T * Qd - Kd.T * K0 - K0.T * Kd)
    ones = sp.ones(1, d)
    column = d_.step("d/dt (||q_c||_1 - ||k_c||_1) = 1^T (sign(Q) o dQ/dt - sign(K) o dK/dt)",
                     ones * (Q0.applyfunc(sp.sign).multiply_elementwise(Qd)
                             - K0.applyfunc(sp.sign).multiply_elementwise(Kd)))
    d_.result = SignRates(balance, column)
    return d_


@dataclass(frozen=True)
class Brackets:
    r"""Lie brackets :math:`[X_{ab}, X_{ce}]` (vectors over the parameters) of every pair of
    entry fields; ``noncommuting``: the pairs ``((a, b), (c, e))`` whose bracket is nonzero."""

    brackets: dict
    noncommuting: tuple


def derive_brackets(d: int, r: int, *, diagonal: bool = False) -> Derivation:
    r""":math:`X_{ab} = \nabla_\theta W_{ab}` for the entries of :math:`W = QK^\top` that the
    parameterisation reaches (``diagonal``: :math:`W_{aa} = u_av_a` only) and
    :math:`[X, Y] = (DY)X - (DX)Y`."""
    Q, K, theta = factor_matrices(d, r, diagonal=diagonal)
    d_ = Derivation(f"Lie brackets of the entry fields of W = Q K^T, d = {d}, r = {r}"
                    + (" (diagonal factors)" if diagonal else ""))
    W = Q * K.T
    entries = [(a, a) for a in range(d)] if diagonal else \
        [(a, b) for a in range(d) for b in range(d)]
    fields = {e: sp.Matrix([sp.diff(W[e], p) for p in theta]) for e in entries}
    jac = {e: X.jacobian(theta) for e, X in fields.items()}
    brackets = {(e1, e2): (jac[e2] * fields[e1] - jac[e1] * fields[e2]).expand()
                for e1, e2 in itertools.combinations(entries, 2)}
    d_.step("fields X_ab = grad W_ab (one column per entry)",
            sp.Matrix.hstack(*fields.values()))
    noncommuting = tuple(pair for pair, b in brackets.items() if not b.is_zero_matrix)
    d_.step(f"{len(noncommuting)} of {len(brackets)} pairs have a nonzero bracket: "
            f"{noncommuting}")
    if noncommuting:
        d_.step(f"e.g. [X{noncommuting[0][0]}, X{noncommuting[0][1]}]",
                brackets[noncommuting[0]])
    d_.result = Brackets(brackets, noncommuting)
    return d_
