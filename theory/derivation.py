"""A derivation as a list of steps, each a sentence and (optionally) a sympy expression."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import sympy as sp


@dataclass(frozen=True)
class Step:
    """One step of a derivation: what was done, and the expression it produced."""

    text: str
    expr: Any = None

    def as_record(self) -> dict[str, str | None]:
        """Plain-data form (for JSON): the sentence, the LaTeX, the sympy string and the
        presentation MathML sympy prints (reports show it without re-deriving anything)."""
        if self.expr is None:
            return {"text": self.text, "latex": None, "sympy": None, "mathml": None}
        try:
            printed = _printed_cached(self.expr)
        except TypeError:                   # a mutable (unhashable) matrix
            printed = _printed(self.expr)
        return {"text": self.text, **printed}


def _printed(expr: Any) -> dict[str, str | None]:
    """LaTeX, sympy string and presentation MathML of ``expr``."""
    try:
        mathml = sp.mathml(expr, printer="presentation")
    except Exception:  # noqa: BLE001 - objects sympy's printer lacks: the LaTeX remains
        mathml = None
    return {"latex": sp.latex(expr), "sympy": sp.sstr(expr), "mathml": mathml}


@functools.lru_cache(maxsize=4096)
def _printed_cached(expr: Any) -> dict[str, str | None]:
    """:func:`_printed`, remembered: a claim's negative-control run attaches the same
    derivations again, and several claims print the same expressions (printing a large
    expression costs more than deriving it from a cache)."""
    return _printed(expr)


@dataclass
class Derivation:
    """The steps of one derivation and the object it arrives at.

    >>> x = sp.Symbol("x")
    >>> d = Derivation("derivative of x^2")
    >>> d.step("differentiate", sp.diff(x**2, x))
    2*x
    >>> d.result = d.steps[-1].expr
    >>> [s["latex"] for s in d.as_records()]
    ['2 x']
    """

    title: str
    steps: list[Step] = field(default_factory=list)
    result: Any = None

    def step(self, text: str, expr: Any = None) -> Any:
        """Record a step and hand its expression back, so steps chain inline."""
        self.steps.append(Step(text, expr))
        return expr

    def as_records(self) -> list[dict[str, str | None]]:
        return [s.as_record() for s in self.steps]
