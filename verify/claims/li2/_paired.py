"""The sign of a paired training-time ratio against a stated direction: shared by the claims
that compare two trainings seed by seed (``li2.fig10-ridge-top``, ``li2.fig14-zero-init``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numerics.li2.init_sweep_points import PairedRatio, decide_direction
from verify import Evidence, Route, Tolerance, to_json_value

SIGN = Tolerance(0.0, "a sign: the whole 95% interval over seeds must lie on the stated side "
                      "of 0 (one that contains 0 is undecided)")


def direction_evidence(quantity: str, pr: PairedRatio, stated: float,
                       parameters: Mapping[str, Any], *,
                       no_direction: str = "the statement gives no direction here") -> Evidence:
    """The stated sign of ``pr``'s mean against its interval
    (:func:`numerics.li2.init_sweep_points.decide_direction`); a stated 0 is undecided, with
    ``no_direction`` as its note. An undecided item keeps the stated sign and the
    measurement, so a changed stated form still shows in it."""
    if stated == 0:
        ok, gap, why = None, None, no_direction
    else:
        ok, gap, why = decide_direction(pr, stated)
    return Evidence(route=Route.NUMERIC, quantity=quantity, stated=stated, derived=None,
                    measured=to_json_value(pr.as_record()), metric="sign",
                    discrepancy=None if ok is None else gap, tolerance=SIGN,
                    parameters=dict(parameters), finite=True,
                    comparisons={} if ok is None else {"interval beyond 0 on the wrong side": gap},
                    note=why)
