"""Plots for reports as inline SVG, byte-for-byte reproducible: a fixed hash salt, no date or
creator stamp. Text is SVG text in DejaVu Sans (the browser's sans-serif where it lacks that
font): drawn as paths, every character of a label cost a glyph reference, and the charts were
most of a report's size. Long curves are thinned to what the plot's width can show
(:func:`decimate`), their extremes kept.

Two kinds: the evidence chart of a claim whose chart says something (each item's discrepancy
in units of its tolerance, on a log axis; none when there is only one decided item, every
item is exact (tolerance 0) or every discrepancy is 0: the table says all there is) and the
claim's own figures:

* the plots a check records with ``run.plot`` (:mod:`verify.plots`): a stored figure with
  ``"kind": "plot"`` (curves, log axes, legend, reference and fitted lines) or ``"heatmap"``
  (a grid of outcomes with its colour bar), validated again from the record;
* older figures whose data have a plottable shape (``{"x": [...], "y": [...]}`` or
  ``{"x": ..., "series": {name: [...]}}``, optionally with ``"xlabel"``, ``"ylabel"``,
  ``"log"``, ``"slope"``; or a plain list of numbers).

The error trends of rate claims are drawn together, as small multiples, by
:mod:`verify.report.trend_plots`.

Drawing never raises on a stored figure: :func:`draw_figure` returns the problem ("figure
could not be drawn: reason") for the report to show in the figure's place.
"""
from __future__ import annotations

import functools
import io
import json
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

RC = {"svg.hashsalt": "theory-verify", "svg.fonttype": "none", "font.family": "sans-serif",
      "font.sans-serif": ["DejaVu Sans"], "font.size": 9,
      "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 100}
PASS_COLOUR, FAIL_COLOUR, OTHER_COLOUR = "#2b7a3d", "#b3261e", "#7a6a2b"
#: Ratios are drawn between these decades; beyond, bars are clipped and marked.
RATIO_FLOOR, RATIO_CEIL = 1e-8, 1e8


#: The labels' font, set once per plot by a rule instead of on every label.
_FONT = "'DejaVu Sans', sans-serif"
_LABEL_FONT = re.compile(r"(?<=[\"; ])font-family: 'DejaVu Sans'(?:, sans-serif)?(?:; |(?=\"))"
                         r"|; font-family: 'DejaVu Sans'(?:, sans-serif)?(?=\")")
#: Attributes holding coordinates, and the numbers in them with more than two decimals.
_COORDINATES = re.compile(r'(?<=\s)(?:d|x|y)="[^"]*"|translate\([^)]*\)')
_NUMBER = re.compile(r"-?\d+\.\d{3,}")


def _two_places(m: re.Match) -> str:
    text = f"{float(m.group(0)):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>|<!--.*?-->", "", text, flags=re.S)
    # what carries nothing: matplotlib's indentation and line breaks, the ids of its groups
    # (no reference uses them; repeated in every plot of a page), rotations by 0, the font
    # named on every label, coordinates to a millionth of a point (a hundredth of a point is
    # a seventy-fifth of a pixel)
    text = re.sub(r">\s+<", "><", re.sub(r" ?\n\s*", " ", text)).strip()
    text = re.sub(r'<g id="[^"]*"', "<g", text)
    text = re.sub(r' transform="rotate\(-?0 [^"]*\)"', "", text)
    text = _LABEL_FONT.sub("", text).replace(' style=""', "").replace(
        '<style type="text/css">', f'<style type="text/css">text{{font-family:{_FONT}}}', 1)
    return _COORDINATES.sub(lambda m: _NUMBER.sub(_two_places, m.group(0)), text)


#: Points per curve a plot draws at most: about two per pixel of a 700-px wide plot.
MAX_POINTS = 1400


def decimate(xs: Sequence[float], ys: Sequence[float],
             limit: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """At most ``limit`` points of a curve: its points cut into ``limit // 5`` runs of
    consecutive points, and of each run its first and last, its smallest and largest finite
    y and its first non-finite one (NaN leaves a gap), in their order: every extreme (a
    spike, a dip) stays where it was. Curves within the limit are kept whole.

    >>> xs, ys = decimate(list(range(10_000)), [0.0] * 5000 + [9.0] + [0.0] * 4999, 100)
    >>> len(xs) <= 100, max(ys), xs[ys.index(9.0)]
    (True, 9.0, 5000)
    """
    n = len(xs)
    if n <= limit:
        return list(xs), list(ys)
    runs = max(limit // 5, 1)
    keep: set[int] = set()
    for r in range(runs):
        lo, hi = r * n // runs, (r + 1) * n // runs
        finite = [i for i in range(lo, hi) if math.isfinite(ys[i])]
        gaps = [i for i in range(lo, hi) if not math.isfinite(ys[i])]
        keep.update((lo, hi - 1), gaps[:1])
        if finite:
            keep.update((min(finite, key=lambda i: ys[i]), max(finite, key=lambda i: ys[i])))
    order = sorted(keep)
    return [xs[i] for i in order], [ys[i] for i in order]


def _figure(width: float, height: float, rows: int = 1, cols: int = 1):
    """A figure outside pyplot: no global backend or figure registry is touched (a Jupyter
    session's inline backend stays as it was). Its axes: one, or a ``rows`` x ``cols`` array
    for small multiples."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.subplots(rows, cols)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str) and x in ("inf", "-inf", "nan"):
        return float(x)
    return None


def _memo(render):
    """``render`` memoised on its arguments' JSON (the HTML and the Markdown report of one
    record draw the same charts; drawing is most of a report's time)."""
    cache: dict[str, str | None] = {}

    @functools.wraps(render)
    def wrapper(*args: Any) -> str | None:
        try:
            key = json.dumps(args, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            return render(*args)
        if key not in cache:
            if len(cache) > 256:
                cache.clear()
            cache[key] = render(*args)
        return cache[key]
    return wrapper


@_memo
def evidence_chart(evidence: Sequence[Mapping[str, Any]]) -> str | None:
    """Horizontal bars: discrepancy / tolerance of each compared item (log axis, 1 = the
    tolerance). Undecided items and exact ones (tolerance 0) are labelled, not drawn."""
    import matplotlib

    rows = [e for e in evidence if e.get("ok") is not None]
    if len(rows) < 2 or all(_number(e.get("tolerance")) == 0 for e in rows) \
            or all(_number(e.get("discrepancy")) == 0 for e in rows):
        return None  # one bar, exact items only, or every bar at the floor: the table says all
    with matplotlib.rc_context(RC):
        fig, ax = _figure(6.4, 0.32 * len(rows) + 0.9)
        labels, values, colours = [], [], []
        for e in rows:
            d, tol = _number(e.get("discrepancy")), float(e["tolerance"])
            if d is None or math.isnan(d):
                ratio = RATIO_CEIL
            elif tol == 0:
                ratio = RATIO_FLOOR if d == 0 else RATIO_CEIL
            else:
                ratio = min(max(d / tol, RATIO_FLOOR), RATIO_CEIL)
            name = f"[{e['route']}] {e['quantity']}"
            labels.append(name if len(name) <= 60 else name[:57] + "...")
            values.append(ratio)
            colours.append(PASS_COLOUR if e["ok"] else FAIL_COLOUR)
        y = list(range(len(rows)))[::-1]
        ax.barh(y, values, left=RATIO_FLOOR, color=colours, height=0.6)
        ax.set_xscale("log")
        ax.set_xlim(RATIO_FLOOR, RATIO_CEIL)
        ax.axvline(1.0, color="black", lw=0.8, ls="--")
        ax.set_yticks(y, labels)
        ax.set_xlabel("discrepancy / tolerance")
        fig.tight_layout()
        return _svg(fig)


def _series(value: Mapping[str, Any]) -> tuple[list[float], dict[str, list[float]]] | None:
    series = value.get("series")
    if series is None and "y" in value:
        series = {str(value.get("label", "y")): value["y"]}
    if not isinstance(series, Mapping) or not series:
        return None
    out = {}
    for name, ys in series.items():
        if not isinstance(ys, Sequence) or isinstance(ys, str):
            return None
        nums = [_number(v) for v in ys]
        if any(v is None for v in nums):
            return None
        out[str(name)] = nums
    n = max(len(v) for v in out.values())
    xs = value.get("x", list(range(n)))
    if not isinstance(xs, Sequence) or isinstance(xs, str):
        return None
    xnums = [_number(v) for v in xs]
    if any(v is None for v in xnums) or any(len(v) != len(xnums) for v in out.values()):
        return None
    return xnums, out  # type: ignore[return-value]


def figure_chart(name: str, value: Any) -> str | None:
    """The SVG of a figure (:func:`draw_figure`); None when it has no plottable shape or
    could not be drawn."""
    return draw_figure(name, value)[0]


@_memo
def draw_figure(name: str, value: Any) -> tuple[str | None, str | None]:
    """``(svg, None)`` for a drawn figure, ``(None, None)`` for data without a plottable shape
    (the report lists them as data) and ``(None, "figure could not be drawn: reason")`` for a
    figure that should draw and cannot (a malformed ``run.plot`` record, an older figure
    whose fields have the wrong type). Never raises."""
    try:
        if isinstance(value, Mapping) and "kind" in value:
            from verify.plots import Heatmap, figure_from_record

            figure = figure_from_record(value)
            return (_heatmap(figure) if isinstance(figure, Heatmap) else _plot(figure)), None
        return _legacy_chart(name, value), None
    except Exception as exc:  # noqa: BLE001 - shown in the report in the figure's place
        reason = str(exc) or type(exc).__name__
        return None, f"figure could not be drawn: {reason}"


def _legacy_chart(name: str, value: Any) -> str | None:
    """A line chart of a figure whose data have a plottable shape; None otherwise."""
    import matplotlib

    if isinstance(value, Sequence) and not isinstance(value, str):
        value = {"y": value}
    if not isinstance(value, Mapping):
        return None
    parsed = _series(value)
    if parsed is None or len(parsed[0]) < 2:
        return None
    xs, series = parsed
    finite = [v for ys in series.values() for v in ys if math.isfinite(v)]
    log = value.get("log")
    if log is None:
        positive = finite and min(finite) > 0
        log = "y" if positive and max(finite) / min(finite) > 100 else ""
        if log and all(x > 0 for x in xs) and max(xs) / min(xs) > 100:
            log = "xy"
    with matplotlib.rc_context(RC):
        fig, ax = _figure(5.0, 3.0)
        many = len(xs) > 40
        for label, ys in series.items():
            ax.plot(*decimate(xs, ys), marker=None if many else "o", ms=3, lw=1.2,
                    label=label)
        if "x" in log:
            ax.set_xscale("log")
        if "y" in log:
            ax.set_yscale("log")
        ax.set_xlabel(str(value.get("xlabel", "")))
        ax.set_ylabel(str(value.get("ylabel", "")))
        title = name if "slope" not in value else f"{name} (fitted slope {value['slope']:.3g})"
        ax.set_title(title, fontsize=9)
        if len(series) > 1:
            ax.legend(fontsize=7, frameon=False)
        fig.tight_layout()
        return _svg(fig)


def _anchor(xs: Sequence[float], ys: Sequence[float], slope: float, log_x: bool,
            log_y: bool, below: float = 0.0) -> tuple[list[float], list[float]] | None:
    """A line of ``slope`` (in the axes' coordinates: a power law on log-log axes) placed by
    least squares through the points, over their x range; ``below``: moved down by that many
    decades (log y) or that fraction of the points' range (linear y)."""
    tx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    ty = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    pts = [(tx(x), ty(y)) for x, y in zip(xs, ys) if math.isfinite(x) and math.isfinite(y)]
    if not pts:
        return None
    b = sum(Y - slope * X for X, Y in pts) / len(pts)
    span = max(Y for _, Y in pts) - min(Y for _, Y in pts)
    b -= below if log_y else below * (span or 1.0)
    lo, hi = min(X for X, _ in pts), max(X for X, _ in pts)
    ends = [lo, hi] if hi > lo else [lo - 0.5, lo + 0.5]
    back_x = (lambda v: 10 ** v) if log_x else (lambda v: v)
    back_y = (lambda v: 10 ** v) if log_y else (lambda v: v)
    return [back_x(X) for X in ends], [back_y(slope * X + b) for X in ends]


def _plot(plot) -> str:
    """A :class:`verify.plots.Plot`: its curves, the fitted line (a grey band of that slope
    behind the first series), reference lines (dashed: a slope, parallel to and half a
    decade below the first series, so it neither hides the data nor is hidden by them;
    dotted or dash-dotted: a level), legend and axis labels."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig, ax = _figure(7.0, 3.6)
        many = max(len(x) for x, _ in plot.series.values()) > 40
        named = {m.group(0) for m in (re.match(r"C\d", st) for st in plot.styles.values()) if m}
        free = iter([c for c in (f"C{i}" for i in range(10)) if c not in named] * 10)
        for label, (xs, ys) in plot.series.items():
            style = plot.styles.get(label, "")
            colour = style[:2] if style.startswith("C") else next(free)
            ax.plot(*decimate(xs, ys), marker=None if many else "o", ms=3, lw=1.2, label=label,
                    color=colour, ls=style[2:] if style.startswith("C") else (style or "-"))
        first = next(iter(plot.series.values()))
        lines = []
        if plot.fitted is not None:
            lines.append((plot.fitted[0], plot.fitted[1], 0.0,
                          dict(color="black", alpha=0.22, lw=5, solid_capstyle="butt",
                               zorder=0)))
        lines += [(r.slope, r.label, 0.5, dict(color="0.3", ls="--", lw=1.0))
                  for r in plot.references if r.slope is not None]
        for slope, label, below, style in lines:
            line = _anchor(*first, slope, plot.log_x, plot.log_y, below)
            if line is not None:
                ax.plot(*line, label=label, **style)
        levels = [r for r in plot.references if r.y is not None]
        for i, r in enumerate(levels):
            ax.axhline(r.y, color="0.3", ls=(":", "-.")[i % 2], lw=1.0, label=r.label)
        if plot.log_x:
            ax.set_xscale("log")
            _short_log_labels(ax.xaxis, ax.get_xlim())
        if plot.log_y:
            ax.set_yscale("log")
            _short_log_labels(ax.yaxis, ax.get_ylim())
        ax.set_xlabel(plot.x_label)
        ax.set_ylabel(plot.y_label)
        ax.set_title(textwrap.fill(plot.title, 70), fontsize=9)
        if len(plot.series) > 1 or lines or plot.references:
            ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        return _svg(fig)


def _mantissa(v: float) -> float:
    return round(v / 10 ** math.floor(math.log10(v)), 6)


def _short_log_labels(axis, limits: tuple[float, float]) -> None:
    """Labels of a log axis as plain numbers (``0.5``, ``2``, ``1e-05``). Minor ticks are
    labelled on a short axis: all of them within 0.6 of a decade (a few, well apart), those
    at 2 and 5 times a power of ten within two decades, none beyond. Matplotlib's default
    labels every minor tick of an axis under a decade as :math:`a\\times10^b`, and on a
    seven-inch plot they overlap."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    lo, hi = sorted(limits)
    decades = math.log10(hi / lo) if lo > 0 else math.inf
    if decades <= 0.6:
        axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    elif decades <= 2:
        axis.set_minor_formatter(FuncFormatter(
            lambda v, _: f"{v:g}" if v > 0 and _mantissa(v) in (2.0, 5.0) else ""))
    else:
        axis.set_minor_formatter(NullFormatter())


def _tick(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:.4g}"


def _heatmap(heat) -> str:
    """A :class:`verify.plots.Heatmap`: cells coloured by value (NaN: grey, "not run"), each
    value written in its cell when the grid is small, a colour bar with its label."""
    import matplotlib
    import numpy as np

    values = np.array(heat.values, dtype=float)
    rows, cols = values.shape
    with matplotlib.rc_context(RC):
        fig, ax = _figure(max(4.2, 0.62 * cols + 2.6), max(2.4, 0.38 * rows + 1.4))
        masked = np.ma.masked_invalid(values)
        finite = values[np.isfinite(values)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if heat.limits is not None:
            lo, hi = heat.limits
        if hi == lo:
            lo, hi = lo - 0.5, hi + 0.5
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
        image = ax.imshow(masked, cmap=cmap, vmin=lo, vmax=hi, aspect="auto",
                          interpolation="nearest",
                          origin="upper" if any(isinstance(v, str) for v in heat.y) else "lower")
        ax.set_xticks(range(cols), [_tick(v) for v in heat.x])
        ax.set_yticks(range(rows), [_tick(v) for v in heat.y])
        if cols > 8:
            ax.tick_params(axis="x", labelrotation=45)
        ax.spines[["top", "right"]].set_visible(True)
        if heat.annotate and rows * cols <= 200:
            for i in range(rows):
                for j in range(cols):
                    v = values[i, j]
                    if math.isnan(v):
                        ax.text(j, i, "not run", ha="center", va="center", fontsize=6,
                                color="0.3")
                        continue
                    dark = (v - lo) / (hi - lo) < 0.6
                    ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")
        bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.03)
        bar.set_label(heat.colour_label)
        ax.set_xlabel(textwrap.fill(heat.x_label, 80))
        ax.set_ylabel(heat.y_label)
        ax.set_title(textwrap.fill(heat.title, 70), fontsize=9)
        fig.tight_layout()
        return _svg(fig)
