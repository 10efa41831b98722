"""A per-seed quantity against a level: the side of the level on which its Student-t interval
over seeds lies. Used by ``li2.sec7-predictions`` (the alignment of G_F early in training) and
``li2.thm7`` (the rank correlation of G_F's spectrum with the frequencies learned)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from verify import LEVEL, Evidence, Route, Tolerance, to_json_value, undecided


def seed_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and Student-t interval of ``values`` (one per seed); ``nan`` with fewer than two
    finite values."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return math.nan, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, df=v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    mean = float(v.mean())
    return mean, mean - half, mean + half


def side_evidence(quantity: str, values: Sequence[float], level_value: float, side: float,
                  tolerance: Tolerance, parameters: Mapping[str, Any]) -> Evidence:
    """Stated: the quantity lies above ``level_value`` (``side > 0``) or below it. Confirmed
    when the whole interval over seeds lies on the stated side, refuted (discrepancy: how far
    the interval lies beyond the level) when it lies on the other, undecided when it
    contains the level or fewer than two seeds have a value."""
    mean, lo, hi = seed_interval(values)
    s = 1.0 if side > 0 else -1.0
    detail = {**parameters, "per seed": [float(x) for x in values], "level": level_value}
    if not math.isfinite(mean):
        return undecided(Route.NUMERIC, quantity, "fewer than two seeds give a value",
                         tolerance=tolerance, parameters=detail)
    near, far = (lo, hi) if s > 0 else (hi, lo)
    if s * (near - level_value) > 0:
        gap = 0.0
    elif s * (far - level_value) < 0:
        gap = s * (level_value - far)
    else:
        return undecided(Route.NUMERIC, quantity, f"the 95% interval [{lo:.3f}, {hi:.3f}] "
                         f"contains the level {level_value:.3f}", tolerance=tolerance,
                         parameters=detail)
    return Evidence(
        route=Route.NUMERIC, quantity=quantity, stated=s, derived=None,
        measured=to_json_value({"mean": mean, "interval": [lo, hi]}), metric="sign",
        discrepancy=gap, tolerance=tolerance, parameters=detail, finite=True,
        comparisons={"interval on the stated side": gap},
        note=f"95% t-interval [{lo:.3f}, {hi:.3f}] over {len(values)} seeds against "
             f"{level_value:.3f}; discrepancy = how far it lies beyond on the wrong side")
