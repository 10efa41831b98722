r"""Theorem 6 of Li2 (§5) along training: the ridge inverse
:math:`B=(\tilde F^\top\tilde F+\eta I_K)^{-1}` of a trained network's features at checkpoints,
by the third party's Woodbury route and by stable routes, with the rounding bounds that say
where the two must agree, and the pair selections behind
:math:`\Pr[b_{j\ell}<0\mid \mathbf f_j,\mathbf f_\ell\ \text{similar}]`.

Routes (:func:`ridge_routes`, batched over leading axes):

* stable: :func:`numerics.li2.ridge_inverse.ridge_inverse_svd` (the eigendecomposition of
  :math:`\tilde F^\top\tilde F` through the thin SVD, no cancellation) and
  :func:`numerics.li2.ridge_inverse.ridge_inverse_cholesky` (a solve);
* Woodbury, as the third party writes it (arXiv 2605.08119, verify/claims/li2/SOURCES.md §7.2): a
  caller-supplied
  formula, evaluated in a chosen precision (their float64, or float32 as on an MPS device),
  normally :math:`B_W=\eta^{-1}\big(I_K-\tilde F^\top(\tilde F\tilde F^\top+\eta I_n)^{-1}
  \tilde F\big)`.

Rounding model of the Woodbury route (first order; :func:`woodbury_gain`). With
:math:`S=\tilde F\tilde F^\top+\eta I` and singular values :math:`s_i` of :math:`\tilde F`, a
backward-stable solve returns :math:`\hat X=(S+\delta S)^{-1}\tilde F`,
:math:`\|\delta S\|\lesssim c\,n\,u\,\|S\|`, so

.. math:: \|\tilde F^\top(\hat X-X)\|\le\|\tilde F^\top S^{-1}\|\,\|\delta S\|\,\|S^{-1}\tilde F\|
          \lesssim c\,n\,u\,(s_{\max}^2+\eta)\,r^2,\qquad r=\max_i\frac{s_i}{s_i^2+\eta},

the product :math:`\tilde F^\top\hat X` adds :math:`n\,u\,s_{\max}r` and the subtraction
from :math:`I` adds :math:`u`; dividing by :math:`\eta` and measuring in units of
:math:`\|B\|_2=1/\lambda_{\min}(A)` gives the gain

.. math:: a_W=\frac{\lambda_{\min}(A)}{\eta}\Big((s_{\max}^2+\eta)\,r^2+s_{\max}r+1\Big),

and the bound :math:`4\max(n,K)\,u\,a_W` (the constant of :func:`verify.tolerances.conditioned`).
For :math:`K\ge n` (the third party's :math:`K=2048>n=2016`) :math:`\lambda_{\min}=\eta` and
:math:`r\le1/(2\sqrt\eta)`, so :math:`a_W\approx\kappa(A)/4` whenever some :math:`s_i` is near
:math:`\sqrt\eta`; the stable routes err by :math:`4\max(n,K)\,u\,\kappa(A)`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TypeVar

import torch
from scipy import stats

from numerics.li2.trainer import GroupTrainer
from numerics.li2.ridge_inverse import (
    null_projector,
    ridge_inverse_cholesky,
    ridge_inverse_from_svd,
)

T = TypeVar("T")


def sample_centred_features(trainer: GroupTrainer) -> torch.Tensor:
    r""":math:`\tilde F=P_1^\perp\sigma(XW)` on each configuration's training samples at the
    trainer's current weights, ``(B, n, K)`` in float64 (the Thm. 6 linear algebra is done in
    float64 whatever the training precision). All configurations need the same :math:`n`."""
    counts = {int(c) for c in trainer.train_set.count.tolist()}
    if len(counts) != 1:
        raise ValueError(f"trainer: configurations have different training sizes {sorted(counts)}"
                         f"; use one p per trainer")
    n = counts.pop()
    F = trainer.forward_snapshot().F[:, :n].to(torch.float64)
    return F - F.mean(1, keepdim=True)


def at_checkpoints(trainer: GroupTrainer, epochs: Sequence[int],
                   read: Callable[[GroupTrainer], T]) -> dict[int, T]:
    r"""Train to each epoch in ``epochs`` (increasing, not before the trainer's current epoch)
    and return ``read(trainer)`` there (e.g. :func:`sample_centred_features`, or the weights
    they are a function of); the run is resumed between checkpoints (``record_last=False``),
    so its history is that of one uninterrupted run."""
    epochs = list(epochs)
    if not epochs or any(b <= a for a, b in pairwise(epochs)) or epochs[0] < trainer.epoch:
        raise ValueError(f"epochs: {epochs} must be strictly increasing and >= the trainer's "
                         f"epoch {trainer.epoch}")
    out = {}
    for i, epoch in enumerate(epochs):
        trainer.train(epoch - trainer.epoch, record_last=i == len(epochs) - 1)
        out[epoch] = read(trainer)
    return out


def woodbury_gain(s: torch.Tensor, eta: float, n: int, K: int) -> torch.Tensor:
    r"""The Woodbury route's rounding gain :math:`a_W` (module docstring) from the singular
    values ``s`` of :math:`\tilde F` (``(..., min(n, K))``): its error in units of
    :math:`\|B\|_2` is at most :math:`4\max(n,K)\,u\,a_W`."""
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta: {eta!r} must be finite and > 0")
    s_max = s[..., 0]
    r = (s / (s.square() + eta)).amax(-1)
    lam_min = (s[..., -1].square() if K <= n else torch.zeros_like(s_max)) + eta
    return lam_min / eta * ((s_max.square() + eta) * r.square() + s_max * r + 1)


@dataclass(frozen=True)
class RidgeRoutes:
    r""":math:`B` at one :math:`\eta` for a batch of feature matrices ``(S, n, K)``: the two
    stable routes and the Woodbury route (in ``woodbury_dtype``), the spectrum of
    :math:`A=\tilde F^\top\tilde F+\eta I` and the two rounding bounds, in units of
    :math:`\|B\|_2` (``(S,)`` each)."""

    eta: float
    n: int
    K: int
    stable: torch.Tensor
    solve: torch.Tensor | None
    woodbury: torch.Tensor
    woodbury_dtype: torch.dtype
    lam_max: torch.Tensor
    lam_min: torch.Tensor
    gain: torch.Tensor

    @property
    def kappa(self) -> torch.Tensor:
        r""":math:`\kappa(A)=\lambda_{\max}/\lambda_{\min}`."""
        return self.lam_max / self.lam_min

    @property
    def norm(self) -> torch.Tensor:
        r""":math:`\|B\|_2=1/\lambda_{\min}(A)`."""
        return 1 / self.lam_min

    def stable_bound(self) -> torch.Tensor:
        r"""Error of the SVD and Cholesky routes, units of :math:`\|B\|_2`:
        :math:`4\max(n,K)\,u_{64}\,\kappa(A)` (backward-stable routes, as in ``li2.thm6``)."""
        return 4 * max(self.n, self.K) * torch.finfo(self.stable.dtype).eps * self.kappa

    def woodbury_bound(self) -> torch.Tensor:
        r"""Bound on :math:`\max|B_W-B_{\rm svd}|/\|B\|_2`: the Woodbury route's
        :math:`4\max(n,K)\,u_W\,a_W`, the rounding of the features to ``woodbury_dtype``
        (:math:`\delta B\approx-B\,\delta A\,B`, :math:`\|\delta A\|\le2u_W s_{\max}^2`:
        :math:`4\max(n,K)\,u_W\,\kappa(A)` covers it) and the stable route's own error."""
        u_w = torch.finfo(self.woodbury_dtype).eps
        return 4 * max(self.n, self.K) * u_w * (self.gain + self.kappa) + self.stable_bound()


@dataclass(frozen=True)
class FeatureSVD:
    r"""The :math:`\eta`-free factorisations of one ``Ft`` ``(..., n, K)`` that
    :func:`ridge_routes` reads, taken once for every :math:`\eta` at a checkpoint: the
    singular values (``svdvals``), the thin SVD's :math:`W^\top` and singular values, and, for
    :math:`K>n`, the projector :math:`I-WW^\top` onto the null space of :math:`\tilde F`."""

    values: torch.Tensor
    s: torch.Tensor
    Wh: torch.Tensor
    null: torch.Tensor | None

    @classmethod
    def of(cls, Ft: torch.Tensor) -> FeatureSVD:
        _, s, Wh = torch.linalg.svd(Ft, full_matrices=False)
        null = null_projector(Wh) if Wh.shape[-2] < Ft.shape[-1] else None
        return cls(torch.linalg.svdvals(Ft), s, Wh, null)

    def ridge_inverse(self, eta: float) -> torch.Tensor:
        r""":math:`B` as :func:`numerics.li2.ridge_inverse.ridge_inverse_svd` forms it (the same
        floats), from the stored SVD."""
        return ridge_inverse_from_svd(self.s, self.Wh, eta, self.null)


def ridge_routes(Ft: torch.Tensor, eta: float, woodbury: Callable[[torch.Tensor, float],
                 torch.Tensor], *, woodbury_dtype: torch.dtype = torch.float64,
                 solve: bool = True, svd: FeatureSVD | None = None) -> RidgeRoutes:
    r""":math:`B` for ``Ft`` ``(..., n, K)`` (float64) by the SVD, a Cholesky solve (unless
    ``solve=False``), and the formula ``woodbury(Ft, eta)`` evaluated on ``Ft`` rounded to
    ``woodbury_dtype`` (the result is returned in float64). ``svd``: ``FeatureSVD.of(Ft)``,
    passed when several :math:`\eta` share ``Ft`` (the same results, one SVD)."""
    if Ft.dtype != torch.float64:
        raise ValueError(f"Ft: dtype {Ft.dtype} must be float64 (the reference routes)")
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"eta: {eta!r} must be finite and > 0")
    n, K = Ft.shape[-2:]
    if svd is None:
        svd = FeatureSVD.of(Ft)
    s = svd.values
    lam_min = (s[..., -1].square() if K <= n else torch.zeros_like(s[..., 0])) + eta
    return RidgeRoutes(eta=eta, n=n, K=K, stable=svd.ridge_inverse(eta),
                       solve=ridge_inverse_cholesky(Ft, eta) if solve else None,
                       woodbury=woodbury(Ft.to(woodbury_dtype), eta).to(torch.float64),
                       woodbury_dtype=woodbury_dtype, lam_max=s[..., 0].square() + eta,
                       lam_min=lam_min, gain=woodbury_gain(s, eta, n, K))


# --- similarity and pair selection ---------------------------------------------------------

def feature_cosines(Ft: torch.Tensor) -> torch.Tensor:
    r""":math:`\cos(\tilde{\mathbf f}_j,\tilde{\mathbf f}_\ell)` for all node pairs,
    ``(..., K, K)``; a zero column (a dead node) has cosine 0 with every node."""
    norms = Ft.norm(dim=-2, keepdim=True)
    unit = Ft / torch.where(norms > 0, norms, 1)
    return unit.transpose(-1, -2) @ unit


def _upper(cos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if cos.ndim != 2 or cos.shape[0] != cos.shape[1] or cos.shape[0] < 2:
        raise ValueError(f"cos: shape {tuple(cos.shape)} must be (K, K) with K >= 2")
    K = cos.shape[0]
    pairs = torch.triu_indices(K, K, offset=1, device=cos.device).T
    return pairs, cos[pairs[:, 0], pairs[:, 1]]


#: pairs of the ranking screened per tensor step in :func:`disjoint_similar_pairs`
_GREEDY_BLOCK = 512


def disjoint_similar_pairs(cos: torch.Tensor, threshold: float) -> torch.Tensor:
    r"""Node-disjoint pairs with :math:`\cos>` ``threshold``, chosen greedily in decreasing
    cosine (each node with its most similar partner still free), ``(P, 2)`` with
    :math:`P\le\lfloor K/2\rfloor`. No two selected pairs share a feature."""
    if not -1 <= threshold < 1:
        raise ValueError(f"threshold: {threshold} must lie in [-1, 1)")
    pairs, values = _upper(cos)
    keep = values > threshold
    pairs, values = pairs[keep], values[keep]
    order = torch.argsort(values, descending=True, stable=True)
    K = cos.shape[0]
    ranked = pairs[order].cpu()
    used = torch.zeros(K, dtype=torch.bool)
    chosen: list[tuple[int, int]] = []
    # In blocks of the ranking: pairs with a node already used are dropped in one tensor
    # step, the rest are taken in order as before (the same pairs as one pass over the list).
    for block in ranked.split(_GREEDY_BLOCK):
        free = block[~(used[block[:, 0]] | used[block[:, 1]])]
        for j, l in free.tolist():
            if not (used[j] or used[l]):
                used[j] = used[l] = True
                chosen.append((j, l))
        if len(chosen) == K // 2:
            break
    return torch.tensor(chosen, dtype=torch.long, device=cos.device).reshape(-1, 2)


def top_pairs(cos: torch.Tensor, count: int) -> torch.Tensor:
    r"""The third party's selection: the ``count`` pairs :math:`j<\ell` with the largest
    :math:`|\cos|`, ``(count, 2)`` (all pairs when there are fewer)."""
    if count < 1:
        raise ValueError(f"count: {count} must be >= 1")
    pairs, values = _upper(cos)
    return pairs[values.abs().topk(min(count, len(values))).indices]


def wilson_interval(successes: int, trials: int, level: float) -> tuple[float, float]:
    r"""Wilson's score interval for a binomial proportion at two-sided ``level``:
    :math:`\frac{\hat p+z^2/2N\pm z\sqrt{\hat p(1-\hat p)/N+z^2/4N^2}}{1+z^2/N}`."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"successes, trials: {successes}, {trials} need 0 <= successes <= "
                         f"trials and trials >= 1")
    if not 0 < level < 1:
        raise ValueError(f"level: {level} must lie in (0, 1)")
    z = float(stats.norm.ppf(0.5 + level / 2))
    p, N = successes / trials, trials
    centre = (p + z * z / (2 * N)) / (1 + z * z / N)
    half = z * math.sqrt(p * (1 - p) / N + z * z / (4 * N * N)) / (1 + z * z / N)
    # at p = 0 (p = 1) the lower (upper) end is exactly 0 (1); rounding would move it
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi
