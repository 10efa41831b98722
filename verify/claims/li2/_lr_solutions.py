r"""The learning-rate sweeps of Li2 Figs. 6 and 7, shared by ``li2.fig6`` and ``li2.fig7``: the
runs (:func:`lr_outcomes`, one :func:`numerics.li2.lr_solutions.lr_solution_point` per group
and training fraction through ``run.sweep``, memoised for the process so the two claims, the
control and the mutants share them), the trained-run check, the sign decisions and the
figures.

Operational definitions (both claims). A run *generalises* when its test accuracy at the end
of the fixed epoch budget is at least :data:`GENERALISING` (0.99, the grokking threshold of
``li2.fig5``); otherwise it is *non-generalising* (it has fitted its training set, which
:mod:`verify.claims.li2._trained` requires of every run, so it memorised). The energy of a run
is the scale-free :math:`\mathcal E` of Eq. 7 on the unit sphere, the median of
:math:`\mathcal E(\mathbf w_j/\|\mathbf w_j\|)` over its learned nodes (the half of largest
norm, :func:`numerics.li2.lr_solutions.learned_node_energy`); :math:`\mathcal E` sums over the
training set, so energies are compared only within one (group, training fraction).

The statements are about the solutions training converges to, so an outcome read at the end of
the budget counts only if the run has settled there: every run's test accuracy over the last
quarter of the budget stays within :data:`SETTLED_WITHIN` of its final value (``run.ran``; a
run still moving, e.g. a large step size still climbing towards generalisation, makes the
verdict inconclusive, with the evidence at the end of the budget still shown).

A sign is decided by an interval: confirmed when the whole 95% interval lies on the stated
side of its null value, refuted when it lies on the other side, undecided when it contains
it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from numerics.errors import Diverged
from numerics.li2.lr_solutions import lr_solution_point, median_difference, seed_slopes, sign_test
from numerics.li2.phase_boundary import GROKKED, group_table
from numerics.li2.repulsion_along_training import wilson_interval
from numerics.li2.sweep_points import decode
from verify import LEVEL, Evidence, Plot, Reference, Route, Run, Tolerance, to_json_value
from verify.claims.li2._trained import record_trained

#: A run generalises when its final test accuracy reaches this (``li2.fig5``'s threshold).
GENERALISING = GROKKED

#: A settled run's test accuracy over the last quarter of its budget stays this close to its
#: final value: the width of the band between the threshold 0.99 and a perfect score, the
#: scale on which an outcome is read (a run moving less is stationary on that scale).
SETTLED_WITHIN = 1 - GENERALISING

#: What :func:`lr_outcomes` records with ``run.ran``.
SETTLED = "every run settled (test accuracy steady over the last quarter of the budget)"

SIGN = Tolerance(0.0, "a sign: the whole 95% interval must lie on the stated side of its null "
                      "value (one that contains it is undecided)")


@dataclass(frozen=True)
class Outcomes:
    """One (group, training fraction): per learning rate x seed (``(L, S)``) the final test
    accuracy, whether it generalised, the learned-node energy and the largest distance of the
    test accuracy from its final value over the last quarter of the budget."""

    group: str
    p: float
    lrs: tuple[float, ...]
    test: np.ndarray
    energy: np.ndarray
    moved: np.ndarray

    @property
    def general(self) -> np.ndarray:
        return self.test >= GENERALISING

    def fraction(self, i: int) -> tuple[int, int, tuple[float, float]]:
        """Generalising seeds, seeds and Wilson's interval at learning rate ``lrs[i]``."""
        hits, n = int(self.general[i].sum()), self.general.shape[1]
        return hits, n, wilson_interval(hits, n, LEVEL)


def lr_outcomes(run: Run, settings: Sequence[tuple[str, float]], training: Mapping[str, Any]
                ) -> dict[tuple[str, float], Outcomes]:
    """Train every (group, p) of ``settings`` at every learning rate and seed of
    ``training`` (one sweep point each); record whether every run trained beyond chance and
    settled (``run.ran``). Raises :class:`Diverged` when a training loss is not finite."""
    keys = ("lrs", "seeds", "K", "eta", "epochs", "eval_every", "activation", "loss",
            "optimizer", "dtype")
    points = [{"table": group_table(g).tolist(), "p": p, "device": str(run.device),
               **{k: list(training[k]) if k in ("lrs", "seeds") else training[k]
                  for k in keys}}
              for g, p in settings]
    results = run.sweep("lr solutions", lr_solution_point, points)
    L, S = len(training["lrs"]), len(training["seeds"])
    out, train, loss = {}, [], []
    for (g, p), r in zip(settings, results):
        if not r["finite"]:
            raise Diverged(f"training diverged ({g}, p={p})")
        test = decode(r["test_acc"]).numpy()
        late = decode(r["epochs"]).numpy() >= 0.75 * training["epochs"]
        out[(g, p)] = Outcomes(g, p, tuple(training["lrs"]), test[-1].reshape(L, S),
                               decode(r["energy"]).numpy().reshape(L, S),
                               np.abs(test[late] - test[-1]).max(0).reshape(L, S))
        train.append(decode(r["final_train"]))
        loss.append(decode(r["final_loss"]))
    # one bar for every group: the smallest group's, the highest (halfway from 1/M to 1)
    M = min(group_table(g).shape[0] for g, _ in settings)
    record_trained(run, M, torch.cat(train), torch.cat(loss),
                   where=f"the end of every run ({len(settings)} x {L} learning rates x {S} "
                         f"seeds, {training['epochs']} epochs)")
    moved = {(o.group, o.p, lr): float(o.moved[i].max()) for o in out.values()
             for i, lr in enumerate(o.lrs)}
    worst = max(moved, key=moved.get)
    unsettled = int(sum((o.moved > SETTLED_WITHIN).sum() for o in out.values()))
    run.ran(SETTLED, unsettled == 0,
            f"{unsettled} of {len(settings) * L * S} runs moved more than {SETTLED_WITHIN:.2g} "
            f"from their final test accuracy over the last quarter of the budget; the most: "
            f"{moved[worst]:.3f} ({worst[0]}, p={worst[1]:g}, lr={worst[2]:g})")
    return out


def sign_evidence(quantity: str, stated: float, measured: Mapping[str, Any],
                  interval: tuple[float, float], null: float,
                  parameters: Mapping[str, Any]) -> Evidence:
    """The stated sign (+1: above ``null``, -1: below, 0: no direction) against ``interval``
    (a NaN interval, no data, is undecided)."""
    lo, hi = (v - null for v in interval)
    shown = f"[{interval[0]:.3g}, {interval[1]:.3g}] against {null:g}"
    if stated == 0 or not (np.isfinite(lo) and np.isfinite(hi)):
        ok, gap = None, None
        why = "no direction stated" if stated == 0 else "no interval: too few runs"
    else:
        s = 1.0 if stated > 0 else -1.0
        lo, hi = min(s * lo, s * hi), max(s * lo, s * hi)
        ok = True if lo > 0 else False if hi < 0 else None
        gap = 0.0 if ok else (-hi if ok is False else None)
        why = (f"the {LEVEL:.0%} interval {shown} lies "
               + ("on the stated side" if ok else "on the other side" if ok is False
                  else "across it: undecided"))
    return Evidence(route=Route.NUMERIC, quantity=quantity, stated=stated, derived=None,
                    measured=to_json_value(dict(measured)), metric="sign", discrepancy=gap,
                    tolerance=SIGN, parameters=dict(parameters), finite=True,
                    comparisons={} if gap is None else {"interval beyond the null on the "
                                                        "wrong side": gap},
                    note=why)


def trend_evidence(o: Outcomes, stated: float) -> Evidence:
    """The direction of the generalising fraction along the learning rates: per seed the
    slope of its 0/1 outcome on log lr, a sign test over seeds."""
    t = sign_test(seed_slopes(o.general.astype(float), o.lrs), LEVEL)
    return sign_evidence(
        f"{o.group}, p={o.p:g}: the fraction of generalising seeds along lr = {list(o.lrs)} "
        f"(share of seeds whose outcome rises with lr, Wilson interval, against 1/2)",
        stated, t.as_record(), t.interval, 0.5,
        {"group": o.group, "p": o.p, "lrs": list(o.lrs), "seeds": o.test.shape[1]})


def energy_gap_evidence(label: str, o: Outcomes, high: np.ndarray, low: np.ndarray,
                        stated: float, parameters: Mapping[str, Any]) -> Evidence:
    """Median learned-node energy of the runs ``high`` minus that of the runs ``low`` (masks
    over ``o``'s (lr, seed) grid), with its bootstrap interval, against 0; undecided when
    either side has fewer than two runs."""
    a, b = o.energy[high], o.energy[low]
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    record: dict[str, Any] = {"runs": [int(a.size), int(b.size)]}
    interval = (float("nan"), float("nan"))
    if a.size >= 2 and b.size >= 2:
        diff, interval = median_difference(a, b, LEVEL)
        record |= {"median difference": diff, "interval": list(interval),
                   "medians": [float(np.median(a)), float(np.median(b))],
                   "ratio of medians": float(np.median(a) / np.median(b))}
    return sign_evidence(f"{o.group}, p={o.p:g}: {label}", stated, record, interval, 0.0,
                         {"group": o.group, "p": o.p, **parameters})


def outcome_table(o: Outcomes) -> dict[str, Any]:
    """Per learning rate: the generalising fraction and its interval, the median energy of
    the generalising and the other runs, the test accuracies and the largest change of the
    test accuracy over the last quarter of the budget."""
    rows: dict[str, Any] = {}
    for i, lr in enumerate(o.lrs):
        hits, n, (lo, hi) = o.fraction(i)
        g = o.general[i]
        rows[f"lr={lr:g}"] = {
            "generalising": f"{hits}/{n}", "95% Wilson interval": [lo, hi],
            "median E (generalising, not)": [
                float(np.nanmedian(o.energy[i][g])) if g.any() else None,
                float(np.nanmedian(o.energy[i][~g])) if (~g).any() else None],
            "final test accuracy": o.test[i].round(3).tolist(),
            "largest change of test accuracy over the last quarter of the budget":
                float(o.moved[i].max())}
    return rows


def fraction_plot(outcomes: Sequence[Outcomes], title: str) -> Plot:
    """The generalising fraction against lr per (group, p), with its Wilson interval."""
    series, styles = {}, {}
    for c, o in enumerate(outcomes):
        f = [o.fraction(i) for i in range(len(o.lrs))]
        name = f"{o.group}, p={o.p:g}"
        series[name] = (list(o.lrs), [h / n for h, n, _ in f])
        series[f"{name}: 95% interval, lower"] = (list(o.lrs), [iv[0] for _, _, iv in f])
        series[f"{name}: upper"] = (list(o.lrs), [iv[1] for _, _, iv in f])
        styles |= {name: f"C{c % 10}-", f"{name}: 95% interval, lower": f"C{c % 10}:",
                   f"{name}: upper": f"C{c % 10}:"}
    return Plot(title, x_label="learning rate", y_label="fraction of seeds generalising",
                log_x=True, series=series, styles=styles,
                references=(Reference("half the seeds", y=0.5),))


def energy_plot(outcomes: Sequence[Outcomes], title: str) -> Plot:
    """The median learned-node energy against lr per (group, p), generalising runs solid and
    the others dashed (a gap where an lr has none of that kind)."""
    series, styles = {}, {}
    for c, o in enumerate(outcomes):
        name = f"{o.group}, p={o.p:g}"
        for kind, mask, style in (("generalising", o.general, "-"),
                                  ("not generalising", ~o.general, "--")):
            y = [float(np.nanmedian(o.energy[i][mask[i]])) if mask[i].any() else float("nan")
                 for i in range(len(o.lrs))]
            series[f"{name}, {kind}"] = (list(o.lrs), y)
            styles[f"{name}, {kind}"] = f"C{c % 10}{style}"
    return Plot(title, x_label="learning rate",
                y_label="median E of the learned nodes on the unit sphere", log_x=True,
                series=series, styles=styles)
