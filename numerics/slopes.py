r"""Least-squares slopes: the fits of measured orders and rates, written once.

For points :math:`(x_i, y_i)`, :math:`i = 1..n`, the least-squares line :math:`y \approx a + bx`
has slope

.. math:: b = \frac{\sum_i (x_i - \bar x)(y_i - \bar y)}{\sum_i (x_i - \bar x)^2}.

* :func:`loglog_slope`: :math:`b` of :math:`\log y` on :math:`\log x`, the order :math:`p` of a
  power law :math:`y \approx C x^p` (numpy arrays, one fit);
* :func:`exponential_rate`: :math:`-b` of :math:`\log y` on :math:`t`, the rate :math:`\lambda`
  of a decay :math:`y \approx C e^{-\lambda t}` (numpy arrays, one fit);
* :func:`least_squares_slope`: :math:`b` itself for torch tensors, batched over the leading
  dimensions (the points along the last axis), by the centred formula above.

The numpy fits wrap :func:`numpy.polyfit` (a QR least-squares solve of the scaled Vandermonde
system) and the torch one evaluates the centred sums; the two agree to rounding but not bit for
bit, so each call site keeps the arithmetic it had.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch


def loglog_slope(x: Any, y: Any) -> float:
    r"""Least-squares slope of :math:`\log y` against :math:`\log x` (``x``, ``y`` positive, at
    least two points): the exponent :math:`p` of :math:`y \approx C x^p`.

    ``np.polyfit(np.log(x), np.log(y), 1)[0]``, as a float.

    >>> round(loglog_slope([1.0, 2.0, 4.0, 8.0], [3.0, 12.0, 48.0, 192.0]), 12)
    2.0
    """
    return float(np.polyfit(np.log(np.asarray(x, dtype=np.float64)),
                            np.log(np.asarray(y, dtype=np.float64)), 1)[0])


def exponential_rate(t: Any, y: Any) -> float:
    r"""Least-squares decay rate :math:`\lambda` of :math:`y \approx C e^{-\lambda t}` (``y``
    positive): minus the slope of :math:`\log y` against :math:`t`.

    ``-np.polyfit(t, np.log(y), 1)[0]``, as a float.

    >>> round(exponential_rate([0.0, 1.0, 2.0], [5.0, 5.0 * np.exp(-0.5), 5.0 * np.exp(-1.0)]), 12)
    0.5
    """
    return float(-np.polyfit(t, np.log(np.asarray(y, dtype=np.float64)), 1)[0])


def least_squares_slope(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Least-squares slope of ``y`` against ``x`` along the last axis, batched over the leading
    ones: :math:`\sum (x - \bar x)(y - \bar y) / \sum (x - \bar x)^2` (pass logs for a log-log
    order). ``x`` broadcasts against ``y``.

    >>> x = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    >>> least_squares_slope(x, torch.stack([2 * x + 1, -x])).tolist()
    [2.0, -1.0]
    """
    xc = x - x.mean(-1, keepdim=True)
    return (xc * (y - y.mean(-1, keepdim=True))).sum(-1) / (xc**2).sum(-1)
