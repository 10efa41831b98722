r"""Fine-tuning a frozen "pretrained" feature map through a low-rank adapter :math:`W = BA`
started at (or near) the multiplicative saddle :math:`B = 0`, :math:`A = a\hat A` (LoRA's
initialisation; the paper's :math:`w_1 = 0`, :math:`w_{i\ge2} = a` at depth 2), the scale of
Never Saddle's fine-tuning experiments that runs on a CPU (``ns.x.fine-tuning``;
verify/claims/ns/SOURCES.md §6).

* :class:`AdapterProblems`: ``S`` independent tasks :math:`f_s(W) = \tfrac12\operatorname{tr}
  ((W - W^\star_s)\Sigma_s(W - W^\star_s)^\top)`, the squared loss of the new head :math:`W\phi`
  on frozen features :math:`\phi = \tanh(W_1x)` (:math:`\Sigma_s = \Phi_s^\top\Phi_s/N`) with a
  rank-``k`` target :math:`W^\star_s`; the gradient :math:`M_s = \nabla f_s(0) = -W^\star_s
  \Sigma_s` at the saddle; the full Hessian in :math:`(B, A)` by ``torch.func``;
* :func:`fine_tune_point`: one optimiser (full-batch SGD, sign descent, ``adam``, ``adamw`` of
  :mod:`numerics.optimizers`) over every (learning rate, seed) on the batch axis, trained until
  every run has reached a set fraction of its initial loss (the escape) or ``cap`` steps have
  run: the escape step per run, and at the epoch budget ``epochs`` the loss ratio, the distance
  from the start, the update's :math:`\ell_1/\ell_2` ratio and the Hessian spectrum (a sweep
  point function of :func:`verify.sweep.run_sweep`: JSON in, JSON out).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from numerics.optimizers import BatchedOptimizer, OptimizerSpec
from numerics.random import make_generator

#: The optimisers of the fine-tuning table (SOURCES §6 item 3) plus the paper's stand-in for
#: Adam, sign descent (q = 1).
METHODS = ("sgd", "signgd", "adam", "adamw")


@dataclass(frozen=True)
class AdapterProblems:
    r"""``S`` tasks: ``Sigma`` ``(S, n, n)``, targets ``W_star`` ``(S, m, n)``."""

    Sigma: torch.Tensor
    W_star: torch.Tensor

    def loss(self, B: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        r""":math:`f(BA)` per run, ``B`` ``(S, m, r)``, ``A`` ``(S, r, n)``."""
        E = B @ A - self.W_star
        return 0.5 * torch.einsum("sij,sjk,sik->s", E, self.Sigma, E)

    def grads(self, B: torch.Tensor, A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r""":math:`(\nabla_WfA^\top, B^\top\nabla_Wf)` with :math:`\nabla_Wf = (BA - W^\star)
        \Sigma`."""
        G = (B @ A - self.W_star) @ self.Sigma
        return G @ A.transpose(1, 2), B.transpose(1, 2) @ G

    def saddle_gradient(self) -> torch.Tensor:
        r""":math:`M = \nabla f(0) = -W^\star\Sigma` ``(S, m, n)``: at :math:`B = A = 0` the
        Hessian is :math:`\begin{psmallmatrix}0&K\\K^\top&0\end{psmallmatrix}` with ``r``
        copies of :math:`M` in :math:`K`, eigenvalues :math:`\pm\sigma_j(M)` ``r`` times each
        and zeros."""
        return -self.W_star @ self.Sigma

    def hessian_spectrum(self, B: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        r"""Eigenvalues (ascending, ``(S, m r + r n)``) of the Hessian of :math:`f(BA)` in the
        flattened :math:`(B, A)` of each run, by automatic differentiation."""
        m, r = B.shape[1:]
        n = A.shape[2]

        def f(theta, Sigma, W_star):
            b, a = theta[: m * r].reshape(m, r), theta[m * r:].reshape(r, n)
            E = b @ a - W_star
            return 0.5 * torch.trace(E @ Sigma @ E.T)

        theta = torch.cat([B.reshape(B.shape[0], -1), A.reshape(A.shape[0], -1)], 1)
        H = torch.func.vmap(torch.func.hessian(f))(theta, self.Sigma, self.W_star)
        return torch.linalg.eigvalsh(H)


def make_problems(seeds: list[int], *, d_in: int, n: int, m: int, samples: int,
                  singular: list[float]) -> AdapterProblems:
    r"""Per seed: a frozen random feature map :math:`\phi(x) = \tanh(W_1x)`, :math:`W_{1,ij}
    \sim\mathcal N(0, 1/d_{in})`, on ``samples`` inputs :math:`x\sim\mathcal N(0, I)`, and a
    target :math:`W^\star = U\operatorname{diag}(\text{singular})V^\top` with Haar-random
    orthonormal columns (rank ``len(singular)``)."""
    Sig, Ws = [], []
    k = len(singular)
    for seed in seeds:
        gen = make_generator(seed)
        X = torch.randn(samples, d_in, generator=gen, dtype=torch.float64)
        W1 = torch.randn(n, d_in, generator=gen, dtype=torch.float64) / math.sqrt(d_in)
        Phi = torch.tanh(X @ W1.T)
        U = torch.linalg.qr(torch.randn(m, k, generator=gen, dtype=torch.float64))[0]
        V = torch.linalg.qr(torch.randn(n, k, generator=gen, dtype=torch.float64))[0]
        Sig.append(Phi.T @ Phi / samples)
        Ws.append(U @ torch.diag(torch.tensor(singular, dtype=torch.float64)) @ V.T)
    return AdapterProblems(torch.stack(Sig), torch.stack(Ws))


def initial_adapter(seeds: list[int], *, m: int, r: int, n: int, a: float, b: float
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`B = b\hat B`, :math:`A = a\hat A` with :math:`\hat B, \hat A` of unit Frobenius
    norm (Gaussian directions, a stream of their own per seed); ``b = 0`` is LoRA's start on
    the saddle set, ``b, a`` of order 1 a start away from it."""
    Bs, As = [], []
    for seed in seeds:
        gen = make_generator(seed + 7919)  # not the problem's stream
        Bh = torch.randn(m, r, generator=gen, dtype=torch.float64)
        Ah = torch.randn(r, n, generator=gen, dtype=torch.float64)
        Bs.append(b * Bh / Bh.norm())
        As.append(a * Ah / Ah.norm())
    return torch.stack(Bs), torch.stack(As)


def _l1_over_l2(d: torch.Tensor) -> torch.Tensor:
    r""":math:`\|d\|_1/(\sqrt P\|d\|_2)` per row: 1 for an update spread evenly over the
    ``P`` coordinates, :math:`1/\sqrt P` for one on a single coordinate."""
    return d.abs().sum(1) / (math.sqrt(d.shape[1]) * d.norm(dim=1))


def fine_tune_point(point: Mapping[str, Any]) -> dict[str, Any]:
    r"""One ``method`` of :data:`METHODS` on the tasks of ``seeds`` (:func:`make_problems` with
    ``d_in, n, m, samples, singular``) from :func:`initial_adapter` (``r, a, b``) at every
    learning rate of ``lrs``: the runs ``(lr, seed)`` on the batch axis, full batch, until each
    has reached ``escape_fraction`` of its initial loss or ``cap`` steps have run.

    Returns per run (lists in ``lr``-major order): ``escape`` (the first step at or below the
    fraction; ``cap`` where ``censored``), ``curve`` (the loss over its initial value every
    ``record_every`` steps up to ``epochs``, the start first), and at step ``epochs``:
    ``loss_ratio``,
    ``distance`` (:math:`\|(B, A) - (B_0, A_0)\|`), ``adapter_norm`` :math:`\|B\|`,
    ``update_l1_l2`` (:func:`_l1_over_l2` of the change) and ``spectrum`` (the Hessian's
    eigenvalues); ``finite``."""
    method = point["method"]
    if method not in METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    seeds, lrs = list(point["seeds"]), [float(x) for x in point["lrs"]]
    m, n, r = point["m"], point["n"], point["r"]
    epochs, cap, every = int(point["epochs"]), int(point["cap"]), int(point["record_every"])
    if not (1 <= epochs <= cap and every >= 1 and epochs % every == 0):
        raise ValueError(f"epochs, cap, record_every: {epochs}, {cap}, {every} need 1 <= "
                         f"epochs <= cap and record_every dividing epochs")
    problems = make_problems(seeds, d_in=point["d_in"], n=n, m=m, samples=point["samples"],
                             singular=list(point["singular"]))
    P = AdapterProblems(problems.Sigma.repeat(len(lrs), 1, 1),
                        problems.W_star.repeat(len(lrs), 1, 1))
    B0, A0 = initial_adapter(seeds, m=m, r=r, n=n, a=point["a"], b=point["b"])
    B0, A0 = B0.repeat(len(lrs), 1, 1), A0.repeat(len(lrs), 1, 1)
    lr = torch.tensor(lrs, dtype=torch.float64).repeat_interleave(len(seeds))
    B, A = B0.clone(), A0.clone()
    opt = None
    if method != "signgd":
        spec = OptimizerSpec(method, momentum=0.0)
        wd = torch.full_like(lr, point["weight_decay"] if method == "adamw" else 0.0)
        opt = BatchedOptimizer(spec, {"B": B, "A": A}, lr, wd)
    L0 = P.loss(B, A)
    target = point["escape_fraction"] * L0
    escape = torch.full_like(lr, float(cap))
    censored = torch.ones_like(lr, dtype=torch.bool)
    at_budget: dict[str, Any] = {}
    curve = [torch.ones_like(L0)]
    for step in range(1, cap + 1):
        gB, gA = P.grads(B, A)
        if opt is None:
            B.add_(torch.sign(gB) * -lr[:, None, None])
            A.add_(torch.sign(gA) * -lr[:, None, None])
        else:
            opt.step({"B": B, "A": A}, {"B": gB, "A": gA})
        loss = P.loss(B, A)
        new = censored & (loss <= target)
        escape[new] = float(step)
        censored &= ~new
        if step <= epochs and step % every == 0:
            curve.append(loss / L0)
        if step == epochs:
            d = torch.cat([(B - B0).flatten(1), (A - A0).flatten(1)], 1)
            at_budget = {"loss_ratio": (loss / L0).tolist(), "distance": d.norm(dim=1).tolist(),
                         "adapter_norm": B.flatten(1).norm(dim=1).tolist(),
                         "update_l1_l2": _l1_over_l2(d).tolist(),
                         "spectrum": P.hessian_spectrum(B, A).tolist()}
        if step >= epochs and not bool(censored.any()):
            break
    return {"escape": escape.tolist(), "censored": censored.tolist(),
            "curve": torch.stack(curve, 1).tolist(), **at_budget,
            "finite": bool(torch.isfinite(B).all() and torch.isfinite(A).all())}
