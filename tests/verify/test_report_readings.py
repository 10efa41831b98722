"""Alternative readings in the report (index.html, report.md) and on the findings page, and
the findings page's reproduce line for a case named by dotted or nested parameters, or found
by a run made with ``--set``."""
from __future__ import annotations

import shlex

from verify.cli.commands import _assignment
from verify.evidence import to_json_value
from verify.registry import get
from verify.report.files import write_report
from verify.report.findings import finding_command, overrides, render_findings_html, \
    render_findings_markdown
from verify.report.html import claim_section, render_html
from verify.report.markdown import render_markdown
from verify.runner import merge_overrides, validate_overrides

from tests.verify.test_findings import claim, item, record_of

READINGS = [
    {"name": "strict", "description": r"b_{j\ell}<0 for every similar pair",
     "verdict": "fail", "reason": "3 of 8 pairs positive",
     "diagnosis": "stated b<0, measured 0.2 at pair 3"},
    {"name": "majority", "description": r"\Pr[b_{j\ell}<0]>1/2 over the similar pairs",
     "verdict": "pass", "reason": "5 of 8", "diagnosis": "5 of 8 pairs negative"},
]


def _failing(**extra):
    return claim("a.read", "fail", evidence=[item("pairs", parameters={"n": 4})],
                 reading="'get b_{j\\ell}<0' read for the pooled pairs", **extra)


def test_the_readings_table_follows_the_diagnosis():
    section = claim_section(_failing(readings=READINGS))
    assert section.index("<b>Verdict:</b>") < section.index("<h3>Readings</h3>") \
        < section.index("<h3>Statement")
    table = section[section.index("<h3>Readings</h3>"):section.index("<h3>Statement")]
    rows = table.split("<tr>")[2:]
    assert len(rows) == 3
    assert "as printed" in rows[0] and "v-fail" in rows[0]
    assert "strict" in rows[1] and "v-fail" in rows[1] and "measured 0.2 at pair 3" in rows[1]
    assert "majority" in rows[2] and "v-pass" in rows[2] and "5 of 8 pairs negative" in rows[2]
    assert table.count("<math") == 2  # the descriptions' formulas are typeset
    md, _ = render_markdown(record_of(_failing(readings=READINGS)))
    assert "| **as printed**: the reading below | fail |" in md
    assert r"| **majority**: $\Pr[b_{j\ell}<0]>1/2$ over the similar pairs | pass | " in md
    assert md.index("**Verdict:**") < md.index("**Readings:**") < md.index("**Statement**")


def test_no_alternative_readings_no_table():
    for extra in ({}, {"readings": []}, {"readings": None},
                  {"readings": [{"name": "x", "description": "not checked"}]}):
        c = _failing(**extra)
        assert "Readings" not in render_html(record_of(c))
        assert "Readings" not in render_markdown(record_of(c))[0]
        assert "Holds under" not in render_findings_markdown(record_of(c))


def test_the_findings_page_says_under_which_reading_a_failing_claim_holds(tmp_path):
    record = record_of(_failing(readings=READINGS))
    md = render_findings_markdown(record)
    assert r"- **Holds under reading majority:** $\Pr[b_{j\ell}<0]>1/2$ over the similar pairs" \
        in md
    assert "Holds under reading strict" not in md
    page = render_findings_html(record)
    assert "<b>Holds under reading majority:</b> <math" in page
    write_report(record, tmp_path)  # every page renders
    assert "majority" in (tmp_path / "index.html").read_text()


# --- the reproduce line ---------------------------------------------------------------------

def _sets(command: str) -> dict:
    words = shlex.split(command)
    return dict(_assignment(words[i + 1]) for i, w in enumerate(words) if w == "--set")


def test_a_case_named_by_dotted_nested_or_inner_keys_is_reproduced():
    lemma1 = get("li2.lemma1")
    quick = lemma1.parameters["quick"]
    c = claim("li2.lemma1", "fail", parameters=to_json_value(quick))
    case = {"gram.K": 64,                       # a stress dimension's dotted name
            "crosscheck": {"eta": 0.5},         # a nested dict
            "d_per_n": 32,                      # the key of one dict parameter (gram)
            "n": 3,                             # a key of several (gram, crosscheck): none
            "label": "tiny"}                    # no parameter
    sets = overrides(c, case)
    assert sets == {"gram.K": 64, "crosscheck.eta": 0.5, "gram.d_per_n": 32}
    command = finding_command(c, case)
    assert command.startswith("python -m verify check li2.lemma1 --fidelity quick --seed 0 ")
    parsed = _sets(command)
    assert parsed == sets
    rerun = merge_overrides(quick, validate_overrides(lemma1, parsed))
    assert rerun["gram"] == {**quick["gram"], "K": 64, "d_per_n": 32}
    assert rerun["crosscheck"]["eta"] == 0.5


def test_a_run_made_with_set_is_rerun_with_it():
    lemma1 = get("li2.lemma1")
    quick = lemma1.parameters["quick"]
    ran = merge_overrides(quick, {"mc.scale": 0.9, "map.etas": (0.2,), "gram.K": 2048})
    c = claim("li2.lemma1", "fail", parameters=to_json_value(ran))
    parsed = _sets(finding_command(c, {"gram.K": 64}))  # the case narrows gram.K further
    assert parsed == {"mc.scale": 0.9, "map.etas": [0.2], "gram.K": 64}
    rerun = merge_overrides(quick, validate_overrides(lemma1, parsed))
    assert to_json_value(rerun) == to_json_value(merge_overrides(ran, {"gram.K": 64}))
    # a run with the declared parameters needs no option; an unknown claim gets none
    plain = claim("li2.lemma1", "fail", parameters=to_json_value(quick))
    assert "--set" not in finding_command(plain, {})
    assert "--set" not in finding_command(claim("no.such", "fail", parameters={"n": 1}), {})
