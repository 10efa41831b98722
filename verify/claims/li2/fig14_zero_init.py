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
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from numerics.errors import Diverged
from numerics.li2.init_sweep_points import (
    BELOW_AT_START,
    earliest_crossing,
    paired_log_ratio,
    slope_of_log_ratios,
    top_layer_grokking_point,
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
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._paired import direction_evidence
from verify.claims.li2._trained import TRAINED, record_trained


def stated_zero_init_faster():
    r"""Figs. 14-17: zero init groks faster: :math:`\log(t^{\rm regular}/t^{\rm zero})>0`
    (+1)."""
    return 1.0


def stated_scarce_data_more():
    r"""Fig. 16, "especially when data are scarce": the speed-up falls as the training
    fraction grows, :math:`d\log(t^{\rm regular}/t^{\rm zero})/d\log p<0` (-1)."""
    return -1.0


# --- the runs -----------------------------------------------------------------------------------

def _configurations(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(network, p, top_init) of every run: the two-layer network at each p, and the deep one
    at its own p where ``deep`` is set; each with the regular and the zero top init."""
    two = {"layers": 1, "K": p["K"], "activation": p["activation"], "lr": p["lr"],
           "eta": p["eta"], "p_values": p["p_values"]}
    nets = {"two-layer": two} | ({"deep": p["deep"]} if p["deep"] else {})
    return [{"net": net, **{k: v for k, v in cfg.items() if k != "p_values"}, "p": frac,
             "top_init": init}
            for net, cfg in nets.items() for frac in cfg["p_values"]
            for init in (p["regular_top_init"], 0.0)]


def _results(run: Run) -> dict[tuple[str, float, float], dict[str, Any]]:
    """Every configuration as one sweep point (``run.sweep``: in this process or on a Dask
    cluster; memoised, so the control and the mutants reuse it), its seeds on the batch
    axis."""
    p = run.params
    configs = _configurations(p)
    table = [list(row) for row in build_group(p["group"]).table]
    # ridge_lambda: read only by a ridge top layer, none here
    points = [{"table": table, "seeds": list(p["seeds"]), "optimizer": p["optimizer"],
               "loss": p["loss"], "top_layer": "trained", "ridge_lambda": 1e-3,
               "budget": p["budget"], "chunk": p["chunk"], "eval_every": p["eval_every"],
               "thresholds": list(p["thresholds"]), "device": str(run.device),
               "dtype": p["dtype"], **{k: v for k, v in c.items() if k != "net"}}
              for c in configs]
    results = run.sweep("training", top_layer_grokking_point, points)
    out = {}
    for c, r in zip(configs, results):
        if not r["finite"]:
            raise Diverged(f"training diverged ({c['net']}, p={c['p']}, "
                           f"top_init={c['top_init']})")
        out[(c["net"], c["p"], c["top_init"])] = r
    return out


def _times(r: Mapping[str, Any], i: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = r["times"][i]
    return decode(g["epochs"]), decode(g["censored"])


def _network(run: Run, net: str, results: Mapping[tuple[str, float, float], Any],
             p_values: tuple[float, ...]) -> Iterator[Evidence]:
    p = run.params
    regular = p["regular_top_init"]
    faster, more = float(run.stated["zero_init_faster"]()), \
        float(run.stated["scarce_data_more"]())
    table: dict[str, Any] = {}
    for i, a in enumerate(p["thresholds"]):
        ratios = []
        for frac in p_values:
            t_reg, c_reg = _times(results[(net, frac, regular)], i)
            t_zero, c_zero = _times(results[(net, frac, 0.0)], i)
            pr = paired_log_ratio(t_reg, c_reg, t_zero, c_zero, LEVEL)
            ratios.append(pr)
            R, (lo, hi) = pr.ratio
            table[f"p={frac:g}, t_{a:g}"] = {
                "speed-up t_regular / t_zero (geometric mean)": R, "95% interval": [lo, hi],
                "median epochs (regular, zero)": [float(t_reg.median()),
                                                  float(t_zero.median())],
                "median gap t_regular - t_zero (epochs)": float((t_reg - t_zero).median()),
                "censored (regular, zero)": [int(c_reg.sum()), int(c_zero.sum())],
                "epochs regular": t_reg.tolist(), "epochs zero": t_zero.tolist()}
            yield direction_evidence(
                f"{net}, p={frac:g}, t_{a:g}: zero init groks faster (sign of mean log "
                f"t_regular / t_zero over seeds)", pr, faster,
                {"p": frac, "threshold": a, "n": train_count(build_group(p["group"]).order,
                                                            frac),
                 "speed-up": R, "interval": [lo, hi], "seeds": len(p["seeds"])})
        if len(p_values) >= 2:
            trend = slope_of_log_ratios(p_values, ratios, LEVEL)
            table[f"trend, t_{a:g}"] = {"slope of log speed-up on log p": trend.mean,
                                        "95% interval": list(trend.interval)}
            yield direction_evidence(
                f"{net}, t_{a:g}: the speed-up is larger with scarce data (sign of d log "
                f"(t_regular / t_zero) / d log p over p = {list(p_values)})", trend, more,
                {"p_values": list(p_values), "threshold": a, "slope": trend.mean,
                 "interval": list(trend.interval), "seeds": len(p["seeds"])})
    if net == "deep":
        table["the paper's speed-up (Fig. 17)"] = "often about 10x (100 against 1000 epochs)"
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
            series[f"t_{a:g}, lower end of the 95% interval"] = (
                x, [r["95% interval"][0] for r in rows])
            series[f"t_{a:g}, upper end"] = (x, [r["95% interval"][1] for r in rows])
            styles.update({f"t_{a:g}": f"C{i}-",
                           f"t_{a:g}, lower end of the 95% interval": f"C{i}:",
                           f"t_{a:g}, upper end": f"C{i}:"})
        run.plot(Plot(f"{net}: speed-up t_regular / t_zero of a zero-initialised top layer "
                      f"against the training fraction p (geometric mean over seeds; dotted: "
                      f"95% interval)", x_label="training fraction p",
                      y_label="speed-up", log_x=True, log_y=True, series=series,
                      styles=styles, references=(Reference("no speed-up", y=1.0),)))


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    M = build_group(p["group"]).order
    results = _results(run)
    nets = {"two-layer": tuple(p["p_values"])}
    if p["deep"]:
        nets["deep"] = tuple(p["deep"]["p_values"])
    for net, p_values in nets.items():
        runs = [results[(net, frac, init)] for frac in p_values
                for init in (p["regular_top_init"], 0.0)]
        record_trained(run, M, torch.cat([decode(r["final_train"]) for r in runs]),
                       torch.cat([decode(r["final_loss"]) for r in runs]),
                       where=f"{net}: the end of every run (p = {list(p_values)}, both inits)",
                       name=TRAINED if net == "two-layer" else f"{TRAINED} ({net})")
    censored = sum(int(decode(g["censored"]).sum()) for r in results.values()
                   for g in r["times"])
    run.figure("runs", {"budget (epochs)": p["budget"], "logging interval": p["eval_every"],
                        "censored (run, threshold) pairs": censored})
    start = earliest_crossing(list(results.values()))
    if not run.ran(BELOW_AT_START, start > 0, f"earliest crossing of a threshold at epoch "
                   f"{start:g} (0: the test accuracy was there before any step)"):
        return
    for net, p_values in nets.items():
        yield from _network(run, net, results, p_values)


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
            r"2.7482 ln M/M = 0.60), 24 seeds; full: Fig. 16's Z_127, K=1024, lr 0.005, "
            r"eta 5e-5, 8 seeds.",
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
                  "dtype": "float32", "deep": None},
        "full": {"group": "Z127", "K": 1024, "seeds": tuple(range(8)),
                 "p_values": (0.15, 0.2, 0.3, 0.5, 0.8), "lr": 5e-3, "eta": 5e-5,
                 "regular_top_init": 1.0, "budget": 6000, "chunk": 100, "eval_every": 5,
                 "thresholds": (0.5, 0.99), "optimizer": "adam", "activation": "x2",
                 "loss": "mse_class", "dtype": "float32",
                 # Fig. 17: one residual hidden layer (other_layers = 1), K = 2048, ReLU,
                 # eta 1e-4, at a scarce and a plentiful fraction
                 "deep": {"layers": 2, "K": 2048, "activation": "relu", "lr": 5e-3,
                          "eta": 1e-4, "p_values": (0.2, 0.5)}},
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
                   "speed-up has a trend in p", lambda p: len(set(p["p_values"])) >= 2),
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
           "deep": Choice((None, {"layers": 2, "K": 64, "activation": "relu", "lr": 5e-3,
                                  "eta": 5e-3, "p_values": (0.68, 0.9)}))},
    tags=("training",),
))
