r"""Grokking times from a trainer's :class:`numerics.li2.trainer.History`, with censoring.

The grokking time of a configuration at threshold :math:`a` is the first logged epoch at which
its test accuracy is :math:`\ge a` (Li2 §7: :math:`a = 0.5` and :math:`0.99`). Test accuracy is
logged every few epochs, so a time is known to within the logging interval (``resolution``).
A configuration that never reaches :math:`a` within the budget is *censored*: its time is only
known to exceed the last logged epoch, which is recorded in its place as a lower bound.

Censored times in a log-log fit. The least-squares slope of :math:`y_g=\log t_g` on
:math:`x_g` has :math:`\partial b/\partial y_g=(x_g-\bar x)/S_{xx}`. Replacing a censored
:math:`y_g` by its lower bound therefore gives a bound on the slope: a lower bound on the true
slope when every censored point lies right of :math:`\bar x`, an upper bound when every one lies
left of it, and no bound when they lie on both sides (:func:`censoring_side`). A fit over seeds
can then use the imputed slopes only on the side the bound allows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from numerics.li2.trainer import History

#: censoring_side values
EXACT, LOWER, UPPER, UNBOUNDED = 0, 1, -1, 2


@dataclass(frozen=True)
class GrokTimes:
    """First logged epoch with test accuracy :math:`\\ge` ``threshold`` per configuration
    (``epochs``, float64 ``(B,)``; the last logged epoch where ``censored``)."""

    threshold: float
    epochs: torch.Tensor
    censored: torch.Tensor
    budget: int
    resolution: int


def grokking_times(history: History, threshold: float, *, series: str = "test_acc"
                   ) -> GrokTimes:
    """Grokking times at ``threshold`` from the ``series`` of ``history``."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold: {threshold} must lie in (0, 1]")
    epochs, acc = history.series(series)
    if acc.dim() != 2 or len(epochs) < 2:
        raise ValueError(f"history: {series!r} needs >= 2 logged epochs of (B,) values")
    hit = acc >= threshold
    reached = hit.any(0)
    first = epochs[hit.to(torch.int8).argmax(0)].to(torch.float64)
    budget = int(epochs[-1])
    return GrokTimes(threshold=threshold,
                     epochs=torch.where(reached, first, float(budget)),
                     censored=~reached, budget=budget,
                     resolution=int((epochs[1:] - epochs[:-1]).max()))


def grokking_outcome(test_acc: torch.Tensor) -> torch.Tensor:
    """Per run (``test_acc`` ``(D, B)``, as logged): 1 where the test accuracy reached 0.99,
    0 where it stayed below 0.5 throughout (no grokking), 0.5 in between (float64 ``(B,)``):
    Fig. 3's "grokking" and "none" as outcomes that a run's length can decide."""
    groks = (test_acc >= 0.99).any(0)
    none = ~(test_acc >= 0.5).any(0)
    return torch.where(groks, 1.0, torch.where(none, 0.0, 0.5)).double()


def train_until(train: Callable[[int], History], *, budget: int, chunk: int,
                thresholds: Sequence[float], series: str = "test_acc") -> History:
    """Call ``train(epochs)`` in chunks of ``chunk`` epochs until every configuration has
    reached every threshold in ``series`` or ``budget`` epochs have run; returns the history.

    ``train`` must record ``series`` at the end of each chunk (e.g.
    ``GroupTrainer.train`` with ``eval_every`` dividing ``chunk``).
    """
    if budget < 1 or chunk < 1:
        raise ValueError(f"budget, chunk: {budget}, {chunk} must be >= 1")
    if not thresholds:
        raise ValueError("thresholds: need at least one")
    done = 0
    while True:
        step = min(chunk, budget - done)
        history = train(step)
        done += step
        _, acc = history.series(series)
        if done >= budget or bool((acc >= max(thresholds)).any(0).all()):
            return history


def censoring_side(log_x: torch.Tensor, censored: torch.Tensor) -> torch.Tensor:
    r"""For each row of ``censored`` (``(S, G)``, times along the grid ``log_x`` ``(G,)``):
    ``EXACT`` (nothing censored), ``LOWER`` (the imputed slope is a lower bound of the true
    one), ``UPPER`` (an upper bound) or ``UNBOUNDED`` (censored points on both sides of the
    mean of ``log_x``). A censored point exactly at the mean does not move the slope."""
    if log_x.dim() != 1 or censored.shape[-1] != log_x.shape[0]:
        raise ValueError(f"censored: shape {tuple(censored.shape)} must end in the grid size "
                         f"{log_x.shape[0]}")
    offset = log_x - log_x.mean()
    tol = 1e-12 * max(1.0, float(offset.abs().max()))
    right = (censored & (offset > tol)).any(-1)
    left = (censored & (offset < -tol)).any(-1)
    side = torch.full(censored.shape[:-1], EXACT, dtype=torch.long)
    side[right & ~left] = LOWER
    side[left & ~right] = UPPER
    side[left & right] = UNBOUNDED
    return side
