r"""Li2's energy on a subsample of the group task (Thm. 4, App. A.3): the Horvitz-Thompson
estimator, the weighted Gram operators and their deviation, and the landscape threshold of the
irreducible maxima.

Layout. The :math:`M^2` pairs are stored target-major: entry :math:`[h,j]` is the pair
:math:`(j,\,j^{-1}h)`, whose product is :math:`h` (``right[h, j]`` is the index of
:math:`j^{-1}h`). A subsample is a 0/1 ``mask`` over that ``M x M`` grid; Bernoulli subsamples
at several ratios are coupled by thresholding one array of uniforms, :math:`\xi=[U<p]`, so a
larger ratio keeps a superset of the pairs.

Sampling model (App. A.3). :math:`\hat z_h=\tfrac1p\sum_j\xi_{h,j}s_{h,j}` (Horvitz-Thompson),
:math:`w_h=\hat m_h/(pM)` with :math:`\hat m_h=\sum_j\xi_{h,j}`, and for per-element features
:math:`\phi(h)=\bigoplus_{k\ne0}\mathrm{vec}\,C_k(h)` the weighted Gram operator
:math:`\hat{\mathsf A}(w)=\tfrac1M\sum_hw_h\phi(h)\phi(h)^{\mathsf H}` (its blocks are the
paper's :math:`\hat{\mathsf A}_{k,k'}`, entries rearranged; for one-dimensional irreps the two
agree).

The empirical energy is Eq. 7 on the kept pairs, labels centred over the kept pairs,
:math:`\sigma(x)=x^2`, scaled by :math:`(M^2/n)^2` (:math:`n` kept pairs) so that its values
compare with the full-data energy; ``square_terms=False`` keeps only the cross term
:math:`2u_jv_{j^{-1}h}` of :math:`(u_j+v_{j^{-1}h})^2`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from numerics.activations import Activation
from numerics.bisection import bisect
from numerics.li2.energy import tangent
from numerics.errors import Diverged
from numerics.li2.group_task import group_task


def pairs_by_target(table) -> torch.Tensor:
    r"""``right[h, j]``: the index of :math:`j^{-1}h` (``M x M`` long), so that the pair
    :math:`(j,\,\text{right}[h,j])` has product :math:`h`."""
    task = group_task(table)
    M = task.M
    # j^{-1} h for every (h, j): table[inverse[j], h]
    return task.table[task.inverse[None, :].expand(M, M),
                      torch.arange(M)[:, None].expand(M, M)].contiguous()


def _ratio(p: float) -> float:
    if not (isinstance(p, (int, float)) and 0 < p <= 1):
        raise ValueError(f"p: {p!r} must lie in (0, 1]")
    return float(p)


# --- the Horvitz-Thompson estimator and the weighted Gram operators ---------------------------

def pair_activations(w: torch.Tensor, right: torch.Tensor, square_terms: bool = True,
                     act: Activation | None = None) -> torch.Tensor:
    r""":math:`s_{h,j}=\sigma(u_j+v_{j^{-1}h})`, :math:`\sigma(x)=x^2`, for each row
    :math:`\mathbf w=[\mathbf u;\mathbf v]` (``(..., 2M)`` in, ``(..., M, M)`` out); only the
    cross term :math:`2u_jv_{j^{-1}h}` when ``square_terms`` is False; ``act`` in place of
    :math:`x^2` when given (beyond Thm. 4's :math:`x^2`; ``square_terms`` must then be True)."""
    M = right.shape[0]
    if w.shape[-1] != 2 * M:
        raise ValueError(f"w: last dimension {w.shape[-1]} must be 2M = {2 * M}")
    u, v = w[..., None, :M], w[..., M:][..., right]
    if act is not None:
        if not square_terms:
            raise ValueError("square_terms=False splits x^2 only; it has no meaning with act")
        return act(u + v)
    return (u + v).square() if square_terms else 2 * u * v


def horvitz_thompson(s: torch.Tensor, mask: torch.Tensor, p: float) -> torch.Tensor:
    r""":math:`\hat z_h=\tfrac1p\sum_j\xi_{h,j}s_{h,j}` (``(..., M, M)`` in, ``(..., M)`` out)."""
    return (mask * s).sum(-1) / _ratio(p)


def target_weights(mask: torch.Tensor, p: float) -> torch.Tensor:
    r""":math:`w_h=\hat m_h/(pM)`, :math:`\hat m_h=\sum_j\xi_{h,j}` (``(..., M)``)."""
    return mask.sum(-1) / (_ratio(p) * mask.shape[-1])


def cyclic_features(M: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r""":math:`\phi(h)_k=e^{2\pi ikh/M}`, :math:`k=1..M-1` (``M x (M-1)``, complex): the
    nontrivial characters of :math:`\mathbb Z_M`."""
    if M < 2:
        raise ValueError(f"M: {M} must be >= 2")
    h = torch.arange(M, dtype=torch.float64)[:, None]
    k = torch.arange(1, M, dtype=torch.float64)[None, :]
    cdt = torch.complex128 if dtype == torch.float64 else torch.complex64
    return torch.polar(torch.ones(M, M - 1, dtype=torch.float64), 2 * math.pi * h * k / M).to(cdt)


def weighted_gram(features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\tfrac1M\sum_hw_h\phi(h)\phi(h)^{\mathsf H}` for each row of ``weights``
    (``(..., M)`` in, ``(..., D, D)`` out; ``features`` is ``M x D``)."""
    M = features.shape[0]
    if weights.shape[-1] != M:
        raise ValueError(f"weights: last dimension {weights.shape[-1]} must be M = {M}")
    scaled = features * weights[..., :, None].to(features.dtype)
    return scaled.mT @ features.conj() / M


def operator_deviation(features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\|\hat{\mathsf A}(w)-\hat{\mathsf A}(\mathbf 1)\|_{op}` per row of ``weights``
    (the largest :math:`|\lambda|` of the Hermitian difference)."""
    ones = torch.ones(features.shape[0], dtype=weights.dtype, device=weights.device)
    diff = weighted_gram(features, weights) - weighted_gram(features, ones)
    return torch.linalg.eigvalsh(diff).abs().amax(-1)


def cyclic_operator_deviation(weights: torch.Tensor, iterations: int = 64) -> torch.Tensor:
    r""":func:`operator_deviation` for :math:`\mathbb Z_M`'s characters
    (``cyclic_features(M)``) without forming the ``(M-1) x (M-1)`` operator.

    With :math:`U_{hk}=e^{2\pi ihk/M}/\sqrt M` (unitary, :math:`k=0..M-1`),
    :math:`\hat{\mathsf A}(w)-\mathsf A` is the compression of :math:`U^{\mathsf H}
    \mathrm{diag}(\lambda)U`, :math:`\lambda_h=w_h-1`, to :math:`k\ne0`, i.e. of
    :math:`\mathrm{diag}(\lambda)` to :math:`\mathbf 1^\perp`. Its eigenvalues are each
    :math:`\lambda` of multiplicity :math:`m` repeated :math:`m-1` times and the roots of the
    secular equation :math:`\sum_h1/(\lambda_h-\mu)=0` (one between each pair of consecutive
    distinct :math:`\lambda`); so the largest lies in :math:`[\lambda_{(2)},\lambda_{(1)}]`,
    the smallest in :math:`[\lambda_{(M)},\lambda_{(M-1)}]`, where the secular function
    increases from :math:`-\infty` to :math:`+\infty`. Both by bisection (``iterations``
    halvings: to float64 rounding); a repeated extreme :math:`\lambda` is itself the
    eigenvalue. ``weights``: ``(..., M)``, real."""
    if weights.shape[-1] < 2:
        raise ValueError(f"weights: last dimension {weights.shape[-1]} must be M >= 2")
    lam = (weights - 1).sort(-1).values

    def extreme(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        # the secular function is negative below the root
        root = bisect(lambda mid: (1 / (lam - mid[..., None])).sum(-1) < 0, lo, hi,
                      iterations=iterations).midpoint
        return torch.where(hi > lo, root, hi)

    top = extreme(lam[..., -2], lam[..., -1])
    bottom = extreme(lam[..., 0], lam[..., 1])
    return torch.maximum(top.abs(), bottom.abs())


# --- the empirical energy and its ascent --------------------------------------------------------

def subsampled_energy(w: torch.Tensor, right: torch.Tensor, mask: torch.Tensor,
                      square_terms: bool = True, act: Activation | None = None
                      ) -> torch.Tensor:
    r""":math:`(M^2/n)^2\,\tfrac12\|\tilde Y_\xi^\top\sigma(X_\xi\mathbf w)\|^2` on the kept
    pairs (``mask`` broadcast against ``(..., M, M)``; one value per row of ``w``):
    :math:`q_h=\sum_j\xi_{h,j}s_{h,j}-\tfrac{n_h}n\sum_{h',j}\xi_{h',j}s_{h',j}`,
    :math:`n_h=\sum_j\xi_{h,j}`, :math:`n=\sum_hn_h` (``act``: as in :func:`pair_activations`;
    differentiate it by autograd, :func:`subsampled_energy_and_gradient` is for :math:`x^2`)."""
    M = right.shape[0]
    sums = (mask * pair_activations(w, right, square_terms, act)).sum(-1)
    counts = mask.sum(-1)
    n = counts.sum(-1)
    if bool((n < 2).any()):
        raise ValueError("mask: a subsample keeps fewer than 2 pairs; the labels cannot be "
                         "centred")
    q = sums - counts / n[..., None] * sums.sum(-1, keepdim=True)
    return 0.5 * q.square().sum(-1) * (M * M / n) ** 2


def subsampled_energy_and_gradient(w: torch.Tensor, right: torch.Tensor, mask: torch.Tensor,
                                   square_terms: bool = True
                                   ) -> tuple[torch.Tensor, torch.Tensor]:
    r""":func:`subsampled_energy` and its gradient in :math:`\mathbf w`, the chain rule written
    out (no autograd graph): with :math:`c=(M^2/n)^2` and :math:`S_h=\sum_j\xi_{h,j}s_{h,j}`,
    :math:`\partial E/\partial S_k=c\,(q_k-\tfrac1n\sum_hn_hq_h)`, so
    :math:`\partial E/\partial s_{h,j}=\xi_{h,j}\,\partial E/\partial S_h`, and
    :math:`s_{h,j}` depends on :math:`u_j` and :math:`v_{j^{-1}h}` only (``mask`` of the
    shape ``(..., M, M)`` of the rows of ``w``)."""
    M = right.shape[0]
    if w.shape[-1] != 2 * M:
        raise ValueError(f"w: last dimension {w.shape[-1]} must be 2M = {2 * M}")
    u, v = w[..., None, :M], w[..., M:][..., right]
    s = (u + v).square() if square_terms else 2 * u * v
    counts = mask.sum(-1)
    n = counts.sum(-1, keepdim=True)
    if bool((n < 2).any()):
        raise ValueError("mask: a subsample keeps fewer than 2 pairs; the labels cannot be "
                         "centred")
    sums = (mask * s).sum(-1)
    q = sums - counts / n * sums.sum(-1, keepdim=True)
    scale = (M * M / n) ** 2
    energy = 0.5 * q.square().sum(-1) * scale[..., 0]
    d_sums = scale * (q - (counts * q).sum(-1, keepdim=True) / n)
    d_s = mask * d_sums[..., :, None]
    d_u, d_v = (2 * (u + v) * d_s,) * 2 if square_terms else (2 * v * d_s, 2 * u * d_s)
    grad_v = torch.zeros(d_v.shape[:-1], dtype=d_v.dtype, device=d_v.device).scatter_add_(
        -1, right.expand_as(d_v).flatten(-2), d_v.flatten(-2))
    return energy, torch.cat([d_u.sum(-2), grad_v], -1)


@dataclass(frozen=True)
class MonotoneAscent:
    """End points (unit rows), energies, Riemannian gradient norms, the step sizes reached and
    the number of iterations."""

    w: torch.Tensor
    energy: torch.Tensor
    grad_norm: torch.Tensor
    lr: torch.Tensor
    steps: int


def ascend_monotone(w0: torch.Tensor, energy: Callable[[torch.Tensor], Any],
                    lr: float, steps: int, gtol: float, growth: float = 1.2,
                    max_lr_factor: float = 8.0, with_gradient: bool = False) -> MonotoneAscent:
    r"""Projected gradient ascent on the unit sphere with one step size per row: a step that
    lowers the energy is rejected and its step size halved; an accepted one grows it by
    ``growth`` (at most ``max_lr_factor * lr``). The energy never decreases, so an end point is
    a point the landscape leads to, not an artefact of a too-long step. Stops when every
    Riemannian gradient norm is at most ``gtol`` or after ``steps`` iterations.
    ``with_gradient``: ``energy`` returns (energy, Euclidean gradient) itself, else autograd
    differentiates it."""
    if not lr > 0 or steps < 1 or not gtol > 0:
        raise ValueError(f"lr, steps, gtol: {lr}, {steps}, {gtol} must be > 0, >= 1, > 0")

    def evaluate(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if with_gradient:
            e, g = energy(x)
            return e, tangent(x, g)
        x = x.detach().requires_grad_(True)
        e = energy(x)
        (g,) = torch.autograd.grad(e.sum(), x)
        return e.detach(), tangent(x.detach(), g)

    w = w0 / w0.norm(dim=-1, keepdim=True)
    e, g = evaluate(w)
    rate = torch.full(e.shape, lr, dtype=w.dtype, device=w.device)
    done = 0
    while done < steps and not bool((g.norm(dim=-1) <= gtol).all()):
        moved = w + rate[..., None] * g
        moved = moved / moved.norm(dim=-1, keepdim=True)
        e_new, g_new = evaluate(moved)
        if not (torch.isfinite(moved).all() and torch.isfinite(e_new).all()):
            raise Diverged(f"projected ascent produced a non-finite value at step {done + 1}")
        up = e_new >= e
        w = torch.where(up[..., None], moved, w)
        g = torch.where(up[..., None], g_new, g)
        e = torch.where(up, e_new, e)
        rate = torch.where(up, torch.clamp(rate * growth, max=max_lr_factor * lr), rate / 2)
        done += 1
    return MonotoneAscent(w, e, g.norm(dim=-1), rate, done)


def component_purity(w: torch.Tensor, projectors: torch.Tensor) -> torch.Tensor:
    r""":math:`(\|\Pi\mathbf u\|^2+\|\Pi\mathbf v\|^2)/\|\mathbf w\|^2` for
    :math:`\mathbf w=[\mathbf u;\mathbf v]` (``(..., 2M)``) with one projector per row
    (``projectors`` broadcast against ``(..., M, M)``)."""
    M = projectors.shape[-1]
    u, v = w[..., :M, None], w[..., M:, None]
    inside = (projectors @ u).square().sum((-2, -1)) + (projectors @ v).square().sum((-2, -1))
    return inside / w.square().sum(-1)


@dataclass(frozen=True)
class VertexThresholds:
    r"""Per subsample ``s`` and vertex ``b``: the ratio at which the vertex stops being
    retained (``threshold``, ``(S, B)``: the geometric midpoint of the final bracket), the
    bracket (``low`` unstable, ``high`` stable), whether the threshold lies below the search
    range (stable at every ratio tried), the largest Riemannian gradient norm at the end of
    the ascents of the last bisection step, the number of bisection steps, and (when asked
    for) how many decisions of the last step change when its ascents run ``recheck_steps``
    iterations instead."""

    threshold: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    below_range: torch.Tensor
    grad_norm: torch.Tensor
    bisections: int
    flips: int | None = None

    @property
    def all_vertices(self) -> torch.Tensor:
        """Per subsample, the ratio above which every vertex is retained (``(S,)``)."""
        return self.threshold.amax(-1)


def vertex_thresholds(right: torch.Tensor, vertices: torch.Tensor, projectors: torch.Tensor,
                      uniforms: torch.Tensor, *, p_range: tuple[float, float], bisections: int,
                      lr: float, steps: int, gtol: float, purity_min: float = 0.9,
                      square_terms: bool = True, recheck_steps: int | None = None
                      ) -> VertexThresholds:
    r"""The landscape threshold of each irreducible vertex on each subsample, by bisection in
    :math:`\log p`.

    ``vertices`` (``B x 2M``): maxima of the full-data energy, :math:`[\mathbf u;\pm P\mathbf u]`
    with :math:`\mathbf u` in one real isotypic component; ``projectors`` (``B x M x M``): the
    projector onto each vertex's component; ``uniforms`` (``S x M x M``, target-major): one
    array of uniforms per subsample, :math:`\xi=[U<p]`. At each step every (subsample, vertex)
    pair tests its own ratio: ascend the empirical energy from the vertex
    (:func:`ascend_monotone`) and call the vertex retained when the end point keeps at least
    ``purity_min`` of its norm in the vertex's component. Retained: the ratio is an upper end
    of the bracket, else a lower end. All pairs run in one batch. ``recheck_steps``: repeat the
    last step's ascents that long and count the decisions that change (a step budget that
    decides too early shows up there).
    """
    lo, hi = p_range
    if not 0 < lo < hi <= 1:
        raise ValueError(f"p_range: {p_range} must satisfy 0 < low < high <= 1")
    if bisections < 1:
        raise ValueError(f"bisections: {bisections} must be >= 1")
    if not 0 < purity_min < 1:
        raise ValueError(f"purity_min: {purity_min} must lie in (0, 1)")
    S, B, M = uniforms.shape[0], vertices.shape[0], right.shape[0]
    if uniforms.shape[1:] != (M, M) or vertices.shape[1] != 2 * M:
        raise ValueError(f"uniforms {tuple(uniforms.shape)}, vertices {tuple(vertices.shape)}: "
                         f"need (S, {M}, {M}) and (B, {2 * M})")
    opts = {"dtype": vertices.dtype, "device": vertices.device}
    log_lo = torch.full((S, B), math.log(lo), **opts)
    log_hi = torch.full((S, B), math.log(hi), **opts)
    start = vertices.expand(S, B, 2 * M)
    U = uniforms[:, None].to(**opts)

    def retained(mask: torch.Tensor, budget: int) -> tuple[torch.Tensor, torch.Tensor]:
        result = ascend_monotone(start, lambda x: subsampled_energy_and_gradient(
            x, right, mask, square_terms), lr, budget, gtol, with_gradient=True)
        return component_purity(result.w, projectors) >= purity_min, result.grad_norm

    last: dict[str, torch.Tensor] = {}

    def lost(mid: torch.Tensor) -> torch.Tensor:
        """True where the vertex is lost at ratio e^mid: the threshold lies above it."""
        mask = (U < mid.exp()[..., None, None]).to(vertices.dtype)
        kept, grad_norm = retained(mask, steps)
        last.update(mask=mask, kept=kept, grad_norm=grad_norm)
        return ~kept

    log_lo, log_hi, _, _ = bisect(lost, log_lo, log_hi, iterations=bisections)
    mask, kept, grad_norm = last["mask"], last["kept"], last["grad_norm"]
    flips = None
    if recheck_steps is not None:
        flips = int((retained(mask, recheck_steps)[0] != kept).sum())
    below = log_lo == math.log(lo)
    return VertexThresholds(((log_lo + log_hi) / 2).exp(), log_lo.exp(), log_hi.exp(), below,
                            grad_norm, bisections, flips)
