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
    return torch.randn(*shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


def randint(low: int, high: int, *shape: int, generator: torch.Generator,
            device: torch.device | str = "cpu") -> torch.Tensor:
    """Integers uniform in ``[low, high)`` from ``generator``."""
    return torch.randint(low, high, shape, generator=generator).to(device)
