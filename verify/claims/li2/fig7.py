r"""li2.fig7: Fig. 7 (§5), with limited data the learning rate picks the solution: at
:math:`M=127`, :math:`n=3225` (20% of :math:`127^2`), Adam with lr 0.001 and 0.002 reaches
Fourier (generalising) solutions of low energy :math:`\mathcal E` (Eq. 7), lr 0.005 memorises
with a much higher :math:`\mathcal E`. Also the last bullet of ``li2.sec8-discussion``: "with
limited data, Stage II wants a small [learning rate] (Fig. 7)" (verify/claims/li2/SOURCES.md
§5).

Routes: the figure's description as signs (stated); batched full-batch training of the
two-layer network (:func:`numerics.li2.lr_solutions.lr_solution_point`, measured) at three
Adam learning rates on the same seeds, a fixed epoch budget. Definitions as in ``li2.fig6``
(:mod:`verify.claims.li2._lr_solutions`): a run generalises when its final test accuracy is
:math:`\ge 0.99`; its energy is the median of :math:`\mathcal E(\mathbf w_j/\|\mathbf w_j\|)`
(Eq. 7 on the unit sphere, scale-free) over its learned nodes (the half of largest norm).

Evidence:

* per learning rate, in increasing order, what it gives: "Fourier solutions" read as most
  seeds generalising, "memorisation" as most seeds not; the fraction of generalising seeds
  with its Wilson interval against 1/2. Stated: +1, +1, -1 for the three learning rates
  from the smallest (the paper's 0.001, 0.002, 0.005; the quick run keeps the order on a
  smaller task, where the learning rates that generalise are larger);
* the energy: the median energy of the runs at the largest learning rate minus that of the
  runs at the two smaller ones, with a percentile bootstrap interval. Stated: positive; the
  ratio of the medians ("much higher") is reported, not decided.

Every run must have trained beyond chance (:mod:`verify.claims.li2._trained`) and settled: its
test accuracy over the last quarter of the budget within 0.01 of its final value (the outcome
is about the solution training converges to; a run still moving makes the verdict
inconclusive).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from verify import (
    LEVEL,
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
    sign_evidence,
)


def stated_outcomes():
    """Fig. 7, per learning rate from the smallest: generalises (+1) at 0.001 and 0.002,
    memorises (-1) at 0.005."""
    return (1.0, 1.0, -1.0)


def stated_energy_order():
    r"""Fig. 7: the memorising lr has the higher energy, :math:`\mathcal E(0.005)-
    \mathcal E(0.001, 0.002)>0` (+1)."""
    return 1.0


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    (o,) = lr_outcomes(run, [(p["group"], float(p["p"]))], p["training"]).values()
    outcomes = run.stated["outcomes"]()
    run.figure(f"{o.group}, p={o.p:g}", outcome_table(o))
    for i, (lr, stated) in enumerate(zip(o.lrs, outcomes)):
        hits, n, interval = o.fraction(i)
        yield sign_evidence(
            f"{o.group}, p={o.p:g}, lr={lr:g}: generalises for most seeds (fraction with "
            f"final test accuracy >= 0.99, Wilson interval, against 1/2)", float(stated),
            {"generalising": hits, "seeds": n, "fraction": hits / n,
             "interval": list(interval)}, interval, 0.5,
            {"group": o.group, "p": o.p, "lr": lr, "level": LEVEL})
    largest = np.zeros_like(o.general)
    largest[-1] = True
    yield energy_gap_evidence(
        f"median learned-node E on the sphere, lr={o.lrs[-1]:g} minus lr in "
        f"{list(o.lrs[:-1])}", o, largest, ~largest, float(run.stated["energy_order"]()),
        {"lrs": list(o.lrs)})
    if not run.is_control:
        run.plot(fraction_plot([o], "Fraction of seeds generalising (final test accuracy "
                                    ">= 0.99) per learning rate (dotted: 95% Wilson interval)"))
        run.plot(energy_plot([o], "Fig. 7: median E (Eq. 7, unit sphere) of the learned nodes "
                                  "per learning rate"))


_TRAINING = {"optimizer": "adam", "activation": "x2", "loss": "mse_class", "dtype": "float32"}

CLAIM = register(Claim(
    id="li2.fig7",
    paper=PAPER,
    kind="experiment",
    title="Fig. 7: with limited data a small learning rate reaches Fourier solutions of low "
          "energy, a large one memorises at much higher energy",
    source="§5 and Fig. 7, §8; SOURCES §5, §6.6",
    statement=r"M=127,\ n=3225:\ \mathrm{lr}\in\{0.001,0.002\}\to\text{Fourier, low }\mathcal E;"
              r"\ \mathrm{lr}=0.005\to\text{memorisation, much higher }\mathcal E",
    reading=r"The author's two-layer network (\sigma(x)=x^2, class-centred MSE, Adam with "
            r"coupled weight decay, default nn.Linear init, full batch) trained a fixed number "
            r"of epochs at three learning rates on the same seeds. 'Fourier (generalising)': "
            r"final test accuracy >= 0.99 for more than half of the seeds, by a Wilson "
            r"interval; 'memorises': for fewer than half. E: the median over the half of the "
            r"nodes of largest norm of E(w/||w||) (Eq. 7 on the unit sphere); 'higher': the "
            r"median E at the largest lr minus that at the two smaller ones, bootstrap "
            r"interval above 0 ('much': the ratio is reported). Every run must have trained "
            r"beyond chance and settled (test accuracy within 0.01 of its final value over "
            r"the last quarter of the budget). Quick: Z_23, K=64, p=0.36, "
            r"eta=3e-3, lr in {0.01, 0.03, 0.3}, 8 seeds, 1000 epochs (the sweep of "
            r"li2.fig6's quick run); full: Z_127, p=0.2 (n=3225), K=1024 (Fig. 6's width; "
            r"Fig. 7 states none), eta=1e-4 (the code's default), lr in {0.001, 0.002, "
            r"0.005}, 15 seeds, 3000 epochs.",
    parameters={
        "quick": {"group": "Z23", "p": 0.36,
                  "training": {"K": 64, "eta": 3e-3, "lrs": (0.01, 0.03, 0.3),
                               "seeds": tuple(range(8)), "epochs": 1000, "eval_every": 250,
                               **_TRAINING}},
        "full": {"group": "Z127", "p": 0.2,
                 "training": {"K": 1024, "eta": 1e-4, "lrs": (1e-3, 2e-3, 5e-3),
                              "seeds": tuple(range(15)), "epochs": 3000, "eval_every": 100,
                              **_TRAINING}},
    },
    stated={"outcomes": stated_outcomes, "energy_order": stated_energy_order},
    equivalent_mutants={f"{form}:{op}": "a direction: only its sign enters the decision"
                        for form in ("outcomes", "energy_order") for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("reversed: the small learning rates memorise, the large one "
                            "generalises, at the lower energy",
                            {"outcomes": lambda: (-1.0, -1.0, 1.0),
                             "energy_order": lambda: -1.0}),
    assumptions=(
        Assumption("three learning rates", "the statement names three, from the smallest",
                   lambda p: len(p["training"]["lrs"]) == 3
                   and list(p["training"]["lrs"]) == sorted(set(p["training"]["lrs"]))),
        Assumption(">= 6 seeds", "a Wilson interval excludes 1/2 at 95% only from >= 4 "
                   "seeds of one outcome; 6 leaves room for a minority of the other",
                   lambda p: len(p["training"]["seeds"]) >= 6),
        Assumption("weight decay on", "eta > 0 (the paper's runs use it; without it these "
                   "budgets do not grok)", lambda p: p["training"]["eta"] > 0),
    ),
    # The width, weight decay, learning-rate ladders (the quick one; one whose largest lr
    # still generalises; one out of order: outside) and seeds (four: outside). Each point
    # costs seconds.
    space={"training.K": Choice((48, 64, 96)), "training.eta": LogUniform(2e-3, 5e-3),
           "training.lrs": Choice(((0.01, 0.03, 0.3), (0.003, 0.01, 0.03),
                                   (0.3, 0.03, 0.01))),
           "training.seeds": Choice((tuple(range(8)), tuple(range(8, 16)), (0, 1, 2, 3)))},
    bounds={"training.lrs": distinct()},
    tags=("training",),
))
