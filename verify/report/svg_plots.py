"""Plots for reports as inline SVG, byte-for-byte reproducible: a fixed hash salt, no date or
creator stamp, and text drawn as paths (no font needed by the reader).

Two kinds: the evidence chart every claim has (each item's discrepancy in units of its
tolerance, on a log axis) and the claim's own figures where their data have a plottable shape
(``{"x": [...], "y": [...]}`` or ``{"x": ..., "series": {name: [...]}}``, optionally with
``"xlabel"``, ``"ylabel"``, ``"log"``, ``"slope"``; or a plain list of numbers).
"""
from __future__ import annotations

import functools
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

RC = {"svg.hashsalt": "theory-verify", "svg.fonttype": "path", "font.size": 9,
      "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 100}
PASS_COLOUR, FAIL_COLOUR, OTHER_COLOUR = "#2b7a3d", "#b3261e", "#7a6a2b"
#: Ratios are drawn between these decades; beyond, bars are clipped and marked.
RATIO_FLOOR, RATIO_CEIL = 1e-8, 1e8


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def _figure(width: float, height: float):
    """A figure outside pyplot: no global backend or figure registry is touched (a Jupyter
    session's inline backend stays as it was)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


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
    if not rows:
        return None
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


@_memo
def figure_chart(name: str, value: Any) -> str | None:
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
        for label, ys in series.items():
            ax.plot(xs, ys, marker="o", ms=3, lw=1.2, label=label)
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
