r"""Full-batch training of Li2's two-layer network on a group task, many configurations at once.

Model (§2.1, the author's ``ModularAdditionNN``, catalogue §6.2): input
:math:`\mathbf x=[\mathbf e_{h_1};\mathbf e_{h_2}]`, output :math:`\beta\,\sigma(\mathbf x^\top
W)V` with :math:`W\in\mathbb R^{2M\times K}`, :math:`V\in\mathbb R^{K\times M}`, no biases. The
first layer is the gather :math:`W_{h_1}+W_{M+h_2}` and its backward an explicit
``index_add_`` (autograd's backward of advanced indexing is several times slower); every
activation buffer is allocated once (fresh buffers every step double the time); the loop makes
no host synchronisation.

Everything that varies between configurations sits on a leading batch axis ``B``
(:class:`Hyper`): seed, data seed, weight decay :math:`\eta` (the optimiser's
``weight_decay``, as in the code: :math:`\eta_{\rm paper}=n\eta/2` for the MSE losses, §2.4),
learning rate, training fraction :math:`p`, the scales of :math:`W(0)` and :math:`V(0)`
(``top_init`` is the code's ``top_layer_init_multiplier``; 0 gives :math:`V(0)=0`) and the
output scale :math:`\beta`.

Initialisation: PyTorch's default ``nn.Linear`` init, :math:`U(\pm1/\sqrt{\rm fan\_in})`,
drawn in float32 from a CPU generator seeded with the configuration's seed, :math:`W^\top`
(``K x 2M``) first and then :math:`V^\top` (``M x K``): the draws ``torch.manual_seed(seed)``
followed by the two ``nn.Linear`` constructors make, i.e. the third party's initialisation.

Losses (per sample :math:`i`, outputs :math:`\mathbf o_i`, averaged over the :math:`n` training
samples, no ½, so the optimiser's weight decay means what it means in the author's code):

* ``mse_class``: the code's :math:`\|P_M^\perp\mathbf o_i-(\mathbf e_{y_i}-\tfrac1M\mathbf
  1)\|^2` (class centring, §6.3);
* ``mse_sample``: the paper's :math:`\tfrac1n\|P_1^\perp(Y-\hat Y)\|_F^2 = \tfrac2n J` (sample
  centring, Eq. 1);
* ``cross_entropy``.

Top layer: ``trained``, or ``ridge`` (the code's ``set_weight_reg``, Fig. 12): before every
forward pass :math:`V` is replaced by :math:`(F^\top F+\lambda I)^{-1}F^\top Y_c` for the
uncentred :math:`F` and :math:`Y_c=Y-\tfrac1M`, held fixed in the backward pass, and only
:math:`W` is trained (MSE losses only, as in the code).

Schedule: epoch :math:`t` is the state after :math:`t` steps. The training loss and accuracy
of every epoch come free from the forward pass of the step (the code logs them before each
step, too); the test loss and accuracy every ``eval_every`` epochs; the groups of
:mod:`numerics.training_diagnostics` every ``diag_every`` epochs (``group_every`` sets a
group's own interval); all of them also at the last epoch.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from numerics.group_task import group_task
from numerics.optimizers import BatchedOptimizer, OptimizerSpec
from numerics.random import make_generator
from numerics.train_splits import SampleSet, random_splits
from numerics.training_diagnostics import Snapshot, check_groups, compute

LOSSES = ("mse_class", "mse_sample", "cross_entropy")
ACTIVATIONS = ("x2", "relu", "silu")
TOP_LAYERS = ("trained", "ridge")
DEFAULT_DIAGNOSTICS = ("gradient", "gram", "energy", "updates")

_HYPER_DEFAULTS = {"eta": 0.0, "lr": 1e-3, "p": 0.4, "init_scale": 1.0, "top_init": 1.0,
                   "out_scale": 1.0}


@dataclass(frozen=True)
class Hyper:
    """One entry per configuration (the batch axis). Build with :meth:`batch` or :meth:`grid`."""

    seed: tuple[int, ...]
    data_seed: tuple[int, ...]
    eta: tuple[float, ...]
    lr: tuple[float, ...]
    p: tuple[float, ...]
    init_scale: tuple[float, ...]
    top_init: tuple[float, ...]
    out_scale: tuple[float, ...]

    def __post_init__(self) -> None:
        sizes = {f.name: len(getattr(self, f.name)) for f in dataclasses.fields(self)}
        if len(set(sizes.values())) != 1 or not self.seed:
            raise ValueError(f"hyper: every field needs the same positive length, got {sizes}")
        for s in self.seed + self.data_seed:
            if not 0 <= s < 2**63:
                raise ValueError(f"seed: {s} is outside [0, 2**63)")
        for name, ok, rule in (("eta", lambda x: x >= 0, ">= 0"), ("lr", lambda x: x > 0, "> 0"),
                               ("p", lambda x: 0 < x < 1, "in (0, 1)"),
                               ("init_scale", lambda x: x >= 0, ">= 0"),
                               ("top_init", lambda x: x >= 0, ">= 0"),
                               ("out_scale", lambda x: x > 0, "> 0")):
            bad = [x for x in getattr(self, name) if not (math.isfinite(x) and ok(x))]
            if bad:
                raise ValueError(f"{name}: {bad[0]} must be finite and {rule}")

    def __len__(self) -> int:
        return len(self.seed)

    @classmethod
    def batch(cls, seed: int | Sequence[int], data_seed: int | Sequence[int] | None = None,
              **values: float | Sequence[float]) -> Hyper:
        """Fields given as scalars are broadcast to the length of the sequences (which must
        agree); ``data_seed`` defaults to ``seed``; unnamed fields take their defaults
        (eta 0, lr 1e-3, p 0.4, scales 1)."""
        unknown = set(values) - set(_HYPER_DEFAULTS)
        if unknown:
            raise ValueError(f"hyper: unknown fields {sorted(unknown)}; allowed: seed, "
                             f"data_seed, {', '.join(_HYPER_DEFAULTS)}")
        fields = {**_HYPER_DEFAULTS, **values, "seed": seed,
                  "data_seed": seed if data_seed is None else data_seed}
        lengths = {len(v) for v in fields.values() if isinstance(v, Sequence)}
        if len(lengths) > 1:
            raise ValueError(f"hyper: sequences of different lengths {sorted(lengths)}")
        B = lengths.pop() if lengths else 1
        cast = {"seed": int, "data_seed": int}
        return cls(**{k: tuple(cast.get(k, float)(x) for x in
                               (v if isinstance(v, Sequence) else [v] * B))
                      for k, v in fields.items()})

    @classmethod
    def grid(cls, **axes: Sequence[Any]) -> Hyper:
        """The Cartesian product of the given axes (``seed`` is required), first axis slowest."""
        if "seed" not in axes:
            raise ValueError("hyper: grid needs a seed axis")
        names = list(axes)
        rows = list(itertools.product(*(axes[k] for k in names)))
        return cls.batch(**{k: [r[i] for r in rows] for i, k in enumerate(names)})


@dataclass(frozen=True)
class TrainConfig:
    """What is shared by the whole batch."""

    K: int
    activation: str = "x2"
    loss: str = "mse_class"
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)
    top_layer: str = "trained"
    ridge_lambda: float = 1e-3
    eval_every: int = 50
    diag_every: int = 50
    diagnostics: tuple[str, ...] = DEFAULT_DIAGNOSTICS
    #: per-group intervals overriding ``diag_every``, e.g. ``(("gradient", 1),)``
    group_every: tuple[tuple[str, int], ...] = ()
    gram_nodes: int | None = None
    gram_samples: int | None = None
    spectrum_top: int = 0

    def __post_init__(self) -> None:
        if self.K < 1:
            raise ValueError(f"K: {self.K} must be >= 1")
        for name, value, allowed in (("activation", self.activation, ACTIVATIONS),
                                     ("loss", self.loss, LOSSES),
                                     ("top_layer", self.top_layer, TOP_LAYERS)):
            if value not in allowed:
                raise ValueError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
        if self.top_layer == "ridge" and (self.loss == "cross_entropy"
                                          or not self.ridge_lambda > 0):
            raise ValueError("top_layer: 'ridge' needs an MSE loss and ridge_lambda > 0")
        if self.eval_every < 1 or self.diag_every < 1:
            raise ValueError("eval_every, diag_every: must be >= 1")
        for name in ("gram_nodes", "gram_samples"):
            v = getattr(self, name)
            if v is not None and v < 2:
                raise ValueError(f"{name}: {v} must be None (all) or >= 2")
        if self.spectrum_top < 0:
            raise ValueError(f"spectrum_top: {self.spectrum_top} must be >= 0")
        check_groups(self.diagnostics)
        for name, every in self.group_every:
            if name not in self.diagnostics or every < 1:
                raise ValueError(f"group_every: ({name!r}, {every}) needs a group listed in "
                                 f"diagnostics and an interval >= 1")

    def every(self, group: str) -> int:
        """The interval of a diagnostics group."""
        return dict(self.group_every).get(group, self.diag_every)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        opt = d["optimizer"]
        spec = OptimizerSpec(**{**opt, "betas": tuple(opt["betas"]),
                                "ns_coefficients": tuple(tuple(c) for c in
                                                         opt["ns_coefficients"])})
        return cls(**{**d, "optimizer": spec, "diagnostics": tuple(d["diagnostics"]),
                      "group_every": tuple((g, int(e)) for g, e in d["group_every"])})


class History:
    """Records by name: a list of epochs and a list of ``(B, ...)`` tensors (kept on device
    until :meth:`series` stacks them)."""

    def __init__(self) -> None:
        self.records: dict[str, tuple[list[int], list[torch.Tensor]]] = {}

    def add(self, name: str, epoch: int, value: torch.Tensor) -> None:
        epochs, values = self.records.setdefault(name, ([], []))
        epochs.append(epoch)
        values.append(value)

    def names(self) -> list[str]:
        return sorted(self.records)

    def series(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(epochs (D,), values (D, B, ...))`` on the CPU, float64."""
        if name not in self.records:
            raise KeyError(f"history: no series {name!r}; recorded: {', '.join(self.names())}")
        epochs, values = self.records[name]
        return torch.tensor(epochs), torch.stack(values).detach().to("cpu", torch.float64)

    def state_dict(self) -> dict[str, Any]:
        return {k: (list(e), [v.detach().cpu() for v in vs])
                for k, (e, vs) in self.records.items()}

    @classmethod
    def from_state_dict(cls, d: dict[str, Any], device: torch.device) -> History:
        h = cls()
        h.records = {k: (list(e), [v.to(device) for v in vs]) for k, (e, vs) in d.items()}
        return h


def _init_weights(seed: int, M: int, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`W` (``2M x K``) and :math:`V^\top` (``M x K``) as ``nn.Linear(2M, K)`` and
    ``nn.Linear(K, M)`` initialise them (kaiming-uniform with :math:`a=\sqrt5`), in float32."""
    g = make_generator(seed)

    def linear(fan_out: int, fan_in: int) -> torch.Tensor:
        # kaiming_uniform_(a=sqrt(5)) term by term (gain sqrt(2/(1+a^2)), bound sqrt(3) gain
        # / sqrt(fan_in)), so the floats, not only the law, are nn.Linear's
        bound = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + 5.0)) / math.sqrt(fan_in))
        return torch.empty(fan_out, fan_in, dtype=torch.float32).uniform_(-bound, bound,
                                                                            generator=g)

    W_t = linear(K, 2 * M)
    Vt = linear(M, K)
    return W_t.T.contiguous(), Vt


def _scratch(buffer: torch.Tensor, *shape: int) -> torch.Tensor:
    """A contiguous tensor of ``shape`` on the front of ``buffer``'s storage."""
    return buffer.view(-1)[:math.prod(shape)].view(shape)


class GroupTrainer:
    """A batch of two-layer networks on one group task; :meth:`train` advances all of them.

    ``table``: the Cayley table (``M x M``); ``hyper``: the configurations; ``config``: what
    they share. Checkpoints: :meth:`save` / :meth:`load` (on the CPU a resumed run continues
    bit for bit as the uninterrupted one; CUDA's ``index_add_`` accumulates atomically, so
    there two runs agree to rounding unless ``torch.use_deterministic_algorithms(True)``).
    """

    def __init__(self, table, hyper: Hyper, config: TrainConfig, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> None:
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype: {dtype} must be torch.float32 or torch.float64")
        self.device, self.dtype = torch.device(device), dtype
        self.hyper, self.config = hyper, config
        self.task = group_task(table, device=self.device)
        M, K, B = self.task.M, config.K, len(hyper)
        self.train_set, self.test_set = random_splits(self.task, hyper.p, hyper.data_seed, dtype)
        inits = [_init_weights(s, M, K) for s in hyper.seed]
        opts = {"device": self.device, "dtype": dtype}
        self.W = (torch.stack([w for w, _ in inits]).to(**opts)
                  * self._per(hyper.init_scale)[:, None, None])
        self.Vt = (torch.stack([v for _, v in inits]).to(**opts)
                   * self._per(hyper.top_init)[:, None, None])
        self.beta = self._per(hyper.out_scale)
        self._scaled_output = any(b != 1 for b in hyper.out_scale)
        m = self.train_set.size
        self.pre = torch.empty(B, m, K, **opts)
        self.F = torch.empty(B, m, K, **opts)
        self.Ot = torch.empty(B, M, m, **opts)
        self.dOt = torch.empty(B, M, m, **opts)
        self.Y = self._one_hot(self.train_set)
        self.gW = torch.empty_like(self.W)
        self.gV = torch.empty_like(self.Vt)
        self.params = {"W": self.W} if config.top_layer == "ridge" else {"W": self.W,
                                                                        "V": self.Vt}
        self.grads = {"W": self.gW, "V": self.gV}
        # two change buffers per parameter, used alternately: the last two updates stay
        self.deltas = {k: torch.zeros(2, *p.shape, **opts) for k, p in
                       (("W", self.W), ("V", self.Vt))}
        self.optimizer = BatchedOptimizer(config.optimizer, self.params,
                                          lr=self._per(hyper.lr), wd=self._per(hyper.eta))
        self.epoch = 0
        self.history = History()
        self._recorded = -1
        self._mask = torch.empty(B, m, K, dtype=torch.bool, device=self.device) \
            if config.activation == "relu" else None
        self._aux = torch.empty(B, m, K, **opts) if config.activation == "silu" else None

    # --- set-up helpers -----------------------------------------------------------------------

    def _per(self, values: Sequence[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=self.dtype, device=self.device)

    def _one_hot(self, S: SampleSet) -> torch.Tensor:
        Y = torch.nn.functional.one_hot(S.target, self.task.M).to(self.dtype)
        return (Y * S.weight[:, :, None]).mT.contiguous()

    @property
    def V(self) -> torch.Tensor:
        """:math:`V` (``(B, K, M)``), a view of the stored :math:`V^\\top`."""
        return self.Vt.mT

    # --- forward, loss, backward ---------------------------------------------------------------

    def _forward(self, rows_left: torch.Tensor, rows_right: torch.Tensor, pre: torch.Tensor,
                 F: torch.Tensor, Ot: torch.Tensor) -> None:
        """``pre = X W`` (gathers), ``F = sigma(pre)``, ``Ot = beta V^T F^T``."""
        B, m, K = pre.shape
        Wf = self.W.view(-1, K)
        torch.index_select(Wf, 0, rows_left, out=pre.view(B * m, K))
        torch.index_select(Wf, 0, rows_right, out=F.view(B * m, K))
        pre.add_(F)
        name = self.config.activation
        if name == "x2":
            torch.square(pre, out=F)
        elif name == "relu":
            torch.clamp(pre, min=0, out=F)
        else:
            torch.sigmoid(pre, out=F)
            F.mul_(pre)
        torch.bmm(self.Vt, F.mT, out=Ot)
        if self._scaled_output:
            Ot.mul_(self.beta[:, None, None])

    def _ridge_top_layer(self) -> None:
        r""":math:`V^\top \leftarrow Y_c^\top F(F^\top F+\lambda I)^{-1}` on the real samples,
        through the smaller of the two Gram matrices."""
        lam, S = self.config.ridge_lambda, self.train_set
        w = S.weight[:, :, None]
        Fw = self.F * w
        Yc = (self.Y.mT - 1.0 / self.task.M) * w                       # (B, m, M)
        m, K = Fw.shape[1:]
        if m <= K:
            A = Fw @ Fw.mT + lam * torch.eye(m, dtype=self.dtype, device=self.device)
            self.Vt.copy_(torch.linalg.solve(A, Yc).mT @ Fw)
        else:
            A = Fw.mT @ Fw + lam * torch.eye(K, dtype=self.dtype, device=self.device)
            self.Vt.copy_(torch.linalg.solve(A, Fw.mT @ Yc).mT)

    def _loss(self, Ot: torch.Tensor, Y: torch.Tensor, S: SampleSet,
              grad: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss and accuracy per configuration; :math:`\\partial L/\\partial O^\\top` into
        ``grad`` when given. Padding columns carry weight 0."""
        w, n = S.weight[:, None, :], S.count
        M, kind = self.task.M, self.config.loss
        if kind == "cross_entropy":
            logp = torch.log_softmax(Ot, dim=1)
            loss = -(logp * Y).sum((1, 2)) / n
            if grad is not None:
                torch.sub(logp.exp_(), Y, out=grad)
                grad.mul_(w / n[:, None, None])
        else:
            if kind == "mse_class":
                r = Ot - Ot.mean(1, keepdim=True) - (Y - 1.0 / M)
            else:
                r = Ot - Y
                r.sub_((r * w).sum(-1, keepdim=True) / n[:, None, None])
            loss = (r.square().sum(1) * S.weight).sum(-1) / n
            if grad is not None:
                torch.mul(r, w * (2 / n)[:, None, None], out=grad)
        correct = (Ot.argmax(1) == S.target).to(self.dtype)
        return loss, (correct * S.weight).sum(-1) / n

    def _backward(self) -> None:
        """Gradients of the training loss into ``gW``, ``gV`` from ``dOt`` (overwrites ``F``)."""
        dOt, F, pre = self.dOt, self.F, self.pre
        if self._scaled_output:
            dOt.mul_(self.beta[:, None, None])
        if self.config.top_layer == "trained":
            torch.bmm(dOt, F, out=self.gV)
        name = self.config.activation
        if name == "x2":
            dOt.mul_(2.0)       # sigma'(z) = 2 z: the 2 is folded into the small factor
        torch.bmm(dOt.mT, self.Vt, out=F)                             # dL/dF
        if name == "x2":
            F.mul_(pre)
        elif name == "relu":
            torch.gt(pre, 0, out=self._mask)
            F.mul_(self._mask)
        else:
            # silu'(z) = s (1 + z (1 - s)), s = sigmoid(z); pre is not needed afterwards
            s = torch.sigmoid(pre, out=self._aux)
            pre.addcmul_(pre, s, value=-1.0).add_(1.0)
            F.mul_(s).mul_(pre)
        B, m, K = F.shape
        gWf = self.gW.view(-1, K)
        gWf.zero_()
        dF = F.view(B * m, K)
        gWf.index_add_(0, self.train_set.rows_left, dF)
        gWf.index_add_(0, self.train_set.rows_right, dF)

    def _train_forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        S = self.train_set
        self._forward(S.rows_left, S.rows_right, self.pre, self.F, self.Ot)
        if self.config.top_layer == "ridge":
            self._ridge_top_layer()
            torch.bmm(self.Vt, self.F.mT, out=self.Ot)
            if self._scaled_output:
                self.Ot.mul_(self.beta[:, None, None])
        return self._loss(self.Ot, self.Y, S, self.dOt)

    def set_weights(self, W: torch.Tensor, V: torch.Tensor) -> None:
        r"""Copy in :math:`W` (``(B, 2M, K)``) and :math:`V` (``(B, K, M)``), e.g. a stored
        trajectory point to analyse; optimiser state and history are left as they are."""
        self.W.copy_(W)
        self.Vt.copy_(V.mT)

    def forward_snapshot(self) -> Snapshot:
        """The training forward pass at the current weights, for diagnostics of one's own."""
        self._train_forward()
        return self._snapshot()

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        r"""Training loss ``(B,)`` and its gradients in :math:`W` (``(B, 2M, K)``) and
        :math:`V` (``(B, K, M)``) at the current weights, without weight decay; no step."""
        loss, _ = self._train_forward()
        self._backward()
        return loss, self.gW.clone(), self.gV.mT.clone()

    # --- evaluation ----------------------------------------------------------------------------

    def _test_metrics(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss and accuracy on each configuration's test pairs, in chunks that reuse the
        training buffers (no extra ``n x K`` memory)."""
        S, m, B = self.test_set, self.train_set.size, len(self.hyper)
        M, K = self.task.M, self.config.K
        sq = torch.zeros(B, dtype=self.dtype, device=self.device)
        sum_r = torch.zeros(B, M, dtype=self.dtype, device=self.device)
        correct = torch.zeros_like(sq)
        rows_l, rows_r = S.rows_left.view(B, -1), S.rows_right.view(B, -1)
        for start in range(0, S.size, m):
            stop = min(start + m, S.size)
            c = stop - start
            pre, F = _scratch(self.pre, B, c, K), _scratch(self.F, B, c, K)
            Ot = _scratch(self.Ot, B, M, c)
            self._forward(rows_l[:, start:stop].reshape(-1), rows_r[:, start:stop].reshape(-1),
                          pre, F, Ot)
            w = S.weight[:, start:stop]
            target = S.target[:, start:stop]
            Y = torch.nn.functional.one_hot(target, M).to(self.dtype).mT * w[:, None, :]
            if self.config.loss == "cross_entropy":
                sq -= (torch.log_softmax(Ot, dim=1) * Y).sum((1, 2))
            elif self.config.loss == "mse_class":
                r = Ot - Ot.mean(1, keepdim=True) - (Y - 1.0 / M)
                sq += (r.square().sum(1) * w).sum(-1)
            else:
                r = (Ot - Y) * w[:, None, :]
                sq += r.square().sum((1, 2))
                sum_r += r.sum(-1)
            correct += ((Ot.argmax(1) == target).to(self.dtype) * w).sum(-1)
        n = S.count
        loss = sq / n
        if self.config.loss == "mse_sample":
            loss = loss - sum_r.square().sum(-1) / n**2   # (1/n) sum ||r_i - rbar||^2
        return loss, correct / n

    # --- the loop ------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        c, k = self.config, self.optimizer.steps

        def pair(name: str):
            # step s wrote its change into buffer (s - 1) % 2
            if k < 2:
                return None
            buf = self.deltas[name]
            return buf[(k - 1) % 2], buf[k % 2]

        return Snapshot(epoch=self.epoch, M=self.task.M, activation=c.activation, W=self.W,
                        Vt=self.Vt, pre=self.pre, F=self.F, Ot=self.Ot, Y=self.Y,
                        train=self.train_set, dW=pair("W"),
                        dV=pair("V") if c.top_layer == "trained" else None,
                        gram_nodes=c.gram_nodes, gram_samples=c.gram_samples,
                        spectrum_top=c.spectrum_top)

    def train(self, epochs: int, *, record_last: bool = True) -> History:
        """Take ``epochs`` full-batch steps on every configuration; returns the history.

        Epoch :math:`t` (the state after :math:`t` steps) is recorded once: the training loss
        and accuracy always, the test metrics when :math:`t` is a multiple of ``eval_every``,
        each diagnostics group when it is a multiple of its interval, and all of them at the last
        epoch when ``record_last``. Pass ``record_last=False`` for a run that will be resumed,
        so that its history matches the uninterrupted run's exactly.
        """
        if epochs < 0:
            raise ValueError(f"epochs: {epochs} must be >= 0")
        c, end = self.config, self.epoch + epochs
        while True:
            t = self.epoch
            last = t == end
            # an epoch is recorded once; the end of a run that will be resumed not at all
            do_train = t > self._recorded and (not last or record_last)
            do_eval = do_train and (t % c.eval_every == 0 or last)
            groups = [g for g in c.diagnostics if do_train and (t % c.every(g) == 0 or last)]
            if do_eval:   # first: the test pass uses the training buffers as scratch
                test_loss, test_acc = self._test_metrics()
                self.history.add("test_loss", t, test_loss)
                self.history.add("test_acc", t, test_acc)
            if not last or do_train:
                loss, acc = self._train_forward()
                if do_train:
                    self.history.add("train_loss", t, loss)
                    self.history.add("train_acc", t, acc)
                if groups:
                    for name, value in compute(groups, self._snapshot()).items():
                        self.history.add(name, t, value)
            if do_train:
                self._recorded = t
            if last:
                return self.history
            self._backward()
            k = self.optimizer.steps
            self.optimizer.step(self.params, self.grads,
                                {name: buf[k % 2] for name, buf in self.deltas.items()})
            self.epoch += 1

    # --- checkpoints ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, as plain containers and CPU tensors."""
        return {"hyper": dataclasses.asdict(self.hyper), "config": self.config.as_dict(),
                "table": self.task.table.cpu(), "dtype": str(self.dtype).removeprefix("torch."),
                "epoch": self.epoch, "W": self.W.cpu(), "Vt": self.Vt.cpu(),
                "deltas": {k: v.cpu() for k, v in self.deltas.items()},
                "optimizer": {"steps": self.optimizer.steps,
                              "state": {k: v.cpu() for k, v in self.optimizer.state.items()}},
                "history": self.history.state_dict(), "recorded": self._recorded}

    @classmethod
    def from_state_dict(cls, d: dict[str, Any], *, device: torch.device | str = "cpu"
                        ) -> GroupTrainer:
        hyper = Hyper(**{k: tuple(v) for k, v in d["hyper"].items()})
        trainer = cls(d["table"], hyper, TrainConfig.from_dict(d["config"]), device=device,
                      dtype=getattr(torch, d["dtype"]))
        trainer.W.copy_(d["W"])
        trainer.Vt.copy_(d["Vt"])
        for k, v in d["deltas"].items():
            trainer.deltas[k].copy_(v)
        trainer.optimizer.load_state_dict(d["optimizer"])
        trainer.epoch = int(d["epoch"])
        trainer.history = History.from_state_dict(d["history"], trainer.device)
        trainer._recorded = int(d["recorded"])
        return trainer

    def save(self, path: str | Path) -> None:
        torch.save(self.state_dict(), path)

    @classmethod
    def load(cls, path: str | Path, *, device: torch.device | str = "cpu") -> GroupTrainer:
        return cls.from_state_dict(torch.load(path, map_location="cpu", weights_only=True),
                                   device=device)
