r"""Derivations for the deep-linear-network example (sympy only, like the toolkit's ``theory/``).

Each function derives from the *definitions* (the loss, the gradient flow), never from the
paper's answer, and returns a :class:`Steps` record: the sentences and expressions a report
shows, and the objects the check compares with the paper's stated forms.

* :func:`deep_linear_flow` -- Arora, Cohen & Hazan (2018), Sec. 3 / Thm. 1: gradient flow
  :math:`\dot W_j = -\partial L/\partial W_j` on :math:`L(W_1,\dots,W_N) = \ell(W_N\cdots W_1)`
  for *any* differentiable :math:`\ell`. By the chain rule
  :math:`\partial L/\partial W_j = \partial/\partial W_j\,\langle G, W_N\cdots W_1\rangle` with
  :math:`G = \nabla\ell(W_N\cdots W_1)` held fixed; keeping :math:`G` as free symbols makes
  the derivation hold for every loss at once.
* :func:`time_derivative` -- :math:`\tfrac{d}{dt}Q(W(t))` of any matrix function
  :math:`Q` along a flow, as the directional derivative :math:`\partial_\epsilon
  Q(W + \epsilon\dot W)|_{\epsilon=0}`.
* :func:`saxe_mode_ode` -- Saxe, McClelland & Ganguli (2014), Sec. 2 (Eqs. 3-6): one mode of a
  two-layer linear network with whitened inputs decouples to the scalar loss
  :math:`\tfrac12(s - ab)^2`; gradient flow with time constant :math:`\tau`, and balance
  :math:`a = b`, give :math:`\tau\dot u = 2u(s-u)` for :math:`u = ab`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp


@dataclass
class Steps:
    """A derivation's title, its steps (sentence, expression) and what it arrives at."""

    title: str
    steps: list[tuple[str, Any]] = field(default_factory=list)
    result: Any = None

    def step(self, text: str, expr: Any = None) -> Any:
        self.steps.append((text, expr))
        return expr


def _matrix(name: str, d: int) -> sp.Matrix:
    return sp.Matrix(d, d, lambda i, k: sp.Symbol(f"{name}_{i + 1}{k + 1}", real=True))


def deep_linear_flow(depth: int, d: int) -> Steps:
    r"""Gradient flow of :math:`\ell(W_N\cdots W_1)` on ``depth`` square ``d x d`` layers.

    ``result``: ``(Ws, Wdots)``, the symbolic layers and their velocities
    :math:`-\partial L/\partial W_j` (entries polynomial in the W's and in G's entries).
    """
    s = Steps(f"gradient flow of a depth-{depth} linear network, any loss (d = {d})")
    Ws = [_matrix(f"W{j + 1}", d) for j in range(depth)]
    G = _matrix("G", d)
    P = sp.eye(d)
    for W in Ws:
        P = W * P
    s.step(r"end-to-end matrix P = W_N \cdots W_1", sp.MatMul(*[sp.MatrixSymbol(f"W_{j}", d, d)
                                                               for j in range(depth, 0, -1)]))
    s.step("chain rule: dL/dW_j = d/dW_j <G, P> with G = grad l(P) held fixed (any "
           "differentiable loss l; G's entries are free symbols)",
           sp.MatrixSymbol("G", d, d))
    pairing = sum((G[i, k] * P[i, k] for i in range(d) for k in range(d)), sp.Integer(0))
    Wdots = [sp.Matrix(d, d, lambda i, k, W=W: -sp.diff(pairing, W[i, k])) for W in Ws]
    s.step(r"velocity of the first layer, \dot W_1 = -\partial L / \partial W_1", Wdots[0])
    s.result = (Ws, Wdots)
    return s


def time_derivative(quantity, Ws: list[sp.Matrix], Wdots: list[sp.Matrix]) -> sp.Matrix:
    r""":math:`\tfrac{d}{dt}` of ``quantity(*Ws)`` along the flow ``Wdots``: the derivative in
    :math:`\epsilon` of ``quantity(*(W + eps Wdot))`` at 0 (exact for any polynomial map)."""
    eps = sp.Symbol("epsilon")
    moved = quantity(*[W + eps * V for W, V in zip(Ws, Wdots)])
    return sp.Matrix(moved).diff(eps).subs(eps, 0).applyfunc(sp.expand)


def saxe_mode_ode() -> Steps:
    r"""The scalar ODE of one mode strength (Saxe et al. 2014, Eqs. 3-6).

    ``result``: ``(symbols, rhs)`` with ``rhs(u)`` the derived :math:`\dot u` at balance.
    """
    s = Steps("mode dynamics of a two-layer linear network (whitened inputs, one mode)")
    a, b, sv, tau = sp.symbols("a b s tau", positive=True)
    loss = s.step("loss of one mode after rotating by the SVD of Sigma_yx (whitened inputs)",
                  (sv - a * b) ** 2 / 2)
    a_dot = s.step(r"gradient flow: \tau \dot a = -\partial L/\partial a", -sp.diff(loss, a) / tau)
    b_dot = -sp.diff(loss, b) / tau
    u_dot = s.step(r"mode strength u = ab: \dot u = \dot a b + a \dot b",
                   sp.factor(a_dot * b + a * b_dot))
    u = sp.Symbol("u", positive=True)
    balanced = s.step(r"balanced layers a = b = \sqrt u (kept by the flow: d(a^2-b^2)/dt = 0)",
                      sp.factor(u_dot.subs({a: sp.sqrt(u), b: sp.sqrt(u)})))
    s.step(r"balance is conserved: d(a^2 - b^2)/dt", sp.expand(2 * a * a_dot - 2 * b * b_dot))
    s.result = ((u, sv, tau), sp.Lambda(u, balanced))
    return s
