r"""li2.fig11-complex: Fig. 11, the setting of Fig. 10 (:math:`M\in\{23,41,89,127\}`, lr 0.005,
weight decay :math:`5\times10^{-5}`, :math:`K=256`, 20% test, Adam, 5 seeds) with complex
weights: "complex weights appear to grok faster" (verify/claims/li2/SOURCES.md §5, §6.2).

The complex network is the code's ``use_complex_weights`` (:mod:`numerics.li2.complex_weights`):
the real ``nn.Linear`` draws cast to complex (imaginary part 0), :math:`\sigma(z)=z^2`, the loss
(class-centred MSE) and the prediction on the real part of the output, Adam on the real and
imaginary parts. Routes:

* derived: at a real point the imaginary parts get no gradient and Adam's step from a zero
  gradient and zero state is 0, so the imaginary parts stay 0 and the complex run *is* the real
  run of the same seed (same :math:`W(0)`, :math:`V(0)`, split): :math:`t^{\rm complex}_a=
  t^{\rm real}_a`, the sign of :math:`\log(t^{\rm complex}/t^{\rm real})` is 0, not the stated
  -1; and the measured largest :math:`|\Im|` of any weight after training against the derived
  0 (exact: every product with an exact zero is an exact zero);
* measured: batched full-batch training of both networks on the same seeds, each (group,
  network) one point of a sweep (:func:`numerics.li2.init_sweep_points.complex_grokking_point`,
  :func:`~numerics.li2.init_sweep_points.top_layer_grokking_point`), trained until every run has
  grokked or the budget is spent; per :math:`M` and threshold :math:`a\in\{0.5,0.99\}` the mean
  over seeds of :math:`\log(t^{\rm complex}_a/t^{\rm real}_a)`, paired by seed, with its 95%
  Student-t interval, against the stated sign (confirmed when the whole interval lies below 0,
  refuted above, undecided when it contains 0: equal times on every seed give the interval
  [0, 0]). The two implementations round differently in float32 (the code's precision), so
  runs that agree for the first tens of epochs can part by a few epochs later (:math:`t_{0.99}`):
  their difference is rounding amplified by training, of either sign. Censored runs enter with
  the budget, a one-sided bound. Every run must have trained beyond chance
  (:mod:`verify.claims.li2._trained`).

Not covered: a complex network with a nonzero imaginary initialisation (the code has none).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from numerics.errors import Diverged
from numerics.li2.init_sweep_points import complex_grokking_point, top_layer_grokking_point
from numerics.li2.sweep_points import decode
from numerics.li2.train_splits import train_count
from verify import (
    Assumption,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Plot,
    Route,
    Run,
    Tolerance,
    compare,
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._paired import direction_evidence, paired_row, runs_usable, times_of

NETWORKS = ("real", "complex")
#: The group sizes the paper names (Figs. 10-12).
PAPER_SIZES = (23, 41, 89, 127)


def stated_complex_faster():
    r"""Fig. 11: complex weights grok faster: the sign of :math:`\log(t^{\rm complex}/
    t^{\rm real})` is -1."""
    return -1.0


def complex_slower():
    """Planted error: complex weights grok slower (+1)."""
    return 1.0


def derived_sign():
    r"""The code's complex network stays on the real weights (module docstring): it follows
    the real network's trajectory, so :math:`t^{\rm complex}_a=t^{\rm real}_a` and the sign is
    0."""
    return 0.0


def _results(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
    """Every (group, network) as one sweep point (``run.sweep``: in this process or on a Dask
    cluster; memoised, so the control and the mutants reuse it), its seeds on the batch
    axis."""
    p = run.params
    configs = [(g, net) for g in p["groups"] for net in NETWORKS]
    points = [{"table": [list(row) for row in build_group(g).table], "seeds": list(p["seeds"]),
               "layers": 1, "K": p["K"], "activation": "x2", "loss": "mse_class",
               "optimizer": p["optimizer"], "p": p["p"], "eta": p["eta"], "lr": p["lr"],
               "top_init": 1.0, "top_layer": "trained", "ridge_lambda": None,
               "budget": p["budget"], "chunk": p["chunk"], "eval_every": p["eval_every"],
               "thresholds": list(p["thresholds"]), "device": str(run.device),
               "dtype": p["dtype"]} for g, _ in configs]
    real = run.sweep("real weights", top_layer_grokking_point,
                     [pt for pt, (_, net) in zip(points, configs) if net == "real"])
    cplx = run.sweep("complex weights", complex_grokking_point,
                     [pt for pt, (_, net) in zip(points, configs) if net == "complex"])
    out = {}
    for g, r, c in zip(p["groups"], real, cplx):
        for net, record in (("real", r), ("complex", c)):
            if not record["finite"]:
                raise Diverged(f"training diverged ({g}, {net} weights)")
            out[(g, net)] = record
    return out


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    results = _results(run)
    sizes = {g: build_group(g).order for g in p["groups"]}
    if not runs_usable(run, results, p["groups"], NETWORKS, "both networks"):
        return
    stated = float(run.stated["complex_faster"]())
    imaginary = torch.stack([decode(results[(g, "complex")]["imaginary"]) for g in sizes])
    yield compare(Route.NUMERIC, "the code's complex weights stay real: largest |Im| of any "
                  "weight after training, per group and seed", derived=torch.zeros_like(
                      imaginary), measured=imaginary, metric="absolute",
                  tolerance=Tolerance(0.0, "exact: the imaginary parts get exactly zero "
                                      "gradients (products with exact zeros)"),
                  parameters={"groups": list(sizes), "seeds": list(p["seeds"]),
                              "budget": p["budget"]})
    yield compare(Route.NUMERIC, "sign of log t_complex / t_real: stated against the sign "
                  "that the real trajectory implies", stated=stated, derived=derived_sign(),
                  metric="absolute", tolerance=Tolerance(0.0, "a sign: no slack"),
                  note="derived: the complex run follows the real run of its seed exactly "
                       "(the item above checks that its imaginary parts stay 0), so the "
                       "grokking times are equal")
    table: dict[str, Any] = {}
    for g, M in sizes.items():
        for i, a in enumerate(p["thresholds"]):
            records = (results[(g, "complex")], results[(g, "real")])
            pr, row = paired_row(("complex", "real"), records, i)
            (t_c, c_c), (t_r, c_r) = (times_of(r, i) for r in records)
            R, (lo, hi) = pr.ratio
            table[f"{g}, t_{a:g}"] = {
                **row, "equal on every seed": bool((t_c == t_r).all() and (c_c == c_r).all())}
            yield direction_evidence(
                f"{g} (M={M}), t_{a:g}: complex weights grok faster (sign of mean log "
                f"t_complex / t_real over seeds)", pr, stated,
                {"M": M, "n": train_count(M, p["p"]), "threshold": a, "ratio": R,
                 "interval": [lo, hi], "seeds": len(p["seeds"])})
    run.figure("complex against real weights, per group and threshold", table)
    if not run.is_control:
        # Fig. 10 against Fig. 11 seed by seed: each run's complex time against its real
        # time (sorted by the real one), one colour per group, solid t_0.5, dotted t_0.99; on
        # the dashed diagonal the two coincide
        series, styles = {}, {}
        for j, (g, M) in enumerate(sizes.items()):
            for a, line in zip(p["thresholds"], ("-", ":", "-.")):
                row = table[f"{g}, t_{a:g}"]
                pairs = sorted(zip(row["epochs real"], row["epochs complex"]))
                name = f"M = {M}, t_{a:g}"
                series[name] = ([x for x, _ in pairs], [y for _, y in pairs])
                styles[name] = f"C{j}{line}"
        every = [t for xs, ys in series.values() for t in (*xs, *ys)]
        series["equal times"] = ([min(every), max(every)], [min(every), max(every)])
        styles["equal times"] = "C7--"
        run.plot(Plot("grokking time with complex weights against real weights, per seed "
                      "(the same W(0), V(0) and split)", x_label="epochs, real weights",
                      y_label="epochs, complex weights", log_x=True, log_y=True,
                      series=series, styles=styles))
    run.figure("runs", {"budget (epochs)": p["budget"], "logging interval": p["eval_every"]})


CLAIM = register(Claim(
    id="li2.fig11-complex",
    paper=PAPER,
    kind="experiment",
    title="Fig. 11: complex weights grok faster than real ones (the setting of Fig. 10)",
    source="Figs. 10-11 (App.); SOURCES §5, §6.2",
    statement=r"\text{complex }W,V\text{ at the setting of Fig. 10: grokking faster than with "
              r"real weights}",
    reading=r"The code's use_complex_weights: the real nn.Linear draws cast to complex "
            r"(imaginary part 0), \sigma(z)=z^2, the class-centred MSE and the argmax on the "
            r"real part of the output, Adam (coupled weight decay) on the real and imaginary "
            r"parts, full batch, at Fig. 10's lr 0.005, weight decay 5e-5, K=256, 20% test; "
            r"the real network on the same seeds (same W(0), V(0), split). t_a = first logged "
            r"epoch with test accuracy \ge a, a \in \{0.5, 0.99\}. Stated: the sign of the "
            r"mean over seeds of \log(t^{complex}_a/t^{real}_a) is -1, by its 95% Student-t "
            r"interval per M; derived: the imaginary parts get no gradient at real weights, so "
            r"they stay 0 and the two runs coincide (sign 0). Quick: Z_23, 4 seeds; "
            r"full: the paper's four sizes, K = 256, 5 seeds.",
    parameters={
        "quick": {"groups": ("Z23",), "K": 256, "p": 0.8, "lr": 5e-3, "eta": 5e-5,
                  "seeds": (0, 1, 2, 3), "budget": 400,
                  # every epoch logged: at Z_23 both networks reach 0.5 within 40-60 epochs
                  # and 0.99 within 220-280
                  "chunk": 25, "eval_every": 1, "thresholds": (0.5, 0.99),
                  "optimizer": "adam",
                  # the author's code trains in float32 (cfloat)
                  "dtype": "float32"},
        "full": {"groups": ("Z23", "Z41", "Z89", "Z127"), "K": 256, "p": 0.8, "lr": 5e-3,
                 "eta": 5e-5, "seeds": tuple(range(5)), "budget": 3000, "chunk": 50,
                 "eval_every": 1, "thresholds": (0.5, 0.99), "optimizer": "adam",
                 "dtype": "float32"},
    },
    stated={"complex_faster": stated_complex_faster},
    equivalent_mutants={f"complex_faster:{op}": "a direction: only its sign enters the decision"
                        for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("complex weights grok slower", {"complex_faster": complex_slower}),
    assumptions=(
        Assumption(">= 3 seeds", "a t-interval over paired seeds (the paper ran 5)",
                   lambda p: len(p["seeds"]) >= 3),
        Assumption("the paper's group sizes", "every M is one of 23, 41, 89, 127",
                   lambda p: all(build_group(g).order in PAPER_SIZES for g in p["groups"])),
        Assumption("the setting of Figs. 10-11", "K = 256, 20% test, lr 0.005, weight decay "
                   "5e-5, Adam", lambda p: (p["K"], p["p"], p["lr"], p["eta"], p["optimizer"])
                   == (256, 0.8, 5e-3, 5e-5, "adam")),
    ),
    # The groups (Z_11 and Z_17 lie below the paper's sizes: outside), the width, training
    # fraction, step size, weight decay, optimiser and dtype (float64 shows the same
    # trajectories without float32 rounding) and the seeds (two: outside). The derivation holds
    # at every point; each point costs about a quick run or less.
    space={"groups": Choice((("Z23",), ("Z11",), ("Z17", "Z23"), ("Z41",))),
           "K": Choice((256, 64, 128)), "p": Choice((0.8, 0.7, 0.9)),
           "lr": Choice((5e-3, 2.5e-3, 1e-2)), "eta": Choice((5e-5, 0.0, 5e-4)),
           "optimizer": Choice(("adam", "adamw", "sgd")), "dtype": Choice(("float32",
                                                                            "float64")),
           "seeds": Choice(((0, 1, 2, 3), (4, 5, 6, 7), (0, 1)))},
    tags=("training",),
))
