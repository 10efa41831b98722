r"""Batched first-order optimisers with per-configuration learning rate and weight decay.

Every parameter carries a leading batch axis ``B`` (one configuration per entry); ``lr`` and
``wd`` are ``(B,)`` tensors. Each step writes the parameter's change :math:`\Delta p` into a
caller-owned buffer and then adds it, so the trainer can compare consecutive updates without
copying weights. The formulas follow ``torch.optim`` (single-tensor path) term by term:

* ``sgd``: coupled L2, heavy ball, :math:`b \leftarrow \mu b + (g + \lambda p)` (:math:`b_1 = g_1 +
  \lambda p_1`), :math:`\Delta p = -\mathrm{lr}\,b` (``torch.optim.SGD(momentum, weight_decay)``);
* ``adam``: coupled L2, :math:`g \leftarrow g + \lambda p`, then Adam with bias correction
  (``torch.optim.Adam(weight_decay)``, what the author's code uses, catalogue §6.4);
* ``adamw``: decoupled decay :math:`p \leftarrow p(1 - \mathrm{lr}\,\lambda)`, then Adam;
* ``muon``: Adam (coupled L2) on ``V``; on ``W`` the author's ``MuonEnhanced`` as the catalogue
  (§6.4) describes it: momentum :math:`b \leftarrow \beta b + (1-\beta) g` with
  :math:`\beta = 0.99`, the polar factor approximated by the five quintic Newton-Schulz steps of
  :func:`numerics.polar.newton_schulz` (Frobenius normalisation first), decoupled decay
  :math:`p \leftarrow p(1 - \mathrm{lr}\,\lambda)`, :math:`\Delta p = -\mathrm{lr}\,\mathrm{NS}(b)`
  (no RMS or spectral compensation, no Nesterov). The catalogue names a :math:`\beta_1 = 0.9`
  that this description does not use; it is not used here.

State is a flat ``dict`` of tensors plus the step count, so a checkpoint is
``state_dict()`` and a resumed run continues bit for bit.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from numerics.polar import AUTHOR_NS_COEFFICIENTS, newton_schulz

OPTIMIZERS = ("sgd", "adam", "adamw", "muon")


@dataclass(frozen=True)
class OptimizerSpec:
    """Name and constants of an optimiser (torch's defaults; the author's Muon momentum)."""

    name: str = "adam"
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.9          # sgd (the author's code uses 0.9)
    muon_momentum: float = 0.99    # muon on W: lerp with 1 - 0.99 (catalogue §6.4)
    ns_coefficients: tuple[tuple[float, float, float], ...] = AUTHOR_NS_COEFFICIENTS

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ValueError(f"optimizer: {self.name!r} is not one of {', '.join(OPTIMIZERS)}")
        b1, b2 = self.betas
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"betas: {self.betas} must lie in [0, 1)")
        if not self.eps > 0:
            raise ValueError(f"eps: {self.eps} must be > 0")
        if not 0 <= self.momentum < 1 or not 0 <= self.muon_momentum < 1:
            raise ValueError("momentum, muon_momentum: must lie in [0, 1)")


def _per_config(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``(B,)`` to ``(B, 1, ..., 1)`` so it broadcasts against a batched parameter."""
    return x.reshape(-1, *([1] * (like.dim() - 1)))


class BatchedOptimizer:
    r"""One optimiser over named batched parameters (``W``: ``(B, 2M, K)``, ``V``).

    ``step(params, grads, deltas)`` updates ``params`` in place and leaves
    :math:`\Delta p` in ``deltas``; ``lr`` and ``wd`` are ``(B,)`` tensors on the parameters'
    device and dtype. Muon needs a parameter named ``W`` (the hidden layer).
    """

    def __init__(self, spec: OptimizerSpec, params: Mapping[str, torch.Tensor],
                 lr: torch.Tensor, wd: torch.Tensor) -> None:
        if spec.name == "muon" and "W" not in params:
            raise ValueError("params: muon needs the hidden layer under the name 'W'")
        self.spec = spec
        self.lr = lr
        self.wd = wd
        self.steps = 0
        self.state: dict[str, torch.Tensor] = {}
        for name, p in params.items():
            for slot in self._slots(name):
                self.state[f"{name}.{slot}"] = torch.zeros_like(p)

    def _kind(self, name: str) -> str:
        if self.spec.name == "muon":
            return "muon" if name == "W" else "adam"
        return self.spec.name

    def _slots(self, name: str) -> tuple[str, ...]:
        return {"sgd": ("momentum",), "adam": ("m", "v"), "adamw": ("m", "v"),
                "muon": ("momentum",)}[self._kind(name)]

    def step(self, params: Mapping[str, torch.Tensor], grads: Mapping[str, torch.Tensor],
             deltas: Mapping[str, torch.Tensor]) -> None:
        self.steps += 1
        for name, p in params.items():
            kind = self._kind(name)
            lr, wd = _per_config(self.lr, p), _per_config(self.wd, p)
            g, out = grads[name], deltas[name]
            if kind == "sgd":
                self._sgd(name, p, g, lr, wd, out)
            elif kind == "muon":
                self._muon(name, p, g, lr, wd, out)
            else:
                self._adam(name, p, g, lr, wd, out, decoupled=kind == "adamw")
            p.add_(out)

    def _sgd(self, name, p, g, lr, wd, out) -> None:
        buf = self.state[f"{name}.momentum"]
        g.addcmul_(wd, p)
        if self.steps == 1:
            buf.copy_(g)
        else:
            buf.mul_(self.spec.momentum).add_(g)
        torch.mul(buf, -lr, out=out)

    def _adam(self, name, p, g, lr, wd, out, *, decoupled: bool) -> None:
        b1, b2 = self.spec.betas
        m, v = self.state[f"{name}.m"], self.state[f"{name}.v"]
        if not decoupled:
            g.addcmul_(wd, p)
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        bc1 = 1 - b1**self.steps
        bc2_sqrt = (1 - b2**self.steps) ** 0.5
        # out = -(lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps), torch.optim.Adam's expression
        torch.sqrt(v, out=out)
        out.div_(bc2_sqrt).add_(self.spec.eps)
        torch.div(m, out, out=out)
        out.mul_(-lr / bc1)
        if decoupled:
            out.addcmul_(p, -lr * wd)

    def _muon(self, name, p, g, lr, wd, out) -> None:
        buf = self.state[f"{name}.momentum"]
        buf.lerp_(g, 1 - self.spec.muon_momentum)
        torch.mul(newton_schulz(buf, self.spec.ns_coefficients), -lr, out=out)
        out.addcmul_(p, -lr * wd)

    def state_dict(self) -> dict:
        return {"steps": self.steps, "state": dict(self.state)}

    def load_state_dict(self, d: Mapping) -> None:
        missing = set(self.state) ^ set(d["state"])
        if missing:
            raise ValueError(f"optimizer state: slots {sorted(missing)} do not match "
                             f"{self.spec.name}")
        self.steps = int(d["steps"])
        for k, t in d["state"].items():
            self.state[k].copy_(t)
