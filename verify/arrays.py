"""The few matrix operations a stated formula needs, for sympy matrices and torch tensors alike.

A paper's formula is written once (``inv(F.T @ F + eta * eye(K, F))``) and evaluated exactly
on symbolic matrices or in floating point on tensors; the elementary functions likewise:

>>> import sympy as sp, torch
>>> t = sp.Symbol("t")
>>> sin(t) ** 2 + cos(t) ** 2 - 1 == sp.sin(t) ** 2 + sp.cos(t) ** 2 - 1
True
>>> float(log(exp(torch.tensor(2.0))))
2.0
"""
from __future__ import annotations

from collections.abc import Callable
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


def _elementary(name: str, symbolic: Callable[[Any], Any],
                numeric: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return symbolic(x) if isinstance(x, sp.Basic) else numeric(x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``{name}`` of a sympy expression or a tensor (stated forms serve both)."
    return f


#: The elementary functions, each exact on a sympy expression and entrywise on a tensor:
#: ``sin(w * t)`` in a stated form evaluates in either world.
exp = _elementary("exp", sp.exp, torch.exp)
log = _elementary("log", sp.log, torch.log)
sqrt = _elementary("sqrt", sp.sqrt, torch.sqrt)
sign = _elementary("sign", sp.sign, torch.sign)
abs = _elementary("abs", sp.Abs, torch.abs)  # noqa: A001 - the name a formula uses
sin = _elementary("sin", sp.sin, torch.sin)
cos = _elementary("cos", sp.cos, torch.cos)
tan = _elementary("tan", sp.tan, torch.tan)
atan = _elementary("atan", sp.atan, torch.atan)
sinh = _elementary("sinh", sp.sinh, torch.sinh)
cosh = _elementary("cosh", sp.cosh, torch.cosh)
tanh = _elementary("tanh", sp.tanh, torch.tanh)
asinh = _elementary("asinh", sp.asinh, torch.asinh)


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
