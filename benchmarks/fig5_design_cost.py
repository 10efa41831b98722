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
thread, which a loaded machine inflates far less than wall time) and interpolated linearly in
:math:`\log M` between them (small groups run at half the large ones' rate: the step's
fixed costs weigh more). Wall time on two cores is taken as half the one-thread CPU time: the
trainer's measured two-thread speed-up at Fig. 3's size is 2.0 (``benchmarks/results/trainer.json``,
44.1 ms CPU vs 22.1 ms wall per seed-epoch), and the sweep's Dask backend runs two
single-threaded workers side by side.

**Outcome model** (what the design's cost depends on, from measured runs): a seed groks at
ratio :math:`p` iff :math:`x = p/(c_s\ell(M)) > 1` and its grok epoch
:math:`a + b/(x-1)` is within the budget, :math:`\ell` the code's line and
:math:`\log c_s \sim N(\log c^\star, \sigma^2)` independently per seed; a seed that does not
grok but has :math:`x \ge 1/`\ ``--near`` passes test accuracy 0.5 and runs its whole budget,
one further below is given up at the rule's epoch. The defaults come from full-budget
trajectories at the paper's setting (``--trajectories``; Z23, 20 seeds at 0.8, 0.9, 0.95,
1.0, 1.12 times the line; Z41, 10 seeds at 0.9, 0.95, 1.0): on Z23 none groks at 0.95, 19 of
20 at 1.0 (epochs 1860-2770, median 2400), all at 1.12 (1290-1590, median 1350), so
:math:`c^\star = 0.975` and :math:`a = 1140`, :math:`b = 31.5` (the medians at :math:`x` =
1.026 and 1.149); on Z41 7 of 10 grok at 0.95 already, hence :math:`\sigma = 0.03` across
groups. Every non-grokking seed at 0.95 and 0.9 of Z41 and most at 0.9 of Z23 passed the
give-up level 0.2, none at 0.8 of Z23 (``--near`` 1.15). The GPU session's full grids of Z23,
Z41, Z71 (``benchmarks/results/gpu_h100/checks/li2.fig5.json``) agree: the share grokking goes
from 0 at 0.9 to 0.7-1 at 1.0 of the line.

The design is then *run*: :func:`locate_threshold` with a sweeper that returns runs drawn
from the outcome model instead of training, so the probes, looks and stops are the claim's
own; each returned run is charged :math:`C(M, n, E)` for the epochs it trained. The estimate
is the mean over ``--replicates`` draws of the seeds' thresholds, plus the audit's full grid
(:func:`audit_grid`) and the third party's 400-epoch runs, for full fidelity's groups and for
the paper's 19. The model is checked against the full-budget runs it was given
(``--trajectory-files`` / ``--trajectories``: their measured CPU time against the model's),
and the estimate is also given times the largest measured/modelled ratio.

Run: ``python benchmarks/fig5_design_cost.py`` (calibrates first: about a minute), or with
``--rates M R_STEP R_EVAL`` per calibrated group to skip the calibration.
"""
from __future__ import annotations

import argparse
import json
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
from verify import design
from verify.claims.li2._phase_transition import (
    FIG5_PARAMETERS,
    PAPER_PANELS,
    audit_grid,
    code_line,
    early_rule,
    locate_threshold,
)

FULL = FIG5_PARAMETERS["full"]
THREE_HOURS = 3 * 3600


def _n(M: int, p: float) -> int:
    return round(p * M * M)


Rates = Sequence[tuple[int, float, float]]


def rate_at(rates: Rates, M: int) -> tuple[float, float]:
    r"""The step and evaluation rates at order ``M``: linear in :math:`\log M` between the
    calibrated groups ``(M, R_step, R_eval)``, the end values outside them."""
    pts = sorted(rates)
    logs = [math.log(m) for m, _, _ in pts]
    return (float(np.interp(math.log(M), logs, [r for _, r, _ in pts])),
            float(np.interp(math.log(M), logs, [r for _, _, r in pts])))


def run_cost(M: int, p: float, epochs: int, rates: Rates, K: int = 2048,
             eval_every: int = 10) -> float:
    """:math:`C(M, n, E)`, one-thread CPU seconds (module docstring)."""
    n = _n(M, p)
    step, evaluation = rate_at(rates, M)
    return (epochs * 6 * n * K * M / step
            + (epochs // eval_every + 1) * 2 * (M * M - n) * K * M / evaluation)


def _cpu_per_call(group: str, p: float, epochs: int, eval_every: int, K: int) -> float:
    """Process CPU seconds of ``epochs`` steps of one configuration (after one untimed step:
    first-touch allocations)."""
    trainer = GroupTrainer(group_table(group), Hyper.batch(seed=0, p=p, eta=2e-4, lr=5e-4),
                           TrainConfig(K=K, eval_every=eval_every, diagnostics=()))
    trainer.train(1, record_last=False)
    start = time.process_time()
    trainer.train(epochs, record_last=False)
    return time.process_time() - start


def calibrate(groups: Sequence[str], epochs: int, K: int = 2048) -> dict[str, Any]:
    """Time ``epochs`` steps without evaluations and with one every epoch, at the code's line,
    one configuration, one thread: the rates per group."""
    rows = []
    for group in groups:
        M = int(group_table(group).shape[0])
        p = code_line(M, 1)
        step = _cpu_per_call(group, p, epochs, 10**9, K)
        both = _cpu_per_call(group, p, epochs, 1, K)
        n = _n(M, p)
        rows.append({"group": group, "M": M, "n": n, "step_s": step / epochs,
                     "eval_s": (both - step) / epochs,
                     "step_flops": 6 * n * K * M, "eval_flops": 2 * (M * M - n) * K * M})
        print(f"  {group}: n = {n}, {1e3 * step / epochs:.1f} ms per step, "
              f"{1e3 * (both - step) / epochs:.1f} ms per evaluation (one thread, CPU)",
              flush=True)
    rates = [(r["M"], r["step_flops"] / r["step_s"], r["eval_flops"] / r["eval_s"])
             for r in rows]
    return {"epochs": epochs, "groups": rows, "rates": rates}


def full_budget_runs(group: str, multipliers: Sequence[float], seeds: int,
                     epochs: int = 3000) -> dict[str, Any]:
    """Every (multiple of the code's line, seed) of ``group`` trained its whole budget at the
    paper's setting, in one batch: the test accuracy every 10 epochs."""
    M = int(group_table(group).shape[0])
    ratios = [round(m * code_line(M, 1), 4) for m in multipliers]
    trainer = GroupTrainer(group_table(group), Hyper.grid(p=ratios, seed=list(range(seeds)),
                                                          eta=[2e-4], lr=[5e-4]),
                           TrainConfig(K=2048, eval_every=10, diagnostics=()))
    start = time.process_time()
    history = trainer.train(epochs)
    eval_epochs, acc = history.series("test_acc")
    return {"group": group, "M": M, "p": ratios, "mults": list(multipliers), "seeds": seeds,
            "cpu": time.process_time() - start, "epochs": eval_epochs.tolist(),
            "test_acc": acc.T.tolist()}


def summarise_runs(runs: Mapping[str, Any], give_ups: Sequence[tuple[int, float]]
                   ) -> dict[str, Any]:
    """Per multiple of the line: how many seeds grok, when, when the grokking ones first
    passed 0.2 and 0.5; and each candidate give-up ``(epoch, level)``'s disagreement with the
    full budget over all the runs (:func:`verify.design.disagreement_rate`)."""
    epochs, S = runs["epochs"], runs["seeds"]

    def first(values: Sequence[float], level: float) -> int | None:
        return next((e for e, a in zip(epochs, values) if a >= level), None)

    per_ratio = {}
    for i, m in enumerate(runs["mults"]):
        rows = runs["test_acc"][i * S:(i + 1) * S]
        grokked = [r for r in rows if max(r) >= 0.99]
        per_ratio[str(m)] = {
            "grokked": f"{len(grokked)}/{S}",
            "grok epochs": sorted(first(r, 0.99) for r in grokked),
            "latest first >= 0.2 of those grokking": max((first(r, 0.2) for r in grokked),
                                                         default=None),
            "latest first >= 0.5 of those grokking": max((first(r, 0.5) for r in grokked),
                                                         default=None),
            "best test accuracy of the others": sorted(round(max(r), 3) for r in rows
                                                       if max(r) < 0.99)}
    rules = {}
    for epoch, level in give_ups:
        rule = early_rule({"threshold": 0.99, "hold": 1, "give_up_epoch": epoch,
                           "give_up_level": level}, 10)
        rules[f"give up at epoch {epoch} below {level}"] = design.disagreement_rate(
            rule, runs["test_acc"], lambda v: max(v) >= 0.99).as_record()
    return {"group": runs["group"], "M": runs["M"], "cpu_s": runs["cpu"],
            "per_multiplier": per_ratio, "give_up_disagreement": rules}


class ModelSweeper:
    """A sweeper that draws each run from the outcome model and charges its modelled cost."""

    def __init__(self, thresholds: Mapping[str, np.ndarray], line: Mapping[str, float],
                 model: argparse.Namespace, rates: Rates) -> None:
        self.thresholds, self.line, self.model, self.rates = thresholds, line, model, rates
        self.seconds = 0.0
        self.runs = 0

    def __call__(self, fn: Any, points: Sequence[Mapping[str, Any]], *, name: str,
                 batch_size: int) -> list[dict[str, Any]]:
        return [self._run(pt) for pt in points]

    def _run(self, pt: Mapping[str, Any]) -> dict[str, Any]:
        group, p, e, budget = pt["group"], pt["p"], pt["eval_every"], pt["epochs"]
        M = int(group_table(group).shape[0])
        x = p / (self.thresholds[group][pt["seed"]] * self.line[group])
        give_up = pt["give_up_epoch"]
        grok = (self.model.grok_a + self.model.grok_b / (x - 1)) if x > 1 else math.inf
        if grok <= budget:
            k = math.ceil(grok / e)
            acc, outcome, at = [0.0] * k + [1.0], "reached", k
        elif x * self.model.near >= 1 or give_up is None:
            # rises past the give-up level, never to the threshold: the whole budget
            acc, outcome, at = [0.6] * (budget // e + 1), "undecided", None
        else:
            k = give_up // e
            acc, outcome, at = [0.0] * (k + 1), "not reached", k
        # the point function reads an evaluation one chunk after it is made (grok_run)
        epochs = budget if outcome == "undecided" else min(budget, len(acc) * e)
        self.seconds += run_cost(M, p, epochs, self.rates, pt["K"], e)
        self.runs += 1
        return {"group": group, "M": M, "p": p, "seed": pt["seed"], "epochs": budget,
                "outcome": outcome, "decided_at": at, "epochs_trained": epochs,
                "test_acc": acc, "best_test_acc": max(acc), "final_train_acc": 1.0,
                "epoch_grokked": None if outcome != "reached" else at * e,
                "seconds": 0.0}


def design_cost(model: argparse.Namespace, rates: Rates, seed: int
                ) -> dict[str, Any]:
    """One draw of the seeds' thresholds; the design (and its audit) charged per group."""
    rng = np.random.default_rng(seed)
    groups = {g: d for panel in model.panels.values() for g, d in panel.items()}
    spec, training = model.design, FULL["training"]
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
                             "bracket": None}
    return out


def grid_cost(rates: Rates, panels: Mapping[str, Mapping[str, int]]
              ) -> dict[str, float]:
    """Every group's full grid, every run its full budget (the ``grid`` design)."""
    training = FULL["training"]
    out = {}
    for panel in panels.values():
        for g, d in panel.items():
            M = int(group_table(g).shape[0])
            out[g] = sum(run_cost(M, min(0.95, m * code_line(M, d)), training["epochs"], rates)
                         for m in FULL["multipliers"]) * len(training["seeds"])
    return out


def third_party_cost(rates: Rates) -> float:
    tp = FULL["third_party"]
    return sum(run_cost(41, p, tp["epochs"], rates, tp["K"], tp["eval_every"])
               for p in (0.1, 0.2, 0.3, 0.5)) * len(tp["seeds"])


def estimate(args: argparse.Namespace, rates: Rates, panels: Mapping[str, Mapping[str, int]],
             label: str) -> dict[str, Any]:
    """The design's and the grid's 2-core wall time over ``panels``, printed and returned."""
    args.panels = panels
    grid = grid_cost(rates, panels)
    draws = [design_cost(args, rates, s) for s in range(args.replicates)]
    rows = []
    for g in draws[0]:
        cpu = statistics.mean(d[g]["seconds"] for d in draws)
        rows.append([g, draws[0][g]["M"], statistics.mean(d[g]["probes"] for d in draws),
                     statistics.mean(d[g]["runs"] for d in draws), cpu / 2,
                     grid[g] / 2 if g in grid else "-"])
    tp = third_party_cost(rates) / 2
    design_wall = sum(r[4] for r in rows) + tp
    grid_wall = sum(grid.values()) / 2 + tp
    print(f"\n{label}: {len(grid)} groups")
    print(common.table(["group", "M", "ratios", "runs", "design wall s (2 cores)",
                        "grid wall s"], rows))
    print(f"third party (Z41, 400 epochs, 5 seeds x 4 ratios): {tp:.0f} s wall")
    print(f"design {design_wall:.0f} s ({design_wall / 3600:.2f} h) against the grid's "
          f"{grid_wall:.0f} s ({grid_wall / 86400:.2f} days) on 2 cores; budget {THREE_HOURS} s")
    total, fits = tp, []
    for r in sorted(rows, key=lambda r: r[4]):
        total += r[4]
        fits.append([r[0], r[1], round(total), total <= THREE_HOURS])
    return {"panels": panels, "rows": [dict(zip(["group", "M", "ratios", "runs",
                                                 "design_wall_s", "grid_wall_s"], r))
                                       for r in rows],
            "third_party_wall_s": tp, "design_wall_s": design_wall, "grid_wall_s": grid_wall,
            "cumulative_by_cost": fits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calibrate", nargs="*", default=None, metavar="GROUP",
                        help="measure the rates on these groups (default Z23 Z41 Z71 Z127)")
    parser.add_argument("--calibration-epochs", type=int, default=6)
    parser.add_argument("--rates", nargs=3, type=float, action="append",
                        metavar=("M", "R_STEP", "R_EVAL"),
                        help="flop/s of a step and an evaluation at order M, one thread "
                             "(repeat per group; skips calibrating)")
    parser.add_argument("--c-star", type=float, default=0.975,
                        help="median seed threshold, in multiples of the code's line")
    parser.add_argument("--sigma", type=float, default=0.03,
                        help="spread of log seed thresholds")
    parser.add_argument("--grok-a", type=float, default=1140.0,
                        help="grok epoch a + b / (x - 1) at x = p / (seed threshold) > 1")
    parser.add_argument("--grok-b", type=float, default=31.5)
    parser.add_argument("--near", type=float, default=1.15,
                        help="a seed within this factor below its threshold runs its budget")
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--give-up-epoch", type=int, default=None,
                        help="the rule's give-up epoch (default: full fidelity's)")
    parser.add_argument("--resolution", type=float, default=None,
                        help="the bisection's bracket ratio (default: full fidelity's)")
    parser.add_argument("--trajectories", nargs="*", default=(), metavar="GROUP:MULTS:SEEDS",
                        help="train full-budget runs, e.g. Z23:0.8,0.9,0.95,1.0,1.12:20 "
                             "(Z23 about 12 and Z41:0.9,0.95,1.0:10 about 9 CPU minutes)")
    parser.add_argument("--trajectory-files", nargs="*", type=Path, default=(),
                        help="full-budget runs saved by --save-trajectories, not retrained")
    parser.add_argument("--save-trajectories", type=Path, default=None, metavar="DIR")
    parser.add_argument("--out", type=Path, default=None,
                        help="the JSON record (default benchmarks/results/fig5_design_cost.json)")
    args = parser.parse_args()
    args.design = {**FULL["design"], "rule": {**FULL["design"]["rule"]}}
    if args.give_up_epoch is not None:
        args.design["rule"]["give_up_epoch"] = args.give_up_epoch
    if args.resolution is not None:
        args.design["resolution"] = args.resolution
    common.set_threads(1)
    record: dict[str, Any] = {"benchmark": "fig5_design_cost", "started": common.now(),
                              "machine": common.machine(), "model": {
                                  "c_star": args.c_star, "sigma": args.sigma,
                                  "grok_a": args.grok_a, "grok_b": args.grok_b,
                                  "near": args.near, "replicates": args.replicates},
                              "design": args.design}
    if args.rates is None:
        groups = args.calibrate or ["Z23", "Z41", "Z71", "Z127"]
        record["calibration"] = calibrate(groups, args.calibration_epochs)
        rates = record["calibration"]["rates"]
    else:
        rates = [(int(m), a, b) for m, a, b in args.rates]
    record["rates"] = [{"M": m, "step_flops_per_s": a, "eval_flops_per_s": b}
                       for m, a, b in rates]
    runs = [json.loads(p.read_text()) for p in args.trajectory_files]
    for spec in args.trajectories:
        group, mults, seeds = spec.split(":")
        runs.append(full_budget_runs(group, [float(m) for m in mults.split(",")], int(seeds)))
        if args.save_trajectories is not None:
            args.save_trajectories.mkdir(parents=True, exist_ok=True)
            (args.save_trajectories / f"{group}.json").write_text(json.dumps(runs[-1]))
    rule = args.design["rule"]
    record["trajectories"] = [summarise_runs(r, [(rule["give_up_epoch"], rule["give_up_level"]),
                                                (2000, 0.5), (1500, 0.2), (1000, 0.5)])
                              for r in runs]
    for r in record["trajectories"]:
        print(f"{r['group']}: {json.dumps(r['per_multiplier'])}")
        for name, d in r["give_up_disagreement"].items():
            print(f"  {name}: {d['count']} of {d['total']} runs disagree with the full budget")
        check = sum(run_cost(r["M"], p, 3000, rates) for p in next(
            t["p"] for t in runs if t["group"] == r["group"])) * next(
            t["seeds"] for t in runs if t["group"] == r["group"])
        r["modelled_cpu_s"] = check
        print(f"  modelled {check:.0f} s CPU against {r['cpu_s']:.0f} s measured")
    record["full fidelity"] = estimate(args, rates, FULL["panels"], "full fidelity")
    record["paper"] = estimate(args, rates, PAPER_PANELS, "the paper's groups")
    # the model against the measured full-budget jobs: the estimate carries its worst ratio
    factor = max([1.0] + [r["cpu_s"] / r["modelled_cpu_s"] for r in record["trajectories"]])
    record["correction"] = factor
    for key in ("full fidelity", "paper"):
        record[key]["design_wall_s_corrected"] = factor * record[key]["design_wall_s"]
        print(f"{key}: the design times {factor:.2f} (the model's largest shortfall on the "
              f"measured runs): {record[key]['design_wall_s_corrected']:.0f} s "
              f"({record[key]['design_wall_s_corrected'] / 3600:.2f} h)")
    record["finished"] = common.now()
    path = common.write("fig5_design_cost", record, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
