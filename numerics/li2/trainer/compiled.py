"""The compiled training step: ``torch.compile`` options from the trainer's ``compile``
argument and the buffer-free loss and gradients that are compiled."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_COMPILE_KEYS = ("mode", "backend", "fullgraph", "dynamic", "options")


def _compile_options(compile: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``torch.compile`` keyword arguments from the trainer's ``compile`` argument."""
    if compile is None:
        return None
    if isinstance(compile, str):
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile: {compile!r} is not None, one of "
                             f"{', '.join(COMPILE_MODES)}, or a dict of torch.compile options")
        return {"mode": compile}
    unknown = set(compile) - set(_COMPILE_KEYS)
    if unknown:
        raise ValueError(f"compile: unknown torch.compile options {sorted(unknown)}; allowed: "
                         f"{', '.join(_COMPILE_KEYS)}")
    return dict(compile)


def _functional_gradients(W: torch.Tensor, Vt: torch.Tensor, rows_left: torch.Tensor,
                          rows_right: torch.Tensor, target: torch.Tensor, labels: torch.Tensor,
                          weight: torch.Tensor, count: torch.Tensor, beta: torch.Tensor, *,
                          activation: str, loss: str, scaled: bool
                          ) -> tuple[torch.Tensor, ...]:
    r"""Training loss, accuracy and gradients ``(B,), (B,), (B, 2M, K), (B, M, K)`` written
    without buffers or in-place updates, for ``torch.compile`` (which fuses the gather, the
    activation and its derivative into the neighbouring passes). The same mathematics as
    the eager step; ``target`` is :math:`Y^\top` for the sample-centred and cross-entropy
    losses and :math:`Y^\top-\tfrac1M` for ``mse_class``, ``labels`` the class indices."""
    B, _, K = W.shape
    m = weight.shape[1]
    Wf = W.reshape(-1, K)
    pre = (Wf[rows_left] + Wf[rows_right]).view(B, m, K)
    if activation == "x2":
        F = pre * pre
    elif activation == "relu":
        F = torch.relu(pre)
    else:
        F = torch.nn.functional.silu(pre)
    Ot = torch.bmm(Vt, F.mT)
    if scaled:
        Ot = Ot * beta[:, None, None]
    w, n = weight[:, None, :], count[:, None, None]
    if loss == "cross_entropy":
        logp = torch.log_softmax(Ot, dim=1)
        value = -(logp * target).sum((1, 2)) / count
        dOt = (logp.exp() - target) * (w / n)
    else:
        R = Ot - target
        if loss == "mse_class":
            R = R - R.mean(1, keepdim=True)
        else:
            R = R - (R * w).sum(-1, keepdim=True) / n
        value = (R.square() * w).sum((1, 2)) / count
        dOt = R * (w * (2 / n))
    acc = ((torch.max(Ot, 1).indices == labels).to(W.dtype) * weight).sum(-1) / count
    if scaled:
        dOt = dOt * beta[:, None, None]
    gV = torch.bmm(dOt, F)
    dF = torch.bmm(dOt.mT, Vt)
    if activation == "x2":
        dpre = dF * (2 * pre)
    elif activation == "relu":
        dpre = dF * (pre > 0)
    else:
        s = torch.sigmoid(pre)
        dpre = dF * (s * (1 + pre * (1 - s)))
    dpre = dpre.reshape(B * m, K)
    gW = torch.zeros_like(Wf).index_add(0, rows_left, dpre).index_add(0, rows_right, dpre)
    return value, acc, gW.view_as(W), gV
