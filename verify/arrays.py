"""The few matrix operations a stated formula needs, for sympy matrices and torch tensors alike.

A paper's formula is written once (``inv(F.T @ F + eta * eye(K, F))``) and evaluated exactly
on symbolic matrices or in floating point on tensors.
"""
from __future__ import annotations

from typing import Any

import sympy as sp
import torch

from numerics import solves


def inv(m: Any) -> Any:
    """The inverse as printed in the paper (exact for sympy; for tensors LU with partial
    pivoting, whatever the matrix, safe over a batch with several threads:
    :func:`numerics.solves.inv`)."""
    if isinstance(m, sp.MatrixBase):
        return m.inv()
    return solves.inv(m)


def eye(n: int, like: Any) -> Any:
    if isinstance(like, sp.MatrixBase):
        return sp.eye(n)
    return torch.eye(n, dtype=like.dtype, device=like.device)


def ones(n: int, like: Any) -> Any:
    """The column of ones :math:`\\mathbf 1_n`."""
    if isinstance(like, sp.MatrixBase):
        return sp.ones(n, 1)
    return torch.ones(n, 1, dtype=like.dtype, device=like.device)


def transpose(m: Any) -> Any:
    return m.T if isinstance(m, sp.MatrixBase) else m.transpose(-1, -2)


def elementwise(f: Any, m: Any) -> Any:
    """``f`` applied entry by entry (sympy matrix) or as a tensor function."""
    return m.applyfunc(f) if isinstance(m, sp.MatrixBase) else f(m)


def gate(d: Any, v: Any) -> Any:
    r""":math:`\mathrm{diag}(d)\,v` for columns ``d``, ``v``: the entrywise product, without
    forming the ``n x n`` diagonal matrix."""
    return d.multiply_elementwise(v) if isinstance(d, sp.MatrixBase) else d * v


def exp(x: Any) -> Any:
    """``exp`` of a sympy expression or a tensor (stated forms serve both)."""
    return sp.exp(x) if isinstance(x, sp.Basic) else torch.exp(x)


def sign(x: Any) -> Any:
    """``sign`` of a sympy expression or a tensor."""
    return sp.sign(x) if isinstance(x, sp.Basic) else torch.sign(x)


def sqrt(x: Any) -> Any:
    """``sqrt`` of a sympy expression or a tensor."""
    return sp.sqrt(x) if isinstance(x, sp.Basic) else torch.sqrt(x)


def asinh(x: Any) -> Any:
    """``asinh`` of a sympy expression or a tensor."""
    return sp.asinh(x) if isinstance(x, sp.Basic) else torch.asinh(x)


def diagonal(m: Any) -> Any:
    """The diagonal: a row matrix (sympy) or a vector (torch)."""
    if isinstance(m, sp.MatrixBase):
        return sp.Matrix([[m[i, i] for i in range(m.rows)]])
    return m.diagonal()


def adjoint(m: Any) -> Any:
    """The conjugate transpose."""
    return m.H if isinstance(m, sp.MatrixBase) else m.mH


def trace(m: Any) -> Any:
    return m.trace() if isinstance(m, sp.MatrixBase) else m.diagonal().sum()


def vstack(rows: Any) -> Any:
    """Rows on top of each other: a sympy matrix or a stacked tensor."""
    if isinstance(rows[0], sp.MatrixBase):
        return sp.Matrix.vstack(*rows)
    return torch.stack(rows)
