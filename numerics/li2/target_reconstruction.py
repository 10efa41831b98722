r"""Li2 Thm. 3 (target reconstruction) in floating point: nodes built from isotypic bases,
their features on the full group task, and the top layer :math:`V` by least squares
(:math:`\eta=0`).

A node is :math:`\mathbf w=[\mathbf u;\mathbf v]\in\mathbb C^{2M}`; its feature at the sample
:math:`(h_1,h_2)` is :math:`\sigma(\mathbf x^\top\mathbf w)=(u_{h_1}+v_{h_2})^2` with the
holomorphic :math:`\sigma(z)=z^2` (no conjugation anywhere in the network). The nodes come in
pairs :math:`[\mathbf u;\pm\mathbf s]`, so that half the difference of a pair's features is the
cross part :math:`2u_{h_1}s_{h_2}` and half the sum the square part
:math:`u_{h_1}^2+s_{h_2}^2`. Complex features get complex :math:`V` (Hermitian least squares).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.li2.group_task import GroupTask, first_layer


def complex_dtype(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype with the precision of the real ``dtype``."""
    table = {torch.float64: torch.complex128, torch.float32: torch.complex64}
    if dtype not in table:
        raise ValueError(f"dtype: {dtype} must be torch.float64 or torch.float32")
    return table[dtype]


def node_features(W: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r""":math:`F=\sigma(XW)` with :math:`\sigma(z)=z^2` for the nodes in the rows of ``W``
    (``(K, 2M)``, real or complex): ``(n, K)``, samples first, not centred."""
    if W.dim() != 2:
        raise ValueError(f"W: needs a (K, 2M) matrix of nodes, got shape {tuple(W.shape)}")
    return first_layer(W, task).square().T


def centre(F: torch.Tensor) -> torch.Tensor:
    r""":math:`P_1^\perp F`: each column minus its mean over the samples (dimension 0)."""
    return F - F.mean(0, keepdim=True)


def centred_targets(task: GroupTask, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r""":math:`\tilde Y=P_1^\perp Y` (``(n, M)``), :math:`Y` the one-hot labels
    :math:`\mathbf e_{h_1h_2}`."""
    Y = torch.nn.functional.one_hot(task.target, task.M).to(dtype)
    return centre(Y)


def range_basis(P: torch.Tensor) -> torch.Tensor:
    r"""An orthonormal basis (columns) of the range of the Hermitian projector ``P``
    (``(M, M)``): the eigenvectors of eigenvalue 1 (``eigh``; a projector's eigenvalues are 0
    and 1, split at 1/2)."""
    values, vectors = torch.linalg.eigh(P)
    return vectors[:, values.real > 0.5]


def polarisation_vectors(B: torch.Tensor) -> torch.Tensor:
    r"""For a basis :math:`\mathbf b_1..\mathbf b_N` (columns of ``B``): the :math:`N^2`
    vectors :math:`\mathbf b_a`, :math:`\mathbf b_a+\mathbf b_b`, :math:`\mathbf b_a+i\mathbf
    b_b` (:math:`a<b`), rows of a complex ``(N^2, M)`` tensor, unit norm. Their
    :math:`\mathbf u\mathbf u^\ast` are a basis of :math:`\mathrm{End}(\mathrm{span}\,B)` over
    :math:`\mathbb C` (polarisation recovers every :math:`\mathbf b_a\mathbf b_b^\ast`)."""
    B = B.to(complex_dtype(B.real.dtype))
    N = B.shape[1]
    rows = [B[:, a] for a in range(N)]
    for a in range(N):
        for b in range(a + 1, N):
            rows += [B[:, a] + B[:, b], B[:, a] + 1j * B[:, b]]
    U = torch.stack(rows)
    return U / U.norm(dim=-1, keepdim=True)


def symmetric_vectors(B: torch.Tensor) -> torch.Tensor:
    r"""The :math:`N(N+1)/2` real vectors :math:`\mathbf b_a`, :math:`\mathbf b_a+\mathbf b_b`
    (:math:`a<b`), unit norm: their :math:`\mathbf u\mathbf u^\top` span the symmetric
    matrices on :math:`\mathrm{span}\,B`."""
    N = B.shape[1]
    rows = [B[:, a] for a in range(N)]
    rows += [B[:, a] + B[:, b] for a in range(N) for b in range(a + 1, N)]
    U = torch.stack(rows)
    return U / U.norm(dim=-1, keepdim=True)


def square_vectors(B: torch.Tensor) -> torch.Tensor:
    r"""The :math:`N^2` real vectors :math:`\mathbf b_a`, :math:`\mathbf b_a\pm\mathbf b_b`
    (:math:`a<b`), unit norm: one per dimension of :math:`\mathrm{End}(\mathrm{span}\,B)`."""
    N = B.shape[1]
    rows = [B[:, a] for a in range(N)]
    for a in range(N):
        for b in range(a + 1, N):
            rows += [B[:, a] + B[:, b], B[:, a] - B[:, b]]
    U = torch.stack(rows)
    return U / U.norm(dim=-1, keepdim=True)


def perturbed(U: torch.Tensor, B: torch.Tensor, scale: float,
              generator: torch.Generator) -> torch.Tensor:
    r""":math:`\mathbf u'=\mathbf u+\epsilon\|\mathbf u\|\,B\mathbf g/\|B\mathbf g\|` for each
    row of ``U`` (``B``: orthonormal basis columns of the component, :math:`\mathbf g`
    standard normal, drawn on the CPU in float64 from ``generator``): a perturbation of
    relative size ``scale`` inside the same component."""
    if not scale > 0:
        raise ValueError(f"scale: {scale} must be > 0")
    g = torch.randn(B.shape[1], U.shape[0], generator=generator, dtype=torch.float64)
    d = (B @ g.to(device=B.device, dtype=B.dtype)).T
    d = d / d.norm(dim=-1, keepdim=True)
    return U + scale * U.norm(dim=-1, keepdim=True) * d


def cos_sin_components(powers: torch.Tensor, dtype: torch.dtype = torch.float64
                       ) -> list[torch.Tensor]:
    r"""The real isotypic components of a cyclic group :math:`\mathbb Z_M` as orthonormal
    columns: :math:`[\cos(km\omega),\sin(km\omega)]` for :math:`k=1..\lceil M/2\rceil-1` and
    :math:`[(-1)^m]` for :math:`k=M/2` (even :math:`M`), :math:`\omega=2\pi/M`.
    ``powers[m]`` is the index of the element :math:`g^m` for a generator :math:`g`."""
    M = powers.shape[0]
    if M < 2:
        raise ValueError(f"powers: a cyclic group of order {M} < 2 has no nontrivial component")
    order = torch.argsort(powers)  # order[element] = m with g^m = element
    m = order.to(torch.float64)
    out = []
    for k in range(1, M // 2 + 1):
        angle = 2 * math.pi * k * m / M
        cols = [torch.cos(angle)] if 2 * k == M else [torch.cos(angle), torch.sin(angle)]
        B = torch.stack(cols, dim=1)
        out.append((B / B.norm(dim=0, keepdim=True)).to(dtype))
    return out


def paired_nodes(U: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    r"""Nodes :math:`[\mathbf u_j;+\mathbf s_j]`, :math:`[\mathbf u_j;-\mathbf s_j]` for the
    rows of ``U`` and ``S`` (``(B, M)`` each), interleaved: ``(2B, 2M)``, row ``2j`` the
    ``+`` node and ``2j+1`` the ``-`` node."""
    if U.shape != S.shape:
        raise ValueError(f"U, S: shapes {tuple(U.shape)} and {tuple(S.shape)} differ")
    plus, minus = torch.cat([U, S], -1), torch.cat([U, -S], -1)
    return torch.stack([plus, minus], 1).reshape(-1, U.shape[-1] * 2)


@dataclass(frozen=True)
class LeastSquares:
    r"""The minimum-norm least-squares solution :math:`V=\tilde F^+\tilde Y` (the
    :math:`\eta\to0` limit of ridge), the fit :math:`\hat Y=\tilde FV`, the relative residual
    :math:`\|\hat Y-\tilde Y\|_F/\|\tilde Y\|_F`, the numerical rank, the condition number of
    the kept singular values and the gap (smallest kept / largest dropped, inf if none
    dropped)."""

    V: torch.Tensor
    fitted: torch.Tensor
    relative_residual: float
    rank: int
    condition: float
    gap: float


def least_squares(F: torch.Tensor, Y: torch.Tensor, rcond: float) -> LeastSquares:
    r"""Solve :math:`\min_V\|\tilde Y-FV\|_F` by the SVD of ``F`` (``(n, K)``), keeping the
    singular values above ``rcond`` times the largest (a rank decision: the features of
    Thm. 3 are linearly dependent by construction, e.g. their square parts)."""
    if not 0 < rcond < 1:
        raise ValueError(f"rcond: {rcond} must lie in (0, 1)")
    if F.shape[0] != Y.shape[0]:
        raise ValueError(f"F, Y: {F.shape[0]} and {Y.shape[0]} samples differ")
    if F.is_complex() and not Y.is_complex():
        Y = Y.to(F.dtype)
    Uf, s, Vh = torch.linalg.svd(F, full_matrices=False)
    keep = s > rcond * s[0]
    r = int(keep.sum())
    if r == 0:
        raise ValueError("F: every singular value is below rcond times the largest")
    Ur, sr, Vr = Uf[:, :r], s[:r], Vh[:r].mH
    V = Vr @ ((Ur.mH @ Y) / sr[:, None])
    fitted = F @ V
    residual = float((fitted - Y).norm() / Y.norm())
    dropped = s[r:]
    gap = float(sr[-1] / dropped.max()) if dropped.numel() and dropped.max() > 0 else math.inf
    return LeastSquares(V, fitted, residual, r, float(sr[0] / sr[-1]), gap)


def target_arrangement(task: GroupTask) -> torch.Tensor:
    r"""Index ``[h, a]`` of the sample :math:`(h_1,h_2)=(ha,a^{-1})` (target :math:`h`) in the
    full task (samples :math:`h_1`-major): the order in which App. A.2 writes
    :math:`\mathbf c_U(h)=2\,\mathrm{diag}(R_h^\top U)`."""
    if not task.full:
        raise ValueError("task: the arrangement by target needs the full task (ratio 1)")
    M = task.M
    a = torch.arange(M, device=task.device)
    h1 = task.table[:, a]  # [h, a] -> h a
    return h1 * M + task.inverse[a][None, :]


def pair_parts(U: torch.Tensor, S: torch.Tensor, task: GroupTask
               ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Cross and square parts of the node pairs :math:`[\mathbf u;\pm\mathbf s]` (rows of
    ``U``, ``S``), from the network's features alone: :math:`(f_+-f_-)/2` and
    :math:`(f_++f_-)/2`, each ``(n, B)``, not centred."""
    F = node_features(paired_nodes(U, S), task)
    plus, minus = F[:, 0::2], F[:, 1::2]
    return (plus - minus) / 2, (plus + minus) / 2
