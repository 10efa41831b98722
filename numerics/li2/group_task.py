r"""Li2's group task (§4.2) in torch, by index gathers: the inputs, the energy, and the float
regular representation.

A finite group is its Cayley table: ``table[a, b]`` is the index of :math:`ab`. The task has
one sample per pair :math:`(h_1,h_2)` (all :math:`M^2` of them, or a random subset of ratio
:math:`p`) with input :math:`\mathbf x=[\mathbf e_{h_1};\mathbf e_{h_2}]\in\mathbb R^{2M}` and
label :math:`\mathbf e_{h_1h_2}`. Nothing is stored densely: the first layer is
:math:`\mathbf x^\top\mathbf w=w_{h_1}+w_{M+h_2}` (two gathers) and :math:`\tilde Y^\top\mathbf f`
is a sum by target minus the class frequencies times :math:`\mathbf 1^\top\mathbf f`.

Weights are batched as ``(..., 2M)``; internally the batch goes last, so every gather and
scatter moves whole contiguous rows. Callers with many weights should pass them in chunks of
about :math:`2^{20}/n` rows (see :mod:`numerics.li2.landscape`): the ``n x B`` intermediates then
stay in cache, several times faster on a CPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.activations import Activation


def cayley_tensor(table, device: torch.device | str = "cpu") -> torch.Tensor:
    """The table as an ``M x M`` long tensor; a ValueError names a bad shape or entry.

    Only the shape and the range of the entries are checked here (the group axioms are
    :func:`theory.groups.from_cayley_table`'s job).
    """
    t = torch.as_tensor(table, dtype=torch.long)
    if t.dim() != 2 or t.shape[0] != t.shape[1] or t.shape[0] == 0:
        raise ValueError(f"table: needs a non-empty square table, got shape {tuple(t.shape)}")
    M = t.shape[0]
    if int(t.min()) < 0 or int(t.max()) >= M:
        raise ValueError(f"table: entries must be element indices in range({M}), "
                         f"found {int(t.min())}..{int(t.max())}")
    return t.to(device)


def _identity_and_inverse(t: torch.Tensor) -> tuple[int, torch.Tensor]:
    M = t.shape[0]
    ar = torch.arange(M, device=t.device)
    rows = (t == ar).all(dim=1) & (t.T == ar).all(dim=1)
    if not bool(rows.any()):
        raise ValueError("table: no identity element (no e with e*a = a*e = a for all a)")
    e = int(rows.nonzero()[0])
    hits = (t == e) & (t.T == e)
    if not bool(hits.any(dim=1).all()):
        bad = int((~hits.any(dim=1)).nonzero()[0])
        raise ValueError(f"table: element {bad} has no two-sided inverse")
    return e, hits.to(torch.int8).argmax(dim=1)


@dataclass(frozen=True)
class GroupTask:
    r"""The samples of the group task: operand indices ``left`` (:math:`h_1`), ``right``
    (:math:`h_2`) and ``target`` (:math:`h_1h_2`), each of length ``n``; the class counts
    ``counts`` (length ``M``); the table, the identity and the inverse map."""

    table: torch.Tensor
    identity: int
    inverse: torch.Tensor
    left: torch.Tensor
    right: torch.Tensor
    target: torch.Tensor
    counts: torch.Tensor

    @property
    def M(self) -> int:
        return self.table.shape[0]

    @property
    def n(self) -> int:
        return self.left.shape[0]

    @property
    def device(self) -> torch.device:
        return self.table.device

    @property
    def full(self) -> bool:
        return self.n == self.M**2


def group_task(table, *, ratio: float = 1.0, generator: torch.Generator | None = None,
               device: torch.device | str = "cpu") -> GroupTask:
    r"""The task on all :math:`n=M^2` pairs (``ratio = 1``) or on :math:`n=\mathrm{round}(pM^2)`
    pairs drawn without replacement from ``generator`` (``0 < ratio < 1``; CPU draw, so a seed
    gives the same subset on every device). Samples are ordered :math:`h_1`-major."""
    t = cayley_tensor(table, device)
    M = t.shape[0]
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio: {ratio} must lie in (0, 1]")
    identity, inverse = _identity_and_inverse(t)
    index = torch.arange(M * M)
    if ratio < 1:
        if generator is None:
            raise ValueError("generator: a subset (ratio < 1) needs a torch.Generator")
        n = round(ratio * M * M)
        if n < 2:
            raise ValueError(f"ratio: {ratio} keeps {n} of {M * M} pairs; at least 2 are needed "
                             f"to centre the labels")
        index = torch.randperm(M * M, generator=generator)[:n].sort().values
    index = index.to(device)
    left, right = index // M, index % M
    target = t[left, right]
    counts = torch.bincount(target, minlength=M)
    return GroupTask(t, identity, inverse, left, right, target, counts)


def first_layer(w: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r""":math:`X\mathbf w` for each row of ``w`` (``(..., 2M)`` in, ``(..., n)`` out):
    :math:`w_{h_1}+w_{M+h_2}` by two gathers."""
    if w.shape[-1] != 2 * task.M:
        raise ValueError(f"w: last dimension {w.shape[-1]} must be 2M = {2 * task.M}")
    return w[..., task.left] + w[..., task.right + task.M]


def _rows(w: torch.Tensor) -> torch.Tensor:
    """``(..., d)`` to ``(d, B)``: the batch last, so index ops move contiguous rows."""
    return w.reshape(-1, w.shape[-1]).T.contiguous()


def centred_label_projection(f: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r""":math:`\tilde Y^\top\mathbf f` for ``f`` of shape ``(n, B)`` (samples first): the sum of
    ``f`` over each target class minus :math:`(n_m/n)\,\mathbf 1^\top\mathbf f`, since
    :math:`\tilde Y=Y-\mathbf 1\bar{\mathbf y}^\top` with :math:`\bar y_m=n_m/n`."""
    sums = torch.zeros(task.M, f.shape[1], dtype=f.dtype, device=f.device)
    sums = sums.index_add(0, task.target, f)
    freq = (task.counts.to(f.dtype) / task.n)[:, None]
    return sums - freq * f.sum(0, keepdim=True)


def group_energy(w: torch.Tensor, task: GroupTask, act: Activation) -> torch.Tensor:
    r""":math:`\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|^2` (Eq. 7) on
    the group task, one value per row of ``w`` (``(..., 2M)`` in, ``(...)`` out)."""
    if w.shape[-1] != 2 * task.M:
        raise ValueError(f"w: last dimension {w.shape[-1]} must be 2M = {2 * task.M}")
    W = _rows(w)
    # Advanced indexing, not index_select: its backward (an accumulating index_put) is several
    # times faster on the CPU for these long, repeated indices.
    pre = W[task.left] + W[task.right + task.M]
    proj = centred_label_projection(act(pre), task)
    return 0.5 * proj.square().sum(0).reshape(w.shape[:-1])


def dense_inputs(task: GroupTask, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor,
                                                                              torch.Tensor]:
    r"""The dense ``X`` (``n x 2M``, rows :math:`[\mathbf e_{h_1};\mathbf e_{h_2}]`) and one-hot
    ``Y`` (``n x M``): for cross-checks against :mod:`numerics.li2.energy` on small groups only."""
    M, n = task.M, task.n
    X = torch.zeros(n, 2 * M, dtype=dtype, device=task.device)
    rows = torch.arange(n, device=task.device)
    X[rows, task.left] = 1
    X[rows, task.right + M] = 1
    Y = torch.nn.functional.one_hot(task.target, M).to(dtype)
    return X, Y


def inversion(u: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r""":math:`P\mathbf u` with :math:`P\mathbf e_h=\mathbf e_{h^{-1}}`, i.e.
    :math:`(P\mathbf u)_h=u_{h^{-1}}` (a gather; ``u`` is ``(..., M)``)."""
    return u.index_select(-1, task.inverse)


# --- the regular representation in floating point ---------------------------------------------

def regular_matrices(table, dtype: torch.dtype = torch.float64,
                     device: torch.device | str = "cpu") -> torch.Tensor:
    r""":math:`R_h` for every ``h`` (``M x M x M``), with :math:`R_h\mathbf e_b=\mathbf e_{hb}`:
    ``R[h, table[h, b], b] = 1``, built by a scatter from the table alone."""
    t = cayley_tensor(table, device)
    M = t.shape[0]
    R = torch.zeros(M, M, M, dtype=dtype, device=t.device)
    R.scatter_(1, t[:, None, :], 1.0)
    return R


def inversion_matrix(table, dtype: torch.dtype = torch.float64,
                     device: torch.device | str = "cpu") -> torch.Tensor:
    r""":math:`P` with :math:`P\mathbf e_h=\mathbf e_{h^{-1}}` (``M x M``), from the table."""
    t = cayley_tensor(table, device)
    _, inverse = _identity_and_inverse(t)
    M = t.shape[0]
    P = torch.zeros(M, M, dtype=dtype, device=t.device)
    P[inverse, torch.arange(M, device=t.device)] = 1
    return P


def conjugacy_labels(table) -> torch.Tensor:
    r"""For each element, the least index in its conjugacy class
    :math:`\{xgx^{-1}\}` (computed by gathers over all ``x``)."""
    t = cayley_tensor(table)
    _, inverse = _identity_and_inverse(t)
    xg = t  # xg[x, g] = x g
    conj = t[xg, inverse[:, None].expand_as(xg)]  # (x g) x^-1
    return conj.min(dim=0).values


def class_algebra_dimensions(table, generator: torch.Generator,
                             dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""The dimensions :math:`d_k` of the complex irreps, numerically, by Burnside's method.

    The class sums :math:`K_a=\sum_{g\in C_a}R_g` span the centre of the group algebra;
    :math:`K_aK_b=\sum_c n_{abc}K_c`. A random combination of the matrices
    :math:`(N_a)_{cb}=n_{abc}` is diagonalised (``torch.linalg.eig``); its eigenvectors
    diagonalise every :math:`N_a`, with eigenvalue :math:`\omega_k(a)=|C_a|\chi_k(a)/d_k` on
    irrep ``k``. Column orthogonality :math:`\sum_a|C_a||\chi_k(a)|^2=M` then gives
    :math:`d_k^2=M/\sum_a|\omega_k(a)|^2/|C_a|`. Returns the ``d_k`` as floats, ascending.
    Uses no character table, only the Cayley table.
    """
    t = cayley_tensor(table)
    M = t.shape[0]
    labels = conjugacy_labels(t)
    reps = labels.unique()
    r = reps.shape[0]
    member = (labels[None, :] == reps[:, None]).to(dtype)  # (r, M): indicator of each class
    sizes = member.sum(1)
    # n_abc = #{(x, y) in C_a x C_b : xy = g_c}, g_c the representative of class c.
    hits = torch.zeros(r, r, r, dtype=dtype)
    for c in range(r):
        prod_is_gc = (t == reps[c]).to(dtype)  # [x, y] = 1 where xy = g_c
        hits[:, :, c] = member @ prod_is_gc @ member.T
    N = hits.permute(0, 2, 1)  # N[a][c, b] = n_abc
    alpha = torch.randn(r, generator=generator, dtype=torch.float64).to(dtype)
    _, V = torch.linalg.eig(torch.einsum("a,acb->cb", alpha, N))
    Vinv = torch.linalg.inv(V)
    omega = torch.stack([torch.diagonal(Vinv @ N[a].to(V.dtype) @ V) for a in range(r)])
    d2 = M / (omega.abs().square() / sizes[:, None]).sum(0)
    return d2.sqrt().sort().values


def isotypic_dimensions(table, generator: torch.Generator,
                        dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""Dimensions of the real isotypic components of :math:`\mathbb R^M`, numerically,
    ascending.

    A random symmetric central element :math:`Z=\sum_c\alpha_c(K_c+K_c^\top)` of the group
    algebra (:math:`K_c` the class sums of the float :math:`R_g`) acts on each real isotypic
    component as one scalar, distinct between components for almost every :math:`\alpha`;
    the multiplicities of the eigenvalues of :math:`Z` (``eigh``; eigenvalues closer than
    :math:`10^{-8}` of the largest count as one) are the dimensions.
    """
    t = cayley_tensor(table)
    labels = conjugacy_labels(t)
    reps = labels.unique()
    R = regular_matrices(t, dtype)
    alpha = torch.randn(reps.shape[0], generator=generator, dtype=torch.float64).to(dtype)
    weights = alpha[torch.searchsorted(reps, labels)]  # alpha of each element's class
    K = torch.einsum("g,gab->ab", weights, R)
    values = torch.linalg.eigvalsh(K + K.T)
    scale = values.abs().max()
    breaks = ((values[1:] - values[:-1]) > 1e-8 * scale).nonzero().flatten() + 1
    edges = torch.cat([torch.tensor([0]), breaks, torch.tensor([values.shape[0]])])
    return (edges[1:] - edges[:-1]).sort().values.to(dtype)
