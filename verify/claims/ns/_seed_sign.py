"""The sign of a paired per-seed difference, decided by its Student-t interval over seeds:
what ``ns.x.fine-tuning`` and ``ns.x.reparam-adamw`` decide their directions by.

The stated (and, where there is one, the derived) sign holds when the whole interval lies on
its side of 0; it fails, by the interval's distance from 0, when the interval lies wholly on
the other side; an interval that contains 0 leaves the sign unresolved.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from verify import LEVEL, Evidence, Route, Tolerance, design, to_json_value

SIGN = Tolerance(0.0, "a sign: the whole 95% interval over seeds must lie on the stated side "
                      "of 0 (one that contains 0 is undecided)")


def seed_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean of ``values`` (one per seed) and its Student-t interval at :data:`verify.LEVEL`
    (:func:`verify.design.t_interval`)."""
    lo, hi = design.t_interval(values.tolist(), LEVEL)
    return float(values.mean()), lo, hi


def sign_gap(sign: float, lo: float, hi: float) -> float | None:
    """0 when ``[lo, hi]`` lies on the side ``sign`` of 0, its distance from 0 when it lies
    wholly on the other side, None when it contains 0.

    >>> sign_gap(1.0, 0.2, 0.5), sign_gap(-1.0, 0.2, 0.5), sign_gap(1.0, -0.1, 0.3)
    (0.0, 0.2, None)
    """
    low, high = sorted((sign * lo, sign * hi))
    return 0.0 if low > 0 else (-high if high < 0 else None)


def sign_evidence(quantity: str, values: np.ndarray, *, stated: float | None,
                  derived: float | None = None,
                  parameters: Mapping[str, Any]) -> Evidence:
    """The sign of the mean of the paired per-seed ``values`` against the stated and the
    derived sign (each that is given), with the interval and the per-seed values."""
    mean, lo, hi = seed_interval(values)
    routes = {name: s for name, s in (("stated", stated), ("derived", derived)) if s is not None}
    gaps = {f"{name} sign vs the interval": sign_gap(s, lo, hi) for name, s in routes.items()}
    gap = None if any(g is None for g in gaps.values()) else max(gaps.values())
    why = (f"95% interval [{lo:.3g}, {hi:.3g}] over {values.size} seeds"
           + ("" if gap is not None else ": contains 0, the sign is not resolved"))
    return Evidence(route=Route.NUMERIC, quantity=quantity, stated=stated, derived=derived,
                    measured=to_json_value({"mean": mean, "interval": [lo, hi],
                                            "per_seed": values.tolist()}),
                    metric="sign", discrepancy=gap, tolerance=SIGN,
                    parameters=dict(parameters), finite=bool(np.isfinite(values).all()),
                    comparisons={} if gap is None else gaps, note=why)
