"""verify.plots: a plot is validated where the check builds it (a ValueError naming the field),
stored as plain JSON that reads back to the same plot, drawn to SVG by kind, and a malformed
stored figure is shown in the report ("figure could not be drawn: ...") instead of raising."""
from __future__ import annotations

import json
import math

import pytest
import torch

from tests.planted import gauss_check, make_claim, planted
from verify import Heatmap, Plot, Reference, Run
from verify.plots import figure_from_record
from verify.report.html import render_html
from verify.report.markdown import render_markdown
from verify.report.svg_plots import draw_figure, evidence_chart, figure_chart
from verify.results import run_record
from verify.runner import run_claim


def _plot(**changes) -> Plot:
    fields = dict(title="error against the step size", x_label="h", y_label="error",
                  series={"max": ([0.2, 0.1, 0.05], [3.2e-6, 2.0e-7, 1.25e-8]),
                          "median": (torch.tensor([0.2, 0.1, 0.05]), [1e-6, math.nan, 4e-9])},
                  log_x=True, log_y=True, fitted=(4.01, "fitted order 4.01"),
                  references=(Reference("nominal order 4", slope=4),
                              Reference("roundoff", y=1e-9)),
                  styles={"median": "C0--"})
    return Plot(**{**fields, **changes})


def _heatmap(**changes) -> Heatmap:
    fields = dict(title="regime map", x_label="p", y_label="group", x=[0.3, 0.5, 0.7],
                  y=["Z11", "Z23"], values=[[0.0, 0.5, 1.0], [0.0, math.nan, 1.0]],
                  colour_label="fraction that groks", limits=(0, 1))
    return Heatmap(**{**fields, **changes})


@pytest.mark.parametrize("changes, field", [
    ({"series": {"a": ([1, 2, 3], [1.0, 2.0])}}, r"Plot.series\['a'\]: x has 3 values, y has 2"),
    ({"series": {"a": ([1, 2], [1.0, math.inf])}}, r"Plot.series\['a'\].y\[1\]: inf"),
    ({"series": {"a": ([1, 2], [1.0, "x"])}}, r"Plot.series\['a'\].y\[1\]"),
    ({"series": {"a": ([0.0, 1.0], [1.0, 2.0])}}, r"Plot.series\['a'\].x: 0.0 is not positive"),
    ({"series": {}}, "Plot.series"),
    ({"title": ""}, "Plot.title"),
    ({"x_label": "  "}, "Plot.x_label"),
    ({"y_label": None}, "Plot.y_label"),
    ({"fitted": (math.nan, "fit")}, "Plot.fitted slope"),
    ({"fitted": (4.0, "")}, "Plot.fitted label"),
    ({"styles": {"nope": "C1"}}, "Plot.styles"),
    ({"styles": {"max": "red"}}, r"Plot.styles\['max'\]"),
    ({"references": ("not a reference",)}, "Plot.references"),
])
def test_a_wrong_plot_fails_where_it_is_built(changes, field):
    with pytest.raises(ValueError, match=field):
        _plot(**changes)


@pytest.mark.parametrize("make, field", [
    (lambda: Reference(""), "Reference.label"),
    (lambda: Reference("both", y=1.0, slope=2.0), "exactly one of y and slope"),
    (lambda: Reference("none"), "exactly one of y and slope"),
    (lambda: _heatmap(values=[[0.0, 1.0, 1.0]]), "Heatmap.values: 1 rows for 2 y values"),
    (lambda: _heatmap(values=[[0.0, 1.0], [0.0, 1.0]]), r"Heatmap.values\[0\]: 2 values"),
    (lambda: _heatmap(colour_label=""), "Heatmap.colour_label"),
    (lambda: _heatmap(x=[]), "Heatmap.x"),
    (lambda: _heatmap(limits=(1, 0)), "Heatmap.limits"),
    (lambda: _heatmap(values=[[0.0, 1.0, -math.inf], [0.0, 0.0, 0.0]]),
     r"Heatmap.values\[0\]\[2\]"),
])
def test_a_wrong_reference_or_heatmap_fails_where_it_is_built(make, field):
    with pytest.raises(ValueError, match=field):
        make()


@pytest.mark.parametrize("make", [_plot, _heatmap])
def test_the_record_is_plain_json_that_reads_back_to_the_same_figure(make):
    figure = make()
    record = figure.as_record()
    text = json.dumps(record, allow_nan=False)   # NaN is stored as 'nan', as every figure
    assert json.loads(text) == record and record["kind"] in ("plot", "heatmap")
    again = figure_from_record(json.loads(text))
    assert again.as_record() == record
    assert type(again).from_record(record) == again


def test_run_plot_stores_the_record_under_its_title():
    run = Run("demo", "quick", {}, {}, 0, torch.device("cpu"), torch.float64)
    run.plot(_plot())
    run.plot(_heatmap())
    assert run.figures["error against the step size"]["kind"] == "plot"
    assert run.figures["regime map"] == _heatmap().as_record()
    with pytest.raises(TypeError, match="run.plot"):
        run.plot({"x": [1, 2], "y": [1, 2]})


@pytest.mark.parametrize("make", [_plot, _heatmap, lambda: _plot(log_x=False, log_y=False)])
def test_each_kind_draws_to_deterministic_svg(make):
    record = json.loads(json.dumps(make().as_record()))
    svg, problem = draw_figure("name", record)
    assert problem is None and svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<metadata>" not in svg
    assert draw_figure.__wrapped__("name", record) == (svg, None)   # same bytes, not memo


def test_old_style_figures_still_draw():
    assert figure_chart("f", {"x": [1, 2, 3], "y": [1.0, 4.0, 9.0]}).startswith("<svg")
    assert figure_chart("f", {"epoch": [1, 2], "a": [1, 2]}) is None   # not plottable: data
    assert draw_figure("f", {"x": [1, 2, 3], "y": [1, 2, 3], "slope": "steep"})[1] \
        .startswith("figure could not be drawn")


@pytest.mark.parametrize("record", [
    {"kind": "plot", "title": "t", "x_label": "x", "y_label": "y",
     "series": {"a": {"x": [1, 2], "y": [1]}}},
    {"kind": "plot", "title": "t", "x_label": "", "y_label": "y", "series": {}},
    {"kind": "heatmap", "title": "t", "x_label": "x", "y_label": "y", "x": [1], "y": [1],
     "values": "oops", "colour_label": "c"},
    {"kind": "surface"},
    {"kind": "plot", "series": None},
])
def test_a_malformed_stored_figure_is_reported_not_raised(record):
    svg, problem = draw_figure("broken", record)
    assert svg is None and problem.startswith("figure could not be drawn: ")


def test_a_malformed_figure_shows_in_both_reports():
    def check(run):
        run.figure("broken", {"kind": "plot", "title": "t", "x_label": "x", "y_label": "y",
                              "series": {"a": {"x": [1, 2], "y": [1]}}})
        run.plot(_plot())
        yield from gauss_check(run)

    with planted(make_claim("test.plots", check=check)) as claim:
        record = json.loads(json.dumps(run_record(
            {"fidelity": "quick"}, [run_claim(claim).as_record()], started="s", finished="f")))
    page = render_html(record)
    assert "broken: figure could not be drawn: Plot.series[&#x27;a&#x27;]" in page
    assert "aria-label='error against the step size'" in page
    text, files = render_markdown(record)
    assert "*broken: figure could not be drawn: Plot.series['a']" in text
    assert len(files) == 1   # the plot; no evidence chart: the Gauss identity is exact


def test_the_evidence_chart_only_where_it_says_something():
    def item(tol, d, ok=True):
        return {"route": "numeric", "quantity": "q", "tolerance": tol, "discrepancy": d,
                "ok": ok}

    assert evidence_chart([item(0.1, 0.01)]) is None                     # one item
    assert evidence_chart([item(0, 0), item(0, 0)]) is None              # all exact
    assert evidence_chart([item(0.1, 0), item(0.2, 0)]) is None          # all bars at floor
    assert evidence_chart([item(0, 0), item(0.1, 0.05)]).startswith("<svg")
    assert evidence_chart([item(0.1, 0.2, False), item(0.1, None, None)]) is None
