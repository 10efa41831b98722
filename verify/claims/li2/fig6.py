r"""li2.fig6: Fig. 6 (§5), the transition from generalising to non-generalising solutions in the
learning rate: near the critical region (a training fraction :math:`p` near the memorisation /
generalisation boundary of Fig. 5) a small learning rate more often gives a generalising
solution, and a large one converges to a non-generalising solution of higher energy
:math:`\mathcal E` (Eq. 7). Also the last bullet of ``li2.sec8-discussion``: "with limited
data, Stage II wants a small [learning rate]" (verify/claims/li2/SOURCES.md §5).

Routes: the figure's description as two signs (stated); batched full-batch training of the
two-layer network (:func:`numerics.li2.lr_solutions.lr_solution_point`, measured) at several
Adam learning rates on the same seeds (per seed the same first layer, top layer and split at
every learning rate), for each (group, :math:`p`) near the author's critical line
:math:`2.7482\ln M/M`, a fixed epoch budget as in the author's sweeps. Definitions
(:mod:`verify.claims.li2._lr_solutions`): a run generalises when its final test accuracy is
:math:`\ge 0.99`; its energy is the median of :math:`\mathcal E(\mathbf w_j/\|\mathbf w_j\|)`
(Eq. 7 on the unit sphere, scale-free) over its learned nodes (the half of largest norm).

Evidence, per (group, :math:`p`):

* the trend of the generalising fraction in lr: per seed the least-squares slope of its 0/1
  outcome on :math:`\log\mathrm{lr}`; over seeds a sign test, the share of seeds whose outcome
  rises with lr with its Wilson interval against 1/2. Stated: decreasing (the interval below
  1/2); the per-lr fractions with their Wilson intervals are reported (and drawn);
* the energy: the median energy of the non-generalising runs minus that of the generalising
  runs (all learning rates pooled), with a percentile bootstrap interval. Stated: positive;
  undecided when either kind has fewer than two runs.

Every run must have trained beyond chance (:mod:`verify.claims.li2._trained`) and settled: its
test accuracy over the last quarter of the budget within 0.01 of its final value (the outcome
is about the solution training converges to; a run still moving makes the verdict
inconclusive).
"""
from __future__ import annotations

from collections.abc import Iterator

from numerics.li2.phase_boundary import group_table
from verify import (
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Run,
    register,
)
from verify.bounds import distinct
from verify.claims.li2 import PAPER
from verify.claims.li2._lr_solutions import (
    energy_gap_evidence,
    energy_plot,
    fraction_plot,
    lr_outcomes,
    outcome_table,
    trend_evidence,
)
from verify.claims.li2._phase_transition import code_line


def stated_lr_trend():
    r"""Fig. 6: a small lr more often generalises: the fraction of generalising seeds falls
    as lr grows, :math:`d\,\mathrm{frac}/d\log\mathrm{lr}<0` (-1)."""
    return -1.0


def stated_energy_order():
    r"""Fig. 6: the non-generalising solutions have the higher energy,
    :math:`\mathcal E_{\rm ngsol}-\mathcal E_{\rm gsol}>0` (+1)."""
    return 1.0


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    settings = [(g, float(frac)) for g, frac in p["settings"]]
    outcomes = lr_outcomes(run, settings, p["training"])
    trend, order = float(run.stated["lr_trend"]()), float(run.stated["energy_order"]())
    for o in outcomes.values():
        # the settings are abelian groups, whose line has corr 1
        line = code_line(int(group_table(o.group).shape[0]), 1)
        run.figure(f"{o.group}, p={o.p:g} (the code's line {line:.3f})", outcome_table(o))
        yield trend_evidence(o, trend)
        yield energy_gap_evidence(
            "median learned-node E on the sphere, non-generalising minus generalising runs "
            "(all lrs)", o, ~o.general, o.general, order, {"lrs": list(o.lrs)})
    if not run.is_control:
        runs = list(outcomes.values())
        run.plot(fraction_plot(runs, "Fig. 6 redrawn: the fraction of seeds generalising "
                                     "(final test accuracy >= 0.99) against the learning rate "
                                     "(dotted: 95% Wilson interval)"))
        run.plot(energy_plot(runs, "Median E (Eq. 7, unit sphere) of the learned nodes "
                                   "against the learning rate"))


_TRAINING = {"optimizer": "adam", "activation": "x2", "loss": "mse_class",
             # the author's code trains in float32; an outcome at the end of a run is a
             # statistic of the run, not a precision check
             "dtype": "float32"}

CLAIM = register(Claim(
    id="li2.fig6",
    paper=PAPER,
    kind="experiment",
    title="Fig. 6: near the critical data ratio a small learning rate more often generalises; "
          "a large one memorises, at higher energy",
    source="§5 and Fig. 6, §8; SOURCES §5, §6.6",
    statement=r"p\approx p^\ast(M):\ \Pr[\mathrm{gsol}]\ \text{falls as lr grows};\ "
              r"\mathcal E(\mathrm{ngsol})>\mathcal E(\mathrm{gsol})",
    reading=r"The author's two-layer network (\sigma(x)=x^2, class-centred MSE, Adam with "
            r"coupled weight decay, default nn.Linear init, full batch) trained a fixed number "
            r"of epochs at several learning rates on the same seeds, at training fractions p "
            r"near the code's line 2.7482 ln M/M. gsol: final test accuracy >= 0.99. E: the "
            r"median over the half of the nodes of largest norm of E(w/||w||) (Eq. 7 on the "
            r"unit sphere). 'More often': the per-seed slope of the 0/1 outcome on log lr is "
            r"negative for more than half of the seeds by a Wilson interval (sign test). "
            r"'Higher E': median E of non-generalising runs minus that of generalising runs, "
            r"bootstrap interval above 0. Every run must have trained beyond chance and "
            r"settled (test accuracy within 0.01 of its final value over the last quarter of "
            r"the budget). Quick: Z_23, K=64, p=0.36, eta=3e-3, lr in {0.01, "
            r"0.03, 0.3}, 8 seeds, 1000 epochs; full: M in {23, 71, 127}, K=1024, p at 1 and "
            r"1.25 times the code's line, eta=1e-4 (the code's default), lr in {1e-3, 2e-3, "
            r"5e-3, 1e-2}, 15 seeds, 3000 epochs.",
    parameters={
        "quick": {"settings": (("Z23", 0.36),),
                  "training": {"K": 64, "eta": 3e-3, "lrs": (0.01, 0.03, 0.3),
                               "seeds": tuple(range(8)), "epochs": 1000, "eval_every": 250,
                               **_TRAINING}},
        "full": {"settings": tuple((f"Z{M}", round(m * code_line(M, 1), 4))
                                   for M in (23, 71, 127) for m in (1.0, 1.25)),
                 "training": {"K": 1024, "eta": 1e-4, "lrs": (1e-3, 2e-3, 5e-3, 1e-2),
                              "seeds": tuple(range(15)), "epochs": 3000, "eval_every": 100,
                              **_TRAINING}},
    },
    stated={"lr_trend": stated_lr_trend, "energy_order": stated_energy_order},
    equivalent_mutants={f"{form}:{op}": "a direction: only its sign enters the decision"
                        for form in ("lr_trend", "energy_order") for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("reversed: a large lr more often generalises, and the "
                            "non-generalising solutions have the lower energy",
                            {"lr_trend": lambda: 1.0, "energy_order": lambda: -1.0}),
    assumptions=(
        Assumption(">= 6 seeds", "the sign test's Wilson interval excludes 1/2 at 95% only "
                   "from >= 4 seeds that move the same way; 6 leaves room for seeds whose "
                   "outcome does not change", lambda p: len(p["training"]["seeds"]) >= 6),
        Assumption(">= 2 learning rates", "a trend in lr",
                   lambda p: len(set(p["training"]["lrs"])) >= 2),
        Assumption("weight decay on", "eta > 0 (the paper's runs use it; without it these "
                   "budgets do not grok)", lambda p: p["training"]["eta"] > 0),
    ),
    # The width, weight decay, learning rates (a ladder that stays below the 0.3 at which
    # Z_23 has not generalised within 1000 epochs, and ones across it) and seeds (four:
    # outside). Each point costs seconds.
    space={"training.K": Choice((48, 64, 96)), "training.eta": LogUniform(2e-3, 5e-3),
           "training.lrs": Choice(((0.01, 0.03, 0.3), (0.01, 0.1), (0.003, 0.01, 0.03))),
           "training.seeds": Choice((tuple(range(8)), tuple(range(8, 16)), (0, 1, 2, 3)))},
    bounds={"training.lrs": distinct()},
    tags=("training",),
))
