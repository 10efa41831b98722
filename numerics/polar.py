r"""Polar factors, the nuclear norm and Newton-Schulz, batched over leading axes (Li2 Lemma 2).

For :math:`G = U D V^\top` (compact SVD, :math:`D > 0`) the polar factor is
:math:`\hat G = U V^\top`, with the convention :math:`\hat 0 = 0`. Three independent routes:

* :func:`polar_svd`: from ``torch.linalg.svd``, keeping the numerically nonzero singular values;
* :func:`polar_eigh`: :math:`G (G^\top G)^{-1/2}` (or :math:`(GG^\top)^{-1/2} G` for wide
  :math:`G`) from a symmetric eigendecomposition; full rank only;
* :func:`newton_schulz`: the author's five quintic Newton-Schulz steps
  (verify/claims/li2/SOURCES.md §6.4), an
  approximation whose singular values are *not* all 1;
* :func:`newton_polar`: the scaled Newton iteration for invertible square matrices, with no rank
  threshold (an SVD drops singular values below :math:`u\,\sigma_{\max}`; a direction
  normalised by Muon can be that small).

:func:`fractional_polar` is :math:`A(A^\top A)^{-1/c}` (Lemma 9's :math:`\hat A^{(c)}`).

:func:`singular_values_eigvalsh` and :func:`nuclear_norm` use the symmetric eigenvalues of the
Jordan-Wielandt matrix :math:`\begin{pmatrix}0 & G\\ G^\top & 0\end{pmatrix}`, which are
:math:`\pm d_i` (and zeros), so they share nothing with the SVD routine and, unlike the
eigenvalues of :math:`G^\top G`, do not square the condition number.

:func:`joint_energy` is Li2's :math:`\mathcal E_{\rm joint}(W) = \sum_j \mathcal E(\mathbf w_j)`
(Eq. 7, Lemma 2) for :math:`\sigma(x) = x^2`.
"""
from __future__ import annotations

import torch

from numerics import solves

# (a, b, c) of the author's five quintic steps X <- aX + b(XX^T)X + c(XX^T)^2 X (SOURCES §6.4).
AUTHOR_NS_COEFFICIENTS: tuple[tuple[float, float, float], ...] = (
    (4.01, -9.22, 5.80),
    (3.49, -6.38, 3.23),
    (3.34, -6.21, 3.20),
    (3.64, -7.48, 4.43),
    (3.46, -5.35, 2.85),
)


def _check_matrix(G: torch.Tensor) -> None:
    if G.dim() < 2:
        raise ValueError(f"G: needs at least 2 dimensions (..., m, n), got shape {tuple(G.shape)}")
    if not G.is_floating_point():
        raise ValueError(f"G: needs a real floating dtype, got {G.dtype}")


def rank_tolerance(G: torch.Tensor) -> torch.Tensor:
    r"""Singular values at or below :math:`\max(m, n)\,u\,d_{\max}` count as zero (the
    threshold of ``numpy.linalg.matrix_rank``: the SVD's backward error is about this size)."""
    m, n = G.shape[-2:]
    d_max = torch.linalg.matrix_norm(G, ord=2)
    return max(m, n) * torch.finfo(G.dtype).eps * d_max


def polar_svd(G: torch.Tensor) -> torch.Tensor:
    r""":math:`U_r V_r^\top` from the compact SVD, over the numerically nonzero singular values.

    Dropping the zero singular values is what makes :math:`\hat G = 0 \iff G = 0`: a full SVD
    of a rank-deficient :math:`G` has arbitrary singular vectors for them.
    """
    _check_matrix(G)
    U, d, Vh = torch.linalg.svd(G, full_matrices=False)
    keep = (d > rank_tolerance(G)[..., None]).to(G.dtype)
    return (U * keep[..., None, :]) @ Vh


def numerical_rank(G: torch.Tensor) -> torch.Tensor:
    """Number of singular values above :func:`rank_tolerance` (integer tensor, batched)."""
    _check_matrix(G)
    d = torch.linalg.svdvals(G)
    return (d > rank_tolerance(G)[..., None]).sum(-1)


def polar_eigh(G: torch.Tensor) -> torch.Tensor:
    r""":math:`G (G^\top G)^{-1/2}` (:math:`m \ge n`) or :math:`(GG^\top)^{-1/2} G`
    (:math:`m < n`) from ``torch.linalg.eigh``; the error grows like :math:`\kappa(G)^2 u`.

    Raises ``ValueError`` if some matrix of the batch is not of full rank :math:`\min(m,n)`.
    """
    _check_matrix(G)
    m, n = G.shape[-2:]
    wide = m < n
    gram = G @ G.mT if wide else G.mT @ G
    w, Q = torch.linalg.eigh(gram)
    # The Gram matrix's eigenvalues carry absolute errors ~ size * u * w_max.
    floor = max(m, n) * torch.finfo(G.dtype).eps * w[..., -1:].clamp_min(0)
    if not bool(torch.all(w > floor)):
        raise ValueError("G: polar_eigh needs full rank min(m, n) in every batch entry; "
                         "use polar_svd for rank-deficient G")
    inv_sqrt = (Q * w.rsqrt()[..., None, :]) @ Q.mT
    return inv_sqrt @ G if wide else G @ inv_sqrt


def singular_values_eigvalsh(G: torch.Tensor) -> torch.Tensor:
    r"""The :math:`\min(m, n)` singular values, descending, as the largest eigenvalues of
    :math:`\begin{pmatrix}0 & G\\ G^\top & 0\end{pmatrix}` (spectrum :math:`\pm d_i` and
    :math:`|m - n|` zeros). Absolute error :math:`\approx u\,\|G\|_2` per value."""
    _check_matrix(G)
    m, n = G.shape[-2:]
    k = min(m, n)
    zeros_m = G.new_zeros(*G.shape[:-2], m, m)
    zeros_n = G.new_zeros(*G.shape[:-2], n, n)
    jordan_wielandt = torch.cat([torch.cat([zeros_m, G], -1), torch.cat([G.mT, zeros_n], -1)],
                                -2)
    return torch.linalg.eigvalsh(jordan_wielandt)[..., -k:].flip(-1)


def nuclear_norm(G: torch.Tensor) -> torch.Tensor:
    r""":math:`\|G\|_\ast = \sum_i d_i` from :func:`singular_values_eigvalsh` (no SVD)."""
    return singular_values_eigvalsh(G).sum(-1)


def frobenius_inner(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    r""":math:`\langle A, B\rangle_F = \sum_{ij} A_{ij}B_{ij}`, batched."""
    return (A * B).sum((-2, -1))


def newton_schulz(G: torch.Tensor,
                  coefficients: tuple[tuple[float, float, float], ...] = AUTHOR_NS_COEFFICIENTS
                  ) -> torch.Tensor:
    r"""Approximate polar factor: :math:`X_0 = G/\|G\|_F`, then for each :math:`(a, b, c)`

    .. math:: X \leftarrow aX + b\,(XX^\top)X + c\,(XX^\top)^2 X .

    Each step maps a singular value :math:`x` to :math:`ax + bx^3 + cx^5` and keeps the
    singular vectors, so :math:`\mathrm{NS}(G) = U\,p(D/\|G\|_F)\,V^\top`. A tall :math:`G` is
    transposed first so that :math:`XX^\top` is the smaller Gram matrix (same result in exact
    arithmetic). :math:`\mathrm{NS}(0) = 0`.
    """
    _check_matrix(G)
    if not coefficients:
        raise ValueError("coefficients: at least one (a, b, c) step is needed")
    tall = G.shape[-2] > G.shape[-1]
    X = G.mT if tall else G
    norm = torch.linalg.matrix_norm(X)[..., None, None]
    X = torch.where(norm > 0, X / torch.where(norm > 0, norm, 1), 0)
    for a, b, c in coefficients:
        A = X @ X.mT
        X = a * X + (b * A + c * A @ A) @ X
    return X.mT if tall else X


def newton_polar(X: torch.Tensor, *, max_iterations: int = 60) -> torch.Tensor:
    r"""Polar factor of invertible square ``X`` ``(..., n, n)`` by the scaled Newton iteration
    :math:`X \leftarrow \tfrac12(\zeta X + \zeta^{-1}X^{-\top})`,
    :math:`\zeta = (\|X^{-1}\|_F/\|X\|_F)^{1/2}` (Higham 1986): quadratic convergence and
    no rank threshold, so singular values far below :math:`u\,\sigma_{\max}` still count
    (unlike an SVD's). Stops when a step changes :math:`X` by at most :math:`8nu`; raises
    ``ArithmeticError`` if it does not converge."""
    n = X.shape[-1]
    tol = 8 * n * torch.finfo(X.dtype).eps
    for _ in range(max_iterations):
        inverse = solves.inv(X)
        zeta = (torch.linalg.matrix_norm(inverse) / torch.linalg.matrix_norm(X)).sqrt()
        zeta = zeta[..., None, None]
        step = 0.5 * (zeta * X + inverse.mT / zeta)
        change = torch.linalg.matrix_norm(step - X)
        X = step
        if bool((change <= tol * torch.linalg.matrix_norm(X)).all()):
            return X
    raise ArithmeticError(f"newton_polar: no convergence in {max_iterations} iterations")


def fractional_polar(A: torch.Tensor, c: float) -> torch.Tensor:
    r""":math:`A(A^\top A)^{-1/c}` for full-column-rank ``A`` ``(..., n, k)`` (Lemma 9's
    :math:`\hat A^{(c)}`; :math:`c = 2` is the polar factor), from a symmetric
    eigendecomposition of :math:`A^\top A`. Raises ``ValueError`` when a column rank is lost."""
    if not c > 0:
        raise ValueError(f"c: {c!r} must be > 0")
    values, vectors = torch.linalg.eigh(A.mT @ A)
    floor = max(A.shape[-2:]) * torch.finfo(A.dtype).eps * values[..., -1:]
    if not bool((values > floor).all()):
        raise ValueError("A: needs full column rank in every batch entry")
    return A @ (vectors * values.pow(-1.0 / c)[..., None, :]) @ vectors.mT
