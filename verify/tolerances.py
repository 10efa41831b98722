r"""Tolerances in one place, each derived from the dtype's unit roundoff and the problem's scale.

``u`` is the unit roundoff of the dtype (``torch.finfo(dtype).eps``: 2.2e-16 for float64,
1.2e-7 for float32). The constants below are deliberately small multiples: they are checked
by the tests against measured errors, not tuned until a claim passes.
"""
from __future__ import annotations

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
