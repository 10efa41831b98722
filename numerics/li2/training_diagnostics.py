r"""Diagnostics of a batched two-layer network on a group task, computed every few epochs.

Each group maps a :class:`Snapshot` (the weights after :math:`t` steps and the training-set
forward pass at them) to named ``(B, ...)`` tensors; nothing leaves the device. Notation as in
Li2 §2.1: :math:`F=\sigma(XW)` on the :math:`n` training samples, :math:`\hat Y=\beta FV`,
:math:`P_1^\perp` the sample centring, :math:`\tilde F=P_1^\perp F`,
:math:`\tilde Y=P_1^\perp Y` with one-hot :math:`Y`.

Groups (:data:`GROUPS`):

* ``gradient``: ``gf_norm`` :math:`=\|G_F\|_F`, :math:`G_F=P_1^\perp(Y-\hat Y)V^\top` (Eq. 2;
  also the third party's ``gF_norm``; the author's code logs the uncentred
  :math:`\|(Y_c-\hat Y)V^\top\|`);
* ``gram``: ``ftf_ratio``, the mean :math:`|\cdot|` off the diagonal over the mean
  :math:`|\cdot|` on it of :math:`\tilde F^\top\tilde F`; ``fft_ratio``, the same for
  :math:`P_1^\perp FF^\top` (the author's ``compute_diag_off_diag_avg``); ``fft_dist``, the
  author's ``fit_diag_11``: :math:`\|FF^\top-(a-b)I-b\mathbf 1\mathbf 1^\top\|_F/\|FF^\top\|_F`
  with :math:`a, b` the mean diagonal and off-diagonal entries. Optionally on a strided
  subset of nodes / samples (``gram_nodes``, ``gram_samples``; nodes are exchangeable at
  initialisation, so a fixed stride is an unbiased choice and needs no random state);
* ``spectrum``: the ``spectrum_top`` largest eigenvalues of :math:`\tilde F^\top\tilde F` (from
  the smaller of the two Grams, in float64) and its trace;
* ``energy``: per node :math:`\mathcal E(\mathbf w_j)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf
  w_j)\|^2` (Eq. 7) at the weights as they are (``node_energy``) and on the unit sphere
  (``node_energy_sphere``, at :math:`\mathbf w_j/\|\mathbf w_j\|`), and ``node_norm``;
* ``updates``: cosine between consecutive changes :math:`\Delta W_t=W_t-W_{t-1}` and
  :math:`\Delta W_{t-1}` (``w_update_cos``; the cosine distance is one minus it), the same for
  :math:`V`, and the relative sizes :math:`\|\Delta W_t\|/\|W_t\|`, :math:`\|\Delta V_t\|/\|V_t\|`;
* ``coupling`` (Eq. 6): per node the cosine of :math:`\mathbf g_j` with
  :math:`\tilde Y\tilde Y^\top\tilde{\mathbf f}_j` (``node_cos``), the same in weight space,
  :math:`X^\top D_j\mathbf g_j` against :math:`\nabla\mathcal E(\mathbf w_j)=X^\top D_j\tilde
  Y\tilde Y^\top\mathbf f_j` (``node_cos_w``), the global cosine of :math:`G_F` with
  :math:`\tilde Y\tilde Y^\top\tilde F` (``global_cos``: the best single constant leaves the
  relative residual :math:`\sqrt{1-\cos^2}`), the spread of the per-node least-squares
  constants :math:`a_j=\langle\mathbf g_j,\mathbf h_j\rangle/\|\mathbf h_j\|^2`
  (``scale_cv``: standard deviation over mean), and the third party's independence proxy,
  the median :math:`|\cos(\mathbf g_j,\mathbf g_\ell)|` over node pairs (``pair_cos``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from numerics.activations import activation
from numerics.li2.train_splits import SampleSet

GROUPS = ("gradient", "gram", "spectrum", "energy", "updates", "coupling")


@dataclass(frozen=True)
class Snapshot:
    """What the groups read: weights after ``epoch`` steps and the training forward pass."""

    epoch: int
    M: int
    activation: str
    W: torch.Tensor          # (B, 2M, K)
    Vt: torch.Tensor         # (B, M, K): V transposed
    pre: torch.Tensor        # (B, m, K): X W on the (padded) training set
    F: torch.Tensor          # (B, m, K): sigma(X W)
    Ot: torch.Tensor         # (B, M, m): the outputs beta F V, transposed
    Y: torch.Tensor          # (B, M, m): one-hot labels, 0 on padding
    train: SampleSet
    dW: tuple[torch.Tensor, torch.Tensor] | None = None   # (Delta W_t, Delta W_(t-1))
    dV: tuple[torch.Tensor, torch.Tensor] | None = None
    gram_nodes: int | None = None
    gram_samples: int | None = None
    spectrum_top: int = 0


def _w(s: Snapshot) -> torch.Tensor:
    """Sample weights as ``(B, m, 1)``."""
    return s.train.weight[:, :, None]


def _stride(size: int, keep: int | None) -> slice:
    """Every ``ceil(size / keep)``-th index: at most ``keep`` of them (all when ``None``)."""
    return slice(None) if keep is None or keep >= size else slice(None, None, -(-size // keep))


def _one_config(s: Snapshot, fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], dict]
                ) -> dict[str, torch.Tensor]:
    """``fn(F_b, w_b, n_b)`` for each configuration (weighted ``F_b``, ``m x K``), stacked: the
    Gram matrices are built one configuration at a time, so memory stays ``O(K^2 + n^2)``."""
    out: dict[str, list[torch.Tensor]] = {}
    for b in range(s.F.shape[0]):
        w = s.train.weight[b]
        for k, v in fn(s.F[b] * w[:, None], w, s.train.count[b]).items():
            out.setdefault(k, []).append(v)
    return {k: torch.stack(v) for k, v in out.items()}


def _centred_residual(s: Snapshot) -> torch.Tensor:
    r""":math:`(P_1^\perp(Y-\hat Y))^\top` on the real samples (``(B, M, m)``, 0 on padding)."""
    w = s.train.weight[:, None, :]
    R = (s.Y - s.Ot) * w
    return (R - R.sum(-1, keepdim=True) / s.train.count[:, None, None]) * w


def gradient(s: Snapshot) -> dict[str, torch.Tensor]:
    r""":math:`\|G_F\|_F` with :math:`G_F=R V^\top`, :math:`R=P_1^\perp(Y-\hat Y)`, from
    :math:`\|RV^\top\|_F^2=\langle R^\top R, V^\top V\rangle_F`: two :math:`M\times M` Grams
    (:math:`O(M^2(n+K))`) instead of the :math:`n\times K` product (:math:`O(nMK)`)."""
    R = _centred_residual(s)
    square = ((R @ R.mT) * (s.Vt @ s.Vt.mT)).sum((-2, -1))
    # the inner product of two positive semi-definite matrices is >= 0; rounding may not be
    return {"gf_norm": square.clamp(min=0).sqrt()}


def backprop_gradient(s: Snapshot) -> torch.Tensor:
    r""":math:`G_F=P_1^\perp(Y-\hat Y)V^\top` on the real samples (``(B, m, K)``, 0 on padding)."""
    return _centred_residual(s).mT @ s.Vt


#: the symmetric Grams are built from the blocks on and above the diagonal of a
#: ``_GRAM_BLOCKS x _GRAM_BLOCKS`` partition: (b + 1) / (2 b) of the full product's flops
_GRAM_BLOCKS = 4


def _upper_blocks(A: torch.Tensor) -> Iterator[tuple[slice, slice, torch.Tensor]]:
    """``(I, J, A[I] @ A[J]^T)`` for the row blocks ``I <= J`` of ``A``: the blocks on and
    above the diagonal of the symmetric :math:`AA^\top`."""
    r = A.shape[0]
    size = -(-r // _GRAM_BLOCKS)
    cuts = [slice(i, min(i + size, r)) for i in range(0, r, size)]
    for a, I in enumerate(cuts):
        for J in cuts[a:]:
            yield I, J, A[I] @ A[J].T


def _ftf_ratio(Ft: torch.Tensor) -> torch.Tensor:
    r"""Mean :math:`|\cdot|` off the diagonal over mean :math:`|\cdot|` on it of
    :math:`\tilde F^\top\tilde F` (``Ft``: ``m x k``), from the upper blocks."""
    k = Ft.shape[1]
    total = diag = Ft.new_zeros(())
    for I, J, G in _upper_blocks(Ft.T):
        total = total + (1 if I == J else 2) * G.abs_().sum()
        if I == J:
            diag = diag + G.diagonal().sum()
    return ((total - diag) / (k * (k - 1))) / (diag / k)


def _fft_stats(Fr: torch.Tensor, valid: torch.Tensor, mean_row: torch.Tensor
               ) -> dict[str, torch.Tensor]:
    r"""``fft_ratio`` and ``fft_dist`` of the rows ``Fr`` (weighted; padding rows are 0 and
    ``valid`` 0), from the upper blocks of :math:`FF^\top`. :math:`P_1^\perp FF^\top` is
    :math:`FF^\top-\mathbf 1\mathbf c^\top` with :math:`c_j=\mathbf f_j^\top\bar{\mathbf
    f}`, so a block :math:`(I,J)` of :math:`FF^\top` gives both its blocks :math:`(I,J)` and
    (transposed) :math:`(J,I)`. The fit :math:`(a-b)I+b\mathbf 1\mathbf 1^\top` has :math:`a`
    the mean diagonal entry and :math:`b` the mean off-diagonal one, both from :math:`F`
    directly (:math:`\operatorname{tr}FF^\top=\sum_i\|\mathbf f_i\|^2`,
    :math:`\mathbf 1^\top FF^\top\mathbf 1=\|F^\top\mathbf 1\|^2`), so each block's misfit is
    summed as it comes (masked sums are :math:`v_I^\top|X|v_J`)."""
    c = Fr @ mean_row
    k = valid.sum()
    trace = Fr.square().sum()
    a = trace / k
    b = (Fr.sum(0).square().sum() - trace) / (k * (k - 1))
    abs_total = abs_diag = misfit = norm = Fr.new_zeros(())
    for I, J, R in _upper_blocks(Fr):
        vI, vJ = valid[I], valid[J]
        abs_total = abs_total + vI @ (R - c[J]).abs_() @ vJ
        D = R - b
        if I == J:
            d = R.diagonal()
            abs_diag = abs_diag + ((d - c[I]).abs() * vI).sum()
            D.diagonal().sub_(a - b)
            twice = 1
        else:
            abs_total = abs_total + vI @ (R - c[I][:, None]).abs_() @ vJ
            twice = 2
        misfit = misfit + twice * (vI @ D.square_() @ vJ)
        norm = norm + twice * R.square().sum()
    return {"fft_ratio": ((abs_total - abs_diag) / (k * (k - 1))) / (abs_diag / k),
            "fft_dist": (misfit / norm).sqrt()}


def gram(s: Snapshot) -> dict[str, torch.Tensor]:
    nodes = _stride(s.F.shape[-1], s.gram_nodes)
    rows = _stride(s.F.shape[1], s.gram_samples)

    def one(Fw: torch.Tensor, w: torch.Tensor, n: torch.Tensor) -> dict[str, torch.Tensor]:
        mean_row = Fw.sum(0) / n                                  # (1/n) 1^T F
        Ft = (Fw - mean_row) * w[:, None]
        return {"ftf_ratio": _ftf_ratio(Ft[:, nodes]),
                **_fft_stats(Fw[rows], w[rows], mean_row)}

    return _one_config(s, one)


def spectrum(s: Snapshot) -> dict[str, torch.Tensor]:
    def one(Fw: torch.Tensor, w: torch.Tensor, n: torch.Tensor) -> dict[str, torch.Tensor]:
        Ft = ((Fw - Fw.sum(0) / n) * w[:, None]).double()
        small = Ft.T @ Ft if Ft.shape[1] <= Ft.shape[0] else Ft @ Ft.T
        values = torch.linalg.eigvalsh(small).flip(-1)
        return {"ftf_top": values[:max(s.spectrum_top, 1)].to(Fw.dtype),
                "ftf_trace": values.sum().to(Fw.dtype)}

    return _one_config(s, one)


def _class_projection(s: Snapshot, F: torch.Tensor) -> torch.Tensor:
    r""":math:`\tilde Y^\top F` (``(B, M, K)``) on the real samples: sums by target class (the
    one-hot ``Y`` is 0 on padding) minus the class frequencies times :math:`\mathbf 1^\top F`
    (weighted, so padding rows of ``F`` do not count)."""
    freq = s.Y.sum(-1, keepdim=True) / s.train.count[:, None, None]  # (B, M, 1): n_m / n
    return s.Y @ F - freq * (s.train.weight[:, None, :] @ F)


def energy(s: Snapshot) -> dict[str, torch.Tensor]:
    act = activation(s.activation)
    norm = torch.linalg.vector_norm(s.W, dim=1)                     # (B, K)
    raw = 0.5 * _class_projection(s, s.F).square().sum(1)
    sphere = 0.5 * _class_projection(s, act(s.pre / norm[:, None, :])).square().sum(1)
    return {"node_energy": raw, "node_energy_sphere": sphere, "node_norm": norm}


def _cos(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    return (a * b).sum(dims) / (torch.linalg.vector_norm(a, dim=dims)
                                * torch.linalg.vector_norm(b, dim=dims))


def updates(s: Snapshot) -> dict[str, torch.Tensor]:
    B = s.W.shape[0]
    nan = torch.full((B,), float("nan"), dtype=s.W.dtype, device=s.W.device)
    out = {}
    for name, pair, p in (("w", s.dW, s.W), ("v", s.dV, s.Vt)):
        if pair is None:
            out[f"{name}_update_cos"], out[f"{name}_update_rel"] = nan, nan
            continue
        cur, prev = pair
        out[f"{name}_update_cos"] = _cos(cur, prev, (-2, -1))
        out[f"{name}_update_rel"] = (torch.linalg.vector_norm(cur, dim=(-2, -1))
                                     / torch.linalg.vector_norm(p, dim=(-2, -1)))
    return out


def label_direction(s: Snapshot) -> torch.Tensor:
    r""":math:`H=\tilde Y\tilde Y^\top\tilde F` on the real samples (``(B, m, K)``): row
    :math:`i` is :math:`Z_{y_i}-\bar{\mathbf y}^\top Z` with :math:`Z=\tilde Y^\top F`."""
    w = _w(s)
    Z = _class_projection(s, s.F)                                    # (B, M, K)
    freq = s.Y.sum(-1, keepdim=True) / s.train.count[:, None, None]  # (B, M, 1)
    return (s.Y.mT @ Z - (freq * Z).sum(1, keepdim=True)) * w


def input_transpose(s: Snapshot, A: torch.Tensor) -> torch.Tensor:
    r""":math:`X^\top A` for ``A`` of shape ``(B, m, K)`` on the training set: two scatter-adds
    into the rows :math:`h_1` and :math:`M+h_2` (``(B, 2M, K)`` out)."""
    B, m, K = A.shape
    out = torch.zeros(B * 2 * s.M, K, dtype=A.dtype, device=A.device)
    flat = A.reshape(B * m, K)
    out.index_add_(0, s.train.rows_left, flat)
    out.index_add_(0, s.train.rows_right, flat)
    return out.reshape(B, 2 * s.M, K)


def coupling(s: Snapshot) -> dict[str, torch.Tensor]:
    G = backprop_gradient(s)
    H = label_direction(s)
    D = activation(s.activation).derivative(s.pre)
    node_cos = _cos(G, H, 1)
    node_cos_w = _cos(input_transpose(s, D * G), input_transpose(s, D * H), 1)
    scale = (G * H).sum(1) / H.square().sum(1)
    nodes = _stride(G.shape[-1], s.gram_nodes)
    Gs = G[:, :, nodes]
    Gs = Gs / torch.linalg.vector_norm(Gs, dim=1, keepdim=True)
    k = Gs.shape[-1]
    upper = torch.triu_indices(k, k, offset=1, device=Gs.device)
    pair = torch.stack([(g.T @ g)[upper[0], upper[1]].abs().median() for g in Gs])
    return {"node_cos": node_cos, "node_cos_w": node_cos_w,
            "global_cos": _cos(G, H, (-2, -1)),
            "scale_cv": scale.std(-1) / scale.mean(-1).abs(), "pair_cos": pair}


_GROUP_FUNCTIONS: dict[str, Callable[[Snapshot], dict[str, torch.Tensor]]] = {
    "gradient": gradient, "gram": gram, "spectrum": spectrum, "energy": energy,
    "updates": updates, "coupling": coupling}


def check_groups(groups: Sequence[str]) -> tuple[str, ...]:
    """The group names, validated (a ValueError lists the allowed ones)."""
    bad = [g for g in groups if g not in GROUPS]
    if bad:
        raise ValueError(f"diagnostics: {bad} are not among {', '.join(GROUPS)}")
    return tuple(groups)


def compute(groups: Sequence[str], snapshot: Snapshot) -> dict[str, torch.Tensor]:
    """Every named group at ``snapshot``, merged into one dict of ``(B, ...)`` tensors."""
    out: dict[str, torch.Tensor] = {}
    for g in check_groups(groups):
        if g == "spectrum" and snapshot.spectrum_top < 1:
            continue
        out.update(_GROUP_FUNCTIONS[g](snapshot))
    return out
