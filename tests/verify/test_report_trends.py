"""Rate claims plot their error trends: a grid of log-log panels (error against size, the
seeds, the fitted line with its order and interval, the stated order), capped with a note for
a claim with many trends, and a table of the orders in the HTML and the Markdown report."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from verify.diagnosis import diagnosed
from verify.error_trends import fit_trend, geometric_grid
from verify.registry import get
from verify.report.html import claim_section
from verify.report.markdown import render_markdown
from verify.report.trend_plots import MAX_PANELS, trend_figures, trend_grid
from verify.results import run_record
from verify.runner import run_claim

from tests.verify.test_findings import claim

ORDER = r"-?\d+\.\d{3}"
FITTED = rf"fitted {ORDER} \[{ORDER}, {ORDER}\]"


@pytest.fixture(scope="module")
def prop2():
    record = diagnosed(run_claim(get("li2.prop2"), control=False).as_record())
    return json.loads(json.dumps(record))


def test_prop2s_section_has_its_trend_plot(prop2):
    trends = trend_figures(prop2["figures"])
    assert len(trends) == 7
    section = claim_section(prop2)
    grid = re.search(r"<figure role=img aria-label='error trends of li2\.prop2'>(<svg.*?</svg>)",
                     section, flags=re.S)
    assert grid, "the trend grid is drawn"
    svg = grid.group(1)
    assert len(re.findall(rf">{FITTED}</text>", svg)) == 7  # each panel names its order
    assert ">stated 2</text>" in svg and ">stated 1</text>" in svg
    assert "95% t-interval" in section and "of the 7 error trends" in section
    assert "errors_per_seed" not in section  # drawn, so no longer dumped as data
    text, files = render_markdown(run_record({}, [prop2], started="s", finished="f"))
    assert "| error trend | fitted order [interval] | stated | points fitted |" in text
    assert re.search(rf"\| Prop\. 2 remainder as t -> 0 \(alpha fixed, eta=0\) \| {ORDER} "
                     rf"\[{ORDER}, {ORDER}\] \| 1 \| 7 of 7 \|", text)
    assert any(trend_grid(trends)[0] == svg for svg in files.values())


def _trend(order: float, stated: float, points: int = 4) -> dict:
    """A fitted trend of ``order`` over 3 seeds, as a check stores it."""
    sizes = geometric_grid(1e-1, 1e-3, points)
    errors = np.array([s * sizes**order for s in (1.0, 1.1, 0.9)])
    return json.loads(json.dumps(fit_trend(sizes, errors).figure(stated)))


def test_many_trends_are_capped_with_a_note_and_all_tabled():
    trends = {f"trend: quantity {i}": _trend(2.0, 2.0) for i in range(44)}
    trends["trend: quantity 30"] = _trend(1.0, 2.0)  # the stated order far outside
    flat = _trend(0.0, 1.0)
    flat["order"], flat["interval"], flat["fitted_line_on_kept"] = "nan", ["nan", "nan"], None
    trends["trend: quantity 40"] = flat  # no order measured
    section = claim_section(claim("a.rate", "pass", figures=trends))
    svg = re.search(r"<svg.*?</svg>", section[section.index("error trends of"):], re.S).group(0)
    assert len(re.findall(r">fitted ", svg)) == MAX_PANELS - 1  # one panel without a fit
    assert ">quantity 30</text>" in svg and ">quantity 40</text>" in svg  # the deciding ones
    assert f"{MAX_PANELS} of 44 trends are drawn" in section
    assert section.count("<tr><td>quantity ") == 44 and "not measured" in section


def test_a_malformed_trend_is_named_and_kept_as_data():
    bad = {**_trend(2.0, 2.0), "sizes": ["a", "b", "c", "d"]}
    section = claim_section(claim("a.rate", "pass", figures={"trend: broken": bad}))
    assert "error trends: figure could not be drawn: not a list of numbers" in section
    assert "figures (data)" in section and "trend: broken" in section

