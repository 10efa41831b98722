r"""Per-configuration train/test splits of a group task, as padded index sets.

The task has one sample per pair :math:`(h_1, h_2)`, numbered :math:`h_1 M + h_2` (the order of
:func:`numerics.li2.group_task.group_task` and of the third party's data set). Configuration ``b``
keeps :math:`n_b = M^2 - \lceil (1 - p_b) M^2\rceil` training pairs (scikit-learn's
``train_test_split(test_size = 1 - p)`` count, used by the author's code: :math:`p = 0.4`,
:math:`M = 71` gives :math:`n = 2016`): the first :math:`n_b` entries of
``torch.randperm(M^2)`` drawn from a CPU generator seeded with the configuration's data seed,
the rest are its test pairs. These are exactly the third party's sets (verify/claims/li2/SOURCES.md
§7.1); the
author's split (scikit-learn's shuffle) differs in which pairs, not in how many. Each set is
stored sorted by sample number (the loss is a sum over samples, so the order changes nothing
but rounding), which makes the rows :math:`h_1` of consecutive samples equal: the trainer's
gathers and scatter-adds over them then stay in cache.

Configurations with different :math:`p` have different :math:`n_b`: each set is padded to the
largest, padding rows carry weight 0 and point at sample 0.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from numerics.li2.group_task import GroupTask
from numerics.random import make_generator


def train_count(M: int, p: float) -> int:
    r""":math:`M^2 - \lceil (1-p) M^2\rceil`, scikit-learn's training count for
    ``test_size = 1 - p``; at least 2 (the sample centring needs two samples) and at most
    :math:`M^2 - 1` (a test set must remain)."""
    if not 0 < p < 1:
        raise ValueError(f"p: {p} must lie in (0, 1)")
    n = M * M - math.ceil((1 - p) * M * M)
    if not 2 <= n <= M * M - 1:
        raise ValueError(f"p: {p} keeps {n} of {M * M} pairs for training; need 2..{M * M - 1}")
    return n


@dataclass(frozen=True)
class SampleSet:
    r"""A padded batch of sample sets: ``index`` ``(B, m)`` into the :math:`M^2` pairs,
    ``weight`` ``(B, m)`` (1 for a real sample, 0 for padding), ``count`` ``(B,)`` (real
    samples per configuration), ``target`` ``(B, m)`` (labels :math:`h_1h_2`), and the flat
    row indices of :math:`\mathbf w_{h_1}` and :math:`\mathbf w_{M+h_2}` in the ``(B 2M, K)``
    view of the batched hidden weights (``rows_left``, ``rows_right``, each ``(B m,)``)."""

    index: torch.Tensor
    weight: torch.Tensor
    count: torch.Tensor
    target: torch.Tensor
    rows_left: torch.Tensor
    rows_right: torch.Tensor

    @property
    def size(self) -> int:
        return self.index.shape[1]

    @property
    def padded(self) -> bool:
        return bool((self.count < self.size).any())


def _sample_set(task: GroupTask, chosen: Sequence[torch.Tensor], dtype: torch.dtype
                ) -> SampleSet:
    B, M, dev = len(chosen), task.M, task.device
    m = max(len(c) for c in chosen)
    index = torch.zeros(B, m, dtype=torch.long)
    weight = torch.zeros(B, m, dtype=dtype)
    for b, c in enumerate(chosen):
        index[b, :len(c)] = c
        weight[b, :len(c)] = 1
    index, weight = index.to(dev), weight.to(dev)
    offset = (2 * M * torch.arange(B, device=dev))[:, None]
    return SampleSet(
        index=index, weight=weight,
        count=torch.tensor([len(c) for c in chosen], dtype=dtype, device=dev),
        target=task.target[index],
        rows_left=(offset + task.left[index]).reshape(-1),
        rows_right=(offset + M + task.right[index]).reshape(-1))


def random_splits(task: GroupTask, ratios: Sequence[float], data_seeds: Sequence[int],
                  dtype: torch.dtype) -> tuple[SampleSet, SampleSet]:
    """Train and test sets for each configuration (see the module docstring)."""
    if not task.full:
        raise ValueError("task: needs all M^2 pairs (group_task(table) with ratio 1)")
    if len(ratios) != len(data_seeds):
        raise ValueError(f"ratios, data_seeds: lengths {len(ratios)} and {len(data_seeds)} "
                         f"differ")
    train, test = [], []
    for p, s in zip(ratios, data_seeds):
        n = train_count(task.M, p)
        perm = torch.randperm(task.M * task.M, generator=make_generator(int(s)))
        train.append(perm[:n].sort().values)
        test.append(perm[n:].sort().values)
    return _sample_set(task, train, dtype), _sample_set(task, test, dtype)
