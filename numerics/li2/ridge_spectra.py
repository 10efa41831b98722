r"""The spectra of Li2 §5's :math:`B=(\tilde F^\top\tilde F+\eta I_K)^{-1}` and
:math:`P_\eta=\eta(\tilde F\tilde F^\top+\eta I_n)^{-1}` where Stage III's exact gradient
:math:`G_F(+\infty)=P_\eta\tilde Y\tilde Y^\top\tilde FB` uses them, and Theorem 6's rounding
bound on :math:`\tilde{\mathbf f}_j^\top P_{0,-j\ell}\tilde{\mathbf f}_\ell` at :math:`\eta=0`.

Stage II replaces :math:`B` by a multiple of :math:`I` and :math:`P_\eta` by a multiple of
:math:`\eta I`. In :math:`G_F(+\infty)` the matrix :math:`B` acts only through
:math:`\tilde FB`, i.e. on the row space of :math:`\tilde F` (on its null space
:math:`\tilde FB` vanishes whatever :math:`B` is there), and :math:`P_\eta` acts on
:math:`\tilde Y\tilde Y^\top\tilde F`, whose columns lie in :math:`\mathbf 1^\perp`
(:math:`P_\eta\mathbf 1=\mathbf 1` exactly, since :math:`\tilde F^\top\mathbf 1=0`). With the
thin SVD :math:`\tilde F=U\,\mathrm{diag}(s)W^\top` of numerical rank :math:`r`:

* :math:`B` on the row space has eigenvalues :math:`1/(s_i^2+\eta)`, :math:`i\le r`: spread
  :math:`(s_1^2+\eta)/(s_r^2+\eta)`; on all of :math:`\mathbb R^K` (the literal
  :math:`B\propto I`) the spread is :math:`\kappa(A)`, with :math:`1/\eta` on the null space when
  :math:`r<K`;
* :math:`P_\eta/\eta` on :math:`\mathbf 1^\perp` has eigenvalues :math:`1/(s_i^2+\eta)`,
  :math:`i\le r`, and :math:`1/\eta` on the other :math:`n-1-r` directions: spread
  :math:`(s_1^2+\eta)/(s_r^2+\eta)` when :math:`r=n-1`, else :math:`(s_1^2+\eta)/\eta`.

A spread :math:`\rho` means the matrix is :math:`c(I+E)` with :math:`\|E\|_2\le(\rho-1)/(\rho+1)`
(:math:`c` the midpoint of its extreme eigenvalues), which :func:`stage2_deviation_bound` turns
into a bound on how far :math:`G_F(+\infty)` is from the Stage-II direction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def numerical_rank(s: torch.Tensor, n: int, K: int) -> int:
    r"""Singular values above the SVD's backward error :math:`4\max(n,K)\,u\,s_1` (the same
    :math:`4\max(n,K)u` as :func:`verify.tolerances.conditioned`): below it a value is not
    distinguishable from 0 in the working precision."""
    u = torch.finfo(s.dtype).eps
    return int((s > 4 * max(n, K) * u * s[0]).sum()) if len(s) else 0


@dataclass(frozen=True)
class RidgeSpectra:
    """Spreads (largest over smallest eigenvalue) of B and P_eta where G_F(+inf) uses them."""

    rank: int               # numerical rank r of Ft
    b_spread_row: float     # B on the row space of Ft
    b_spread_full: float    # B on all of R^K: kappa(A)
    p_spread: float         # P_eta on 1-perp
    p_over_eta_min: float   # smallest eigenvalue of P_eta / eta on 1-perp
    p_over_eta_max: float   # largest
    cos_stage2: float       # cos(G_F(+inf), Yt Yt^T Ft), Frobenius


def ridge_spectra(Ft: torch.Tensor, Yt: torch.Tensor, eta: float) -> RidgeSpectra:
    r"""The spreads of :math:`B` and :math:`P_\eta` (module docstring) and the cosine between
    the exact :math:`G_F(+\infty)=P_\eta\tilde Y\tilde Y^\top\tilde FB` and Stage II's
    :math:`\tilde Y\tilde Y^\top\tilde F`, from one thin SVD of the sample-centred ``Ft``
    (``n x K``) with sample-centred targets ``Yt``; ``eta > 0``.

    >>> Ft = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]], dtype=torch.float64)
    >>> s = ridge_spectra(Ft, Ft, 1.0)     # s^2 = 8, 2; n - 1 = 3 > r = 2
    >>> s.rank, round(s.b_spread_row, 12), round(s.p_spread, 12)
    (2, 3.0, 9.0)
    """
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta: {eta!r} must be > 0 (P_eta / eta and B on the null space)")
    n, K = Ft.shape
    U, s, Wh = torch.linalg.svd(Ft, full_matrices=False)
    r = numerical_rank(s, n, K)
    lam = s[:r].square()
    top, low = float(lam[0]) + eta, float(lam[-1]) + eta
    low_p = low if r >= n - 1 else eta
    low_b_full = low if r >= K else eta
    U, s, Wh = U[:, :r], s[:r], Wh[:r]
    # F B = U diag(s/(s^2+eta)) W^T and P_eta = I - U U^T + U diag(eta/(s^2+eta)) U^T (no
    # cancellation: the forms of numerics.li2.ridge_inverse)
    FB = (U * (s / (lam + eta))) @ Wh
    A = Yt @ (Yt.T @ FB)
    G = A - U @ (U.T @ A) + (U * (eta / (lam + eta))) @ (U.T @ A)
    S = Yt @ (Yt.T @ Ft)
    cos = float((G * S).sum() / (G.norm() * S.norm()))
    return RidgeSpectra(rank=r, b_spread_row=top / low, b_spread_full=top / low_b_full,
                        p_spread=top / low_p, p_over_eta_min=1 / top, p_over_eta_max=1 / low_p,
                        cos_stage2=cos)


def proportionality_error(spread: float) -> float:
    r""":math:`\min_c\|M/c-I\|_2=(\rho-1)/(\rho+1)` for a symmetric positive-definite
    :math:`M` with spread :math:`\rho=\lambda_{\max}/\lambda_{\min}` (:math:`c` the midpoint)."""
    return (spread - 1) / (spread + 1)


def stage2_deviation_bound(b_spread: float, p_spread: float) -> float:
    r"""Bound on :math:`\|G_F(+\infty)-c\,\tilde Y\tilde Y^\top\tilde F\|_F/
    \|c\,\tilde Y\tilde Y^\top\tilde F\|_F` for the best :math:`c`: with :math:`B=b(I+E_B)` on
    the row space and :math:`P_\eta=p(I+E_P)` on :math:`\mathbf 1^\perp`,
    :math:`P_\eta\tilde Y\tilde Y^\top\tilde FB=pb(I+E_P)\tilde Y\tilde Y^\top\tilde F(I+E_B)`,
    so the relative deviation is at most :math:`(1+e_P)(1+e_B)-1`."""
    return (1 + proportionality_error(p_spread)) * (1 + proportionality_error(b_spread)) - 1


def spread_band(deviation: float) -> float:
    r"""The largest spread :math:`\rho^\ast` such that :math:`B` and :math:`P_\eta` both within
    it keep :func:`stage2_deviation_bound` at most ``deviation``:
    :math:`e=\sqrt{1+\delta}-1`, :math:`\rho^\ast=(1+e)/(1-e)`.

    >>> round(spread_band(0.5), 4)
    1.5798
    >>> round(stage2_deviation_bound(spread_band(0.5), spread_band(0.5)), 12)
    0.5
    """
    if not 0 < deviation < 3:
        raise ValueError(f"deviation: {deviation!r} must lie in (0, 3)")
    e = math.sqrt(1 + deviation) - 1
    return (1 + e) / (1 - e)


def similarity_rounding_bound_full_rank(Ft: torch.Tensor, pairs: torch.Tensor, s_max: float,
                                        s_min: float) -> torch.Tensor:
    r"""Rounding bound on :math:`\tilde{\mathbf f}_j^\top P_{0,-j\ell}\tilde{\mathbf f}_\ell`
    at :math:`\eta=0`, for ``Ft`` of full column rank with extreme singular values ``s_max``
    and ``s_min`` > 0: :math:`4u(n+s_{\max}/s_{\min})\|\tilde{\mathbf f}_j\|
    \|\tilde{\mathbf f}_\ell\|`.

    :math:`P_0=I-F_rF_r^+` is the orthogonal projector onto :math:`\mathrm{range}(F_r)^\perp`
    (:math:`F_r=\tilde F_{-j\ell}`). Its derivative is
    :math:`\delta P=-P\,\delta F\,F_r^+-(P\,\delta F\,F_r^+)^\top`, two terms with orthogonal
    ranges, so :math:`\|\delta P\|_2\le\|\delta F\|_2/s_{\min}(F_r)`; removing columns cannot
    lower the smallest singular value (Cauchy interlacing on :math:`F_r^\top F_r`, a principal
    submatrix of :math:`\tilde F^\top\tilde F`), so :math:`s_{\min}(F_r)\ge s_{\min}(\tilde F)`.
    The SVD is exact for :math:`\|\delta F\|\le c\,u\,s_{\max}`; loss of orthogonality and the
    two products add :math:`nu`. This replaces :math:`1/\sqrt\eta` of the :math:`\eta>0` bound
    (:func:`numerics.li2.ridge_inverse.similarity_rounding_bound`), which is infinite at 0."""
    if not s_min > 0:
        raise ValueError(f"s_min: {s_min!r} must be > 0 (eta = 0 needs full column rank)")
    u = torch.finfo(Ft.dtype).eps
    norms = Ft.norm(dim=0)
    return 4 * u * (Ft.shape[0] + s_max / s_min) * norms[pairs[:, 0]] * norms[pairs[:, 1]]
