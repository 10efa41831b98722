r"""li2.fig10-ridge-top: Figs. 10-13, a ridge top layer :math:`V_{\rm ridge}` (recomputed from
the current features at every step) against a trained top layer: grokking still happens, more
slowly for :math:`M=23` and faster for :math:`M=41, 89, 127` (verify/claims/li2/SOURCES.md §5,
§6.4).

Routes: the paper's statement as a sign per group size :math:`M` (stated); batched full-batch
training of the two-layer network (:class:`numerics.li2.trainer.GroupTrainer`, measured) at the
setting of Figs. 10-12 (lr 0.005, weight decay :math:`5\times10^{-5}`, :math:`K=256`, 20% test,
Adam) with ``top_layer="trained"`` and ``top_layer="ridge"`` (the code's ``set_weight_reg``:
before every forward pass :math:`V\leftarrow(F^\top F+\lambda I)^{-1}F^\top Y_c` from the
uncentred features and the class-centred labels, only :math:`W` trained; the paper does not give
:math:`\lambda`; :math:`10^{-3}` was the code's config default from 31 May to 28 Nov 2025,
covering v1-v5, and is ``null`` at HEAD: SOURCES.md §6.4), on the same seeds (same :math:`W(0)`
and split per seed). Each (group, top layer) is one point of a sweep
(:func:`numerics.li2.init_sweep_points.top_layer_grokking_point`), its seeds on the batch axis,
trained until all its runs have grokked or the budget is spent; the grokking time :math:`t_a`
is the first logged epoch with test accuracy :math:`\ge a`, :math:`a\in\{0.5, 0.99\}`, as in
``li2.sec7-predictions``.

Evidence. Per :math:`M` and threshold, the mean over seeds of
:math:`\log(t^{\rm ridge}_a/t^{\rm trained}_a)`, paired by seed, with its 95% Student-t
interval (:func:`numerics.li2.init_sweep_points.paired_log_ratio`), against the stated sign:
positive (slower) for :math:`M\le23`, negative (faster) for :math:`M\ge41`; confirmed when the
whole interval lies on the stated side, refuted when on the other, undecided when it contains
0. The paper states nothing between 23 and 41 (an :math:`M` there is undecided). Censored runs
enter with the budget, a one-sided bound used only on the side it bounds. Test accuracy is
logged every epoch (the times at :math:`M\ge41` are tens of epochs). "Grokking still
happens" (Fig. 12) and Fig. 13's 500 epochs for :math:`M=23` are reported (how many ridge runs
reach each threshold, and when), not decided: a finite budget cannot refute "eventually". Every
run must have trained beyond chance (:mod:`verify.claims.li2._trained`).

The complex weights of Fig. 11 ("complex weights appear to grok faster") are
``li2.fig11-complex``.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from numerics.errors import Diverged
from numerics.li2.init_sweep_points import top_layer_grokking_point
from numerics.li2.train_splits import train_count
from verify import (
    Assumption,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Plot,
    Reference,
    Run,
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._paired import direction_evidence, paired_row, runs_usable

TOP_LAYERS = ("trained", "ridge")
#: The group sizes the paper names (Figs. 10-12).
PAPER_SIZES = (23, 41, 89, 127)


def stated_ridge_slower(M):
    r"""Fig. 12: with :math:`V_{\rm ridge}` grokking is slower for :math:`M=23` and faster for
    :math:`M=41, 89, 127`: the sign of :math:`\log(t^{\rm ridge}/t^{\rm trained})`, +1 for
    :math:`M\le23`, -1 for :math:`M\ge41`, 0 (not stated) between."""
    return 1.0 if M <= 23 else -1.0 if M >= 41 else 0.0


def reversed_ridge_slower(M):
    """Planted error: the ridge top layer is faster for M = 23 and slower for larger M."""
    return -stated_ridge_slower(M)


def _results(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
    """Every (group, top layer) as one sweep point (``run.sweep``: in this process or on a
    Dask cluster; memoised, so the control and the mutants reuse it), its seeds on the batch
    axis."""
    p = run.params
    configs = [(g, top) for g in p["groups"] for top in TOP_LAYERS]
    points = [{"table": [list(row) for row in build_group(g).table], "seeds": list(p["seeds"]),
               "layers": 1, "K": p["K"], "activation": p["activation"], "loss": p["loss"],
               "optimizer": p["optimizer"], "p": p["p"], "eta": p["eta"], "lr": p["lr"],
               "top_init": 1.0, "top_layer": top, "ridge_lambda": p["ridge_lambda"],
               "budget": p["budget"], "chunk": p["chunk"], "eval_every": p["eval_every"],
               "thresholds": list(p["thresholds"]), "device": str(run.device),
               "dtype": p["dtype"]} for g, top in configs]
    results = run.sweep("training", top_layer_grokking_point, points)
    out = {}
    for (g, top), r in zip(configs, results):
        if not r["finite"]:
            raise Diverged(f"training diverged ({g}, top layer {top})")
        out[(g, top)] = r
    return out


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    results = _results(run)
    sizes = {g: build_group(g).order for g in p["groups"]}
    if not runs_usable(run, results, p["groups"], TOP_LAYERS, "both top layers"):
        return
    table: dict[str, Any] = {}
    for g, M in sizes.items():
        stated = float(run.stated["ridge_slower"](M))
        for i, a in enumerate(p["thresholds"]):
            pr, row = paired_row(("ridge", "trained"),
                                 (results[(g, "ridge")], results[(g, "trained")]), i)
            R, (lo, hi) = pr.ratio
            table[f"{g}, t_{a:g}"] = {
                **row, "effect": "slower" if lo > 1 else "faster" if hi < 1 else "unresolved"}
            yield direction_evidence(
                f"{g} (M={M}), t_{a:g}: the ridge top layer groks "
                f"{'slower' if stated > 0 else 'faster' if stated < 0 else '(not stated)'} "
                f"(sign of mean log t_ridge / t_trained over seeds)", pr, stated,
                {"M": M, "n": train_count(M, p["p"]), "threshold": a, "ratio": R,
                 "interval": [lo, hi], "seeds": len(p["seeds"])},
                no_direction="the paper states no direction for this M (between 23 and 41)")
    run.figure("ridge against trained top layer, per group and threshold", table)
    if not run.is_control and len(sizes) > 1:
        # Fig. 12's question at a glance: the ratio against M, with its interval, and 1
        Ms = list(sizes.values())
        series = {}
        for a in p["thresholds"]:
            rows = [table[f"{g}, t_{a:g}"] for g in sizes]
            series[f"t_{a:g}"] = (Ms, [r["t_ridge / t_trained (geometric mean)"] for r in rows])
            series[f"t_{a:g}, lower end of the 95% interval"] = (
                Ms, [r["95% interval"][0] for r in rows])
            series[f"t_{a:g}, upper end"] = (Ms, [r["95% interval"][1] for r in rows])
        styles = {name: f"C{i}" + (":" if "end" in name else "-")
                  for i, a in enumerate(p["thresholds"])
                  for name in series if name.startswith(f"t_{a:g}")}
        run.plot(Plot("t_ridge / t_trained against the group size M (geometric mean over "
                      "seeds; dotted: 95% interval); above 1 the ridge top layer is slower",
                      x_label="M", y_label="t_ridge / t_trained", log_y=True, series=series,
                      styles=styles, references=(Reference("equal times", y=1.0),)))
    run.figure("runs", {"budget (epochs)": p["budget"], "logging interval": p["eval_every"],
                        "the paper's Fig. 13": "M = 23 with V_ridge groks within 500 epochs, "
                                               "more slowly than the baseline"})


CLAIM = register(Claim(
    id="li2.fig10-ridge-top",
    paper=PAPER,
    kind="experiment",
    title="Figs. 10-13: a ridge top layer groks slower for M = 23, faster for M = 41, 89, 127",
    source="Figs. 10-13 (App.); SOURCES §5, §6.4",
    statement=r"V=V_{\rm ridge}\ \text{each step: grokking still happens; slower than a trained "
              r"}V\text{ for }M=23,\ \text{faster for }M=41,89,127",
    reading=r"The author's two-layer network (\sigma(x)=x^2, the code's class-centred MSE, "
            r"Adam with coupled weight decay, default nn.Linear init, full batch) at Figs. "
            r"10-12's lr 0.005, weight decay 5e-5, K=256, 20% test, with a trained top layer "
            r"and with the code's set_weight_reg ridge top layer (V replaced before each "
            r"forward pass by the ridge fit of the class-centred labels on the uncentred "
            r"features, \lambda = 10^{-3}, the code's config default over v1-v5 (null at HEAD); "
            r"the paper gives none), on the "
            r"same seeds. t_a = first logged epoch with test accuracy \ge a, a \in \{0.5, "
            r"0.99\}. Per M the sign of the mean over seeds of \log(t^{ridge}_a/t^{trained}_a) "
            r"by its 95% Student-t interval: slower (+) for M \le 23, faster (-) for M \ge 41 "
            r"(the paper's four sizes; between 23 and 41 it states nothing). Censored runs: the "
            r"budget is a one-sided bound of their time. 'Grokking still happens' and Fig. 13 "
            r"are reported, not decided. Complex weights (Fig. 11): li2.fig11-complex. Quick: "
            r"Z_23 and Z_41, 4 seeds; full: the paper's four sizes, 5 seeds.",
    parameters={
        "quick": {"groups": ("Z23", "Z41"), "K": 256, "p": 0.8, "lr": 5e-3, "eta": 5e-5,
                  "ridge_lambda": 1e-3, "seeds": (0, 1, 2, 3), "budget": 1000,
                  # chunk: how often a batch checks whether all its runs have grokked (the
                  # times are logged every eval_every epochs whatever the chunk); every epoch:
                  # at M = 41 both top layers grok within 15-45 epochs
                  "chunk": 25, "eval_every": 1, "thresholds": (0.5, 0.99),
                  "optimizer": "adam", "activation": "x2", "loss": "mse_class",
                  # the author's code trains in float32; a grokking time is a statistic of
                  # the run, not a precision check
                  "dtype": "float32"},
        "full": {"groups": ("Z23", "Z41", "Z89", "Z127"), "K": 256, "p": 0.8, "lr": 5e-3,
                 "eta": 5e-5, "ridge_lambda": 1e-3, "seeds": tuple(range(5)), "budget": 3000,
                 # every epoch: at M = 89 and 127 both top layers grok within 9-35 epochs
                 "chunk": 50, "eval_every": 1, "thresholds": (0.5, 0.99), "optimizer": "adam",
                 "activation": "x2", "loss": "mse_class", "dtype": "float32"},
    },
    stated={"ridge_slower": stated_ridge_slower},
    equivalent_mutants={f"ridge_slower:{op}": "a direction: only its sign enters the decision"
                        for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("reversed: the ridge top layer is faster for M = 23 and slower "
                            "for M = 41, 89, 127", {"ridge_slower": reversed_ridge_slower}),
    assumptions=(
        Assumption(">= 3 seeds", "a t-interval over paired seeds (the paper ran 5)",
                   lambda p: len(p["seeds"]) >= 3),
        Assumption("the paper's group sizes", "every M is one of 23, 41, 89, 127 (elsewhere "
                   "the direction is the rule M <= 23 slower, M >= 41 faster, extrapolated)",
                   lambda p: all(build_group(g).order in PAPER_SIZES for g in p["groups"])),
        Assumption("the setting of Figs. 10-12", "K = 256, 20% test, lr 0.005, weight decay "
                   "5e-5, Adam", lambda p: (p["K"], p["p"], p["lr"], p["eta"], p["optimizer"])
                   == (256, 0.8, 5e-3, 5e-5, "adam")),
        Assumption("the code's ridge lambda", "lambda = 1e-3, set_weight_reg's config default "
                   "from 31 May to 28 Nov 2025 (v1-v5; null at HEAD; the paper states none)",
                   lambda p: p["ridge_lambda"] == 1e-3),
    ),
    # The groups (Z_11 and Z_13 lie below the paper's sizes: outside), the width, training
    # fraction and step size (each at the paper's value or a step away, which leaves the
    # setting of Figs. 10-12), the ridge lambda and the seeds (two: outside). Each point costs
    # seconds to about a quick run (the ridge top layer at Z_23, K = 256, is the slow part).
    space={"groups": Choice((("Z23", "Z41"), ("Z11", "Z23"), ("Z13", "Z41"), ("Z41",))),
           "K": Choice((64, 128, 256)), "p": Choice((0.8, 0.7, 0.9)),
           "lr": Choice((5e-3, 2.5e-3, 1e-2)), "ridge_lambda": Choice((1e-3, 1e-4, 1e-2)),
           "seeds": Choice(((0, 1, 2, 3), (4, 5, 6, 7), (0, 1)))},
    tags=("training",),
))
