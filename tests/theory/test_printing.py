"""theory.printing: remembered printed forms equal sympy's own, for mutable matrices too."""
from __future__ import annotations

import sympy as sp

from theory import printing

x, y = sp.symbols("x y")
p = sp.Symbol("x", positive=True)


def test_printed_forms_equal_sympys_and_are_remembered():
    for expr in (x**2 + sp.sqrt(y) / 3, sp.Matrix([[x, 1], [sp.Rational(1, 2), y**2]]),
                 sp.Integer(0), sp.pi * x):
        assert printing.latex(expr) == sp.latex(expr)
        assert printing.sympy_string(expr) == sp.sstr(expr)
        assert printing.presentation_mathml(expr) == sp.mathml(expr, printer="presentation")
    m = sp.Matrix([[x + y]])
    printing.latex(m)
    m[0, 0] = x - y                          # a mutated matrix is a new key, not a stale hit
    assert printing.latex(m) == sp.latex(m)


def test_symbols_with_other_assumptions_are_not_confused():
    assert printing.sympy_string(sp.Abs(x)) == "Abs(x)"
    assert printing.sympy_string(sp.Abs(p)) == "x"     # |x| = x for positive x


def test_unhashable_objects_are_printed_afresh():
    assert printing.latex([x, sp.Matrix([y])]) == sp.latex([x, sp.Matrix([y])])


def test_a_step_too_long_for_sympys_mathml_is_typeset_from_its_latex_in_the_report():
    from theory.derivation import MATHML_MAX_LATEX, Step
    from verify.report.html import _step_math

    symbols = sp.symbols(f"z0:{MATHML_MAX_LATEX // 8}")
    big = Step("a long sum", sum(s**2 for s in symbols))
    small = Step("a short one", x**2)
    record, short = big.as_record(), small.as_record()
    assert len(record["latex"]) > MATHML_MAX_LATEX and record["mathml"] is None
    assert short["mathml"] == sp.mathml(x**2, printer="presentation")
    shown = _step_math(record)
    # the LaTeX, typeset: too wide for one line, so cut into pieces that wrap (one <math>
    # each, verify/report/math_breaks.py)
    assert shown.startswith("<div class=formula><math") and "z_{0}^{2}" in shown
    assert shown.count("<math") > 1
