r"""A small pretrained network fine-tuned through LoRA adapters: the larger CPU setting of Never
Saddle's fine-tuning table and Hessian spectrum (``ns.x.fine-tuning``; SOURCES §6 items 3-4).

* :func:`make_data`: per seed, inputs :math:`x\sim\mathcal N(0, I_d)` labelled by a random
  teacher (a one-hidden-layer tanh net, argmax over ``classes`` logits); the new task is the
  same inputs with the labels shifted cyclically by one class, so the pretrained network starts
  below chance on it and a rank-``r`` change of its layers can reach its pretrained accuracy.
* :func:`pretrain`: a tanh MLP ``d -> hidden -> hidden -> classes`` trained on the first task
  with full-batch Adam (``torch.optim``), every seed on the batch axis.
* :func:`finetune_point`: the pretrained weights frozen, every layer gets an adapter
  :math:`W + BA` started as LoRA starts, :math:`B = 0` and :math:`A = a\hat A`
  (:math:`\|\hat A\|_F = 1`): next to the saddle :math:`B = A = 0`; trained on the new task
  with ``torch.optim`` SGD or Adam at one learning rate; then the validation accuracy and the
  extreme eigenvalues of the Hessian of the training loss in the adapters, by Lanczos on
  Hessian-vector products (:func:`lanczos`), at the start and at the end (a sweep point
  function: JSON in, JSON out).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from numerics.random import make_generator

DTYPE = torch.float64


def make_data(seeds: list[int], *, d: int, classes: int, teacher: int, n_train: int,
              n_val: int) -> dict[str, torch.Tensor]:
    """Per seed ``(S, n, d)`` inputs and ``(S, n)`` labels of the pretraining task (``y1``) and
    the new task (``y2 = y1 + 1 mod classes``), train and validation split."""
    out: dict[str, list[torch.Tensor]] = {k: [] for k in ("X", "y1", "Xv", "y1v")}
    for seed in seeds:
        gen = make_generator(seed + 104729)
        V = torch.randn(teacher, d, generator=gen, dtype=DTYPE) * 2 / math.sqrt(d)
        U = torch.randn(classes, teacher, generator=gen, dtype=DTYPE) / math.sqrt(teacher)
        for key, n in (("X", n_train), ("Xv", n_val)):
            X = torch.randn(n, d, generator=gen, dtype=DTYPE)
            out[key].append(X)
            out["y1" if key == "X" else "y1v"].append((torch.tanh(X @ V.T) @ U.T).argmax(1))
    data = {k: torch.stack(v) for k, v in out.items()}
    data["y2"] = (data["y1"] + 1) % classes
    data["y2v"] = (data["y1v"] + 1) % classes
    return data


def layer_shapes(d: int, hidden: int, classes: int) -> list[tuple[int, int]]:
    return [(hidden, d), (hidden, hidden), (classes, hidden)]


def forward(Ws: list[torch.Tensor], bs: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Logits ``(S, n, classes)`` of the tanh MLP with weights ``(S, out, in)``."""
    h = X
    for i, (W, b) in enumerate(zip(Ws, bs)):
        h = h @ W.transpose(1, 2) + b[:, None, :]
        if i < len(Ws) - 1:
            h = torch.tanh(h)
    return h


def losses(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per seed ``(S,)``."""
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), y, reduction="none").mean(1)


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (logits.argmax(2) == y).to(DTYPE).mean(1)


def pretrain(seeds: list[int], data: Mapping[str, torch.Tensor], *, d: int, hidden: int,
             classes: int, steps: int, lr: float) -> tuple[list[torch.Tensor],
                                                          list[torch.Tensor], torch.Tensor]:
    """The pretrained weights and biases, and the validation accuracy on the first task."""
    Ws, bs = [], []
    for out, inp in layer_shapes(d, hidden, classes):
        per = [torch.randn(out, inp, generator=make_generator(s + 31 * out + inp), dtype=DTYPE)
               / math.sqrt(inp) for s in seeds]
        Ws.append(torch.stack(per).requires_grad_())
        bs.append(torch.zeros(len(seeds), out, dtype=DTYPE, requires_grad=True))
    opt = torch.optim.Adam(Ws + bs, lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        losses(forward(Ws, bs, data["X"]), data["y1"]).sum().backward()
        opt.step()
    Ws = [W.detach() for W in Ws]
    bs = [b.detach() for b in bs]
    return Ws, bs, accuracy(forward(Ws, bs, data["Xv"]), data["y1v"])


def lanczos(hvp: Callable[[torch.Tensor], torch.Tensor], v0: torch.Tensor, k: int
            ) -> torch.Tensor:
    r"""Ritz values ``(S, k)`` (ascending) of ``k`` Lanczos steps with full
    reorthogonalisation, on the batch axis: ``hvp`` maps ``(S, P)`` to the per-row products.
    Their extremes approach the matrix's extreme eigenvalues (PyHessian's method)."""
    S, P = v0.shape
    k = min(k, P)
    Q = torch.zeros(S, k, P, dtype=v0.dtype)
    alpha = torch.zeros(S, k, dtype=v0.dtype)
    beta = torch.zeros(S, k, dtype=v0.dtype)
    q = v0 / v0.norm(dim=1, keepdim=True)
    for j in range(k):
        Q[:, j] = q
        w = hvp(q)
        alpha[:, j] = (w * q).sum(1)
        for _ in range(2):      # full reorthogonalisation, twice
            w = w - torch.einsum("sj,sjp->sp", torch.einsum("sjp,sp->sj", Q[:, :j + 1], w),
                                 Q[:, :j + 1])
        if j + 1 < k:
            beta[:, j] = w.norm(dim=1)
            q = w / beta[:, j:j + 1].clamp_min(1e-300)
    T = torch.diag_embed(alpha) + torch.diag_embed(beta[:, :-1], 1) + \
        torch.diag_embed(beta[:, :-1], -1)
    return torch.linalg.eigvalsh(T)


def finetune_point(point: Mapping[str, Any]) -> dict[str, Any]:
    r"""Pretrain once (``pretrain_steps`` Adam steps at ``pretrain_lr``), then for each
    ``[method, lr]`` of ``runs`` fine-tune the adapters (rank ``r``, :math:`\|A\|_F = a` per
    layer) on the shifted labels with ``torch.optim``'s SGD or Adam (defaults) for ``steps``
    full-batch steps. Returns per seed ``pretrain_accuracy`` (first task),
    ``start_accuracy`` (new task, validation) and ``ritz_start`` (:func:`lanczos` Ritz values
    of the adapters' Hessian at the LoRA start); and ``runs``, per run and seed:
    ``accuracy`` (new task, validation), ``loss_ratio`` (final over initial training loss),
    ``ritz`` (at the end), ``adapter_norm``, and ``finite``."""
    seeds = list(point["seeds"])
    d, hidden, classes, r = point["d"], point["hidden"], point["classes"], point["r"]
    for method, _ in point["runs"]:
        if method not in ("sgd", "adam"):
            raise ValueError(f"method: {method!r} is not 'sgd' or 'adam'")
    data = make_data(seeds, d=d, classes=classes, teacher=point["teacher"],
                     n_train=point["n_train"], n_val=point["n_val"])
    Ws, bs, pre_acc = pretrain(seeds, data, d=d, hidden=hidden, classes=classes,
                               steps=point["pretrain_steps"], lr=point["pretrain_lr"])
    B0, A0 = [], []
    for out, inp in layer_shapes(d, hidden, classes):
        B0.append(torch.zeros(len(seeds), out, r, dtype=DTYPE))
        Ah = torch.stack([torch.randn(r, inp, generator=make_generator(s + 7919 + inp),
                                      dtype=DTYPE) for s in seeds])
        A0.append(point["a"] * Ah / Ah.flatten(1).norm(dim=1)[:, None, None])
    nl = len(B0)

    def loss_of(Bs, As, X, y):
        return losses(forward([W0 + B @ A for W0, B, A in zip(Ws, Bs, As)], bs, X), y)

    def val_accuracy(Bs, As):
        W = [W0 + B @ A for W0, B, A in zip(Ws, Bs, As)]
        return accuracy(forward(W, bs, data["Xv"]), data["y2v"])

    def ritz(params: list[torch.Tensor]) -> torch.Tensor:
        theta = [p.detach().clone().requires_grad_() for p in params]
        g = torch.autograd.grad(loss_of(theta[:nl], theta[nl:], data["X"], data["y2"]).sum(),
                                theta, create_graph=True)
        sizes = [p[0].numel() for p in theta]

        def hvp(v: torch.Tensor) -> torch.Tensor:
            parts = torch.split(v, sizes, dim=1)
            dot = sum((gi * pi.reshape(gi.shape)).sum() for gi, pi in zip(g, parts))
            hv = torch.autograd.grad(dot, theta, retain_graph=True)
            return torch.cat([h.flatten(1) for h in hv], 1)

        v0 = torch.randn(len(seeds), sum(sizes), generator=make_generator(seeds[0] + 1),
                         dtype=DTYPE)
        return lanczos(hvp, v0, point["lanczos"])

    ritz_start = ritz(B0 + A0)
    with torch.no_grad():
        L0 = loss_of(B0, A0, data["X"], data["y2"])
        acc0 = val_accuracy(B0, A0)
    runs = []
    for method, lr in point["runs"]:
        params = [t.clone().requires_grad_() for t in B0 + A0]
        Bs, As = params[:nl], params[nl:]
        opt = (torch.optim.SGD(params, lr=lr) if method == "sgd"
               else torch.optim.Adam(params, lr=lr))
        for _ in range(point["steps"]):
            opt.zero_grad()
            loss_of(Bs, As, data["X"], data["y2"]).sum().backward()
            opt.step()
        with torch.no_grad():
            L = loss_of(Bs, As, data["X"], data["y2"])
            acc = val_accuracy(Bs, As)
            finite = bool(all(torch.isfinite(p).all() for p in params)
                          and torch.isfinite(L).all())
        rz = ritz(params) if finite else torch.full_like(ritz_start, float("nan"))
        runs.append({"accuracy": acc.tolist(), "loss_ratio": (L / L0).tolist(),
                     "ritz": rz.tolist(), "finite": finite,
                     "adapter_norm": torch.cat([B.detach().flatten(1) for B in Bs], 1)
                     .norm(dim=1).tolist()})
    return {"pretrain_accuracy": pre_acc.tolist(), "start_accuracy": acc0.tolist(),
            "ritz_start": ritz_start.tolist(), "runs": runs}
