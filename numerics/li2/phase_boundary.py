r"""The memorisation/generalisation boundary of the two-layer network (Li2 Fig. 5, Thm. 4):
test accuracy against the training ratio :math:`p` for one group over seeds, and the ratio
at which the network starts to generalise.

:func:`phase_point` is a point function: its arguments and its result are plain JSON data (a
group *name*, lists of ratios and seeds, numbers and strings), so a sweep can dispatch it to
another process or machine. It trains every (ratio, seed) configuration in one batch with
:class:`numerics.li2.trainer.GroupTrainer`. For one seed the training sets at different
ratios are nested (the trainer takes the first :math:`n` pairs of one seeded permutation), so
a seed's outcome is close to monotone in :math:`p`.

Thresholds.

* ``p_star``: the ratio at which half the seeds reach test accuracy 0.99 within the budget,
  linearly interpolated between the grid ratios around the first crossing of 1/2
  (:func:`crossing`);
* per seed: the geometric midpoint between the largest ratio at which the seed fails and the
  smallest ratio from which it succeeds at every larger ratio of the grid
  (:func:`seed_thresholds`).

Group names (no sympy here): ``Z<n>``, ``D<n>`` (order ``2n``) and direct products joined by
``x`` (``Z2xZ2xZ9``), with the element order of :mod:`theory.groups.constructors`.
"""
from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import torch

from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec

GROKKED = 0.99

_FACTOR = re.compile(r"^(Z|D)(\d+)$")


def _cyclic(n: int) -> torch.Tensor:
    a = torch.arange(n)
    return (a[:, None] + a[None, :]) % n


def _dihedral(n: int) -> torch.Tensor:
    """Element ``k + n j`` is :math:`r^ks^j`; :math:`r^{k_1}s^{j_1}r^{k_2}s^{j_2}=
    r^{k_1\\pm k_2}s^{j_1+j_2}` (minus when :math:`j_1=1`)."""
    a = torch.arange(2 * n)
    k, j = a % n, a // n
    sign = 1 - 2 * j[:, None]
    return (k[:, None] + sign * k[None, :]) % n + n * (j[:, None] ^ j[None, :])


def _product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Mixed-radix index ``a * |right| + b``, first factor slowest."""
    m, r = left.shape[0], right.shape[0]
    a, b = torch.arange(m * r) // r, torch.arange(m * r) % r
    return left[a[:, None], a[None, :]] * r + right[b[:, None], b[None, :]]


def group_table(name: str) -> torch.Tensor:
    """The Cayley table (``M x M`` long) of ``Z<n>``, ``D<n>`` or a product such as
    ``Z4xZ7``; a ValueError names anything else."""
    table = None
    for part in name.split("x"):
        m = _FACTOR.match(part)
        if not m or int(m.group(2)) < 1:
            raise ValueError(f"group: {name!r} must be Z<n>, D<n> (n >= 1) or a product of them "
                             f"joined by 'x'")
        n = int(m.group(2))
        factor = _cyclic(n) if m.group(1) == "Z" else _dihedral(n)
        table = factor if table is None else _product(table, factor)
    return table


def crossing(ratios: Sequence[float], fractions: Sequence[float], level: float = 0.5
             ) -> tuple[float | None, str]:
    """The ratio at which ``fractions`` (ascending ``ratios``) first reaches ``level``,
    linearly interpolated from the grid point before; ``(None, "below grid")`` when the first
    point is already at ``level``, ``(None, "above grid")`` when no point reaches it."""
    if len(ratios) != len(fractions) or len(ratios) < 2:
        raise ValueError("ratios, fractions: need the same length >= 2")
    if any(b <= a for a, b in pairwise(ratios)):
        raise ValueError(f"ratios: {list(ratios)} must increase strictly")
    for i, f in enumerate(fractions):
        if f >= level:
            if i == 0:
                return None, "below grid"
            f0, p0, p1 = fractions[i - 1], ratios[i - 1], ratios[i]
            return p0 + (level - f0) / (f - f0) * (p1 - p0), "bracketed"
    return None, "above grid"


def seed_thresholds(ratios: Sequence[float], success: Sequence[Sequence[bool]]
                    ) -> list[tuple[float | None, str]]:
    """Per seed (columns of ``success``, rows follow ``ratios``): the geometric midpoint of
    the last failing ratio and the first ratio from which the seed succeeds at every larger
    ratio; ``(None, "below grid")`` / ``(None, "above grid")`` when it succeeds everywhere /
    not at the largest ratio."""
    out = []
    for s in range(len(success[0])):
        column = [bool(row[s]) for row in success]
        if not column[-1]:
            out.append((None, "above grid"))
            continue
        first = len(column) - 1
        while first > 0 and column[first - 1]:
            first -= 1
        out.append((None, "below grid") if first == 0 else
                   (math.sqrt(ratios[first - 1] * ratios[first]), "bracketed"))
    return out


def phase_point(group: str, p_values: Sequence[float], seeds: Sequence[int], epochs: int, *,
                K: int, lr: float, eta: float, loss: str = "mse_class", activation: str = "x2",
                optimizer: str = "adam", eval_every: int = 10, device: str = "cpu",
                dtype: str = "float64") -> dict[str, Any]:
    r"""Train every (ratio, seed) pair of ``group`` for ``epochs`` full-batch steps and report
    the test accuracy against :math:`p` and the thresholds (module docstring).

    ``eta`` is the optimiser's weight decay (the author's code's ``weight_decay``); the
    network, losses and initialisation are :mod:`numerics.li2.trainer`'s. A seed *groks* at
    a ratio when its test accuracy reaches 0.99 at some evaluated epoch (every
    ``eval_every`` epochs and the last). Returns JSON data: the arguments, per ratio and seed
    the final and best test accuracy, the final training accuracy and the first epoch at
    0.99 (None: never), the fraction of seeds that grok per ratio, ``p_star`` and its status,
    the per-seed thresholds and the wall time.
    """
    p_values = [float(p) for p in p_values]
    if len(p_values) < 2 or any(b <= a for a, b in pairwise(p_values)):
        raise ValueError(f"p_values: {p_values} must be >= 2 increasing ratios")
    if not seeds:
        raise ValueError("seeds: needs at least one seed")
    if epochs < 1:
        raise ValueError(f"epochs: {epochs} must be >= 1")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype: {dtype!r} is not one of float32, float64")
    table = group_table(group)
    hyper = Hyper.grid(p=p_values, seed=[int(s) for s in seeds], eta=[float(eta)],
                       lr=[float(lr)])
    config = TrainConfig(K=K, activation=activation, loss=loss,
                         optimizer=OptimizerSpec(name=optimizer), eval_every=eval_every,
                         diag_every=epochs + 1, diagnostics=())
    start = time.perf_counter()
    trainer = GroupTrainer(table, hyper, config, device=device, dtype=getattr(torch, dtype))
    history = trainer.train(epochs)
    seconds = time.perf_counter() - start
    P, S = len(p_values), len(seeds)
    eval_epochs, test_acc = history.series("test_acc")
    _, train_acc = history.series("train_acc")
    if not (torch.isfinite(test_acc).all() and torch.isfinite(train_acc).all()):
        raise FloatingPointError(f"{group}: training produced NaN/Inf accuracies")
    hit = test_acc >= GROKKED
    first = torch.where(hit.any(0), eval_epochs[hit.double().argmax(0)].double(),
                        torch.full((P * S,), math.nan, dtype=torch.float64))
    grid = {
        "final_test_acc": test_acc[-1], "best_test_acc": test_acc.max(0).values,
        "final_train_acc": train_acc[-1], "epoch_grokked": first}
    grid = {k: v.reshape(P, S).tolist() for k, v in grid.items()}
    grid["epoch_grokked"] = [[None if math.isnan(x) else int(x) for x in row]
                             for row in grid["epoch_grokked"]]
    success = [[b >= GROKKED for b in row] for row in grid["best_test_acc"]]
    fractions = [sum(row) / S for row in success]
    p_star, status = crossing(p_values, fractions)
    return {
        "group": group, "M": int(table.shape[0]), "p_values": p_values,
        "seeds": [int(s) for s in seeds], "epochs": epochs,
        "config": {"K": K, "lr": lr, "eta": eta, "loss": loss, "activation": activation,
                   "optimizer": optimizer, "eval_every": eval_every, "dtype": dtype,
                   "device": device},
        **grid, "grok_fraction": fractions, "p_star": p_star, "p_star_status": status,
        "seed_thresholds": [t for t, _ in seed_thresholds(p_values, success)],
        "seed_threshold_status": [s for _, s in seed_thresholds(p_values, success)],
        "seconds": seconds,
    }


def phase_sweep_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`phase_point` with its arguments in one dict: the one-argument point function
    :func:`verify.sweep.run_sweep` calls (``{"group": "Z23", "p_values": [...], "seeds":
    [...], "epochs": 400, "K": 64, "lr": 0.02, "eta": 3e-3}``)."""
    return phase_point(**point)
