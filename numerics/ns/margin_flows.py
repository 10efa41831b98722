r"""Steepest flows of exponent :math:`q` on :math:`x = \prod_{i=1}^L w_i` for the exponential loss
on separable data, run towards zero loss, and the quantities that say which margin problem they
approach (Never Saddle, later "Cor. 4.13"; verify/claims/ns/SOURCES.md §4.13, §6 item 2). Batched:
factors
``(L_max, B, k)`` with a depth mask as in :mod:`numerics.ns.steepest_flows`, one data set per batch
entry.

* :func:`sparse_separable_data`: :math:`A` with i.i.d. :math:`\mathcal N(0, 1)` entries, a sparse
  :math:`x^\star`, labels :math:`\operatorname{sign}(Ax^\star)`; rows :math:`z_n = y_na_n`.
* :func:`margin_descent`: the flow on :math:`\log\mathcal L`, :math:`\mathcal L(x) = \tfrac1N
  \sum_n e^{-\langle z_n, x\rangle}`. :math:`\psi_q(cv) = c^{q-1}\psi_q(v)` for :math:`c > 0`, so
  :math:`-\psi_q(\nabla_w\log\mathcal L) = -\mathcal L^{1-q}\psi_q(\nabla_w\mathcal L)`: the
  same paths as the flow on :math:`\mathcal L`, a positive time change that keeps the field of
  order one as :math:`\mathcal L \to 0`. Euler steps whose length is a time change too: each
  step moves the largest factor entry by at most ``rel_step`` of :math:`\|w\|_\infty` and the
  log-weights :math:`\log\pi_n` of the steering constraints by at most ``log_weight_step``
  :math:`\times \min(1, \ell_0/\log(1/\mathcal L))`, so the discretisation error shrinks with
  :math:`1/\log(1/\mathcal L)` as the limit is approached. Snapshots at a grid of
  :math:`\log(1/\mathcal L)`.
* :func:`normalised_margin`, :func:`max_margin` (the :math:`\ell_r` margin optimum on a given
  support: linear programs, the SVM, a reweighted-:math:`\ell_1` local optimum for
  :math:`r < 1`; scipy), :func:`support_recovery`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from numerics.errors import Diverged
from numerics.ns.steepest_flows import check_exponent, exclusive_products, odd_power

#: A constraint whose softmax weight is below this share does not steer the flow at the
#: current resolution; its log-weight may change by more than a step's allowance.
STEERING_WEIGHT = 1e-12


@dataclass(frozen=True)
class SeparableData:
    """``Z`` ``(S, N, k)``: rows :math:`y_na_n` per data set; ``x_star`` ``(S, k)``."""

    Z: torch.Tensor
    x_star: torch.Tensor


def sparse_separable_data(sets: int, N: int, k: int, nonzeros: int,
                          generator: torch.Generator, *, dtype: torch.dtype = torch.float64,
                          device: torch.device | str = "cpu") -> SeparableData:
    r"""``sets`` independent problems: :math:`A_{nk} \sim \mathcal N(0, 1)`, :math:`x^\star` with
    ``nonzeros`` :math:`\mathcal N(0, 1)` entries at uniformly drawn positions,
    :math:`y = \operatorname{sign}(Ax^\star)` (separable by :math:`x^\star`)."""
    if not (sets >= 1 and N >= 1 and 1 <= nonzeros <= k):
        raise ValueError(f"sets, N, k, nonzeros: need sets, N >= 1 and 1 <= nonzeros <= k, "
                         f"got {sets}, {N}, {k}, {nonzeros}")
    A = torch.randn(sets, N, k, generator=generator, dtype=torch.float64)
    x_star = torch.zeros(sets, k, dtype=torch.float64)
    for s in range(sets):
        where = torch.randperm(k, generator=generator)[:nonzeros]
        x_star[s, where] = torch.randn(nonzeros, generator=generator, dtype=torch.float64)
    y = torch.sign(torch.einsum("snk,sk->sn", A, x_star))
    if bool((y == 0).any()):
        raise ValueError("sparse_separable_data: a sample lies on the ground truth's boundary")
    Z = y[..., None] * A
    return SeparableData(Z.to(device, dtype), x_star.to(device, dtype))


def margins(x: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    r""":math:`m_n = \langle z_n, x\rangle` for ``x`` ``(B, k)``, ``Z`` ``(B, N, k)``."""
    return torch.bmm(Z, x[..., None])[..., 0]  # einsum "bnk,bk->bn" (the same bmm) sans parsing


def log_loss(x: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    r""":math:`\log\mathcal L = \log\tfrac1N\sum_ne^{-m_n}`, stably, ``(B,)``."""
    return torch.logsumexp(-margins(x, Z), -1) - math.log(Z.shape[1])


@dataclass(frozen=True)
class MarginRun:
    r"""Snapshots of :func:`margin_descent`: ``levels`` ``(G,)`` of :math:`\log(1/\mathcal L)`,
    ``W`` ``(G, L_max, B, k)`` the factors at the first step at or past each level (NaN where a
    level was not reached), ``steps`` ``(G, B)`` the steps taken to get there (-1: not
    reached)."""

    levels: torch.Tensor
    W: torch.Tensor
    steps: torch.Tensor

    @property
    def reached(self) -> torch.Tensor:
        return self.steps >= 0


def margin_descent(Z: torch.Tensor, q: torch.Tensor, mask: torch.Tensor, W0: torch.Tensor, *,
                   levels: torch.Tensor, rel_step: float, log_weight_step: float,
                   scale_floor: float, max_steps: int) -> MarginRun:
    r"""Euler steps of :math:`\dot w_i = -\psi_q(\partial_{w_i}\log\mathcal L)` (module
    docstring), ``q`` ``(B, 1)``, ``mask`` ``(L_max, B, 1)``, ``W0`` ``(L_max, B, k)``, until every
    entry passes the last of ``levels`` (increasing, > 0) or ``max_steps``. An entry that has
    passed the last level stops moving. ``scale_floor`` stands in for :math:`\|w\|_\infty`
    while it is smaller (a start at :math:`w = 0`, as for :math:`L = 1`)."""
    check_exponent(q)
    if not (0 < rel_step < 1 and log_weight_step > 0 and scale_floor > 0 and max_steps >= 1):
        raise ValueError(f"rel_step, log_weight_step, scale_floor, max_steps: need 0 < rel_step "
                         f"< 1, log_weight_step > 0, scale_floor > 0, max_steps >= 1, got "
                         f"{rel_step}, {log_weight_step}, {scale_floor}, {max_steps}")
    if not bool((levels > 0).all() and (levels[1:] > levels[:-1]).all()):
        raise ValueError(f"levels: must increase and be > 0, got {levels.tolist()}")
    G, B = levels.shape[0], W0.shape[1]
    snapshots = torch.full((G, *W0.shape), math.nan, dtype=W0.dtype, device=W0.device)
    steps = torch.full((G, B), -1, dtype=torch.long, device=W0.device)
    next_level = torch.zeros(B, dtype=torch.long, device=W0.device)
    W = W0.clone()
    first = float(levels[0])
    m = margins(W.prod(0), Z)
    # -log L from the margins the next step reads (log_loss would recompute them)
    progress = -(torch.logsumexp(-m, -1) - math.log(Z.shape[1]))
    for step in range(1, max_steps + 1):
        weights = torch.softmax(-m, -1)
        grad_x = -torch.bmm(weights[:, None], Z)[:, 0]
        others = exclusive_products(W)
        v = -odd_power(grad_x[None] * others, q) * mask
        m_dot = margins((v * others).sum(0), Z)
        steering = (m_dot - (weights * m_dot).sum(-1, keepdim=True)).abs()
        steering = torch.where(weights > STEERING_WEIGHT, steering, torch.zeros_like(steering))
        resolution = (first / progress.clamp(min=first))[:, None]
        active = (next_level < G).to(W.dtype)[:, None]
        eta = torch.minimum(rel_step * (W * mask).abs().amax((0, 2)).clamp(min=scale_floor)[:, None]
                            / v.abs().amax((0, 2))[:, None],
                            log_weight_step * resolution / steering.amax(-1, keepdim=True))
        W = W + (active * torch.nan_to_num(eta, nan=0.0, posinf=0.0))[None] * v
        if not bool(torch.isfinite(W).all()):
            raise Diverged(f"margin_descent: non-finite factors at step {step}")
        m = margins(W.prod(0), Z)
        progress = -(torch.logsumexp(-m, -1) - math.log(Z.shape[1]))
        pending = next_level < G
        hit = pending & (progress >= levels[next_level.clamp(max=G - 1)])
        if not bool(hit.any()):
            continue
        for b in hit.nonzero().flatten().tolist():
            while next_level[b] < G and progress[b] >= levels[next_level[b]]:
                snapshots[next_level[b], :, b] = W[:, b]
                steps[next_level[b], b] = step
                next_level[b] += 1
        if bool((next_level >= G).all()):
            break
    return MarginRun(levels, snapshots, steps)


def quasi_norm(x: torch.Tensor, r: float) -> torch.Tensor:
    r""":math:`\|x\|_r = (\sum_k|x_k|^r)^{1/r}` along the last axis (:math:`r = \infty`: the
    max; a quasi-norm for :math:`r < 1`)."""
    if not r > 0:
        raise ValueError(f"r: {r!r} must be > 0")
    return x.abs().amax(-1) if math.isinf(r) else (x.abs() ** r).sum(-1) ** (1 / r)


def normalised_margin(x: torch.Tensor, Z: torch.Tensor, r: float) -> torch.Tensor:
    r""":math:`\min_n\langle z_n, x\rangle/\|x\|_r` for ``x`` ``(B, k)``, ``Z`` ``(B, N, k)``."""
    return margins(x, Z).amin(-1) / quasi_norm(x, r)


def max_margin(z: torch.Tensor, r: float, support: torch.Tensor | None = None,
               start: torch.Tensor | None = None) -> tuple[float, torch.Tensor]:
    r""":math:`\max_{\|x\|_r \le 1}\min_n\langle z_n, x\rangle` over :math:`x` supported on
    ``support`` (bool ``(k,)``; default all coordinates) and a maximiser ``(k,)``.

    :math:`r = \infty` and :math:`r = 1`: linear programs (HiGHS), global. :math:`r = 2`:
    :math:`\min\tfrac12\|x\|^2` s.t. :math:`z_n^\top x \ge 1`, global: the dual as NNLS when
    the restricted rows span :math:`\mathbb R^N`, else SLSQP.
    :math:`r < 1` (not convex): from ``start`` (required), reweighted :math:`\ell_1` with the
    signs of ``start`` fixed: each linear program minimises the linearisation
    :math:`\sum_kr|u_k|^{r-1}u_k` of the concave :math:`\sum_ku_k^r`, which can only lower it, and
    the iteration stops at a vertex that is a KKT point of the restricted problem (the local
    optimum the start leads to).
    """
    from scipy.optimize import linprog, minimize, nnls

    Z = z.detach().cpu().double().numpy()
    N, k = Z.shape
    S = np.ones(k, dtype=bool) if support is None else support.detach().cpu().numpy()
    Zs, n = Z[:, S], int(S.sum())
    if math.isinf(r):
        result = linprog(np.r_[np.zeros(n), -1.0], A_ub=np.hstack([-Zs, np.ones((N, 1))]),
                         b_ub=np.zeros(N), bounds=[(-1, 1)] * n + [(None, None)],
                         method="highs")
        xs = result.x[:n] if result.success else None
    elif r == 1:
        result = linprog(np.ones(2 * n), A_ub=-np.hstack([Zs, -Zs]), b_ub=-np.ones(N),
                         bounds=[(0, None)] * (2 * n), method="highs")
        xs = result.x[:n] - result.x[n:] if result.success else None
    elif r == 2 and np.linalg.matrix_rank(Zs) == N:
        # SVM dual: min_{lam >= 0} ||Zs^T lam - u||, Zs u = 1 (NNLS: an exact active set).
        weights, _ = nnls(Zs.T, np.linalg.lstsq(Zs, np.ones(N), rcond=None)[0])
        xs = Zs.T @ weights
    elif r == 2:
        result = minimize(lambda v: (0.5 * v @ v, v), np.linalg.lstsq(Zs, np.ones(N),
                                                                     rcond=None)[0],
                          jac=True, method="SLSQP",
                          constraints=[{"type": "ineq", "fun": lambda v: Zs @ v - 1,
                                        "jac": lambda v: Zs}],
                          options={"ftol": 1e-15, "maxiter": 1000})
        xs = result.x if result.success else None
    elif 0 < r < 1:
        if start is None:
            raise ValueError("start: r < 1 needs a starting point")
        signs = np.sign(start.detach().cpu().double().numpy()[S])
        u = np.abs(start.detach().cpu().double().numpy()[S])
        u = u / (Zs @ (signs * u)).min()
        xs = None
        for _ in range(100):
            result = linprog(r * np.maximum(u, np.finfo(float).tiny) ** (r - 1),
                             A_ub=-(Zs * signs[None]), b_ub=-np.ones(N),
                             bounds=[(0, None)] * n, method="highs")
            if not result.success:
                break
            if np.allclose(result.x, u, rtol=1e-12, atol=0):
                xs = signs * result.x
                break
            u = result.x
    else:
        raise ValueError(f"r: {r!r} must be in (0, 1), 1, 2 or inf")
    if xs is None:
        raise Diverged(f"max_margin: the solver failed for r = {r}")
    x = np.zeros(k)
    x[S] = xs
    x = x / (np.abs(x).max() if math.isinf(r) else np.sum(np.abs(x) ** r) ** (1 / r))
    return float((Z @ x).min()), torch.tensor(x, dtype=z.dtype, device=z.device)


@dataclass(frozen=True)
class Recovery:
    """Cosine with the ground truth and the overlap of the top-s entries with its support."""

    cosine: float
    overlap: int


def support_recovery(x: torch.Tensor, x_star: torch.Tensor) -> Recovery:
    r""":math:`\cos(x, x^\star)` and :math:`|\mathrm{top}_s(|x|) \cap \operatorname{supp}x^\star|`
    with :math:`s = |\operatorname{supp}x^\star|`."""
    support = x_star != 0
    s = int(support.sum())
    top = torch.zeros_like(support)
    top[x.abs().topk(s).indices] = True
    return Recovery(float(x @ x_star / (x.norm() * x_star.norm())), int((top & support).sum()))
