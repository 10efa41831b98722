r"""Long formulas broken over lines, for a browser without JavaScript.

Chromium lays a ``<math>`` element out as one box that never breaks: MathML Core has no line
breaking (it was left to a later level), so a formula wider than its column is cut at the
column's edge. A long formula is therefore cut here into pieces at its top-level break points,
each piece its own ``<math>``, and the browser wraps between pieces as it wraps words:

- after punctuation (``,``, ``;``, ``:``) and explicit spaces (``\ ``, ``\quad``);
- before a relation (``=``, ``\le``, ``\in``, ...) and before a binary ``+`` or ``-``, the
  TeX convention for displayed formulas;
- around ``\text{...}``, whose words become page text and wrap like it.

Nothing inside a bracket, a group or an environment is a break point, so every piece is a
formula of its own. :func:`width` estimates how wide MathML is set, in em, so that only
formulas wider than their box are cut (a short one stays one element).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import NamedTuple

_TOKEN = re.compile(r"\\(?:[A-Za-z]+\*?|.)|\s+|.", re.S)
_OPEN = {"{", "(", "[", r"\{", r"\langle", r"\lbrace", r"\lvert", r"\lVert", r"\lfloor",
         r"\lceil", r"\left", r"\begin"}
_CLOSE = {"}", ")", "]", r"\}", r"\rangle", r"\rbrace", r"\rvert", r"\rVert", r"\rfloor",
          r"\rceil", r"\right", r"\end"}
#: Bars open and close with the same token: the second of a pair closes it.
_BARS = {"|", r"\|", r"\vert", r"\Vert"}
RELATIONS = {"=", "<", ">", r"\le", r"\leq", r"\ge", r"\geq", r"\ne", r"\neq", r"\approx",
             r"\sim", r"\simeq", r"\equiv", r"\cong", r"\in", r"\notin", r"\to", r"\propto",
             r"\subset", r"\subseteq", r"\mapsto", r"\Rightarrow", r"\Leftrightarrow", r"\iff",
             r"\implies", r"\ll", r"\gg", r"\rightarrow", r"\longrightarrow"}
_BINARY = {"+", "-", r"\pm", r"\mp"}
_PUNCTUATION = {",", ";", ":"}
_SPACES = {r"\ ", r"\quad", r"\qquad"}
_TEXT = {r"\text", r"\textrm", r"\mbox"}
_EDGE_SPACES = re.compile(r"^(?:\s|\\ |\\q?quad\b)+|(?:\s|\\ |\\q?quad\b)+$")
#: After one of these a ``+`` or ``-`` is unary (a sign), not a break point.
_NOT_OPERAND = RELATIONS | _BINARY | _PUNCTUATION | _SPACES | {
    "^", "_", r"\cdot", r"\times", r"\sum", r"\prod", r"\int", r"\frac", r"\tfrac", r"\dfrac"}


class Piece(NamedTuple):
    """A run of a formula between break points: LaTeX (``math``) or the words of a
    ``\\text`` (not ``math``)."""

    math: bool
    source: str


def _group_end(tokens: list[str], start: int) -> int:
    """The index after the brace group opening at ``tokens[start]`` (``{``)."""
    level = 0
    for i in range(start, len(tokens)):
        level += (tokens[i] == "{") - (tokens[i] == "}")
        if level == 0:
            return i + 1
    return len(tokens)


def pieces(latex: str, *, inside_brackets: bool = False) -> list[Piece]:
    r"""``latex`` cut at its top-level break points; joined, the math pieces and the texts
    (as ``\text{...}``) are the formula again. With ``inside_brackets``, round and square
    brackets at the top level group nothing, so a long factor ``a(b+c)`` breaks inside its
    brackets too (the last resort before scaling: its brackets no longer stretch).

    >>> [p.source for p in pieces(r"\sigma(x)=x^2,\ n=M^2+\tfrac12(a+b)")]
    ['\\sigma(x)', '=x^2,', ' ', 'n', '=M^2', '+\\tfrac12(a+b)']
    >>> pieces(r"a\text{ is }b")[1]
    Piece(math=False, source=' is ')
    >>> [p.source for p in pieces(r"a\left(b+c\right)", inside_brackets=True)]
    ['a(b', '+c)']
    """
    tokens = _TOKEN.findall(latex)
    out: list[Piece] = []
    current: list[str] = []
    stack: list[str] = []
    previous = None  # the last significant top-level token
    pending = False  # a break after punctuation or a space, taken before the next token

    def cut() -> None:
        # explicit spaces at a piece's ends are the page's spaces between pieces
        source = _EDGE_SPACES.sub("", "".join(current))
        spaced = source != "".join(current)
        if source.strip():
            out.append(Piece(True, source))
        if spaced:
            text(" ")
        current.clear()

    def text(words: str) -> None:
        if out and not out[-1].math:
            words = out.pop().source + words
        out.append(Piece(False, re.sub(r"\s+", " ", words)))

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not stack and not tok.isspace():
            if tok in _TEXT and i + 1 < len(tokens) and tokens[i + 1] == "{":
                end = _group_end(tokens, i + 1)
                cut()
                text("".join(tokens[i + 2: end - 1]))
                i, previous, pending = end, None, False
                continue
            if pending and tok not in _SPACES or tok in RELATIONS or (
                    tok in _BINARY and previous not in _NOT_OPERAND and previous is not None):
                cut()
                pending = False
            if tok in _SPACES or tok in _PUNCTUATION and not _before(tokens, i, "="):
                pending = True
                previous = None
        if inside_brackets and not stack and _plain_bracket(tokens, i):
            if tok in (r"\left", r"\right"):
                i += 1
            current.append(tokens[i])
            previous = tokens[i]
            i += 1
            continue
        current.append(tok)
        if tok in (r"\left", r"\right") and i + 1 < len(tokens):
            i += 1  # the delimiter belongs to \left or \right: it opens or closes nothing
            current.append(tokens[i])
        if tok in _BARS:
            if stack and stack[-1] == tok:
                stack.pop()
            else:
                stack.append(tok)
        elif tok in _OPEN:
            stack.append(tok)
        elif tok in _CLOSE and stack:
            stack.pop()
        if not stack and not tok.isspace() and not pending:
            previous = tok
        i += 1
    cut()
    return out


def _plain_bracket(tokens: list[str], i: int) -> bool:
    r"""``tokens[i]`` is a round or square bracket, or ``\left``/``\right`` before one."""
    tok = tokens[i]
    if tok in (r"\left", r"\right"):
        return i + 1 < len(tokens) and tokens[i + 1] in "()[]"
    return tok in ("(", ")", "[", "]")


def _before(tokens: list[str], i: int, what: str) -> bool:
    """The next significant token after ``tokens[i]`` is ``what`` (``:=`` is one relation)."""
    rest = [t for t in tokens[i + 1: i + 3] if not t.isspace()]
    return bool(rest) and rest[0] == what


# Widths in em of the DejaVu Math font (the widest of the math fonts the report names; the
# font-size factor of the box is the caller's), measured against Chromium's layout.
_WIDE = 0.7
_SCRIPT = 0.8
_SPACE = {"relation": 0.56, "binary": 0.44, "punctuation": 0.17}
_MO_KIND = {**{c: "relation" for c in "=<>≤≥≠≈∼≃≡≅∈∉→∝⊂⊆↦⇒⇔≪≫⟶≔"},
            **{c: "binary" for c in "+−-±∓×·⋅∗⊗⊕⊙∘∧∨∩∪∖"},
            **{c: "punctuation" for c in ",;:"}}
_INVISIBLE = "\u2061\u2062\u2063\u2064"
_LARGE = "∑∏∫∮⋃⋂"
_EM = re.compile(r"([\d.]+)\s*em")


def _text_width(text: str, per_char: float) -> float:
    return sum(0 if ch in _INVISIBLE else 1.2 if ch in _LARGE else per_char for ch in text)


def _width(node: ET.Element) -> float:
    tag = node.tag.rsplit("}", 1)[-1]
    kids = list(node)
    text = (node.text or "").strip() if tag in ("mi", "mn", "mo", "mtext", "ms") else ""
    if tag == "mo":
        return _text_width(text, _WIDE) + _SPACE.get(_MO_KIND.get(text, ""), 0.0)
    if tag in ("mi", "mn"):
        return _text_width(text, _WIDE)
    if tag in ("mtext", "ms"):
        return _text_width(node.text or "", 0.5)
    if tag == "mspace":
        found = _EM.match(node.get("width", ""))
        return float(found.group(1)) if found else 0.0
    if tag == "annotation":
        return 0.0
    if tag == "semantics":
        return _width(kids[0]) if kids else 0.0
    if tag == "mfrac" and len(kids) == 2:
        return max(map(_width, kids)) + 0.25
    if tag in ("msub", "msup") and len(kids) == 2:
        return _width(kids[0]) + _SCRIPT * _width(kids[1])
    if tag == "msubsup" and len(kids) == 3:
        return _width(kids[0]) + _SCRIPT * max(_width(kids[1]), _width(kids[2]))
    if tag in ("munder", "mover", "munderover") and kids:
        return max([_width(kids[0])] + [_SCRIPT * _width(k) for k in kids[1:]])
    if tag == "msqrt":
        return sum(map(_width, kids)) + 1.0
    if tag == "mroot" and len(kids) == 2:
        return _width(kids[0]) + 1.0 + 0.5 * _width(kids[1])
    if tag == "mtable":
        columns: list[float] = []
        for row in kids:
            for j, cell in enumerate(row):
                w = _width(cell)
                columns[j:j + 1] = [max(columns[j], w) if j < len(columns) else w]
        return sum(columns) + 0.8 * len(columns)
    return sum(map(_width, kids))


def width(mathml: str) -> float:
    """How wide presentation ``mathml`` (one element or several) is set, in em; an estimate
    from its tokens and layout schemata that errs on the wide side."""
    try:
        root = ET.fromstring(f"<mrow>{mathml}</mrow>")
    except ET.ParseError:
        return _WIDE * len(re.sub(r"<[^>]+>", "", mathml))
    return _width(root)
