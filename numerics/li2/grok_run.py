r"""One training run of Li2's two-layer network at one training ratio, stopped as soon as a
stated rule decides whether it groks (Fig. 5 at the paper's size, where a full 3000-epoch
budget per run is what makes the full grid cost days).

:func:`grok_run` trains one configuration (group, ratio :math:`p`, seed) with
:class:`numerics.li2.trainer.GroupTrainer` in chunks of ``eval_every`` epochs and reads the
test accuracy :math:`a_0, a_1, \dots` (evaluation :math:`i` at epoch :math:`i\cdot`
``eval_every``) after each chunk:

* **reached** at the first :math:`i` with :math:`a_i,\dots,a_{i+W-1}\ge\theta`
  (``threshold``, ``hold`` :math:`=W`); the run stops at evaluation :math:`i+W-1`;
* **not reached** (given up) at evaluation :math:`g` = ``give_up_epoch / eval_every`` when
  no :math:`a_j`, :math:`j\le g`, reached ``give_up_level``; the run stops there;
* **undecided** otherwise: the run trains its whole budget (``epochs``), and its outcome is
  the budget's.

The evaluations are read in order, so the first of the two events decides (the order of
:class:`verify.design.Watcher`, which the claim replays on the returned trajectory to check
the stop). ``give_up_epoch=None`` never gives up.

:func:`grok_run_point` is the sweep's point function (JSON in, JSON out): a sweep stores each
finished run, so a killed sweep loses at most the run in progress.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from numerics.li2.phase_boundary import group_table
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec


def stop_index(acc: Sequence[float], threshold: float, hold: int, give_up_at: int | None,
               give_up_level: float) -> tuple[str, int | None]:
    """``("reached", i)`` (``i`` the window's first evaluation), ``("not reached", g)`` or
    ``("undecided", None)`` for the evaluations read so far (module docstring)."""
    start, close = None, False
    for i, a in enumerate(acc):
        if a >= threshold:
            start = i if start is None else start
            if i - start + 1 >= hold:
                return "reached", start
        else:
            start = None
        close = close or a >= give_up_level
        if give_up_at is not None and i == give_up_at and not close:
            return "not reached", i
    return "undecided", None


def grok_run(group: str, p: float, seed: int, epochs: int, *, K: int, lr: float, eta: float,
             threshold: float = 0.99, hold: int = 1, give_up_epoch: int | None = None,
             give_up_level: float = 0.5, loss: str = "mse_class", activation: str = "x2",
             optimizer: str = "adam", eval_every: int = 10, device: str = "cpu",
             dtype: str = "float32") -> dict[str, Any]:
    """Train ``group`` at ratio ``p`` from ``seed`` until the rule decides or ``epochs`` run
    out (module docstring). Returns JSON data: the arguments, ``outcome`` ('reached', 'not
    reached', 'undecided'), ``decided_at`` (the evaluation index the outcome is dated at),
    ``epochs_trained``, the evaluated epochs and test accuracies, the best test accuracy, the
    training accuracy at the last epoch trained, ``epoch_grokked`` (first evaluated epoch at
    ``threshold``, None: never) and the wall time."""
    if not 0 < p < 1:
        raise ValueError(f"p: {p} must be in (0, 1)")
    if epochs < 1 or eval_every < 1 or hold < 1:
        raise ValueError(f"epochs, eval_every, hold: {epochs}, {eval_every}, {hold} must be >= 1")
    if give_up_epoch is not None and not (0 <= give_up_epoch <= epochs
                                          and give_up_epoch % eval_every == 0):
        raise ValueError(f"give_up_epoch: {give_up_epoch} must be an evaluated epoch (a multiple "
                         f"of eval_every = {eval_every}) within the budget of {epochs}")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype: {dtype!r} is not one of float32, float64")
    table = group_table(group)
    hyper = Hyper.batch(seed=int(seed), p=float(p), eta=float(eta), lr=float(lr))
    config = TrainConfig(K=K, activation=activation, loss=loss,
                         optimizer=OptimizerSpec(name=optimizer), eval_every=eval_every,
                         diag_every=epochs + 1, diagnostics=())
    start = time.perf_counter()
    trainer = GroupTrainer(table, hyper, config, device=device, dtype=getattr(torch, dtype))
    give_up_at = None if give_up_epoch is None else give_up_epoch // eval_every
    outcome, at = "undecided", None
    while outcome == "undecided" and trainer.epoch < epochs:
        # record_last=False: a chunk's last epoch is recorded as the next chunk's first, so
        # every evaluation is read once; the stop lags the deciding evaluation by one chunk
        trainer.train(min(eval_every, epochs - trainer.epoch), record_last=False)
        acc = trainer.history.series("test_acc")[1][:, 0].tolist()
        outcome, at = stop_index(acc, threshold, hold, give_up_at, give_up_level)
    if outcome == "undecided":
        trainer.train(0)
        acc = trainer.history.series("test_acc")[1][:, 0].tolist()
        outcome, at = stop_index(acc, threshold, hold, give_up_at, give_up_level)
    seconds = time.perf_counter() - start
    eval_epochs = trainer.history.series("test_acc")[0].tolist()
    train_acc = trainer.history.series("train_acc")[1][-1, 0].item()
    if not (all(math.isfinite(a) for a in acc) and math.isfinite(train_acc)):
        raise FloatingPointError(f"{group}, p = {p}, seed {seed}: NaN/Inf accuracies")
    first = next((e for e, a in zip(eval_epochs, acc) if a >= threshold), None)
    return {"group": group, "M": int(table.shape[0]), "p": float(p), "seed": int(seed),
            "epochs": epochs,
            "config": {"K": K, "lr": lr, "eta": eta, "loss": loss, "activation": activation,
                       "optimizer": optimizer, "eval_every": eval_every, "dtype": dtype,
                       "device": device},
            "rule": {"threshold": threshold, "hold": hold, "give_up_epoch": give_up_epoch,
                     "give_up_level": give_up_level},
            "outcome": outcome, "decided_at": at, "epochs_trained": trainer.epoch,
            "eval_epochs": eval_epochs, "test_acc": acc, "best_test_acc": max(acc),
            "final_train_acc": train_acc, "epoch_grokked": first, "seconds": seconds}


def grok_run_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`grok_run` with its arguments in one dict (``{"group": "Z23", "p": 0.35, "seed":
    3, "epochs": 3000, "K": 2048, "lr": 5e-4, "eta": 2e-4, "give_up_epoch": 1000}``): the
    point function of the sweep."""
    return grok_run(**point)
