"""What the claims that compare two trainings seed by seed share (``li2.fig10-ridge-top``,
``li2.fig11-complex``, ``li2.fig14-zero-init``): the checks that their runs trained and started
below the thresholds, the paired ratio of two arms' grokking times with its figure row, and the
stated sign of such a ratio against its interval."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from numerics.li2.init_sweep_points import (
    BELOW_AT_START,
    PairedRatio,
    decide_direction,
    earliest_crossing,
    paired_log_ratio,
)
from numerics.li2.sweep_points import decode
from verify import LEVEL, Evidence, Route, Run, Tolerance, to_json_value
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained

SIGN = Tolerance(0.0, "a sign: the whole 95% interval over seeds must lie on the stated side "
                      "of 0 (one that contains 0 is undecided)")


def runs_usable(run: Run, results: Mapping[tuple[str, str], Mapping[str, Any]],
                groups: Sequence[str], arms: Sequence[str], what: str) -> bool:
    """Record, per group, that every run of its ``arms`` (``results[(group, arm)]``, records of
    :func:`numerics.li2.init_sweep_points.top_layer_grokking_point`'s shape) trained beyond
    chance (:mod:`verify.claims.li2._trained`), and that every run started below every
    threshold, so that its times have ratios; whether the claim can go on (``what`` names the
    arms in the record)."""
    for g in groups:
        runs = [results[(g, arm)] for arm in arms]
        record_trained(run, build_group(g).order,
                       torch.cat([decode(r["final_train"]) for r in runs]),
                       torch.cat([decode(r["final_loss"]) for r in runs]),
                       where=f"{g}: the end of every run ({what})",
                       name=f"the network trained beyond chance ({g})")
    start = earliest_crossing(list(results.values()))
    return run.ran(BELOW_AT_START, start > 0, f"earliest crossing of a threshold at epoch "
                   f"{start:g} (0: the test accuracy was there before any step)")


def times_of(record: Mapping[str, Any], i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The grokking times of a record at its ``i``-th threshold and whether each is censored."""
    g = record["times"][i]
    return decode(g["epochs"]), decode(g["censored"])


def paired_row(names: tuple[str, str], records: tuple[Mapping[str, Any], Mapping[str, Any]],
               i: int) -> tuple[PairedRatio, dict[str, Any]]:
    """:math:`t_a/t_b` paired by seed at threshold ``i`` for the arms ``names`` = (a, b)
    (:func:`numerics.li2.init_sweep_points.paired_log_ratio`) and its figure row: the geometric
    mean with its 95% interval, the median epochs, how many runs reached the threshold, and
    every run's epochs."""
    (a, b), ((t_a, c_a), (t_b, c_b)) = names, (times_of(records[0], i), times_of(records[1], i))
    pr = paired_log_ratio(t_a, c_a, t_b, c_b, LEVEL)
    R, (lo, hi) = pr.ratio
    return pr, {f"t_{a} / t_{b} (geometric mean)": R, "95% interval": [lo, hi],
                f"median epochs ({a}, {b})": [float(t_a.median()), float(t_b.median())],
                f"{a} runs that reached it": f"{int((~c_a).sum())} of {c_a.numel()}",
                f"{b} runs that reached it": f"{int((~c_b).sum())} of {c_b.numel()}",
                f"epochs {a}": t_a.tolist(), f"epochs {b}": t_b.tolist()}


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
