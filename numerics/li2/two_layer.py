r"""Li2's two-layer model pieces in torch: centring, the loss J of Eq. 1, and its gradients."""
from __future__ import annotations

import torch


def center(a: torch.Tensor) -> torch.Tensor:
    r""":math:`P_1^\perp A`: subtract the mean over samples (dimension -2)."""
    return a - a.mean(dim=-2, keepdim=True)


def loss(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor, eta: float = 0.0) -> torch.Tensor:
    r""":math:`J = \tfrac12\|P_1^\perp(Y - FV)\|_F^2 + \tfrac\eta2\|V\|_F^2` (Eq. 1), batched
    over any leading dimensions (one value per batch entry)."""
    residual = center(Y - F @ V)
    return 0.5 * residual.square().sum((-2, -1)) + 0.5 * eta * V.square().sum((-2, -1))


def backprop_gradient(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor,
                      eta: float = 0.0) -> torch.Tensor:
    """:math:`-\\partial J/\\partial F` by autograd (no closed form used)."""
    F = F.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(F, V, Y, eta).sum(), F)
    return -g


def one_hot_labels(n: int, M: int, generator: torch.Generator, *,
                   device: torch.device | str = "cpu",
                   dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``n x M`` one-hot rows with labels drawn uniformly from ``generator``."""
    labels = torch.randint(0, M, (n,), generator=generator)
    return torch.nn.functional.one_hot(labels, M).to(device=device, dtype=dtype)
