"""The findings page (findings.html, findings.md): per paper the failing and inconclusive
claims with diagnosis, reading, smallest case and reproduce line; counts at the top."""
from __future__ import annotations

import json
import re

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.diagnosis import decisive_item, diagnose
from verify.report.files import write_findings, write_report
from verify.report.findings import (counterexample, finding_command, render_findings_html,
                                    render_findings_markdown)
from verify.results import run_record
from verify.runner import run_claim


def item(quantity, *, ok=False, stated=1.0, measured=2.0, parameters=None, finite=True,
         note=None):
    discrepancy = None if ok is None else abs(stated - measured)
    return {"route": "numeric", "quantity": quantity, "stated": stated, "derived": None,
            "measured": measured, "metric": "abs", "discrepancy": discrepancy,
            "comparisons": {}, "tolerance": 1e-9, "tolerance_why": "exact arithmetic",
            "parameters": parameters or {}, "finite": finite, "ok": ok, "note": note}


def claim(cid, verdict, *, paper="Paper A", evidence=(), parameters=None, reading=None,
          **extra):
    record = {"id": cid, "aliases": [], "paper": paper, "kind": "lemma",
              "title": f"title of {cid}", "source": "Lemma 1", "statement": "x = 1",
              "reading": reading or f"the reading of {cid}", "assumptions": [],
              "inside_assumptions": True, "parameters": parameters or {"n": 10},
              "fidelity": "quick", "seed": 0, "device": "cpu", "dtype": "float64",
              "verdict": verdict, "reason": f"reason of {cid}", "seconds": 0.1,
              "evidence": list(evidence), "derivations": [], "figures": {}, "error": None,
              **extra}
    record["diagnosis"] = diagnose(record)
    return record


def record_of(*claims):
    summary = {}
    for c in claims:
        summary[c["verdict"]] = summary.get(c["verdict"], 0) + 1
    return {"schema_version": 1, "run": {"fidelity": "quick", "seed": 0, "dtype": "float64",
                                         "started": "s", "finished": "f"},
            "summary": summary, "claims": list(claims)}


@pytest.fixture()
def mixed():
    return record_of(
        claim("a.ok", "pass", evidence=[item("q", ok=True, measured=1.0)]),
        claim("a.bad", "fail", parameters={"n": 10, "M": [5, 7, 8], "seeds": [0, 1, 2]},
              reading="read with \\sigma=x^2 and full data",
              evidence=[item("Z5: energy", parameters={"n": 6, "M": 7, "seeds": 3}),
                        item("Z3: energy", parameters={"n": 3, "M": 5, "seeds": 3,
                                                       "label": "tiny"}),
                        item("other", ok=True, measured=1.0)]),
        claim("a.unsure", "inconclusive",
              evidence=[item("slope", ok=None, parameters={"n": 4},
                             note="interval contains 0 over 8 seeds")]),
        claim("b.bad", "fail", paper="Paper B", modules=["myproject.claims"],
              evidence=[item("bound", parameters={"k": 2})]),
        claim("b.ok", "pass", paper="Paper B", evidence=[item("q", ok=True, measured=1.0)]),
    )


def test_failing_and_inconclusive_claims_are_listed_with_what_decides_them(mixed):
    md = render_findings_markdown(mixed)
    page = render_findings_html(mixed)
    for text in (md, page):
        assert "a.bad" in text and "a.unsure" in text and "b.bad" in text
        assert "### Failing" in md and "### Inconclusive (1)" in md
        for cid in ("a.unsure", "b.bad"):
            assert f"the reading of {cid}" in text
    # passing claims are counted, not listed
    assert "#### a.ok" not in md and "id='a.ok'" not in page
    bad = mixed["claims"][1]
    assert f"**Diagnosis:** {bad['diagnosis']}" in md
    assert "read with $\\sigma=x^2$ and full data" in md  # typeset as in index.html
    assert "<math" in page  # the reading's formula is typeset, as in index.html
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "href=index.html" in page and "href='index.html#a.bad'" in page
    assert "interval contains 0 over 8 seeds" in md  # the inconclusive claim's diagnosis


def test_the_counterexample_is_the_item_the_diagnosis_quotes(mixed):
    bad = mixed["claims"][1]
    assert decisive_item(bad)["quantity"] == "Z3: energy"  # the smallest case
    assert counterexample(bad)["parameters"]["n"] == 3
    assert "n = 3" in bad["diagnosis"]
    md = render_findings_markdown(mixed)
    assert "**Minimal counterexample:** n = 3, M = 5, seeds = 3, label = tiny" in md
    assert "**Undecided case:** n = 4" in md
    assert decisive_item(mixed["claims"][0]) is None  # a pass has none


def test_the_reproduce_line_names_the_claim_its_modules_and_the_case(mixed):
    md = render_findings_markdown(mixed)
    lines = [ln for ln in md.splitlines() if ln.startswith("- **Reproduce:**")]
    assert len(lines) == 3
    bad_line = next(ln for ln in lines if " a.bad " in ln)
    # n is a claim parameter; M = 5 is one of the run's M; 'seeds = 3' is a count, not
    # one of the run's seeds; 'label' is no claim parameter
    assert ("python -m verify check a.bad --fidelity quick --seed 0 --set n=3 "
            "--set 'M=(5,)'`") in bad_line
    assert "seeds=" not in bad_line and "label" not in bad_line
    b_line = next(ln for ln in lines if " b.bad " in ln)
    assert "--module myproject.claims" in b_line and "--set" not in b_line  # k: no parameter
    unsure = next(ln for ln in lines if " a.unsure " in ln)
    assert "--set n=4" in unsure


def test_counts_per_paper_are_right(mixed):
    md = render_findings_markdown(mixed)
    assert "5 claims: 2 pass, 2 fail, 1 inconclusive." in md
    assert "| Paper A | 3 | 1 | 1 | 1 |" in md
    assert "| Paper B | 2 | 1 | 1 | 0 |" in md
    assert "## Paper B" in md and "2 claims: 1 pass, 1 fail, 0 inconclusive" in md
    assert "No claim of this paper failed" not in md
    page = render_findings_html(mixed)
    assert "5 claims: 2 pass, 2 fail, 1 inconclusive." in page
    assert "<td><a href='#paper-paper-a'>Paper A</a></td><td class=num>3</td>" in page


def test_a_run_without_failures_says_so():
    clean = record_of(claim("a.ok", "pass", evidence=[item("q", ok=True, measured=1.0)]),
                      claim("b.ok", "pass", paper="Paper B",
                            evidence=[item("q", ok=True, measured=1.0)]))
    md = render_findings_markdown(clean)
    assert "**No claim failed and none was inconclusive.**" in md
    assert md.count("No claim of this paper failed and none was inconclusive.") == 2
    assert "Failing" not in md and "Reproduce" not in md
    assert "No claim failed and none was inconclusive." in render_findings_html(clean)
    only_unsure = record_of(claim("a.unsure", "inconclusive",
                                  evidence=[item("slope", ok=None, note="timed out")]))
    assert "**No claim failed.**" in render_findings_markdown(only_unsure)


def test_the_page_from_a_planted_claim_run():
    with planted(make_claim("test.false", stated=gauss_off_by_one)) as c:
        results = [run_claim(c).as_record()]
    results[0]["modules"] = ["tests.planted"]
    record = json.loads(json.dumps(run_record({"fidelity": "quick"}, results, started="s",
                                              finished="f")))
    md = render_findings_markdown(record)
    assert "#### test.false: planted toy claim — **fail**" in md
    # the exact item decides (the diagnosis ranks exact routes first); it has no parameters
    assert "**Minimal counterexample:** no parameters recorded, for closed form" in md
    assert ("`python -m verify check test.false --fidelity quick --seed 0 --module "
            "tests.planted`") in md
    assert finding_command(results[0], {"n": 3}).endswith("--set n=3")


def test_write_report_writes_the_findings_page_and_index_links_it(mixed, tmp_path):
    index = write_report(mixed, tmp_path / "out")
    assert (tmp_path / "out" / "findings.html").read_text() == render_findings_html(mixed)
    assert (tmp_path / "out" / "findings.md").read_text() == render_findings_markdown(mixed)
    assert "<a href=findings.html>" in index.read_text()
    page = write_findings(mixed, tmp_path / "only")
    assert page.name == "findings.html"
    assert sorted(p.name for p in (tmp_path / "only").iterdir()) == ["findings.html",
                                                                     "findings.md"]


def test_report_findings_on_the_command_line(mixed, tmp_path, capsys):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(mixed))
    assert main(["report", "--findings", "--from", str(src), "--out",
                 str(tmp_path / "f")]) == 0
    assert capsys.readouterr().out.strip().endswith("findings.html")
    assert not (tmp_path / "f" / "index.html").exists()
    assert "a.bad" in (tmp_path / "f" / "findings.md").read_text()
    assert main(["report", "--from", str(src), "--out", str(tmp_path / "full")]) == 0
    assert (tmp_path / "full" / "findings.html").exists()
    assert (tmp_path / "full" / "index.html").exists()


def test_the_size_table_says_which_size_decided_each_training_verdict():
    ref = {"verdict": "fail", "fidelity": "full", "made": "2026-12-07", "revision": "abc1234def",
           "stale": False, "diagnosis": "d", "cpu_seconds": 528.4, "sizes": "M=71, K=2048"}
    record = record_of(
        claim("a.eq", "pass", tags=["training"], reference=ref),
        claim("a.fig", "inconclusive", tags=["training"]),
        claim("a.old", "pass", tags=["training"], reference={**ref, "verdict": "pass",
                                                              "stale": True}),
        claim("a.lemma", "fail"))
    md = render_findings_markdown(record)
    table = md.split("## Which size decided each verdict")[1]
    assert "| `a.eq` | pass (quick) | fail (2026-12-07, rev abc1234) | M=71, K=2048 | 528 | " \
           "paper size (toy size disagrees) |" in table
    assert "| `a.fig` | inconclusive (quick) | no run yet |  |  | toy size only |" in table
    assert "stale) |" in table and "before the claim code last changed" in table
    assert "a.lemma" not in table   # neither training nor referenced
    resumed = record_of(claim("a.eq", "pass", tags=["training"],
                              reference={**ref, "cpu_seconds": 2.0, "stored_seconds": 478.0}))
    assert "| 2 + 478 s of stored runs |" in render_findings_markdown(resumed)
    html = render_findings_html(record)
    assert "<h2>Which size decided each verdict</h2>" in html and "<td>toy size only</td>" in html


def test_no_size_table_without_training_claims_or_references(mixed):
    assert "Which size decided" not in render_findings_markdown(mixed)
    assert "Which size decided" not in render_findings_html(mixed)
