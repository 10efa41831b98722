r"""An :math:`L`-layer network on a group task (Li2 §6), batched over configurations, with the
layer gradients :math:`G_l`, the §6 approximation of :math:`G_{L-1}`, and per-layer irrep purity.

Network (``B`` configurations on a leading axis, :class:`numerics.li2.trainer.Hyper`):
:math:`F_1=\sigma(XW_1)` with :math:`XW_1` the gather :math:`W_{1,h_1}+W_{1,M+h_2}`, then for
:math:`l=2..L` either :math:`F_l=\sigma(F_{l-1}W_l)` (plain, the §6 network) or
:math:`F_l=\sigma(F_{l-1}+F_{l-1}W_l)` (``residual``: the author's ``other_layers``, the
activation after the sum, verify/claims/li2/SOURCES.md §6.2), and :math:`\hat Y=\beta F_LV`. Write
:math:`\tilde W_l=W_l` (plain) or :math:`I+W_l` (residual), so :math:`Z_l=F_{l-1}\tilde W_l`.
Initialisation: ``nn.Linear``'s default :math:`U(\pm1/\sqrt{\rm fan\_in})`, drawn from a CPU
generator seeded with the configuration's seed; every hidden layer is multiplied by
``init_scale`` and :math:`V` by ``top_init``. Only homogeneous activations
(:math:`\sigma(x)=C\sigma'(x)x`): ReLU (:math:`C=1`) and :math:`x^2` (:math:`C=\tfrac12`).

Layer gradients. :math:`G_l=-\partial\mathcal L/\partial F_l` by autograd, for the training loss
(``objective="loss"``; the code's class-centred MSE or the paper's sample-centred one, averaged
over samples: a positive multiple of the paper's :math:`J`), or
:math:`G_l=+\partial\mathcal E/\partial F_l` for the Stage-II surrogate
:math:`\mathcal E=\tfrac12\|\tilde Y^\top F_L\|_F^2` (``objective="energy"``), whose top
gradient is exactly the form §6 starts from, :math:`G_L=\tilde Y\tilde Y^\top F_L`.

The §6 chain. With one gate per hidden unit, :math:`D_j=\mathrm{diag}(\sigma'(Z_{L,:j}))`, and
:math:`F_L=C\,D\circ Z_L` (homogeneity),

.. math:: G_{L-1} = (D\circ G_L)\tilde W_L^\top
          = C\sum_j D_j\tilde Y\tilde Y^\top D_j F_{L-1}\tilde{\mathbf w}_j\tilde{\mathbf w}_j^\top
          \quad(G_L=\tilde Y\tilde Y^\top F_L),

the per-unit reading of :math:`(D_L\tilde Y\tilde Y^\top D_L)F_{L-1}(W_LW_L^\top)`. The
approximation replaces :math:`\tilde{\mathbf w}_j
\tilde{\mathbf w}_j^\top` by its mean :math:`\tfrac1{K}W_LW_L^\top\approx\tfrac1KI` (entries of
variance :math:`1/K`, i.e. :math:`\sqrt3` times the ``nn.Linear`` scale, give
:math:`\mathbb E[W_LW_L^\top]=I`), leaving the gate applied per unit
(:func:`gated_approximation`, reading ``"unit_mean"``):
:math:`\tfrac1K\sum_jD_j\tilde Y\tilde Y^\top D_jF_{L-1}`; or by one shared gate, the mean over
units :math:`\bar D=\mathrm{diag}(\tfrac1K\sum_j\sigma'(Z_{L,:j}))` (``"mean_gate"``):
:math:`\bar D\tilde Y\tilde Y^\top\bar DF_{L-1}`. Both are compared by cosine, so constants do
not matter.

Purity (:func:`layer_purity`). For a node's pre-activation :math:`z(h_1,h_2)` on all
:math:`M^2` pairs and the real isotypic projectors :math:`\Pi_a` of the group, the power in the
component :math:`(a,c)` of :math:`H\times H` is :math:`\|\Pi_a Z\Pi_c\|_F^2` (they sum to
:math:`\|Z\|_F^2`). A node's purity is :math:`\max_{k\ne0}(P_{k0}+P_{0k}+P_{kk})/
(\|Z\|_F^2-P_{00})`: the share of its non-constant power in the components built from one
irrep :math:`k` (a first-layer Fourier node :math:`u_k(h_1)+v_k(h_2)` has purity 1, a function of
:math:`h_1h_2` in irrep :math:`k` lies in :math:`(k,k)`). A layer's purity is the mean over nodes
whose non-constant power is not negligible (NaN if there are none: a dead layer).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from numerics.activations import activation as activation_by_name
from numerics.li2.group_task import group_task
from numerics.li2.trainer import History, Hyper
from numerics.optimizers import BatchedOptimizer, OptimizerSpec
from numerics.random import make_generator
from numerics.li2.train_splits import SampleSet, random_splits

#: Homogeneous activations and their constant C in sigma(x) = C sigma'(x) x.
HOMOGENEITY = {"relu": 1.0, "x2": 0.5}
LOSSES = ("mse_class", "mse_sample")
OBJECTIVES = ("loss", "energy")
READINGS = ("unit_mean", "mean_gate")


@dataclass(frozen=True)
class DeepConfig:
    """What the batch shares: width ``K`` of every hidden layer, ``layers`` (:math:`L\\ge1`
    hidden layers), activation, residual hidden layers, loss and optimiser."""

    K: int
    layers: int
    activation: str = "relu"
    residual: bool = False
    loss: str = "mse_class"
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)

    def __post_init__(self) -> None:
        if self.K < 1:
            raise ValueError(f"K: {self.K} must be >= 1")
        if self.layers < 1:
            raise ValueError(f"layers: {self.layers} must be >= 1")
        if self.activation not in HOMOGENEITY:
            raise ValueError(f"activation: {self.activation!r} is not one of "
                             f"{', '.join(HOMOGENEITY)} (homogeneous activations only)")
        if self.loss not in LOSSES:
            raise ValueError(f"loss: {self.loss!r} is not one of {', '.join(LOSSES)}")
        if self.optimizer.name == "muon":
            raise ValueError("optimizer: muon is not supported for deep networks; use sgd, "
                             "adam or adamw")


def layer_names(layers: int) -> list[str]:
    return [f"W{l}" for l in range(1, layers + 1)]


def init_params(hyper: Hyper, M: int, config: DeepConfig, *, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """``W1`` ``(B, 2M, K)``, ``W2..WL`` ``(B, K, K)`` and ``V`` ``(B, K, M)``: ``nn.Linear``'s
    default init per configuration (its seed), scaled by ``init_scale`` / ``top_init``."""
    K, L = config.K, config.layers
    shapes = [(2 * M, K)] + [(K, K)] * (L - 1) + [(K, M)]
    per_config = []
    for seed in hyper.seed:
        g = make_generator(seed)
        per_config.append([(torch.rand(fan_in, fan_out, generator=g, dtype=torch.float64) * 2 - 1)
                           / math.sqrt(fan_in) for fan_in, fan_out in shapes])
    names = layer_names(L) + ["V"]
    scales = [hyper.init_scale] * L + [hyper.top_init]
    return {name: (torch.stack([w[i] for w in per_config])
                   * torch.tensor(s, dtype=torch.float64)[:, None, None]).to(device, dtype)
            for i, (name, s) in enumerate(zip(names, scales))}


def effective(W: torch.Tensor, residual: bool) -> torch.Tensor:
    r""":math:`\tilde W_l`: :math:`W_l`, or :math:`I+W_l` for a residual layer."""
    if not residual:
        return W
    return W + torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)


@dataclass(frozen=True)
class Forward:
    """Pre-activations :math:`Z_l` and activations :math:`F_l` (``(B, m, K)`` each, in graph)
    and the outputs :math:`\\beta F_LV` (``(B, m, M)``)."""

    pre: list[torch.Tensor]
    F: list[torch.Tensor]
    out: torch.Tensor


def forward(params: dict[str, torch.Tensor], rows_left: torch.Tensor, rows_right: torch.Tensor,
            config: DeepConfig, beta: torch.Tensor | None = None) -> Forward:
    """The network on the samples whose first-layer rows (in the ``(B 2M, K)`` view of ``W1``)
    are ``rows_left`` / ``rows_right`` (each ``(B m,)``)."""
    W1 = params["W1"]
    B, K = W1.shape[0], W1.shape[-1]
    flat = W1.reshape(-1, K)
    Z = (flat[rows_left] + flat[rows_right]).reshape(B, -1, K)
    act = activation_by_name(config.activation)
    pre, F = [Z], [act(Z)]
    for name in layer_names(config.layers)[1:]:
        Z = F[-1] @ effective(params[name], config.residual)
        pre.append(Z)
        F.append(act(Z))
    out = F[-1] @ params["V"]
    if beta is not None:
        out = out * beta[:, None, None]
    return Forward(pre, F, out)


def one_hot(S: SampleSet, M: int) -> torch.Tensor:
    """Labels as weighted one-hot rows ``(B, m, M)`` (0 on padding)."""
    return torch.nn.functional.one_hot(S.target, M).to(S.weight.dtype) * S.weight[:, :, None]


def centred_labels(S: SampleSet, M: int) -> torch.Tensor:
    r""":math:`\tilde Y=P_1^\perp Y` on the real samples (``(B, m, M)``, 0 on padding)."""
    Y = one_hot(S, M)
    mean = Y.sum(1, keepdim=True) / S.count[:, None, None]
    return (Y - mean) * S.weight[:, :, None]


def loss_and_accuracy(out: torch.Tensor, S: SampleSet, M: int, kind: str
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per configuration: the loss averaged over the real samples (no ½, as the author's code)
    and the accuracy."""
    Y, w, n = one_hot(S, M), S.weight, S.count
    if kind == "mse_class":
        r = out - out.mean(-1, keepdim=True) - (Y - w[:, :, None] / M)
        r = r * w[:, :, None]
    elif kind == "mse_sample":
        r = (out - Y) * w[:, :, None]
        r = (r - r.sum(1, keepdim=True) / n[:, None, None]) * w[:, :, None]
    else:
        raise ValueError(f"loss: {kind!r} is not one of {', '.join(LOSSES)}")
    loss = r.square().sum((1, 2)) / n
    correct = (out.argmax(-1) == S.target).to(out.dtype) * w
    return loss, correct.sum(-1) / n


def layer_gradients(params: dict[str, torch.Tensor], S: SampleSet, M: int, config: DeepConfig,
                    objective: str = "loss", beta: torch.Tensor | None = None
                    ) -> tuple[list[torch.Tensor], Forward]:
    """:math:`G_1..G_L` (``(B, m, K)`` each) by autograd, and the forward pass (detached)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: {objective!r} is not one of {', '.join(OBJECTIVES)}")
    with torch.enable_grad():
        leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        fw = forward(leaves, S.rows_left, S.rows_right, config, beta)
        if objective == "loss":
            value = -loss_and_accuracy(fw.out, S, M, config.loss)[0].sum()
        else:
            Yt = centred_labels(S, M)
            value = 0.5 * (Yt.mT @ (fw.F[-1] * S.weight[:, :, None])).square().sum()
        grads = torch.autograd.grad(value, fw.F)
    detached = Forward([z.detach() for z in fw.pre], [f.detach() for f in fw.F],
                       fw.out.detach())
    return list(grads), detached


def label_kernel(Yt: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r""":math:`\tilde Y\tilde Y^\top A` for ``A`` of shape ``(B, m, c)``."""
    return Yt @ (Yt.mT @ A)


def gated_approximation(F_prev: torch.Tensor, pre: torch.Tensor, Yt: torch.Tensor,
                        activation: str, reading: str = "unit_mean") -> torch.Tensor:
    r"""§6's :math:`D_L\tilde Y\tilde Y^\top D_LF_{L-1}` with the gate per unit averaged
    (``"unit_mean"``: :math:`\tfrac1K\sum_jD_j\tilde Y\tilde Y^\top D_jF_{L-1}`) or one
    mean gate (``"mean_gate"``); ``pre`` is :math:`Z_L` (``(B, m, K)``)."""
    D = activation_by_name(activation).derivative(pre)
    if reading == "mean_gate":
        Dbar = D.mean(-1, keepdim=True)
        return Dbar * label_kernel(Yt, Dbar * F_prev)
    if reading != "unit_mean":
        raise ValueError(f"reading: {reading!r} is not one of {', '.join(READINGS)}")
    # T[c, j, a] = sum_i Yt_ic D_ij F_ia, then out_ia = sum_{c,j} Yt_ic D_ij T[c, j, a]: the
    # n x n kernels of the K units are never formed
    T = torch.einsum("bic,bij,bia->bcja", Yt, D, F_prev)
    return torch.einsum("bic,bij,bcja->bia", Yt, D, T) / D.shape[-1]


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine of two batched matrices (``(B, ...)`` -> ``(B,)``), each first divided by its
    largest entry: deep :math:`x^2` networks at small scales give entries whose products
    would underflow in float32."""
    dims = tuple(range(1, a.dim()))
    a = a / a.abs().amax(dims, keepdim=True)
    b = b / b.abs().amax(dims, keepdim=True)
    return (a * b).sum(dims) / (torch.linalg.vector_norm(a, dim=dims)
                                * torch.linalg.vector_norm(b, dim=dims))


def identity_deviation(W: torch.Tensor, entry_variance: float) -> dict[str, torch.Tensor]:
    r"""How far :math:`W W^\top` is from :math:`I` once :math:`W` (``(B, K_in, K_out)``, entries
    of variance ``entry_variance``) is rescaled to entries of variance :math:`1/K_{\rm out}`,
    the scale at which :math:`\mathbb E[WW^\top]=I`: ``rel_fro``
    :math:`=\|WW^\top-I\|_F/\|I\|_F` and ``op`` :math:`=\|WW^\top-I\|_2` (``(B,)`` each).
    For square :math:`W` (Marchenko-Pastur, ratio 1) they tend to 1 and 3, not 0."""
    if not entry_variance > 0:
        raise ValueError(f"entry_variance: {entry_variance} must be > 0")
    K_in, K_out = W.shape[-2:]
    U = W * math.sqrt(1.0 / (K_out * entry_variance))
    E = U @ U.mT - torch.eye(K_in, dtype=W.dtype, device=W.device)
    return {"rel_fro": torch.linalg.matrix_norm(E) / math.sqrt(K_in),
            "op": torch.linalg.matrix_norm(E, ord=2)}


def residual_terms(params: dict[str, torch.Tensor], S: SampleSet, M: int, config: DeepConfig,
                   objective: str = "energy") -> tuple[torch.Tensor, list[torch.Tensor]]:
    r"""The exact :math:`G_{{\rm res},1}` by autograd and the :math:`L` terms it splits into in
    the residual network :math:`F_l=\sigma(F_{l-1}+F_{l-1}W_l)`.

    The vector-Jacobian product of layer :math:`l` splits into a skip part
    :math:`\mathcal S_l(G)=D_l\circ G` and a branch part :math:`\mathcal B_l(G)=(D_l\circ G)
    W_l^\top`, each by autograd with the other path detached. Telescoping
    :math:`G_{l-1}=\mathcal S_l(G_l)+\mathcal B_l(G_l)` gives
    :math:`G_1=\mathcal S_{2..L}(G_L)+\sum_{l=2}^L\mathcal S_{2..l-1}(\mathcal B_l(G_l))`:
    the first term is :math:`G_L` carried down the skips (gated by
    :math:`\tilde D=\prod_lD_l`), then come the branches of layers :math:`L, L-1, \dots, 2`.
    Returns (autograd :math:`G_1`, the terms)."""
    if not config.residual or config.layers < 2:
        raise ValueError("config: residual_terms needs residual=True and layers >= 2")
    G, fw = layer_gradients(params, S, M, config, objective)
    act = activation_by_name(config.activation)
    names = layer_names(config.layers)

    def vjp(l: int, cotangent: torch.Tensor, part: str) -> torch.Tensor:
        """Layer ``l`` (1-based, >= 2) of the skip or branch path at cotangent ``G``."""
        with torch.enable_grad():
            x = fw.F[l - 2].detach().requires_grad_(True)
            W = params[names[l - 1]].detach()
            z = x + x.detach() @ W if part == "skip" else x.detach() + x @ W
            (g,) = torch.autograd.grad(act(z), x, cotangent)
        return g

    def down_skips(g: torch.Tensor, top: int) -> torch.Tensor:
        """Carry ``g`` from the output of layer ``top`` to that of layer 1 along skips."""
        for l in range(top, 1, -1):
            g = vjp(l, g, "skip")
        return g

    L = config.layers
    terms = [down_skips(G[L - 1], L)]
    terms += [down_skips(vjp(l, G[l - 1], "branch"), l - 1) for l in range(L, 1, -1)]
    return G[0], terms


def all_pairs(M: int, B: int, device: torch.device | str = "cpu"
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """First-layer rows of all :math:`M^2` pairs (``h_1``-major) for every configuration."""
    index = torch.arange(M * M, device=device)
    offset = (2 * M * torch.arange(B, device=device))[:, None]
    return ((offset + index // M).reshape(-1), (offset + M + index % M).reshape(-1))


@dataclass(frozen=True)
class IrrepBasis:
    r"""An orthonormal basis of :math:`\mathbb R^M` adapted to the isotypic decomposition:
    ``Q`` (``M x M``, the range of each :math:`\Pi_a` in turn), ``onehot`` (``M x R``: the
    component of each column) and the index of the trivial component (the constants)."""

    Q: torch.Tensor
    onehot: torch.Tensor
    trivial: int

    @classmethod
    def from_projectors(cls, projectors: torch.Tensor) -> IrrepBasis:
        R, M, _ = projectors.shape
        P = projectors.to(torch.float64)
        cols, labels = [], []
        for a in range(R):
            values, vectors = torch.linalg.eigh(P[a])
            keep = values > 0.5                                    # a projector: 0 or 1
            cols.append(vectors[:, keep])
            labels += [a] * int(keep.sum())
        Q = torch.cat(cols, 1)
        if Q.shape[1] != M:
            raise ValueError(f"projectors: their ranks sum to {Q.shape[1]}, not M = {M}")
        trivial = int((P - 1.0 / M).abs().amax((1, 2)).argmin())
        onehot = torch.nn.functional.one_hot(torch.tensor(labels), R).to(torch.float64)
        return cls(Q.to(projectors.device), onehot.to(projectors.device), trivial)


def band_purity(Z: torch.Tensor, basis: IrrepBasis) -> torch.Tensor:
    """Mean node purity (module docstring) of pre-activations ``Z`` ``(B, M^2, K)`` on all
    pairs (``h_1``-major); ``(B,)``."""
    M, R = basis.onehot.shape
    B, _, K = Z.shape
    Q, onehot, trivial = basis.Q.to(Z.dtype), basis.onehot.to(Z.dtype), basis.trivial
    Zk = Z.reshape(B, M, M, K).permute(0, 3, 1, 2)                 # (B, K, h1, h2)
    coeff = Q.T @ Zk @ Q                                           # coordinates in the basis
    power = onehot.T @ coeff.square() @ onehot                     # (B, K, R, R): P_ac
    total = power.sum((-2, -1))
    varying = total - power[..., trivial, trivial]
    nontrivial = [k for k in range(R) if k != trivial]
    bands = torch.stack([power[..., k, trivial] + power[..., trivial, k] + power[..., k, k]
                         for k in nontrivial], -1)                 # (B, K, R-1)
    node = bands.max(-1).values / varying
    # nodes whose varying power is roundoff (a constant pre-activation) have no purity
    live = varying > 1e3 * torch.finfo(Z.dtype).eps * total.amax(-1, keepdim=True)
    return torch.where(live, node, 0.0).sum(-1) / live.sum(-1)


def layer_purity(params: dict[str, torch.Tensor], M: int, config: DeepConfig,
                 basis: IrrepBasis) -> torch.Tensor:
    """Purity of every hidden layer's pre-activations on all pairs: ``(B, L)``."""
    B = params["W1"].shape[0]
    left, right = all_pairs(M, B, params["W1"].device)
    with torch.no_grad():
        fw = forward(params, left, right, config)
    return torch.stack([band_purity(Z, basis) for Z in fw.pre], 1)


class DeepGroupTrainer:
    """Full-batch training of a batch of deep networks on one group task (autograd, the
    optimisers of :mod:`numerics.optimizers` with per-configuration lr and weight decay).

    Records in :attr:`history` (a :class:`numerics.li2.trainer.History`): ``train_loss``,
    ``train_acc`` every epoch; ``test_loss``, ``test_acc`` every ``eval_every``; ``purity``
    ``(B, L)`` every ``purity_every`` when ``projectors`` are given; all at the last epoch.
    Epoch :math:`t` is the state after :math:`t` steps.
    """

    def __init__(self, table, hyper: Hyper, config: DeepConfig, *,
                 projectors: torch.Tensor | None = None, eval_every: int = 10,
                 purity_every: int = 10, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> None:
        if eval_every < 1 or purity_every < 1:
            raise ValueError("eval_every, purity_every: must be >= 1")
        self.device, self.dtype = torch.device(device), dtype
        self.hyper, self.config = hyper, config
        self.task = group_task(table, device=self.device)
        M = self.task.M
        if projectors is not None and tuple(projectors.shape[1:]) != (M, M):
            raise ValueError(f"projectors: shape {tuple(projectors.shape)} must be (R, {M}, {M})")
        self.basis = None if projectors is None else IrrepBasis.from_projectors(
            projectors.to(self.device))
        self.train_set, self.test_set = random_splits(self.task, hyper.p, hyper.data_seed, dtype)
        self.params = init_params(hyper, M, config, device=self.device, dtype=dtype)
        per = {"device": self.device, "dtype": dtype}
        self.beta = torch.tensor(hyper.out_scale, **per)
        self.optimizer = BatchedOptimizer(config.optimizer, self.params,
                                          lr=torch.tensor(hyper.lr, **per),
                                          wd=torch.tensor(hyper.eta, **per))
        self.deltas = {k: torch.zeros_like(v) for k, v in self.params.items()}
        self.eval_every, self.purity_every = eval_every, purity_every
        self.epoch = 0
        self.history = History()
        self._recorded = -1

    def _record_evaluations(self, last: bool) -> None:
        t, M = self.epoch, self.task.M
        if t % self.eval_every == 0 or last:
            with torch.no_grad():
                S = self.test_set
                out = forward(self.params, S.rows_left, S.rows_right, self.config, self.beta).out
                loss, acc = loss_and_accuracy(out, S, M, self.config.loss)
            self.history.add("test_loss", t, loss)
            self.history.add("test_acc", t, acc)
        if self.basis is not None and (t % self.purity_every == 0 or last):
            self.history.add("purity", t, layer_purity(self.params, M, self.config,
                                                       self.basis))

    def train(self, epochs: int) -> History:
        """Take ``epochs`` full-batch steps on every configuration; returns the history. The end
        of one call is the start of the next, recorded once."""
        if epochs < 0:
            raise ValueError(f"epochs: {epochs} must be >= 0")
        end, S, M = self.epoch + epochs, self.train_set, self.task.M
        names = list(self.params)
        while True:
            last = self.epoch == end
            new = self.epoch > self._recorded
            if new:
                self._record_evaluations(last)
            with torch.set_grad_enabled(not last):
                leaves = [self.params[k].requires_grad_(not last) for k in names]
                out = forward(self.params, S.rows_left, S.rows_right, self.config,
                              self.beta).out
                loss, acc = loss_and_accuracy(out, S, M, self.config.loss)
                grads = None if last else torch.autograd.grad(loss.sum(), leaves)
            for v in leaves:
                v.requires_grad_(False)
            if new:
                self.history.add("train_loss", self.epoch, loss.detach())
                self.history.add("train_acc", self.epoch, acc.detach())
                self._recorded = self.epoch
            if last:
                return self.history
            self.optimizer.step(self.params, dict(zip(names, grads)), self.deltas)
            self.epoch += 1


def rise_epochs(epochs: torch.Tensor, purity: torch.Tensor, fraction: float
                ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Per configuration and layer, the first logged epoch at which a layer's purity has
    covered ``fraction`` of the way from its initial value to 1:
    :math:`p_l(t)\ge p_l(0)+\theta(1-p_l(0))`. ``epochs`` ``(D,)``, ``purity`` ``(D, B, L)``;
    returns (epochs ``(B, L)``, the last logged epoch where never reached; ``reached`` bool).
    A NaN purity (a dead layer) never counts as reached."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction: {fraction} must lie in (0, 1)")
    target = purity[0] + fraction * (1 - purity[0])
    hit = purity >= target                                          # NaN compares False
    reached = hit.any(0)
    first = epochs[hit.to(torch.int8).argmax(0)].to(torch.float64)
    return torch.where(reached, first, float(epochs[-1])), reached
