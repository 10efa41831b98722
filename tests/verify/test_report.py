"""The report: rendered from a results record alone, deterministic, MathML Core only, no
script and no network reference; the CLI paths that write it."""
from __future__ import annotations

import json
import re

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.report import mathml as html_module
from verify.report.mathml import NOT_CORE, from_latex, from_sympy, prose, styled, to_core
from verify.registry import get
from verify.report.files import select_claims, write_report
from verify.report.html import render_html
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
    assert len(maths) > 10
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
    import sympy as sp
    assert "<mfrac>" in from_sympy(sp.Symbol("x") / 3)
    assert prose("plain words only") == "plain words only"


def test_markdown_has_the_same_claims_and_its_figures(record):
    text, files = render_markdown(record)
    assert "## li2.eq2" in text and "## test.false" in text and "$$" in text
    assert files and all(v.startswith("<svg") for v in files.values())
    assert all(f"figures/{name}" in text for name in files)


def test_write_report_and_select_claims(record, tmp_path):
    index = write_report(select_claims(record, ["test.*"]), tmp_path / "out")
    assert index.name == "index.html"
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [c["id"] for c in written["claims"]] == ["test.false"]
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


def test_jupyter_representations(record):
    claim = get("li2.eq2")
    assert "<math" in claim._repr_html_() and claim._repr_latex_().startswith("$$")
    result = run_claim(claim, control=False)
    assert "<section" in result._repr_html_()
