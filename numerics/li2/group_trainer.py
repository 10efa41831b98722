r"""Full-batch training of Li2's two-layer network on a group task, many configurations at once.

Model (§2.1, the author's ``ModularAdditionNN``, catalogue §6.2): input
:math:`\mathbf x=[\mathbf e_{h_1};\mathbf e_{h_2}]`, output :math:`\beta\,\sigma(\mathbf x^\top
W)V` with :math:`W\in\mathbb R^{2M\times K}`, :math:`V\in\mathbb R^{K\times M}`, no biases. The
first layer is the gather :math:`W_{h_1}+W_{M+h_2}` and its backward an explicit
``index_add_`` (autograd's backward of advanced indexing is several times slower).

Speed (the step is bounded by its three top-layer GEMMs, each :math:`2nKM` flops, so what is
avoided is memory traffic over the :math:`n\times K` activations): the gather-and-add is one
``embedding_bag`` (bags of two rows) instead of two gathers and an add; the activation, its
derivative and the gradients are written into buffers allocated once (the gather's output
comes fresh, in pieces of at most 16 MiB on the CPU: glibc then serves them from its heap
instead of mapping and zero-filling new pages every step); the samples of each configuration
are sorted by pair, so the ``index_add_`` into the rows :math:`h_1` accumulates into one row at
a time; losses and accuracies come from the forward pass's buffers; Adam and AdamW use torch's
fused kernel (:mod:`numerics.optimizers`). The loop makes no host synchronisation. Matrix
products run in full float32 during training (TF32 off on CUDA, restored afterwards), for
verification. ``compile`` (off by default) compiles the fixed-shape gradient computation
with ``torch.compile``; it is used on the epochs that record nothing beyond the training loss
and accuracy (the others run the eager step, whose buffers the diagnostics read).

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
:mod:`numerics.li2.training_diagnostics` every ``diag_every`` epochs (``group_every`` sets a
group's own interval); all of them also at the last epoch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from numerics.device import precision_flags, verification_precision
from numerics.li2.group_task import group_task
from numerics.optimizers import BatchedOptimizer, OptimizerSpec
from numerics.random import make_generator
from numerics.li2.train_splits import SampleSet, random_splits
from numerics.li2.training_diagnostics import Snapshot, check_groups, compute

LOSSES = ("mse_class", "mse_sample", "cross_entropy")
ACTIVATIONS = ("x2", "relu", "silu")
TOP_LAYERS = ("trained", "ridge")
DEFAULT_DIAGNOSTICS = ("gradient", "gram", "energy", "updates")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_COMPILE_KEYS = ("mode", "backend", "fullgraph", "dynamic", "options")
#: CPU: the gather's fresh output in pieces of at most this many bytes. glibc serves a block
#: below its dynamic mmap threshold (which grows to at most 32 MiB) from its heap, so a fresh
#: piece every step costs no page faults; a larger block is mapped, and zero-filled by the
#: kernel, on every allocation.
_PIECE_BYTES = 16 * 2**20

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


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """:func:`numerics.device.verification_precision` inside the block (TF32 off on CUDA: its
    10-bit mantissa would put about :math:`10^{-3}` relative error into every product of a
    verification run), the previous settings restored afterwards."""
    flags = precision_flags()
    verification_precision()
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(flags["float32_matmul_precision"])
        torch.backends.cuda.matmul.allow_tf32 = flags["cuda_matmul_allow_tf32"]
        torch.backends.cudnn.allow_tf32 = flags["cudnn_allow_tf32"]


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


def _activate(pre: torch.Tensor, out: torch.Tensor, name: str) -> None:
    r""":math:`\sigma(\mathrm{pre})` into ``out`` (x2 as a product: the same bits as
    ``square``, whose ``pow`` kernel is slower on the CPU)."""
    if name == "x2":
        torch.mul(pre, pre, out=out)
    elif name == "relu":
        torch.clamp(pre, min=0, out=out)
    else:
        torch.sigmoid(pre, out=out)
        out.mul_(pre)


def _times_derivative(pre: torch.Tensor, grad: torch.Tensor, name: str) -> None:
    r"""``grad`` :math:`\leftarrow` ``grad`` :math:`\odot\,\sigma'(\mathrm{pre})`, for x2 without
    its factor 2 (the caller folds it into the smaller output gradient); silu overwrites
    ``pre``."""
    if name == "x2":
        grad.mul_(pre)
    elif name == "relu":
        grad.mul_(pre > 0)
    else:
        # silu'(z) = s (1 + z (1 - s)), s = sigmoid(z)
        s = torch.sigmoid(pre)
        pre.addcmul_(pre, s, value=-1.0).add_(1.0)
        grad.mul_(s).mul_(pre)


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


class GroupTrainer:
    """A batch of two-layer networks on one group task; :meth:`train` advances all of them.

    ``table``: the Cayley table (``M x M``); ``hyper``: the configurations; ``config``: what
    they share. Checkpoints: :meth:`save` / :meth:`load` (on the CPU a resumed run continues
    bit for bit as the uninterrupted one; CUDA's ``index_add_`` accumulates atomically, so
    there two runs agree to rounding unless ``torch.use_deterministic_algorithms(True)``).

    ``compile``: ``None`` (eager, the default), a ``torch.compile`` mode (``"default"``,
    ``"reduce-overhead"`` for CUDA graphs, ...) or a dict of ``torch.compile`` options
    (``{"backend": "eager"}`` traces without generating code). Not with the ridge top layer.
    A compiled run agrees with the eager one to rounding (its fused passes round once where
    the eager ones round twice).
    """

    def __init__(self, table, hyper: Hyper, config: TrainConfig, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 compile: str | Mapping[str, Any] | None = None) -> None:
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype: {dtype} must be torch.float32 or torch.float64")
        options = _compile_options(compile)
        if options is not None and config.top_layer == "ridge":
            raise ValueError("compile: not available with top_layer='ridge'")
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
        S = self.train_set
        m = S.size
        self.F = torch.empty(B, m, K, **opts)
        self.Ot = torch.empty(B, M, m, **opts)
        self.dOt = torch.empty(B, M, m, **opts)
        self.Y = self._one_hot(S)
        # the loss's constants and its residual buffer
        self._target = self.Y - 1.0 / M if config.loss == "mse_class" else self.Y
        self._resid = torch.empty(B, M, m, **opts)
        self._grad_scale = (S.weight * (2 / S.count)[:, None])[:, None, :]       # (B, 1, m)
        self._mean_weights = (S.weight / S.count[:, None])[:, :, None]          # (B, m, 1)
        # the gather: bags of two rows (h1, M + h2) of the (B 2M, K) view of W, in pieces;
        # flat indices with their offsets (a (rows, 2) input makes embedding_bag build both
        # anew on every call, about a third of its time)
        self._pairs = torch.stack((S.rows_left, S.rows_right), -1).view(-1)      # (2 B m,)
        self._bag_starts = torch.arange(0, 2 * min(B * m, self._piece_rows()), 2,
                                        device=self.device)
        self._pre_parts: list[torch.Tensor] = []
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
        self._compiled = None if options is None else torch.compile(functools.partial(
            _functional_gradients, rows_left=S.rows_left, rows_right=S.rows_right,
            target=self._target, labels=S.target, weight=S.weight, count=S.count,
            beta=self.beta, activation=config.activation, loss=config.loss,
            scaled=self._scaled_output), **options)

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

    @property
    def pre(self) -> torch.Tensor:
        """:math:`XW` (``(B, m, K)``) at the last training forward pass (assembled from the
        gather's pieces when there are several)."""
        if not self._pre_parts:
            self._train_forward()
        B, m, K = self.F.shape
        parts = self._pre_parts
        return (parts[0] if len(parts) == 1 else torch.cat(parts)).view(B, m, K)

    # --- forward, loss, backward ---------------------------------------------------------------

    def _piece_rows(self) -> int:
        """Rows of the gather's output per piece: all on CUDA (its caching allocator reuses
        the block), a bounded block on the CPU (see ``_PIECE_BYTES``)."""
        if self.device.type != "cpu":
            return self.F.shape[0] * self.F.shape[1]
        return max(1, _PIECE_BYTES // (self.config.K * self.F.element_size()))

    def _forward(self, pairs: torch.Tensor, F: torch.Tensor, Ot: torch.Tensor
                 ) -> list[torch.Tensor]:
        """``pre = X W`` (two-row bags, ``pairs`` their flat indices; returned in pieces),
        ``F = sigma(pre)``, ``Ot = beta V^T F^T``."""
        B, m, K = F.shape
        Wf, Ff = self.W.view(-1, K), F.view(-1, K)
        step = self._piece_rows()
        parts = []
        for start in range(0, B * m, step):
            bags = pairs[2 * start:2 * (start + step)]
            pre = torch.nn.functional.embedding_bag(bags, Wf, self._bag_starts[:len(bags) // 2],
                                                    mode="sum")
            _activate(pre, Ff[start:start + step], self.config.activation)
            parts.append(pre)
        torch.bmm(self.Vt, F.mT, out=Ot)
        if self._scaled_output:
            Ot.mul_(self.beta[:, None, None])
        return parts

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

    def _accuracy(self, Ot: torch.Tensor, target: torch.Tensor, weight: torch.Tensor
                  ) -> torch.Tensor:
        """Weighted count of samples whose largest output (the first, on ties, like
        ``argmax``) is the label; ``torch.max`` along the class axis is faster than
        ``argmax`` there."""
        hit = torch.max(Ot, 1).indices == target
        return (hit.to(self.dtype) * weight).sum(-1)

    def _train_loss(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Training loss and accuracy per configuration, :math:`\\partial L/\\partial O^\\top`
        into ``dOt``. Padding columns carry weight 0."""
        S, Ot, R, G = self.train_set, self.Ot, self._resid, self.dOt
        n, kind = S.count, self.config.loss
        if kind == "cross_entropy":
            logp = torch.log_softmax(Ot, dim=1)
            loss = -(logp * self.Y).sum((1, 2)) / n
            torch.sub(logp.exp_(), self.Y, out=G)
            G.mul_(self._grad_scale * 0.5)                      # w / n
        else:
            torch.sub(Ot, self._target, out=R)
            if kind == "mse_class":
                R.sub_(Ot.mean(1, keepdim=True))
            else:
                R.sub_(torch.bmm(R, self._mean_weights))        # the weighted sample mean
            torch.mul(R, self._grad_scale, out=G)               # 2 w r / n
            # (1/n) sum_i w_i |r_i|^2 = (1/2) sum R * G, the residual buffer is free now (a
            # BLAS dot product would be faster but sums 10^5 terms in a row: 10x the error)
            loss = 0.5 * R.mul_(G).sum((1, 2))
        return loss, self._accuracy(Ot, S.target, S.weight) / n

    def _backward(self) -> None:
        """Gradients of the training loss into ``gW``, ``gV`` from ``dOt`` (overwrites ``F``)."""
        dOt, F = self.dOt, self.F
        name = self.config.activation
        if self._scaled_output:
            dOt.mul_(self.beta[:, None, None])
        if self.config.top_layer == "trained":
            torch.bmm(dOt, F, out=self.gV)
        if name == "x2":
            dOt.mul_(2.0)       # sigma'(z) = 2 z: the 2 is folded into the small factor
        torch.bmm(dOt.mT, self.Vt, out=F)                             # dL/dF
        B, m, K = F.shape
        dF = F.view(B * m, K)
        start = 0
        for pre in self._pre_parts:
            stop = start + pre.shape[0]
            _times_derivative(pre, dF[start:stop], name)
            start = stop
        gWf = self.gW.view(-1, K)
        gWf.zero_()
        gWf.index_add_(0, self.train_set.rows_left, dF)
        gWf.index_add_(0, self.train_set.rows_right, dF)

    def _train_forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        self._pre_parts = self._forward(self._pairs, self.F, self.Ot)
        if self.config.top_layer == "ridge":
            self._ridge_top_layer()
            torch.bmm(self.Vt, self.F.mT, out=self.Ot)
            if self._scaled_output:
                self.Ot.mul_(self.beta[:, None, None])
        return self._train_loss()

    def _compiled_step_gradients(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss, accuracy and gradients (into ``gW``, ``gV``) from the compiled function; the
        outputs are copied out (CUDA graphs reuse their output memory on the next call)."""
        loss, acc, gW, gV = self._compiled(self.W, self.Vt)
        self.gW.copy_(gW)
        self.gV.copy_(gV)
        return loss.clone(), acc.clone()

    def set_weights(self, W: torch.Tensor, V: torch.Tensor) -> None:
        r"""Copy in :math:`W` (``(B, 2M, K)``) and :math:`V` (``(B, K, M)``), e.g. a stored
        trajectory point to analyse; optimiser state and history are left as they are."""
        self.W.copy_(W)
        self.Vt.copy_(V.mT)

    def forward_snapshot(self) -> Snapshot:
        """The training forward pass at the current weights, for diagnostics of one's own."""
        with full_float32():
            self._train_forward()
        return self._snapshot()

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        r"""Training loss ``(B,)`` and its gradients in :math:`W` (``(B, 2M, K)``) and
        :math:`V` (``(B, K, M)``) at the current weights, without weight decay; no step."""
        with full_float32():
            loss, _ = self._train_forward()
            self._backward()
        return loss, self.gW.clone(), self.gV.mT.clone()

    # --- evaluation ----------------------------------------------------------------------------

    def _test_metrics(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss and accuracy on each configuration's test pairs, in chunks that reuse the
        training buffers (no extra ``n x K`` memory beyond the gather's pieces)."""
        S, m, B = self.test_set, self.train_set.size, len(self.hyper)
        M, K = self.task.M, self.config.K
        sq = torch.zeros(B, dtype=self.dtype, device=self.device)
        sum_r = torch.zeros(B, M, dtype=self.dtype, device=self.device)
        correct = torch.zeros_like(sq)
        rows_l, rows_r = S.rows_left.view(B, -1), S.rows_right.view(B, -1)
        for start in range(0, S.size, m):
            stop = min(start + m, S.size)
            c = stop - start
            F, Ot = _scratch(self.F, B, c, K), _scratch(self.Ot, B, M, c)
            pairs = torch.stack((rows_l[:, start:stop], rows_r[:, start:stop]), -1)
            self._forward(pairs.view(-1), F, Ot)
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
            correct += self._accuracy(Ot, target, w)
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

    def _deltas_needed(self, step: int, end: int) -> bool:
        """Whether step ``step`` (which makes epoch ``step``) must keep its change: the
        ``updates`` group at epoch :math:`t` reads the changes of steps :math:`t` and
        :math:`t-1`; it runs at multiples of its interval and at a run's last epoch (the last
        two steps of every call keep theirs, so a resumed run finds them in the checkpoint)."""
        if "updates" not in self.config.diagnostics:
            return False
        every = self.config.every("updates")
        return step % every in (0, every - 1) or step >= end - 1

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
        with full_float32():
            return self._train(epochs, record_last)

    def _train(self, epochs: int, record_last: bool) -> History:
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
            eager = last or do_eval or groups or self._compiled is None
            if eager and (not last or do_train):
                loss, acc = self._train_forward()
                if groups:
                    for name, value in compute(groups, self._snapshot()).items():
                        self.history.add(name, t, value)
            elif not last:
                loss, acc = self._compiled_step_gradients()
            if do_train:
                self.history.add("train_loss", t, loss)
                self.history.add("train_acc", t, acc)
                self._recorded = t
            if last:
                return self.history
            if eager:
                self._backward()
            k = self.optimizer.steps
            step_deltas = ({name: buf[k % 2] for name, buf in self.deltas.items()}
                           if self._deltas_needed(k + 1, end) else None)
            self.optimizer.step(self.params, self.grads, step_deltas)
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
