r"""Plots a claim records for the report: the figure a reader of the paper expects (a
learning curve, an error against the step size on log-log axes, a regime map).

A check builds a :class:`Plot` (curves) or a :class:`Heatmap` (a 2-D grid of outcomes) and
records it with ``run.plot(plot)``: it is stored among the claim's figures, under its title, as
plain JSON with a ``"kind"`` key (``"plot"`` or ``"heatmap"``), and the report draws it
(:mod:`verify.report.svg_plots`). Like ``run.figure``, a plot informs and never decides the
verdict.

Everything is checked when the object is built, so a wrong plot fails the check that made it
(a :class:`ValueError` naming the field), never the report drawn later: series of matching
lengths, numbers finite or NaN (NaN leaves a gap; infinities are refused), positive on a log
axis, labels non-empty.

A learning curve with a threshold:

>>> from verify.plots import Heatmap, Plot, Reference
>>> acc = Plot("test accuracy", x_label="epoch", y_label="accuracy",
...            series={"eta > 0": ([0, 100, 200], [0.1, 0.6, 1.0]),
...                    "eta = 0": ([0, 100, 200], [0.1, 0.2, 0.2])},
...            references=(Reference("grokked (0.99)", y=0.99),))
>>> acc.as_record()["kind"], sorted(acc.as_record()["series"])
('plot', ['eta = 0', 'eta > 0'])

An error against the step size on log-log axes, with the fitted and the nominal order:

>>> rate = Plot("RK4 error", x_label="step size h", y_label="max error",
...             series={"error": ([0.2, 0.1, 0.05], [3.2e-6, 2.0e-7, 1.25e-8])},
...             log_x=True, log_y=True, fitted=(4.0, "fitted order 4.0"),
...             references=(Reference("nominal order 4", slope=4),))
>>> Plot.from_record(rate.as_record()) == rate
True

A regime map (rows ``y``, columns ``x``):

>>> grid = Heatmap("outcome", x_label="p", y_label="group", x=[0.3, 0.5], y=["Z11", "Z23"],
...                values=[[0.0, 1.0], [0.0, 0.5]], colour_label="fraction that groks")
>>> grid.as_record()["kind"]
'heatmap'

Mistakes are caught where they are made:

>>> Plot("t", x_label="x", y_label="y", series={"a": ([1, 2], [1.0])})
Traceback (most recent call last):
...
ValueError: Plot.series['a']: x has 2 values, y has 1
>>> Plot("t", x_label="", y_label="y", series={"a": ([1], [1.0])})
Traceback (most recent call last):
...
ValueError: Plot.x_label: must be a non-empty string
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Heatmap", "Plot", "Reference", "figure_from_record"]

_STYLE = re.compile(r"(C[0-9])?(--|-\.|-|:)?")


def _label(owner: str, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{owner}.{name}: must be a non-empty string")
    return value


def _plain(value: Any) -> Any:
    """Tensors and arrays as lists (anything with ``tolist``)."""
    return value.tolist() if hasattr(value, "tolist") else value


def _float(where: str, value: Any) -> float:
    """A finite number or NaN; JSON's 'nan' string reads back as NaN."""
    value = _plain(value)
    if value == "nan":
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {value!r} is not a number")
    x = float(value)
    if math.isinf(x):
        raise ValueError(f"{where}: {x} is infinite (finite numbers or NaN for a gap)")
    return x


def _numbers(where: str, values: Any, *, log: bool = False) -> tuple[float, ...]:
    values = _plain(values)
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        raise ValueError(f"{where}: a sequence of numbers, not {type(values).__name__}")
    out = tuple(_float(f"{where}[{i}]", v) for i, v in enumerate(values))
    if log:
        bad = [v for v in out if v <= 0]
        if bad:
            raise ValueError(f"{where}: {bad[0]!r} is not positive, on a log axis")
    return out


def _json(x: float) -> float | str:
    return "nan" if math.isnan(x) else x


@dataclass(frozen=True)
class Reference:
    """A line drawn for comparison, with its label: horizontal at ``y`` (a threshold, a stated
    value), or of slope ``slope`` (the stated rate: on log-log axes a power law
    :math:`y\\propto x^{\\rm slope}`), drawn parallel to the first series' best line of that
    slope, half a decade below it, for the slopes to be compared. Exactly one of the two."""

    label: str
    y: float | None = None
    slope: float | None = None

    def __post_init__(self) -> None:
        _label("Reference", "label", self.label)
        if (self.y is None) == (self.slope is None):
            raise ValueError(f"Reference {self.label!r}: give exactly one of y and slope")
        for name in ("y", "slope"):
            value = getattr(self, name)
            if value is not None:
                x = _float(f"Reference.{name}", value)
                if math.isnan(x):
                    raise ValueError(f"Reference.{name}: NaN")
                object.__setattr__(self, name, x)

    def as_record(self) -> dict[str, Any]:
        key = "y" if self.y is not None else "slope"
        return {"label": self.label, key: getattr(self, key)}


@dataclass(frozen=True)
class Plot:
    """Curves on one pair of axes.

    ``series``: name -> ``(x, y)``, two sequences of the same length (lists, tuples, arrays,
    tensors); NaN in y leaves a gap. ``log_x`` / ``log_y``: logarithmic axes (then every value
    on that axis is positive). ``references``: lines for comparison (:class:`Reference`).
    ``fitted``: ``(slope, label)``, the fitted slope, drawn as a grey band of that slope
    through the first series (with ``log_x`` and ``log_y`` the fitted power, e.g. an order of
    convergence). ``styles``: series name -> matplotlib's short format, a colour ``"C0"`` to
    ``"C9"`` and/or a line style ``"-"``, ``"--"``, ``":"``, ``"-."`` (``"C1--"``: the second
    colour, dashed), so related curves share a colour (train dashed, test solid); a series
    not named takes the next colour, solid.
    """

    title: str
    x_label: str
    y_label: str
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]]
    log_x: bool = False
    log_y: bool = False
    references: Sequence[Reference] = ()
    fitted: tuple[float, str] | None = None
    styles: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("title", "x_label", "y_label"):
            _label("Plot", name, getattr(self, name))
        if not isinstance(self.series, Mapping) or not self.series:
            raise ValueError("Plot.series: a non-empty mapping name -> (x, y)")
        series = {}
        for name, xy in self.series.items():
            where = f"Plot.series[{name!r}]"
            _label("Plot", f"series key {name!r}", name)
            if isinstance(xy, Mapping):
                xy = (xy.get("x"), xy.get("y"))
            if not isinstance(xy, Sequence) or isinstance(xy, str) or len(xy) != 2:
                raise ValueError(f"{where}: a pair (x, y)")
            x = _numbers(f"{where}.x", xy[0], log=bool(self.log_x))
            y = _numbers(f"{where}.y", xy[1], log=bool(self.log_y))
            if len(x) != len(y):
                raise ValueError(f"{where}: x has {len(x)} values, y has {len(y)}")
            if not x:
                raise ValueError(f"{where}: no points")
            series[name] = (x, y)
        object.__setattr__(self, "series", series)
        for name in ("log_x", "log_y"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Plot.{name}: True or False")
        refs = self.references
        if isinstance(refs, Reference):
            refs = (refs,)
        if not isinstance(refs, Sequence) or not all(isinstance(r, Reference) for r in refs):
            raise ValueError("Plot.references: a sequence of Reference")
        object.__setattr__(self, "references", tuple(refs))
        if self.fitted is not None:
            if not isinstance(self.fitted, Sequence) or len(self.fitted) != 2:
                raise ValueError("Plot.fitted: a pair (slope, label)")
            slope = _float("Plot.fitted slope", self.fitted[0])
            if math.isnan(slope):
                raise ValueError("Plot.fitted slope: NaN")
            object.__setattr__(self, "fitted",
                               (slope, _label("Plot", "fitted label", self.fitted[1])))
        if not isinstance(self.styles, Mapping):
            raise ValueError("Plot.styles: a mapping series name -> format ('C1--')")
        for name, style in self.styles.items():
            if name not in self.series:
                raise ValueError(f"Plot.styles: {name!r} is not a series")
            if not isinstance(style, str) or not _STYLE.fullmatch(style) or not style:
                raise ValueError(f"Plot.styles[{name!r}]: {style!r} is not a colour C0-C9 "
                                 f"and/or a line style -, --, :, -.")
        object.__setattr__(self, "styles", dict(self.styles))

    def as_record(self) -> dict[str, Any]:
        """Plain JSON (NaN as the string 'nan', as every figure of a record)."""
        return {"kind": "plot", "title": self.title, "x_label": self.x_label,
                "y_label": self.y_label,
                "series": {name: {"x": [_json(v) for v in x], "y": [_json(v) for v in y]}
                           for name, (x, y) in self.series.items()},
                "log_x": self.log_x, "log_y": self.log_y,
                "references": [r.as_record() for r in self.references],
                "fitted": None if self.fitted is None else
                {"slope": self.fitted[0], "label": self.fitted[1]},
                "styles": dict(self.styles)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Plot:
        """The plot :meth:`as_record` wrote (validated again: a stored record may be edited
        or come from an older version)."""
        _kind(record, "plot")
        refs = record.get("references") or []
        if not isinstance(refs, Sequence) or not all(isinstance(r, Mapping) for r in refs):
            raise ValueError("plot.references: a list of {label, y | slope}")
        fitted = record.get("fitted")
        if fitted is not None and not isinstance(fitted, Mapping):
            raise ValueError("plot.fitted: {slope, label} or null")
        series = record.get("series")
        if not isinstance(series, Mapping):
            raise ValueError("plot.series: a mapping name -> {x, y}")
        return cls(title=record.get("title"), x_label=record.get("x_label"),
                   y_label=record.get("y_label"), series=series,
                   log_x=record.get("log_x", False), log_y=record.get("log_y", False),
                   references=tuple(Reference(r.get("label"), r.get("y"), r.get("slope"))
                                    for r in refs),
                   fitted=None if fitted is None else (fitted.get("slope"),
                                                       fitted.get("label")),
                   styles=record.get("styles") or {})


def _ticks(owner: str, name: str, values: Any) -> tuple[float | str, ...]:
    values = _plain(values)
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence) \
            or not values:
        raise ValueError(f"{owner}.{name}: a non-empty sequence of numbers or names")
    out = []
    for i, v in enumerate(values):
        v = _plain(v)
        if isinstance(v, str):
            _label(owner, f"{name}[{i}]", v)
            out.append(v)
        else:
            x = _float(f"{owner}.{name}[{i}]", v)
            if math.isnan(x):
                raise ValueError(f"{owner}.{name}[{i}]: NaN")
            out.append(x)
    return tuple(out)


@dataclass(frozen=True)
class Heatmap:
    """A 2-D grid of outcomes (a regime map): ``values[i][j]`` at row ``y[i]``, column
    ``x[j]``. ``x`` and ``y`` are the cells' labels (numbers or names, drawn evenly spaced);
    NaN marks a cell not run. ``colour_label`` names what the colour shows; ``limits``: the
    values at the ends of the colour scale (default: the data's range), e.g. ``(0, 1)`` for
    a fraction."""

    title: str
    x_label: str
    y_label: str
    x: Sequence[float | str]
    y: Sequence[float | str]
    values: Sequence[Sequence[float]]
    colour_label: str
    annotate: bool = field(default=True)  # write each cell's value in it (small grids)
    limits: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for name in ("title", "x_label", "y_label", "colour_label"):
            _label("Heatmap", name, getattr(self, name))
        object.__setattr__(self, "x", _ticks("Heatmap", "x", self.x))
        object.__setattr__(self, "y", _ticks("Heatmap", "y", self.y))
        rows = _plain(self.values)
        if isinstance(rows, (str, Mapping)) or not isinstance(rows, Sequence):
            raise ValueError("Heatmap.values: rows of numbers, one row per y")
        if len(rows) != len(self.y):
            raise ValueError(f"Heatmap.values: {len(rows)} rows for {len(self.y)} y values")
        values = []
        for i, row in enumerate(rows):
            row = _numbers(f"Heatmap.values[{i}]", row)
            if len(row) != len(self.x):
                raise ValueError(f"Heatmap.values[{i}]: {len(row)} values for {len(self.x)} "
                                 f"x values")
            values.append(row)
        object.__setattr__(self, "values", tuple(values))
        if not isinstance(self.annotate, bool):
            raise ValueError("Heatmap.annotate: True or False")
        if self.limits is not None:
            if isinstance(self.limits, str) or not isinstance(self.limits, Sequence) \
                    or len(self.limits) != 2:
                raise ValueError("Heatmap.limits: a pair (low, high) or None")
            lo, hi = (_float(f"Heatmap.limits[{i}]", v) for i, v in enumerate(self.limits))
            if not lo < hi:
                raise ValueError(f"Heatmap.limits: ({lo}, {hi}) is not low < high")
            object.__setattr__(self, "limits", (lo, hi))

    def as_record(self) -> dict[str, Any]:
        return {"kind": "heatmap", "title": self.title, "x_label": self.x_label,
                "y_label": self.y_label, "x": list(self.x), "y": list(self.y),
                "values": [[_json(v) for v in row] for row in self.values],
                "colour_label": self.colour_label, "annotate": self.annotate,
                "limits": None if self.limits is None else list(self.limits)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Heatmap:
        _kind(record, "heatmap")
        return cls(title=record.get("title"), x_label=record.get("x_label"),
                   y_label=record.get("y_label"), x=record.get("x"), y=record.get("y"),
                   values=record.get("values"), colour_label=record.get("colour_label"),
                   annotate=record.get("annotate", True), limits=record.get("limits"))


def _kind(record: Any, kind: str) -> None:
    if not isinstance(record, Mapping) or record.get("kind") != kind:
        raise ValueError(f"not a {kind} record (its 'kind' must be {kind!r})")


def figure_from_record(record: Mapping[str, Any]) -> Plot | Heatmap:
    """The :class:`Plot` or :class:`Heatmap` of a stored figure with a ``"kind"`` key; a
    :class:`ValueError` saying what is wrong otherwise."""
    kind = record.get("kind") if isinstance(record, Mapping) else None
    if kind == "plot":
        return Plot.from_record(record)
    if kind == "heatmap":
        return Heatmap.from_record(record)
    raise ValueError(f"unknown figure kind {kind!r} (known: 'plot', 'heatmap')")
