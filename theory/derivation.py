"""A derivation as a list of steps, each a sentence and (optionally) a sympy expression."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp  # noqa: F401 - the doctest below uses it

from theory import printing


#: Longest LaTeX (characters) whose sympy MathML a step keeps. Beyond it sympy's presentation
#: printer costs about as much as the derivation itself, and the report typesets the LaTeX
#: instead (``verify.report.mathml.from_latex``), which reads the same for formulas that long.
MATHML_MAX_LATEX = 2000


@dataclass(frozen=True)
class Step:
    """One step of a derivation: what was done, and the expression it produced."""

    text: str
    expr: Any = None

    def as_record(self) -> dict[str, str | None]:
        """Plain-data form (for JSON): the sentence, the LaTeX, the sympy string and the
        presentation MathML sympy prints (reports show it without re-deriving anything; None
        beyond :data:`MATHML_MAX_LATEX`)."""
        if self.expr is None:
            return {"text": self.text, "latex": None, "sympy": None, "mathml": None}
        latex = printing.latex(self.expr)
        mathml = (printing.presentation_mathml(self.expr) if len(latex) <= MATHML_MAX_LATEX
                  else None)
        return {"text": self.text, "latex": latex, "sympy": printing.sympy_string(self.expr),
                "mathml": mathml}


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
