r"""Error trends of rate claims, drawn: the figures :meth:`verify.error_trends.TrendFit.figure`
stores (an error measured along a geometric grid for several seeds, and its fitted log-log
order :math:`p`, :math:`e \propto h^p`, with a confidence interval) as one grid of small
log-log panels, and as a table of the orders.

Each panel plots the error against the grid's size (:math:`h` itself for ``limit="zero"``,
:math:`1/h` for ``"infinity"``, so the slope drawn is :math:`p` or :math:`-p`): every seed
(grey), the geometric mean over seeds (dots; hollow where the fit dropped the point as roundoff
floor), the fitted line on the kept points, and the stated order as a dashed line from the
same first point, so the gap between the two slopes is what the eye sees. A claim with more
than ``MAX_PANELS`` trends (li2.lemma1 records 44) draws those whose stated order lies
farthest outside the fitted interval and says so; the table lists every one.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from verify.report.svg_plots import RC, _figure, _memo, _number, _short_log_labels, _svg

#: The fields by which a stored figure is recognised as a fitted error trend.
TREND_FIELDS = frozenset({"sizes", "limit", "errors_per_seed", "geometric_mean", "kept",
                          "fitted_line_on_kept", "order", "interval", "level", "stated_order"})
#: Panels drawn at most; four columns fill the report's width at a readable size.
MAX_PANELS, COLUMNS = 12, 4
FIT_COLOUR = "#b3261e"
#: Where the size goes, per ``limit``.
LIMIT_SIGNS = {"zero": "0", "infinity": "\u221e"}


def trend_figures(figures: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The fitted error trends among a claim's stored figures, in their order."""
    return {name: v for name, v in figures.items()
            if isinstance(v, Mapping) and TREND_FIELDS <= v.keys()}


def _numbers(values: Sequence[Any]) -> list[float]:
    out = [_number(v) for v in values]
    if any(v is None for v in out):
        raise ValueError(f"not a list of numbers: {list(values)[:4]}")
    return out  # type: ignore[return-value]


def _order_text(value: Any) -> str:
    v = _number(value)
    return "not measured" if v is None or not math.isfinite(v) else f"{v:.3f}"


def fitted_text(trend: Mapping[str, Any]) -> str:
    """The fitted order with its interval, as the evidence note writes it:
    ``1.999 [1.998, 2.000]``; "not measured" when too few points lie above the floor."""
    order = _order_text(trend["order"])
    if order == "not measured":
        return order
    lo, hi = (_order_text(v) for v in trend["interval"])
    return f"{order} [{lo}, {hi}]"


def stated_text(trend: Mapping[str, Any]) -> str:
    stated = _number(trend["stated_order"])
    return "-" if stated is None else f"{stated:.3g}"


def trend_rows(trends: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """Per trend: its name, fitted order [interval], stated order and the points fitted
    (``kept of grid``)."""
    return [(name.removeprefix("trend: "), fitted_text(t), stated_text(t),
             f"{sum(bool(k) for k in t['kept'])} of {len(t['sizes'])}")
            for name, t in trends.items()]


def _gap(trend: Mapping[str, Any]) -> float:
    """How far the stated order lies outside the fitted interval (inf: no order measured)."""
    order, stated = _number(trend["order"]), _number(trend["stated_order"])
    if order is None or not math.isfinite(order):
        return math.inf
    if stated is None:
        return 0.0
    lo, hi = _numbers(trend["interval"])
    return max(0.0, stated - hi, lo - stated)


def drawn(trends: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The names of the trends the grid draws, in their order: all, or the ``MAX_PANELS``
    whose stated order lies farthest outside the fitted interval (the ones that decide)."""
    names = list(trends)
    if len(names) <= MAX_PANELS:
        return names
    worst = sorted(names, key=lambda n: -_gap(trends[n]))[:MAX_PANELS]
    return [n for n in names if n in worst]


def _panel(ax, name: str, trend: Mapping[str, Any], first_column: bool) -> None:
    """One trend on log-log axes, as the module docstring describes."""
    from matplotlib.ticker import NullLocator

    sizes = _numbers(trend["sizes"])
    kept = [bool(k) for k in trend["kept"]]
    if len(kept) != len(sizes):
        raise ValueError(f"kept has {len(kept)} entries for {len(sizes)} sizes")
    for seed in trend["errors_per_seed"]:
        pts = [(x, y) for x, y in zip(sizes, _numbers(seed)) if y > 0 and math.isfinite(y)]
        if pts:
            ax.plot(*zip(*pts), color="0.72", lw=0.6, zorder=1)
    mean = _numbers(trend["geometric_mean"])
    for fit, style in ((True, {}), (False, {"mfc": "white"})):
        pts = [(x, y) for x, y, k in zip(sizes, mean, kept)
               if k == fit and y > 0 and math.isfinite(y)]
        if pts:
            ax.plot(*zip(*pts), ls="none", marker="o", ms=3.2, color="black", zorder=3,
                    label=None if fit else "below the floor", **style)
    where = [x for x, k in zip(sizes, kept) if k] or sizes
    line = trend["fitted_line_on_kept"]
    if line is not None:
        ax.plot(where, _numbers(line), color=FIT_COLOUR, lw=1.4, zorder=2,
                label=f"fitted {fitted_text(trend)}")
    else:  # a legend entry without a line: the reader looks for the order there
        ax.plot([], [], ls="none", label=f"order not measured ({sum(kept)} points fitted)")
    stated = _number(trend["stated_order"])
    start = (_numbers(line)[0] if line is not None
             else next((y for y, k in zip(mean, kept) if k), None))
    if stated is not None and start is not None and start > 0 and math.isfinite(start):
        # e = e0 (h / h0)^p with h = size or 1 / size: on the size axis a slope of +-p
        sign = 1.0 if trend["limit"] == "zero" else -1.0
        ax.plot([where[0], where[-1]],
                [start, start * (where[-1] / where[0]) ** (sign * stated)],
                color="0.25", ls="--", lw=1.0, zorder=2, label=f"stated {stated:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        _short_log_labels(axis, limits)
        if max(limits) / min(limits) > 100:  # unlabelled minor ticks: a third of the bytes
            axis.set_minor_locator(NullLocator())
    ax.tick_params(which="both", labelsize=7)
    ax.set_xlabel(f"size (\u2192 {LIMIT_SIGNS.get(trend['limit'], '?')})", fontsize=7.5)
    if first_column:
        ax.set_ylabel("error", fontsize=7.5)
    ax.set_title(textwrap.fill(name.removeprefix("trend: "), 48, max_lines=3,
                               placeholder=" \u2026"), fontsize=7.5)
    ax.legend(fontsize=7, loc="best", framealpha=0.85, handlelength=1.6)


@_memo
def trend_grid(trends: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """``(svg, None)``: the panels of the trends :func:`drawn` picks; ``(None, "figure could
    not be drawn: reason")`` for a malformed trend record. Never raises."""
    import matplotlib
    import numpy as np

    names = drawn(trends)
    rows, cols = math.ceil(len(names) / COLUMNS), min(len(names), COLUMNS)
    try:
        with matplotlib.rc_context(RC):
            fig, axes = _figure(3.2 * cols, 2.7 * rows, rows, cols)
            panels = list(np.ravel(axes))  # one Axes, or a grid of them
            for i, (ax, name) in enumerate(zip(panels, names)):
                _panel(ax, name, trends[name], i % cols == 0)
            for ax in panels[len(names):]:
                ax.set_visible(False)
            fig.tight_layout(pad=0.6, w_pad=0.8, h_pad=0.9)
            return _svg(fig), None
    except Exception as exc:  # noqa: BLE001 - shown in the report in the figure's place
        return None, f"figure could not be drawn: {str(exc) or type(exc).__name__}"


def caption(trends: Mapping[str, Mapping[str, Any]]) -> str:
    """What the grid shows, with the interval's level, and which trends it leaves out."""
    levels = {_number(t["level"]) for t in trends.values()}
    level = f"{levels.pop():.0%} " if len(levels) == 1 and None not in levels else ""
    shown = len(drawn(trends))
    left = (f" {shown} of {len(trends)} trends are drawn: those whose stated order lies "
            "farthest outside the fitted interval; the table lists every trend."
            if shown < len(trends) else "")
    return ("Each error trend against its size on log-log axes: grey, each seed; dots, the "
            "geometric mean over seeds (hollow: at the roundoff floor, not fitted); red, the "
            f"fitted order [{level}t-interval over seeds]; dashed, the stated order from the "
            f"same first point.{left}")
