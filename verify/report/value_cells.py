r"""Exact values in the evidence table's narrow cells: typeset, broken over lines, or, when
too large for a cell, summarised by their shape and first entries or terms with the whole
expression folded under them.

A value's cell is a seventh of the report's width (:data:`CELL_EM`). A sum wraps at its
terms; a matrix or a quotient does not wrap, so one wider than its cell (scaled as far as
:data:`verify.report.mathml.MIN_SCALE`) is summarised: ``3x3 matrix, entries a, b, ...``
or ``a sum of 37 terms: t1 + t2 + ...``, and ``<details>`` holds it typeset (where it can
wrap) or as its LaTeX.
"""
from __future__ import annotations

import html
import re

from verify.report.math_breaks import pieces
from verify.report.mathml import fitted

#: A matrix with more rows or columns than this is shown as its LaTeX in a scrolling box (in
#: a derivation step) or by its shape and a few entries (in the evidence table).
MATRIX_MAX = 8
_ENV = re.compile(r"\\begin\{(matrix|array|pmatrix|bmatrix|smallmatrix)\}(\{[^{}]*\})?(.*?)"
                  r"\\end\{\1\}", re.S)
#: The width of a value's cell in em of its math at 1400 px: 14.5% of 80rem less padding, at
#: .88rem x 1.05, with a tenth to spare for the width estimate.
CELL_EM = 10.5
#: A value taller than this many lines of its cell is summarised; the summary's entries or
#: terms take at most :data:`SUMMARY_LINES`.
CELL_LINES = 6
SUMMARY_LINES = 2


def matrices(latex: str) -> list[list[list[str]]]:
    r"""The matrices in ``latex`` (sympy's ``\begin{matrix}``/``\begin{array}``), each as rows
    of entry sources; nested matrices are not split.

    >>> matrices(r"\left[\begin{matrix}1 & 0\\0 & 1\end{matrix}\right]")
    [[['1', '0'], ['0', '1']]]
    """
    return [[[cell.strip() for cell in row.split("&")] for row in m.group(3).split(r"\\")
             if row.strip()] for m in _ENV.finditer(latex)]


def matrix_shape(latex: str) -> tuple[int, int]:
    """The largest row and column count of the matrices in ``latex`` ((0, 0) when none)."""
    found = matrices(latex)
    return (max((len(m) for m in found), default=0),
            max((len(r) for m in found for r in m), default=0))


def is_large(latex: str) -> bool:
    return max(matrix_shape(latex)) > MATRIX_MAX


def _head(latex: str, room: float, more: str = r" + \dots") -> tuple[str, int]:
    r"""The leading terms of ``latex`` that fit ``room`` em (at least one), ``more`` after
    them where some are left out, and how many terms it has."""
    terms = [p.source for p in pieces(latex) if p.math]
    kept, used = [], 0.0
    for term in terms:
        used += fitted(term, display=False, width_em=CELL_EM).em
        if kept and used > room:
            break
        kept.append(term)
    rest = len(terms) - len(kept)
    return "".join(kept) + (more if rest else ""), len(terms)


def _quotient(latex: str) -> tuple[str, str] | None:
    r"""Numerator and denominator of ``latex`` when it is one ``\frac{A}{B}``."""
    found = re.fullmatch(r"\s*\\frac\{(.*)\}\{(.*)\}\s*", latex, re.S)
    if not found:
        return None
    top, bottom = found.groups()
    if top.count("{") != top.count("}") or bottom.count("{") != bottom.count("}"):
        return None  # the braces close elsewhere: not one quotient
    return top, bottom


def _typeset(latex: str) -> str:
    return f"<div class=cellmath>{fitted(latex, display=False, width_em=CELL_EM).html}</div>"


def summary(latex: str) -> str:
    """HTML that says what a value too large for its cell is: its shape and first entries
    (a matrix), its first terms (a sum) or those of its numerator and denominator."""
    room = SUMMARY_LINES * CELL_EM
    found = matrices(latex)
    if len(found) == 1 and latex.strip().startswith(r"\left["):
        rows = found[0]
        entries = [e for r in rows for e in r]
        shape = f"{len(rows)}x{max(len(r) for r in rows)} matrix, "
        if len(set(entries)) == 1:
            return html.escape(shape + "every entry ") + _typeset(entries[0])
        head, _ = _head(", ".join(entries), room, more=r"\ \dots")  # pieces end in ","
        return html.escape(shape + "entries ") + _typeset(head)
    quotient = _quotient(latex)
    if quotient:
        parts = [_head(side, room / 2) for side in quotient]
        return "".join(f"{html.escape(name)} ({n} term{'s' if n != 1 else ''}) "
                       f"{_typeset(head)}" for name, (head, n) in zip(
                           ("a quotient; numerator", "denominator"), parts))
    head, n = _head(latex, room)
    return html.escape(f"a sum of {n} terms: ") + _typeset(head)


def exact_cell(latex: str) -> str:
    """An exact value's cell: typeset and wrapped where it fits :data:`CELL_LINES` lines,
    else :func:`summary` with the value folded under it (typeset where it wraps within the
    cell, else its LaTeX)."""
    shown = fitted(latex, display=False, width_em=CELL_EM)
    if shown.fits and shown.em <= CELL_LINES * CELL_EM and not is_large(latex):
        return f"<div class=cellmath>{shown.html}</div>"
    whole = (f"<div class=cellmath>{shown.html}</div>" if shown.fits and not is_large(latex)
             else f"<pre class=latex>{html.escape(latex)}</pre>")
    what = "all of it" if "cellmath" in whole else "all of it (LaTeX)"
    return f"{summary(latex)}<details><summary>{what}</summary>{whole}</details>"
