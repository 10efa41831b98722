"""Symbolic matrices with named entries, and the centring operator."""
from __future__ import annotations

import sympy as sp


def symbolic_matrix(name: str, rows: int, cols: int, **assumptions: bool) -> sp.Matrix:
    """A ``rows x cols`` matrix of independent symbols ``name_{ij}`` (real by default).

    >>> symbolic_matrix("F", 2, 1)
    Matrix([
    [F_00],
    [F_10]])
    """
    assumptions.setdefault("real", True)
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", **assumptions))


def centering_matrix(n: int) -> sp.Matrix:
    r""":math:`P_1^\perp = I_n - \tfrac1n \mathbf 1\mathbf 1^\top` (centres along samples)."""
    return sp.eye(n) - sp.ones(n, n) / n


def frobenius_sq(m: sp.Matrix) -> sp.Expr:
    return sum((e**2 for e in m), sp.Integer(0))


def gradient(scalar: sp.Expr, m: sp.Matrix) -> sp.Matrix:
    """Entry-wise derivative :math:`\\partial s / \\partial m_{ij}`, the shape of ``m``."""
    return m.applyfunc(lambda e: sp.diff(scalar, e))
