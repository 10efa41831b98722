r"""li2.fig14-zero-init: Figs. 14-17 (§3.2), a zero-initialised top layer :math:`V(0)=0`
groks faster than the default initialisation, "especially when data are scarce"
(verify/claims/li2/SOURCES.md §5; the expansion behind it is ``li2.sec3.2-zero-init``).

Routes: the paper's statement as two signs (stated); batched full-batch training of the
two-layer network (:class:`numerics.li2.trainer.GroupTrainer`, measured) at each training
fraction :math:`p` with ``top_init`` (the code's ``top_layer_init_multiplier``) 0 and the
regular value, on the same seeds (per seed the same first layer :math:`W(0)`, the same split and
the same direction of :math:`V(0)`: the two runs differ only in the scale of :math:`V(0)`).
Each configuration is one point of a sweep
(:func:`numerics.li2.init_sweep_points.top_layer_grokking_point`), its seeds on the batch axis,
trained until all its runs have grokked or the budget is spent; the grokking time :math:`t_a`
is the first logged epoch with test accuracy :math:`\ge a`, :math:`a\in\{0.5, 0.99\}`, as in
``li2.sec7-predictions``.

Evidence. Per :math:`p` and threshold, the speed-up :math:`R=t^{\rm regular}_a/t^{\rm zero}_a`,
paired by seed: the mean of :math:`\log R` over seeds with its 95% Student-t interval
(:func:`numerics.li2.init_sweep_points.paired_log_ratio`); "faster" is confirmed when the whole
interval lies above 0, refuted when below, undecided when it contains 0. "Especially with scarce
data": per threshold, each seed's least-squares slope of :math:`\log R` on :math:`\log p`, with
its interval over seeds; stated negative (the speed-up falls as data grow). Censored runs (no
grokking within the budget) enter with the budget, a one-sided bound, used only on the side it
bounds (:mod:`numerics.li2.init_sweep_points`). A logged time is the first logged epoch
at or past the crossing, so runs logged in different intervals are ordered as their crossings
are: a seed's sign is exact, its size known to a logging interval (every epoch at quick
fidelity, every 5 of hundreds at full). The absolute gap
:math:`t^{\rm regular}_a-t^{\rm zero}_a` (the other reading of a "gap", which longer runs
inflate) is reported per :math:`p`, not decided. Every run must have trained beyond chance
(:mod:`verify.claims.li2._trained`).

The multi-layer network of Fig. 17 (residual hidden layers, ReLU: "often 10x") is trained at
full fidelity only (``deep``; :class:`numerics.li2.deep_group_network.DeepGroupTrainer`): its
"faster" is decided the same way and its speed-up reported beside the paper's 10x; the quick
run covers the two-layer network only.

**Full fidelity: a sequential design, at the largest sizes that fit** (issue 28;
:mod:`verify.design`; the point function and the replay in
:mod:`verify.claims.li2._zero_init_design`). The earlier full run, Fig. 16's
:math:`\mathbb Z_{127}` alone at 5 fractions x 8 seeds x 6000 epochs and Fig. 17's net at
:math:`\mathbb Z_{127}`, :math:`K=2048`, was modelled at about 9.5 days on 2 cores
(``benchmarks/full_fidelity_costs.py``). Now:

* **sizes**: :math:`M` = 41 and 89 (Figs. 14, 15; Fig. 16's setting), each at 1.2 and 2 times
  the code's line :math:`2.7482\ln M/M`, so "scarce" and "plentiful" mean the same at each
  size; each size is its own network of items (faster at each fraction and threshold; the
  trend in :math:`p`), and the speed-up across the sizes is a figure and a plot.
  **Fig. 16's** :math:`M=127` **does not fit**: at :math:`p=0.15` (1.43 times the line) no
  zero-init run (2 seeds) reached test accuracy 0.5 within 2500 epochs (273 CPU-s, one
  thread), and an epoch of 5 seeds costs 239 and 335 CPU-ms at its two fractions, so budgets
  long enough to time it (5000 epochs at both) would cost about 11500 CPU-s (2.4 h of 2-core
  wall) with the cap's 10 seeds, beside the 2.1 h of the rest. It is one more ``sizes``
  entry; the trend across sizes is read up to 89;
* **early decision per run**: :class:`verify.design.HeldAbove` ``("test_acc", a, window=1)``
  is the claim's own :math:`t_a` (the first logged epoch at or above :math:`a`); a
  configuration's seeds stop at the chunk end after every run has reached 0.99. A first
  crossing is never revised, so the stop changes no recorded time (0 disagreements with the
  full budget, by construction), and every run is replayed through
  :func:`verify.design.decide` on its kept trajectory (a data assumption: a mismatch makes
  the verdict inconclusive);
* **budgets** per size and fraction: :math:`\mathbb Z_{41}` about twice the slowest regular
  run's :math:`t_{0.99}` (one thread, 4 seeds: regular 1285-1500 epochs at :math:`p=0.3`,
  340-380 at 0.5; zero 1135-1255 and 285-300); :math:`\mathbb Z_{89}` and the deep net what
  fits. A regular run censored at its budget bounds :math:`t^{\rm regular}/t^{\rm zero}`
  from below, the side "faster" needs (:func:`numerics.li2.init_sweep_points.decide_direction`),
  so a budget can leave an item undecided, never decide it wrongly;
* **sequential seeds**: batches of 5 up to 10 per network
  (:class:`verify.design.SequentialPlan`), until every item of the network is decided on one
  side or the other (a rule that reads no stated form, so the negative control stops where the
  check does); each look's Student-t interval at :math:`1-0.05/2` (Bonferroni over the 2
  planned looks), named in every item's tolerance. On the :math:`\mathbb Z_{41}` pilot one
  look decides every item (per-seed :math:`\log R` at :math:`t_{0.5}`: 0.15-0.26 at
  :math:`p=0.3`, 0.30-0.43 at 0.5);
* **Fig. 17**: one residual hidden layer, :math:`K=2048`, ReLU, :math:`\eta=10^{-4}` (its
  :math:`M` is not stated) at :math:`\mathbb Z_{23}`, :math:`p=0.8` (``li2.sec6-deep``'s
  Fig. 9 setting), one fraction: an epoch costs about 20 of the two-layer
  :math:`\mathbb Z_{41}`'s (668 against 26-38 CPU-ms per epoch of 5 seeds), and at
  :math:`\mathbb Z_{41}`, :math:`p=0.3` a zero-init run had not reached test accuracy 0.5 in
  600 epochs, so the paper's sizes and a trend in :math:`p` do not fit. Its "faster" is
  decided where its runs reach the thresholds within the budget (a zero-init run at
  :math:`\mathbb Z_{23}`, :math:`p=0.8` was at test accuracy 0.075 after 600 epochs, so it
  may stay undecided, which the verdict then says), and its speed-up set beside the paper's
  10x.

Modelled cost (``benchmarks/full_fidelity_costs.py --threads 1``, load 8.8-12.4 on 2 cores):
10137 CPU-s, 7603 s (2.11 h) of 2-core wall, with every seed of the cap at every budget, an
upper bound (the batches stop at their last grokking run, and one look decides where the
seeds agree); per network :math:`\mathbb Z_{41}` 459 CPU-s, :math:`\mathbb Z_{89}` 4323, the
deep net 5354 (CPU-ms per epoch of 5 seeds: 26 and 38; 107 and 146; 668). The same sizes with
10 seeds at the earlier 6000-epoch budget would cost about 23600 CPU-s; the earlier design
about 9.5 days. At :math:`\mathbb Z_{89}`, :math:`p=0.28`, a pilot (2 seeds, one thread, read
every 50 epochs) reached 0.5 by epochs 650-850 (zero) and 1100-1200 (regular), 0.99 by 900-1100
and 1400-1450, inside the budget of 3000;
at :math:`p=0.17` both inits were still below chance (test accuracy 0.002-0.003) at epochs
750-900, so its budget (6000) is the rest of the 3 hours.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from numerics.errors import Diverged
from numerics.li2.init_sweep_points import (
    BELOW_AT_START,
    PairedRatio,
    decide_direction,
    earliest_crossing,
    paired_log_ratio,
    slope_of_log_ratios,
)
from numerics.li2.sweep_points import decode
from numerics.li2.train_splits import train_count
from verify import (
    LEVEL,
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Plot,
    Reference,
    Run,
    Tolerance,
    design,
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._paired import SIGN, direction_evidence
from verify.claims.li2._trained import TRAINED, record_trained
from verify.claims.li2._zero_init_design import (
    early_rules,
    merge,
    replay_mismatches,
    zero_init_point,
)


def stated_zero_init_faster():
    r"""Figs. 14-17: zero init groks faster: :math:`\log(t^{\rm regular}/t^{\rm zero})>0`
    (+1)."""
    return 1.0


def stated_scarce_data_more():
    r"""Fig. 16, "especially when data are scarce": the speed-up falls as the training
    fraction grows, :math:`d\log(t^{\rm regular}/t^{\rm zero})/d\log p<0` (-1)."""
    return -1.0


# --- the runs -----------------------------------------------------------------------------------

def _sizes(p: Mapping[str, Any]) -> dict[str, tuple[float, ...]]:
    """The two-layer network's groups and their training fractions: ``sizes`` (full
    fidelity: Figs. 14-16's three groups), or the one ``group`` at ``p_values``."""
    if p.get("sizes"):
        return {v["group"]: tuple(v["p_values"]) for v in p["sizes"]}
    return {p["group"]: tuple(p["p_values"])}


def _budgets(p: Mapping[str, Any], cfg: Mapping[str, Any], fracs: tuple[float, ...]
             ) -> dict[float, int]:
    """Each fraction's epoch budget: the size's (or the deep network's) own, one per fraction,
    else the claim's ``budget``."""
    own = cfg.get("budget")
    if own is None:
        return {f: int(p["budget"]) for f in fracs}
    if len(own) != len(fracs):
        raise ValueError(f"budget: {list(own)} must give one budget per training fraction "
                         f"{list(fracs)}")
    return {f: int(b) for f, b in zip(fracs, own)}


def _units(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The networks the claim trains, one unit per (network, group): each is decided on its
    own seeds (its sequential design stops on its own items). ``label`` names it in the
    items: the network alone where there is one group (quick), else with the group."""
    sizes = _sizes(p)
    named = bool(p.get("sizes"))
    two = {"layers": 1, "K": p["K"], "activation": p["activation"], "lr": p["lr"],
           "eta": p["eta"]}
    units = [{"net": "two-layer", "group": g, "p_values": fr, "cfg": two,
              "budgets": _budgets(p, {v["group"]: v for v in p.get("sizes") or ()}.get(g, {}), fr),
              "label": f"two-layer, {g}" if named else "two-layer"}
             for g, fr in sizes.items()]
    if p["deep"]:
        deep = p["deep"]
        g = deep.get("group") or list(sizes)[-1]
        fr = tuple(deep["p_values"])
        units.append({"net": "deep", "group": g, "p_values": fr,
                      "cfg": {k: deep[k] for k in ("layers", "K", "activation", "lr", "eta")},
                      "budgets": _budgets(p, deep, fr),
                      "label": f"deep, {g}" if named else "deep"})
    return units


def _points(run: Run, unit: Mapping[str, Any], seeds: list[int]) -> list[dict[str, Any]]:
    """One sweep point per (training fraction, top init) of ``unit``, ``seeds`` on the batch
    axis."""
    p = run.params
    table = [list(row) for row in build_group(unit["group"]).table]
    # ridge_lambda: read only by a ridge top layer, none here
    return [{"table": table, "seeds": seeds, "optimizer": p["optimizer"], "loss": p["loss"],
             "top_layer": "trained", "ridge_lambda": 1e-3, "budget": unit["budgets"][frac],
             "chunk": p["chunk"], "eval_every": p["eval_every"],
             "thresholds": list(p["thresholds"]), "device": str(run.device),
             "dtype": p["dtype"], **unit["cfg"], "p": frac, "top_init": init,
             **({"trajectory": True} if p.get("design") else {})}
            for frac in unit["p_values"] for init in (p["regular_top_init"], 0.0)]


def _ratios(p: Mapping[str, Any], unit: Mapping[str, Any],
            records: Mapping[tuple[float, float], Any], level: float
            ) -> list[tuple[float, list[PairedRatio], PairedRatio | None]]:
    """Per threshold: the paired log speed-up at each training fraction, and its slope on
    log p (None with one fraction), at ``level``."""
    out = []
    for i, a in enumerate(p["thresholds"]):
        ratios = []
        for frac in unit["p_values"]:
            t_reg, c_reg = _times(records[(frac, p["regular_top_init"])], i)
            t_zero, c_zero = _times(records[(frac, 0.0)], i)
            ratios.append(paired_log_ratio(t_reg, c_reg, t_zero, c_zero, level))
        trend = (slope_of_log_ratios(unit["p_values"], ratios, level)
                 if len(unit["p_values"]) >= 2 else None)
        out.append((a, ratios, trend))
    return out


def _all_decided(p: Mapping[str, Any], unit: Mapping[str, Any],
                 records: Mapping[tuple[float, float], Any], level: float) -> bool:
    """Whether every item of ``unit`` is decided, on either side (the stopping rule of the
    sequential design: it reads no stated form, so the control stops where the check does)."""
    return all(decide_direction(pr, 1.0)[0] is not None
               for _, ratios, trend in _ratios(p, unit, records, level)
               for pr in ratios + ([trend] if trend is not None else []))


def _run_unit(run: Run, unit: Mapping[str, Any]) -> dict[str, Any]:
    """The unit's runs: every seed at once (no ``design``), or the sequential design of
    ``design["plan"]`` (:class:`verify.design.SequentialPlan`): seeds in batches, each
    batch's runs through ``run.sweep`` (stored, so a killed run resumes), until every item
    of the unit is decided at the plan's per-look level (Bonferroni over the planned looks)
    or the cap is reached. Returns the merged records per (p, top init), the level of the
    intervals and what the design did."""
    p = run.params
    seeds = list(p["seeds"])
    spec = p.get("design")
    if spec:
        plan = design.SequentialPlan(**spec["plan"])
        if plan.cap > len(seeds):
            raise ValueError(f"design: a cap of {plan.cap} seeds needs as many seeds, got "
                             f"{len(seeds)}")
        starts = [sum(plan.sizes[:i]) for i in range(plan.looks)]
        batches = [seeds[s:s + n] for s, n in zip(starts, plan.sizes)]
        level = plan.level_per_look
    else:
        plan, batches, level = None, [seeds], LEVEL
    keys = [(frac, init) for frac in unit["p_values"] for init in (p["regular_top_init"], 0.0)]
    parts: dict[tuple[float, float], list[dict[str, Any]]] = {k: [] for k in keys}
    looks = 0
    for batch in batches:
        results = run.sweep("training", zero_init_point, _points(run, unit, batch))
        looks += 1
        for k, r in zip(keys, results):
            if not r["finite"]:
                raise Diverged(f"training diverged ({unit['label']}, p={k[0]}, "
                               f"top_init={k[1]})")
            parts[k].append(r)
        records = {k: merge(v) for k, v in parts.items()}
        # a test accuracy at a threshold before any step leaves no time ratio: nothing more
        # seeds could decide (check() then records it and decides nothing)
        if plan is not None and (earliest_crossing(list(records.values())) <= 0
                                 or _all_decided(p, unit, records, level)):
            break
    used = sum(len(b) for b in batches[:looks])
    return {"records": records, "level": level, "plan": plan, "looks": looks, "seeds": used}


def _times(r: Mapping[str, Any], i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = r["times"][i]
    return decode(g["epochs"]), decode(g["censored"])


def _sign_tolerance(ran: Mapping[str, Any]) -> Tolerance:
    plan = ran["plan"]
    if plan is None:
        return SIGN
    return Tolerance(0.0, f"a sign: the whole interval over seeds must lie on the stated side of "
                          f"0 (one that contains 0 is undecided); seeds added in batches until "
                          f"every item of the network decides: {plan.reason('Student-t')}")


def _network(run: Run, unit: Mapping[str, Any], ran: Mapping[str, Any]) -> Iterator[Evidence]:
    p = run.params
    net, p_values, records, level = unit["label"], unit["p_values"], ran["records"], ran["level"]
    regular = p["regular_top_init"]
    faster, more = float(run.stated["zero_init_faster"]()), \
        float(run.stated["scarce_data_more"]())
    tolerance = _sign_tolerance(ran)
    shown = f"{level:.4g}" if ran["plan"] is not None else "95%"
    common = {"seeds": ran["seeds"], "level": level}
    if ran["plan"] is not None:
        common |= {"looks": ran["looks"], "plan": ran["plan"].as_record(),
                   "early stop": "; ".join(r.text for r in early_rules(p["thresholds"])),
                   "budgets": {f"p={f:g}": b for f, b in unit["budgets"].items()}}
    table: dict[str, Any] = {}
    M = build_group(unit["group"]).order
    for (a, ratios, trend), i in zip(_ratios(p, unit, records, level),
                                     range(len(p["thresholds"]))):
        for frac, pr in zip(p_values, ratios):
            t_reg, c_reg = _times(records[(frac, regular)], i)
            t_zero, c_zero = _times(records[(frac, 0.0)], i)
            R, (lo, hi) = pr.ratio
            table[f"p={frac:g}, t_{a:g}"] = {
                "speed-up t_regular / t_zero (geometric mean)": R, f"{shown} interval": [lo, hi],
                "median epochs (regular, zero)": [float(t_reg.median()),
                                                  float(t_zero.median())],
                "median gap t_regular - t_zero (epochs)": float((t_reg - t_zero).median()),
                "censored (regular, zero)": [int(c_reg.sum()), int(c_zero.sum())],
                "epochs regular": t_reg.tolist(), "epochs zero": t_zero.tolist()}
            ev = direction_evidence(
                f"{net}, p={frac:g}, t_{a:g}: zero init groks faster (sign of mean log "
                f"t_regular / t_zero over seeds)", pr, faster,
                {"p": frac, "threshold": a, "n": train_count(M, frac), "M": M,
                 "speed-up": R, "interval": [lo, hi], **common})
            yield dataclasses.replace(ev, tolerance=tolerance)
        if trend is not None:
            table[f"trend, t_{a:g}"] = {"slope of log speed-up on log p": trend.mean,
                                        f"{shown} interval": list(trend.interval)}
            ev = direction_evidence(
                f"{net}, t_{a:g}: the speed-up is larger with scarce data (sign of d log "
                f"(t_regular / t_zero) / d log p over p = {list(p_values)})", trend, more,
                {"p_values": list(p_values), "threshold": a, "M": M, "slope": trend.mean,
                 "interval": list(trend.interval), **common})
            yield dataclasses.replace(ev, tolerance=tolerance)
    if unit["net"] == "deep":
        table["the paper's speed-up (Fig. 17)"] = "often about 10x (100 against 1000 epochs)"
    if ran["plan"] is not None:
        table["design"] = {"seeds used": ran["seeds"], "looks": ran["looks"],
                           "plan": ran["plan"].reason("Student-t")}
    run.figure(f"{net}: speed-ups per p and threshold", table)
    if not run.is_control and len(p_values) >= 2:
        # the claim at a glance: the speed-up against the training fraction, with its
        # interval; "more so with scarce data" is a speed-up falling to the right
        x = list(p_values)
        series, styles = {}, {}
        for i, a in enumerate(p["thresholds"]):
            rows = [table[f"p={frac:g}, t_{a:g}"] for frac in p_values]
            series[f"t_{a:g}"] = (x, [r["speed-up t_regular / t_zero (geometric mean)"]
                                      for r in rows])
            series[f"t_{a:g}, lower end of the {shown} interval"] = (
                x, [r[f"{shown} interval"][0] for r in rows])
            series[f"t_{a:g}, upper end"] = (x, [r[f"{shown} interval"][1] for r in rows])
            styles.update({f"t_{a:g}": f"C{i}-",
                           f"t_{a:g}, lower end of the {shown} interval": f"C{i}:",
                           f"t_{a:g}, upper end": f"C{i}:"})
        run.plot(Plot(f"{net}: speed-up t_regular / t_zero of a zero-initialised top layer "
                      f"against the training fraction p (geometric mean over seeds; dotted: "
                      f"{shown} interval)", x_label="training fraction p",
                      y_label="speed-up", log_x=True, log_y=True, series=series,
                      styles=styles, references=(Reference("no speed-up", y=1.0),)))


def _design_checks(run: Run, units: list[dict[str, Any]], ran: list[dict[str, Any]]) -> None:
    """The full design's own record: every run stopped where :mod:`verify.design`'s rule
    decides (replayed on the kept trajectories), the epochs trained against every seed of
    the cap at its full budget, and the speed-up across the sizes."""
    p = run.params
    wrong = checked = trained = full = 0
    for unit, r in zip(units, ran):
        for (frac, _), rec in r["records"].items():
            budget = unit["budgets"][frac]
            w, c = replay_mismatches(rec, p["thresholds"], budget, p["chunk"])
            wrong, checked = wrong + w, checked + c
            trained += sum(int(b["trained"]) * decode(b["test_acc"]).shape[1]
                           for b in rec["batches"])
            full += budget * r["plan"].cap
    run.ran("each run stopped where verify.design's rule decides", wrong == 0,
            f"{wrong} of {checked} runs stopped or were timed elsewhere than "
            f"verify.design.decide on their recorded test accuracies")
    run.figure("design: the early decision per run and the sequential seeds", {
        "rule per threshold": [rule.text for rule in early_rules(p["thresholds"])],
        "stop": "a configuration's seeds stop at the end of the first chunk of "
                f"{p['chunk']} epochs at which every run has reached the highest threshold, "
                "or at the budget; a first crossing is never revised, so no recorded time "
                "differs from the full budget's",
        "plan": ran[0]["plan"].reason("Student-t") if ran else None,
        "seeds and looks per network": {u["label"]: [r["seeds"], r["looks"]]
                                        for u, r in zip(units, ran)},
        "seed-epochs trained": trained, "every seed of the cap at its full budget": full,
        "saved": 1 - trained / full if full else 0.0})
    two = [(build_group(u["group"]).order, u, r) for u, r in zip(units, ran)
           if u["net"] == "two-layer"]
    if len(two) >= 2 and not run.is_control:
        # the trend across sizes (issue 28: the measured quantity up to the largest size):
        # the speed-up at each size's scarcest and most plentiful fraction
        regular = p["regular_top_init"]
        x = [M for M, _, _ in two]
        series, rows = {}, {}
        for end, pick in (("scarcest p", 0), ("most plentiful p", -1)):
            for i, a in enumerate(p["thresholds"]):
                ys = []
                for M, u, r in two:
                    frac = u["p_values"][pick]
                    t_reg, c_reg = _times(r["records"][(frac, regular)], i)
                    t_zero, c_zero = _times(r["records"][(frac, 0.0)], i)
                    ys.append(paired_log_ratio(t_reg, c_reg, t_zero, c_zero, LEVEL).ratio[0])
                series[f"t_{a:g}, {end}"] = (x, ys)
                rows[f"t_{a:g}, {end}"] = dict(zip([f"M={M}" for M in x], ys))
        run.figure("speed-up across the sizes (geometric mean over seeds)", rows)
        run.plot(Plot("two-layer: speed-up t_regular / t_zero against the group order M, at "
                      "each size's scarcest and most plentiful training fraction (geometric "
                      "mean over seeds)", x_label="group order M", y_label="speed-up",
                      log_x=True, log_y=True, series=series,
                      references=(Reference("no speed-up", y=1.0),)))


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    units = _units(p)
    ran = [_run_unit(run, u) for u in units]
    for unit, r in zip(units, ran):
        runs = list(r["records"].values())
        M = build_group(unit["group"]).order
        record_trained(run, M, torch.cat([decode(x["final_train"]) for x in runs]),
                       torch.cat([decode(x["final_loss"]) for x in runs]),
                       where=f"{unit['label']}: the end of every run "
                             f"(p = {list(unit['p_values'])}, both inits)",
                       name=TRAINED if unit["label"] == "two-layer"
                       else f"{TRAINED} ({unit['label']})")
    records = [x for r in ran for x in r["records"].values()]
    censored = sum(int(decode(g["censored"]).sum()) for x in records for g in x["times"])
    budgets = {u["label"]: {f"p={f:g}": b for f, b in u["budgets"].items()} for u in units}
    run.figure("runs", {"budget (epochs)": budgets, "logging interval": p["eval_every"],
                        "censored (run, threshold) pairs": censored})
    if p.get("design"):
        _design_checks(run, units, ran)
    start = earliest_crossing(records)
    if not run.ran(BELOW_AT_START, start > 0, f"earliest crossing of a threshold at epoch "
                   f"{start:g} (0: the test accuracy was there before any step)"):
        return
    for unit, r in zip(units, ran):
        yield from _network(run, unit, r)


CLAIM = register(Claim(
    id="li2.fig14-zero-init",
    paper=PAPER,
    kind="experiment",
    title="Figs. 14-17: a zero-initialised top layer groks faster, more so with scarce data",
    source="§3.2 and Figs. 14-17; SOURCES §5, §6.2",
    statement=r"V(0)=0:\ t_{\rm grok}^{\rm zero}<t_{\rm grok}^{\rm regular},\ "
              r"\text{the gap largest when data are scarce (Fig. 16); often }10\times"
              r"\text{ with residual hidden layers (Fig. 17)}",
    reading=r"The author's two-layer network (\sigma(x)=x^2, the code's class-centred MSE, "
            r"Adam with coupled weight decay, default nn.Linear init, full batch) trained with "
            r"top\_layer\_init\_multiplier 0 and 1 on the same seeds (same W(0), split and "
            r"direction of V(0)). t_a = first logged epoch with test accuracy \ge a, a \in "
            r"\{0.5, 0.99\}. 'Faster': the mean over seeds of \log(t^{regular}_a/t^{zero}_a) "
            r"above 0 by its 95% Student-t interval, at every training fraction p. 'Especially "
            r"when data are scarce': the speed-up as a ratio (the paper's '10x' is a ratio) "
            r"falls as p grows, i.e. the per-seed slope of \log(t^{regular}/t^{zero}) on \log p "
            r"is negative by its interval; the absolute gap in epochs is reported, not decided. "
            r"Censored runs: the budget is a one-sided bound of their time. Fig. 17's residual "
            r"ReLU network only at full fidelity, decided for 'faster' with its speed-up "
            r"reported against the 10x. Quick: Z_11, K=128 (eta_paper = n eta/2 = 0.21-0.27, "
            r"the 0.2 of Fig. 3), p in {0.68, 0.9} (scarce: just above the code's line "
            r"2.7482 ln M/M = 0.60), 24 seeds. Full: Figs. 14-15's Z_41 and Z_89 (Fig. 16's "
            r"setting: K=1024, lr 0.005, eta 5e-5), each at 1.2 and 2 times the code's line, "
            r"decided per size; the speed-up across the sizes is a figure. Fig. 16's Z_127 does "
            r"not fit 3 hours on 2 cores (its zero-init runs had not reached test accuracy 0.5 "
            r"in 2500 epochs at 1.43 times the line), so the largest size run is 89 and the "
            r"trend across sizes is read up to it. Seeds by a sequential design "
            r"(verify.design): batches of 5 up to 10 until every item of the network decides, "
            r"each look's interval at 1 - 0.05/2 (Bonferroni over the looks); each run stops "
            r"at its first logged epoch at test accuracy 0.99 (its batch at the chunk end after "
            r"its last run), which changes no t_a. Fig. 17's net (one residual hidden layer, "
            r"K=2048, ReLU, eta 1e-4; its M not stated) at Z_23, p=0.8 only: the paper's sizes "
            r"and its trend in p do not fit.",
    parameters={
        "quick": {"group": "Z11", "K": 128, "seeds": tuple(range(24)),
                  "p_values": (0.68, 0.9), "lr": 5e-3, "eta": 5e-3, "regular_top_init": 1.0,
                  # chunk: how often a batch checks whether all its runs have grokked (the
                  # times are logged every eval_every epochs whatever the chunk); every epoch:
                  # the times are tens of epochs, and the trend reads their sizes
                  "budget": 1500, "chunk": 25, "eval_every": 1, "thresholds": (0.5, 0.99),
                  "optimizer": "adam", "activation": "x2", "loss": "mse_class",
                  # the author's code trains in float32; a grokking time is a statistic of
                  # the run, not a precision check
                  "dtype": "float32", "deep": None, "sizes": None, "design": None},
        "full": {
            # Figs. 14-15's sizes (SOURCES §5: M = 41, 89; Fig. 16's setting, which Figs. 14-15
            # share: K = 1024, Adam lr 0.005, eta 5e-5, x^2, MSE), each at a scarce and a
            # plentiful fraction: 1.2 and 2 times the code's critical line 2.7482 ln M / M
            # (0.249, 0.139), so "scarce" means the same at each size. Fig. 16's M = 127 does
            # not fit (see the module docstring): it is one more entry here. Budgets: Z41 about
            # twice the slowest regular run's t_0.99 (1285-1500 epochs at 0.3, 340-380 at 0.5;
            # 4 seeds); Z89 what fits in 3 hours beside the rest (its pilot runs were slower:
            # module docstring). A regular run
            # censored at its budget bounds t_regular / t_zero from below, the side "faster"
            # needs, so a budget can leave an item undecided but never decide it wrongly.
            "group": None, "p_values": None,
            "sizes": ({"group": "Z41", "p_values": (0.3, 0.5), "budget": (3000, 1000)},
                      {"group": "Z89", "p_values": (0.17, 0.28), "budget": (6000, 3000)}),
            "K": 1024, "seeds": tuple(range(10)), "lr": 5e-3, "eta": 5e-5,
            "regular_top_init": 1.0, "budget": 3000, "chunk": 50, "eval_every": 5,
            "thresholds": (0.5, 0.99), "optimizer": "adam", "activation": "x2",
            "loss": "mse_class", "dtype": "float32",
            # sequential seeds (verify.design): batches of 5 (SOURCES §2.5's >= 5 seeds at full
            # fidelity), at most 10; each look's Student-t interval at 1 - 0.05/2 (Bonferroni
            # over the 2 planned looks), so no item of a network is decided falsely with
            # probability over 0.05 whichever look decides it
            "design": {"plan": {"batch": 5, "cap": 10, "alpha": 0.05}},
            # Fig. 17: one residual hidden layer (other_layers = 1), K = 2048, ReLU, eta 1e-4
            # (SOURCES §5; its M is not stated): at Z23, p = 0.8 (li2.sec6-deep's Fig. 9
            # setting: a deep ReLU net needs more data than the two-layer x^2 one), one
            # fraction: an epoch costs about 20 of the two-layer Z41's, so the paper's sizes
            # and a trend in p do not fit; its "faster" is decided and its speed-up set
            # beside the paper's 10x
            # beside the paper's 10x. Budget: what fits (a zero-init run at Z23, p = 0.8 was at
            # test accuracy 0.075 after 600 epochs, one thread)
            "deep": {"group": "Z23", "layers": 2, "K": 2048, "activation": "relu",
                     "lr": 5e-3, "eta": 1e-4, "p_values": (0.8,), "budget": (2000,)}},
    },
    stated={"zero_init_faster": stated_zero_init_faster,
            "scarce_data_more": stated_scarce_data_more},
    equivalent_mutants={f"{form}:{op}": "a direction: only its sign enters the decision"
                        for form in ("zero_init_faster", "scarce_data_more")
                        for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("reversed: zero init groks slower, and the more so with more data",
                            {"zero_init_faster": lambda: -1.0,
                             "scarce_data_more": lambda: 1.0}),
    assumptions=(
        Assumption(">= 3 seeds", "a t-interval over paired seeds (SOURCES §2.5: >= 5 at full "
                   "fidelity)", lambda p: len(p["seeds"]) >= 3),
        Assumption("scarce against plentiful data", "at least two training fractions, so the "
                   "speed-up has a trend in p (at every size)",
                   lambda p: all(len(set(v)) >= 2 for v in _sizes(p).values())),
        Assumption("the default initialisation as the contrast", "regular top init = the "
                   "code's top_layer_init_multiplier 1 (nn.Linear's default scale)",
                   lambda p: p["regular_top_init"] == 1.0),
        Assumption("weight decay on", "eta > 0 (the paper's runs use it; without it these "
                   "learning rates do not grok)", lambda p: p["eta"] > 0),
    ),
    # The group, width, step size, weight decay and the pair of training fractions (down to
    # the code's line 2.7482 ln M / M, where runs censor); the regular init's scale (not 1
    # leaves "the default initialisation"); the seeds (two: outside); and Fig. 17's residual
    # ReLU network, narrow (K = 64: about 10 s on Z_11). Each point costs seconds.
    space={"group": Choice(("Z7", "Z11", "Z13")), "K": Choice((64, 128, 256)),
           "lr": LogUniform(2e-3, 2e-2), "eta": LogUniform(1e-3, 1e-2),
           "p_values": Choice(((0.68, 0.9), (0.62, 0.9), (0.75, 0.9), (0.65, 0.75, 0.9))),
           "regular_top_init": Choice((1.0, 0.5, 2.0)),
           "seeds": Choice((tuple(range(24)), tuple(range(24, 48)), (0, 1))),
           "deep": Choice((None, {"group": "Z11", "layers": 2, "K": 64, "activation": "relu",
                                  "lr": 5e-3, "eta": 5e-3, "p_values": (0.68, 0.9),
                                  "budget": (1500, 1500)}))},
    tags=("training",),
))
