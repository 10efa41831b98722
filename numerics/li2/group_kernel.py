r"""Random first-layer features on the one-hot group task and their Gram restricted to the
kernel's eigenspaces (Lemma 1's input geometry; the exact spectrum is in
:mod:`theory.li2.kernel_gram`).

For width :math:`K`, :math:`F=\sigma(XW^\top)` (``n x K``, :math:`W_{kj}\sim\mathcal N(0,1)`);
on the grid :math:`(a,b)` a feature column :math:`\mathbf f` splits into its mean, its
*marginal* part (row and column means minus the mean) and its *interaction* part
:math:`f_{ab}-\bar f_{a\cdot}-\bar f_{\cdot b}+\bar f`, the three eigenspaces of the
infinite-width kernel Gram. The average eigenvalue of :math:`FF^\top/K` on a space of
dimension :math:`m` with projector :math:`\Pi` is :math:`\tfrac1K\sum_k\|\Pi\mathbf f_k\|^2/m`,
a mean of :math:`K` i.i.d. terms (one per neuron), so its standard error comes from their
spread (:func:`eigenspace_means`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.activations import Activation
from numerics.li2.group_task import GroupTask, first_layer


def features(task: GroupTask, K: int, act: Activation, generator: torch.Generator,
             dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r""":math:`\sigma(\mathbf w_k^\top\mathbf x_i)` for ``K`` Gaussian rows :math:`\mathbf w_k`
    (drawn on the CPU from ``generator``): ``(K, n)``, one row per neuron."""
    if K < 1:
        raise ValueError(f"K: {K} must be >= 1")
    W = torch.randn(K, 2 * task.M, generator=generator, dtype=torch.float64)
    return act(first_layer(W.to(device=task.device, dtype=dtype), task))


def grid_parts(f: torch.Tensor, task: GroupTask) -> dict[str, torch.Tensor]:
    r"""Squared norms of each row of ``f`` (``(K, n)``, full task) in the constant, marginal and
    interaction spaces (``(K,)`` each); they add up to :math:`\|\mathbf f\|^2`."""
    if not task.full:
        raise ValueError("grid_parts: needs the full task (every pair (a, b) once)")
    M = task.M
    G = f.new_zeros(f.shape[0], M * M).index_copy_(1, task.left * M + task.right, f)
    G = G.view(-1, M, M)
    mean = G.mean((1, 2), keepdim=True)
    rows, cols = G.mean(2, keepdim=True) - mean, G.mean(1, keepdim=True) - mean
    return {"constant": M * M * mean.flatten().square(),
            "marginal": M * (rows.square().sum((1, 2)) + cols.square().sum((1, 2))),
            "interaction": (G - rows - cols - mean).square().sum((1, 2))}


@dataclass(frozen=True)
class EigenspaceMean:
    """The average eigenvalue of :math:`FF^\\top/K` on one eigenspace and its standard error
    over the ``K`` neurons."""

    mean: float
    standard_error: float


def eigenspace_means(f: torch.Tensor, task: GroupTask) -> dict[str, EigenspaceMean]:
    """:class:`EigenspaceMean` on each space of :func:`grid_parts` (dimensions 1,
    ``2(M-1)``, ``(M-1)^2``)."""
    M, K = task.M, f.shape[0]
    dims = {"constant": 1, "marginal": 2 * (M - 1), "interaction": (M - 1) ** 2}
    out = {}
    for name, part in grid_parts(f, task).items():
        x = part / dims[name]
        se = float(x.std()) / K**0.5 if K > 1 else float("inf")
        out[name] = EigenspaceMean(float(x.mean()), se)
    return out


def centred_gram_spread(f: torch.Tensor) -> float:
    r"""Largest over smallest nonzero eigenvalue of the centred Gram
    :math:`P_1^\perp FF^\top P_1^\perp/K` (``f``: ``(K, n)``); eigenvalues below
    :math:`\sqrt u` of the largest count as zero (the centring's null direction)."""
    c = f - f.mean(1, keepdim=True)
    values = torch.linalg.eigvalsh(c.T @ c / f.shape[0])
    keep = values[values > torch.finfo(f.dtype).eps ** 0.5 * values.max()]
    return float(keep.max() / keep.min())
