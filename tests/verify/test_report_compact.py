"""What keeps the report small without hiding anything: plots thinned to what they can show
(extremes kept) with text as SVG text, derivations shared by several claims shown once,
formulas too long to read typeset shown as their LaTeX, a derived value equal to the stated
one named; and quotation marks in prose kept out of the formulas."""
from __future__ import annotations

import json
import math
import re

import sympy as sp

from verify.plots import Plot
from verify.report.html import (STEP_LATEX_MAX, claim_section, data_text, evidence_table,
                                render_html)
from verify.report.mathml import prose, prose_markdown, prose_pieces
from verify.report.svg_plots import MAX_POINTS, decimate, draw_figure

from tests.verify.test_findings import claim, item, record_of


# --- quotes in prose ------------------------------------------------------------------------

def test_quotes_around_a_phrase_stay_prose_and_primes_stay_math():
    text = (r"pooled over seeds; 'get b_{j\ell}<0' is read as \Pr[b_{j\ell}<0]>1/2; "
            r"'O(\|\mathbf v_\perp\|^2)' as printed; '\beta>1 speeds up': \beta from 1; "
            r"'Learned \mathcal S': each; from \sigma' alone, x^2\phi'=x\sigma''-\sigma' holds")
    formulas = [piece for is_math, piece, _ in prose_pieces(text) if is_math]
    assert r"b_{j\ell}<0" in formulas and r"O(\|\mathbf v_\perp\|^2)" in formulas
    assert r"\beta>1" in formulas and r"\mathcal S" in formulas
    assert r"\sigma'" in formulas and r"x^2\phi'=x\sigma''-\sigma'" in formulas  # primes
    assert not any(f.startswith("'") for f in formulas)
    primes = [f for f in formulas if f.endswith("'")]
    assert primes == [r"\sigma'", r"x^2\phi'=x\sigma''-\sigma'"]
    md = prose_markdown(text)
    assert r"'get $b_{j\ell}<0$' is read" in md
    assert r"'$O(\|\mathbf v_\perp\|^2)$' as printed" in md
    assert r"'$\beta>1$ speeds up':" in md and r"'Learned $\mathcal S$': each" in md
    page = prose(text)
    assert "0'</annotation>" not in page and "^2)'</annotation>" not in page
    assert not re.search(r"<annotation[^>]*>'", page)


def test_a_possessive_or_a_lone_quote_changes_nothing():
    for text in ("the probabilists' Hermite polynomials", "li2.fig3's 'none'), checked",
                 "a ' b", "x  y", "'=' for T_a"):
        assert prose_markdown(text) == text
        assert "<math" not in prose(text)


# --- plots ----------------------------------------------------------------------------------

def test_decimation_keeps_every_extreme_and_the_ends():
    n = 50_000
    xs = list(range(n))
    ys = [math.sin(i / 300) for i in range(n)]
    ys[12_345], ys[40_000], ys[777] = 40.0, -40.0, math.nan
    dx, dy = decimate(xs, ys)
    assert len(dx) <= MAX_POINTS and dx == sorted(dx)
    assert (dx[0], dx[-1]) == (0, n - 1)
    assert dx[dy.index(40.0)] == 12_345 and dx[dy.index(-40.0)] == 40_000
    assert any(math.isnan(y) for y in dy)  # the gap stays
    finite = [y for y in dy if math.isfinite(y)]
    assert max(finite) == 40.0 and min(finite) == -40.0
    assert decimate([1, 2, 3], [3.0, 1.0, 2.0]) == ([1, 2, 3], [3.0, 1.0, 2.0])


def test_a_long_curve_draws_to_a_small_svg_with_text_as_text():
    n = 20_000
    curve = Plot("loss", x_label="step", y_label="loss",
                 series={"train": (list(range(n)), [1 / (1 + i) for i in range(n)])},
                 log_y=True)
    svg, problem = draw_figure("loss", curve.as_record())
    assert problem is None
    assert len(svg) < 40_000  # 20k points at six digits each would be ~700 kB
    assert ">loss</text>" in svg and "<!--" not in svg and '<g id="' not in svg
    assert "DejaVuSans-" not in svg  # no glyph outlines
    assert not re.search(r'\bd="[^"]*\d\.\d{3}', svg)  # coordinates to 0.01 pt
    assert draw_figure.__wrapped__("loss", curve.as_record())[0] == svg  # deterministic


# --- derivations ----------------------------------------------------------------------------

def _derivation(title, latex):
    return {"title": title, "steps": [{"text": "the step", "latex": latex, "mathml": None}]}


def test_a_derivation_shared_by_claims_is_shown_once_and_linked():
    shared = _derivation("the shared one", r"x^{2} + 1")
    own = _derivation("its own", r"y^{3}")
    first = claim("a.one", "pass", derivations=[shared, shared])
    second = claim("a.two", "pass", derivations=[own, shared])
    page = render_html(record_of(first, second))
    assert page.count("<summary><b>the shared one</b>") == 1
    assert page.count("<summary><b>its own</b>") == 1
    assert "the same derivation as in this claim's derivations above" in page
    assert "the same derivation as in <a href='#a.one'>a.one</a>" in page
    # a section rendered alone (Jupyter) shows every derivation of its claim
    alone = claim_section(second)
    assert alone.count("<summary><b>the shared one</b>") == 1


def test_a_formula_too_long_to_read_typeset_is_its_latex():
    long_sum = sp.latex(sum(s**2 for s in sp.symbols(f"z0:{STEP_LATEX_MAX // 8}")))
    assert len(long_sum) > STEP_LATEX_MAX
    section = claim_section(claim("a.long", "pass", derivations=[
        _derivation("long", long_sum), _derivation("short", "x^{2}")]))
    assert f"a long expression ({len(long_sum)} characters), shown as its LaTeX" in section
    assert "<pre class=latex>" + long_sum[:40] in section
    assert section.count("<math") == 2  # the statement and the short step


def test_a_derived_value_equal_to_the_stated_one_is_named_a_long_one_summarised():
    exact = {"latex": r"\frac{3}{16}", "sympy": "3/16"}
    long = {"latex": " + ".join(f"a_{{{i}}}" for i in range(300)), "sympy": "..."}
    evidence = [{**item("q"), "stated": exact, "derived": dict(exact), "measured": None},
                {**item("r"), "stated": long, "derived": {"latex": "0", "sympy": "0"},
                 "measured": None}]
    table = evidence_table(evidence)
    assert table.count(r"\frac{3}{16}</annotation>") == 1 and "= stated" in table
    # a long value: its first terms typeset, all of it folded, never a character count
    long_row = table[table.index("<tbody", table.index("= stated")):]
    assert "characters of LaTeX" not in long_row
    assert "a sum of 300 terms: " in long_row and "<summary>all of it</summary>" in long_row
    assert "a_{0}</annotation>" in long_row and "a_{299}</annotation>" in long_row
    assert "0</annotation>" in long_row  # the short derived value is typeset


def test_unplotted_figure_data_are_compact_json():
    data = {"per seed": {"100": [0.5, 0.25], "200": [1.0, 1.0]}, "rows": [[1, 2], [3, 4]]}
    text = data_text(data)
    assert json.loads(text) == data
    assert "\"100\": [0.5, 0.25]" in text and "\n  [1, 2],\n" in text
