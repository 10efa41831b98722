r"""The CPU cost of li2.fig5 at the paper's size (19 groups, K = 2048, 20 seeds, 3000 epochs):
the full grid against the sequential design of :func:`verify.claims.li2._phase_transition.
locate_threshold` (issue 28).

**Cost model.** One run of the two-layer network (:mod:`numerics.li2.trainer`, float32, one
configuration) on a group of order :math:`M` with :math:`n = pM^2` training pairs costs, in
CPU seconds of one torch thread,

.. math:: C(M, n, E) = E\,\frac{6nKM}{R_{\rm step}}
          + \Big(\frac{E}{e}+1\Big)\frac{2(M^2-n)KM}{R_{\rm eval}},

for :math:`E` epochs with the test pairs evaluated every :math:`e` epochs: a step is bounded by
its three top-layer GEMMs (:math:`2nKM` flops each), an evaluation by the forward GEMM over
the :math:`M^2-n` test pairs. :math:`R_{\rm step}`, :math:`R_{\rm eval}` (flop/s) are
measured here on a few groups at the code's line (``--calibrate``; process CPU time with one
thread, which a loaded machine inflates far less than wall time) and are the medians over the
groups. Wall time on two cores is taken as half the one-thread CPU time: the trainer's
measured two-thread speed-up at Fig. 3's size is 2.0 (``benchmarks/results/trainer.json``,
44.1 ms CPU vs 22.1 ms wall per seed-epoch), and the sweep's Dask backend runs two
single-threaded workers side by side.

**Outcome model** (what the design's cost depends on, from measured runs): a seed groks at
ratio :math:`p` iff :math:`p \ge c_s\,\ell(M)`, :math:`\ell` the code's line and
:math:`\log c_s \sim N(\log c^\star, \sigma^2)` independently per seed; a seed that groks
does so at epoch ``--grok-epoch``; a seed below its threshold by less than the factor
``--near`` passes test accuracy 0.5 and runs its whole budget, one further below is given up
at the rule's epoch. :math:`c^\star`, :math:`\sigma`, the grok epoch and ``--near`` are
stated on the command line, their defaults from the runs recorded in ``--trajectories``
(full-budget runs at K = 2048) and the GPU session's full grids of Z23, Z41, Z71
(``benchmarks/results/gpu_h100/checks/li2.fig5.json``: :math:`p^\star/\ell` = 0.953, 0.950,
0.971, the share grokking going from 0 to 0.7-1 within one grid step).

The design is then *run*: :func:`locate_threshold` with a sweeper that returns runs drawn
from the outcome model instead of training, so the probes, looks and stops are the claim's
own; each returned run is charged :math:`C(M, n, E)` for the epochs it trained. The estimate
is the mean over ``--replicates`` draws of the seeds' thresholds, plus the audit's full grid
(:func:`audit_grid`) and the third party's 400-epoch runs.

Run: ``python benchmarks/fig5_design_cost.py --calibrate`` (about a minute of training), or
with ``--rates R_STEP R_EVAL`` to skip the calibration.
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import common
import numpy as np

from numerics.li2.phase_boundary import group_table
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.claims.li2._phase_transition import (
    FIG5_PARAMETERS,
    audit_grid,
    code_line,
    locate_threshold,
)

FULL = FIG5_PARAMETERS["full"]
THREE_HOURS = 3 * 3600


def _n(M: int, p: float) -> int:
    return round(p * M * M)


def run_cost(M: int, p: float, epochs: int, rates: tuple[float, float], K: int = 2048,
             eval_every: int = 10) -> float:
    """:math:`C(M, n, E)`, one-thread CPU seconds (module docstring)."""
    n = _n(M, p)
    return (epochs * 6 * n * K * M / rates[0]
            + (epochs // eval_every + 1) * 2 * (M * M - n) * K * M / rates[1])


def calibrate(groups: Sequence[str], epochs: int, K: int = 2048) -> dict[str, Any]:
    """Time ``epochs`` steps without evaluations and with one every epoch, at the code's line,
    one configuration, one thread; the rates are the medians over ``groups``."""
    rows = []
    for group in groups:
        M = int(group_table(group).shape[0])
        p = code_line(M, 1)

        def cpu(eval_every: int) -> float:
            trainer = GroupTrainer(group_table(group), Hyper.batch(seed=0, p=p, eta=2e-4,
                                                                   lr=5e-4),
                                   TrainConfig(K=K, eval_every=eval_every, diagnostics=()))
            trainer.train(1, record_last=False)      # first-touch allocations
            start = time.process_time()
            trainer.train(epochs, record_last=False)
            return time.process_time() - start

        step, both = cpu(10**9), cpu(1)
        n = _n(M, p)
        rows.append({"group": group, "M": M, "n": n, "step_s": step / epochs,
                     "eval_s": (both - step) / epochs,
                     "step_flops": 6 * n * K * M, "eval_flops": 2 * (M * M - n) * K * M})
        print(f"  {group}: n = {n}, {1e3 * step / epochs:.1f} ms per step, "
              f"{1e3 * (both - step) / epochs:.1f} ms per evaluation (one thread, CPU)",
              flush=True)
    rates = (statistics.median(r["step_flops"] / r["step_s"] for r in rows),
             statistics.median(r["eval_flops"] / max(r["eval_s"], 1e-9) for r in rows))
    return {"epochs": epochs, "groups": rows, "rates": rates}


class ModelSweeper:
    """A sweeper that draws each run from the outcome model and charges its modelled cost."""

    def __init__(self, thresholds: Mapping[str, np.ndarray], line: Mapping[str, float],
                 model: argparse.Namespace, rates: tuple[float, float]) -> None:
        self.thresholds, self.line, self.model, self.rates = thresholds, line, model, rates
        self.seconds = 0.0
        self.runs = 0

    def __call__(self, fn: Any, points: Sequence[Mapping[str, Any]], *, name: str,
                 batch_size: int) -> list[dict[str, Any]]:
        return [self._run(pt) for pt in points]

    def _run(self, pt: Mapping[str, Any]) -> dict[str, Any]:
        group, p, e, budget = pt["group"], pt["p"], pt["eval_every"], pt["epochs"]
        M = int(group_table(group).shape[0])
        threshold = self.thresholds[group][pt["seed"]] * self.line[group]
        give_up = pt["give_up_epoch"]
        if p >= threshold:
            k = self.model.grok_epoch // e
            acc, outcome, at = [0.0] * k + [1.0], "reached", k
        elif p * self.model.near >= threshold or give_up is None:
            acc, outcome, at = [0.6 if p * self.model.near >= threshold else 0.0] * (
                budget // e + 1), "undecided", None
        else:
            k = give_up // e
            acc, outcome, at = [0.0] * (k + 1), "not reached", k
        # the point function reads an evaluation one chunk after it is made (grok_run)
        epochs = budget if outcome == "undecided" else min(budget, (len(acc)) * e)
        self.seconds += run_cost(M, p, epochs, self.rates, pt["K"], e)
        self.runs += 1
        return {"group": group, "M": M, "p": p, "seed": pt["seed"], "epochs": budget,
                "outcome": outcome, "decided_at": at, "epochs_trained": epochs,
                "test_acc": acc, "best_test_acc": max(acc), "final_train_acc": 1.0,
                "epoch_grokked": None if outcome != "reached" else at * e,
                "seconds": 0.0}


def design_cost(model: argparse.Namespace, rates: tuple[float, float], seed: int
                ) -> dict[str, Any]:
    """One draw of the seeds' thresholds; the design (and its audit) charged per group."""
    rng = np.random.default_rng(seed)
    groups = {g: d for panel in FULL["panels"].values() for g, d in panel.items()}
    spec, training = FULL["design"], FULL["training"]
    seeds = len(training["seeds"])
    line = {g: code_line(int(group_table(g).shape[0]), d) for g, d in groups.items()}
    thresholds = {g: model.c_star * np.exp(model.sigma * rng.standard_normal(seeds))
                  for g in groups}
    out = {}
    for g, d in groups.items():
        sweeper = ModelSweeper(thresholds, line, model, rates)
        pt = locate_threshold(sweeper, g, d, training, spec, FULL["multipliers"])
        out[g] = {"M": pt["M"], "seconds": sweeper.seconds, "runs": sweeper.runs,
                  "probes": len(pt["p_values"]), "bracket": pt["design"]["bracket"]["width"]}
    for g in spec.get("audit", ()):
        sweeper = ModelSweeper(thresholds, line, model, rates)
        audit_grid(sweeper, g, groups[g], training, spec, FULL["multipliers"])
        out[f"audit {g}"] = {"M": out[g]["M"], "seconds": sweeper.seconds,
                             "runs": sweeper.runs, "probes": len(FULL["multipliers"]),
                             "bracket": math.nan}
    return out


def grid_cost(rates: tuple[float, float]) -> dict[str, float]:
    """Every group's full grid, every run its full budget (the ``grid`` design)."""
    training = FULL["training"]
    out = {}
    for panel in FULL["panels"].values():
        for g, d in panel.items():
            M = int(group_table(g).shape[0])
            out[g] = sum(run_cost(M, min(0.95, m * code_line(M, d)), training["epochs"], rates)
                         for m in FULL["multipliers"]) * len(training["seeds"])
    return out


def third_party_cost(rates: tuple[float, float]) -> float:
    tp = FULL["third_party"]
    return sum(run_cost(41, p, tp["epochs"], rates, tp["K"], tp["eval_every"])
               for p in (0.1, 0.2, 0.3, 0.5)) * len(tp["seeds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calibrate", nargs="*", default=None, metavar="GROUP",
                        help="measure the rates on these groups (default Z23 Z41 Z71 Z127)")
    parser.add_argument("--calibration-epochs", type=int, default=6)
    parser.add_argument("--rates", nargs=2, type=float, metavar=("R_STEP", "R_EVAL"),
                        help="flop/s of a step and an evaluation, one thread (skip calibrating)")
    parser.add_argument("--c-star", type=float, default=0.96,
                        help="median seed threshold, in multiples of the code's line")
    parser.add_argument("--sigma", type=float, default=0.04,
                        help="spread of log seed thresholds")
    parser.add_argument("--grok-epoch", type=int, default=600,
                        help="epoch at which a seed above its threshold first reaches 0.99")
    parser.add_argument("--near", type=float, default=1.1,
                        help="a seed within this factor below its threshold runs its budget")
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None,
                        help="the JSON record (default benchmarks/results/fig5_design_cost.json)")
    args = parser.parse_args()
    common.set_threads(1)
    record: dict[str, Any] = {"benchmark": "fig5_design_cost", "started": common.now(),
                              "machine": common.machine(), "model": {
                                  "c_star": args.c_star, "sigma": args.sigma,
                                  "grok_epoch": args.grok_epoch, "near": args.near,
                                  "replicates": args.replicates},
                              "design": FULL["design"]}
    if args.rates is None:
        groups = args.calibrate or ["Z23", "Z41", "Z71", "Z127"]
        record["calibration"] = calibrate(groups, args.calibration_epochs)
        rates = tuple(record["calibration"]["rates"])
    else:
        rates = tuple(args.rates)
    record["rates"] = {"step_flops_per_s": rates[0], "eval_flops_per_s": rates[1]}
    grid = grid_cost(rates)
    draws = [design_cost(args, rates, s) for s in range(args.replicates)]
    rows = []
    for g in draws[0]:
        cpu = statistics.mean(d[g]["seconds"] for d in draws)
        rows.append([g, draws[0][g]["M"], statistics.mean(d[g]["probes"] for d in draws),
                     statistics.mean(d[g]["runs"] for d in draws), cpu / 2,
                     grid.get(g, math.nan) / 2])
    tp = third_party_cost(rates)
    design_wall = sum(r[4] for r in rows) + tp / 2
    grid_wall = sum(grid.values()) / 2 + tp / 2
    print(common.table(["group", "M", "ratios", "runs", "design wall s (2 cores)",
                        "grid wall s"], rows))
    print(f"third party (Z41, 400 epochs, 5 seeds x 4 ratios): {tp / 2:.0f} s wall")
    print(f"li2.fig5 at the paper's size: design {design_wall:.0f} s "
          f"({design_wall / 3600:.2f} h) against the full grid's {grid_wall:.0f} s "
          f"({grid_wall / 86400:.2f} days) on 2 cores; budget {THREE_HOURS} s")
    by_cost = sorted(rows, key=lambda r: r[4])
    total, fits = tp / 2, []
    for r in by_cost:
        total += r[4]
        fits.append([r[0], r[1], round(total), total <= THREE_HOURS])
    record.update({"rows": [dict(zip(["group", "M", "ratios", "runs", "design_wall_s",
                                      "grid_wall_s"], r)) for r in rows],
                   "third_party_wall_s": tp / 2, "design_wall_s": design_wall,
                   "grid_wall_s": grid_wall, "cumulative_by_cost": fits,
                   "finished": common.now()})
    path = common.write("fig5_design_cost", record, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
