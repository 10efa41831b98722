r"""Stage-I problems of Li2 (App. C), batched: uncentred features :math:`F` and one-hot labels
:math:`Y` whose centred parts :math:`\tilde F = P_1^\perp F`, :math:`\tilde Y = P_1^\perp Y`
satisfy the assumptions a check asks for, or deliberately do not: full column rank (A1),
realisability :math:`\mathrm{col}(\tilde Y) \subseteq \mathrm{col}(\tilde F)` (A2), a
prescribed spectrum. All draws come from the ``generator`` passed in.
"""
from __future__ import annotations

import torch

from numerics.random import randn
from numerics.li2.two_layer import center


def balanced_labels(batch: int, n: int, M: int, generator: torch.Generator, *,
                    device: torch.device | str = "cpu",
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``batch`` one-hot label matrices ``n x M`` in which every class appears
    ``floor(n/M)`` or ``ceil(n/M)`` times, in random order (so :math:`\\tilde Y` has rank
    ``M - 1`` whenever ``n >= M``)."""
    if not (n >= 1 and M >= 1):
        raise ValueError(f"n, M: {n}, {M} must be >= 1")
    labels = torch.stack([torch.randperm(n, generator=generator) % M for _ in range(batch)])
    return torch.nn.functional.one_hot(labels, M).to(device=device, dtype=dtype)


def draw_problems(batch: int, n: int, K: int, M: int, generator: torch.Generator, *,
                  realisable: bool, device: torch.device | str = "cpu",
                  dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``batch`` problems ``(F, Y)``: uncentred features ``(batch, n, K)`` with a random
    per-feature mean (for the loss to remove) and balanced one-hot labels ``(batch, n, M)``.

    ``realisable=False``: Gaussian features. ``realisable=True``: the first ``M - 1`` features
    are :math:`YC` (C Gaussian, M x (M-1)) and the rest Gaussian, so
    :math:`\mathrm{col}(\tilde Y) \subseteq \mathrm{col}(\tilde F)` (A2); this needs
    ``M - 1 <= K``. Full column rank (A1) needs ``K <= n - 1``; neither is imposed here, the
    caller evaluates them on the data.
    """
    for name, value in (("batch", batch), ("n", n), ("K", K), ("M", M)):
        if value < 1:
            raise ValueError(f"{name}: {value} must be >= 1")
    if realisable and K < M - 1:
        raise ValueError(f"K: {K} < M - 1 = {M - 1}; realisable features need K >= M - 1")
    Y = balanced_labels(batch, n, M, generator, dtype=torch.float64)
    Z = randn(batch, n, K, generator=generator)
    if realisable:
        C = randn(batch, M, M - 1, generator=generator)
        Z = torch.cat([Y @ C, Z[..., M - 1:]], dim=-1)
    F = Z + randn(batch, 1, K, generator=generator)
    return F.to(device=device, dtype=dtype), Y.to(device=device, dtype=dtype)


def realisable_features_with_spectrum(Y: torch.Tensor, singular_values: torch.Tensor, K: int,
                                      generator: torch.Generator, *, offset: float = 1.0
                                      ) -> torch.Tensor:
    r"""Uncentred features ``n x K`` for one-hot labels ``Y`` (n x M) with
    :math:`\tilde F = U\,\mathrm{diag}(s)\,W^\top + 0` after centring, where the first
    :math:`r = \mathrm{rank}(\tilde Y)` columns of :math:`U` span :math:`\mathrm{col}(\tilde Y)`
    (so (A2) holds) and the rest are random, all orthonormal and orthogonal to
    :math:`\mathbf 1`; :math:`W` is a random orthogonal K x K matrix. ``s`` has length K
    (full column rank, (A1)); a per-feature mean :math:`\mathcal N(0, \text{offset}^2)` is
    added for the loss to remove. Built in float64 on the CPU; convert afterwards."""
    n = Y.shape[0]
    s = singular_values.to(torch.float64).flatten()
    if s.numel() != K or not bool((s > 0).all()):
        raise ValueError(f"singular_values: need {K} positive values, got {s.tolist()}")
    Yt = center(Y.to(torch.float64))
    r = int(torch.linalg.matrix_rank(Yt))
    if not r <= K <= n - 1:
        raise ValueError(f"K: {K} must lie in [rank(Yt) = {r}, n - 1 = {n - 1}]")
    Ub = torch.linalg.svd(Yt, full_matrices=False)[0]
    g = torch.randn(n, K - r, generator=generator, dtype=torch.float64)
    U, _ = torch.linalg.qr(torch.cat([Ub[:, :r], center(g)], dim=1))
    W, _ = torch.linalg.qr(torch.randn(K, K, generator=generator, dtype=torch.float64))
    c = offset * torch.randn(1, K, generator=generator, dtype=torch.float64)
    return (U * s) @ W.T + c
