r"""Li2 Lemma 1 as a regime map: random features :math:`F = \sigma(XW)` on given inputs, the
exact Stage-I limit :math:`G_F(+\infty)` of the top-layer flow, and how far it is from the
structure Eq. 5 states.

**Inputs.** :func:`sphere_inputs` (i.i.d. uniform unit vectors), :func:`orthonormal_inputs`
(unit vectors with all inner products exactly 0, so Lemma 1's :math:`\epsilon = 0`), or any
``X`` (e.g. the group task's one-hot pairs, :func:`numerics.li2.group_task.dense_inputs`).
:func:`correlation_band` measures Lemma 1's input geometry: the norms, and the band
:math:`|\rho_{ii'} - \rho|\le\epsilon` of the normalised correlations.

**Features.** :func:`preactivations` draws :math:`XW` with :math:`W_{ij}\sim\mathcal N(0,1)`,
batched over seeds.

**The limit.** With :math:`\tilde F = P_1^\perp F`, :math:`\tilde Y = P_1^\perp Y` and
:math:`\eta>0` the top layer's fixed point solves
:math:`(\tilde F^\top\tilde F + \eta I)V^\star = \tilde F^\top\tilde Y`, equivalently
:math:`V^\star = \tilde F^\top S^{-1}\tilde Y` with :math:`S = \tilde F\tilde F^\top + \eta I`
(push-through), and :math:`G^\star = E^\star V^{\star\top}`, :math:`E^\star = \tilde Y -
\tilde FV^\star = \eta S^{-1}\tilde Y`. In the eigenbasis :math:`\tilde F\tilde F^\top =
U\Lambda U^\top` (all :math:`n` eigenpairs, zeros included), with :math:`C = cc^\top`,
:math:`c = U^\top\tilde Y`, :math:`p_i = \eta/(\lambda_i + \eta)`, :math:`q_i = 1/(\lambda_i +
\eta)` and :math:`H = U^\top\tilde F` (so :math:`HH^\top = \Lambda`):

.. math:: G^\star = U\,\mathrm{diag}(p)\,C\,\mathrm{diag}(q)\,H,\qquad
          D := \tilde Y\tilde Y^\top\tilde F = U\,C\,H,

and every inner product the map needs is a sum over :math:`n\times n` entries,

.. math:: \langle G^\star, D\rangle = \sum_{ij}\lambda_jq_jp_iC_{ij}^2,\quad
          \|G^\star\|_F^2 = \sum_{ij}\lambda_jq_j^2p_i^2C_{ij}^2,\quad
          \|D\|_F^2 = \sum_{ij}\lambda_jC_{ij}^2,

so :math:`G^\star` (``n x K``) is never formed and many :math:`\eta` share one
eigendecomposition. :func:`explicit_limit` forms :math:`G^\star` the direct way, for
cross-checks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.activations import Activation
from numerics.random import randn
from numerics.li2.two_layer import center


def _check_size(name: str, value: int, lo: int = 1) -> None:
    if not (isinstance(value, int) and value >= lo):
        raise ValueError(f"{name}: {value!r} must be an integer >= {lo}")


def sphere_inputs(n: int, d: int, generator: torch.Generator, *,
                  dtype: torch.dtype = torch.float64,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    r"""``n`` i.i.d. unit vectors in :math:`\mathbb R^d` (normalised Gaussian rows)."""
    _check_size("n", n)
    _check_size("d", d)
    X = randn(n, d, generator=generator, device=device, dtype=dtype)
    return X / torch.linalg.vector_norm(X, dim=1, keepdim=True)


def orthonormal_inputs(n: int, d: int, generator: torch.Generator, *,
                       dtype: torch.dtype = torch.float64,
                       device: torch.device | str = "cpu") -> torch.Tensor:
    r"""``n`` orthonormal unit vectors in :math:`\mathbb R^d` (``n <= d``): the rows of the Q
    factor of a Gaussian ``d x n`` matrix, transposed."""
    _check_size("n", n)
    if not (isinstance(d, int) and d >= n):
        raise ValueError(f"d: {d!r} must be an integer >= n = {n} for orthonormal rows")
    q, _ = torch.linalg.qr(randn(d, n, generator=generator, dtype=torch.float64))
    return q.T.contiguous().to(device=device, dtype=dtype)


@dataclass(frozen=True)
class CorrelationBand:
    r"""Lemma 1's input geometry: the row norms :math:`s_i` (their spread
    ``norm_spread`` :math:`= (\max s - \min s)/\max s`), and the band of the normalised
    correlations :math:`\rho_{ii'} = \mathbf x_i^\top\mathbf x_{i'}/(s_is_{i'})`, :math:`i\ne i'`:
    centre :math:`\rho` (the mid-range) and half-width :math:`\epsilon`, the smallest
    :math:`\epsilon` with :math:`|\rho_{ii'} - \rho|\le\epsilon` for all pairs."""

    norm: float
    norm_spread: float
    rho: float
    eps: float


def correlation_band(X: torch.Tensor) -> CorrelationBand:
    """The :class:`CorrelationBand` of the rows of ``X`` (``n x d``, ``n >= 2``)."""
    if X.dim() != 2 or X.shape[0] < 2:
        raise ValueError(f"X: needs an n x d matrix with n >= 2, got shape {tuple(X.shape)}")
    norms = torch.linalg.vector_norm(X, dim=1)
    R = (X @ X.T) / (norms[:, None] * norms[None, :])
    off = R[~torch.eye(X.shape[0], dtype=torch.bool, device=X.device)]
    hi, lo = float(off.max()), float(off.min())
    return CorrelationBand(norm=float(norms.mean()),
                           norm_spread=float((norms.max() - norms.min()) / norms.max()),
                           rho=(hi + lo) / 2, eps=(hi - lo) / 2)


def preactivations(X: torch.Tensor, K: int, batch: int,
                   generator: torch.Generator) -> torch.Tensor:
    r""":math:`XW` for ``batch`` independent :math:`W\in\mathbb R^{d\times K}` with i.i.d.
    :math:`\mathcal N(0,1)` entries: shape ``(batch, n, K)``.

    Its columns are i.i.d. :math:`\mathcal N(0, XX^\top)`. When :math:`d > n` they are drawn as
    :math:`LZ` with :math:`LL^\top = XX^\top` (:math:`L = Q\Lambda^{1/2}` from ``eigh``) and
    :math:`Z` standard normal (``n x K``): the same law at :math:`n^2K` instead of :math:`ndK`
    flops and memory :math:`nK` instead of :math:`dK`.
    """
    _check_size("K", K)
    _check_size("batch", batch)
    n, d = X.shape
    if d > n:
        lam, Q = torch.linalg.eigh(X @ X.T)
        L = Q * lam.clamp_min(0).sqrt()
        return L @ randn(batch, n, K, generator=generator, device=X.device, dtype=X.dtype)
    return X @ randn(batch, d, K, generator=generator, device=X.device, dtype=X.dtype)


def centred_features(pre: torch.Tensor, act: Activation) -> torch.Tensor:
    r""":math:`\tilde F = P_1^\perp\sigma(XW)` (centred over samples, dimension -2)."""
    return center(act(pre))


@dataclass(frozen=True)
class GramSpectrum:
    r"""The eigenpairs of :math:`\tilde F\tilde F^\top` (all ``n``, ascending, batched) and the
    label overlaps :math:`c = U^\top\tilde Y`; ``K`` is the width."""

    lam: torch.Tensor   # (B, n)
    c: torch.Tensor     # (B, n, M)
    K: int

    @property
    def n(self) -> int:
        return self.lam.shape[-1]

    def sample_gram(self) -> torch.Tensor:
        r"""The eigenvalues of :math:`\tilde F\tilde F^\top` on
        :math:`\mathrm{range}(P_1^\perp)` (``n-1`` per batch entry, descending): the largest
        ``n-1`` (the structural zero along :math:`\mathbf 1` is dropped), clamped at 0."""
        return self.lam.flip(-1)[..., : self.n - 1].clamp_min(0)

    def feature_gram(self) -> torch.Tensor:
        r"""The eigenvalues of :math:`\tilde F^\top\tilde F` (``K`` per batch entry,
        descending): the nonzero ones of :math:`\tilde F\tilde F^\top`, padded with zeros.
        Its rank is at most :math:`\min(K, n-1)`."""
        top = self.lam.flip(-1)[..., : min(self.K, self.n - 1)].clamp_min(0)
        pad = self.K - top.shape[-1]
        return torch.nn.functional.pad(top, (0, pad)) if pad > 0 else top

    def feature_range_gram(self) -> torch.Tensor:
        r"""The eigenvalues of :math:`\tilde F^\top\tilde F` on its range: its
        :math:`\min(K, n-1)` structurally nonzero ones (descending)."""
        return self.sample_gram()[..., : min(self.K, self.n - 1)]


def gram_spectrum(Ft: torch.Tensor, Yt: torch.Tensor) -> GramSpectrum:
    r"""Eigendecomposition of :math:`\tilde F\tilde F^\top` (``(B, n, K)`` features) and the
    overlaps of the centred labels ``Yt`` (``n x M``) with its eigenvectors."""
    lam, U = torch.linalg.eigh(Ft @ Ft.transpose(-1, -2))
    return GramSpectrum(lam=lam, c=U.transpose(-1, -2) @ Yt, K=Ft.shape[-1])


def eigen_spread(lam: torch.Tensor) -> torch.Tensor:
    r"""Relative spread :math:`(\lambda_{\max} - \lambda_{\min})/\bar\lambda` of each row
    (0 exactly for a multiple of the identity; at least 1 once an eigenvalue is 0)."""
    return (lam.max(-1).values - lam.min(-1).values) / lam.mean(-1)


@dataclass(frozen=True)
class LimitStructure:
    r"""Inner products of :math:`G^\star = G_F(+\infty)` with :math:`D = \tilde Y\tilde Y^\top
    \tilde F`, per :math:`\eta` and batch entry (shape ``(E, B)``)."""

    GD: torch.Tensor
    GG: torch.Tensor
    DD: torch.Tensor

    @property
    def cosine(self) -> torch.Tensor:
        return self.GD / (self.GG * self.DD).sqrt()

    @property
    def scalar(self) -> torch.Tensor:
        r"""The least-squares :math:`g` in :math:`G^\star\approx gD`:
        :math:`\langle G^\star, D\rangle/\|D\|_F^2`."""
        return self.GD / self.DD

    def relative_error(self, scalar: torch.Tensor) -> torch.Tensor:
        r""":math:`\|G^\star - eD\|_F/\|G^\star\|_F` for a predicted scalar :math:`e`."""
        sq = self.GG - 2 * scalar * self.GD + scalar**2 * self.DD
        return sq.clamp_min(0).sqrt() / self.GG.sqrt()


def limit_structure(spec: GramSpectrum, etas: torch.Tensor) -> LimitStructure:
    r"""The sums of the module docstring, for every ``eta`` in the vector ``etas`` (> 0)."""
    if etas.dim() != 1 or not bool((etas > 0).all()):
        raise ValueError(f"etas: needs a vector of weight decays > 0, got {etas}")
    # Ft Ft^T has rank <= min(K, n - 1): its other eigenvalues are 0, which eigh returns as
    # +-(a few) u lambda_max. Left in, such a lambda enters lambda / (lambda + eta) as
    # u lambda_max / eta, an error that grows as eta -> 0; the usual rank cutoff
    # n u lambda_max sends them to their exact value
    lam = spec.lam.clamp_min(0)
    cutoff = lam.shape[-1] * torch.finfo(lam.dtype).eps * lam.amax(-1, keepdim=True)
    lam = torch.where(lam > cutoff, lam, torch.zeros_like(lam))[None]   # (1, B, n)
    eta = etas.to(lam)[:, None, None]                   # (E, 1, 1)
    p, q = eta / (lam + eta), 1 / (lam + eta)           # (E, B, n)
    C2 = (spec.c @ spec.c.transpose(-1, -2)).square()     # (B, n, n): C_ij^2

    def form(w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """sum_ij w_i C_ij^2 v_j as w^T C2 v (batched matrix products, memory E B n)."""
        return (w[..., None, :] @ C2 @ v[..., :, None])[..., 0, 0]

    return LimitStructure(GD=form(p, lam * q), GG=form(p**2, lam * q**2),
                          DD=form(torch.ones_like(lam), lam).expand_as(p[..., 0]))


def explicit_limit(Ft: torch.Tensor, Yt: torch.Tensor, eta: float) -> tuple[torch.Tensor,
                                                                           torch.Tensor]:
    r""":math:`G^\star` and :math:`D` formed entry by entry: :math:`V^\star` from a Cholesky solve
    of :math:`(\tilde F^\top\tilde F + \eta I)V = \tilde F^\top\tilde Y` (the primal system),
    :math:`G^\star = (\tilde Y - \tilde FV^\star)V^{\star\top}`. For small cross-checks."""
    if not (eta > 0 and math.isfinite(eta)):
        raise ValueError(f"eta: {eta!r} must be a finite number > 0")
    K = Ft.shape[-1]
    A = Ft.transpose(-1, -2) @ Ft + eta * torch.eye(K, dtype=Ft.dtype, device=Ft.device)
    V = torch.cholesky_solve(Ft.transpose(-1, -2) @ Yt, torch.linalg.cholesky(A))
    G = (Yt - Ft @ V) @ V.transpose(-1, -2)
    return G, Yt @ (Yt.transpose(-1, -2) @ Ft)


@dataclass(frozen=True)
class WidthPoint:
    r"""One width of a sweep, batched over seeds (``B``) and weight decays (``E``): the limit's
    inner products, :math:`\mathrm{tr}(\tilde F\tilde F^\top)`, the eigen-spreads of both Gram
    matrices (:math:`\tilde F^\top\tilde F` also on its range) and :math:`\lambda_{\max}`."""

    K: int
    structure: LimitStructure   # (E, B)
    trace: torch.Tensor         # (B,)
    sample_spread: torch.Tensor  # (B,) of Ft Ft^T on range(P)
    feature_spread: torch.Tensor  # (B,) of Ft^T Ft
    feature_range_spread: torch.Tensor  # (B,) of Ft^T Ft on its range
    lam_max: torch.Tensor       # (B,)


def sweep_widths(X: torch.Tensor, Yt: torch.Tensor, act: Activation, widths: list[int],
                 etas: torch.Tensor, seeds: int, generator: torch.Generator) -> list[WidthPoint]:
    r"""For each width ``K``: ``seeds`` independent draws of :math:`W`, the centred features,
    and the :class:`WidthPoint` of their limits at every ``eta``."""
    points = []
    for K in widths:
        Ft = centred_features(preactivations(X, K, seeds, generator), act)
        spec = gram_spectrum(Ft, Yt)
        lam = spec.lam.clamp_min(0)
        points.append(WidthPoint(
            K=K, structure=limit_structure(spec, etas), trace=lam.sum(-1),
            sample_spread=eigen_spread(spec.sample_gram()),
            feature_spread=eigen_spread(spec.feature_gram()),
            feature_range_spread=eigen_spread(spec.feature_range_gram()),
            lam_max=lam.max(-1).values))
    return points
