r"""Fréchet draws and Monte Carlo of weighted argmax selection (Li2 Lemma 7, Thm. 8).

A Fréchet(:math:`a`) variable has CDF :math:`F(x) = e^{-x^{-a}}` on :math:`x > 0`; it is drawn by
inversion, :math:`x = (-\log U)^{-1/a}` with :math:`U` uniform on :math:`(0, 1)`. For weights
:math:`w_1..w_L` the estimates are the frequencies of :math:`\arg\max_jw_jx_j` and the mean of
:math:`\log\max_jw_jx_j`, each with its standard error
(:class:`numerics.li2.gaussian_mc.MCEstimate`, so comparisons are made in standard errors). Draws
come from an explicit generator, in chunks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.li2.gaussian_mc import MCEstimate

#: Draws per chunk and configuration: (C, 2^16, L) float64 values stay at a few MiB.
CHUNK = 2**16


def _check_shape(a: torch.Tensor) -> None:
    if not bool((a > 0).all()):
        raise ValueError(f"a: the Frechet shape must be > 0, got {a}")


def frechet(shape: tuple[int, ...], a: torch.Tensor | float, generator: torch.Generator, *,
            device: torch.device | str = "cpu", dtype: torch.dtype = torch.float64
            ) -> torch.Tensor:
    r"""Fréchet(:math:`a`) draws of ``shape`` (``a`` broadcasts against it), by inversion from
    uniforms drawn in float64 on the CPU (the same numbers on every device)."""
    a = torch.as_tensor(a, dtype=torch.float64)
    _check_shape(a)
    uniform = torch.rand(*shape, generator=generator, dtype=torch.float64)
    # U = 0 (probability 2^-53) would give x = 0; U is kept strictly inside (0, 1).
    uniform = uniform.clamp_min(torch.finfo(torch.float64).tiny)
    return (-torch.log(uniform)).pow(-1.0 / a).to(device=device, dtype=dtype)


@dataclass(frozen=True)
class Selection:
    """Monte Carlo of Lemma 7 for ``C`` configurations: ``frequency`` ``(C, L)`` of each index
    being the argmax, ``log_max`` ``(C,)`` the mean of :math:`\\log\\max_jw_jx_j`."""

    frequency: MCEstimate
    log_max: MCEstimate


def _estimate(total: torch.Tensor, squares: torch.Tensor, n: int) -> MCEstimate:
    mean = total / n
    var = ((squares - n * mean.square()) / (n - 1)).clamp_min(0)
    return MCEstimate(mean, (var / n).sqrt(), n)


def weighted_selection(weights: torch.Tensor, a: torch.Tensor, samples: int,
                       generator: torch.Generator, *, chunk: int = CHUNK) -> Selection:
    r"""``samples`` draws of :math:`x_1..x_L` i.i.d. Fréchet(:math:`a_c`) per configuration
    :math:`c`, with ``weights`` ``(C, L)`` and ``a`` ``(C,)``."""
    if weights.dim() != 2 or a.shape != weights.shape[:1]:
        raise ValueError(f"weights, a: need shapes (C, L) and (C,), got {tuple(weights.shape)} "
                         f"and {tuple(a.shape)}")
    if not bool((weights > 0).all()):
        raise ValueError("weights: must be > 0")
    if not (isinstance(samples, int) and samples >= 2):
        raise ValueError(f"samples: {samples!r} must be an integer >= 2")
    C, L = weights.shape
    hits = torch.zeros(C, L, dtype=weights.dtype, device=weights.device)
    log_total = torch.zeros(C, dtype=weights.dtype, device=weights.device)
    log_squares = torch.zeros_like(log_total)
    for start in range(0, samples, chunk):
        size = min(chunk, samples - start)
        x = frechet((C, size, L), a.cpu()[:, None, None], generator, device=weights.device,
                    dtype=weights.dtype)
        values, winners = (weights[:, None, :] * x).max(-1)
        hits += torch.nn.functional.one_hot(winners, L).to(weights.dtype).sum(1)
        logs = values.log()
        log_total += logs.sum(-1)
        log_squares += logs.square().sum(-1)
    # An indicator's square is itself: the sums of squares of the frequencies are the hits.
    return Selection(_estimate(hits, hits, samples), _estimate(log_total, log_squares, samples))
