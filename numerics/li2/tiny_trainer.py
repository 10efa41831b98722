r"""A small full-batch trainer for Li2's two-layer network on modular addition
:math:`\mathbb Z_M` (§2.1, §4.2), for checks that need the hidden features of a trained net.

Model: :math:`\hat Y = \sigma(XW)V` with :math:`\sigma(x) = x^2`, input
:math:`\mathbf x_i = [\mathbf e_{a_i}; \mathbf e_{b_i}]`, so :math:`X W` is the gather
:math:`W_{a_i} + W_{M + b_i}` (no one-hot matrix is formed); target
:math:`\mathbf e_{(a_i+b_i)\bmod M}`.
Objective: :func:`numerics.li2.two_layer.loss` (Eq. 1, sample centring,
:math:`\tfrac\eta2\|V\|_F^2`) plus :math:`\tfrac\eta2\|W\|_F^2` (the paper puts weight decay on
both layers). Optimiser: Adam or plain gradient descent, full batch, a fixed number of steps.
All draws come from the ``generator`` passed in.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from numerics.errors import Diverged
from numerics.random import randn
from numerics.li2.two_layer import loss

OPTIMIZERS = ("adam", "gd")


@dataclass(frozen=True)
class TrainedNet:
    """Weights after training, the training set, and the objective at every step."""

    M: int
    W: torch.Tensor         # (2M, K) hidden weights
    V: torch.Tensor         # (K, M) top-layer weights
    operands: torch.Tensor  # (n, 2) pairs (a, b) in Z_M
    losses: torch.Tensor    # (steps,) objective before each step
    snapshots: dict[int, torch.Tensor] = field(default_factory=dict)  # step -> W after it

    def features_at(self, step: int) -> torch.Tensor:
        r""":math:`\sigma(XW)` on the training set with :math:`W` after ``step`` updates (a
        step passed in ``checkpoints``)."""
        return hidden_features(self.snapshots[step], self.operands, self.M)

    def labels(self) -> torch.Tensor:
        r"""The targets :math:`(a_i+b_i)\bmod M` of the training set."""
        return self.operands.sum(1) % self.M

    def features(self) -> torch.Tensor:
        r"""Hidden activations :math:`F = \sigma(XW)` on the training set, ``n x K``."""
        return hidden_features(self.W, self.operands, self.M)


def modular_addition_data(M: int, fraction: float, generator: torch.Generator
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""A random ``fraction`` of the :math:`M^2` pairs :math:`(a, b)` (at least one) and their
    labels :math:`(a + b) \bmod M`."""
    if M < 2:
        raise ValueError(f"M: {M} must be >= 2")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: {fraction} must lie in (0, 1]")
    n = max(1, round(fraction * M * M))
    chosen = torch.randperm(M * M, generator=generator)[:n].sort().values
    operands = torch.stack([chosen // M, chosen % M], dim=1)
    return operands, operands.sum(1) % M


def hidden_features(W: torch.Tensor, operands: torch.Tensor, M: int) -> torch.Tensor:
    r""":math:`F_{ij} = (W_{a_i j} + W_{M + b_i, j})^2`, i.e. :math:`\sigma(XW)` by gathers."""
    return (W[operands[:, 0]] + W[M + operands[:, 1]]).square()


class _GradientDescent:
    r"""Plain gradient descent, :math:`\theta \leftarrow \theta - \text{lr}\,g`."""

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def __call__(self, params: list[torch.Tensor], grads: tuple[torch.Tensor, ...]) -> None:
        for p, g in zip(params, grads):
            p.add_(g, alpha=-self.lr)


class _Adam:
    r"""Adam (Kingma & Ba), :math:`\beta = (0.9, 0.999)`, :math:`\epsilon = 10^{-8}`, in the
    operation order of ``torch.optim.Adam``'s single-tensor CPU path (same numbers), written
    out because ``torch.optim``'s ``step`` imports ``torch._dynamo`` on first use (~2 s)."""

    def __init__(self, params: list[torch.Tensor], lr: float, betas: tuple[float, float] =
                 (0.9, 0.999), eps: float = 1e-8) -> None:
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.steps = 0

    def __call__(self, params: list[torch.Tensor], grads: tuple[torch.Tensor, ...]) -> None:
        self.steps += 1
        correction1 = 1 - self.beta1**self.steps
        correction2_sqrt = (1 - self.beta2**self.steps) ** 0.5
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m.lerp_(g, 1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            denom = (v.sqrt() / correction2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / correction1)


def train_two_layer(
    M: int,
    K: int,
    *,
    steps: int,
    lr: float,
    eta: float,
    generator: torch.Generator,
    fraction: float = 1.0,
    optimizer: str = "adam",
    init_w: float = 1.0,
    init_v: float = 0.01,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float64,
    checkpoints: Sequence[int] = (),
) -> TrainedNet:
    r"""Train :math:`\hat Y = \sigma(XW)V` on :math:`\mathbb Z_M` addition, full batch.

    Initialisation: :math:`W_{ij} \sim \mathcal N(0, \text{init\_w}^2/(2M))`,
    :math:`V_{ij} \sim \mathcal N(0, \text{init\_v}^2)` (the paper's small top-layer scale
    :math:`\alpha`). Raises :class:`numerics.errors.Diverged` if the objective becomes NaN/Inf.
    ``checkpoints``: steps in ``[0, steps]`` at which :math:`W` is kept (0: the
    initialisation); the trajectory is the same with or without them.
    """
    if K < 1:
        raise ValueError(f"K: {K} must be >= 1")
    if steps < 1:
        raise ValueError(f"steps: {steps} must be >= 1")
    if not lr > 0:
        raise ValueError(f"lr: {lr} must be > 0")
    if not eta >= 0:
        raise ValueError(f"eta: {eta} must be >= 0")
    if any(not 0 <= c <= steps for c in checkpoints):
        raise ValueError(f"checkpoints: {list(checkpoints)} must lie in [0, steps={steps}]")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer: {optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
    operands, labels = modular_addition_data(M, fraction, generator)
    operands = operands.to(device)
    Y = torch.nn.functional.one_hot(labels, M).to(device=device, dtype=dtype)
    W = (randn(2 * M, K, generator=generator, device=device, dtype=dtype)
         * (init_w / (2 * M) ** 0.5)).requires_grad_(True)
    V = (randn(K, M, generator=generator, device=device, dtype=dtype)
         * init_v).requires_grad_(True)
    update = _Adam([W, V], lr) if optimizer == "adam" else _GradientDescent(lr)
    losses = torch.empty(steps, dtype=dtype)
    keep = set(checkpoints)
    snapshots = {}
    for step in range(steps):
        if step in keep:
            snapshots[step] = W.detach().clone()
        J = loss(hidden_features(W, operands, M), V, Y, eta) + 0.5 * eta * W.square().sum()
        if not torch.isfinite(J):
            raise Diverged(f"objective {J.item()} at step {step} (M={M}, K={K}, lr={lr})")
        grads = torch.autograd.grad(J, [W, V])
        with torch.no_grad():
            update([W, V], grads)
        losses[step] = J.detach()
    if steps in keep:
        snapshots[steps] = W.detach().clone()
    return TrainedNet(M=M, W=W.detach(), V=V.detach(), operands=operands, losses=losses,
                      snapshots=snapshots)
