r"""Batched bisection: many independent brackets halved together, written once.

Each bracket :math:`[lo, hi]` holds the point :math:`x^*` where a monotone predicate switches:
``above(x)`` is true for :math:`x < x^*` (the switch lies above :math:`x`) and false for
:math:`x \ge x^*` (a sign change of an increasing or decreasing function is such a predicate,
e.g. ``f(x) > 0`` for a decreasing ``f``). One halving evaluates the predicate at
:math:`m = \tfrac12(lo + hi)` and keeps the half that holds the switch:

.. math:: [lo, hi] \leftarrow \begin{cases} [m, hi] & \text{above}(m) \\
          [lo, m] & \text{otherwise,} \end{cases}

so after :math:`k` halvings :math:`hi - lo = 2^{-k}(hi_0 - lo_0)` (in exact arithmetic) and
:math:`x^* \in [lo, hi]` throughout. ``lo`` and ``hi`` are tensors of one shape (any leading
dimensions); ``above`` maps a tensor of that shape to a boolean one. The brackets run for a
fixed number of halvings, or stop early (``until_adjacent``) once no midpoint lies strictly
inside its bracket: every bracket is then two adjacent floats (or one), float resolution.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch


class Bracket(NamedTuple):
    """The brackets after bisection, the halvings done, and whether every bracket reached
    adjacent floats (``None`` where that was not checked: a fixed count of halvings)."""

    lo: torch.Tensor
    hi: torch.Tensor
    halvings: int
    adjacent: bool | None

    @property
    def midpoint(self) -> torch.Tensor:
        r""":math:`\tfrac12(lo + hi)`, the estimate of the switch point."""
        return 0.5 * (self.lo + self.hi)


def bisect(above: Callable[[torch.Tensor], torch.Tensor], lo: torch.Tensor, hi: torch.Tensor,
           *, iterations: int, until_adjacent: bool = False) -> Bracket:
    r"""Halve the brackets ``[lo, hi]`` (elementwise, batched) around the switch of the
    monotone predicate ``above`` (true below the switch point): ``iterations`` halvings, or
    fewer with ``until_adjacent``, which stops before a halving whose midpoints all equal an
    end of their bracket (then :attr:`Bracket.adjacent` is True; False if ``iterations`` ran
    out first). The midpoint is :math:`\tfrac12(lo + hi)`.

    >>> r = bisect(lambda x: x * x < 2, torch.tensor([0.0, 1.0], dtype=torch.float64),
    ...            torch.tensor([2.0, 4.0], dtype=torch.float64), iterations=200,
    ...            until_adjacent=True)
    >>> r.adjacent, r.halvings, bool(((r.lo <= 2 ** 0.5) & (2 ** 0.5 <= r.hi)).all())
    (True, 54, True)
    >>> (r.hi - r.lo).tolist()  # adjacent floats: one unit in the last place of sqrt(2)
    [2.220446049250313e-16, 2.220446049250313e-16]
    >>> float(bisect(lambda x: x < 0.3, torch.tensor(0.0), torch.tensor(1.0),
    ...              iterations=3).hi)
    0.375
    """
    if iterations < 0:
        raise ValueError(f"iterations: {iterations} must be >= 0")
    for k in range(iterations):
        mid = 0.5 * (lo + hi)
        if until_adjacent and bool(((mid == lo) | (mid == hi)).all()):
            return Bracket(lo, hi, k, True)
        up = above(mid)
        lo, hi = torch.where(up, mid, lo), torch.where(up, hi, mid)
    return Bracket(lo, hi, iterations, False if until_adjacent else None)
