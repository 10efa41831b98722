r"""Least squares with its own design matrix per batch entry: :math:`f_b(x) = \|A_b x -
y_b\|^2 / (2N)`, the batched problem of ``ns.thm4.2``'s Polyak-Lojasiewicz items (a wide
:math:`A_b` satisfies PL with constant :math:`s_{\min}(A_b)^2/N` without being strongly
convex). :class:`numerics.ns.steepest_flows.Regression` shares one :math:`A` over the batch.

>>> import torch
>>> p = EntrywiseRegression(torch.eye(2).expand(3, 2, 2), torch.ones(3, 2))
>>> p.loss(torch.ones(3, 2)).tolist(), p.grad(torch.zeros(3, 2))[0].tolist()
([0.0, 0.0, 0.0], [-0.5, -0.5])
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class EntrywiseRegression:
    r"""Per entry ``A`` ``(B, N, d)`` and ``y`` ``(B, N)``: :math:`f = \|Ax - y\|^2/(2N)`;
    ``x`` is ``(..., B, d)``."""

    A: torch.Tensor
    y: torch.Tensor

    def residual(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bnd,...bd->...bn", self.A, x) - self.y

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * (self.residual(x) ** 2).mean(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...bn,bnd->...bd", self.residual(x), self.A) / self.A.shape[1]
