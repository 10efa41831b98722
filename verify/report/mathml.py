r"""Presentation MathML inside MathML Core, for reports that render in a browser without
JavaScript.

Sympy expressions are printed by sympy's presentation printer; the LaTeX a claim's statement is
written in goes through ``latex2mathml``. Both are then brought inside MathML Core: Core
ignores ``mathvariant`` other than ``normal``, so styled letters become the Unicode
mathematical alphanumeric characters (``\mathbf w`` -> 𝐰, ``\mathcal E`` -> ℰ), which every
MathML renderer shows. Every formula keeps its LaTeX source in an ``<annotation>``.

The readings of claims are prose with inline LaTeX and no ``$`` delimiters; :func:`prose`
finds the formula runs by their tokens and typesets only those.
"""
from __future__ import annotations

import html
import re
from typing import Any, NamedTuple

from verify.report.math_breaks import Piece, pieces, width

#: Offsets of the Mathematical Alphanumeric Symbols block (U+1D400...) per mathvariant, for
#: capital letters; small letters follow 26 code points later.
_ALPHA_BASE = {
    "bold": 0x1D400, "italic": 0x1D434, "bold-italic": 0x1D468, "script": 0x1D49C,
    "bold-script": 0x1D4D0, "fraktur": 0x1D504, "double-struck": 0x1D538,
    "bold-fraktur": 0x1D56C, "sans-serif": 0x1D5A0, "bold-sans-serif": 0x1D5D4,
    "sans-serif-italic": 0x1D608, "monospace": 0x1D670,
}
#: Letters that Unicode encodes outside the block (the block has holes there).
_HOLES = {
    ("italic", "h"): "ℎ",
    ("script", "B"): "ℬ", ("script", "E"): "ℰ", ("script", "F"): "ℱ", ("script", "H"): "ℋ",
    ("script", "I"): "ℐ", ("script", "L"): "ℒ", ("script", "M"): "ℳ", ("script", "R"): "ℛ",
    ("script", "e"): "ℯ", ("script", "g"): "ℊ", ("script", "o"): "ℴ",
    ("fraktur", "C"): "ℭ", ("fraktur", "H"): "ℌ", ("fraktur", "I"): "ℑ", ("fraktur", "R"): "ℜ",
    ("fraktur", "Z"): "ℨ",
    ("double-struck", "C"): "ℂ", ("double-struck", "H"): "ℍ", ("double-struck", "N"): "ℕ",
    ("double-struck", "P"): "ℙ", ("double-struck", "Q"): "ℚ", ("double-struck", "R"): "ℝ",
    ("double-struck", "Z"): "ℤ",
}
_BOLD_DIGIT = 0x1D7CE


def styled(text: str, variant: str) -> str:
    """``text`` in the Unicode letters of ``variant`` (characters without one are kept).

    >>> styled("w", "bold"), styled("E", "script"), styled("R", "double-struck")
    ('𝐰', 'ℰ', 'ℝ')
    """
    base = _ALPHA_BASE.get(variant)
    out = []
    for ch in text:
        if (variant, ch) in _HOLES:
            out.append(_HOLES[(variant, ch)])
        elif base is not None and "A" <= ch <= "Z":
            out.append(chr(base + ord(ch) - ord("A")))
        elif base is not None and "a" <= ch <= "z":
            out.append(chr(base + 26 + ord(ch) - ord("a")))
        elif variant == "bold" and ch.isdigit():
            out.append(chr(_BOLD_DIGIT + int(ch)))
        else:
            out.append(ch)
    return "".join(out)


_VARIANT = re.compile(r'<(mi|mn|mtext)([^>]*?) mathvariant="([a-z-]+)"([^>]*)>([^<]*)</\1>')
#: Outside MathML Core; the converters here do not emit them, and a report must not either.
NOT_CORE = ("mfenced", "menclose", "maction", "mlabeledtr", "mglyph")


#: ``<menclose notation="top">`` (sympy's complex conjugate) holding no other menclose: Core
#: writes an overbar as ``<mover>`` with a stretchy macron-like accent.
_OVERBAR = re.compile(r'<menclose notation="top">((?:(?!<menclose).)*?)</menclose>', re.S)


class NotCore(ValueError):
    """MathML that cannot be brought inside MathML Core."""


def to_core(mathml: str) -> str:
    """Replace ``mathvariant`` styling by Unicode letters (MathML Core honours only
    ``normal``), overbars by ``<mover>``, and check that no element outside Core remains.

    >>> to_core('<menclose notation="top"><mi>z</mi></menclose>')
    '<mover accent="true"><mrow><mi>z</mi></mrow><mo stretchy="true">&#x203E;</mo></mover>'
    """
    def fix(m: re.Match) -> str:
        tag, before, variant, after, text = m.groups()
        if variant == "normal":
            return m.group(0)
        letters = styled(html.unescape(text), variant)
        # a single styled letter in <mi> would be italicised again: mark it normal
        normal = ' mathvariant="normal"' if tag == "mi" and len(letters) == 1 else ""
        return f"<{tag}{before}{after}{normal}>{html.escape(letters, quote=False)}</{tag}>"

    out = _VARIANT.sub(fix, mathml)
    while True:  # innermost first, so nested overbars convert too
        out, n = _OVERBAR.subn(r'<mover accent="true"><mrow>\1</mrow>'
                               r'<mo stretchy="true">&#x203E;</mo></mover>', out)
        if not n:
            break
    bad = [t for t in NOT_CORE if f"<{t}" in out]
    if bad:
        raise NotCore(f"MathML outside Core: {', '.join(bad)}")
    return out


def core_or_source(mathml: str, latex: str, *, display: bool) -> str:
    """:func:`wrap` of :func:`to_core`; MathML that cannot be brought inside Core is shown as
    its LaTeX source in ``<code>`` instead (a report never fails on a formula)."""
    try:
        return wrap(to_core(mathml), latex, display=display)
    except NotCore:
        return f"<code>{html.escape(latex)}</code>"


#: A numeric character reference (``&#x00028;``, as the converters write every operator).
_REFERENCE = re.compile(r"&#x([0-9A-Fa-f]+);")


def _character(m: re.Match) -> str:
    """The character itself (the page is UTF-8: one to four bytes instead of nine), except
    markup characters and invisible controls, which stay references."""
    ch = chr(int(m.group(1), 16))
    return m.group(0) if ch in "<>&\"'" or not ch.isprintable() and ch != "\u00a0" else ch


def wrap(body: str, latex: str, *, display: bool, displaystyle: bool = False) -> str:
    """``<math>`` around a presentation ``body`` with its LaTeX kept as an annotation;
    ``displaystyle`` sets an inline formula in the display style (a piece of a displayed
    formula, :func:`fitted`)."""
    mode = "block" if display else "inline"
    style = ' displaystyle="true"' if displaystyle else ""
    body = _REFERENCE.sub(_character, body)
    return (f'<math display="{mode}"{style}><semantics><mrow>{body}</mrow>'
            f'<annotation encoding="application/x-tex">{html.escape(latex, quote=False)}'
            f"</annotation></semantics></math>")


#: Standard operator names latex2mathml does not know (it would print ``\\arg`` verbatim).
_UNKNOWN_OPERATORS = re.compile(r"\\(arg)(?![A-Za-z])")
#: A command the converter passed through unread.
_RAW_COMMAND = re.compile(r"<m[io]>\\[A-Za-z]+</m[io]>")


def _converted(latex: str, *, display: bool, displaystyle: bool = False) -> str:
    """One ``<math>`` for a LaTeX formula, or its source in ``<code>`` (see
    :func:`from_latex`)."""
    from latex2mathml.converter import convert

    try:
        converted = convert(_UNKNOWN_OPERATORS.sub(r"\\operatorname{\1}", latex))
    except Exception:  # noqa: BLE001 - any parse failure falls back to the source text
        return f"<code>{html.escape(latex)}</code>"
    if _RAW_COMMAND.search(converted):
        return f"<code>{html.escape(latex)}</code>"
    inner = re.sub(r"^<math[^>]*>|</math>$", "", converted.strip())
    try:
        return wrap(to_core(inner), latex, display=display, displaystyle=displaystyle)
    except NotCore:
        return f"<code>{html.escape(latex)}</code>"


#: The width, in em of the formula's font, that a formula may take before it is broken over
#: lines: a report's column at 1400 px (80rem) less the statement box's padding.
LINE_EM = 68.0
#: A piece of a broken formula wider than its box is scaled down to fit, as a last resort,
#: but never below this: smaller, it could not be read.
MIN_SCALE = 0.6


class Fitted(NamedTuple):
    """A formula as HTML, whether it fits the width it was set for (scaled at most to
    :data:`MIN_SCALE`), and its estimated width in em (all pieces on one line)."""

    html: str
    fits: bool
    em: float


def fitted(latex: str, *, display: bool, width_em: float) -> Fitted:
    """A formula set to fit ``width_em``: one ``<math>`` where its estimated width fits,
    else cut at its top-level break points (:func:`verify.report.math_breaks.pieces`) into
    pieces that the browser wraps like words: a displayed formula's continuation lines are
    indented, and its prose runs are page text. A piece still too wide is scaled down."""
    whole = _converted(latex, display=display)
    total = width(whole)
    if total <= width_em:
        return Fitted(whole, True, total)
    parts, fits = _fitted_pieces(pieces(latex), display=display, width_em=width_em)
    tag = "div" if display else "span"
    return Fitted(f"<{tag} class=formula>{''.join(parts)}</{tag}>", fits, total)


def _fitted_pieces(cut: list[Piece], *, display: bool, width_em: float,
                   opened: bool = False) -> tuple[list[str], bool]:
    """The HTML of each piece of a formula, and whether all of them fit: a piece too wide
    is cut inside its brackets, then scaled (:func:`fitted`)."""
    parts, fits = [], True
    for piece in cut:
        if not piece.math:
            parts.append(f"<span class=mtext>{html.escape(piece.source, quote=False)}</span>")
            continue
        one = _converted(piece.source, display=False, displaystyle=display)
        scale = width_em / max(width(one), 1e-9)
        inner = [] if opened or scale >= 1 else pieces(piece.source, inside_brackets=True)
        if len(inner) > 1:
            more, inner_fits = _fitted_pieces(inner, display=display, width_em=width_em,
                                              opened=True)
            parts += more
            fits = fits and inner_fits
            continue
        if scale < 1:
            fits = fits and scale >= MIN_SCALE
            one = one.replace("<math ", f'<math style="font-size:{max(scale, MIN_SCALE):.0%}" ',
                              1)
        parts.append(one)
    return parts, fits


def from_latex(latex: str, *, display: bool = False, width_em: float = LINE_EM) -> str:
    r"""MathML (Core) for a LaTeX formula, broken over lines where it is wider than
    ``width_em`` (:func:`fitted`); a formula the converter cannot read, or reads only in part
    (a command left as its own name), is shown as its source in ``<code>``, never dropped.

    >>> "arg</mo>" in from_latex(r"g^\ast=\arg\max p_g")
    True
    """
    return fitted(latex, display=display, width_em=width_em).html


def from_sympy(expr: Any, *, display: bool = True) -> str:
    """MathML (Core) for a sympy expression, printed by sympy's presentation printer."""
    import sympy as sp

    return core_or_source(sp.mathml(expr, printer="presentation"), sp.latex(expr),
                          display=display)


#: A clear formula: a backslash command (``\\sigma``) or a braced sub/superscript (``W_{1}``,
#: ``x^{2}``). Identifiers with underscores inside plain words (``lr_scale``, ``sum_m``),
#: ``<=``, ``!=``, single letters and words such as ``col`` stay text.
_MATHY = re.compile(r"\\[A-Za-z|{}]|[\^_]\{")
#: LaTeX's escapes of text characters (``compute\\_diag``), shown as the characters in prose.
_TEXT_ESCAPES = re.compile(r"\\([_%&#$])")
#: Operators that, standing alone between two formulas, join them into one.
_JOINING = {"=", "+", "-", "<", ">", "\\cdot", "\\times"}
#: A formula ending (starting) with one of these takes a following (preceding) single letter
#: or number as its operand: ``n\\times K``.
_OP_END = re.compile(r"(=|\+|-|<|>|\\(times|cdot|le|leq|ge|geq|in|to|ne|approx|sim|propto|pm|"
                     r"mp|otimes|oplus|odot|circ|mapsto))$")
_OP_START = re.compile(r"^(=|\+|-|<|>|\\(times|cdot|le|leq|ge|geq|in|to|ne|approx|sim|propto|"
                       r"pm|mp|otimes|oplus|odot|circ|mapsto)\b)")
_OPERAND = re.compile(r"^(?:[A-Za-z]|\d+(?:\.\d+)?)$")
#: One-letter English words, kept as text.
_WORDS = {"a", "A", "I"}
_TRAILING = re.compile(r"[,.;:)]+$")
_LEADING = re.compile(r"^\(+")


def _depth(text: str) -> int:
    """Brackets ``text`` leaves open: braces, and parentheses with square brackets counted
    together (an interval ``(0,1]`` closes what it opens)."""
    return (text.count("{") - text.count("}") + text.count("(") + text.count("[")
            - text.count(")") - text.count("]"))


#: A plain English word: it ends a formula left open by a parenthesis (prose is never
#: swallowed into math by an unbalanced bracket).
_ENGLISH = re.compile(r"^\(?[A-Za-z]{3,}'?[a-z]*[,.;:)]*$")


#: Commands whose argument may be the next word (``\\mathbf 1``).
_COMMAND_AT_END = re.compile(r"\\(mathbf|mathcal|mathbb|mathrm|mathsf|mathit|boldsymbol|tilde|"
                             r"hat|bar|vec|dot|widetilde|widehat|overline|operatorname|"
                             r"tfrac|dfrac|frac|sqrt|text)$")


def _formula_end(word: str, depth: int) -> int:
    """Where the formula continued into ``word`` ends: after the bracket that closes it, with
    trailing punctuation left to the prose."""
    if depth == 0 or _depth(word) + depth > 0:
        trail = _TRAILING.search(word) if depth == 0 else None
        if not trail or trail.start() == 0:
            return len(word)
        start = trail.start()
        while start < len(word) and word[start] == ")" and _depth(word[:start]) > 0:
            # a bracket the word itself opened stays in the formula
            start += 1
        return start
    level = depth
    for i, ch in enumerate(word):
        level += (ch in "{([") - (ch in "})]")
        if level <= 0 and ch in "})]":
            rest = word[i + 1:]
            return i + 1 if _TRAILING.fullmatch(rest) or not rest else len(word)
    trail = _TRAILING.search(word)
    return trail.start() if trail else len(word)


def prose(text: str) -> str:
    r"""HTML for prose with inline LaTeX: only clear formula runs (a backslash command, or
    ``^``/``_`` with braces, continued while brackets are open) are typeset; the rest,
    ``lr_scale``, ``<=`` and single words included, is escaped text.

    >>> prose("a free n\\times K matrix").count("<math")
    1
    >>> prose("lr_scale <= 2 and sum_m != col(Yt)")
    'lr_scale &lt;= 2 and sum_m != col(Yt)'
    """
    out = []
    for i, (is_math, piece, space) in enumerate(prose_pieces(text)):
        if i and space:
            out.append(" ")
        out.append(from_latex(piece) if is_math
                   else html.escape(_TEXT_ESCAPES.sub(r"\1", piece), quote=False))
    return "".join(out)


def prose_markdown(text: str) -> str:
    r"""Markdown for the same prose: the formula runs :func:`prose` typesets go between
    ``$``, the rest stays text.

    >>> prose_markdown("a free n\\times K matrix, lr_scale <= 2")
    'a free $n\\times K$ matrix, lr_scale <= 2'
    >>> prose_markdown("\\tilde F=\\sigma(XW): the features")
    '$\\tilde F=\\sigma(XW)$: the features'
    >>> prose_markdown("x^{2}(f(a)))")
    '$x^{2}(f(a)))$'
    """
    out = []
    for i, (is_math, piece, space) in enumerate(prose_pieces(text)):
        if i and space:
            out.append(" ")
        out.append(f"${piece}$" if is_math else _TEXT_ESCAPES.sub(r"\1", piece))
    return "".join(out)


#: Quotation marks: one that opens a word opens a quoted phrase (a prime never starts a
#: word), and while one is open, one that ends a word (before punctuation) closes it; both are
#: prose, so ``'get b_{j\ell}<0'`` typesets the formula between them, not the quotes. A ``'``
#: that ends a word with no phrase open is a prime (``\sigma'``) and stays in the formula.
_QUOTES = "'\""
_CLOSING = re.compile(r"['\"][,.;:)!?]*$")


def _quotes(word: str, open_quote: bool) -> tuple[str, str, str, bool]:
    """``word`` as (opening quote, inner, closing quote with the punctuation after it, a
    quoted phrase still open after it)."""
    lead = ""
    if len(word) > 1 and word[0] in _QUOTES and word.strip(_QUOTES):
        lead, word, open_quote = word[0], word[1:], True
    trail = ""
    if open_quote:
        close = _CLOSING.search(word)
        if close and close.start() > 0:
            trail, word, open_quote = word[close.start():], word[: close.start()], False
    return lead, word, trail, open_quote


def prose_pieces(text: str) -> list[tuple[bool, str, bool]]:
    """``text`` cut into ``(is math, piece, space before)``: the clear formula runs and the
    prose between them (see :func:`prose`); quotation marks around a phrase stay prose."""
    pieces: list[tuple[bool, str, bool]] = []  # (is math, text, space before)
    depth, needs_arg = 0, False  # the formula being read goes on: open brackets, or a
    #                              command (\\mathbf) whose argument is the next word
    quoted = False  # a quoted phrase is open
    for whole in text.split(" "):
        lead_q, word, trail_q, quoted = _quotes(whole, quoted)
        if lead_q:
            pieces.append((False, lead_q, True))
            depth, needs_arg = 0, False  # a quoted phrase starts: any formula ended
        space = not lead_q
        if depth > 0 and not needs_arg and _ENGLISH.match(word):
            depth = 0  # an English word: the formula ended before it
        if depth > 0 or needs_arg:
            end = _formula_end(word, depth)
            pieces.append((True, word[:end], space))
            if end < len(word):
                pieces.append((False, word[end:], False))
            depth = max(depth + _depth(word[:end]), 0)
            needs_arg = bool(_COMMAND_AT_END.search(word[:end]))
        else:
            lead = _LEADING.match(word)
            lead_s = lead.group(0) if lead else ""
            core = word[len(lead_s):]
            trail = _TRAILING.search(core)
            trail_s = trail.group(0) if trail and _depth(core[: trail.start()]) <= 0 else ""
            core = core[: len(core) - len(trail_s)]
            if core and _MATHY.search(core):
                if lead_s:
                    pieces.append((False, lead_s, space))
                pieces.append((True, core, space and not lead_s))
                if trail_s:
                    pieces.append((False, trail_s, False))
                depth = max(_depth(core), 0)
                needs_arg = bool(_COMMAND_AT_END.search(core))
            elif word or not (lead_q or trail_q):
                pieces.append((False, word, space))
        if trail_q:
            pieces.append((False, trail_q, False))
            depth, needs_arg = 0, False  # the quoted phrase, and any formula in it, ended
    pieces = _join_operands(pieces)
    merged: list[tuple[bool, str, bool]] = []
    for is_math, piece, space in pieces:
        if is_math and merged and merged[-1][0] and space:
            merged[-1] = (True, merged[-1][1] + " " + piece, merged[-1][2])
        elif not is_math and merged and not merged[-1][0] and not space:
            merged[-1] = (False, merged[-1][1] + piece, merged[-1][2])
        else:
            merged.append((is_math, piece, space))
    return merged


def _join_operands(pieces: list[tuple[bool, str, bool]]) -> list[tuple[bool, str, bool]]:
    """Text pieces that belong to the formulas beside them become math: a lone operator
    between two formulas, a single letter or number after a formula ending in an operator
    (or before one starting with an operator), each separated by spaces."""
    out = list(pieces)

    def math_at(j: int) -> bool:
        return 0 <= j < len(out) and out[j][0]

    for i, (is_math, piece, space) in enumerate(out):
        if is_math:
            continue
        nxt_space = i + 1 < len(out) and out[i + 1][2]
        if piece in _JOINING and space and nxt_space and math_at(i - 1) and math_at(i + 1):
            out[i] = (True, piece, space)
        elif (_OPERAND.match(piece) and piece not in _WORDS and space and math_at(i - 1)
              and _OP_END.search(out[i - 1][1])):
            out[i] = (True, piece, space)
        elif (_OPERAND.match(piece) and piece not in _WORDS and nxt_space and math_at(i + 1)
              and _OP_START.search(out[i + 1][1])):
            out[i] = (True, piece, space)
    return out
