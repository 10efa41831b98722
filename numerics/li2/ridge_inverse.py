r"""The ridge inverse :math:`B = (\tilde F^\top\tilde F + \eta I_K)^{-1}` of Li2 §5 by three
routes, the ridge residual operators :math:`P_\eta` and :math:`P_{\eta,-j\ell}`, and the
Schur-complement terms of Theorem 6 (App. B.1) for a batch of feature pairs.

Routes for :math:`B` (all batched over leading dimensions of ``Ft``):

* :func:`ridge_inverse_svd`: from the thin SVD :math:`\tilde F = U\,\mathrm{diag}(s)\,W^\top`,
  :math:`B = W\,\mathrm{diag}\big(1/(s^2+\eta)\big)W^\top + \eta^{-1}(I - WW^\top)`; the second
  term is the null space of :math:`\tilde F` and is present only when :math:`K > n`. No
  subtraction of nearly equal numbers, so its error is that of the SVD.
* :func:`ridge_inverse_cholesky`: a Cholesky factorisation of :math:`\tilde F^\top\tilde F+\eta I`.
* :func:`ridge_inverse_woodbury`: the third party's route (arXiv 2605.08119,
  verify/claims/li2/SOURCES.md §7)
  :math:`B = \eta^{-1}\big(I - \tilde F^\top(\tilde F\tilde F^\top+\eta I_n)^{-1}\tilde F\big)`,
  an :math:`n\times n` solve. It subtracts two terms of size :math:`1/\eta` to get entries of size
  :math:`1/(s^2+\eta)`: catastrophic cancellation when :math:`\eta \ll s^2`.

The residual operator is built from its definition
:math:`P_\eta(F) = I - F(F^\top F+\eta I)^{-1}F^\top` (SOURCES §2.1), evaluated through the thin
SVD :math:`F = U\,\mathrm{diag}(s)\,V^\top` as
:math:`(I - UU^\top) + U\,\mathrm{diag}\big(\eta/(s^2+\eta)\big)U^\top`: the same matrix, without
the cancellation :math:`1 - s^2/(s^2+\eta)` that a literal solve suffers for small
:math:`\eta`. The Schur terms never touch :math:`B`.
"""
from __future__ import annotations

import math

import torch

from numerics import solves


def _check_eta(eta: float, *, positive: bool = False) -> None:
    if not math.isfinite(eta) or eta < 0 or (positive and eta == 0):
        allowed = "eta > 0" if positive else "eta >= 0"
        raise ValueError(f"eta: {eta!r} is outside the allowed range ({allowed}, finite)")


def _check_invertible(Ft: torch.Tensor, eta: float) -> None:
    r""":math:`B` exists for :math:`\eta > 0`, or for :math:`\eta = 0` with full column rank."""
    _check_eta(eta)
    n, K = Ft.shape[-2:]
    if eta == 0 and K > n:
        raise ValueError(f"eta: 0 needs Ft of full column rank, impossible with K={K} > n={n}; "
                         "use eta > 0")


def ridge_matrix(Ft: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`A = \tilde F^\top\tilde F + \eta I_K`."""
    K = Ft.shape[-1]
    return Ft.transpose(-1, -2) @ Ft + eta * torch.eye(K, dtype=Ft.dtype, device=Ft.device)


def ridge_inverse_svd(Ft: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`B` from the thin SVD of :math:`\tilde F` (see the module docstring).

    >>> Ft = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)   # n=1 < K=3
    >>> B = ridge_inverse_svd(Ft, 1.0)
    >>> bool(torch.allclose(B @ ridge_matrix(Ft, 1.0), torch.eye(3, dtype=torch.float64)))
    True
    """
    _check_invertible(Ft, eta)
    _, s, Wh = torch.linalg.svd(Ft, full_matrices=False)
    return ridge_inverse_from_svd(s, Wh, eta)


def null_projector(Wh: torch.Tensor) -> torch.Tensor:
    r""":math:`I_K-WW^\top` for the thin SVD's :math:`W^\top` ``(..., r, K)``: the projector
    onto the null space of :math:`\tilde F` (where :math:`A=\eta I`)."""
    K = Wh.shape[-1]
    return torch.eye(K, dtype=Wh.dtype, device=Wh.device) - Wh.transpose(-1, -2) @ Wh


def ridge_inverse_from_svd(s: torch.Tensor, Wh: torch.Tensor, eta: float,
                           null: torch.Tensor | None = None) -> torch.Tensor:
    r""":math:`B=W\,\mathrm{diag}(1/(s^2+\eta))W^\top` (plus :math:`(I-WW^\top)/\eta` when
    :math:`K>n`) from the thin SVD ``s``, ``Wh`` of :math:`\tilde F`; ``null``:
    :func:`null_projector` of ``Wh`` when it is already at hand (several :math:`\eta`)."""
    W = Wh.transpose(-1, -2)
    B = (W / (s.square() + eta).unsqueeze(-2)) @ Wh
    if W.shape[-1] < Wh.shape[-1]:
        B = B + (null_projector(Wh) if null is None else null) / eta
    return B


def ridge_inverse_cholesky(Ft: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`B` from the Cholesky factor :math:`LL^\top = \tilde F^\top\tilde F + \eta I_K`."""
    _check_invertible(Ft, eta)
    return torch.cholesky_inverse(torch.linalg.cholesky(ridge_matrix(Ft, eta)))


def ridge_inverse_woodbury(Ft: torch.Tensor, eta: float) -> torch.Tensor:
    r"""The third party's route: :math:`B = \eta^{-1}\big(I_K - \tilde F^\top
    (\tilde F\tilde F^\top + \eta I_n)^{-1}\tilde F\big)`."""
    _check_eta(eta, positive=True)
    n, K = Ft.shape[-2:]
    Fh = Ft.transpose(-1, -2)
    inner = Ft @ Fh + eta * torch.eye(n, dtype=Ft.dtype, device=Ft.device)
    eye = torch.eye(K, dtype=Ft.dtype, device=Ft.device)
    # LU, as the third party's code inverts (their arithmetic, also where rounding leaves
    # `inner` numerically indefinite in float32)
    return (eye - Fh @ solves.solve(inner, Ft)) / eta


def ridge_spectrum(Ft: torch.Tensor, eta: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The largest and smallest eigenvalue of :math:`A = \tilde F^\top\tilde F + \eta I`:
    :math:`s_{\max}^2 + \eta` and :math:`s_{\min}^2 + \eta` (with :math:`s_{\min} = 0` when
    :math:`K > n`). Their ratio is the condition number :math:`\kappa(A)`, and
    :math:`\|B\|_2 = 1/(s_{\min}^2+\eta)`."""
    n, K = Ft.shape[-2:]
    s = torch.linalg.svdvals(Ft)
    smin = s[..., -1] if K <= n else torch.zeros_like(s[..., -1])
    return s[..., 0].square() + eta, smin.square() + eta


def residual_operator(F: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`P_\eta(F) = I_n - F(F^\top F + \eta I)^{-1}F^\top`, batched over leading
    dimensions, evaluated from the thin SVD of ``F`` without cancellation (module docstring).

    With :math:`\eta = 0` it is the orthogonal projector onto :math:`\mathrm{range}(F)^\perp`
    (``F`` must then have full column rank). A matrix with no columns gives :math:`I_n`.

    >>> F = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
    >>> residual_operator(F, 1.0)
    tensor([[0.5000, 0.0000],
            [0.0000, 1.0000]], dtype=torch.float64)
    """
    _check_invertible(F, eta)
    n = F.shape[-2]
    eye = torch.eye(n, dtype=F.dtype, device=F.device)
    if F.shape[-1] == 0:
        return eye.expand(*F.shape[:-2], n, n).clone()
    U, s, _ = torch.linalg.svd(F, full_matrices=False)
    damp = eta / (s.square() + eta)
    return eye - U @ U.transpose(-1, -2) + (U * damp.unsqueeze(-2)) @ U.transpose(-1, -2)


def _check_pairs(pairs: torch.Tensor, K: int) -> None:
    if pairs.ndim != 2 or pairs.shape[-1] != 2:
        raise ValueError(f"pairs: shape {tuple(pairs.shape)} must be (number of pairs, 2)")
    if pairs.numel() and (int(pairs.min()) < 0 or int(pairs.max()) >= K):
        raise ValueError(f"pairs: indices must lie in [0, {K})")
    if bool((pairs[:, 0] == pairs[:, 1]).any()):
        raise ValueError("pairs: each pair (j, l) needs j != l")


def columns_without_pairs(Ft: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    r""":math:`\tilde F_{-j\ell}` for each pair: shape ``(pairs, n, K-2)``, column order kept."""
    K = Ft.shape[1]
    _check_pairs(pairs, K)
    rows = torch.arange(len(pairs), device=pairs.device)
    keep = torch.ones(len(pairs), K, dtype=torch.bool, device=pairs.device)
    keep[rows, pairs[:, 0]] = False
    keep[rows, pairs[:, 1]] = False
    kept = torch.arange(K, device=pairs.device).expand(len(pairs), K)[keep]
    return Ft[:, kept.view(len(pairs), K - 2).to(Ft.device)].permute(1, 0, 2)


def quadratic_forms(P: torch.Tensor, Ft: torch.Tensor, pairs: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r""":math:`(\mathbf f_j^\top P\mathbf f_j,\ \mathbf f_j^\top P\mathbf f_\ell,\
    \mathbf f_\ell^\top P\mathbf f_\ell)` per pair; ``P`` is one ``n x n`` operator or one per
    pair (``pairs x n x n``)."""
    fj = Ft[:, pairs[:, 0]].transpose(0, 1)
    fl = Ft[:, pairs[:, 1]].transpose(0, 1)
    P = P.expand(len(pairs), *P.shape[-2:]) if P.ndim == 2 else P
    Pfj = (P @ fj.unsqueeze(-1)).squeeze(-1)
    Pfl = (P @ fl.unsqueeze(-1)).squeeze(-1)
    return (fj * Pfj).sum(-1), (fj * Pfl).sum(-1), (fl * Pfl).sum(-1)


def schur_terms(Ft: torch.Tensor, eta: float, pairs: torch.Tensor, *, chunk: int | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Theorem 6's (App. B.1) :math:`\alpha, \beta, \gamma` for each pair :math:`(j, \ell)`:

    .. math:: \alpha = \eta + \tilde{\mathbf f}_j^\top P_{\eta,-j\ell}\tilde{\mathbf f}_j,\quad
              \beta = \tilde{\mathbf f}_j^\top P_{\eta,-j\ell}\tilde{\mathbf f}_\ell,\quad
              \gamma = \eta + \tilde{\mathbf f}_\ell^\top P_{\eta,-j\ell}\tilde{\mathbf f}_\ell,

    with :math:`P_{\eta,-j\ell}` built explicitly (one ``n x n`` matrix per pair) from
    :math:`\tilde F` with columns :math:`j, \ell` removed. ``pairs`` is an integer tensor of
    shape ``(number of pairs, 2)``; they are processed ``chunk`` at a time (memory
    ``chunk x n x n``; by default about :math:`2^{24}` entries). :math:`B` is never formed.
    """
    _check_invertible(Ft, eta)
    _check_pairs(pairs, Ft.shape[-1])
    if chunk is None:
        chunk = max(1, 2**24 // Ft.shape[-2] ** 2)
    if chunk < 1:
        raise ValueError(f"chunk: {chunk} must be >= 1")
    parts = []
    for batch in pairs.split(chunk):
        P = residual_operator(columns_without_pairs(Ft, batch), eta)
        parts.append(quadratic_forms(P, Ft, batch))
    a, b, c = (torch.cat(t) for t in zip(*parts)) if parts else (Ft.new_zeros(0),) * 3
    return eta + a, b, eta + c


def full_residual_similarity(Ft: torch.Tensor, eta: float, pairs: torch.Tensor) -> torch.Tensor:
    r"""The third party's approximation of :math:`\beta`:
    :math:`\tilde{\mathbf f}_j^\top P_\eta\tilde{\mathbf f}_\ell` with the full :math:`P_\eta`
    (no columns removed), from the stable form of :func:`residual_operator`, for every pair
    of ``pairs`` ``(P, 2)`` at once (one product :math:`P_\eta[\mathbf f_{\ell_1},\dots]`)."""
    _check_pairs(pairs, Ft.shape[-1])
    P = residual_operator(Ft, eta)
    return (Ft[:, pairs[:, 0]] * (P @ Ft[:, pairs[:, 1]])).sum(0)


def pair_entries(B: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    r""":math:`b_{j\ell}` for each pair."""
    return B[..., pairs[:, 0], pairs[:, 1]]


def third_party_code_ridge_inverse(Ft: torch.Tensor, eta: float) -> torch.Tensor:
    r""":math:`B` as the third party's code computes it (``tian_eigengap/theorem6_verify.py``,
    ``woodbury_B``: ``(1/eta) I - (1/eta) Ft.T @ inv(Ft Ft.T + eta I) @ Ft * (1/eta)``):

    .. math:: B_{\rm code} = \eta^{-1}I - \eta^{-2}\tilde F^\top(\tilde F\tilde F^\top
              + \eta I)^{-1}\tilde F = B/\eta + (\eta^{-1} - \eta^{-2})\,I .

    One factor :math:`1/\eta` too many on the second term: the off-diagonal entries are
    :math:`b_{j\ell}/\eta` (same signs), the diagonal is wrong unless :math:`\eta = 1`.
    Kept only to reproduce their figures.
    """
    _check_eta(eta, positive=True)
    n, K = Ft.shape[-2:]
    inner = solves.inv(Ft @ Ft.transpose(-1, -2)
                       + eta * torch.eye(n, dtype=Ft.dtype, device=Ft.device))
    eye = torch.eye(K, dtype=Ft.dtype, device=Ft.device)
    return eye / eta - Ft.transpose(-1, -2) @ inner @ Ft / eta**2


def third_party_code_residual_similarity(Ft: torch.Tensor, B_code: torch.Tensor,
                                         pairs: torch.Tensor) -> torch.Tensor:
    r"""Their "residual similarity" :math:`\mathbf f_j^\top(\mathbf f_\ell -
    \tilde F B_{\rm code}\tilde F^\top\mathbf f_\ell)`, meant as
    :math:`\mathbf f_j^\top P_\eta\mathbf f_\ell` (``residual_similarity_signs``)."""
    _check_pairs(pairs, Ft.shape[-1])
    fj, fl = Ft[:, pairs[:, 0]], Ft[:, pairs[:, 1]]
    return (fj * (fl - Ft @ (B_code @ (Ft.transpose(-1, -2) @ fl)))).sum(0)


def similarity_rounding_bound(Ft: torch.Tensor, eta: float, pairs: torch.Tensor,
                              s_max: float | None = None) -> torch.Tensor:
    r"""Rounding bound on :math:`\tilde{\mathbf f}_j^\top P_{\eta,-j\ell}\tilde{\mathbf f}_\ell`
    computed from an SVD of :math:`\tilde F_{-j\ell}`, for each pair of ``pairs`` ``(P, 2)``:
    :math:`4u(n+s_{\max}/\sqrt\eta)\|\tilde{\mathbf f}_j\|\|\tilde{\mathbf f}_\ell\|`.
    The SVD is exact for a perturbation of size :math:`u\,s_{\max}` and
    :math:`\|\partial P_\eta/\partial F\|\le1/\sqrt\eta`; loss of orthogonality and the two
    products add :math:`nu`. ``s_max``: :math:`\|\tilde F\|_2` when already at hand."""
    u = torch.finfo(Ft.dtype).eps
    if s_max is None:
        s_max = float(torch.linalg.matrix_norm(Ft, ord=2))
    norms = Ft.norm(dim=0)
    return 4 * u * (Ft.shape[0] + s_max / math.sqrt(eta)) * norms[pairs[:, 0]] * norms[pairs[:, 1]]
