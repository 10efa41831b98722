r"""Exact instances for Li2's inequalities (Lemma 11, App. C).

:math:`\|\tilde Y\tilde Y^\top\tilde F\|_F\ge\sigma_{\min}(\tilde F)\|\tilde Y\tilde Y^\top\|_F`
is evaluated from the definitions (:math:`\tilde A=P_1^\perp A`) in exact arithmetic.
"""
from __future__ import annotations

import sympy as sp

from theory.derivation import Derivation
from theory.matrices import centering_matrix


def smallest_counterexample() -> Derivation:
    r"""n = 3, K = 1, M = 2: :math:`F=(0,1,2)^\top`, labels (0, 1, 0). Then
    :math:`\tilde F\propto(-1,0,1)^\top\perp\tilde Y\propto(-1,2,-1)^\top`, so the left side is 0
    while the right side is positive. (With n = 2 every centred column is a multiple of
    (1, -1), so no smaller counterexample exists.)"""
    d = Derivation("Lemma 11 at n=3, K=1, M=2 (exact)")
    P = centering_matrix(3)
    Ft = d.step("Ft = P F, F = (0, 1, 2)^T", P * sp.Matrix([0, 1, 2]))
    Yt = d.step("Yt = P Y, labels (0, 1, 0)", P * sp.Matrix([[1, 0], [0, 1], [1, 0]]))
    A = Yt * Yt.T
    lhs_sq = d.step("||Yt Yt^T Ft||_F^2", sp.nsimplify(sum(e**2 for e in A * Ft)))
    sigma_sq = d.step("sigma_min(Ft)^2 = Ft^T Ft (K = 1)", (Ft.T * Ft)[0, 0])
    rhs_sq = d.step("sigma_min^2 ||Yt Yt^T||_F^2", sp.nsimplify(sigma_sq * sum(e**2 for e in A)))
    d.result = (lhs_sq, rhs_sq, Ft, Yt)
    return d
