"""The report: rendered from a results record alone, deterministic, MathML Core only, no
script and no network reference; the CLI paths that write it."""
from __future__ import annotations

import html
import json
import re

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.report import mathml as html_module
from verify.report.mathml import NOT_CORE, from_latex, from_sympy, prose, styled, to_core
from verify.registry import get
from verify.report.files import select_claims, write_report
from verify.report.html import RenderError, _step_math, is_large, matrix_shape, render_html
from verify.report.markdown import render_markdown
from verify.results import run_record
from verify.runner import run_claim


@pytest.fixture(scope="module")
def record():
    results = [run_claim(get("li2.eq2")).as_record()]
    with planted(make_claim("test.false", stated=gauss_off_by_one)) as claim:
        results.append(run_claim(claim).as_record())
    return json.loads(json.dumps(run_record({"fidelity": "quick"}, results, started="s",
                                            finished="f")))


def test_the_html_is_self_contained_and_deterministic(record):
    page = render_html(record)
    assert page == render_html(json.loads(json.dumps(record)))  # same bytes from the JSON
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert page.count("<section id=") == 2
    assert "<svg" in page and "li2.eq2" in page and "test.false" in page


def test_every_formula_is_core_mathml_with_its_latex_kept(record):
    page = render_html(record)
    maths = re.findall(r"<math\b.*?</math>", page, flags=re.S)
    assert len(maths) >= 10  # statements, readings, stated values, derivation steps
    for m in maths:
        assert '<annotation encoding="application/x-tex">' in m
        assert "mathvariant=\"bold\"" not in m and "mathvariant=\"script\"" not in m
    for tag in NOT_CORE:
        assert f"<{tag}" not in page


def test_a_complex_conjugate_is_an_overbar_inside_core():
    """sympy prints conj(z) as <menclose notation="top">, outside MathML Core: li2.appA2's
    report failed on it. It becomes <mover>; anything else outside Core shows its LaTeX."""
    import sympy as sp

    z = sp.Symbol("z")
    page = from_sympy(sp.conjugate(sp.Function("f")(sp.conjugate(z))))  # nested overbars
    assert "<menclose" not in page and page.count("<mover") == 2
    assert from_latex(r"\frac{1}{2}").startswith("<math")
    fallback = html_module.core_or_source("<mfenced><mi>x</mi></mfenced>", "(x)", display=False)
    assert fallback == "<code>(x)</code>"


def test_derivation_steps_are_sympys_presentation_mathml(record):
    steps = [s for d in record["claims"][0]["derivations"] for s in d["steps"] if s["mathml"]]
    assert steps, "li2.eq2 records a derivation with expressions"
    page = render_html(record)
    assert to_core(steps[0]["mathml"]) in page


def test_styled_letters_and_conversions():
    assert styled("Ew", "bold") == "𝐄𝐰" and styled("N", "double-struck") == "ℕ"
    m = from_latex(r"\mathbf w^\top\mathcal E")
    assert "𝐰" in m and "ℰ" in m and "mathvariant=\"bold\"" not in m
    assert from_latex(r"\frac{1}{").startswith("<code>")  # unreadable: source, not dropped
    # an operator name the converter lacks is typeset upright; a command it only half reads
    # (left as its own name) is shown as source, never as a stray backslash in the formula
    assert "<mo>arg</mo><mo>max</mo>" in from_latex(r"g^\ast=\arg\max p_g")
    assert from_latex(r"\undefinedcommand x").startswith("<code>")
    import sympy as sp
    assert "<mfrac>" in from_sympy(sp.Symbol("x") / 3)
    assert prose("plain words only") == "plain words only"


def test_markdown_has_the_same_claims_and_its_figures(record):
    text, files = render_markdown(record)
    assert "## li2.eq2" in text and "## test.false" in text and "$$" in text
    assert files and all(v.startswith("<svg") for v in files.values())
    assert all(f"figures/{name}" in text for name in files)


def test_write_report_and_select_claims(record, tmp_path):
    index = write_report(select_claims(record, ["test.*"], source="r.json",
                                       command="python -m verify report --from r.json"),
                         tmp_path / "out")
    assert index.name == "index.html"
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [c["id"] for c in written["claims"]] == ["test.false"]
    assert written["summary"]["fail"] == 1 and sum(written["summary"].values()) == 1
    assert written["not_shown"]["claims"] == 1
    assert ("r.json holds 1 other claim, not shown here: python -m verify report --from "
            "r.json renders all of them.") in _text(index.read_text())
    assert "not_shown" not in select_claims(record, [])
    assert (tmp_path / "out" / "report.md").exists()
    with pytest.raises(ValueError, match="--claims"):
        select_claims(record, ["nothing.*"])


def test_cli_report_from_json_and_from_store(record, tmp_path, capsys):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(record))
    assert main(["report", "--from", str(src), "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "index.html").exists()
    db = str(tmp_path / "s.sqlite")
    with planted(make_claim("test.false", stated=gauss_off_by_one)):
        assert main(["check", "test.false", "--store", db, "--json", str(tmp_path / "r.json"),
                     "--report", str(tmp_path / "b")]) == 0
        assert (tmp_path / "b" / "index.html").exists()
    assert main(["report", "--from-store", "--store", db, "--out", str(tmp_path / "c")]) == 0
    assert "test.false" in (tmp_path / "c" / "index.html").read_text()
    capsys.readouterr()
    assert main(["report", "--from", str(tmp_path / "missing.json"), "--out",
                 str(tmp_path / "d")]) == 2
    assert "--from" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"claims": []}')
    assert main(["report", "--from", str(tmp_path / "bad.json"), "--out", str(tmp_path)]) == 2


def _text(page: str) -> str:
    """A page's text, without its tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_the_report_of_a_selection_shows_only_the_selection(tmp_path):
    """``check 'li2.*' --report DIR`` merges into a results file that also holds ns claims:
    the merged file keeps them, the report and the findings page show the selection alone and
    say what else the file holds."""
    results, out = tmp_path / "results.json", tmp_path / "li2"
    run = ["--no-store", "--fidelity", "quick", "--jobs", "1", "--json", str(results)]
    with planted(make_claim("li2.planted-a")), \
            planted(make_claim("li2.planted-b", stated=gauss_off_by_one)), \
            planted(make_claim("ns.planted", stated=gauss_off_by_one)):
        assert main(["check", "li2.planted-*", "ns.planted", *run]) == 0
        assert main(["check", "li2.planted-*", *run, "--report", str(out)]) == 0
    merged = json.loads(results.read_text())
    assert [c["id"] for c in merged["claims"]] == ["li2.planted-a", "li2.planted-b",
                                                   "ns.planted"]
    page, findings = (out / "index.html").read_text(), (out / "findings.html").read_text()
    assert re.findall(r"<section id='([^']+)'", page) == ["li2.planted-a", "li2.planted-b"]
    assert "ns.planted" not in page and "ns.planted" not in findings
    assert "li2.planted-b" in findings and "2 claims: 1 pass, 1 fail" in findings
    note = (f"{results} holds 1 other claim, not shown here: python -m verify report "
            f"--from {results} --out DIR renders all of them.")
    assert note in _text(page) and note in _text(findings)
    text, findings_md = (out / "report.md").read_text(), (out / "findings.md").read_text()
    assert "ns.planted" not in text + findings_md
    assert f"`python -m verify report --from {results} --out DIR`" in text
    assert f"{results} holds 1 other claim" in findings_md
    written = json.loads((out / "results.json").read_text())
    assert [c["id"] for c in written["claims"]] == ["li2.planted-a", "li2.planted-b"]
    # a report of the merged file renders every claim, with nothing said to be left out
    assert main(["report", "--from", str(results), "--out", str(tmp_path / "all")]) == 0
    everything = (tmp_path / "all" / "index.html").read_text()
    assert "ns.planted" in everything and "not shown here" not in everything


def test_jupyter_representations(record):
    import verify.report  # noqa: F401 - registers the report's look (verify.hooks)

    claim = get("li2.eq2")
    assert "<math" in claim._repr_html_() and claim._repr_latex_().startswith("$$")
    result = run_claim(claim, control=False)
    assert "<section" in result._repr_html_()


# --- readability (issue 18) -----------------------------------------------------------------

def _claim_with(record, **changes):
    """The record's first claim (li2.eq2) with fields replaced."""
    claim = {**record["claims"][0], **changes}
    return {**record, "claims": [claim]}


def _evidence(**fields):
    item = {"route": "symbolic", "quantity": "E at the maxima", "stated": None,
            "derived": None, "measured": None, "metric": "exact", "discrepancy": 0.0,
            "tolerance": 0.0, "tolerance_why": "exact identity", "finite": True, "ok": True,
            "note": "a note", "parameters": {}}
    return {**item, **fields}


def test_a_rendering_failure_names_the_claim_and_the_step(record):
    bad = _claim_with(record, derivations=[{"title": "the derivation", "steps": [
        {"text": "fine", "latex": "x", "mathml": None},
        {"text": "broken", "latex": 5, "mathml": None}]}])  # LaTeX that is not text
    for render in (render_html, render_markdown):
        with pytest.raises(RenderError, match=r"claim li2\.eq2.*'the derivation', step 2"):
            render(bad)


def test_derivations_fold_after_the_evidence(record):
    page = render_html(record)
    section = page[page.index("<section id='li2.eq2'>"):page.index("</section>")]
    assert section.index("<h3>Evidence</h3>") < section.index("<h3>Derivation")
    n = len(record["claims"][0]["derivations"][0]["steps"])
    title = record["claims"][0]["derivations"][0]["title"]
    assert f"<details class=derivation><summary><b>{html.escape(title)}</b> " in section
    assert f"<span class=meta>({n} steps)</span></summary>" in section
    assert "<details open" not in section
    text, _ = render_markdown(record)
    assert text.index("| route | quantity") < text.index("<summary>Derivation:")


def test_a_large_matrix_in_a_step_is_its_latex_in_a_scrolling_box():
    import sympy as sp

    big = sp.latex(sp.Matrix(16, 16, lambda i, j: i * j))
    assert matrix_shape(big) == (16, 16) and is_large(big) and not is_large(sp.latex(sp.eye(3)))
    shown = _step_math({"text": "A_0 =", "latex": big, "mathml": "<mi>unused</mi>"})
    assert "<math" not in shown and "<pre class=latex>" in shown and "16x16" in shown
    assert "pre.latex{max-height" in render_html({"claims": []})


def test_exact_values_are_typeset_and_large_arrays_summarised(record):
    import sympy as sp

    zeros = sp.latex(sp.zeros(16, 16))
    evidence = [
        _evidence(stated={"latex": r"\frac{3}{16}", "sympy": "3/16"},
                  derived={"latex": r"\frac{3}{4}", "sympy": "3/4"}, discrepancy=0.5625,
                  ok=False),
        _evidence(stated={"latex": zeros, "sympy": "zeros(16)"},
                  derived={"latex": sp.latex(sp.Matrix(12, 1, range(12))), "sympy": "M"}),
        _evidence(route="numeric", metric="relative", stated=[0.0625] * 3,
                  measured=[0.25 + i / 100 for i in range(40)], discrepancy=0.75,
                  tolerance=5.275510662163497e-14, ok=False,
                  tolerance_why="rounding " + "a long explanation " * 20),
        _evidence(route="numeric", measured={"shape": [115, 4], "max_abs": 2.0196877906934336,
                                             "fro": 13.2}, discrepancy=1e-5, tolerance=4.5e-5),
    ]
    page = render_html(_claim_with(record, evidence=evidence))
    table = page[page.index("<table class=evidence>"):]
    table = table[:table.index("</table>")]
    assert "{&#x27;latex" not in table and "sympy" not in table
    assert table.count("<mfrac>") >= 2  # 3/16 and 3/4 typeset
    assert "16x16 matrix, every entry " in table and "12x1 matrix, entries " in table
    assert "40 values in [0.25, 0.64]: 0.25, 0.26, 0.27, ..." in table
    assert "[0.0625, 0.0625, 0.0625]" in table
    assert "array 115x4, max |x| 2.01969, Frobenius norm 13.2" in table
    assert "5.3e-14" in table and "7.5e-01" in table  # verify.results.compared_texts' digits
    assert "4.5e-05" in table and "1.0e-05" in table
    assert "0 (exact)" in table
    assert "<tr class=why><td></td><td colspan=7><b>tolerance:</b> rounding a long" in table
    text, _ = render_markdown(_claim_with(record, evidence=evidence))
    assert r"$\frac{3}{16}$" in text and "16x16 matrix, every entry $0$" in text
    assert "{'latex'" not in text


def test_prose_keeps_words_and_comparisons_as_text():
    for words in ("lr_scale", "<=", "!=", "sum_m", "col", "Yt", "x_i", "p_l>0,",
                  "rows of G outside col(F) vanish", "E*/M at the maxima"):
        assert "<math" not in prose(words), words
    assert prose("lr_scale <= 2 != 3") == "lr_scale &lt;= 2 != 3"
    shown = prose(r"the sum \sum_m q_m over W_{1} and x^{2}, with lr_scale fixed")
    assert shown.count("<math") == 3 and "lr_scale fixed" in shown
    assert shown.startswith("the sum <math")
    assert prose(r"a free n\times K matrix").count("<math") == 1  # K joins n\times
    assert prose(r"\alpha = \beta^{2} here").count("<math") == 1  # = between formulas


def test_step_texts_and_titles_are_escaped_text_never_math(record):
    text = "A_m = Hessian of q_m (sympy), so q_m <= w^T A_m w; sum_m != col(Yt) \\sigma"
    claim = _claim_with(record, title="E(w) with lr_scale <= 1",
                        derivations=[{"title": "grad E = sum_m q_m A_m w", "steps": [
                            {"text": text, "latex": "x^{2}", "mathml": None}]}])
    page = render_html(claim)
    assert f"<li>{html.escape(text)}<math" in page
    assert "grad E = sum_m q_m A_m w</b>" in page
    assert "E(w) with lr_scale &lt;= 1" in page
