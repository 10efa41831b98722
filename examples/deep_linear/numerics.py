r"""Simulations for the deep-linear-network example (torch only, like the toolkit's ``numerics/``).

* :func:`rk4` -- classical fourth-order Runge-Kutta on a tensor state, recording every
  ``record_every`` steps (so the records of a step-halving ladder fall on the same times).
* :func:`deep_linear_field` -- Arora, Cohen & Hazan (2018), Eq. (1)-(2): gradient flow
  :math:`\dot W_j = -\partial L/\partial W_j` of a depth-N network of square layers, by
  autograd of the loss (not by the paper's formula), batched over independent problems. The
  loss per problem is the squared loss :math:`\tfrac1{2n}\|W_N\cdots W_1X - Y\|_F^2` or the
  log-cosh loss :math:`\tfrac1n\sum\log\cosh(W_N\cdots W_1X - Y)` (a non-quadratic loss:
  Thm. 1 holds for any differentiable one).
* :func:`saxe_problem`, :func:`saxe_field`, :func:`mode_strengths` -- Saxe, McClelland & Ganguli
  (2014), Eqs. (1)-(2): a two-layer network :math:`W_2W_1` trained on whitened inputs
  (:math:`\Sigma_{xx} = I`) towards :math:`\Sigma_{yx} = USV^\top`, with
  :math:`\tau\dot W_1 = W_2^\top(\Sigma_{yx} - W_2W_1)`,
  :math:`\tau\dot W_2 = (\Sigma_{yx} - W_2W_1)W_1^\top`; the balanced rank-one-per-mode start
  :math:`W_1 = \sqrt{u_0}\,RV^\top`, :math:`W_2 = \sqrt{u_0}\,UR^\top` (R orthonormal columns);
  mode strengths :math:`u_\alpha = U_\alpha^\top W_2W_1V_\alpha`.
* :func:`crossing_times` -- when a recorded trajectory first reaches a level, by cubic
  interpolation through the four records around the crossing (error :math:`O(h^4)`, the
  integrator's own order).
"""
from __future__ import annotations

from collections.abc import Callable

import torch


def rk4(field: Callable[[torch.Tensor], torch.Tensor], y0: torch.Tensor, *, dt: float,
        steps: int, record_every: int = 1) -> torch.Tensor:
    """``steps`` RK4 steps of size ``dt``; records (``steps // record_every + 1``, *y0.shape)."""
    y, records = y0, [y0]
    for k in range(1, steps + 1):
        k1 = field(y)
        k2 = field(y + dt / 2 * k1)
        k3 = field(y + dt / 2 * k2)
        k4 = field(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if k % record_every == 0:
            records.append(y)
    return torch.stack(records)


def product(Ws: torch.Tensor) -> torch.Tensor:
    """:math:`W_N\\cdots W_1` of a stack (..., N, d, d) with W_1 first."""
    P = Ws[..., 0, :, :]
    for j in range(1, Ws.shape[-3]):
        P = Ws[..., j, :, :] @ P
    return P


def deep_linear_problem(gen: torch.Generator, *, batch: int, depth: int, d: int, n: int,
                        init_scale: float, dtype: torch.dtype, device: torch.device
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random data X (batch, d, n), targets Y = A X + noise, and unbalanced Gaussian layers
    W0 (batch, depth, d, d) with entries N(0, init_scale^2 / d)."""
    def normal(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device, dtype)
    X = normal(batch, d, n)
    Y = normal(batch, d, d) @ X + 0.1 * normal(batch, d, n)
    W0 = init_scale / d ** 0.5 * normal(batch, depth, d, d)
    return X, Y, W0


def deep_linear_loss(Ws: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                     logcosh: torch.Tensor) -> torch.Tensor:
    """Per-problem loss (batch,): log-cosh where ``logcosh`` is True, squared otherwise."""
    R = product(Ws) @ X - Y
    n = X.shape[-1]
    square = (R**2).sum((-1, -2)) / (2 * n)
    lc = (R.abs() + torch.log1p(torch.exp(-2 * R.abs()))
          - torch.log(torch.tensor(2.0, dtype=R.dtype))).sum((-1, -2)) / n
    return torch.where(logcosh, lc, square)


def deep_linear_field(X: torch.Tensor, Y: torch.Tensor, logcosh: torch.Tensor
                      ) -> Callable[[torch.Tensor], torch.Tensor]:
    """:math:`W \\mapsto -\\nabla_W L` by autograd (problems are independent, so the gradient
    of the summed loss is each problem's own)."""
    def field(Ws: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            W = Ws.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(deep_linear_loss(W, X, Y, logcosh).sum(), W)
        return -g
    return field


def saxe_problem(gen: torch.Generator, s: torch.Tensor, *, d_in: int, d_out: int, hidden: int,
                 dtype: torch.dtype, device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random orthonormal U (d_out x m), V (d_in x m), R (hidden x m) for m = len(s) modes,
    and :math:`\\Sigma_{yx} = U\\,\\mathrm{diag}(s)\\,V^\\top`."""
    m = s.numel()

    def frame(rows: int) -> torch.Tensor:
        q, _ = torch.linalg.qr(torch.randn(rows, m, generator=gen, dtype=torch.float64))
        return q.to(device, dtype)
    U, V, R = frame(d_out), frame(d_in), frame(hidden)
    return U @ torch.diag(s.to(device, dtype)) @ V.T, U, V, R


def saxe_initial(U: torch.Tensor, V: torch.Tensor, R: torch.Tensor, u0: torch.Tensor
                 ) -> torch.Tensor:
    """Balanced start for each u0 in ``u0`` (batch,): the flat state (batch, h*d_in + d_out*h)."""
    a = u0.sqrt()[:, None, None]
    W1 = a * (R @ V.T)  # (batch, hidden, d_in)
    W2 = a * (U @ R.T)  # (batch, d_out, hidden)
    return torch.cat([W1.flatten(1), W2.flatten(1)], 1)


def split(y: torch.Tensor, hidden: int, d_in: int, d_out: int
          ) -> tuple[torch.Tensor, torch.Tensor]:
    n1 = hidden * d_in
    return (y[..., :n1].unflatten(-1, (hidden, d_in)),
            y[..., n1:].unflatten(-1, (d_out, hidden)))


def saxe_field(sigma_yx: torch.Tensor, tau: float, hidden: int
               ) -> Callable[[torch.Tensor], torch.Tensor]:
    """Saxe et al.'s Eq. (2) with :math:`\\Sigma_{xx} = I`, on the flat state."""
    d_out, d_in = sigma_yx.shape

    def field(y: torch.Tensor) -> torch.Tensor:
        W1, W2 = split(y, hidden, d_in, d_out)
        E = sigma_yx - W2 @ W1
        return torch.cat([(W2.mT @ E).flatten(-2), (E @ W1.mT).flatten(-2)], -1) / tau
    return field


def mode_strengths(y: torch.Tensor, U: torch.Tensor, V: torch.Tensor, hidden: int
                   ) -> torch.Tensor:
    """:math:`u_\\alpha = U_\\alpha^\\top W_2W_1V_\\alpha`, shape (..., modes)."""
    W1, W2 = split(y, hidden, V.shape[0], U.shape[0])
    return torch.diagonal(U.T @ (W2 @ W1) @ V, dim1=-2, dim2=-1)


def crossing_times(values: torch.Tensor, level: torch.Tensor, dt: float) -> torch.Tensor:
    """First time each column of ``values`` (records, ...) reaches ``level`` (broadcast to a
    column), by the cubic through the four records around the crossing; NaN where it never
    does (or too near an end to interpolate)."""
    above = values >= level
    first = torch.where(above.any(0), above.to(torch.int8).argmax(0), -1)
    flat_v = values.reshape(values.shape[0], -1)
    flat_l = level.expand_as(values[0]).reshape(-1)
    out = torch.full(flat_l.shape, float("nan"), dtype=torch.float64)
    for c, k in enumerate(first.reshape(-1).tolist()):
        if k < 2 or k + 1 >= values.shape[0]:
            continue
        ts = torch.arange(k - 2, k + 2, dtype=torch.float64) * dt
        vs = flat_v[k - 2:k + 2, c].to(torch.float64)
        coef = torch.linalg.solve(torch.vander(ts - ts[1], 4), vs)  # cubic in (t - t_{k-1})
        lo, hi = float(ts[1]), float(ts[2])
        target = float(flat_l[c])
        for _ in range(60):  # bisection on the cubic: monotone between the bracketing records
            mid = (lo + hi) / 2
            x = mid - float(ts[1])
            value = float(((coef[0] * x + coef[1]) * x + coef[2]) * x + coef[3])
            lo, hi = (mid, hi) if value < target else (lo, mid)
        out[c] = (lo + hi) / 2
    return out.reshape(first.shape)
