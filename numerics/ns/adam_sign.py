r"""Adam and AdamW (``torch.optim``'s own implementations) against the Euler scheme of a drive
on the diagonal reparameterisation :math:`x = \prod_{i=1}^L w_i` of least squares
(``ns.adam-vs-signgf``; verify/claims/ns/SOURCES.md §4.0, §7 question 13).

* :class:`Problems`: ``S`` independent regressions :math:`f_s(x) = \tfrac1{2N}\|A_sx -
  y_s\|^2` (the default problem of SOURCES §4.0 per seed), with full-batch and minibatch
  gradients of :math:`F(W) = f(\prod_iw_i)` with respect to the factors;
* :func:`adam_run`: ``torch.optim.Adam`` / ``AdamW`` on the stacked factors ``(S, L, d)``
  (Adam is elementwise, so one optimiser over the stack is ``S`` independent ones), recording
  :math:`x` every ``record_every`` steps;
* :func:`drive_run`: :math:`w \leftarrow w + \eta(\mathrm{drive}(\partial_wF) - \alpha w)`,
  the Euler scheme of :math:`\dot w = \mathrm{drive}(\partial_wF) - \alpha w` (for
  :math:`\mathrm{drive} = -\operatorname{sign}`, sign descent; its step -> 0 limit is SignGF).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.ns.steepest_flows import exclusive_products

Drive = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Problems:
    """``A`` ``(S, N, d)``, ``y`` ``(S, N)``; minibatches are the ``N // batch`` consecutive
    blocks of rows (a fixed partition, drawn uniformly at each step)."""

    A: torch.Tensor
    y: torch.Tensor

    def grad_x(self, x: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        r""":math:`\nabla f(x)` ``(S, d)`` on all rows, or on ``rows`` ``(S, b)`` (the
        minibatch mean)."""
        A, y = self.A, self.y
        if rows is not None:
            A = torch.gather(A, 1, rows[..., None].expand(-1, -1, A.shape[-1]))
            y = torch.gather(y, 1, rows)
        r = torch.einsum("snd,sd->sn", A, x) - y
        return torch.einsum("sn,snd->sd", r, A) / A.shape[1]

    def grad_w(self, W: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        r""":math:`\partial_{w_i}F = \nabla f(x)\odot\prod_{j\ne i}w_j` for ``W`` ``(S, L, d)``."""
        x = W.prod(1)
        return self.grad_x(x, rows)[:, None] * exclusive_products(W.transpose(0, 1)
                                                                  ).transpose(0, 1)

    def batches(self, batch: int) -> torch.Tensor:
        """The partition's blocks of rows ``(N // batch, batch)``."""
        N = self.A.shape[1]
        if not (1 <= batch <= N and N % batch == 0):
            raise ValueError(f"batch: {batch} must divide N = {N}")
        return torch.arange(N).reshape(N // batch, batch)


def default_problems(generator: torch.Generator, seeds: int, *, N: int = 10, d: int = 20,
                     x_star: tuple[float, ...] = (1.0, -0.7, 0.5)) -> Problems:
    r""":math:`A_{s,kl} \sim \mathcal N(0, 1/d)`, :math:`y_s = A_sx^\star` (SOURCES §4.0)."""
    A = torch.randn(seeds, N, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    xs = torch.zeros(d, dtype=torch.float64)
    xs[: len(x_star)] = torch.tensor(x_star, dtype=torch.float64)
    return Problems(A, A @ xs)


def _check_schedule(lr: float, steps: int, record_every: int) -> None:
    if not (lr > 0 and steps >= 1 and record_every >= 1 and steps % record_every == 0):
        raise ValueError(f"lr, steps, record_every: {lr}, {steps}, {record_every} need lr > 0 "
                         f"and record_every dividing steps")


def adam_run(problems: Problems, W0: torch.Tensor, *, lr: float, steps: int,
             betas: tuple[float, float], eps: float, decay: float = 0.0,
             decoupled: bool = False, batch: int | None = None,
             generator: torch.Generator | None = None, record_every: int = 1
             ) -> torch.Tensor:
    r""":math:`x` ``(records + 1, S, d)`` along ``torch.optim.Adam`` (coupled L2 ``decay``)
    or ``AdamW`` (``decoupled``) from ``W0`` ``(S, L, d)``; ``batch``: minibatch size (None:
    full batch), one block of the partition per step and seed, drawn from ``generator``."""
    _check_schedule(lr, steps, record_every)
    W = W0.clone().requires_grad_(False)
    param = torch.nn.Parameter(W)
    kind = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = kind([param], lr=lr, betas=tuple(float(b) for b in betas), eps=eps,
               weight_decay=decay, foreach=False)
    blocks = None if batch is None else problems.batches(batch)
    S = W0.shape[0]
    out = [param.detach().prod(1).clone()]
    for k in range(steps):
        rows = None
        if blocks is not None:
            pick = torch.randint(blocks.shape[0], (S,), generator=generator)
            rows = blocks[pick]
        param.grad = problems.grad_w(param.detach(), rows)
        opt.step()
        if (k + 1) % record_every == 0:
            out.append(param.detach().prod(1).clone())
    return torch.stack(out)


def drive_run(problems: Problems, W0: torch.Tensor, drive: Drive, *, lr: float, steps: int,
              decay: float = 0.0, record_every: int = 1) -> torch.Tensor:
    r""":math:`x` ``(records + 1, S, d)`` along :math:`w \leftarrow w + \eta(\mathrm{drive}
    (\partial_wF) - \alpha w)` (full batch; ``decay`` :math:`\alpha` decoupled)."""
    _check_schedule(lr, steps, record_every)
    W = W0.clone()
    out = [W.prod(1)]
    for k in range(steps):
        W = W + lr * (drive(problems.grad_w(W)) - decay * W)
        if (k + 1) % record_every == 0:
            out.append(W.prod(1))
    return torch.stack(out)
