r"""Critical points of deep diagonal reparameterisations where several factors vanish
(Never Saddle, Theorem 4.3, submitted numbering): sympy derivations from the definition
:math:`F(w) = f(x)`, :math:`x = w_1 \odot \cdots \odot w_L`.

One coordinate suffices. At a point where a coordinate :math:`k` has at least two vanishing
factors, :math:`\nabla_{w_{\cdot,k}} x_k = 0`, so the Gauss-Newton part
:math:`J^\top\nabla^2 f\,J` of :math:`\nabla^2F` has a zero row/column block for coordinate
:math:`k` and the only Hessian term there is :math:`g_k\nabla^2_{w_{\cdot,k}}x_k`: the
coordinate's block decouples from the others whatever :math:`f` is. Here
:math:`g_k = \partial_k f(x)` at the point; the scalar :math:`f` of this module stands for
:math:`f` restricted to that coordinate, with :math:`f^{(m)}(x)` kept as symbols.

Every function returns a :class:`theory.derivation.Derivation`.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from theory.derivation import Derivation

#: f'(x) at the point (x = 0 on the set S) and the decay strength.
G = sp.Symbol("g", real=True)
ALPHA = sp.Symbol("alpha", positive=True)
T = sp.Symbol("t", real=True)


def _check(L: int, zeros: tuple[int, ...]) -> None:
    if not 2 <= L <= 6:
        raise ValueError(f"L: depth must be an integer in [2, 6], got {L}")
    if len(set(zeros)) != len(zeros) or not all(0 <= a < L for a in zeros):
        raise ValueError(f"zeros: distinct factor indices in [0, {L - 1}] expected, got {zeros}")


def factors(L: int) -> tuple[sp.Symbol, ...]:
    """The factors :math:`w_1, \\ldots, w_L` of one coordinate (real symbols)."""
    return sp.symbols(f"w1:{L + 1}", real=True)


def _derivative_symbols(expr: sp.Expr) -> sp.Expr:
    r"""Replace ``Subs(Derivative(f(xi), xi, m), xi, 0)`` by :math:`f^{(m)}(0)` symbols
    (``g`` for :math:`m = 1`, ``f_m`` otherwise) and ``f(0)`` by ``f_0``."""
    def symbol(e: sp.Subs) -> sp.Symbol:
        order = e.expr.derivative_count if isinstance(e.expr, sp.Derivative) else 0
        return G if order == 1 else sp.Symbol(f"f_{order}", real=True)
    return expr.replace(lambda e: isinstance(e, sp.Subs), symbol)


@dataclass(frozen=True)
class SaddleBlock:
    r"""One coordinate with ``zeros`` vanishing factors (indices) and the others free nonzero
    symbols: gradient, Hessian, Hessian eigenvalues, and along a general direction
    :math:`v` the derivatives :math:`\varphi^{(j)}(0)` of :math:`\varphi(t)=F(w+tv)`
    (:math:`j = 1..L`), the first non-vanishing order and its value."""

    L: int
    zeros: tuple[int, ...]
    gradient: sp.Matrix
    hessian: sp.Matrix
    eigenvalues: dict
    directional: tuple[sp.Expr, ...]
    order: int
    leading: sp.Expr


def derive_block(L: int, zeros: tuple[int, ...]) -> Derivation:
    r"""Gradient, Hessian and escape order of :math:`F = f(\prod_i w_i)` (one coordinate) at a
    point whose factors ``zeros`` vanish, from the chain rule with a symbolic :math:`f`."""
    _check(L, zeros)
    d = Derivation(f"F = f(w_1...w_{L}) at a point with factors {[a + 1 for a in zeros]} zero")
    w = factors(L)
    f = sp.Function("f")
    F = d.step("objective of one coordinate", f(sp.Mul(*w)))
    at = {w[a]: 0 for a in zeros}
    grad = d.step("gradient (chain rule), evaluated at the point",
                  _derivative_symbols(sp.Matrix([sp.diff(F, wi) for wi in w]).subs(at).doit()))
    hess = d.step("Hessian, evaluated at the point",
                  _derivative_symbols(sp.hessian(F, w).subs(at).doit()))
    eig = d.step("Hessian eigenvalues (with multiplicity)", hess.eigenvals())
    v = sp.symbols(f"v1:{L + 1}", real=True)
    phi = F.subs({wi: wi + T * vi for wi, vi in zip(w, v)}, simultaneous=True)
    # d^j/dt^j phi = d/dt of d^(j-1)/dt^(j-1) phi: one differentiation per order
    derivatives = list(itertools.accumulate(range(L), lambda e, _: sp.diff(e, T),
                                            initial=phi))[1:]
    directional = tuple(sp.factor(_derivative_symbols(e.subs(at).subs(T, 0).doit()))
                        for e in derivatives)
    d.step("directional derivatives d^j/dt^j F(w + t v) at t = 0, j = 1..L",
           sp.Matrix(directional))
    nonzero = [j for j, e in enumerate(directional, start=1) if sp.simplify(e) != 0]
    order = nonzero[0] if nonzero else 0
    leading = directional[order - 1] if order else sp.Integer(0)
    d.step(f"first non-vanishing directional derivative: order {order}", leading)
    d.result = SaddleBlock(L, tuple(zeros), grad, hess, eig, directional, order, leading)
    return d


@dataclass(frozen=True)
class DecayBlock:
    r"""One coordinate of :math:`F_\alpha = F + \tfrac\alpha2\|w\|^2` at a point with
    ``zeros`` vanishing factors: the gradient there, whether it can vanish (only when every
    factor is zero), and the Hessian and its eigenvalues at the coordinate's origin."""

    L: int
    zeros: tuple[int, ...]
    gradient: sp.Matrix
    critical_only_at_origin: bool
    hessian_at_origin: sp.Matrix
    eigenvalues_at_origin: dict


def derive_decay_block(L: int, zeros: tuple[int, ...]) -> Derivation:
    r"""Coupled weight decay :math:`\tfrac\alpha2\|w\|^2` added: the gradient at a point of
    :math:`S` is :math:`\alpha w` (the :math:`F` part vanishes, :func:`derive_block`), so it is
    critical iff every factor of the coordinate is zero; the Hessian there is
    :math:`\alpha I + g\,\nabla^2 x(0)`."""
    _check(L, zeros)
    d = Derivation(f"F + alpha/2 |w|^2, L = {L}, factors {[a + 1 for a in zeros]} zero")
    w = factors(L)
    f = sp.Function("f")
    F = f(sp.Mul(*w)) + ALPHA / 2 * sum(wi**2 for wi in w)
    at = {w[a]: 0 for a in zeros}
    grad = d.step("gradient at the point",
                  _derivative_symbols(sp.Matrix([sp.diff(F, wi) for wi in w]).subs(at).doit()))
    free = [wi for i, wi in enumerate(w) if i not in zeros]
    solutions = sp.solve(list(grad), free, dict=True) if free else [{}]
    only_origin = all(all(s.get(wi, wi) == 0 for wi in free) for s in solutions) and \
        len(solutions) >= 1
    d.step(f"solutions of grad = 0 in the nonzero factors: {solutions}")
    origin = {wi: 0 for wi in w}
    hess = d.step("Hessian at the coordinate's origin",
                  _derivative_symbols(sp.hessian(F, w).subs(origin).doit()))
    eig = d.step("its eigenvalues", hess.eigenvals())
    d.result = DecayBlock(L, tuple(zeros), grad, bool(only_origin), hess, eig)
    return d


def classify(order: int, g_nonzero: bool) -> str:
    r"""Classification of a coordinate block of :math:`S` from its escape order: ``order``
    2 is a strict saddle (Hessian eigenvalues :math:`\pm|gP|`), ``order`` >= 3 a
    higher-order saddle (zero Hessian, the leading term :math:`g P t^k\prod v_a` changes sign
    with any :math:`v_a`); with :math:`g = 0` the block is flat to the order computed."""
    if not g_nonzero:
        return "degenerate (grad f = 0)"
    if order == 2:
        return "strict saddle"
    if order >= 3:
        return "higher-order saddle"
    return "not critical"
