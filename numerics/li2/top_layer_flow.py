r"""Stage I of Li2 (App. C): gradient flow of the top layer alone, and its fixed point.

With the features :math:`F` frozen, only :math:`V` learns, by gradient flow on the loss of
Eq. 1 (:func:`numerics.li2.two_layer.loss`, sample-centred, weight decay :math:`\eta`):

.. math:: \dot V = -\partial J/\partial V, \qquad
          J(V) = \tfrac12\|P_1^\perp(Y - FV)\|_F^2 + \tfrac\eta2\|V\|_F^2
               = \tfrac12\big(\|\tilde Y - \tilde FV\|_F^2 + \eta\|V\|_F^2\big).

:func:`top_layer_velocity` is torch autograd of that loss; :func:`integrate_top_layer_flow`
integrates the same velocity written out, :math:`\tilde F^\top(\tilde Y - \tilde FV) - \eta V`
(:func:`top_layer_field`, one product per RK4 stage instead of an autograd graph; the tests
check it against autograd), by classical RK4. Along the flow the backpropagated gradient
:math:`G_F = -\partial J/\partial F` (Eq. 2) is recorded with
:func:`numerics.li2.two_layer.backprop_gradient` (autograd).

:func:`ridge_fixed_point` is the other route: a linear solve of the stationarity equation
:math:`(\tilde F^\top\tilde F + \eta I)V = \tilde F^\top\tilde Y`, the form
:func:`theory.li2.ridge.derive_ridge_fixed_point` derives for :math:`\partial J/\partial V = 0`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics import integrators
from numerics.errors import Diverged
from numerics.li2.two_layer import backprop_gradient, center, loss

#: Largest z = dt * lambda for which |1 - z + z^2/2 - z^3/6 + z^4/24| < 1 (RK4 on a decaying
#: mode); beyond it the integrator amplifies the fastest mode.
RK4_STABILITY_LIMIT = 2.785


@dataclass(frozen=True)
class Trajectory:
    """Recorded states of the flow: ``times`` (R,), ``G_F`` (R, B, n, K), ``V`` (B, K, M) at
    the last step, ``dt`` the step."""

    times: torch.Tensor
    G_F: torch.Tensor
    V: torch.Tensor
    dt: float


@dataclass(frozen=True)
class RidgeSolution:
    r""":math:`V^\star` (K x M), :math:`E^\star = \tilde Y - \tilde FV^\star` (n x M),
    :math:`G^\star = E^\star V^{\star\top}` (n x K)."""

    V: torch.Tensor
    E: torch.Tensor
    G: torch.Tensor


def _check_eta(eta: float) -> None:
    if not (eta >= 0 and math.isfinite(eta)):
        raise ValueError(f"eta: {eta!r} must be a finite number >= 0")


def top_layer_velocity(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor,
                       eta: float) -> torch.Tensor:
    """:math:`-\\partial J/\\partial V` by autograd of :func:`numerics.li2.two_layer.loss`,
    batched over the leading dimensions of ``V`` (each batch entry its own flow)."""
    V = V.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(F, V, Y, eta).sum(), V)
    return -g


def top_layer_field(Ft: torch.Tensor, Yt: torch.Tensor, V: torch.Tensor,
                    eta: float) -> torch.Tensor:
    r""":math:`-\partial J/\partial V = \tilde F^\top(\tilde Y - \tilde FV) - \eta V` written
    out (``Ft``, ``Yt`` centred over samples; :math:`P_1^\perp` is symmetric and idempotent),
    batched over the leading dimensions of ``V``; equal to :func:`top_layer_velocity` to
    rounding."""
    return Ft.transpose(-1, -2) @ (Yt - Ft @ V) - eta * V


def rk4_step(F: torch.Tensor, V: torch.Tensor, Y: torch.Tensor, eta: float,
             dt: float) -> torch.Tensor:
    """One classical Runge-Kutta step of :math:`\\dot V = -\\partial J/\\partial V`
    (:func:`top_layer_velocity`, autograd)."""
    return integrators.rk4_step(lambda _t, W: top_layer_velocity(F, W, Y, eta), 0.0, V, dt)


def rk4_amplification(z: torch.Tensor) -> torch.Tensor:
    r"""RK4's factor per step on a mode :math:`\dot x = -\lambda x`, :math:`z = \lambda\,dt`:
    :math:`R(z) = 1 - z + z^2/2 - z^3/6 + z^4/24` (the Taylor polynomial of :math:`e^{-z}`)."""
    return 1 - z + z**2 / 2 - z**3 / 6 + z**4 / 24


def hessian_bound(F: torch.Tensor, eta: float) -> float:
    r""":math:`\lambda_{\max}(\tilde F^\top\tilde F + \eta I) = \|P_1^\perp F\|_2^2 + \eta`,
    the fastest rate of the flow (the Hessian of :math:`J` in :math:`V` is that matrix
    acting on each column)."""
    _check_eta(eta)
    return float(torch.linalg.matrix_norm(center(F), ord=2)) ** 2 + eta


def stable_step(F: torch.Tensor, eta: float, safety: float = 0.5) -> float:
    """A step ``safety / lambda_max``: every mode then has ``0 < R(z) < 1`` and decays
    monotonically (``R`` decreases on ``[0, 1.59]``)."""
    if not 0 < safety <= 1:
        raise ValueError(f"safety: {safety!r} must lie in (0, 1]")
    return safety / hessian_bound(F, eta)


def integrate_top_layer_flow(F: torch.Tensor, Y: torch.Tensor, V0: torch.Tensor, eta: float,
                             *, dt: float, steps: int, record_every: int = 1) -> Trajectory:
    r"""Integrate :math:`\dot V = -\partial J/\partial V` (:func:`top_layer_field`) from ``V0``
    (B x K x M, one flow per initialisation) with RK4, recording :math:`G_F(t)` (Eq. 2,
    autograd) at ``t = 0`` and every ``record_every`` steps (and at the last step).

    ``F`` (n x K) may be uncentred: the loss centres over samples, so the flow is that of
    App. C with :math:`\tilde F = P_1^\perp F`. Raises :class:`Diverged` on NaN/Inf.
    """
    _check_eta(eta)
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt: {dt!r} must be a finite number > 0")
    if dt * hessian_bound(F, eta) >= RK4_STABILITY_LIMIT:
        raise ValueError(f"dt: {dt:.3g} exceeds RK4's stability limit "
                         f"{RK4_STABILITY_LIMIT}/lambda_max; use stable_step(F, eta)")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps: {steps!r} must be an integer >= 1")
    if not (isinstance(record_every, int) and record_every >= 1):
        raise ValueError(f"record_every: {record_every!r} must be an integer >= 1")
    if V0.dim() != 3 or V0.shape[1] != F.shape[1] or Y.shape[0] != F.shape[0] \
            or V0.shape[2] != Y.shape[1]:
        raise ValueError(f"V0: shape {tuple(V0.shape)} must be (B, K, M) with K={F.shape[1]}, "
                         f"M={Y.shape[1]} for F {tuple(F.shape)}, Y {tuple(Y.shape)}")
    F_batch = F.expand(V0.shape[0], *F.shape)  # one G_F per initialisation

    def snapshot(V: torch.Tensor, step: int) -> torch.Tensor:
        G = backprop_gradient(F_batch, V, Y, eta)
        if not torch.isfinite(G).all():
            raise Diverged(f"top-layer flow: non-finite G_F at step {step} (t={step * dt:.4g})")
        return G

    Ft, Yt = center(F), center(Y)

    def field(_t: float, V: torch.Tensor) -> torch.Tensor:
        return top_layer_field(Ft, Yt, V, eta)

    V, times, G_F = V0, [0.0], [snapshot(V0, 0)]
    for k in range(1, steps + 1):
        V = integrators.rk4_step(field, 0.0, V, dt)
        if k % record_every == 0 or k == steps:
            times.append(k * dt)
            G_F.append(snapshot(V, k))
    return Trajectory(times=torch.tensor(times, dtype=torch.float64), G_F=torch.stack(G_F),
                      V=V.detach(), dt=dt)


def ridge_fixed_point(Ft: torch.Tensor, Yt: torch.Tensor, eta: float) -> RidgeSolution:
    r"""Solve the stationarity equation :math:`(\tilde F^\top\tilde F+\eta I)V=\tilde F^\top
    \tilde Y` (Cholesky; :math:`\eta > 0` makes the matrix positive definite for any
    :math:`\tilde F`, also with :math:`K \ge n`)."""
    if not (eta > 0 and math.isfinite(eta)):
        raise ValueError(f"eta: {eta!r} must be a finite number > 0")
    A = Ft.transpose(-1, -2) @ Ft + eta * torch.eye(Ft.shape[-1], dtype=Ft.dtype,
                                                    device=Ft.device)
    V = torch.cholesky_solve(Ft.transpose(-1, -2) @ Yt, torch.linalg.cholesky(A))
    E = Yt - Ft @ V
    return RidgeSolution(V=V, E=E, G=E @ V.transpose(-1, -2))


def centred_features_with_spectrum(n: int, singular_values: torch.Tensor, K: int,
                                   generator: torch.Generator, *, offset: float = 1.0,
                                   dtype: torch.dtype = torch.float64,
                                   device: torch.device | str = "cpu") -> torch.Tensor:
    r"""An uncentred ``n x K`` feature matrix :math:`F = U\,\mathrm{diag}(s)\,W^\top +
    \mathbf 1 c^\top` whose centred part :math:`\tilde F = P_1^\perp F` has the singular
    values ``s`` (length :math:`r \le \min(K, n-1)`; the other :math:`K - r` are 0).

    :math:`U` (n x r, columns orthonormal and orthogonal to :math:`\mathbf 1`) and :math:`W`
    (K x r, orthonormal columns) are Q factors of Gaussian draws from ``generator``;
    :math:`c \sim \mathcal N(0, \text{offset}^2)` puts back a per-feature mean for the loss
    to remove.
    """
    s = singular_values.to(torch.float64).flatten()
    r = s.numel()
    if not (n >= 2 and K >= 1 and 1 <= r <= min(K, n - 1)):
        raise ValueError(f"singular_values: {r} values given; need 1 <= r <= min(K, n-1) = "
                         f"{min(K, n - 1)} (n={n}, K={K}; centring leaves rank <= n-1)")
    if not bool((s > 0).all()):
        raise ValueError("singular_values: must all be > 0")
    g = torch.randn(n, r, generator=generator, dtype=torch.float64)
    U, _ = torch.linalg.qr(g - g.mean(dim=0, keepdim=True))
    W, _ = torch.linalg.qr(torch.randn(K, r, generator=generator, dtype=torch.float64))
    c = offset * torch.randn(1, K, generator=generator, dtype=torch.float64)
    F = (U * s) @ W.T + c
    return F.to(device=device, dtype=dtype)


@dataclass(frozen=True)
class DeviationBound:
    r"""Bounds on :math:`G(t) - G^\star` along the RK4 flow, from the modes of
    :math:`A = \tilde F^\top\tilde F + \eta I` (eigenvalues :math:`\lambda_1 < \lambda_2 \le
    \dots \le \lambda_K`, the slow eigenspace of :math:`\lambda_1` taken whole).

    With :math:`D = V - V^\star`, :math:`G - G^\star = L(D) - \tilde FDD^\top`,
    :math:`L(D) = E^\star D^\top - \tilde F D V^{\star\top}`, and RK4 maps
    :math:`D_k = R(dt\,A)^k D_0`, i.e. mode :math:`i` decays at
    :math:`\hat\lambda_i = -\ln R(dt\,\lambda_i)/dt`. Writing
    :math:`e^{\hat\lambda_1 t}(G - G^\star) = M_1 + R_{\rm fast}(t) + R_{\rm quad}(t)` with
    :math:`M_1 = L(D_{0,\rm slow})`:

    * :math:`\|R_{\rm fast}\| \le C_{\rm fast}e^{-(\hat\lambda_2-\hat\lambda_1)t}`,
      :math:`\|R_{\rm fast}'\| \le (\hat\lambda_K-\hat\lambda_1)C_{\rm fast}
      e^{-(\hat\lambda_2-\hat\lambda_1)t}`, :math:`C_{\rm fast} = c_L\|D_0 - D_{0,\rm slow}\|_F`,
      :math:`c_L = \|E^\star\|_2 + \|\tilde F\|_2\|V^\star\|_2`;
    * :math:`\|R_{\rm quad}\| \le C_{\rm quad}e^{-\hat\lambda_1 t}`,
      :math:`\|R_{\rm quad}'\| \le (2\hat\lambda_K+\hat\lambda_1)C_{\rm quad}e^{-\hat\lambda_1 t}`,
      :math:`C_{\rm quad} = \|\tilde F\|_2\|D_0\|_F^2` (the product :math:`DD^\top` decays at
      :math:`2\hat\lambda_1`, so it, not the next mode, leads once
      :math:`\lambda_2 > 2\lambda_1`).

    Tensors are per initialisation (B,); rates are scalars.
    """

    lam: torch.Tensor  # eigenvalues of A, ascending (K,)
    lam_hat: torch.Tensor  # RK4's per-mode decay rates (K,)
    slow: int  # multiplicity of the slow eigenvalue
    M1: torch.Tensor  # ||M_1||_F (B,)
    C_fast: torch.Tensor
    C_quad: torch.Tensor
    c_L: float
    D0: torch.Tensor  # ||D_0||_F (B,)

    @property
    def gap(self) -> float:
        r""":math:`\hat\lambda_2 - \hat\lambda_1` (inf when all modes are slow)."""
        if self.slow == self.lam.numel():
            return math.inf
        return float(self.lam_hat[self.slow] - self.lam_hat[0])

    def slope_bias(self, t_start: float) -> torch.Tensor:
        r"""Bound on :math:`|\frac{d}{dt}\ln\|G-G^\star\|_F + \hat\lambda_1|` for all
        :math:`t \ge` ``t_start``: :math:`\|X'\|/\|X\|` with :math:`\|X\| \ge \|M_1\| - \|R\|`;
        a least-squares slope over such times is a weighted mean of these derivatives. inf
        where the remainder is not yet below :math:`\|M_1\|`."""
        l1, lK = float(self.lam_hat[0]), float(self.lam_hat[-1])
        fast = self.C_fast * math.exp(-self.gap * t_start)
        quad = self.C_quad * math.exp(-l1 * t_start)
        numerator = (lK - l1) * fast + (2 * lK + l1) * quad
        room = self.M1 - fast - quad
        return torch.where(room > 0, numerator / room.clamp_min(1e-300),
                           torch.full_like(room, math.inf))

    def residual(self, t: float) -> torch.Tensor:
        r""":math:`\|G(t) - G^\star\|_F \le c_L\|D_0\|_Fe^{-\hat\lambda_1t} +
        C_{\rm quad}e^{-2\hat\lambda_1t}` (B,)."""
        decay = math.exp(-float(self.lam_hat[0]) * t)
        return self.c_L * self.D0 * decay + self.C_quad * decay**2


def deviation_bound(Ft: torch.Tensor, eta: float, V0: torch.Tensor, fixed: RidgeSolution,
                    dt: float) -> DeviationBound:
    """The :class:`DeviationBound` of the RK4 flow with step ``dt`` from ``V0`` (B, K, M)."""
    A = Ft.transpose(-1, -2) @ Ft + eta * torch.eye(Ft.shape[-1], dtype=Ft.dtype,
                                                    device=Ft.device)
    lam, Q = torch.linalg.eigh(A)
    z = dt * lam
    if float(z[-1]) > 1.5:
        raise ValueError(f"dt: {dt:.3g} gives dt*lambda_max = {float(z[-1]):.3g} > 1.5, where "
                         "RK4's per-step factor is no longer monotone in lambda")
    lam_hat = -torch.log(rk4_amplification(z)) / dt
    # Eigenvalues equal to lambda_1 up to eigh's backward error form one slow mode (with
    # K > n the null space of Ft gives lambda_1 = eta with multiplicity K - rank).
    same = lam - lam[0] <= 64 * torch.finfo(lam.dtype).eps * lam[-1]
    slow = int(same.sum())
    Qs = Q[:, :slow]
    D0 = V0 - fixed.V
    D_slow = Qs @ (Qs.transpose(-1, -2) @ D0)
    M1 = fixed.E @ D_slow.transpose(-1, -2) - Ft @ D_slow @ fixed.V.transpose(-1, -2)
    F_norm = float(torch.linalg.matrix_norm(Ft, ord=2))
    c_L = float(torch.linalg.matrix_norm(fixed.E, ord=2)) \
        + F_norm * float(torch.linalg.matrix_norm(fixed.V, ord=2))
    D0_norm = torch.linalg.matrix_norm(D0)
    return DeviationBound(
        lam=lam, lam_hat=lam_hat, slow=slow, M1=torch.linalg.matrix_norm(M1),
        C_fast=c_L * torch.linalg.matrix_norm(D0 - D_slow), C_quad=F_norm * D0_norm**2,
        c_L=c_L, D0=D0_norm)
