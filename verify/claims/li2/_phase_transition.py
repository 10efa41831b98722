r"""The network runs of Fig. 5's memorisation/generalisation phase transition: the author's
critical ratio line :data:`CODE_C` (:math:`p=2.7482\,\mathrm{corr}\ln M/M`,
:func:`code_line`), the ratio grid placed on it (:func:`ratio_grid`), the cached runs of each
group (:func:`phase_points`): the batched training over that grid, or the sequential design
that locates :math:`p^*` with far fewer runs (:func:`locate_threshold`, issue 28; its audit
against the whole grid, :func:`audit_grid`), and Fig. 5's run settings per fidelity
(:data:`FIG5_PARAMETERS`: panels, multipliers, training, design, third party; the paper's
groups :data:`PAPER_PANELS`, the part full fidelity runs :data:`FULL_PANELS`).

Used by ``li2.fig5`` (Fig. 5) and ``li2.thm4`` (Thm. 4: its network route reuses Fig. 5's cyclic
panel and its figures the code's line).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from numerics.li2.grok_run import grok_run_point
from numerics.li2.phase_boundary import group_table, phase_sweep_point, seed_thresholds
from verify import Run, design

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
                 multipliers: Sequence[float], design_spec: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """One point per group (name -> max d_k), in the form of
    :func:`~numerics.li2.phase_boundary.phase_point`'s result (ratios ``p_values``, per ratio
    and seed ``best_test_acc``, ``final_train_acc``, ``epoch_grokked``; ``grok_fraction``,
    ``p_star``, ``p_star_status``, ``seed_thresholds`` for the seeds ``threshold_seeds``),
    by the design ``design_spec`` names (default: the fidelity's in :data:`FIG5_PARAMETERS`):

    * ``grid``: :func:`phase_point` over the whole ratio grid, every seed its full budget,
      one point per group through the run's sweeper;
    * ``bisection``: :func:`locate_threshold` (the sequential design), the point then also
      holding ``design`` (rule, plan, bracket, probes, the work against the grid).

    Both go through the run's sweeper (under ``check``: each finished point or run stored,
    so a killed run resumes) under the sweep name ``li2.fig5`` whichever claim asks, and are
    memoised (per group, or per panel for the grid) for every claim in the process
    (``scope="process"``: the points hold all the training depends on), so the control and
    ``li2.thm4`` reuse the runs."""
    spec = dict(design_spec if design_spec is not None
                else FIG5_PARAMETERS[run.fidelity]["design"])
    device = str(run.device)
    if spec["kind"] == "bisection":
        return [run.memo("li2.fig5 located threshold", lambda n=name, d=max_dk: locate_threshold(
            run.sweeper, n, d, training, spec, multipliers, device), scope="process",
            key=json.dumps([name, max_dk, dict(training), spec, list(multipliers), device],
                           sort_keys=True, default=list)) for name, max_dk in groups.items()]
    if spec["kind"] != "grid":
        raise ValueError(f"design: {spec['kind']!r} is not one of grid, bisection")
    points = []
    for name, max_dk in groups.items():
        M = int(group_table(name).shape[0])
        points.append({"group": name, "p_values": ratio_grid(M, max_dk, multipliers),
                       "seeds": list(training["seeds"]), "epochs": training["epochs"],
                       "K": training["K"], "lr": training["lr"], "eta": training["eta"],
                       "loss": training["loss"], "activation": training["activation"],
                       "eval_every": training["eval_every"], "device": device,
                       "dtype": training["dtype"]})

    def sweep() -> list[dict[str, Any]]:
        results = run.sweeper(phase_sweep_point, points, name="li2.fig5", batch_size=1)
        return [{**r, "threshold_seeds": r["seeds"]} for r in results]

    return run.memo("li2.fig5 phase points", sweep, key=str(points), scope="process")


# --- the sequential design -----------------------------------------------------------------------

def early_rule(rule: Mapping[str, Any], eval_every: int) -> design.HeldAbove:
    """The per-run rule of :func:`numerics.li2.grok_run.grok_run` as a :mod:`verify.design`
    rule over the evaluations (one per ``eval_every`` epochs): test accuracy at or above the
    threshold held for ``hold`` evaluations means grokked; with ``give_up_epoch``, no
    evaluation up to that epoch at ``give_up_level`` means not grokked."""
    give_up = (None if rule.get("give_up_epoch") is None else
               design.GiveUp(rule["give_up_epoch"] // eval_every, rule["give_up_level"]))
    return design.HeldAbove("test_acc", rule["threshold"], rule["hold"], give_up)


def run_points(group: str, ratio: float, seeds: Sequence[int], training: Mapping[str, Any],
               rule: Mapping[str, Any], device: str) -> list[dict[str, Any]]:
    """The :func:`~numerics.li2.grok_run.grok_run_point` points of ``seeds`` at one ratio."""
    return [{"group": group, "p": round(float(ratio), 6), "seed": int(s),
             "epochs": training["epochs"], "K": training["K"], "lr": training["lr"],
             "eta": training["eta"], "loss": training["loss"],
             "activation": training["activation"], "eval_every": training["eval_every"],
             "dtype": training["dtype"], "device": device, **rule} for s in seeds]


def _replayed(runs: Sequence[Mapping[str, Any]], rule: design.HeldAbove) -> int:
    """How many runs stopped elsewhere than where :func:`verify.design.decide` decides on
    their recorded test accuracies (0: the point function applies the stated rule)."""
    wrong = 0
    for r in runs:
        d = design.decide(rule, r["test_acc"])
        stopped_there = (d.known_at == len(r["test_acc"]) - 1 if d.decided
                         else r["epochs_trained"] == r["epochs"])
        wrong += not (d.outcome == r["outcome"] and d.at == r["decided_at"] and stopped_there)
    return wrong


def locate_threshold(sweeper: Callable[..., list[dict[str, Any]]], group: str, max_dk: int,
                     training: Mapping[str, Any], spec: Mapping[str, Any],
                     multipliers: Sequence[float], device: str = "cpu") -> dict[str, Any]:
    r"""Fig. 5's :math:`p^*` of one group by the sequential design (:mod:`verify.design`).

    * **Bisection** in :math:`\log p` over ``spec["range"]`` (multiples of
      :func:`code_line`, the upper end clipped at 0.95) to the ratio ``spec["resolution"]``
      (:func:`verify.design.bisect_threshold`): the statement at a ratio is "at least half
      the seeds grok", which rises with :math:`p` (a seed's training sets are nested in
      :math:`p`). With both ends evaluated and :math:`r` the resolution, it takes
      :math:`2+\lceil\log_2(\log(\mathrm{hi}/\mathrm{lo})/\log r)\rceil` ratios.
    * **Sequential seeds** at each ratio (:func:`verify.design.sequential_proportion`,
      ``spec["plan"]``: batches of seeds, Bonferroni over the planned looks, the cap the
      paper's seeds): the statement is decided as soon as the interval excludes 1/2. Where
      the cap leaves it undecided the ratio is read as the full grid reads every ratio, by
      the share of the cap's seeds that grok (``>= 1/2``), and the probe says so.
    * **Early decision per run** (``spec["rule"]``, :func:`early_rule`): each run stops
      once the rule decides; the point function applies it, and every returned run is
      replayed through :func:`verify.design.decide` (``replay_mismatches`` counts the runs
      that stopped elsewhere).

    ``sweeper(fn, points, name=..., batch_size=...)`` runs the points (the run's sweeper: one
    stored point per finished run, so a killed search replays its finished runs from the
    store and computes only the rest). ``multipliers``: the full grid's, for the work saved.
    Returns the group's point (see :func:`phase_points`)."""
    M = int(group_table(group).shape[0])
    line = code_line(M, max_dk)
    rule_args = dict(spec["rule"])
    rule = early_rule(rule_args, training["eval_every"])
    plan = design.SequentialPlan(**spec["plan"])
    seeds = list(training["seeds"])
    if plan.cap > len(seeds):
        raise ValueError(f"design: a cap of {plan.cap} seeds needs as many training seeds, "
                         f"got {len(seeds)}")
    probes: dict[float, dict[str, Any]] = {}

    def outcome(ratio: float) -> bool:
        runs: list[dict[str, Any]] = []

        def draw(look: int, size: int) -> list[bool]:
            first = look * plan.batch
            batch = sweeper(grok_run_point, run_points(group, ratio, seeds[first:first + size],
                                                       training, rule_args, device),
                            name="li2.fig5", batch_size=1)
            runs.extend(batch)
            return [r["outcome"] == "reached" for r in batch]

        result = design.sequential_proportion(plan, draw, 0.5, ">=")
        holds = result.decision == "holds" if result.decided else result.estimate >= 0.5
        probes[ratio] = {"ratio": ratio, "multiplier": ratio / line,
                         "sequential": result.as_record(), "read_at_cap": not result.decided,
                         "holds": holds, "runs": runs}
        return holds

    lo, hi = (m * line for m in spec["range"])
    bracket = design.bisect_threshold(outcome, lo, min(hi, 0.95), spec["resolution"], log=True)
    return _located_point(group, M, line, training, spec, len(multipliers), rule, plan, bracket,
                          [probes[x] for x in sorted(probes)])


def _located_point(group: str, M: int, line: float, training: Mapping[str, Any],
                   spec: Mapping[str, Any], grid_size: int, rule: design.HeldAbove,
                   plan: design.SequentialPlan,
                   bracket: design.Bracket, probes: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`locate_threshold`'s result in :func:`phase_points`' form."""
    ratios = [pr["ratio"] for pr in probes]
    rows = {key: [[r[key] for r in pr["runs"]] for pr in probes]
            for key in ("best_test_acc", "final_train_acc", "epoch_grokked", "seed")}
    success = {pr["ratio"]: {r["seed"]: r["outcome"] == "reached" for r in pr["runs"]}
               for pr in probes}
    # per-seed thresholds need a seed's outcome at every probed ratio: the first look's
    # seeds at least
    common = sorted(set.intersection(*(set(s) for s in success.values())))
    per_seed = seed_thresholds(ratios, [[success[x][s] for s in common] for x in ratios])
    if bracket.status == "resolved":
        p_star, status = math.sqrt(bracket.lo * bracket.hi), "bracketed"
    else:
        p_star = None
        status = ("below grid" if probes[0]["holds"] else "above grid"
                  if not probes[-1]["holds"] else bracket.status)
    runs = [r for pr in probes for r in pr["runs"]]
    evals_per_run = training["epochs"] // training["eval_every"] + 1
    grid_runs = grid_size * plan.cap
    return {
        "group": group, "M": M, "p_values": ratios, "seeds": rows.pop("seed"),
        "epochs": training["epochs"], **rows,
        "grok_fraction": [sum(success[x].values()) / len(success[x]) for x in ratios],
        "p_star": p_star, "p_star_status": status, "threshold_seeds": common,
        "seed_thresholds": [t for t, _ in per_seed],
        "seconds": sum(r["seconds"] for r in runs),
        "replay_mismatches": _replayed(runs, rule),
        "design": {
            "rule": rule.as_record(), "plan": plan.as_record(), "bracket": bracket.as_record(),
            "range (multiples of the code line)": list(spec["range"]), "code line": line,
            "probes": [{k: v for k, v in pr.items() if k != "runs"} for pr in probes],
            "runs": len(runs), "epochs trained": sum(r["epochs_trained"] for r in runs),
            "evaluations read": sum(len(r["test_acc"]) for r in runs),
            "given up": sum(r["outcome"] == "not reached" for r in runs),
            "full grid": {"ratios": grid_size, "runs": grid_runs,
                          "epochs": grid_runs * training["epochs"],
                          "evaluations": grid_runs * evals_per_run},
            "ratios saved against the grid": design.evaluations_saved(bracket, grid_size)},
    }


def audit_grid(sweeper: Callable[..., list[dict[str, Any]]], group: str, max_dk: int,
               training: Mapping[str, Any], spec: Mapping[str, Any],
               multipliers: Sequence[float], device: str = "cpu") -> dict[str, Any]:
    """The full grid of one group run with the design's early rule *without* its give-up
    (every run trains until it reaches the threshold or its budget ends, so each run's
    outcome is the full budget's: the grid reads "reaches 0.99 at some evaluated epoch"),
    every seed at every ratio. It gives the grid's bracket (:func:`verify.design.
    full_grid_threshold` on the 20-seed shares, to set beside the bisection's) and the
    give-up rule's disagreement with the full budget (:func:`verify.design.
    disagreement_rate` on these trajectories)."""
    M = int(group_table(group).shape[0])
    ratios = ratio_grid(M, max_dk, multipliers)
    rule_args = {**spec["rule"], "give_up_epoch": None}
    seeds = list(training["seeds"])[:spec["plan"]["cap"]]
    points = [pt for x in ratios for pt in run_points(group, x, seeds, training, rule_args,
                                                       device)]
    runs = sweeper(grok_run_point, points, name="li2.fig5", batch_size=1)
    shares = [sum(r["outcome"] == "reached" for r in runs if r["p"] == round(x, 6)) / len(seeds)
              for x in ratios]
    grid_bracket = design.full_grid_threshold([(x, s >= 0.5) for x, s in zip(ratios, shares)],
                                              log=True)
    give_up = early_rule(spec["rule"], training["eval_every"])
    threshold = spec["rule"]["threshold"]
    disagreement = design.disagreement_rate(give_up, [r["test_acc"] for r in runs],
                                            lambda v: max(v) >= threshold)
    return {"group": group, "M": M, "ratios": ratios, "shares": shares,
            "bracket": grid_bracket.as_record(), "disagreement": disagreement.as_record(),
            "runs": len(runs), "epochs trained": sum(r["epochs_trained"] for r in runs),
            "seconds": sum(r["seconds"] for r in runs)}


#: Fig. 5's groups (SOURCES §5), name -> max d_k, by panel.
PAPER_PANELS = {"cyclic": {"Z23": 1, "Z41": 1, "Z71": 1, "Z127": 1},
                "composite": {"Z24": 1, "Z60": 1, "Z100": 1},
                "product": {"Z4xZ7": 1, "Z5xZ6": 1, "Z2xZ2xZ9": 1, "Z13xZ11": 1,
                            "Z5xZ2xZ2xZ2": 1, "Z6xZ4xZ2": 1, "Z3xZ2xZ17": 1,
                            "Z2xZ3xZ3xZ5": 1},
                "non-abelian": {"D7": 2, "D15": 2, "D30": 2, "D63": 2}}

#: The largest part of Fig. 5 that li2.fig5's design fits in 3 hours on 2 cores
#: (benchmarks/fig5_design_cost.py): the whole cyclic panel, on which the trend items are
#: decided, and the other panels up to M = 71; Z100, Z2xZ3xZ3xZ5, Z3xZ2xZ17, Z13xZ11 and
#: D63 (M = 90..143) would add about 4.5 h.
FULL_PANELS = {"cyclic": PAPER_PANELS["cyclic"],
               "composite": {"Z24": 1, "Z60": 1},
               "product": {"Z4xZ7": 1, "Z5xZ6": 1, "Z2xZ2xZ9": 1, "Z5xZ2xZ2xZ2": 1,
                           "Z6xZ4xZ2": 1},
               "non-abelian": {"D7": 2, "D15": 2, "D30": 2}}

#: li2.fig5's sequential design at full fidelity (locate_threshold; the cost model and the
#: measured trajectories behind these choices are in li2.fig5's docstring). The range is the
#: grid's; 1.1 is about the grid's spacing at the transition (1.0 -> 1.12 of the line).
#: Batches of 7: the first look decides when all 7 seeds agree (Wilson at 1 - 0.05/3 excludes
#: 1/2 at 0/7 and 7/7); 3 looks reach the paper's 20 seeds. 'Reaches 0.99 at some evaluated
#: epoch' is the grid's reading, so hold = 1 decides it exactly. The give-up is the one guess:
#: measured at the paper's setting, every seed that grokked had passed test accuracy 0.2 by
#: epoch 1200 (Z23) and 1340 (Z41), 0.5 by 1440 and 1770 (benchmarks/fig5_design_cost.py);
#: it is audited on Z23's whole grid (audit_grid).
FULL_DESIGN = {"kind": "bisection", "range": (0.5, 2.0), "resolution": 1.1,
               "plan": {"batch": 7, "cap": 20, "alpha": 0.05},
               "rule": {"threshold": 0.99, "hold": 1, "give_up_epoch": 2000,
                        "give_up_level": 0.2},
               "audit": ("Z23",)}

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
        # seconds for the whole grid: nothing to save
        "design": {"kind": "grid"},
        "third_party": None,
    },
    "full": {
        "panels": FULL_PANELS,
        "multipliers": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.12, 1.25, 1.4, 1.6, 1.8, 2.0),
        "training": {"K": 2048, "lr": 5e-4, "eta": 2e-4, "epochs": 3000,
                     "seeds": tuple(range(20)), **_COMMON},
        "design": FULL_DESIGN,
        "third_party": {"K": 2048, "lr": 1e-3, "eta": 2e-4, "epochs": 400,
                        "seeds": (0, 1, 2, 3, 4), "eval_every": 1, "dtype": "float32"},
    },
}
