r"""The order of a quantity along a grid over replicates: :func:`replicate_trend` (an order
fitted per replicate on any grid, with a t-interval over replicates) and :func:`stated_order`
(the order a stated scale predicts on that grid).

Used by ``li2.thm4`` (Thm. 4) and ``li2.fig5`` (Fig. 5), which fit their thresholds against
:math:`\log M/M` with them.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from numerics.slopes import loglog_slope
from verify import LEVEL, TrendFit


def replicate_trend(sizes: Sequence[float], h: Sequence[float], values: Any,
                    level: float = LEVEL) -> TrendFit:
    r"""The order of ``values`` (replicates x grid points, positive) in ``h`` on any grid:
    each replicate's least-squares slope of :math:`\log v` on :math:`\log h`, their mean and a
    Student-t interval over replicates (the convention of :mod:`verify.error_trends`, whose
    :func:`~verify.error_trends.fit_trend` needs a geometric grid). ``h`` goes to 0 along the
    grid (``limit = "zero"``)."""
    v = np.asarray(values, dtype=np.float64)
    x = np.log(np.asarray(h, dtype=np.float64))
    if v.ndim != 2 or v.shape[1] != x.size or v.shape[0] < 2 or x.size < 2:
        raise ValueError(f"values: shape {v.shape} must be (>= 2 replicates, {x.size} points)")
    G = x.size
    finite = bool(np.all(np.isfinite(v)) and np.all(v > 0))
    if not finite:
        nan = (math.nan, math.nan)
        return TrendFit(np.asarray(sizes, float), np.exp(x), v, np.zeros_like(v),
                        np.ones(G, bool), np.full(v.shape[0], math.nan), math.nan, nan, level,
                        "zero")
    orders = np.array([loglog_slope(h, row) for row in v])
    mean = float(orders.mean())
    half = float(stats.t.ppf(0.5 + level / 2, df=orders.size - 1) * orders.std(ddof=1)
                 / math.sqrt(orders.size))
    return TrendFit(np.asarray(sizes, float), np.exp(x), v, np.zeros_like(v), np.ones(G, bool),
                    orders, mean, (mean - half, mean + half), level, "zero")


def stated_order(scale: Callable[[float], float], sizes: Sequence[float],
                 h: Sequence[float]) -> float:
    """Least-squares slope of log ``scale(size)`` on log ``h`` over the grid: the order a
    stated scale predicts, in the convention of :func:`replicate_trend`."""
    return loglog_slope(h, [float(scale(float(s))) for s in sizes])
