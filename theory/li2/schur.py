r"""Entries of the ridge inverse :math:`B = (\tilde F^\top\tilde F + \eta I_K)^{-1}` (Li2 §5)
on symbolic matrices, and the quantities Theorem 6 (App. B.1) is stated in.

* :func:`derive_ridge_inverse_entry`: :math:`b_{j\ell}` from the definition :math:`B = A^{-1}`,
  :math:`A = \tilde F^\top\tilde F + \eta I`, as cofactor over determinant
  (:math:`B = \mathrm{adj}(A)/\det A`); nothing of the Schur complement is used.
* :func:`derive_schur_terms`: :math:`\alpha, \beta, \gamma` built from
  :math:`P_{\eta,-j\ell} = I - \tilde F_{-j\ell}(\tilde F_{-j\ell}^\top\tilde F_{-j\ell}
  +\eta I)^{-1}\tilde F_{-j\ell}^\top` exactly as the paper defines them (the inputs of its
  formula).
* :func:`derive_schur_denominator`: :math:`\det A / \det(\tilde F_{-j\ell}^\top\tilde F_{-j\ell}
  + \eta I)`, a ratio of determinants of positive-definite matrices, to set against the paper's
  :math:`\alpha\gamma - \beta^2 > 0`.

Every rational function is put in canonical form (``cancel``: expanded numerator over expanded
denominator, common factors removed), an exact step that lets two sides be compared quickly.
"""
from __future__ import annotations

import sympy as sp

from theory.derivation import Derivation
from theory.matrices import symbolic_matrix


def _check_size(n: int, K: int, j: int, l: int) -> None:
    if n < 1:
        raise ValueError(f"n: {n} must be >= 1")
    if K < 2:
        raise ValueError(f"K: {K} must be >= 2 (a pair of features)")
    if not (0 <= j < K and 0 <= l < K and j != l):
        raise ValueError(f"(j, l): ({j}, {l}) must be two different indices in [0, {K})")


def symbolic_features(n: int, K: int) -> tuple[sp.Matrix, sp.Symbol]:
    r"""A symbolic ``n x K`` feature matrix :math:`\tilde F` (real entries ``F_{ij}``) and a
    positive symbol :math:`\eta`."""
    return symbolic_matrix("F", n, K), sp.Symbol("eta", positive=True)


def ridge_matrix(F: sp.Matrix, eta: sp.Expr) -> sp.Matrix:
    r""":math:`A = \tilde F^\top\tilde F + \eta I_K`."""
    return F.T * F + eta * sp.eye(F.shape[1])


def derive_ridge_inverse_entry(n: int, K: int, j: int, l: int) -> Derivation:
    r"""Derive :math:`b_{j\ell} = [A^{-1}]_{j\ell}` for symbolic :math:`\tilde F` and
    :math:`\eta`, as the cofactor :math:`C_{\ell j}` of :math:`A` over :math:`\det A`.

    ``result`` is ``(b_jl, F, eta)``.

    >>> d = derive_ridge_inverse_entry(1, 2, 0, 1)
    >>> d.result[0]
    -F_00*F_01/(F_00**2*eta + F_01**2*eta + eta**2)
    """
    _check_size(n, K, j, l)
    d = Derivation(f"b_jl = [(F^T F + eta I)^(-1)]_jl by cofactors (n={n}, K={K}, "
                   f"j={j}, l={l})")
    F, eta = symbolic_features(n, K)
    A = d.step("A = F^T F + eta I", ridge_matrix(F, eta))
    det = d.step("det A", sp.expand(A.det(method="berkowitz")))
    cof = d.step(f"cofactor C_{{{l}{j}}} of A (B = adj(A)/det A, adj(A)_jl = C_lj)",
                 sp.expand(A.cofactor(l, j)))
    b = d.step("b_jl = C_lj / det A, cancelled", sp.cancel(cof / det))
    d.result = (b, F, eta)
    return d


def residual_operator(F: sp.Matrix, eta: sp.Expr) -> sp.Matrix:
    r""":math:`P_\eta(F) = I - F(F^\top F + \eta I)^{-1}F^\top` (verify/claims/li2/SOURCES.md
    §2.1), by its
    definition."""
    n, k = F.shape
    if k == 0:
        return sp.eye(n)
    return sp.eye(n) - F * (F.T * F + eta * sp.eye(k)).inv() * F.T


def derive_schur_terms(F: sp.Matrix, eta: sp.Expr, j: int, l: int) -> Derivation:
    r"""The paper's :math:`\alpha = \eta + \mathbf f_j^\top P\mathbf f_j`,
    :math:`\beta = \mathbf f_j^\top P\mathbf f_\ell`, :math:`\gamma = \eta + \mathbf f_\ell^\top
    P\mathbf f_\ell` with :math:`P = P_{\eta,-j\ell}` from the columns other than
    :math:`j, \ell` (App. B.1). ``result`` is ``(alpha, beta, gamma)``, each cancelled.

    >>> F = sp.Matrix([[1, 0, 1]]); eta = sp.Symbol("eta", positive=True)
    >>> derive_schur_terms(F, eta, 0, 1).result
    ((eta**2 + 2*eta)/(eta + 1), 0, eta)
    """
    n, K = F.shape
    _check_size(n, K, j, l)
    d = Derivation(f"Schur terms alpha, beta, gamma of Thm. 6 (j={j}, l={l})")
    rest = [c for c in range(K) if c not in (j, l)]
    Fr = d.step(f"F_r: the columns {rest} (all but j and l)", F[:, rest])
    P = d.step("P_{eta,-jl} = I - F_r (F_r^T F_r + eta I)^{-1} F_r^T",
               residual_operator(Fr, eta).applyfunc(sp.cancel))
    fj, fl = F[:, j], F[:, l]
    alpha = d.step("alpha = eta + f_j^T P f_j", sp.cancel(eta + (fj.T * P * fj)[0]))
    beta = d.step("beta = f_j^T P f_l", sp.cancel((fj.T * P * fl)[0]))
    gamma = d.step("gamma = eta + f_l^T P f_l", sp.cancel(eta + (fl.T * P * fl)[0]))
    d.result = (alpha, beta, gamma)
    return d


def derive_schur_denominator(F: sp.Matrix, eta: sp.Expr, j: int, l: int) -> Derivation:
    r""":math:`\det A / \det(F_r^\top F_r + \eta I)`: both matrices are positive definite for
    :math:`\eta > 0`, so the ratio is positive. ``result`` is the cancelled ratio."""
    n, K = F.shape
    _check_size(n, K, j, l)
    d = Derivation(f"det A / det(F_r^T F_r + eta I) (j={j}, l={l})")
    rest = [c for c in range(K) if c not in (j, l)]
    detA = d.step("det A", sp.expand(ridge_matrix(F, eta).det(method="berkowitz")))
    Ar = ridge_matrix(F[:, rest], eta)
    detAr = d.step("det(F_r^T F_r + eta I)",
                   sp.expand(Ar.det(method="berkowitz")) if rest else sp.Integer(1))
    d.result = d.step("ratio, cancelled", sp.cancel(detA / detAr))
    return d
