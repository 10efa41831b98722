r"""A single-head attention layer's key-query product :math:`W = QK^\top` (:math:`Q = W_Q`,
:math:`K = W_K`, :math:`d\times r`) trained by the steepest flows of Never Saddle
(``ns.x.attention-kq``; verify/claims/ns/SOURCES.md §4.18, §7): a CPU-sized synthetic task with a
planted target bilinear form.

* :class:`AttentionTasks`: per seed, ``N`` sequences of ``n`` tokens :math:`x_i\in\mathbb R^d`
  and the planted attention pattern :math:`P^\star_{ij} = \operatorname{softmax}_j(x_i^\top
  W^\star x_j)`; the loss :math:`f(W) = \tfrac1{Nn}\sum_{\text{seq}}\sum_i
  \operatorname{KL}(P^\star_{i\cdot}\,\|\,\operatorname{softmax}_j(x_i^\top Wx_j))` (zero at
  :math:`W^\star`) and its gradient :math:`\nabla f(W) = \tfrac1{Nn}\sum X^\top(P - P^\star)X`.
* :class:`KeyQueryFlow`: the field :math:`\dot Q = -\psi_q(\nabla f(W)K)`, :math:`\dot K =
  -\psi_q(\nabla f(W)^\top Q)` on the state ``(S, 2, d, r)`` (:math:`\psi_2` the identity: GD's
  flow; :math:`\psi_1 = \operatorname{sign}`: sign descent's); ``diagonal`` keeps only the
  diagonals (:math:`Q = \operatorname{diag}(u)`, :math:`K = \operatorname{diag}(v)`, Never
  Saddle's :math:`u\odot v`). Explicit Euler on it (:func:`numerics.integrators.integrate`) is
  GD, resp. sign descent, with learning rate ``dt``.
* :func:`autograd_saddle`: :math:`\nabla f(0)` and the Hessian of :math:`F(Q, K) = f(QK^\top)`
  at the origin by automatic differentiation of the loss (not of the hand gradient).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.ns.steepest_flows import odd_power
from numerics.random import make_generator


@dataclass(frozen=True)
class AttentionTasks:
    r"""``S`` tasks: tokens ``X`` ``(S, N, n, d)``, planted ``W_star`` ``(S, d, d)`` and its
    attention pattern ``P_star`` ``(S, N, n, n)``."""

    X: torch.Tensor
    W_star: torch.Tensor
    P_star: torch.Tensor

    def tiled(self, k: int) -> AttentionTasks:
        """The ``S`` tasks repeated ``k`` times along the task axis (runs from ``k`` starts
        in one batch)."""
        return AttentionTasks(self.X.repeat(k, 1, 1, 1), self.W_star.repeat(k, 1, 1),
                              self.P_star.repeat(k, 1, 1, 1))

    def logits(self, W: torch.Tensor) -> torch.Tensor:
        r""":math:`x_i^\top Wx_j` per task and sequence, ``W`` ``(..., S, d, d)``."""
        return self.X @ W.unsqueeze(-3) @ self.X.transpose(-1, -2)

    def loss(self, W: torch.Tensor) -> torch.Tensor:
        r""":math:`f(W)` per task ``(..., S)``: the mean over sequences and queries of
        :math:`\operatorname{KL}(P^\star_{i\cdot}\|P_{i\cdot})`."""
        log_p = torch.log_softmax(self.logits(W), -1)
        kl = (self.P_star * (torch.log(self.P_star) - log_p)).sum(-1)
        return kl.mean((-2, -1))

    def grad(self, W: torch.Tensor) -> torch.Tensor:
        r""":math:`\nabla f(W) = \tfrac1{Nn}\sum X^\top(P - P^\star)X` ``(S, d, d)``."""
        R = torch.softmax(self.logits(W), -1) - self.P_star
        N, n = self.X.shape[1:3]
        return (self.X.transpose(-1, -2) @ R @ self.X).sum(-3) / (N * n)


def make_tasks(seeds: list[int], *, N: int, n: int, d: int, singular: list[float],
               dtype: torch.dtype = torch.float64) -> AttentionTasks:
    r"""Per seed: tokens :math:`x\sim\mathcal N(0, I_d/d)` and :math:`W^\star =
    d\,U\operatorname{diag}(\text{singular})V^\top` with Haar-random orthonormal columns (rank
    ``len(singular)``), so the target logits :math:`x_i^\top W^\star x_j` are of order the
    singular values whatever ``d``."""
    k = len(singular)
    if not 1 <= k <= d:
        raise ValueError(f"singular: {k} values for d = {d}; need 1 <= rank <= d")
    Xs, Ws = [], []
    for seed in seeds:
        gen = make_generator(seed)
        Xs.append(torch.randn(N, n, d, generator=gen, dtype=torch.float64) / math.sqrt(d))
        U = torch.linalg.qr(torch.randn(d, k, generator=gen, dtype=torch.float64))[0]
        V = torch.linalg.qr(torch.randn(d, k, generator=gen, dtype=torch.float64))[0]
        Ws.append(d * U @ torch.diag(torch.tensor(singular, dtype=torch.float64)) @ V.T)
    X, W_star = torch.stack(Xs).to(dtype), torch.stack(Ws).to(dtype)
    tasks = AttentionTasks(X, W_star, torch.empty(0, dtype=dtype))
    return AttentionTasks(X, W_star, torch.softmax(tasks.logits(W_star), -1))


def initial_factors(seeds: list[int], *, d: int, r: int, scale: float, diagonal: bool = False,
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""``(S, 2, d, r)``: :math:`Q = a\hat Q`, :math:`K = a\hat K` with Gaussian
    :math:`\hat Q, \hat K` of unit Frobenius norm (a stream of their own per seed; the same
    directions at every ``scale``); ``diagonal``: diagonal :math:`\hat Q, \hat K` (``r = d``)."""
    if diagonal and r != d:
        raise ValueError(f"diagonal factors need r = d, got r = {r}, d = {d}")
    out = []
    for seed in seeds:
        gen = make_generator(seed + 7919)  # not the task's stream
        Z = torch.randn(2, d, r, generator=gen, dtype=torch.float64)
        if diagonal:
            Z = torch.diag_embed(torch.diagonal(Z, dim1=1, dim2=2))
        out.append(scale * Z / Z.flatten(1).norm(dim=1)[:, None, None])
    return torch.stack(out).to(dtype)


@dataclass(frozen=True)
class KeyQueryFlow:
    r"""The steepest flow of exponent ``q`` (2 or 1) on :math:`F(Q, K) = f(QK^\top)`, state
    ``(S, 2, d, r)``; ``diagonal``: the factors' diagonals only."""

    tasks: AttentionTasks
    q: float
    diagonal: bool = False

    def gradients(self, y: torch.Tensor) -> torch.Tensor:
        r""":math:`(\nabla_QF, \nabla_KF) = (GK, G^\top Q)`, :math:`G = \nabla f(QK^\top)`
        (diagonal: their diagonals)."""
        Q, K = y[:, 0], y[:, 1]
        G = self.tasks.grad(Q @ K.transpose(1, 2))
        g = torch.stack([G @ K, G.transpose(1, 2) @ Q], 1)
        return torch.diag_embed(torch.diagonal(g, dim1=2, dim2=3)) if self.diagonal else g

    def __call__(self, t: float, y: torch.Tensor) -> torch.Tensor:
        return -odd_power(self.gradients(y), self.q)


def product(y: torch.Tensor) -> torch.Tensor:
    r""":math:`W = QK^\top` of states ``(..., 2, d, r)``."""
    return y[..., 0, :, :] @ y[..., 1, :, :].transpose(-1, -2)


def column_balance(y: torch.Tensor, power: float) -> torch.Tensor:
    r""":math:`\sum_a|Q_{ac}|^r - \sum_a|K_{ac}|^r` per column ``(..., r)``, :math:`r` the
    ``power``: on diagonal factors Never Saddle's coordinate balance :math:`|u_c|^r - |v_c|^r`;
    at :math:`r = 2` the diagonal of :math:`Q^\top Q - K^\top K`."""
    return (y[..., 0, :, :].abs() ** power).sum(-2) - (y[..., 1, :, :].abs() ** power).sum(-2)


def autograd_saddle(tasks: AttentionTasks, r: int) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\nabla f(0)` ``(S, d, d)`` and the eigenvalues (ascending, ``(S, 2dr)``) of the
    Hessian of :math:`F(Q, K) = f(QK^\top)` at :math:`Q = K = 0`, both by
    ``torch.autograd`` on :meth:`AttentionTasks.loss` (not on the hand gradient)."""
    d = tasks.X.shape[-1]
    grads, spectra = [], []
    for s in range(tasks.X.shape[0]):
        one = AttentionTasks(tasks.X[s:s + 1], tasks.W_star[s:s + 1], tasks.P_star[s:s + 1])

        def F(theta: torch.Tensor, one: AttentionTasks = one) -> torch.Tensor:
            Q, K = theta[: d * r].reshape(d, r), theta[d * r:].reshape(d, r)
            return one.loss((Q @ K.T)[None])[0]

        W = tasks.X.new_zeros(1, d, d, requires_grad=True)
        grads.append(torch.autograd.grad(one.loss(W)[0], W)[0][0])
        H = torch.autograd.functional.hessian(F, tasks.X.new_zeros(2 * d * r))
        spectra.append(torch.linalg.eigvalsh(H))
    return torch.stack(grads), torch.stack(spectra)
