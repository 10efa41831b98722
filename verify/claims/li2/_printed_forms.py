r"""Formulas as printed, shared by the claims that check them: Thm. 2's and Thm. 3's
(``li2.thm2``, ``li2.thm3`` and, beyond :math:`x^2`, ``li2.x.activations``) and Lemma 1's
worked kernel for :math:`x^2` (``li2.lemma1``, ``li2.x.kernel-gram``)."""
from __future__ import annotations

import sympy as sp


def stated_max_energy(M: int, d: int, kind: str) -> sp.Rational:
    r"""Thm. 2: :math:`M/(8d_k)` for a real irrep of dimension :math:`d_k`,
    :math:`M/(16d_k)` for a pair of complex irreps of dimension :math:`d_k` (type H read like a
    complex pair: see ``li2.thm2``'s reading)."""
    return sp.Rational(M, 8 * d) if kind == "R" else sp.Rational(M, 16 * d)


def stated_node_count(irrep_dims) -> int:
    r"""Thm. 3: :math:`K=2\sum_{k\ne0}m_k^2d_k^2` with :math:`m_k=d_k` (regular
    representation); ``irrep_dims`` are the :math:`d_k` of the nontrivial irreps."""
    return 2 * sum(d**2 * d**2 for d in irrep_dims)


def stated_residual() -> int:
    r"""Thm. 3: :math:`\hat Y=\tilde Y`, i.e. :math:`\|\hat Y-\tilde Y\|=0`."""
    return 0


def lemma1_kernel_x2(variance, rho):
    r"""Lemma 1's worked example: :math:`\mathcal K=s^4(1+2\rho^2)` for :math:`\sigma=x^2`, with
    :math:`s^2` the variance of the pre-activation (``variance``; numbers or sympy)."""
    return variance**2 * (1 + 2 * rho**2)
