r""":math:`G_F` along training of Li2's two-layer network: its alignment with
:math:`\tilde Y\tilde Y^\top\tilde F` (Prop. 1) and its spectrum over the irreps of the target
(Thm. 7), measured at checkpoints of a :class:`~numerics.li2.trainer.GroupTrainer` run.

Notation of :mod:`numerics.li2.training_diagnostics`: :math:`G_F=P_1^\perp(Y-\hat Y)V^\top`
(``backprop_gradient``), :math:`H=\tilde Y\tilde Y^\top\tilde F` (``label_direction``), both on
the real training samples.

* :func:`alignment`: :math:`\cos(G_F,H)` over all entries and :math:`\|G_F\|_F` (the
  ``coupling`` group's ``global_cos`` and the ``gradient`` group's ``gf_norm``, without the
  group's other, costlier per-node quantities);
* :func:`target_power`: per real isotypic component :math:`j` of the group, the power
  :math:`\|\Pi_j Y^\top G_F\|_F^2` of the class sums of :math:`G_F` (column :math:`\ell`, entry
  :math:`h`: :math:`\sum_{i:\,y_i=h}g_{i\ell}`). Thm. 7 writes :math:`G_F` through
  :math:`(\Phi_{\mathcal S}\otimes\mathbf 1_M)^\ast`, which takes exactly these class sums to
  their irrep coefficients, so this is the spectrum of :math:`G_F` the theorem speaks of
  (:math:`G_F` is centred over the samples, so :math:`\tilde Y^\top G_F=Y^\top G_F`);
* :func:`node_components`: the nontrivial real component holding the largest part of each
  node's :math:`\|\mathbf w_j\|^2` (both input blocks), the frequency a node has learned;
* :class:`Checkpointed`: a trainer's ``train`` that stops at given epochs and records a
  measurement of the training forward pass there; its history is the uninterrupted run's
  (checkpoints fall on logged test epochs, so no extra evaluation is recorded).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from numerics.li2.trainer import GroupTrainer, History
from numerics.li2.training_diagnostics import Snapshot, backprop_gradient, label_direction


def alignment(s: Snapshot) -> dict[str, torch.Tensor]:
    r"""``global_cos`` :math:`=\cos(G_F,\tilde Y\tilde Y^\top\tilde F)` and ``gf_norm``
    :math:`=\|G_F\|_F` per configuration (``(B,)`` each)."""
    G, H = backprop_gradient(s), label_direction(s)
    norm = torch.linalg.vector_norm(G, dim=(-2, -1))
    cos = (G * H).sum((-2, -1)) / (norm * torch.linalg.vector_norm(H, dim=(-2, -1)))
    return {"global_cos": cos, "gf_norm": norm}


def target_power(s: Snapshot, projectors: torch.Tensor) -> torch.Tensor:
    r""":math:`\|\Pi_j Y^\top G_F\|_F^2` per configuration and real component ``j``
    (``projectors``: ``(J, M, M)`` real isotypic projectors on functions of the group; out
    ``(B, J)``)."""
    sums = s.Y @ backprop_gradient(s)                       # (B, M, K): class sums
    P = projectors.to(device=sums.device, dtype=sums.dtype)
    return torch.einsum("jab,nbk->njak", P, sums).square().sum((-2, -1))


def node_components(W: torch.Tensor, projectors: torch.Tensor) -> torch.Tensor:
    r"""Per node, the nontrivial real component (index ``>= 1``) with the largest share of
    :math:`\|\Pi_j\mathbf u\|^2+\|\Pi_j\mathbf v\|^2` for :math:`\mathbf w=[\mathbf u;\mathbf v]`
    (``W``: ``(B, 2M, K)``; out ``(B, K)``). Thm. 3's nodes :math:`[\mathbf u;\pm P\mathbf u']`
    lie in one component on both blocks (``P`` keeps each real component)."""
    M = W.shape[1] // 2
    P = projectors.to(device=W.device, dtype=W.dtype)
    mass = (torch.einsum("jab,nbk->njak", P, W[:, :M]).square().sum(2)
            + torch.einsum("jab,nbk->njak", P, W[:, M:]).square().sum(2))
    return mass[:, 1:].argmax(1) + 1


def counts(components: torch.Tensor, J: int) -> torch.Tensor:
    """Nodes per component (``(B, K)`` labels in, ``(B, J)`` counts out)."""
    return torch.nn.functional.one_hot(components, J).sum(1)


class Checkpointed:
    """``train`` of ``trainer`` that stops at each epoch of ``checkpoints`` it crosses and
    records ``measure`` of the training forward pass at the weights there (into
    :attr:`records`, on the CPU, with :attr:`epochs`). Checkpoints must be multiples of the
    trainer's ``eval_every``: a call ends by recording its last epoch, which the uninterrupted
    run logs as well only on those epochs."""

    def __init__(self, trainer: GroupTrainer, checkpoints: Iterable[int],
                 measure: Callable[[Snapshot], dict[str, torch.Tensor]]) -> None:
        self.checkpoints = sorted(set(checkpoints))
        every = trainer.config.eval_every
        if any(c < 0 or c % every for c in self.checkpoints):
            raise ValueError(f"checkpoints: need multiples of eval_every = {every} that are "
                             f">= 0, got {self.checkpoints}")
        self.trainer, self.measure = trainer, measure
        self.epochs: list[int] = []
        self.records: dict[str, list[torch.Tensor]] = {}
        if 0 in self.checkpoints and trainer.epoch == 0:
            self._record()

    def _record(self) -> None:
        self.epochs.append(self.trainer.epoch)
        for name, value in self.measure(self.trainer.forward_snapshot()).items():
            self.records.setdefault(name, []).append(value.detach().cpu())

    def train(self, epochs: int) -> History:
        end = self.trainer.epoch + epochs
        for c in self.checkpoints:
            if self.trainer.epoch < c <= end:
                self.trainer.train(c - self.trainer.epoch)
                self._record()
        if self.trainer.epoch < end:
            self.trainer.train(end - self.trainer.epoch)
        return self.trainer.history

    def series(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The checkpoint epochs and the recorded values (``(C, ...)``)."""
        return torch.tensor(self.epochs), torch.stack(self.records[name])


def checkpoint_epochs(every: int, window: int, late_every: int, budget: int) -> list[int]:
    """Every ``every`` epochs up to ``window``, then every ``late_every`` up to ``budget``."""
    return sorted(set(range(0, window + 1, every)) | set(range(0, budget + 1, late_every)))


def rank_correlation(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Spearman's rank correlation along the last axis (average ranks for ties; ``nan``
    where one side is constant)."""
    def ranks(a: torch.Tensor) -> torch.Tensor:
        a = a.double()
        less = (a[..., None, :] < a[..., :, None]).double().sum(-1)
        equal = (a[..., None, :] == a[..., :, None]).double().sum(-1)
        return less + (equal + 1) / 2
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(-1, keepdim=True), ry - ry.mean(-1, keepdim=True)
    return (rx * ry).sum(-1) / (rx.norm(dim=-1) * ry.norm(dim=-1))


def first_run_above(epochs: Sequence[int], values: torch.Tensor, level: float
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per column of ``values`` (``(C, B)`` at ``epochs``): the first logged epoch above
    ``level`` and the first logged epoch after it back at or below ``level`` (``nan`` where
    there is none); their difference is how long the first stay above ``level`` lasted, to
    the logging resolution."""
    e = torch.as_tensor(list(epochs), dtype=torch.float64)
    above = values > level
    start = torch.full((values.shape[1],), float("nan"), dtype=torch.float64)
    stop = start.clone()
    for b in range(values.shape[1]):
        idx = above[:, b].nonzero().flatten()
        if len(idx):
            start[b] = e[idx[0]]
            after = (~above[idx[0]:, b]).nonzero().flatten()
            if len(after):
                stop[b] = e[idx[0] + after[0]]
    return start, stop
