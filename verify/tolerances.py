r"""Tolerances in one place, each derived from the dtype's unit roundoff and the problem's scale.

``u`` is the unit roundoff of the dtype (``torch.finfo(dtype).eps``: 2.2e-16 for float64,
1.2e-7 for float32). The constants below are deliberately small multiples: they are checked
by the tests against measured errors, not tuned until a claim passes.
"""
from __future__ import annotations

from statistics import NormalDist

import torch

from verify.evidence import Tolerance


def unit_roundoff(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).eps)


def roundoff(dtype: torch.dtype, operations: int, why: str) -> Tolerance:
    r"""Forward error of a well-conditioned computation of ``operations`` sequential steps:
    :math:`\lesssim \text{operations} \cdot u` (Higham, *Accuracy and Stability*, ch. 3)."""
    u = unit_roundoff(dtype)
    return Tolerance(operations * u, f"{why}: {operations} x unit roundoff {u:.1e} "
                                     f"({str(dtype).removeprefix('torch.')})")


def conditioned(dtype: torch.dtype, condition: float, size: int, why: str) -> Tolerance:
    r"""Forward error of a backward-stable solve or inverse:
    :math:`\lesssim c\,n\,\kappa\,u` with :math:`\kappa` the condition number and :math:`n` the
    size; :math:`c = 4` covers the two or three solves these formulas chain."""
    u = unit_roundoff(dtype)
    value = 4.0 * size * condition * u
    return Tolerance(value, f"{why}: 4 n kappa u with n={size}, kappa={condition:.2e}, "
                            f"u={u:.1e} ({str(dtype).removeprefix('torch.')})")


#: Default family-wise probability that a Monte Carlo comparison rejects a true statement.
FALSE_ALARM = 1e-3


def bonferroni_z(tests: int, false_alarm: float = FALSE_ALARM) -> float:
    r"""The :math:`z` with :math:`P(\max_i |Z_i| > z) \le \alpha` for ``tests`` standard normals
    :math:`Z_i` (Bonferroni, any dependence): :math:`z = \Phi^{-1}(1 - \alpha/(2m))` with
    :math:`\alpha` = ``false_alarm`` and :math:`m` = ``tests``.

    >>> round(bonferroni_z(1, 0.05), 2)
    1.96
    >>> bonferroni_z(10) > bonferroni_z(1)
    True
    """
    if not (isinstance(tests, int) and tests >= 1):
        raise ValueError(f"tests: {tests!r} must be an integer >= 1")
    if not 0 < false_alarm < 1:
        raise ValueError(f"false_alarm: {false_alarm!r} must lie in (0, 1)")
    return NormalDist().inv_cdf(1 - false_alarm / (2 * tests))


def monte_carlo(standard_error: float = 1.0, *, tests: int, false_alarm: float = FALSE_ALARM,
                what: str = "Monte Carlo mean", note: str = "") -> Tolerance:
    r"""Tolerance of ``tests`` Monte Carlo means against their true values:
    :math:`z_{1-\alpha/(2m)} \cdot \mathrm{SE}` (:func:`bonferroni_z`), so that by the CLT all
    :math:`m` = ``tests`` comparisons pass together except with probability
    :math:`\alpha` = ``false_alarm``. ``standard_error`` is the (largest) standard error; the
    default 1 is for comparisons already in units of standard errors, where the tolerance is
    :math:`z` itself. ``what`` names the compared means and ``note`` is appended to the reason.

    >>> t = monte_carlo(tests=1, false_alarm=0.05)
    >>> round(t.value, 2), t.value == bonferroni_z(1, 0.05)
    (1.96, True)
    >>> round(monte_carlo(0.5, tests=1, false_alarm=0.05).value, 2)
    0.98
    """
    z = bonferroni_z(tests, false_alarm)
    scale = ("standard errors" if standard_error == 1.0
             else f"x the standard error {standard_error:.3g}")
    return Tolerance(z * standard_error,
                     f"CLT: each {what} lies within z = {z:.2f} {scale} of the true value "
                     f"except with probability {false_alarm:g} over the {tests} comparisons "
                     f"(Bonferroni){'; ' + note if note else ''}")
