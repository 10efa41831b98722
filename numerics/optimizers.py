r"""Batched first-order optimisers with per-configuration learning rate and weight decay.

Every parameter carries a leading batch axis ``B`` (one configuration per entry); ``lr`` and
``wd`` are ``(B,)`` tensors. Each step writes the parameter's change :math:`\Delta p` into a
caller-owned buffer and then adds it, so the trainer can compare consecutive updates without
copying weights. The formulas follow ``torch.optim`` (single-tensor path) term by term:

* ``sgd``: coupled L2, heavy ball, :math:`b \leftarrow \mu b + (g + \lambda p)` (:math:`b_1 = g_1 +
  \lambda p_1`), :math:`\Delta p = -\mathrm{lr}\,b` (``torch.optim.SGD(momentum, weight_decay)``);
* ``adam``: coupled L2, :math:`g \leftarrow g + \lambda p`, then Adam with bias correction
  (``torch.optim.Adam(weight_decay)``, what the author's code uses, verify/claims/li2/SOURCES.md
  §6.4);
* ``adamw``: decoupled decay :math:`p \leftarrow p(1 - \mathrm{lr}\,\lambda)`, then Adam;
* ``muon``: Adam (coupled L2) on ``V``; on ``W`` the author's ``MuonEnhanced`` as SOURCES
  §6.4 describes it: momentum :math:`b \leftarrow \beta b + (1-\beta) g` with
  :math:`\beta = 0.99`, the polar factor approximated by the five quintic Newton-Schulz steps of
  :func:`numerics.polar.newton_schulz` (Frobenius normalisation first), decoupled decay
  :math:`p \leftarrow p(1 - \mathrm{lr}\,\lambda)`, :math:`\Delta p = -\mathrm{lr}\,\mathrm{NS}(b)`
  (no RMS or spectral compensation, no Nesterov). SOURCES §6.4 names a :math:`\beta_1 = 0.9`
  that this description does not use; it is not used here.

State is a flat ``dict`` of tensors plus the step count, so a checkpoint is
``state_dict()`` and a resumed run continues bit for bit.

Speed: Adam and AdamW take torch's fused kernel (``torch._fused_adam_`` /
``torch._fused_adamw_``, one pass over parameter, gradient and both moments, the kernel of
``torch.optim.Adam(fused=True)``) where the device and dtype have it, one call per run of
consecutive configurations that share learning rate and weight decay; the change
:math:`\Delta p` is then :math:`p_{t}-p_{t-1}` (two extra passes), computed only for the
parameters the caller asks it for. Elsewhere (and with ``fused=False``) the step is written
out in elementwise ops as above.
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
    muon_momentum: float = 0.99    # muon on W: lerp with 1 - 0.99 (SOURCES §6.4)
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


def _runs(lr: torch.Tensor, wd: torch.Tensor) -> list[tuple[int, int, float, float]]:
    """Maximal runs ``(start, stop, lr, wd)`` of consecutive configurations with equal
    learning rate and weight decay (one host read, at construction)."""
    pairs = list(zip(lr.tolist(), wd.tolist()))
    runs: list[tuple[int, int, float, float]] = []
    for b, pair in enumerate(pairs):
        if runs and (runs[-1][2], runs[-1][3]) == pair:
            runs[-1] = (runs[-1][0], b + 1, *pair)
        else:
            runs.append((b, b + 1, *pair))
    return runs


_FUSED_SUPPORT: dict[tuple[str, torch.dtype], bool] = {}


def fused_adam_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether torch's fused Adam kernel runs on ``device`` in ``dtype`` (probed once on a
    one-element tensor; older torch builds have no CPU kernel)."""
    key = (torch.device(device).type, dtype)
    if key not in _FUSED_SUPPORT:
        p = torch.zeros(1, device=device, dtype=dtype)
        try:
            torch._fused_adam_([p], [torch.ones_like(p)], [torch.zeros_like(p)],
                               [torch.zeros_like(p)], [], [torch.ones((), device=device)],
                               lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8,
                               amsgrad=False, maximize=False)
            _FUSED_SUPPORT[key] = bool(torch.isfinite(p).all())
        except (AttributeError, RuntimeError, NotImplementedError):
            _FUSED_SUPPORT[key] = False
    return _FUSED_SUPPORT[key]


class BatchedOptimizer:
    r"""One optimiser over named batched parameters (``W``: ``(B, 2M, K)``, ``V``).

    ``step(params, grads, deltas)`` updates ``params`` in place and leaves
    :math:`\Delta p` in ``deltas[name]`` for each name ``deltas`` holds (``None``: none);
    ``lr`` and ``wd`` are ``(B,)`` tensors on the parameters' device and dtype. Muon needs a
    parameter named ``W`` (the hidden layer). ``fused``: use torch's fused Adam kernel where it
    exists (``None``, the default) or never (``False``); the two agree to rounding.
    ``step`` may overwrite ``grads``.
    """

    def __init__(self, spec: OptimizerSpec, params: Mapping[str, torch.Tensor],
                 lr: torch.Tensor, wd: torch.Tensor, *, fused: bool | None = None) -> None:
        if spec.name == "muon" and "W" not in params:
            raise ValueError("params: muon needs the hidden layer under the name 'W'")
        if fused not in (None, False):
            raise ValueError(f"fused: {fused!r} must be None (where available) or False")
        self.spec = spec
        self.lr = lr
        self.wd = wd
        self.steps = 0
        self.state: dict[str, torch.Tensor] = {}
        for name, p in params.items():
            for slot in self._slots(name):
                self.state[f"{name}.{slot}"] = torch.zeros_like(p)
        self._fused = [name for name, p in params.items()
                       if self._kind(name) in ("adam", "adamw") and fused is None
                       and p.is_contiguous() and fused_adam_available(p.device, p.dtype)]
        self._runs = _runs(lr, wd) if self._fused else []
        device = next(iter(params.values())).device
        # the fused kernel reads the step count from a tensor (float32, as torch.optim keeps it)
        self._step_count = torch.zeros((), device=device)
        self._scratch: dict[str, torch.Tensor] = {}

    def _kind(self, name: str) -> str:
        if self.spec.name == "muon":
            return "muon" if name == "W" else "adam"
        return self.spec.name

    def _slots(self, name: str) -> tuple[str, ...]:
        return {"sgd": ("momentum",), "adam": ("m", "v"), "adamw": ("m", "v"),
                "muon": ("momentum",)}[self._kind(name)]

    def step(self, params: Mapping[str, torch.Tensor], grads: Mapping[str, torch.Tensor],
             deltas: Mapping[str, torch.Tensor] | None = None) -> None:
        self.steps += 1
        deltas = deltas or {}
        fused = [name for name in self._fused if name in params]
        if fused:
            for name in fused:
                if name in deltas:
                    deltas[name].copy_(params[name])
            self._fused_adam(fused, params, grads)
            for name in fused:
                if name in deltas:
                    torch.sub(params[name], deltas[name], out=deltas[name])
        for name, p in params.items():
            if name in fused:
                continue
            kind = self._kind(name)
            lr, wd = _per_config(self.lr, p), _per_config(self.wd, p)
            g = grads[name]
            out = deltas.get(name)
            if out is None:
                out = self._scratch.setdefault(name, torch.empty_like(p))
            if kind == "sgd":
                self._sgd(name, p, g, lr, wd, out)
            elif kind == "muon":
                self._muon(name, p, g, lr, wd, out)
            else:
                self._adam(name, p, g, lr, wd, out, decoupled=kind == "adamw")
            p.add_(out)

    def _fused_adam(self, names: list[str], params: Mapping[str, torch.Tensor],
                    grads: Mapping[str, torch.Tensor]) -> None:
        """One fused kernel call per run of configurations sharing ``lr`` and ``wd``; every
        fused parameter has the same kind (Adam for both, or AdamW for both)."""
        kernel = (torch._fused_adamw_ if self._kind(names[0]) == "adamw"
                  else torch._fused_adam_)
        b1, b2 = self.spec.betas
        self._step_count.fill_(self.steps)
        for start, stop, lr, wd in self._runs:
            kernel([params[n][start:stop] for n in names],
                   [grads[n][start:stop] for n in names],
                   [self.state[f"{n}.m"][start:stop] for n in names],
                   [self.state[f"{n}.v"][start:stop] for n in names],
                   [], [self._step_count] * len(names), lr=lr, beta1=b1, beta2=b2,
                   weight_decay=wd, eps=self.spec.eps, amsgrad=False, maximize=False)

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
