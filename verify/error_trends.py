r"""Error trends of asymptotic claims: an error measured along a geometric grid of the limit
parameter (small :math:`\alpha`, small :math:`t`, large :math:`K`, ...) for several seeds, its
fitted log-log order with a confidence interval, and the evidence that compares it with the
order the paper states (diffrax's order tests are the model: regress log error on log step).

Conventions. ``h`` is the parameter that goes to 0: the size itself (``limit="zero"``) or its
inverse (``limit="infinity"``, e.g. :math:`h = 1/K`). The *order* :math:`p` of a quantity
:math:`e` is the slope of :math:`\log e` against :math:`\log h`, so :math:`e \propto h^p`:
:math:`p = 2` for an :math:`O(t^2)` remainder, :math:`p = -\tfrac12` for a norm growing like
:math:`\sqrt K`.

The fit.

* A grid point is kept only while every seed's error there is above ``ABOVE_FLOOR`` times its
  roundoff floor (the floor is the caller's worst-case estimate, one per seed and point); from
  the first point that is not, on towards the limit, the grid is dropped (the floor grows, or
  the error shrinks, monotonically towards the limit, so what lies beyond is floor too). Fewer
  than ``MIN_POINTS`` kept points: no order can be measured, the item is undecided.
* Each seed's order is the least-squares slope over its kept points, computed by
  :func:`numerics.step_studies.observed_order` (a halving ladder's slope; a geometric grid of
  ratio :math:`r` is a halving ladder in :math:`\log_2 h / \log_2 r`).
* The interval is Student's t on the mean of the per-seed orders, with ``S - 1`` degrees of
  freedom. Why seeds and not points: within one seed, the deviations of :math:`\log e` from a line
  are deterministic (the next-order terms), not independent noise, so a pooled least-squares
  standard error over (seed, point) pairs would mean nothing; the seeds (independent problems
  and initialisations) are the replicates. Why t and not a bootstrap: with 4-8 seeds a
  percentile bootstrap of a mean undercovers (it resamples 4-8 values), while the t-interval
  is exact for normal per-seed orders and robust for a mean of smooth functions of Gaussian
  draws.

The evidence. The stated order :math:`p` is compared with the interval :math:`[lo, hi]`
widened by the *bend allowance* :math:`\delta` of the data themselves (and by an allowance a
claim justifies for a model error of its own, 0 by default); no fixed slack enters.

* The bend allowance. On a finite grid the fitted line's slope is an average of local slopes,
  and the local slope of :math:`c_1h^p(1 + c_2h^q)` is :math:`p + O(h^q)`: it still moves at
  the finest point. Each seed's order is fitted again over the coarse and over the fine
  half of the kept points (at least ``MIN_POINTS`` each); the *drift* :math:`d` is the mean
  fine order minus the mean coarse order. The order at the limit may lie anywhere in the hull
  of the t-interval and of the fine orders' t-interval moved on by :math:`d` (a next-order
  term that shrinks at least by half from one half of the grid to the next leaves at most
  :math:`d` more to go). Both intervals are over seeds, so scatter is counted once, by
  the seeds; the widening comes from the errors alone and does not grow with a wrong stated
  order. With fewer than ``2 MIN_POINTS - 1`` kept points no bend can be read, and
  ``UNREAD_BEND`` (0.2, the designed-for bend) widens both sides instead: such an item can
  fail, but it resolves 10% only for stated orders of 2 or more. Claims choose grids of 5
  points or more.
* The verdict. ``bound="at_least"`` (an :math:`O(h^p)` remainder) fails when :math:`p` lies
  above :math:`hi + \delta`; ``bound="exact"`` (a :math:`\Theta(h^p)` leading term) also
  when it lies below :math:`lo - \delta`. A stated order inside the widened interval passes
  only where the data *resolve* it: the widened interval reaches at most ``RESOLUTION``
  :math:`|p|` (0.05 absolute for :math:`|p| \le 1/2`) from it on either side, so an exponent 10%
  off lies outside it and is rejected. An ``at_least`` bound whose whole widened interval
  lies at or above :math:`p` is decided however wide the interval (the bound holds; a weaker
  stated bound then holds too, which is a question of sharpness, not of this item).
  Otherwise the item is undecided and says the resolution the data reached.

When the stated order is positive (an error said to vanish), a second item requires the
geometric mean of the error over seeds to shrink at every kept step towards the limit.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from scipy import stats

from numerics.step_studies import observed_order
from verify.evidence import Evidence, Route, Tolerance, to_json_value, undecided
from verify.step_ladders import (
    ABOVE_FLOOR,  # closer to the floor, roundoff bends the line
)

LIMITS = ("zero", "infinity")
BOUNDS = ("at_least", "exact")

#: A line through fewer points has no residual to show curvature; three is the least.
MIN_POINTS = 3

#: Confidence level of the interval on the mean order.
LEVEL = 0.95

#: An order is *resolved* when the data place it within this fraction of the stated order
#: (issue 30: an exponent 10% off must be rejected where the data can tell it apart).
RESOLUTION = 0.1

#: Below this magnitude the resolution is absolute, ``RESOLUTION * RESOLUTION_FLOOR`` = 0.05:
#: a 10% change of an order near 0 is no change a finite grid can see (and of a plateau's
#: order 0 none at all: its mutants, powers and scalings of a constant, leave it at 0), while
#: 0.05 still tells -1/2 from -0.55.
RESOLUTION_FLOOR = 0.5

#: The bend allowed where too few points are kept to read it from the data (fewer than
#: ``2 MIN_POINTS - 1``): the pre-asymptotic bend the grids of this toolkit were designed to
#: stay within (verify/claims/li2/SOURCES.md §2.5: +-0.2; the local slope of
#: :math:`c h^p(1 + c'h)` is :math:`p + c'h/(1 + c'h)`, so a next-order term below ~20% of the
#: leading one at the coarse end keeps it there). It widens both ways, so such an item can
#: fail but passes only where 0.2 is within ``RESOLUTION`` of the stated order.
UNREAD_BEND = Tolerance(0.2, "the bend such grids are designed to stay within (SOURCES §2.5:"
                             " +-0.2)")

#: The default claim allowance: the bend the data show is all the model error there is.
NO_ALLOWANCE = Tolerance(0.0, "no model error beyond the bend the data show")

#: The geometric mean may rise between two kept points by at most this relative amount: each
#: kept error lies at least ABOVE_FLOOR times above its floor, so roundoff moves each of the
#: two by at most 1/ABOVE_FLOOR of itself.
MONOTONE_TOLERANCE = Tolerance(2 / ABOVE_FLOOR, f"two kept errors, each at least {ABOVE_FLOOR:g}"
                                                f" x its roundoff floor, can each move by "
                                                f"1/{ABOVE_FLOOR:g} of itself")


def geometric_grid(start: float, stop: float, points: int) -> np.ndarray:
    """``points`` values from ``start`` to ``stop`` with a constant ratio (both > 0)."""
    if not (start > 0 and stop > 0 and math.isfinite(start) and math.isfinite(stop)):
        raise ValueError(f"start, stop: {start!r}, {stop!r} must be finite and > 0")
    if start == stop:
        raise ValueError(f"start, stop: must differ (both {start!r})")
    if not (isinstance(points, int) and points >= 2):
        raise ValueError(f"points: {points!r} must be an integer >= 2")
    return start * (stop / start) ** (np.arange(points) / (points - 1))


def _ladder(sizes: Sequence[float], limit: str) -> tuple[np.ndarray, float]:
    """``h`` (far from the limit first) and the ratio ``h_k / h_{k+1} > 1`` of the grid."""
    if limit not in LIMITS:
        raise ValueError(f"limit: {limit!r} is not one of {', '.join(LIMITS)}")
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 1 or s.size < 2 or not np.all(np.isfinite(s)) or not np.all(s > 0):
        raise ValueError(f"sizes: need >= 2 finite positive values, got {s.tolist()}")
    h = s if limit == "zero" else 1.0 / s
    ratios = h[:-1] / h[1:]
    if not np.all(ratios > 1):
        towards = "decrease" if limit == "zero" else "increase"
        raise ValueError(f"sizes: must {towards} strictly towards the limit ({limit}), got "
                         f"{s.tolist()}")
    if not np.allclose(ratios, ratios[0], rtol=1e-9, atol=0):
        raise ValueError(f"sizes: must form a geometric grid (constant ratio), got ratios "
                         f"{ratios.tolist()}")
    return h, float(ratios[0])


def _order(values: np.ndarray, ratio: float) -> float:
    r"""Least-squares slope of :math:`\log e` against :math:`\log h` on a geometric grid:
    :func:`observed_order` (per halving) rescaled from :math:`\log 2` to :math:`\log r`."""
    return float(observed_order(torch.as_tensor(values, dtype=torch.float64))) \
        * math.log(2.0) / math.log(ratio)


def order_along(scale: Callable[[float], float], sizes: Sequence[float], *,
                limit: str = "zero") -> float:
    r"""The order a stated scale predicts on this grid: the least-squares log-log slope of
    ``scale`` (e.g. the paper's :math:`O(\alpha t + t^2)` terms at fixed :math:`\alpha`) over
    the same points, in the same convention as a fitted order.

    >>> round(order_along(lambda t: 0.01 * t + t**2, geometric_grid(1e-4, 1e-6, 5)), 2)
    1.0
    >>> round(order_along(lambda K: K**0.5, [4, 16, 64], limit="infinity"), 9)
    -0.5
    """
    _, ratio = _ladder(sizes, limit)
    values = np.array([float(scale(float(s))) for s in sizes])
    if not (np.all(np.isfinite(values)) and np.all(values > 0)):
        raise ValueError(f"scale: must be finite and > 0 on the grid, got {values.tolist()}")
    return _order(values, ratio)


@dataclass(frozen=True)
class TrendFit:
    """A fitted error trend: the data, which points entered the fit, and the order with its
    interval (NaN when fewer than ``MIN_POINTS`` points are above the floor)."""

    sizes: np.ndarray  # (G,) the limit parameter, far from the limit first
    h: np.ndarray  # (G,) the parameter going to 0
    errors: np.ndarray  # (S, G)
    floors: np.ndarray  # (S, G)
    kept: np.ndarray  # (G,) bool
    orders: np.ndarray  # (S,) per-seed orders
    order: float  # their mean
    interval: tuple[float, float]
    level: float
    limit: str

    @property
    def finite(self) -> bool:
        return bool(np.all(np.isfinite(self.errors)))

    @property
    def geometric_mean(self) -> np.ndarray:
        r""":math:`\exp` of the mean over seeds of :math:`\log e` at each point (G,)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.exp(np.log(self.errors).mean(0))

    @property
    def local_slopes(self) -> np.ndarray:
        r"""Slopes of :math:`\log` of the geometric mean against :math:`\log h` between
        neighbouring kept points, far from the limit first (any grid, not only geometric)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log(self.geometric_mean[self.kept])
        return np.diff(logs) / np.diff(np.log(self.h[self.kept]))

    def _half_orders(self, end: str) -> np.ndarray:
        """Each seed's least-squares order over the coarse or the fine half of the kept points
        (at least ``MIN_POINTS`` each); NaN when no order was fitted or fewer than
        ``2 MIN_POINTS - 1`` points were kept (a half would be the whole)."""
        idx = np.flatnonzero(self.kept)
        if not np.isfinite(self.order) or idx.size < 2 * MIN_POINTS - 1:
            return np.full(self.errors.shape[0], math.nan)
        half = max(MIN_POINTS, (idx.size + 1) // 2)
        part = idx[-half:] if end == "fine" else idx[:half]
        x = np.log(self.h[part])
        return np.array([np.polyfit(x, np.log(row[part]), 1)[0] for row in self.errors])

    @property
    def fine_orders(self) -> np.ndarray:
        """Each seed's order over the finer half of the kept points (the limit's end)."""
        return self._half_orders("fine")

    @property
    def widened(self) -> tuple[float, float]:
        r"""Where the order at the limit may lie: the hull of the t-interval over all kept
        points and of the finer half's t-interval moved on by the drift from the coarse
        half's order to the fine half's (module docstring); NaN when no bend can be read."""
        fine = self.fine_orders
        if not np.all(np.isfinite(fine)):
            return (math.nan, math.nan)
        lo, hi = self.interval
        drift = float(fine.mean() - self._half_orders("coarse").mean())
        flo, fhi = t_interval(fine, self.level)
        return (min(lo, flo + min(drift, 0.0)), max(hi, fhi + max(drift, 0.0)))

    @property
    def bend(self) -> float:
        """How far :attr:`widened` reaches beyond the t-interval (the larger side)."""
        low, high = self.widened
        lo, hi = self.interval
        return max(lo - low, high - hi)

    def figure(self, stated_order: float | None = None) -> dict[str, Any]:
        """Plot data: the grid, every seed's errors and floors, the kept points, the fitted
        line through the geometric mean (on the kept points) and the orders."""
        line = None
        if np.isfinite(self.order):
            logs = np.log(self.errors[:, self.kept]).mean(0)
            logh = np.log(self.h[self.kept])
            intercept = float(np.mean(logs - self.order * logh))
            line = np.exp(intercept + self.order * logh).tolist()
        return to_json_value({
            "sizes": self.sizes.tolist(), "limit": self.limit, "h": self.h.tolist(),
            "errors_per_seed": self.errors.tolist(), "floors_per_seed": self.floors.tolist(),
            "geometric_mean": self.geometric_mean.tolist(), "kept": self.kept.tolist(),
            "fitted_line_on_kept": line, "order": self.order,
            "interval": list(self.interval), "level": self.level,
            "orders_per_seed": self.orders.tolist(), "stated_order": stated_order,
            "local_slopes": self.local_slopes.tolist(), "widened": list(self.widened),
            "fine_orders_per_seed": self.fine_orders.tolist()})


def fit_trend(sizes: Sequence[float], errors: Any, *, limit: str = "zero",
              floors: Any = 0.0, level: float = LEVEL) -> TrendFit:
    """Fit the order of ``errors`` (seeds x grid points; a tensor or array) along ``sizes``.

    ``sizes`` must form an exact geometric grid, far from the limit first: a constant ratio
    between neighbours to a relative 1e-9 (:func:`geometric_grid` makes one; a grid of
    integers rounded from a geometric one, such as widths 3, 7, 16, is refused with the
    ratios it has: keep the sizes unrounded or choose integers with an exact ratio, such as
    4, 8, 16).

    ``floors`` (broadcast to ``errors``) are worst-case roundoff floors: points within
    ``ABOVE_FLOOR`` of them are excluded as the module docstring says.
    """
    h, ratio = _ladder(sizes, limit)
    e = _as_numpy(errors)
    if e.ndim != 2 or e.shape[1] != h.size:
        raise ValueError(f"errors: shape {e.shape} must be (seeds, {h.size} grid points)")
    if e.shape[0] < 2:
        raise ValueError(f"errors: {e.shape[0]} seed(s); an interval needs >= 2")
    if not 0 < level < 1:
        raise ValueError(f"level: {level!r} must lie in (0, 1)")
    f = np.broadcast_to(_as_numpy(floors), e.shape).astype(np.float64)
    if np.any(f < 0) or not np.all(np.isfinite(f)):
        raise ValueError("floors: must be finite and >= 0")
    with np.errstate(invalid="ignore"):
        above = np.all((e > ABOVE_FLOOR * f) & (e > 0) & np.isfinite(e), axis=0)
    kept = np.cumprod(above).astype(bool)  # from the first floor point on, all dropped
    nan = (math.nan, math.nan)
    if int(kept.sum()) < MIN_POINTS or not np.all(np.isfinite(e)):
        return TrendFit(np.asarray(sizes, dtype=np.float64), h, e, f, kept,
                        np.full(e.shape[0], math.nan), math.nan, nan, level, limit)
    orders = np.array([_order(row[kept], ratio) for row in e])
    return TrendFit(np.asarray(sizes, dtype=np.float64), h, e, f, kept, orders,
                    float(orders.mean()), t_interval(orders, level), level, limit)


def t_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Student's t interval on the mean of ``values`` (>= 2 replicates)."""
    mean = float(values.mean())
    half = float(stats.t.ppf(0.5 + level / 2, df=values.size - 1)
                 * values.std(ddof=1) / math.sqrt(values.size))
    return (mean - half, mean + half)


def resolution_needed(stated_order: float) -> float:
    """How close to the stated order the widened interval must reach for a pass."""
    return RESOLUTION * max(abs(stated_order), RESOLUTION_FLOOR)


def trend_evidence(quantity: str, fit: TrendFit, *, stated_order: float,
                   bound: str = "at_least", allowance: Tolerance = NO_ALLOWANCE,
                   parameters: Mapping[str, Any] | None = None) -> list[Evidence]:
    """The order item (and, for a stated order > 0, the monotone item) of one trend.

    ``allowance`` is a model error the calling claim justifies beyond the bend the data show
    (e.g. a stated scale known only up to a slowly varying factor); its reason is printed.
    """
    if bound not in BOUNDS:
        raise ValueError(f"bound: {bound!r} is not one of {', '.join(BOUNDS)}")
    if not math.isfinite(stated_order):
        raise ValueError(f"stated_order: {stated_order!r} must be finite")
    params = {**(parameters or {}), "limit": fit.limit, "grid": fit.sizes.tolist(),
              "kept_points": int(fit.kept.sum()), "seeds": fit.errors.shape[0],
              "bound": bound, "level": fit.level}
    name = f"{quantity}: order vs stated {stated_order:.3g}"
    if fit.finite and not np.isfinite(fit.order):
        return [undecided(Route.RATE, name, f"only {int(fit.kept.sum())} grid points lie "
                          f"{ABOVE_FLOOR:g} x above the roundoff floor (need {MIN_POINTS}): "
                          "the order cannot be measured at this precision",
                          tolerance=allowance, parameters=params)]
    items = [_order_item(name, fit, stated_order, bound, allowance, params)]
    if stated_order > 0:
        items.append(_monotone(quantity, fit, params))
    return items


def _order_item(name: str, fit: TrendFit, stated: float, bound: str, allowance: Tolerance,
                params: dict[str, Any]) -> Evidence:
    """Pass, fail or undecided-at-resolution, as the module docstring says."""
    lo, hi = fit.interval
    side = ">=" if bound == "at_least" else "=="
    measured = {"order": fit.order, "interval": [lo, hi], "per_seed": fit.orders.tolist()}
    if not fit.finite:
        return Evidence(route=Route.RATE, quantity=name, stated=stated, derived=None,
                        measured=to_json_value(measured), metric="order", discrepancy=None,
                        tolerance=allowance, parameters=params, finite=False,
                        note="non-finite errors: no order")
    low, high = fit.widened
    bend_read = math.isfinite(low) and math.isfinite(high)
    if not bend_read:   # too few kept points to fit a finer half apart from the whole
        low, high = lo - UNREAD_BEND.value, hi + UNREAD_BEND.value
    low, high = low - allowance.value, high + allowance.value
    # distance of the stated order beyond the t-interval, against how far the widened
    # interval reaches on that side (it may reach further on one side than the other)
    above, below = stated - hi, (lo - stated if bound == "exact" else 0.0)
    gap = max(0.0, above, below)
    reach_side = high - hi if above > 0 else lo - low if below > 0 else max(lo - low, high - hi)
    why = ((f"bend allowance: the fit over the finer half of the grid, moved on by its drift "
            f"from the coarser half's, reaches {lo - low:.3g} below and "
            f"{high - hi:.3g} above the t-interval") if bend_read else
           f"{int(fit.kept.sum())} kept points cannot show the bend: {UNREAD_BEND.why}") + (
        f" (with {allowance.value:g}: {allowance.why})" if allowance.value else "")
    tolerance = Tolerance(max(reach_side, 0.0), why)
    # at least: an order whose whole widened interval lies at or above the stated one decides
    # the bound however wide it is (a stronger stated order is then undecided, not passed)
    reach = (0.0 if bound == "at_least" and low >= stated
             else max(stated - low, high - stated))
    needed = resolution_needed(stated)
    measured |= {"widened": [low, high], "reach": reach, "resolution needed": needed}
    interval = (f"{fit.level:.0%} t-interval [{lo:.3f}, {hi:.3f}] over "
                f"{fit.errors.shape[0]} seeds, widened to [{low:.3f}, {high:.3f}]")
    common = dict(route=Route.RATE, quantity=name, stated=stated, derived=None,
                  measured=to_json_value(measured), metric="order", tolerance=tolerance,
                  parameters={**params, "resolution needed": needed}, finite=True,
                  comparisons={f"measured {side} stated": gap})
    if gap <= tolerance.value and reach > needed:
        return Evidence(**common, discrepancy=None,
                        note=f"undecided at resolution {reach:.3f}: {interval} holds the "
                             f"stated {stated:.3g}, but reaches {reach:.3f} from it, more than "
                             f"{needed:.3g} ({RESOLUTION:.0%} of the stated order, at least of "
                             f"{RESOLUTION_FLOOR:g}), so an "
                             "order that far off would pass too; more seeds or a longer "
                             "grid towards the limit resolve it")
    return Evidence(**common, discrepancy=gap,
                    note=f"{interval}; discrepancy = distance of the stated order beyond the "
                         f"t-interval, against the bend allowance on that side; resolved to "
                         f"{reach:.3f} (needed {needed:.3g})")


def _monotone(quantity: str, fit: TrendFit, params: dict[str, Any]) -> Evidence:
    """Largest relative rise of the geometric-mean error between neighbouring kept points."""
    gm = fit.geometric_mean[fit.kept]
    rise = None
    if fit.finite:
        rise = float(np.max(np.maximum(gm[1:] - gm[:-1], 0.0) / np.maximum(gm[:-1], gm[1:])))
    return Evidence(
        route=Route.RATE, quantity=f"{quantity}: shrinks towards the limit", stated=None,
        derived=None, measured=to_json_value(gm.tolist()), metric="violation",
        discrepancy=rise, tolerance=MONOTONE_TOLERANCE, parameters=params, finite=fit.finite,
        comparisons={"monotone": rise},
        note="geometric mean over seeds at the kept points, far from the limit first")


def _as_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


# --- limits of sequences of estimates (a -> 0 laws from pairs of scales) -----------------

def geometric_tail(estimates: Sequence[float]) -> float:
    r"""Distance from the last of a sequence of estimates to its limit, if the differences
    shrink geometrically (Aitken): :math:`|c_2|\rho/(1-\rho)` with :math:`c_2` the last
    difference and :math:`\rho = |c_2/c_1|`; ``inf`` when the differences do not shrink."""
    if len(estimates) < 3:
        raise ValueError("estimates: need >= 3 values for a geometric tail")
    e1, e2, e3 = (float(x) for x in estimates[-3:])
    c1, c2 = e2 - e1, e3 - e2
    if c2 == 0:
        return 0.0
    rho = abs(c2 / c1) if c1 != 0 else math.inf
    return abs(c2) * rho / (1 - rho) if rho < 1 else math.inf


def equally_spaced(a: Sequence[float]) -> bool:
    """Whether the scales are equally spaced in log a (so successive differences of pair
    estimates are comparable), decreasing."""
    logs = [math.log(x) for x in a]
    steps = [y - x for x, y in pairwise(logs)]
    return all(s < 0 for s in steps) and max(steps) - min(steps) <= 1e-9 * abs(min(steps))


def pair_estimates(a: Sequence[float], T: Sequence[float], kind: str
                   ) -> tuple[list[float], list[float]]:
    r"""Per consecutive pair of scales: :math:`\Delta\log T/\Delta\log(1/a)` (``power``,
    ``bounded``) or :math:`\Delta T/\Delta\log(1/a)` (``log``), and the pair's
    :math:`\Delta\log(1/a)`."""
    ell = [math.log(1 / x) for x in a]
    out, spans = [], []
    for k in range(len(a) - 1):
        span = ell[k + 1] - ell[k]
        rise = T[k + 1] - T[k] if kind == "log" else math.log(T[k + 1] / T[k])
        out.append(rise / span)
        spans.append(span)
    return out, spans
