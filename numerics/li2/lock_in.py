r"""The third party's spectral lock-in detector and level metric (arXiv 2605.08119,
verify/claims/li2/SOURCES.md §7.2 items 2 and 3).

Lock-in detector. With :math:`\Delta W_t=W_t-W_{t-1}` the first layer's change in step
:math:`t` (flattened, :math:`P=2MK` entries, weight decay included) and the window
:math:`\Delta=[\Delta W_{t-w+1},\dots,\Delta W_t]\in\mathbb R^{P\times w}`, the levels
:math:`\sigma_k(t)=\lambda_k(\Delta^\top\Delta)` are the eigenvalues of the :math:`w\times w`
Gram in decreasing order (their code: ``eigvalsh`` of the Gram, so :math:`\sigma_k` is the
square of the :math:`k`-th singular value of :math:`\Delta`), the slope is

.. math:: s(t)=\tfrac1{L}\big[\log(\sigma_2/\sigma_3)(t)-\log(\sigma_2/\sigma_3)(t-L)\big],
          \qquad L=25,

and the detector fires at the first :math:`t\ge t_{\min}=100` with :math:`s(t)>0.04`. Before
the window is full it holds every change so far (as their ``deque``); :math:`\sigma_2/\sigma_3`
needs three.

Two routes to the levels (:class:`UpdateWindow`): the Gram of the stored changes, kept up to
date one row per step in float64, and its ``eigvalsh`` (their route); and the squared singular
values of the stacked changes (``svdvals``, float64), which never forms the Gram.

Level metric :math:`\rho` (:func:`level_metric`): their code's ``fft_dist_from_ideal``,
:math:`\|FF^\top-(a-b)I-b\mathbf 1\mathbf 1^\top\|_F/\|FF^\top\|_F` on the *uncentred*
training features, :math:`a`, :math:`b` the mean diagonal and off-diagonal entries: the
author's ``fit_diag_11``, and the ``fft_dist`` of :mod:`numerics.li2.training_diagnostics`.
Their note writes :math:`P_1^\perp FF^\top` in the numerator; :func:`level_metric` returns
that reading too (``centred``), which their thresholds were not computed on.
"""
from __future__ import annotations

import math

import torch


class UpdateWindow:
    r"""The last ``capacity`` changes of each of ``batch`` configurations (``size`` entries
    each), in float64, with their Gram; :meth:`levels` gives :math:`\sigma_k` of the last
    ``w`` changes for any ``w <= capacity``."""

    def __init__(self, batch: int, size: int, capacity: int, *,
                 device: torch.device | str = "cpu") -> None:
        if capacity < 3:
            raise ValueError(f"capacity: {capacity} must be >= 3 (sigma_3 needs three changes)")
        opts = {"dtype": torch.float64, "device": device}
        self.capacity, self.count = capacity, 0
        self.changes = torch.zeros(batch, capacity, size, **opts)
        self.gram = torch.zeros(batch, capacity, capacity, **opts)

    def push(self, change: torch.Tensor) -> None:
        """Store ``change`` (``(batch, size)``) over the oldest one and update the Gram's row
        and column of its slot."""
        slot = self.count % self.capacity
        self.changes[:, slot] = change.reshape(self.changes.shape[0], -1)
        # one matrix-vector product per configuration: BLAS gemv, several times faster on
        # the CPU than the batched product with a vector
        row = torch.stack([c @ c[slot] for c in self.changes])
        self.gram[:, slot, :] = row
        self.gram[:, :, slot] = row
        self.count += 1

    def _slots(self, w: int) -> torch.Tensor:
        if not 1 <= w <= self.capacity:
            raise ValueError(f"w: {w} must lie in [1, {self.capacity}]")
        held = min(w, self.count)
        return torch.arange(self.count - held, self.count) % self.capacity

    def levels(self, w: int) -> torch.Tensor:
        r""":math:`\sigma_1\ge\sigma_2\ge\dots` of the last ``w`` changes (fewer while fewer are
        stored), ``(batch, min(w, count))``: ``eigvalsh`` of the Gram's block."""
        idx = self._slots(w).to(self.gram.device)
        return torch.linalg.eigvalsh(self.gram[:, idx][:, :, idx]).flip(-1)

    def levels_svd(self, w: int) -> torch.Tensor:
        """The same levels as the squared singular values of the stacked changes."""
        idx = self._slots(w).to(self.changes.device)
        return torch.linalg.svdvals(self.changes[:, idx]).square()

    def rounding(self, w: int) -> torch.Tensor:
        r"""A first-order bound on the difference of :math:`\log(\sigma_2/\sigma_3)` between
        the two routes, ``(batch,)``: forming the Gram in float64 perturbs it by at most
        :math:`\gamma_P\sum_{ij}\|\mathbf d_i\|\|\mathbf d_j\|\le Pu\,w\operatorname{tr}G`
        (each entry a length-:math:`P` dot product), both eigensolvers are backward stable
        (:math:`wu\|G\|`), so each level moves by at most :math:`2(P+w)uw\operatorname{tr}G`
        and the log of the ratio by that over :math:`\sigma_2` plus that over
        :math:`\sigma_3`."""
        idx = self._slots(w).to(self.gram.device)
        held = len(idx)
        trace = self.gram[:, idx, idx].sum(-1)
        ev = self.levels(w)
        u = torch.finfo(torch.float64).eps / 2
        shift = 2 * (self.changes.shape[-1] + held) * u * held * trace
        return shift / ev[:, 1] + shift / ev[:, 2]


def gap_ratio(levels: torch.Tensor) -> torch.Tensor:
    r""":math:`\sigma_2/\sigma_3` along the last axis (NaN where fewer than three levels)."""
    if levels.shape[-1] < 3:
        return torch.full(levels.shape[:-1], math.nan, dtype=levels.dtype)
    return levels[..., 1] / levels[..., 2]


def slopes(ratio: torch.Tensor, lag: int) -> torch.Tensor:
    r""":math:`s(t)` of ratios ``(T, ...)`` logged at every epoch :math:`0..T-1`: NaN for
    :math:`t<` ``lag``. As their code, the log is taken of the ratio clipped at
    :math:`10^{-6}`."""
    if lag < 1:
        raise ValueError(f"lag: {lag} must be >= 1")
    log = ratio.clamp(min=1e-6).log()
    out = torch.full_like(log, math.nan)
    out[lag:] = (log[lag:] - log[:-lag]) / lag
    return out


def first_fire(slope: torch.Tensor, threshold: float, t_min: int) -> torch.Tensor:
    r"""The first epoch :math:`t\ge` ``t_min`` with :math:`s(t)>` ``threshold`` for each
    column of ``slope`` ``(T, B)`` (epochs :math:`0..T-1`); ``inf`` where it never fires."""
    T = slope.shape[0]
    epochs = torch.arange(T, dtype=torch.float64)[:, None].expand_as(slope)
    hit = (slope > threshold) & (epochs >= t_min)
    return torch.where(hit, epochs, torch.full_like(epochs, math.inf)).amin(0)


def first_at_least(epochs: torch.Tensor, values: torch.Tensor, level: torch.Tensor | float
                   ) -> torch.Tensor:
    """The first logged epoch with ``values >= level`` per column of ``values`` ``(D, B)``
    (``level`` a scalar or one per column); ``inf`` where never."""
    e = epochs.to(torch.float64)[:, None].expand_as(values)
    hit = values >= torch.as_tensor(level, dtype=values.dtype)
    return torch.where(hit, e, torch.full_like(e, math.inf)).amin(0)


def level_metric(F: torch.Tensor) -> dict[str, torch.Tensor]:
    r""":math:`\rho` of the features ``F`` (``(..., n, K)``, the real training samples): the
    code's ``raw`` (uncentred :math:`FF^\top`) and the note's ``centred``
    (:math:`P_1^\perp FF^\top`, fitted the same way), both over :math:`\|FF^\top\|_F`; computed
    from the :math:`n\times n` Gram directly."""
    G = F @ F.mT
    n = G.shape[-1]
    norm = torch.linalg.matrix_norm(G)
    eye = torch.eye(n, dtype=G.dtype, device=G.device)

    def misfit(A: torch.Tensor) -> torch.Tensor:
        a = A.diagonal(dim1=-2, dim2=-1).mean(-1)
        b = (A.sum((-2, -1)) - A.diagonal(dim1=-2, dim2=-1).sum(-1)) / (n * (n - 1))
        fit = (a - b)[..., None, None] * eye + b[..., None, None]
        return torch.linalg.matrix_norm(A - fit) / norm

    return {"raw": misfit(G), "centred": misfit(G - G.mean(-2, keepdim=True))}
