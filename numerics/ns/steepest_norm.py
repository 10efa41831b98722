r"""Steepest directions of the :math:`\ell_p` norm measured by numerical optimisation, with no
formula for the answer (``ns.steepest-direction``, verify/claims/ns/SOURCES.md §4.4).

* :func:`constrained_minimiser`: :math:`\min\langle g, d\rangle` over :math:`\|d\|_p \le 1`,
  SLSQP from several random starts for :math:`1 < p < \infty`, HiGHS's linear programme over
  the box for :math:`p = \infty` (:math:`q = 1`);
* :func:`penalised_minimiser`: :math:`\min\langle g, d\rangle + \tfrac1p\|d\|_p^p` (the
  unnormalised direction of the steepest flow), coordinate by coordinate (bounded Brent);
* :func:`dual_norm_gradient`: :math:`\nabla_g\|g\|_q` by autograd.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linprog, minimize, minimize_scalar

#: SLSQP's stopping tolerance on the objective: far below the 1e-5 agreement the claim asks
#: of directions (an O(eps) value error moves a point of a strictly convex sphere by
#: O(sqrt(eps)), 1e-7 here).
SLSQP_FTOL = 1e-14
#: SLSQP exit modes that end at a KKT point: 0 (converged) and 8 (no descent direction left
#: along the line search: the linear objective cannot improve within rounding on the sphere).
SLSQP_CONVERGED = (0, 8)


def _dual(q: float) -> float:
    if not q > 1:
        raise ValueError(f"q: {q} must be > 1 for a finite dual exponent")
    return q / (q - 1)


def constrained_minimiser(g: np.ndarray, q: float, rng: np.random.Generator,
                          starts: int = 2) -> tuple[np.ndarray, float]:
    r"""A minimiser of :math:`\langle g, d\rangle` over the unit :math:`\ell_p` ball,
    :math:`1/p + 1/q = 1`, and its value; the best of ``starts`` SLSQP runs from random
    points of the ball (``q == 1``: the box LP, solved exactly at a vertex)."""
    g = np.asarray(g, dtype=np.float64)
    if q == 1:
        lp = linprog(g, bounds=[(-1.0, 1.0)] * g.size, method="highs")
        if not lp.success:
            raise RuntimeError(f"linprog: {lp.message}")
        return lp.x, float(lp.fun)
    p = _dual(q)

    def slack(d: np.ndarray) -> float:
        return 1.0 - float(np.sum(np.abs(d) ** p))

    def slack_grad(d: np.ndarray) -> np.ndarray:
        return -p * np.sign(d) * np.abs(d) ** (p - 1)

    best = None
    for _ in range(starts):
        x0 = rng.standard_normal(g.size)
        x0 *= 0.5 / np.sum(np.abs(x0) ** p) ** (1 / p)
        res = minimize(lambda d: float(g @ d), x0, jac=lambda d: g, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": slack, "jac": slack_grad}],
                       options={"ftol": SLSQP_FTOL, "maxiter": 500})
        if res.status not in SLSQP_CONVERGED:
            raise RuntimeError(f"SLSQP: {res.message}")
        # SLSQP may end slightly outside the ball; the feasible point on the sphere along its
        # answer has a value that is second order in the answer's error
        d = res.x / np.sum(np.abs(res.x) ** p) ** (1 / p)
        value = float(g @ d)
        if best is None or value < best[1]:
            best = (d, value)
    return best


def penalised_minimiser(g: np.ndarray, q: float) -> np.ndarray:
    r"""A minimiser of :math:`\langle g, d\rangle + \tfrac1p\|d\|_p^p` (:math:`q > 1`): the
    model is a sum of one-coordinate terms, each minimised by bounded Brent on
    :math:`|d_k| \le 1 + (p|g_k|)^{1/(p-1)}` (beyond which :math:`g_kd_k + |d_k|^p/p >
    |d_k|(|d_k|^{p-1}/p - |g_k|) > 0`, its value at 0)."""
    g = np.asarray(g, dtype=np.float64)
    p = _dual(q)
    out = np.empty_like(g)
    for k, gk in enumerate(g):
        reach = 1.0 + (p * abs(gk)) ** (1 / (p - 1))
        res = minimize_scalar(lambda d: gk * d + abs(d) ** p / p, bounds=(-reach, reach),
                              method="bounded", options={"xatol": 1e-12 * reach})
        if not res.success:
            raise RuntimeError(f"minimize_scalar: {res.message}")
        out[k] = res.x
    return out


def dual_norm_gradient(g: torch.Tensor, q: float) -> torch.Tensor:
    r""":math:`\nabla_g\|g\|_q` by reverse-mode autograd (every :math:`g_k \ne 0`)."""
    v = g.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad((v.abs() ** q).sum() ** (1 / q), v)
    return grad
