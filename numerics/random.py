"""Explicit, seeded random draws. Nothing here touches torch's global RNG.

Draws are made on the CPU in float64 and then moved, so a seed gives the same numbers on every
device and in every dtype (up to the final rounding).
"""
from __future__ import annotations

import torch


def make_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed`` (a non-negative integer below 2**63)."""
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed: {seed} is outside [0, 2**63)")
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def randn(*shape: int, generator: torch.Generator, device: torch.device | str = "cpu",
          dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Standard normal tensor of ``shape`` from ``generator``."""
    return torch.randn(*shape, generator=generator,
                       dtype=torch.float64).to(device=device, dtype=dtype)


def randint(low: int, high: int, *shape: int, generator: torch.Generator,
            device: torch.device | str = "cpu") -> torch.Tensor:
    """Integers uniform in ``[low, high)`` from ``generator``."""
    return torch.randint(low, high, shape, generator=generator).to(device)


def random_low_rank(batch: int, m: int, n: int, rank: int, generator: torch.Generator, *,
                    device: torch.device | str = "cpu",
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""``batch`` random ``m x n`` matrices of rank ``rank`` (almost surely): a standard
    Gaussian matrix when ``rank = min(m, n)``, else :math:`AB` with Gaussian :math:`A`
    (``m x rank``) and :math:`B` (``rank x n``); zeros when ``rank = 0``. Drawn in float64 on
    the CPU from ``generator``, then moved."""
    for label, value in (("batch", batch), ("m", m), ("n", n)):
        if value < 1:
            raise ValueError(f"{label}: {value} must be >= 1")
    if not 0 <= rank <= min(m, n):
        raise ValueError(f"rank: {rank} must lie in [0, min(m, n) = {min(m, n)}]")
    if rank == min(m, n):
        G = torch.randn(batch, m, n, generator=generator, dtype=torch.float64)
    else:
        A = torch.randn(batch, m, rank, generator=generator, dtype=torch.float64)
        B = torch.randn(batch, rank, n, generator=generator, dtype=torch.float64)
        G = A @ B
    return G.to(device=device, dtype=dtype)


def random_with_singular_values(singular_values: torch.Tensor, m: int, n: int, batch: int,
                                generator: torch.Generator, *,
                                device: torch.device | str = "cpu",
                                dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r""":math:`Q_1\,\mathrm{diag}(d)\,Q_2^\top` with Haar-like orthonormal :math:`Q_1`
    (``m x k``), :math:`Q_2` (``n x k``) from QR of Gaussian draws, :math:`k` = ``len(d)``
    :math:`\le \min(m, n)`: a batch of matrices with prescribed singular values (e.g. an
    ill-conditioned spectrum)."""
    k = singular_values.shape[-1]
    if singular_values.dim() != 1 or not 1 <= k <= min(m, n):
        raise ValueError(f"singular_values: needs a vector of length 1..min(m, n) = "
                         f"{min(m, n)}, got shape {tuple(singular_values.shape)}")
    q1, _ = torch.linalg.qr(torch.randn(batch, m, k, generator=generator, dtype=torch.float64))
    q2, _ = torch.linalg.qr(torch.randn(batch, n, k, generator=generator, dtype=torch.float64))
    G = (q1 * singular_values.to(torch.float64)) @ q2.mT
    return G.to(device=device, dtype=dtype)
