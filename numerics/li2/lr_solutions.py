r"""Which solution a learning rate leads to (Li2 Figs. 6 and 7): the two-layer network trained
with several Adam learning rates on the same seeds, each run's outcome (generalising or not)
and the energy :math:`\mathcal E` (Eq. 7) of the nodes it learned.

* :func:`lr_solution_point`: one (group, training fraction) with its seeds x learning rates on
  the batch axis, trained a fixed number of epochs (the author's sweeps fix ``num_epochs``);
  the test-accuracy curve and, at the end, the per-run energy of the learned nodes. JSON in,
  JSON out (:func:`numerics.li2.sweep_points.encode` records), so that
  ``verify.sweep.run_sweep`` can run it here or on a Dask worker.
* :func:`learned_node_energy`: the scale-free energy of a run's learned nodes, the median of
  :math:`\mathcal E(\mathbf w_j/\|\mathbf w_j\|)` over the half of its nodes with the largest
  norm. Weight decay shrinks the nodes the solution does not use towards 0, where their
  direction is Adam's noise (or, at norm 0, undefined); the half needs no scale of its own.
  On the sphere the energy compares solutions of different norms (the raw
  :math:`\mathcal E` grows as :math:`\|\mathbf w\|^4` for :math:`\sigma(x)=x^2`).
* :func:`seed_slopes` and :func:`sign_test`: the trend of a per-seed 0/1 outcome along the
  learning rates, as the least-squares slope on :math:`\log\mathrm{lr}` per seed (the seeds
  are paired: the same first layer and split at every learning rate) and a sign test over
  seeds with Wilson's interval for the share of increasing seeds.
* :func:`median_difference`: the difference of two samples' medians with a seeded percentile
  bootstrap interval.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from numerics.li2.repulsion_along_training import wilson_interval
from numerics.li2.sweep_points import _dtype, encode
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec


def learned_node_energy(sphere_energy: torch.Tensor, norm: torch.Tensor) -> torch.Tensor:
    r"""Per run (``(B, K)`` inputs: :math:`\mathcal E` on the sphere and :math:`\|\mathbf
    w_j\|` per node), the median energy over the :math:`\lceil K/2\rceil` nodes of largest
    norm, leaving out any of norm 0 (no direction); NaN for a run with none left."""
    if sphere_energy.shape != norm.shape or sphere_energy.ndim != 2:
        raise ValueError(f"sphere_energy, norm: need equal (B, K) shapes, got "
                         f"{tuple(sphere_energy.shape)} and {tuple(norm.shape)}")
    keep = -(-norm.shape[1] // 2)
    top = norm.topk(keep, dim=1)
    picked = sphere_energy.gather(1, top.indices)
    picked = torch.where(top.values > 0, picked, torch.nan)
    return picked.nanmedian(dim=1).values


def lr_solution_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """Every (learning rate, seed) of ``lrs`` x ``seeds`` (learning rates outer) on the group
    ``table`` at training fraction ``p`` with weight decay ``eta``: ``K``, ``activation``,
    ``loss``, ``optimizer``, ``epochs`` full-batch steps, test accuracy every ``eval_every``
    epochs, ``device``, ``dtype``. Returns whether every final training loss is finite, the
    logged epochs and test accuracy (epochs x runs), the final training accuracy and loss, and
    per run :func:`learned_node_energy` at the end."""
    hyper = Hyper.grid(lr=[float(x) for x in point["lrs"]],
                       seed=[int(s) for s in point["seeds"]], eta=[float(point["eta"])],
                       p=[float(point["p"])])
    epochs = int(point["epochs"])
    config = TrainConfig(K=point["K"], activation=point["activation"], loss=point["loss"],
                         optimizer=OptimizerSpec(point["optimizer"]),
                         eval_every=point["eval_every"], diag_every=epochs,
                         diagnostics=("energy",))
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    history = trainer.train(epochs)
    logged, test = history.series("test_acc")
    _, train = history.series("train_acc")
    _, loss = history.series("train_loss")
    _, sphere = history.series("node_energy_sphere")
    _, norm = history.series("node_norm")
    return {"finite": bool(torch.isfinite(loss[-1]).all()),
            "epochs": encode(logged), "test_acc": encode(test),
            "final_train": encode(train[-1]), "final_loss": encode(loss[-1]),
            "energy": encode(learned_node_energy(sphere[-1], norm[-1]))}


def seed_slopes(outcome: Any, lrs: Sequence[float]) -> np.ndarray:
    r"""Per seed, the least-squares slope of ``outcome`` (``(L, S)``: learning rates x
    seeds) on :math:`\log\mathrm{lr}`."""
    y = np.asarray(outcome, np.float64)
    x = np.log(np.asarray(lrs, np.float64))
    if y.ndim != 2 or y.shape[0] != x.size or x.size < 2:
        raise ValueError(f"outcome: shape {y.shape} must be ({x.size} learning rates, seeds)"
                         f" with >= 2 learning rates")
    c = x - x.mean()
    if not float(c @ c) > 0:
        raise ValueError(f"lrs: {list(lrs)} need >= 2 distinct values")
    slopes = c @ y / float(c @ c)
    # a seed whose outcome does not change has slope 0 exactly: the rounded centring of
    # log lr would otherwise give it a sign of order 1e-16, and the sign test a false vote
    slopes[np.all(y == y[:1], axis=0)] = 0.0
    return slopes


@dataclass(frozen=True)
class SignTest:
    """Seeds whose slope is negative, positive and 0; the share of positives among the
    non-zero ones and its Wilson interval (NaN when every slope is 0)."""

    negative: int
    positive: int
    ties: int
    share: float
    interval: tuple[float, float]

    def as_record(self) -> dict[str, Any]:
        return {"decreasing seeds": self.negative, "increasing seeds": self.positive,
                "flat seeds": self.ties, "share increasing": self.share,
                "interval": list(self.interval)}


def sign_test(slopes: Any, level: float) -> SignTest:
    """The sign test of per-seed ``slopes``: without a trend a non-zero slope is as likely
    negative as positive, so the Wilson interval of the positive share lies above 1/2 for an
    increasing trend, below it for a decreasing one, and contains it otherwise."""
    s = np.asarray(slopes, np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError("slopes: need a finite 1-d array")
    neg, pos = int((s < 0).sum()), int((s > 0).sum())
    n = neg + pos
    if n == 0:
        return SignTest(0, 0, s.size, math.nan, (math.nan, math.nan))
    return SignTest(neg, pos, s.size - n, pos / n, wilson_interval(pos, n, level))


def median_difference(a: Any, b: Any, level: float, *, resamples: int = 4000,
                      seed: int = 0) -> tuple[float, tuple[float, float]]:
    r""":math:`\mathrm{median}(a)-\mathrm{median}(b)` and its percentile bootstrap interval
    at ``level`` (each sample resampled with replacement, ``resamples`` times, from a
    generator seeded with ``seed``, so a repeated call gives the same interval)."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.size < 2 or y.size < 2:
        raise ValueError(f"a, b: need two 1-d samples of >= 2 values, got {x.shape}, {y.shape}")
    rng = np.random.default_rng(seed)
    bx = np.median(rng.choice(x, (resamples, x.size)), axis=1)
    by = np.median(rng.choice(y, (resamples, y.size)), axis=1)
    lo, hi = np.quantile(bx - by, [(1 - level) / 2, (1 + level) / 2])
    return float(np.median(x) - np.median(y)), (float(lo), float(hi))
