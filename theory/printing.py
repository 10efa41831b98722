"""The printed forms of a sympy object (LaTeX, sympy string, presentation MathML), remembered.

Results carry every derivation step and both sides of every symbolic identity in printed form,
and printing a large expression costs more than deriving it from a cache: a claim's negative
control prints the same derivations and derived sides again, and several claims print the same
expressions. Each form is computed once per distinct object. Mutable matrices (unhashable) are
remembered under their immutable copy, which prints identically.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import sympy as sp


def _key(expr: Any) -> Any:
    return sp.ImmutableMatrix(expr) if isinstance(expr, sp.MatrixBase) else expr


def _remembered(printer: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    cached = functools.lru_cache(maxsize=4096)(printer)

    @functools.wraps(printer)
    def printed(expr: Any) -> str | None:
        try:
            return cached(_key(expr))
        except TypeError:                   # unhashable and not a matrix: print it afresh
            return printer(expr)

    return printed


@_remembered
def latex(expr: Any) -> str:
    """``sympy.latex(expr)``."""
    return sp.latex(expr)


@_remembered
def sympy_string(expr: Any) -> str:
    """``sympy.sstr(expr)``."""
    return sp.sstr(expr)


@_remembered
def presentation_mathml(expr: Any) -> str | None:
    """``sympy.mathml(expr, printer="presentation")``; None for objects sympy's MathML printer
    lacks (the LaTeX remains)."""
    try:
        return sp.mathml(expr, printer="presentation")
    except Exception:  # noqa: BLE001 - any printer failure leaves the other forms
        return None
