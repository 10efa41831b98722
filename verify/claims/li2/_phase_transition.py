r"""The network runs of Fig. 5's memorisation/generalisation phase transition: the author's
critical ratio line :data:`CODE_C` (:math:`p=2.7482\,\mathrm{corr}\ln M/M`,
:func:`code_line`), the ratio grid placed on it (:func:`ratio_grid`), the cached batched
training over that grid (:func:`phase_points`), and Fig. 5's run settings per fidelity
(:data:`FIG5_PARAMETERS`: panels, multipliers, training, third party).

Used by ``li2.fig5`` (Fig. 5) and ``li2.thm4`` (Thm. 4: its network route reuses Fig. 5's cyclic
panel and its figures the code's line).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from numerics.li2.phase_boundary import group_table, phase_sweep_point
from verify import Run

#: The code's critical_ratio_multiplier (verify/claims/li2/SOURCES.md §6.1): p = 2.7482 ln M / M.
CODE_C = 2.7482


def code_line(M: int, max_dk: int) -> float:
    """The author's critical ratio 2.7482 corr ln M / M, corr = max d_k / 2 for non-abelian
    collections (SOURCES §6.1), 1 otherwise."""
    return CODE_C * (max_dk / 2 if max_dk > 1 else 1.0) * math.log(M) / M


def ratio_grid(M: int, max_dk: int, multipliers: Sequence[float]) -> list[float]:
    """Multiples of :func:`code_line`, kept inside (0, 0.95] and increasing."""
    grid = sorted({round(min(0.95, m * code_line(M, max_dk)), 4) for m in multipliers})
    if len(grid) < 2:
        raise ValueError(f"multipliers: {multipliers} give fewer than 2 ratios below 0.95")
    return grid


def phase_points(run: Run, groups: Mapping[str, int], training: Mapping[str, Any],
                 multipliers: Sequence[float]) -> list[dict[str, Any]]:
    """:func:`phase_point` for each group (name -> max d_k), one point per group through the
    run's sweeper (under ``check``: on a Dask cluster with ``$THEORY_VERIFY_SWEEP_BACKEND=dask``,
    each finished group streamed into the results store), under the one sweep name
    ``li2.fig5`` whichever claim asks, so that the stored points serve both.
    Memoised per panel for every claim in the process (``scope="process"``: the points hold
    all the training depends on, no stated form enters), so the control and ``li2.thm4``
    reuse the runs."""
    points = []
    for name, max_dk in groups.items():
        M = int(group_table(name).shape[0])
        points.append({"group": name, "p_values": ratio_grid(M, max_dk, multipliers),
                       "seeds": list(training["seeds"]), "epochs": training["epochs"],
                       "K": training["K"], "lr": training["lr"], "eta": training["eta"],
                       "loss": training["loss"], "activation": training["activation"],
                       "eval_every": training["eval_every"], "device": str(run.device),
                       "dtype": training["dtype"]})

    def sweep() -> list[dict[str, Any]]:
        return run.sweeper(phase_sweep_point, points, name="li2.fig5", batch_size=1)

    return run.memo("li2.fig5 phase points", sweep, key=str(points), scope="process")


_COMMON = {"loss": "mse_class", "activation": "x2", "eval_every": 10, "dtype": "float32"}

FIG5_PARAMETERS = {
    "quick": {
        "panels": {"cyclic": {"Z11": 1, "Z23": 1}, "product": {"Z4xZ4": 1},
                   "non-abelian": {"D7": 2}},
        # the grid's lower end only has to show the "0": at 0.7-0.826 no seed of any
        # group groks (best test accuracy <= 0.7), so 0.76 and 0.826 decide nothing that
        # 0.7 does not; the ratios around the transition (0.897-1.25) are all kept
        "multipliers": (0.7, 0.897, 0.975, 1.059, 1.151, 1.25),
        "training": {"K": 64, "lr": 0.02, "eta": 3e-3, "epochs": 400,
                     "seeds": (0, 1, 2, 3), **_COMMON},
        "third_party": None,
    },
    "full": {
        "panels": {"cyclic": {"Z23": 1, "Z41": 1, "Z71": 1, "Z127": 1},
                   "composite": {"Z24": 1, "Z60": 1, "Z100": 1},
                   "product": {"Z4xZ7": 1, "Z5xZ6": 1, "Z2xZ2xZ9": 1, "Z13xZ11": 1,
                               "Z5xZ2xZ2xZ2": 1, "Z6xZ4xZ2": 1, "Z3xZ2xZ17": 1,
                               "Z2xZ3xZ3xZ5": 1},
                   "non-abelian": {"D7": 2, "D15": 2, "D30": 2, "D63": 2}},
        "multipliers": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.12, 1.25, 1.4, 1.6, 1.8, 2.0),
        "training": {"K": 2048, "lr": 5e-4, "eta": 2e-4, "epochs": 3000,
                     "seeds": tuple(range(20)), **_COMMON},
        "third_party": {"K": 2048, "lr": 1e-3, "eta": 2e-4, "epochs": 400,
                        "seeds": (0, 1, 2, 3, 4), "eval_every": 1, "dtype": "float32"},
    },
}
