r"""Monte Carlo Gaussian integrals (Li2 App. A: Lemmas 3-4, the Hermite pieces of Lemma 1).

Every estimate is a sample mean over ``N`` independent draws with its standard error
:math:`\hat s/\sqrt N` (:math:`\hat s` the sample standard deviation), so a comparison can be
made in standard errors; by the CLT the standardised error is approximately
:math:`\mathcal N(0,1)` for the finite-variance integrands used here. Draws come from an
explicit ``torch.Generator`` (CPU, float64, then moved; see :mod:`numerics.random`) and are
processed in chunks so memory stays bounded for :math:`N\sim10^6`.

The normalised Hermite functions use the three-term recurrence
:math:`\phi_{k+1}(z) = (z\phi_k(z) - \sqrt k\,\phi_{k-1}(z))/\sqrt{k+1}` (from
:math:`\mathrm{He}_{k+1} = z\mathrm{He}_k - k\mathrm{He}_{k-1}`), never a symbolic form.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.random import randn

Fn = Callable[[torch.Tensor], torch.Tensor]

#: Draws per chunk: 2^18 float64 values per integrand row (2 MiB) keep intermediates small.
CHUNK = 2**18


@dataclass(frozen=True)
class MCEstimate:
    """A Monte Carlo mean, its standard error and the number of draws."""

    mean: torch.Tensor
    stderr: torch.Tensor
    samples: int

    @property
    def unit(self) -> torch.Tensor:
        r"""The unit to compare in: the standard error plus a roundoff floor
        :math:`8\log_2(N)\,u\,|\hat\mu|` (the float error of an :math:`N`-term sum, pairwise
        summation), so a constant integrand, whose standard error is 0, still gets a scale."""
        u = torch.finfo(self.mean.dtype).eps
        return self.stderr + 8 * math.log2(self.samples) * u * self.mean.abs() \
            + torch.finfo(self.mean.dtype).tiny


def _check_samples(samples: int) -> None:
    if not (isinstance(samples, int) and samples >= 2):
        raise ValueError(f"samples: {samples!r} must be an integer >= 2")


def _check_order(order: int) -> None:
    if not (isinstance(order, int) and order >= 0):
        raise ValueError(f"order: {order!r} must be a non-negative integer")


def _check_correlations(rho: torch.Tensor) -> None:
    if rho.dim() != 1 or bool((rho.abs() > 1).any()):
        raise ValueError(f"rho: needs a vector of correlations in [-1, 1], got {rho}")


class _Accumulator:
    """Running sums of ``x`` and ``x^2`` (float64) for a mean and its standard error."""

    def __init__(self) -> None:
        self.total: torch.Tensor | float = 0.0
        self.squares: torch.Tensor | float = 0.0
        self.count = 0

    def add(self, total: torch.Tensor, squares: torch.Tensor, count: int) -> None:
        self.total = self.total + total
        self.squares = self.squares + squares
        self.count += count

    def estimate(self) -> MCEstimate:
        n = self.count
        mean = self.total / n
        # Unbiased variance from the two sums; clamp the roundoff below zero.
        var = ((self.squares - n * mean**2) / (n - 1)).clamp_min(0)
        return MCEstimate(mean, (var / n).sqrt(), n)


def _chunks(samples: int, chunk: int) -> list[int]:
    return [min(chunk, samples - start) for start in range(0, samples, chunk)]


def hermite_functions(order: int, x: torch.Tensor) -> torch.Tensor:
    r""":math:`\phi_0(x), \dots, \phi_{\text{order}}(x)` stacked on a new last dimension, by the
    normalised recurrence (module docstring).

    >>> hermite_functions(2, torch.tensor([0.0, 1.0], dtype=torch.float64))
    tensor([[ 1.0000,  0.0000, -0.7071],
            [ 1.0000,  1.0000,  0.0000]], dtype=torch.float64)
    """
    _check_order(order)
    out = [torch.ones_like(x)]
    if order >= 1:
        out.append(x.clone())
    for k in range(1, order):
        out.append((x * out[k] - math.sqrt(k) * out[k - 1]) / math.sqrt(k + 1))
    return torch.stack(out, dim=-1)


def correlated_pair(rho: torch.Tensor, samples: int, generator: torch.Generator, *,
                    dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``samples`` draws of :math:`(Z_1, Z_2)` for each correlation in ``rho`` (shape
    ``(R, samples)`` each): :math:`Z_2 = \rho Z_1 + \sqrt{1-\rho^2}\,Z_3`."""
    _check_correlations(rho)
    _check_samples(samples)
    a = randn(samples, generator=generator, device=rho.device, dtype=dtype)
    b = randn(rho.shape[0], samples, generator=generator, device=rho.device, dtype=dtype)
    r = rho.to(dtype)[:, None]
    return a.expand(rho.shape[0], samples), r * a + (1 - r**2).sqrt() * b


def hermite_correlation(order: int, rho: torch.Tensor, samples: int,
                        generator: torch.Generator, *, dtype: torch.dtype = torch.float64,
                        chunk: int = CHUNK) -> MCEstimate:
    r""":math:`\mathbb E[\phi_n(Z_1)\phi_m(Z_2)]` for :math:`n, m\le` ``order`` and each
    correlation in ``rho``: a ``(R, order+1, order+1)`` estimate (Lemma 3's left side)."""
    _check_order(order)
    _check_samples(samples)
    acc = _Accumulator()
    for size in _chunks(samples, chunk):
        a, b = correlated_pair(rho, size, generator, dtype=dtype)
        pa, pb = hermite_functions(order, a), hermite_functions(order, b)  # (R, size, L+1)
        acc.add(pa.transpose(1, 2) @ pb, pa.square().transpose(1, 2) @ pb.square(), size)
    return acc.estimate()


def gaussian_mean(fn: Fn, samples: int, generator: torch.Generator, *,
                  device: torch.device | str = "cpu", dtype: torch.dtype = torch.float64,
                  chunk: int = CHUNK) -> MCEstimate:
    r""":math:`\mathbb E\,f(Z)` for a standard normal :math:`Z`; ``fn`` maps a ``(size,)``
    tensor of draws to ``(..., size)`` values (one row per integrand)."""
    _check_samples(samples)
    acc = _Accumulator()
    for size in _chunks(samples, chunk):
        values = fn(randn(size, generator=generator, device=device, dtype=dtype))
        acc.add(values.sum(-1), values.square().sum(-1), size)
    return acc.estimate()


def mgf(t: torch.Tensor, samples: int, generator: torch.Generator, *,
        chunk: int = CHUNK) -> MCEstimate:
    r""":math:`\mathbb E e^{tZ}` for each entry of the vector ``t`` (Lemma 4's left side)."""
    return gaussian_mean(lambda x: torch.exp(t[:, None] * x), samples, generator,
                         device=t.device, dtype=t.dtype, chunk=chunk)


def hermite_coefficients(fn: Fn, scale: float, order: int, samples: int,
                         generator: torch.Generator, *, device: torch.device | str = "cpu",
                         dtype: torch.dtype = torch.float64, chunk: int = CHUNK) -> MCEstimate:
    r""":math:`a_l(s) = \mathbb E[\sigma(sZ)\phi_l(Z)]`, :math:`l = 0..\text{order}`, for the
    activation ``fn`` (Lemma 1's proof)."""
    _check_order(order)
    return gaussian_mean(lambda x: (fn(scale * x)[:, None] * hermite_functions(order, x)).T,
                         samples, generator, device=device, dtype=dtype, chunk=chunk)


def kernel(fn: Fn, s1: float, s2: float, rho: torch.Tensor, samples: int,
           generator: torch.Generator, *, dtype: torch.dtype = torch.float64,
           chunk: int = CHUNK) -> MCEstimate:
    r""":math:`\mathbb E[\sigma(s_1Z_1)\sigma(s_2Z_2)]` for each correlation in ``rho``
    (the kernel :math:`\mathcal K(i, j)` of Lemma 1's proof)."""
    _check_samples(samples)
    acc = _Accumulator()
    for size in _chunks(samples, chunk):
        a, b = correlated_pair(rho, size, generator, dtype=dtype)
        values = fn(s1 * a) * fn(s2 * b)
        acc.add(values.sum(-1), values.square().sum(-1), size)
    return acc.estimate()
