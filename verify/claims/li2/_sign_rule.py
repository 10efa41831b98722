r"""Thm. 6's sign rule, :math:`\mathrm{sign}(b_{j\ell})=-\mathrm{sign}(\beta)` with
:math:`\beta=\tilde{\mathbf f}_j^\top P_{\eta,-j\ell}\tilde{\mathbf f}_\ell`
(:func:`stated_sign`), and its planted error, the rule flipped (:func:`flipped_sign`): the
stated form both claims check the sign of :math:`b_{j\ell}` against, and the replacement their
negative controls plant.

Used by ``li2.thm6`` (Thm. 6) and ``li2.thm6-training`` (Thm. 6 along training).
"""
from __future__ import annotations


def stated_sign(beta):
    r"""Thm. 6: :math:`\mathrm{sign}(b_{j\ell}) = -\mathrm{sign}(\beta)`, for :math:`\beta \ne 0`
    (written with ``abs`` so that it runs on sympy and torch alike)."""
    return -beta / abs(beta)


def flipped_sign(beta):
    """Planted error: the sign rule flipped."""
    return beta / abs(beta)
