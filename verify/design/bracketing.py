r"""Adaptive grids: locate a threshold by bisection on run outcomes.

Many claims are about where an outcome switches: the data fraction :math:`p^\star` above
which a network generalises, a landscape threshold, a critical learning rate. A full grid of
:math:`G` points finds the switch to one grid spacing with :math:`G` runs; bisection finds it
to the same width :math:`r` with

.. math:: 2 + \lceil \log_2((\mathrm{hi}-\mathrm{lo})/r) \rceil

runs (two ends, then one midpoint per halving; on a log axis, :math:`\log(\mathrm{hi}/\mathrm{lo})`
and :math:`\log r` instead, with geometric midpoints). Bisection assumes one switch
(outcomes monotone in :math:`x`); :func:`full_grid_threshold` reads the bracket off a full
grid and reports when the grid shows more than one switch, so the two can be compared where
both are affordable.

An outcome may be a bool, or a decision of :mod:`~verify.design.sequential_seeds`
('holds'/'fails'/'undecided') or of :mod:`~verify.design.early_stop`
('reached'/'not reached'/'undecided'), or ``None`` for undecided. A noisy outcome near the
threshold is often undecided; bisection then stops and reports the bracket it had, with the
undecided point recorded (an undecided point usually lies near the switch, but that is a
reading, not a decision).

>>> b = bisect_threshold(lambda x: x >= 0.37, 0.0, 1.0, 0.01)
>>> b.status, b.lo, b.hi, b.evaluations
('resolved', 0.3671875, 0.375, 9)
>>> print(b.text)
threshold in [0.367188, 0.375] (width 0.0078125, resolution 0.01; 9 evaluations)
>>> grid = [i / 100 for i in range(101)]
>>> g = full_grid_threshold([(x, x >= 0.37) for x in grid])
>>> g.lo, g.hi, b.overlaps(g), evaluations_saved(b, len(grid))
(0.36, 0.37, True, 92)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

BracketStatus = Literal["resolved", "undecided", "not bracketed", "non-monotone"]


def outcome_value(outcome: Any) -> bool | None:
    """An outcome as True, False or None (undecided).

    >>> outcome_value("holds"), outcome_value("not reached"), outcome_value(None)
    (True, False, None)
    """
    if isinstance(outcome, bool) or outcome is None:
        return outcome
    decision = getattr(outcome, "decision", None)  # a SequentialResult
    if decision is None:
        decision = getattr(outcome, "outcome", None)  # an early_stop.Decision
    if decision is None and isinstance(outcome, str):
        decision = outcome
    table = {"holds": True, "reached": True, "fails": False, "not reached": False,
             "undecided": None}
    if isinstance(decision, str) and decision in table:
        return table[decision]
    if isinstance(outcome, np.bool_):  # what a comparison on a numpy grid gives
        return bool(outcome)
    raise ValueError(f"an outcome must be a bool, None, or a decision 'holds'/'fails'/"
                     f"'reached'/'not reached'/'undecided' (or carry one), got {outcome!r}")


@dataclass(frozen=True)
class Bracket:
    """Where the outcome switches: between ``lo`` and ``hi``.

    ``status`` is 'resolved' (width at most ``resolution``), 'undecided' (an undecided outcome
    stopped the search; ``lo``, ``hi`` are the bracket reached before it), 'not bracketed'
    (both ends gave the same outcome, or an end was undecided: no switch inside the range is
    known; ``lo``, ``hi`` are the range) or 'non-monotone' (a grid with more than one switch;
    ``lo``, ``hi`` span them all). ``points`` are the evaluated ``(x, outcome)`` pairs in
    evaluation order, outcomes as True/False/None. ``width`` is ``hi - lo``, or ``hi / lo``
    on a log axis (a ratio, as ``resolution`` then is).
    """

    lo: float
    hi: float
    status: BracketStatus
    points: tuple[tuple[float, bool | None], ...]
    resolution: float | None
    log: bool = False
    increasing: bool = True

    @property
    def width(self) -> float:
        return self.hi / self.lo if self.log else self.hi - self.lo

    @property
    def evaluations(self) -> int:
        return len(self.points)

    @property
    def undecided_points(self) -> tuple[float, ...]:
        return tuple(x for x, v in self.points if v is None)

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    def overlaps(self, other: Bracket) -> bool:
        """Whether two brackets share a point (a bisection's against a grid's)."""
        return self.lo <= other.hi and other.lo <= self.hi

    @property
    def text(self) -> str:
        """The bracket in words, with its width stated against the resolution."""
        kind = "ratio" if self.log else "width"
        res = "" if self.resolution is None else f", resolution {self.resolution:g}"
        s = (f"threshold in [{self.lo:g}, {self.hi:g}] ({kind} {self.width:g}{res}; "
             f"{self.evaluations} evaluations)")
        if self.status != "resolved":
            s += f": {self.status}"
        if self.undecided_points:
            s += f", undecided at {', '.join(f'{x:g}' for x in self.undecided_points)}"
        return s

    def as_record(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "status": self.status, "width": self.width,
                "resolution": self.resolution, "log": self.log, "increasing": self.increasing,
                "evaluations": self.evaluations,
                "points": [[x, v] for x, v in self.points], "text": self.text}


def _check_range(lo: float, hi: float, log: bool) -> None:
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    if not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo!r}, hi={hi!r}")
    if log and lo <= 0:
        raise ValueError(f"lo must be positive on a log axis (log=True), got {lo!r}")


def bisect_threshold(outcome: Callable[[float], Any], lo: float, hi: float, resolution: float,
                     *, log: bool = False, increasing: bool = True) -> Bracket:
    r"""Locate where ``outcome`` switches in ``[lo, hi]`` by bisection, to ``resolution``.

    ``increasing=True`` means the outcome is False below the threshold and True above it
    (``False`` the reverse). Both ends are evaluated first; they must differ, else the
    bracket is 'not bracketed'. Each step evaluates the midpoint (geometric with ``log``) and
    keeps the half whose ends differ, until ``hi - lo <= resolution`` (``hi / lo <=
    resolution`` with ``log``, so ``resolution`` is then a ratio above 1). An undecided
    outcome stops the search (status 'undecided').

    >>> b = bisect_threshold(lambda p: p < 0.02, 1e-3, 1.0, 1.5, log=True, increasing=False)
    >>> b.status, round(b.lo, 4), round(b.hi, 4), b.evaluations
    ('resolved', 0.0165, 0.0205, 7)
    """
    _check_range(lo, hi, log)
    if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or not (
            resolution > (1.0 if log else 0.0) and math.isfinite(resolution)):
        raise ValueError(f"resolution must be a finite number above {1 if log else 0} "
                         f"({'a ratio hi/lo' if log else 'a width hi - lo'}), got {resolution!r}")
    lo, hi = float(lo), float(hi)
    points: list[tuple[float, bool | None]] = []

    def ask(x: float) -> bool | None:
        v = outcome_value(outcome(x))
        points.append((x, v))
        # Normalise so that True means "above the threshold" whichever way the outcome runs.
        return v if v is None or increasing else not v

    def result(status: BracketStatus) -> Bracket:
        return Bracket(lo, hi, status, tuple(points), float(resolution), log, increasing)

    at_lo, at_hi = ask(lo), ask(hi)
    if at_lo is None or at_hi is None:
        return result("not bracketed")
    if at_lo == at_hi:
        return result("not bracketed")
    if at_lo and not at_hi:
        # Switched the wrong way: no threshold of the stated direction is known inside.
        return result("not bracketed")
    while (hi / lo if log else hi - lo) > resolution:
        mid = math.sqrt(lo * hi) if log else 0.5 * (lo + hi)
        if not lo < mid < hi:  # floating point has run out of room
            break
        v = ask(mid)
        if v is None:
            return result("undecided")
        if v:
            hi = mid
        else:
            lo = mid
    return result("resolved")


def full_grid_threshold(outcomes_on_grid: Iterable[tuple[float, Any]] | Mapping[float, Any], *,
                        increasing: bool = True, log: bool = False) -> Bracket:
    """The threshold bracket read off a full grid of ``(x, outcome)`` pairs (any order).

    With one switch the bracket is between the last point below it and the first above it
    (undecided points are recorded but do not move it). With more than one switch the
    bracket spans from the first point on the high side to the last on the low side, status
    'non-monotone'. With no switch it is the grid's range, 'not bracketed'. The resolution
    is the grid's spacing at the bracket (``None`` when not resolved).

    >>> g = full_grid_threshold({0.1: False, 0.2: None, 0.3: True, 0.4: False, 0.5: True})
    >>> g.status, g.lo, g.hi
    ('non-monotone', 0.3, 0.4)
    """
    items = outcomes_on_grid.items() if isinstance(outcomes_on_grid, Mapping) else outcomes_on_grid
    points = tuple((float(x), outcome_value(v)) for x, v in items)
    if len(points) < 2:
        raise ValueError(f"outcomes_on_grid must hold at least two points, got {len(points)}")
    xs = [x for x, _ in points]
    if len(set(xs)) != len(xs):
        raise ValueError("outcomes_on_grid has a repeated x")
    if log and min(xs) <= 0:
        raise ValueError("a log grid (log=True) must have positive x")
    above = sorted(x for x, v in points if v is not None and v == increasing)
    below = sorted(x for x, v in points if v is not None and v != increasing)
    if not above or not below:
        return Bracket(min(xs), max(xs), "not bracketed", points, None, log, increasing)
    lo, hi = below[-1], above[0]
    if lo < hi:
        return Bracket(lo, hi, "resolved", points, hi / lo if log else hi - lo, log, increasing)
    return Bracket(hi, lo, "non-monotone", points, None, log, increasing)


def evaluations_saved(bracket: Bracket, grid_size: int) -> int:
    """Runs a bisection saved against a full grid of ``grid_size`` points (negative if it
    cost more).

    >>> evaluations_saved(bisect_threshold(lambda x: x > 0.5, 0, 1, 0.1), 11)
    5
    """
    if isinstance(grid_size, bool) or not isinstance(grid_size, int) or grid_size < 0:
        raise ValueError(f"grid_size must be a non-negative integer, got {grid_size!r}")
    return grid_size - bracket.evaluations


def grid(lo: float, hi: float, resolution: float, *, log: bool = False) -> list[float]:
    """The full grid whose spacing is at most ``resolution`` (a ratio with ``log``), ends
    included: the grid a bisection to ``resolution`` replaces.

    >>> grid(0.0, 1.0, 0.25)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> [round(x, 3) for x in grid(1.0, 100.0, 10.0, log=True)]
    [1.0, 10.0, 100.0]
    """
    _check_range(lo, hi, log)
    if not (isinstance(resolution, (int, float)) and math.isfinite(resolution)
            and resolution > (1.0 if log else 0.0)):
        raise ValueError(f"resolution must be a finite number above {1 if log else 0}, "
                         f"got {resolution!r}")
    if log:
        # The small tolerance keeps an exact ratio (100 = 10^2) from asking for an extra step.
        n = math.ceil(math.log(hi / lo) / math.log(resolution) - 1e-12)
        return [lo * (hi / lo) ** (i / n) for i in range(n + 1)]
    n = math.ceil((hi - lo) / resolution - 1e-12)
    return [lo + (hi - lo) * i / n for i in range(n + 1)]
