r"""A small residual network whose weights are Hadamard products of ``L`` factors, trained
with Adam + L2 (coupled decay) or AdamW (decoupled decay) on a classification task with a
planted sparse teacher: the CPU analogue of Never Saddle's experiment 5 (ResNet-50 on ImageNet
with reparameterised AdamW; ``ns.x.reparam-adamw``, verify/claims/ns/SOURCES.md §6 item 5).

* :func:`make_tasks`: per seed, inputs :math:`x\sim\mathcal N(0, I_d)` and labels
  :math:`y = \arg\max_c (Tx)_c` from a teacher :math:`T\in\mathbb R^{C\times d}` supported on
  ``k`` of the ``d`` input features (Gaussian entries there, zero elsewhere): a train and a
  test split.
* The network (no biases): :math:`h_0 = W_{in}x`, ``blocks`` residual blocks
  :math:`h \leftarrow h + W_b\,\mathrm{relu}(W_ah)`, logits :math:`W_{out}h`; every weight
  matrix is :math:`W = w_1\odot\cdots\odot w_L` (the paper's deep diagonal
  reparameterisation, entrywise), started balanced at a Kaiming draw :math:`W_0`:
  :math:`w_1 = \operatorname{sign}(W_0)|W_0|^{1/L}`, :math:`w_{i\ge2} = |W_0|^{1/L}`, so
  :math:`W = W_0` at every depth.
* :func:`reparam_point`: one decay type and depth over every (weight decay, seed) on the batch
  axis, ``torch.optim``'s Adam / AdamW formulas (:mod:`numerics.optimizers`) on the factors,
  minibatches drawn from one stream shared by all configurations of a seed (common random
  numbers); a sweep point function (JSON in, JSON out).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from numerics.optimizers import BatchedOptimizer, OptimizerSpec
from numerics.random import make_generator

#: Decay types: ``coupled`` is Adam with L2 inside the gradient, ``decoupled`` AdamW.
DECAYS = {"coupled": "adam", "decoupled": "adamw"}


@dataclass(frozen=True)
class PlantedTasks:
    r"""``S`` tasks: ``X_train`` ``(S, n, d)``, ``y_train`` ``(S, n)``, the test split alike,
    ``support`` ``(S, d)`` (True on the teacher's ``k`` features) and ``teacher`` ``(S, C, d)``."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    support: torch.Tensor
    teacher: torch.Tensor

    def chance(self) -> torch.Tensor:
        """The majority class's share of each test split (the accuracy of a constant)."""
        C = int(max(self.y_train.max(), self.y_test.max())) + 1
        counts = torch.nn.functional.one_hot(self.y_test, C).sum(1)
        return counts.max(1).values.double() / self.y_test.shape[1]


def make_tasks(seeds: list[int], *, d: int, k: int, classes: int, n_train: int, n_test: int
               ) -> PlantedTasks:
    """One planted task per seed (float64 inputs, each from its own stream)."""
    if not 1 <= k <= d:
        raise ValueError(f"k: {k} must lie in [1, d = {d}]")
    if classes < 2:
        raise ValueError(f"classes: {classes} must be >= 2")
    Xs, ys, supports, teachers = [], [], [], []
    for seed in seeds:
        gen = make_generator(seed)
        features = torch.randperm(d, generator=gen)[:k]
        T = torch.zeros(classes, d, dtype=torch.float64)
        T[:, features] = torch.randn(classes, k, generator=gen, dtype=torch.float64)
        X = torch.randn(n_train + n_test, d, generator=gen, dtype=torch.float64)
        Xs.append(X)
        ys.append((X @ T.T).argmax(1))
        mask = torch.zeros(d, dtype=torch.bool)
        mask[features] = True
        supports.append(mask)
        teachers.append(T)
    X, y = torch.stack(Xs), torch.stack(ys)
    return PlantedTasks(X[:, :n_train], y[:, :n_train], X[:, n_train:], y[:, n_train:],
                        torch.stack(supports), torch.stack(teachers))


def layer_shapes(d: int, hidden: int, classes: int, blocks: int) -> dict[str, tuple[int, int]]:
    """``(out, in)`` of each weight matrix, in forward order."""
    shapes = {"in": (hidden, d)}
    for b in range(blocks):
        shapes[f"block{b}.a"] = (hidden, hidden)
        shapes[f"block{b}.b"] = (hidden, hidden)
    shapes["out"] = (classes, hidden)
    return shapes


def initial_weights(seeds: list[int], shapes: Mapping[str, tuple[int, int]]
                    ) -> dict[str, torch.Tensor]:
    r"""Kaiming draws :math:`W_0\sim\mathcal N(0, 2/\text{fan-in})` (the residual branch's
    second matrix scaled by :math:`1/\sqrt{2\,\text{blocks}}`, so the residual stream's scale
    stays near its input's), ``(S, out, in)`` per layer, from a stream per seed apart from the
    task's."""
    blocks = sum(name.endswith(".b") for name in shapes)
    out: dict[str, list[torch.Tensor]] = {name: [] for name in shapes}
    for seed in seeds:
        gen = make_generator(seed + 7919)
        for name, (o, i) in shapes.items():
            scale = math.sqrt(2 / i) / (math.sqrt(2 * blocks) if name.endswith(".b") else 1)
            out[name].append(scale * torch.randn(o, i, generator=gen, dtype=torch.float64))
    return {name: torch.stack(ws) for name, ws in out.items()}


def balanced_factors(W0: torch.Tensor, L: int) -> torch.Tensor:
    r"""``(B, L, out, in)`` factors with product ``W0`` ``(B, out, in)``:
    :math:`w_1 = \operatorname{sign}(W_0)|W_0|^{1/L}`, the others :math:`|W_0|^{1/L}`."""
    if L < 1:
        raise ValueError(f"L: {L} must be >= 1")
    root = W0.abs() ** (1.0 / L)
    factors = root.unsqueeze(1).repeat(1, L, 1, 1)
    factors[:, 0] = torch.sign(W0) * root
    return factors.contiguous()


def effective(factors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    r"""The effective weights :math:`W = \prod_i w_i` ``(B, out, in)`` per layer."""
    return {name: f.prod(1) for name, f in factors.items()}


def forward(W: Mapping[str, torch.Tensor], X: torch.Tensor, blocks: int) -> torch.Tensor:
    """Logits ``(B, n, C)`` of the residual network with weights ``W`` on inputs ``(B, n, d)``."""
    h = X @ W["in"].transpose(1, 2)
    for b in range(blocks):
        h = h + torch.relu(h @ W[f"block{b}.a"].transpose(1, 2)) @ W[f"block{b}.b"].transpose(1, 2)
    return h @ W["out"].transpose(1, 2)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per configuration ``(B,)``."""
    logp = torch.log_softmax(logits, -1)
    return -logp.gather(-1, y.unsqueeze(-1)).squeeze(-1).mean(-1)


def relative_sparsity(W: torch.Tensor, thresholds: list[float]) -> torch.Tensor:
    r"""Fraction of entries with :math:`|W_{ij}| < \tau\max|W|` per configuration and
    threshold, ``(B, len(thresholds))``; a layer that is exactly zero counts as fully sparse."""
    a = W.abs().flatten(1)
    top = a.max(1, keepdim=True).values.clamp_min(torch.finfo(a.dtype).tiny)
    tau = torch.tensor(thresholds, dtype=a.dtype, device=a.device)
    return (a.unsqueeze(-1) < tau * top.unsqueeze(-1)).double().mean(1)


def reparam_point(point: Mapping[str, Any]) -> dict[str, Any]:
    r"""Train the network of depth ``L`` with ``decay`` (``coupled``: Adam + L2,
    ``decoupled``: AdamW) at every weight decay of ``alphas`` and seed of ``seeds`` (the runs
    ``(alpha, seed)`` on the batch axis, alpha-major), ``steps`` steps of minibatches of
    ``batch`` at learning rate ``lr``.

    Returns per run (lists in alpha-major order): ``loss_start``, ``loss_end`` (full train
    split), ``accuracy`` (test split), ``chance`` (the test split's majority share),
    ``sparsity`` (:func:`relative_sparsity` of all weights together, each layer against its
    own largest entry, per threshold of ``thresholds``), ``layer_sparsity`` (per layer and
    threshold), ``largest`` (max :math:`|W|` per layer), ``off_support`` (the share of the
    first layer's columns on non-teacher features whose norm is below each threshold times
    the largest column norm) and ``finite``."""
    decay = point["decay"]
    if decay not in DECAYS:
        raise ValueError(f"decay: {decay!r} is not one of {', '.join(DECAYS)}")
    seeds, alphas = list(point["seeds"]), [float(a) for a in point["alphas"]]
    L, steps, batch = int(point["L"]), int(point["steps"]), int(point["batch"])
    blocks, thresholds = int(point["blocks"]), [float(t) for t in point["thresholds"]]
    dtype = getattr(torch, point.get("dtype", "float64"))
    tasks = make_tasks(seeds, d=point["d"], k=point["k"], classes=point["classes"],
                       n_train=point["n_train"], n_test=point["n_test"])
    if not 1 <= batch <= point["n_train"]:
        raise ValueError(f"batch: {batch} must lie in [1, n_train = {point['n_train']}]")
    A, S = len(alphas), len(seeds)
    shapes = layer_shapes(point["d"], point["hidden"], point["classes"], blocks)
    W0 = initial_weights(seeds, shapes)
    factors = {name: balanced_factors(w.repeat(A, 1, 1), L).to(dtype).requires_grad_(True)
               for name, w in W0.items()}
    X = tasks.X_train.repeat(A, 1, 1).to(dtype)
    y = tasks.y_train.repeat(A, 1)
    lr = torch.full((A * S,), float(point["lr"]), dtype=dtype)
    wd = torch.tensor(alphas, dtype=dtype).repeat_interleave(S)
    opt = BatchedOptimizer(OptimizerSpec(DECAYS[decay]), {n: f.data for n, f in factors.items()},
                           lr, wd)
    gen = make_generator(int(point.get("batch_seed", 0)) + 104729)
    rows = torch.arange(A * S)[:, None]

    def full_loss() -> torch.Tensor:
        with torch.no_grad():
            return cross_entropy(forward(effective(factors), X, blocks), y)

    loss_start = full_loss()
    for _ in range(steps):
        idx = torch.randint(0, point["n_train"], (S, batch), generator=gen).repeat(A, 1)
        loss = cross_entropy(forward(effective(factors), X[rows, idx], blocks), y[rows, idx])
        grads = torch.autograd.grad(loss.sum(), list(factors.values()))
        with torch.no_grad():
            # contiguous: autograd returns the factors' gradients transposed in memory, and
            # torch's fused Adam kernel reads its tensors as contiguous (it then diverges)
            opt.step({n: f.data for n, f in factors.items()},
                     {n: g.contiguous() for n, g in zip(factors, grads)})
    with torch.no_grad():
        W = effective(factors)
        loss_end = full_loss()
        logits = forward(W, tasks.X_test.repeat(A, 1, 1).to(dtype), blocks)
        accuracy = (logits.argmax(-1) == tasks.y_test.repeat(A, 1)).double().mean(1)
        tops = {n: w.abs().flatten(1).max(1).values for n, w in W.items()}
        sizes = torch.tensor([w[0].numel() for w in W.values()], dtype=torch.float64)
        per_layer = {n: relative_sparsity(w, thresholds) for n, w in W.items()}
        # all weights together: the layers' fractions weighted by their sizes
        sparsity = sum(s * n for s, n in zip(per_layer.values(), sizes)) / sizes.sum()
        tau = torch.tensor(thresholds, dtype=torch.float64)
        columns = W["in"].norm(dim=1)                                      # (B, d)
        off = ~tasks.support.repeat(A, 1)
        col_top = columns.max(1, keepdim=True).values
        below = columns.unsqueeze(-1) < tau * col_top.unsqueeze(-1)       # (B, d, T)
        off_support = (below & off.unsqueeze(-1)).double().sum(1) / off.sum(1, keepdim=True)
        finite = all(bool(torch.isfinite(f).all()) for f in factors.values())
    return {"loss_start": loss_start.tolist(), "loss_end": loss_end.tolist(),
            "accuracy": accuracy.tolist(), "chance": tasks.chance().repeat(A).tolist(),
            "sparsity": sparsity.tolist(),
            "layer_sparsity": {n: s.tolist() for n, s in per_layer.items()},
            "largest": {n: t.tolist() for n, t in tops.items()},
            "off_support": off_support.tolist(), "finite": finite}
