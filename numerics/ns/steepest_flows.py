r"""Steepest flows on the diagonal reparameterisation :math:`x = \prod_{i=1}^L w_i` and the
steepest mirror flow in :math:`x` (Never Saddle §3-§4), batched.

* :class:`ProductFlow`: the parameter flow :math:`\dot w_i = -\psi_q(\partial_{w_i}F +
  \alpha_c w_i) - \alpha_d w_i` with :math:`\psi_q(v) = \operatorname{sign}(v)|v|^{q-1}`,
  many initialisations x exponents x depths in one tensor: factors are stacked as
  ``(L_max, B, d)`` and a mask switches off the factors beyond each entry's depth (they stay
  at 1 and do not move), ``q`` and the decay strengths are ``(B, 1)``.
* :class:`MirrorFlow`: :math:`\dot x = -M(x)\,\mathrm{drive}(\nabla f(x), q)` for a given
  inverse metric :math:`M` (:math:`= 1/\nabla^2R`); :class:`ProductInverseMetric` is the
  metric of the product flow, :math:`M = P'(u)` with :math:`P(u) = \prod_i(u + c_i) = |x|^q`
  (the form :func:`theory.ns.reparam_balance.derive_product_metric` derives), solved for
  :math:`u` by Newton's method.
* Integrators are in :mod:`numerics.integrators` (one Euler step of the :math:`q = 1` field
  with decoupled decay is one step of sign descent, i.e. AdamW with :math:`\beta_1 = \beta_2
  = 0`, :math:`\epsilon = 0`); step-halving studies in :mod:`numerics.step_studies`.

For :math:`q < 2` the field is not Lipschitz where a gradient coordinate or a factor vanishes,
and for :math:`q = 1` it is discontinuous there: a fixed-step scheme then chatters around the
switching surface. :func:`numerics.step_studies.sign_changes` counts that; nothing here smooths
it away.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from numerics import solves
from numerics.errors import Diverged
from numerics.integrators import Trajectory, integrate

GradFn = Callable[[torch.Tensor], torch.Tensor]


def check_exponent(q: torch.Tensor | float) -> None:
    """Raise ``ValueError`` unless every ``q`` lies in [1, 2]."""
    q_t = torch.as_tensor(q)
    if not bool(((q_t >= 1) & (q_t <= 2)).all()):
        raise ValueError(f"q: every exponent must lie in [1, 2], got {q_t.flatten().tolist()}")


def odd_power(v: torch.Tensor, q: torch.Tensor | float) -> torch.Tensor:
    r""":math:`\psi_q(v) = \operatorname{sign}(v)|v|^{q-1}` (:math:`\psi_1 = \operatorname{sign}`,
    with :math:`\operatorname{sign}(0) = 0`; :math:`\psi_2(v) = v`).

    A Python number ``q == 2`` skips the power, which costs more than the rest of a flow's
    field (benchmarks/README.md), and returns ``v + 0.0``: the same bits as the general
    formula, since :math:`|v|^1 = |v|` and :math:`\operatorname{sign}(v)|v| = v` are exact in
    floating point except at :math:`-0`, which both map to :math:`+0`."""
    if not isinstance(q, torch.Tensor) and q == 2:
        return v + 0.0
    return torch.sign(v) * v.abs() ** (q - 1)


def exclusive_products(W: torch.Tensor) -> torch.Tensor:
    r""":math:`\prod_{j\ne i} w_j` for each factor ``i`` along dim 0, without division (so a
    zero factor is fine).

    Two and three factors (most flows here) are written out: the same products in the same
    order as the prefix/suffix form (multiplying by 1 is exact), in fewer tensor operations."""
    if W.shape[0] == 2:
        return W.flip(0)
    if W.shape[0] == 3:
        return torch.stack([W[2] * W[1], W[0] * W[2], W[0] * W[1]])
    ones = torch.ones_like(W[:1])
    prefix = torch.cat([ones, W[:-1].cumprod(0)])
    suffix = torch.cat([W[1:].flip(0).cumprod(0).flip(0), ones])
    return prefix * suffix


def depth_mask(depths: torch.Tensor, L_max: int, *, dtype: torch.dtype = torch.float64,
               device: torch.device | str = "cpu") -> torch.Tensor:
    """``(L_max, B, 1)`` mask: 1 for the first ``depths[b]`` factors of entry ``b``, else 0."""
    depths = torch.as_tensor(depths, device=device)
    if bool((depths < 1).any()) or bool((depths > L_max).any()):
        raise ValueError(f"depths: every depth must lie in [1, {L_max}], got {depths.tolist()}")
    index = torch.arange(L_max, device=device)[:, None]
    return (index < depths[None, :]).to(dtype)[..., None]


def factors_from_balance(base: torch.Tensor, offsets: torch.Tensor, signs: torch.Tensor,
                         q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r"""Factors with :math:`|w_i|^q = u + c_i`: ``base`` is :math:`u \ge 0` ``(B, d)``,
    ``offsets`` :math:`c_i \ge 0` ``(L_max, B, d)``, ``signs`` :math:`\pm1`; masked factors are
    1. ``q`` is ``(B, 1)``."""
    if bool((base < 0).any()) or bool((offsets < 0).any()):
        raise ValueError("base, offsets: |w_i|^q = base + offset needs both >= 0")
    magnitudes = (base[None] + offsets) ** (1 / q)
    return torch.where(mask > 0, signs * magnitudes, torch.ones_like(magnitudes))


def balance_offsets(W: torch.Tensor, q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    r""":math:`c_i = |w_i|^q - \min_j|w_j|^q` over the active factors (0 where masked)."""
    powers = W.abs() ** q
    smallest = torch.where(mask > 0, powers, torch.full_like(powers, math.inf)).amin(0)
    return (powers - smallest[None]) * mask


@dataclass(frozen=True)
class ProductFlow:
    r"""The steepest parameter flow of :math:`F(w) = f(\prod_i w_i)`, a callable field
    ``(t, W) -> dW/dt`` on ``W`` of shape ``(L_max, B, d)``.

    ``q``, ``coupled`` (:math:`\alpha_c`), ``decoupled`` (:math:`\alpha_d`): ``(B, 1)``;
    ``schedule(t)`` multiplies both decay strengths (default 1).
    """

    grad: GradFn
    q: torch.Tensor
    mask: torch.Tensor
    coupled: torch.Tensor | None = None
    decoupled: torch.Tensor | None = None
    schedule: Callable[[float], float] | None = None

    def __post_init__(self) -> None:
        check_exponent(self.q)
        for name in ("coupled", "decoupled"):
            value = getattr(self, name)
            if value is not None and bool((value < 0).any()):
                raise ValueError(f"{name}: decay strengths must be >= 0")

    def __call__(self, t: float, W: torch.Tensor) -> torch.Tensor:
        scale = 1.0 if self.schedule is None else self.schedule(t)
        partial = self.grad(W.prod(0))[None] * exclusive_products(W)
        if self.coupled is not None:
            partial = partial + scale * self.coupled * W
        velocity = -odd_power(partial, self.q)
        if self.decoupled is not None:
            velocity = velocity - scale * self.decoupled * W
        return velocity * self.mask


def product_velocity(W: torch.Tensor, velocity: torch.Tensor) -> torch.Tensor:
    r""":math:`\dot x` of :math:`x = \prod_i w_i` along a parameter velocity, by forward-mode
    autograd of the product map (independent of any formula for :math:`\dot x`)."""
    _, tangent = torch.func.jvp(lambda V: V.prod(0), (W,), (velocity,))
    return tangent


class ProductInverseMetric:
    r""":math:`M(x) = P'(u)` with :math:`P(u) = \prod_i(u + c_i)` over the active factors and
    :math:`u \ge 0` the root of :math:`P(u) = |x|^q`.

    ``offsets`` :math:`c_i \ge 0` ``(L_max, B, d)`` (0 for masked factors), ``q`` ``(B, 1)``.
    :math:`P` is increasing and convex on :math:`[0, \infty)` (all its roots are
    :math:`-c_i \le 0`); :math:`P(u) \ge u^L` and :math:`P(u) \ge P'(0)u` give the upper
    bound :math:`u \le \min(X^{1/L}, X/P'(0))`, :math:`X = |x|^q`, on which :meth:`root` clamps
    its iterates. Each call starts from the previous call's root (an integrator's stages move x
    only a little).
    """

    def __init__(self, offsets: torch.Tensor, q: torch.Tensor, mask: torch.Tensor,
                 *, max_iter: int = 200) -> None:
        check_exponent(q)
        if bool((offsets < 0).any()):
            raise ValueError("offsets: balance offsets must be >= 0")
        self.offsets, self.q, self.mask, self.max_iter = offsets, q, mask, max_iter
        self.depth = mask.sum(0)  # (B, 1)
        # Fixed per metric: built once rather than in every Newton iteration.
        self._active, self._ones = mask > 0, torch.ones_like(offsets)
        self._u: torch.Tensor | None = None
        self._slope0 = self._poly(torch.zeros_like(offsets[0]))[1]

    def _poly(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        terms = torch.where(self._active, u[None] + self.offsets, self._ones)
        return terms.prod(0), (exclusive_products(terms) * self.mask).sum(0)

    def root(self, x: torch.Tensor) -> torch.Tensor:
        r"""The :math:`u \ge 0` with :math:`P(u) = |x|^q`, to a few ulps.

        Newton's method on :math:`h(v) = \log P(e^v) - \log|x|^q` in :math:`v = \log u`:
        :math:`h` is increasing and convex (a sum of :math:`\log(e^v + c_i)`), so Newton
        converges from any start, and it is nearly linear both for :math:`u \gg c_i`
        (:math:`h \approx Lv`) and :math:`u \ll c_i`, which makes a few steps enough.
        """
        X = x.abs() ** self.q
        positive = X > 0
        log_X = torch.where(positive, X, torch.ones_like(X)).log()
        slope0 = self._slope0.expand_as(x)
        tiny = torch.finfo(x.dtype).tiny
        bound = torch.where(slope0 > 0, torch.minimum(log_X / self.depth,
                                                      log_X - slope0.clamp_min(tiny).log()),
                            log_X / self.depth)
        if self._u is None or self._u.shape != x.shape:
            v = bound
        else:
            v = torch.minimum(self._u.clamp_min(tiny).log(), bound)
        # Quadratic convergence: once every step is below sqrt(eps) (a relative step in u),
        # one more step reaches roundoff (a stricter test can cycle between two floats).
        small = math.sqrt(torch.finfo(x.dtype).eps)
        converged = False
        for _ in range(self.max_iter):
            u = v.exp()
            P, dP = self._poly(u)
            step = (P.log() - log_X) * P / (u * dP)
            new = torch.minimum(v - torch.where(positive, step, torch.zeros_like(v)), bound)
            finished = converged
            converged = bool(((new - v).abs() <= small).all())
            v = new
            if finished:
                break
        else:
            raise Diverged(f"ProductInverseMetric: Newton did not converge in {self.max_iter} "
                           "iterations")
        u = torch.where(positive, v.exp(), torch.zeros_like(v))
        self._u = u
        return u

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self._poly(self.root(x))[1]


@dataclass(frozen=True)
class MirrorFlow:
    r"""The steepest mirror flow :math:`\dot x = -M(x)\,\mathrm{drive}(\nabla f(x), q)`, a
    field ``(t, x) -> dx/dt``; ``drive`` defaults to :math:`\psi_q`."""

    grad: GradFn
    q: torch.Tensor
    inverse_metric: Callable[[torch.Tensor], torch.Tensor]
    drive: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = odd_power

    def __call__(self, t: float, x: torch.Tensor) -> torch.Tensor:
        return -self.inverse_metric(x) * self.drive(self.grad(x), self.q)


@dataclass(frozen=True)
class DifferenceOfPowersFlow:
    r"""Gradient flow of :math:`f(w_+^D - w_-^D)` (Woodworth et al. 2020's model, depth
    :math:`D`), a field on ``W = stack(w_+, w_-)`` ``(2, B, d)``:
    :math:`\dot w_\pm = \mp D w_\pm^{D-1}\nabla f(\beta)`."""

    grad: GradFn
    D: int = 2

    def __post_init__(self) -> None:
        if not (isinstance(self.D, int) and self.D >= 2):
            raise ValueError(f"D: {self.D!r} must be an integer >= 2")

    def beta(self, W: torch.Tensor) -> torch.Tensor:
        return W[0] ** self.D - W[1] ** self.D

    def __call__(self, t: float, W: torch.Tensor) -> torch.Tensor:
        g = self.grad(self.beta(W))
        return torch.stack([-self.D * W[0] ** (self.D - 1) * g,
                            self.D * W[1] ** (self.D - 1) * g])


def steepest_descent(flow: ProductFlow, W0: torch.Tensor, *, lr: float, steps: int,
                     record_every: int = 1,
                     observe: Callable[[float, torch.Tensor], torch.Tensor] | None = None
                     ) -> Trajectory:
    r"""The discrete optimiser :math:`w \leftarrow w - \eta(\psi_q(\partial F + \alpha_c w) +
    \alpha_d w)`: for :math:`q = 1`, sign descent; with decoupled decay, AdamW with
    :math:`\beta_1 = \beta_2 = 0`, :math:`\epsilon = 0`; with coupled decay, Adam with an L2
    term (same settings)."""
    return integrate(flow, W0, dt=lr, steps=steps, method="euler", record_every=record_every,
                     observe=observe)


# --- problems ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Regression:
    r""":math:`f(x) = \tfrac1{2N}\|Ax - y\|^2`, batched over the rows of ``x`` ``(B, d)``."""

    A: torch.Tensor
    y: torch.Tensor

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * ((x @ self.A.T - self.y) ** 2).mean(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.A.T - self.y) @ self.A / self.A.shape[0]


def default_regression(generator: torch.Generator, *, N: int = 10, d: int = 20,
                       x_star: tuple[float, ...] = (1.0, -0.7, 0.5),
                       device: torch.device | str = "cpu",
                       dtype: torch.dtype = torch.float64) -> tuple[Regression, torch.Tensor]:
    r"""The default problem of verify/claims/ns/SOURCES.md §4.0: :math:`A_{kl} \sim \mathcal N(0,
    1/d)`,
    :math:`x^\star = (1, -0.7, 0.5, 0, \ldots)`, :math:`y = Ax^\star`. Returns the problem and
    :math:`x^\star`."""
    if N < 1 or d < len(x_star):
        raise ValueError(f"N, d: need N >= 1 and d >= {len(x_star)}, got N={N}, d={d}")
    A = torch.randn(N, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    xs = torch.zeros(d, dtype=torch.float64)
    xs[: len(x_star)] = torch.tensor(x_star, dtype=torch.float64)
    A, xs = A.to(device=device, dtype=dtype), xs.to(device=device, dtype=dtype)
    return Regression(A, A @ xs), xs


@dataclass(frozen=True)
class SeparableQuadratic:
    r""":math:`f(x) = \tfrac12\sum_k h_k(x_k - c_k)^2` with ``h``, ``c`` of shape ``(B, d)``."""

    h: torch.Tensor
    c: torch.Tensor

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return self.h * (x - self.c)


# --- implicit bias ----------------------------------------------------------------------------

def min_norm_solutions(A: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\arg\min_{Ax=y}\|x\|_1` (a linear program, scipy's HiGHS, on
    :math:`x = x^+ - x^-`) and :math:`\arg\min_{Ax=y}\|x\|_2` (the pseudo-inverse)."""
    from scipy.optimize import linprog

    A_np, y_np = A.detach().cpu().double().numpy(), y.detach().cpu().double().numpy()
    d = A_np.shape[1]
    result = linprog(np.ones(2 * d), A_eq=np.hstack([A_np, -A_np]), b_eq=y_np,
                     bounds=[(0, None)] * (2 * d), method="highs")
    if not result.success:
        raise Diverged(f"min_norm_solutions: linprog failed: {result.message}")
    l1 = torch.tensor(result.x[:d] - result.x[d:], dtype=A.dtype, device=A.device)
    return l1, torch.linalg.pinv(A) @ y


def bregman_projection(grad_R: Callable[[torch.Tensor], torch.Tensor],
                       hess_R: Callable[[torch.Tensor], torch.Tensor], A: torch.Tensor,
                       y: torch.Tensor, x_start: torch.Tensor, *, max_iter: int = 100
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\arg\min_{Ax = y}\sum_k\phi(x_k)` for a separable strictly convex :math:`\phi`
    given by :math:`\phi'` (``grad_R``) and :math:`\phi''` (``hess_R``), batched over the rows
    of ``x_start``: infeasible-start Newton on the KKT system
    :math:`\phi'(x) + A^\top\nu = 0`, :math:`Ax = y` with backtracking on the residual norm
    (Boyd & Vandenberghe §10.3). With :math:`\phi'(x) = \nabla R(x) - \nabla R(x_0)` this is
    :math:`\arg\min_{Ax=y}D_R(x, x_0)`. Returns the minimiser and the 2-norm condition
    number of the final KKT matrix (per row); raises :class:`Diverged` if it does not converge.
    """
    N, d = A.shape
    x = x_start.clone()
    nu = torch.zeros(x.shape[0], N, dtype=x.dtype, device=x.device)
    eps = torch.finfo(x.dtype).eps

    def residual(x_: torch.Tensor, nu_: torch.Tensor) -> torch.Tensor:
        return torch.cat([grad_R(x_) + nu_ @ A, x_ @ A.T - y], dim=-1)

    def kkt(x_: torch.Tensor) -> torch.Tensor:
        K = torch.zeros(x_.shape[0], d + N, d + N, dtype=x_.dtype, device=x_.device)
        K[:, :d, :d] = torch.diag_embed(hess_R(x_))
        K[:, :d, d:] = A.T
        K[:, d:, :d] = A
        return K

    r = residual(x, nu)
    for _ in range(max_iter):
        step = solves.solve(kkt(x), -r)    # the KKT matrix is indefinite: LU
        norm = r.norm(dim=-1)
        t = torch.ones_like(norm)
        for _ in range(60):
            trial = residual(x + t[:, None] * step[:, :d], nu + t[:, None] * step[:, d:])
            worse = trial.norm(dim=-1) > (1 - 0.01 * t) * norm
            if not bool(worse.any()):
                break
            t = torch.where(worse, 0.5 * t, t)
        x, nu = x + t[:, None] * step[:, :d], nu + t[:, None] * step[:, d:]
        r = residual(x, nu)
        scale = 1 + grad_R(x).abs().amax(-1) + y.abs().max()
        if bool((r.abs().amax(-1) <= 16 * eps * scale).all()):
            return x, torch.linalg.cond(kkt(x))
    raise Diverged(f"bregman_projection: KKT residual {float(r.abs().max()):.2e} after "
                   f"{max_iter} Newton steps")
