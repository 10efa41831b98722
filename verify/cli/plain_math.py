r"""LaTeX as a terminal shows it: unicode symbols and plain words, no backslash commands.

>>> readable(r"\sigma(x)=x^2,\ \|\mathbf w\|=1:\ \text{maxima of }\mathcal E")
'σ(x)=x^2, ‖𝐰‖=1: maxima of ℰ'
>>> readable(r"\mathcal E=\tfrac12\|u\|^2,\ \frac{a+b}{2},\ \frac{M}{8d_k}")
'ℰ=1/2‖u‖^2, (a+b)/2, M/(8d_k)'
"""
from __future__ import annotations

import textwrap
from functools import cache

#: What pylatexenc drops (a norm's bars) or does not know, rewritten first.
_BEFORE = {r"\|": "‖", r"\tfrac": r"\frac", r"\dfrac": r"\frac"}


def _fraction(node, l2tobj) -> str:
    """``a/b``, each side in parentheses unless it is one symbol or word: ``(a+b)/2``.
    (pylatexenc passes the converter by the name ``l2tobj``.)"""
    top, bottom = (l2tobj.nodelist_to_text([arg]).strip()
                   for arg in node.nodeargd.argnlist[-2:])

    def group(text: str) -> str:
        return text if len(text) <= 1 or text.isalnum() else f"({text})"

    return f"{group(top)}/{group(bottom)}"


@cache
def _converter():
    """pylatexenc's converter with :func:`_fraction`; imported here, on first use, so that the
    rest of the command line runs where pylatexenc is not installed (a GPU machine)."""
    from pylatexenc.latex2text import (LatexNodes2Text, MacroTextSpec,
                                       get_default_latex_context_db)

    context = get_default_latex_context_db()
    context.add_context_category("fractions", prepend=True,
                                 macros=[MacroTextSpec("frac", simplify_repl=_fraction)])
    return LatexNodes2Text(latex_context=context, math_mode="text", strict_latex_spaces=True)



def readable(latex: str) -> str:
    """``latex`` (a statement, or prose with ``$...$``) as unicode text on one line."""
    for command, text in _BEFORE.items():
        latex = latex.replace(command, text)
    return " ".join(_converter().latex_to_text(latex).split())


def wrapped(latex: str, indent: str = "  ", width: int = 100) -> str:
    """:func:`readable`, wrapped to ``width`` columns under ``indent``."""
    return textwrap.fill(readable(latex), width=width, initial_indent=indent,
                         subsequent_indent=indent)
