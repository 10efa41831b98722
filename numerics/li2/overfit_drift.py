r"""Li2 §7, two statements about training past the fit of the training set: "stable-softmax
and vanilla SGD converge slowly to :math:`V_{\rm ridge}`" (staying longer before
overfitting) and "with scarce data the memorisation maxima have higher :math:`\mathcal E`, so
long training drifts toward them".

* :func:`overfit_drift_point`: one configuration of the two-layer network on a group task at
  scarce data, its ``seeds`` on the batch axis, trained with each optimiser arm (``arms``:
  name -> ``{"optimizer", "lr", "momentum"}``) for ``epochs`` full-batch steps from the same
  initialisations and splits (the seeds pair the arms). Per arm: the training and test
  accuracy every ``eval_every`` epochs and, every ``diag_every`` epochs, the energy of the
  learned nodes (:func:`numerics.li2.lr_solutions.learned_node_energy`: the median
  :math:`\mathcal E` on the sphere over the half of the nodes of largest norm, the measure
  ``li2.fig7`` uses). JSON in, JSON out (:func:`numerics.li2.sweep_points.encode` records).
* :func:`first_fit`: per run, the first logged epoch at which the training accuracy reaches 1
  (every training pair fitted), or the last logged epoch with a censoring flag.
* :func:`late_slopes`: per run, the least-squares slope of a series on the epoch over the late
  window (the checkpoints from a given epoch on).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from numerics.li2.lr_solutions import learned_node_energy
from numerics.li2.sweep_points import _dtype, encode
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec

#: a training accuracy counted as 1: the accuracies are means of 0/1 over at most 10^5 pairs,
#: so anything within 1e-9 of 1 is every pair right
FITTED = 1.0 - 1e-9


def overfit_drift_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """Every arm of ``point["arms"]`` on the group ``table`` (``seeds``, ``K``, ``p``,
    ``eta``, ``top_init``, ``out_scale``, ``activation``, ``loss``, ``epochs``,
    ``eval_every``, ``diag_every``, ``device``, ``dtype``). Returns per arm whether the final
    training losses are finite, the logged epochs with training and test accuracy
    (``(C, S)``), the final training accuracy and loss, and the diagnostic epochs with the
    learned-node energy (``(D, S)``)."""
    out: dict[str, Any] = {}
    for name, arm in point["arms"].items():
        hyper = Hyper.batch(seed=[int(s) for s in point["seeds"]], lr=float(arm["lr"]),
                            **{k: float(point[k]) for k in ("p", "eta", "top_init",
                                                             "out_scale")})
        spec = OptimizerSpec(arm["optimizer"], momentum=float(arm.get("momentum", 0.9)))
        config = TrainConfig(K=int(point["K"]), activation=point["activation"],
                             loss=point["loss"], optimizer=spec,
                             eval_every=int(point["eval_every"]),
                             diag_every=int(point["diag_every"]), diagnostics=("energy",))
        trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                               dtype=_dtype(point["dtype"]))
        history = trainer.train(int(point["epochs"]))
        logged, train = history.series("train_acc")
        _, test = history.series("test_acc")
        _, loss = history.series("train_loss")
        diag, sphere = history.series("node_energy_sphere")
        _, norm = history.series("node_norm")
        energy = torch.stack([learned_node_energy(s, n) for s, n in zip(sphere, norm)])
        out[name] = {"finite": bool(torch.isfinite(loss[-1]).all()),
                     "epochs": encode(torch.as_tensor(logged)), "train_acc": encode(train),
                     "test_acc": encode(test), "final_train": encode(train[-1]),
                     "final_loss": encode(loss[-1]),
                     "energy_epochs": encode(torch.as_tensor(diag)), "energy": encode(energy)}
    return out


def first_fit(epochs: torch.Tensor, train_acc: torch.Tensor) -> tuple[torch.Tensor,
                                                                       torch.Tensor]:
    """Per run (``train_acc`` ``(C, S)`` at ``epochs`` ``(C,)``): the first logged epoch with
    every training pair fitted, and whether none was (then the last logged epoch, a lower
    bound of the run's time)."""
    hit = train_acc >= FITTED
    reached = hit.any(0)
    first = torch.where(reached, hit.double().argmax(0), len(epochs) - 1)
    return epochs.double()[first], ~reached


def late_slopes(epochs: torch.Tensor, series: torch.Tensor, start: float) -> torch.Tensor:
    """Per run, the least-squares slope of ``series`` (``(D, S)``) on the epoch over the
    checkpoints at or after ``start``; nan for a run with a non-finite value there or fewer
    than 3 such checkpoints."""
    keep = epochs.double() >= start
    t = epochs.double()[keep]
    y = series.double()[keep]
    if t.numel() < 3:
        return torch.full((series.shape[1],), torch.nan, dtype=torch.float64)
    c = t - t.mean()
    slopes = (c[:, None] * (y - y.mean(0))).sum(0) / (c @ c)
    return torch.where(torch.isfinite(y).all(0), slopes, torch.nan)
