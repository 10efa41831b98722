r"""Reference minimisers of penalised and constrained least squares,
:math:`f(x) = \tfrac1{2N}\|Ax - y\|^2` (the regression of Never Saddle §4.0), against which the
limits of decayed flows are compared:

* :func:`lasso`: :math:`\arg\min f + w\|x\|_1` (FISTA's support, then the exact solve on it);
* :func:`ridge`: :math:`\arg\min f + \tfrac w2\|x\|_2^2`;
* :func:`box_least_squares`: :math:`\arg\min f` on :math:`\|x\|_\infty \le r` (scipy's BVLS);
* :func:`power_penalised`: :math:`\arg\min f + \tfrac we\sum_k|x_k|^e`, :math:`e \in (1, 2]`;
* :func:`min_sup_norm`: :math:`\min\{\|x\|_\infty : Ax = y\}`.

All work in float64 numpy/scipy and return tensors on ``A``'s device and dtype.
"""
from __future__ import annotations

import numpy as np
import torch

from numerics.errors import Diverged


def _normal_equations(A: torch.Tensor, y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`H = A^\top A/N`, :math:`b = A^\top y/N` in float64 (:math:`\nabla f = Hx - b`)."""
    A_np, y_np = A.detach().cpu().double().numpy(), y.detach().cpu().double().numpy()
    N = A_np.shape[0]
    return A_np.T @ A_np / N, A_np.T @ y_np / N


def _back(x: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(x, dtype=like.dtype, device=like.device)


def _check_weight(name: str, value: float) -> None:
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"{name}: {value!r} must be a finite number > 0")


def lasso(A: torch.Tensor, y: torch.Tensor, weight: float, *, iterations: int = 50000,
          check_every: int = 200) -> tuple[torch.Tensor, float]:
    r""":math:`\arg\min_x f(x) + w\|x\|_1` and the condition number of :math:`H_{SS}` on its
    support :math:`S`.

    FISTA proposes the support and signs :math:`s`; every ``check_every`` iterations
    :math:`H_{SS}x_S = b_S - ws_S` is solved exactly and accepted once it satisfies the KKT
    conditions (signs agree on :math:`S`, :math:`|(\nabla f)_k| \le w` off :math:`S`, up to
    roundoff); :class:`Diverged` if that never happens.
    """
    _check_weight("weight", weight)
    H, b = _normal_equations(A, y)
    step = 1.0 / np.linalg.eigvalsh(H).max()
    x = z = np.zeros_like(b)
    t = 1.0
    slack = 64 * np.finfo(float).eps * (weight + np.abs(b).max())
    for k in range(1, iterations + 1):
        v = z - step * (H @ z - b)
        new = np.sign(v) * np.maximum(np.abs(v) - step * weight, 0.0)
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        z, x, t = new + (t - 1) / t_new * (new - x), new, t_new
        if k % check_every:
            continue
        support = np.abs(x) > 0
        if support.sum() > np.linalg.matrix_rank(H):
            continue  # not yet a support on which the lasso point is unique
        signs = np.sign(x[support])
        polished = np.zeros_like(x)
        H_SS = H[np.ix_(support, support)]
        if support.any():
            polished[support] = np.linalg.solve(H_SS, b[support] - weight * signs)
        grad = H @ polished - b
        if (np.sign(polished[support]) == signs).all() and (
                np.abs(grad[~support]) <= weight + slack).all():
            condition = float(np.linalg.cond(H_SS)) if support.any() else 1.0
            return _back(polished, A), condition
    raise Diverged("lasso: FISTA's support and signs never satisfied the KKT conditions")


def ridge(A: torch.Tensor, y: torch.Tensor, weight: float) -> torch.Tensor:
    r""":math:`\arg\min_x f(x) + \tfrac w2\|x\|_2^2 = (H + wI)^{-1}b`."""
    _check_weight("weight", weight)
    H, b = _normal_equations(A, y)
    return _back(np.linalg.solve(H + weight * np.eye(len(b)), b), A)


def box_least_squares(A: torch.Tensor, y: torch.Tensor, radius: float) -> torch.Tensor:
    r"""A minimiser of :math:`f` on :math:`\|x\|_\infty \le r` (bounded-variable least squares,
    an active-set method that terminates at an exact KKT point). The minimiser need not be
    unique when :math:`N < d`, but :math:`Ax` and so :math:`\nabla f` are."""
    from scipy.optimize import lsq_linear

    _check_weight("radius", radius)
    A_np, y_np = A.detach().cpu().double().numpy(), y.detach().cpu().double().numpy()
    result = lsq_linear(A_np, y_np, bounds=(-radius, radius), method="bvls", tol=1e-15)
    if not result.success:
        raise Diverged(f"box_least_squares: {result.message}")
    return _back(np.clip(result.x, -radius, radius), A)


def power_penalised(A: torch.Tensor, y: torch.Tensor, weight: float, exponent: float, *,
                    max_newton: int = 100) -> torch.Tensor:
    r""":math:`\arg\min_x f(x) + \tfrac we\sum_k|x_k|^e` for :math:`e \in (1, 2]` (strictly
    convex): L-BFGS, then damped Newton on the stationarity
    :math:`Hx - b + w\operatorname{sign}(x)|x|^{e-1} = 0` to roundoff (the minimiser has no zero
    coordinate unless :math:`b_k`-type degeneracy; a coordinate at 0 keeps the L-BFGS value)."""
    from scipy.optimize import minimize

    _check_weight("weight", weight)
    if not 1 < exponent <= 2:
        raise ValueError(f"exponent: {exponent!r} must lie in (1, 2]")
    H, b = _normal_equations(A, y)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value = 0.5 * x @ H @ x - b @ x + weight / exponent * np.sum(np.abs(x) ** exponent)
        return value, H @ x - b + weight * np.sign(x) * np.abs(x) ** (exponent - 1)

    x = minimize(objective, np.zeros_like(b), jac=True, method="L-BFGS-B",
                 options={"maxiter": 10000, "ftol": 0.0, "gtol": 1e-13}).x
    # Near the minimiser the objective's decrease falls below its roundoff, so the Newton steps
    # backtrack on the norm of the stationarity residual instead (as bregman_projection does).
    tolerance = 64 * np.finfo(float).eps * (1 + np.abs(b).max())
    for _ in range(max_newton):
        grad = objective(x)[1]
        norm = np.linalg.norm(grad)
        if np.abs(grad).max() <= tolerance:
            return _back(x, A)
        curvature = weight * (exponent - 1) * np.abs(x) ** (exponent - 2)
        step = np.linalg.solve(H + np.diag(np.minimum(curvature, 1e12)), grad)
        t = 1.0
        while np.linalg.norm(objective(x - t * step)[1]) > (1 - 0.01 * t) * norm and t > 1e-12:
            t *= 0.5
        x = x - t * step
    raise Diverged("power_penalised: Newton did not reach the stationarity tolerance")


def min_sup_norm(A: torch.Tensor, y: torch.Tensor) -> float:
    r""":math:`\min\{\|x\|_\infty : Ax = y\}` (a linear program in :math:`(x, t)`, HiGHS): a
    box :math:`\|x\|_\infty \le r` with :math:`r` below it contains no interpolator, so the
    box constraint is active at the box minimiser."""
    from scipy.optimize import linprog

    A_np, y_np = A.detach().cpu().double().numpy(), y.detach().cpu().double().numpy()
    N, d = A_np.shape
    eye, ones = np.eye(d), np.ones((d, 1))
    result = linprog(np.r_[np.zeros(d), 1.0],
                     A_ub=np.block([[eye, -ones], [-eye, -ones]]), b_ub=np.zeros(2 * d),
                     A_eq=np.hstack([A_np, np.zeros((N, 1))]), b_eq=y_np,
                     bounds=[(None, None)] * d + [(0, None)], method="highs")
    if not result.success:
        raise Diverged(f"min_sup_norm: linprog failed: {result.message}")
    return float(result.x[-1])
