r"""Shared pieces of the Stage-I small-time checks (li2.prop1, li2.prop2, li2.prop3,
li2.sec3.2-zero-init, li2.c3-beta): problem draws, the data assumptions (A1) and (A2) evaluated
on the data, the remainder error trends of :math:`G_F(t)` and the cached symbolic series."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from numerics.random import randn
from numerics.li2.small_time_flow import error_bound, flow_to_times, hessian_norms
from numerics.li2.stage1_problems import draw_problems
from numerics.li2.two_layer import center
from theory.li2.stage1_expansion import derive_small_time_series
from verify import (
    Evidence,
    Run,
    fit_trend,
    geometric_grid,
    order_along,
    trend_evidence,
    unit_roundoff,
)


def grid(spec: list) -> np.ndarray:
    """``[start, stop, points]`` -> the geometric grid."""
    start, stop, points = spec
    return geometric_grid(float(start), float(stop), int(points))


def full_column_rank(Ft: torch.Tensor) -> tuple[bool, float]:
    """(A1) on every problem of a batch: the K-th singular value above the rank threshold
    max(n, K) u sigma_max (numpy's matrix_rank rule); returns the smallest ratio to it."""
    s = torch.linalg.svdvals(Ft)
    n, K = Ft.shape[-2:]
    if K > n:
        return False, 0.0
    ratio = s[..., -1] / (max(n, K) * unit_roundoff(Ft.dtype) * s[..., 0])
    return bool((ratio > 1).all()), float(ratio.min())


def realisability_gap(Ft: torch.Tensor, Yt: torch.Tensor) -> float:
    r"""(A2) measured: the largest :math:`\|(I - \tilde F\tilde F^+)\tilde Y\|_F/\|\tilde Y\|_F`
    over the batch (0 when :math:`\mathrm{col}(\tilde Y) \subseteq \mathrm{col}(\tilde F)`)."""
    Q, _ = torch.linalg.qr(Ft)
    rest = Yt - Q @ (Q.transpose(-1, -2) @ Yt)
    return float((torch.linalg.matrix_norm(rest) / torch.linalg.matrix_norm(Yt)).max())


def record_data_assumptions(run: Run, Ft: torch.Tensor, Yt: torch.Tensor, label: str, *,
                            realisable: bool, probe: bool = False) -> None:
    """Record (A1) and (A2) as evaluated on the data (a batch of problems, or a list of
    batches of different sizes); ``probe`` marks problems that go beyond (A2) on purpose."""
    batches = list(zip(Ft, Yt)) if isinstance(Ft, list) else [(Ft, Yt)]
    ranks = [full_column_rank(F) for F, _ in batches]
    sizes = sorted({tuple(F.shape[-2:]) for F, _ in batches})
    run.assume(f"A1 full column rank ({label})", all(ok for ok, _ in ranks),
               "Ft = P F has rank K (needs K <= n-1)",
               f"(n, K) in {sizes}, {sum(F.shape[0] for F, _ in batches)} problems, "
               f"min sigma_K / rank threshold = {min(r for _, r in ranks):.3g}")
    if realisable or probe:
        gap = max(realisability_gap(F, Y) for F, Y in batches)
        n, K = max(s[0] for s in sizes), max(s[1] for s in sizes)
        # The residual of projecting onto col(Ft) by QR is ~ (n K) u relative.
        limit = 64 * n * K * unit_roundoff(batches[0][0].dtype)
        run.assume(f"A2 realisable ({label})", gap <= limit,
                   "col(Yt) in col(Ft): max ||(I - Ft Ft^+) Yt|| / ||Yt||",
                   f"{gap:.2e} (roundoff limit {limit:.1e})", probe=probe)


def small_time_problems(run: Run, p: Mapping[str, Any], stream: str, *, realisable: bool
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(F, Y, U)`` for ``p['seeds']`` independent problems: features, labels, and the unit
    initial direction U (V0 = alpha U, U i.i.d. N(0, 1), i.e. (A3))."""
    n, K, M = p["n"], p["K"], p["M"]
    gen = run.generator(stream)
    F, Y = draw_problems(p["seeds"], n, K, M, gen, realisable=realisable, device=run.device,
                         dtype=run.dtype)
    U = randn(p["seeds"], K, M, generator=gen, device=run.device, dtype=run.dtype)
    return F, Y, U


def small_time_G(F: torch.Tensor, Y: torch.Tensor, U: torch.Tensor, eta: float,
                 taus: np.ndarray, alphas: np.ndarray, steps: int
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r""":math:`G_F(t)` for each problem (S) and grid point (P, with ``taus``/``alphas`` of
    length P): :math:`t = \tau/\lambda_{\max}` per problem, :math:`V_0 = \alpha U`. Returns
    ``G`` (S, P, n, K), ``V0`` (S, P, K, M), ``t`` (S, P) and the bound on G's error (S, P)."""
    S, P = U.shape[0], len(taus)
    lam = hessian_norms(F, eta)  # (S,)
    t = torch.as_tensor(taus, dtype=F.dtype, device=F.device)[None, :] / lam[:, None]
    a = torch.as_tensor(alphas, dtype=F.dtype, device=F.device)
    V0 = a[None, :, None, None] * U[:, None]

    def flat(x: torch.Tensor) -> torch.Tensor:  # one batch entry per (problem, grid point)
        return x[:, None].expand(S, P, *x.shape[1:]).reshape(S * P, *x.shape[1:])

    Fb, Yb, V0b, tb = flat(F), flat(Y), V0.reshape(S * P, *U.shape[1:]), t.reshape(S * P)
    G, V = flow_to_times(Fb, Yb, V0b, eta, tb, steps=steps)
    bound = error_bound(Fb, Yb, V0b, V, eta, tb, steps=steps)
    return G.view(S, P, *G.shape[1:]), V0, t, bound.view(S, P)


def remainder_trend(run: Run, quantity: str, remainder: Callable[..., torch.Tensor],
                    problem: tuple[str, torch.Tensor, torch.Tensor, torch.Tensor], eta: float,
                    *, taus: np.ndarray, alphas: np.ndarray, sizes: np.ndarray, steps: int,
                    scale: Callable[[float], float], bound: str = "at_least",
                    parameters: Mapping[str, Any]) -> list[Evidence]:
    r"""The error trend of ``remainder(G, Ft, Yt, V0, t)`` (a tensor per grid point) along
    ``sizes`` (the grid of whichever of t, alpha varies): its Frobenius norm per problem and
    point, floors = the flow's error bound + the subtraction's roundoff
    :math:`4(n+K+M)u(\|G\|_F + \|G - r\|_F)`, stated order = that of ``scale`` on the grid.
    ``problem`` is ``(stream, F, Y, U)`` from :func:`small_time_problems`; the flow does not
    depend on the stated forms, so it is memoised for the negative control's run."""
    stream, F, Y, U = problem
    key = (stream, tuple(F.shape), tuple(Y.shape), str(taus.tolist()), str(alphas.tolist()),
           eta, steps)
    G, V0, t, G_bound = run.memo("small-time flow",
                                 lambda: small_time_G(F, Y, U, eta, taus, alphas, steps), key=key)
    Ft, Yt = center(F)[:, None], center(Y)[:, None]
    r = remainder(G, Ft, Yt, V0, t[..., None, None])
    n, K, M = F.shape[-2], F.shape[-1], Y.shape[-1]
    u = unit_roundoff(run.dtype)
    floors = G_bound + 4 * (n + K + M) * u * (torch.linalg.matrix_norm(G)
                                              + torch.linalg.matrix_norm(G - r))
    limit = "zero"
    fit = fit_trend(sizes, torch.linalg.matrix_norm(r), limit=limit, floors=floors)
    stated = order_along(scale, sizes, limit=limit)
    run.figure(f"trend: {quantity}", fit.figure(stated))
    return trend_evidence(quantity, fit, stated_order=stated, bound=bound,
                          parameters={**parameters, "steps": steps})


def series_derivation(run: Run, size: Mapping[str, int]):
    """:func:`derive_small_time_series` at ``size``, memoised for every claim in the process
    (``scope="process"``: an exact derivation of the sizes alone, no stated form enters;
    li2.prop1, li2.prop2, li2.sec3-zero-init and li2.c3-beta share it)."""
    return run.memo("small-time series",
                    lambda: derive_small_time_series(size["n"], size["K"], size["M"]),
                    key=str(dict(size)), scope="process")


def mean_time_unit(F: torch.Tensor, eta: float) -> float:
    r""":math:`1/\bar\lambda_{\max}`: the time unit in which a stated scale :math:`s(t, \alpha)`
    is evaluated on a grid of :math:`\tau = \lambda_{\max}t` (its constants are unknown; only
    its shape along the grid enters the stated order)."""
    return 1.0 / float(hessian_norms(F, eta).mean())
