r"""How far each node's gradient step is from the decoupled Stage-II step of Li2 Eq. 6, along
Adam training runs: the point function of ``li2.eq6``'s empirical part.

Node :math:`j`'s actual step is :math:`X^\top D_j\mathbf g_j` with :math:`\mathbf g_j` the
column of :math:`G_F=P_1^\perp(Y-\hat Y)V^\top` (Eq. 2) and :math:`D_j=\mathrm{diag}(\sigma'(X
\mathbf w_j))`; the decoupled step keeps :math:`\mathbf g_j\propto\tilde Y\tilde Y^\top\tilde
{\mathbf f}_j` (:func:`decoupled_direction`, :math:`\propto\nabla\mathcal E(\mathbf w_j)`). The
angle :math:`\theta_j` between the two steps measures the coupling term Eq. 6 drops: the part of
the step orthogonal to the kept one has relative size :math:`\tan\theta_j`.

:func:`stage2_angles_point` trains one seed with its weight decays on the batch axis (the
paper's loss, Adam) and returns, at every logged epoch, per-configuration summaries only: the
median angle over nodes, the fraction of nodes with :math:`\tan\theta_j<1`, the coupling
diagnostics of :mod:`numerics.li2.training_diagnostics` (medians over nodes), and the training
and test accuracies. The weights themselves (about 7M numbers per seed at the Fig. 3 size)
never leave the point, so ``verify.sweep.run_sweep`` can store it and run it on a Dask worker.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from numerics.activations import activation
from numerics.li2.sweep_points import _dtype, encode
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.li2.training_diagnostics import (
    Snapshot,
    backprop_gradient,
    coupling,
    input_transpose,
)


def decoupled_direction(Yt: torch.Tensor, Ft: torch.Tensor) -> torch.Tensor:
    r""":math:`\tilde Y\tilde Y^\top\tilde F` (``n x K``) as :math:`\tilde Y(\tilde Y^\top\tilde
    F)`: :math:`O(nMK)`, not the :math:`O(n^2K)` of the :math:`n\times n` product; column
    :math:`j` depends on node :math:`j` alone."""
    return Yt @ (Yt.mT @ Ft)


def node_step(s: Snapshot, G: torch.Tensor) -> torch.Tensor:
    r""":math:`X^\top D_j\mathbf g_j` for every node from the columns of ``G`` (``(B, m, K)``,
    0 on padding): :math:`D_j=\mathrm{diag}(\sigma'(X\mathbf w_j))` on the real samples."""
    D = activation(s.activation).derivative(s.pre) * s.train.weight[:, :, None]
    return input_transpose(s, D * G)


def actual_steps(trainer: GroupTrainer) -> dict[str, torch.Tensor]:
    r"""At the trainer's current weights: node :math:`j`'s actual step :math:`X^\top D_j
    \mathbf g_j` (``"step"``, ``(B, 2M, K)``) and the coupling group of
    :mod:`numerics.li2.training_diagnostics`."""
    s = trainer.forward_snapshot()
    return {"step": node_step(s, backprop_gradient(s)), **coupling(s)}


def node_cosines(trainer: GroupTrainer, actual: torch.Tensor) -> torch.Tensor:
    r"""Per configuration and node (``(B, K)``), :math:`\cos\theta_j` between the actual step
    ``actual`` (:func:`actual_steps` at the trainer's current weights) and the decoupled step
    :math:`X^\top D_j\tilde Y\tilde Y^\top\tilde{\mathbf f}_j`, the centring over each
    configuration's real samples."""
    s = trainer.forward_snapshot()
    S = s.train
    w = S.weight[:, :, None]
    Ft = (s.F - (s.F * w).sum(1, keepdim=True) / S.count[:, None, None]) * w
    Y = s.Y.mT
    Yt = (Y - (Y * w).sum(1, keepdim=True) / S.count[:, None, None]) * w
    kept = node_step(s, decoupled_direction(Yt, Ft))
    return (actual * kept).sum(1) / (torch.linalg.vector_norm(actual, dim=1)
                                     * torch.linalg.vector_norm(kept, dim=1))


def tangent_of(cos: torch.Tensor) -> torch.Tensor:
    r""":math:`\kappa=\tan\theta=\sqrt{1-\cos^2}/\cos`, infinite when :math:`\cos\le0` (the
    step does not ascend the node's own energy at all)."""
    c = cos.clamp(max=1.0)
    return torch.where(c > 0, (1 - c.square()).sqrt() / c, torch.full_like(c, math.inf))


def _summaries(trainer: GroupTrainer) -> dict[str, torch.Tensor]:
    st = actual_steps(trainer)
    cos = node_cosines(trainer, st["step"]).double()
    theta = torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))
    return {"median_theta": theta.median(-1).values,
            "fraction_tan_below_1": (tangent_of(cos) < 1).double().mean(-1),
            "median_node_cos": st["node_cos"].double().median(-1).values,
            "global_cos": st["global_cos"].double(), "scale_cv": st["scale_cv"].double(),
            "pair_cos": st["pair_cos"].double()}


def stage2_angles_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One ``seed`` on the group ``table`` with its weight decays ``etas`` on the batch axis
    (the paper's loss ``mse_sample``, :math:`\\sigma(x)=x^2`, Adam at ``lr``, training fraction
    ``p``, width ``K``), trained ``epochs`` epochs; every ``every`` epochs (and at 0) the
    summaries of :func:`_summaries` and the training and test accuracy, each ``(T, B)``;
    ``epochs`` the logged epochs."""
    hyper = Hyper.grid(seed=[point["seed"]], eta=list(point["etas"]), p=[point["p"]],
                       lr=[point["lr"]])
    every = point["every"]
    # the independence proxy on at most 256 nodes: K^2 pairs are not needed
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_sample", eval_every=every,
                         diag_every=every, diagnostics=(), gram_nodes=256)
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    epochs, rows = [0], [_summaries(trainer)]
    while trainer.epoch < point["epochs"]:
        trainer.train(every, record_last=False)
        epochs.append(trainer.epoch)
        rows.append(_summaries(trainer))
    trainer.train(0)
    _, train_acc = trainer.history.series("train_acc")
    _, test_acc = trainer.history.series("test_acc")
    out = {k: encode(torch.stack([r[k] for r in rows]).cpu()) for k in rows[0]}
    return {"epochs": epochs, "train_acc": encode(train_acc[epochs]),
            "test_acc": encode(test_acc), **out}
