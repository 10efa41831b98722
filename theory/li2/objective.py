r"""Li2's objective (Eq. 1) and what follows from it by differentiation alone.

.. math:: J(V, W) = \tfrac12 \| P_1^\perp (Y - F V) \|_F^2 + \tfrac\eta2 \|V\|_F^2,
          \qquad F = \sigma(X W).
"""
from __future__ import annotations

import sympy as sp

from theory.derivation import Derivation
from theory.matrices import centering_matrix, frobenius_sq, gradient, symbolic_matrix


def objective(F: sp.Matrix, V: sp.Matrix, Y: sp.Matrix, eta: sp.Expr = 0) -> sp.Expr:
    """:math:`J = \\tfrac12\\|P_1^\\perp(Y - FV)\\|_F^2 + \\tfrac\\eta2\\|V\\|_F^2` (Eq. 1)."""
    P = centering_matrix(F.shape[0])
    return frobenius_sq(P * (Y - F * V)) / 2 + eta * frobenius_sq(V) / 2


def derive_backprop_gradient(n: int, K: int, M: int) -> Derivation:
    r"""Derive :math:`G_F = -\partial J/\partial F` entry by entry for symbolic ``F, V, Y``.

    ``result`` is the tuple ``(G_F, F, V, Y)`` of sympy matrices (``n x K``, ``K x M``,
    ``n x M``); nothing of the paper's Eq. 2 is used.
    """
    d = Derivation(f"G_F = -dJ/dF from the loss (n={n}, K={K}, M={M})")
    F, V, Y = symbolic_matrix("F", n, K), symbolic_matrix("V", K, M), symbolic_matrix("Y", n, M)
    d.step("centring operator P = I - 11^T/n", centering_matrix(n))
    J = d.step("loss J = 1/2 ||P (Y - F V)||_F^2 (Eq. 1, eta = 0)", objective(F, V, Y))
    G = d.step("G_F: minus the derivative of J in each entry F_ij",
               (-gradient(J, F)).applyfunc(sp.expand))
    d.result = (G, F, V, Y)
    return d
