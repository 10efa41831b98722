r"""Li2's memorisation problem (Thm. 5, Lemmas 5-6, App. A.4) in torch.

Two objects, each from its definition:

* the **reduced problem** of App. A.4: maximise :math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` over
  :math:`\mathbf s\ge0`, :math:`\|\mathbf s\|^2\le2`, by projected gradient ascent from many
  starts at once (:func:`ascend_reduced`);
* the **single-target data set**: samples :math:`(g,g^{-1}h)` of one target :math:`h` with
  multiplicities, on which Eq. 7's energy is ascended on the unit sphere in
  :math:`\mathbb R^{2M}` (:func:`ascend_energy`), with a kink-safe test of which end points
  are strict local maxima (:func:`strict_maximum`).

Also: the activations of Thm. 5 beyond :mod:`numerics.activations` (powers :math:`x^q`, the
polynomial :math:`x^2-x^3/3`), :math:`\phi=\sigma'/x`, and its inverse by multisection (what
the paper's spreading formula :math:`s_g=\phi^{-1}(2\lambda/p_g)` needs to be evaluated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics import sphere
from numerics.activations import ACTIVATIONS, Activation
from numerics.li2.energy import (
    energy,
    energy_gradient,
    energy_rounding_scale,
    sphere_step,
    tangent,
)
from numerics.errors import Diverged, check_ascent_settings
from numerics.li2.landscape import tangent_spectrum

#: :math:`\|\mathbf s\|^2\le2` (App. A.4): the sphere :math:`\|\mathbf w\|=1` seen from
#: :math:`s_g=u_g+v_{g^{-1}h}`.
BUDGET = 2.0


def power_activation(q: float) -> Activation:
    r""":math:`\sigma(x)=x^q` (``torch.pow`` for integer ``q``; the odd extension
    :math:`\mathrm{sign}(x)|x|^q` otherwise: only :math:`x\ge0` enters the reduced problem)."""
    if not q > 0:
        raise ValueError(f"q: {q} must be > 0")
    if float(q).is_integer():
        k = int(q)
        return Activation(f"x^{k}", lambda z: z**k, lambda z: k * z ** (k - 1))
    return Activation(f"x^{q:g}", lambda z: z.sign() * z.abs() ** q,
                      lambda z: q * z.abs() ** (q - 1))


#: :math:`x^2-x^3/3`: :math:`\phi=2-x` strictly decreasing with :math:`\phi(0^+)=2<\infty`,
#: the thresholded branch of Lemma 6 (:math:`\sigma'>0` on :math:`(0,2)\supset(0,\sqrt2]`).
QUADRATIC_CUBIC = Activation("x^2-x^3/3", lambda z: z * z - z**3 / 3, lambda z: 2 * z - z * z)


def memorisation_activation(name: str) -> Activation:
    """``x^<q>`` (e.g. ``x^3``, ``x^1.5``), ``x^2-x^3/3``, or a name of
    :mod:`numerics.activations` (``relu``, ``silu``, ``tanh``, ``sigmoid``, ...)."""
    if name == QUADRATIC_CUBIC.name:
        return QUADRATIC_CUBIC
    if name.startswith("x^"):
        try:
            q = float(name[2:])
        except ValueError:
            raise ValueError(f"activation: {name!r}: the exponent of x^q must be a number") \
                from None
        return power_activation(q)
    if name not in ACTIVATIONS:
        raise ValueError(f"activation: {name!r} is not x^<q>, {QUADRATIC_CUBIC.name} or one "
                         f"of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def phi(act: Activation, s: torch.Tensor) -> torch.Tensor:
    r""":math:`\phi(s)=\sigma'(s)/s` (Thm. 5), for :math:`s>0`."""
    return act.derivative(s) / s


def parity(act: Activation, dtype: torch.dtype = torch.float64) -> str:
    r"""``"odd"``, ``"even"`` or ``"none"``: whether :math:`\sigma(-x)=\mp\sigma(x)` on a grid
    of :math:`[-2,2]` (to 8 ulps). With ``odd`` or ``even``, :math:`\mathcal E(-\mathbf w)=
    \mathcal E(\mathbf w)` on any data, so :math:`\pm\mathbf w` are one critical point."""
    z = torch.linspace(0.01, 2.0, 200, dtype=dtype)
    a, b = act(z), act(-z)
    tol = 8 * torch.finfo(dtype).eps * a.abs().clamp(min=1)
    if bool(((a + b).abs() <= tol).all()):
        return "odd"
    if bool(((a - b).abs() <= tol).all()):
        return "even"
    return "none"


def second_derivative_bound(act: Activation, lo: float, hi: float, points: int = 2049,
                            dtype: torch.dtype = torch.float64) -> float:
    r""":math:`\max|\sigma''|` on a grid of :math:`[lo,hi]`: autograd of the hand-written
    :math:`\sigma'` (0 where it is piecewise constant, as for ReLU)."""
    if not 0 <= lo < hi:
        raise ValueError(f"lo, hi: need 0 <= lo < hi, got {lo}, {hi}")
    z = torch.linspace(lo, hi, points, dtype=dtype).requires_grad_(True)
    d1 = act.derivative(z)
    if not d1.requires_grad:
        return 0.0
    (d2,) = torch.autograd.grad(d1.sum(), z)
    return float(d2.abs().max())


# --- the reduced problem ----------------------------------------------------------------------

def reduced_objective(s: torch.Tensor, p: torch.Tensor, act: Activation) -> torch.Tensor:
    r""":math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` over the last axis."""
    return (p * act(s)).sum(-1)


def project_feasible(s: torch.Tensor, budget: float = BUDGET) -> torch.Tensor:
    r"""Euclidean projection on :math:`\{\mathbf s\ge0,\ \|\mathbf s\|^2\le\text{budget}\}`:
    clamp at 0, then scale into the ball (exact for a ball centred at the apex of a cone)."""
    s = s.clamp(min=0)
    norm = s.norm(dim=-1, keepdim=True)
    radius = math.sqrt(budget)
    return torch.where(norm > radius, s * (radius / norm), s)


@dataclass(frozen=True)
class ReducedAscent:
    """End points ``s`` (``(..., M)``), their ``F``, gradient-mapping norms
    :math:`\\|\\Pi(\\mathbf s+\\mathrm{lr}\\nabla F)-\\mathbf s\\|/\\mathrm{lr}`, the steps taken
    and the largest decrease of ``F`` met along the way (0 for a monotone ascent)."""

    s: torch.Tensor
    value: torch.Tensor
    mapping_norm: torch.Tensor
    steps: int
    largest_decrease: torch.Tensor


def ascend_reduced(s0: torch.Tensor, p: torch.Tensor, act: Activation, lr: float,
                   max_steps: int, gtol: float) -> ReducedAscent:
    r"""Projected gradient ascent :math:`\mathbf s\leftarrow\Pi(\mathbf s+\mathrm{lr}\,
    \mathbf p\circ\sigma'(\mathbf s))` from the rows of ``s0`` (projected first), ``p``
    broadcast against them, until every gradient-mapping norm is ``<= gtol`` or
    ``max_steps``; raises :class:`Diverged` on a non-finite iterate."""
    check_ascent_settings(lr, max_steps, gtol)
    s = project_feasible(s0)
    value = reduced_objective(s, p, act)
    decrease = torch.zeros_like(value)
    steps = 0
    while True:
        moved = project_feasible(s + lr * p * act.derivative(s))
        mapping = (moved - s).norm(dim=-1) / lr
        if steps == max_steps or bool((mapping <= gtol).all()):
            break
        s = moved
        new = reduced_objective(s, p, act)
        if not bool(torch.isfinite(new).all()):
            raise Diverged(f"projected ascent of F produced a non-finite value at step {steps}")
        decrease = torch.maximum(decrease, value - new)
        value = new
        steps += 1
    return ReducedAscent(s, value, mapping, steps, decrease)


def _multisection(above, lo: torch.Tensor, up: torch.Tensor, sections: int,
                  iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Shrink brackets ``[lo, up]`` (elementwise) around the point where the monotone
    predicate ``above(x)`` (true below it, false above it; evaluated on a trailing axis of
    candidates) switches, at ``sections - 1`` interior points at once per round: a factor
    ``sections`` per round instead of bisection's 2. ``lo`` itself is never evaluated."""
    steps = torch.arange(1, sections, dtype=lo.dtype, device=lo.device) / sections
    for _ in range(iterations):
        grid = lo[..., None] + (up - lo)[..., None] * steps
        count = above(grid).sum(-1).to(lo.dtype)  # the true ones form a prefix
        lo, up = lo + (up - lo) * count / sections, lo + (up - lo) * (count + 1) / sections
    return lo, up


def inverse_phi(act: Activation, y: torch.Tensor, hi: float = 2 * math.sqrt(BUDGET),
                sections: int = 16, iterations: int = 14) -> torch.Tensor:
    r""":math:`\phi^{-1}(y)` on :math:`[0,hi]` for :math:`\phi` strictly decreasing there, by
    multisection (14 rounds of 16 sections, :math:`2^{-56}`: float64 spacing): 0 where
    :math:`y\ge\phi(0^+)` (the threshold of Lemma 6), ``hi`` where :math:`y\le\phi(hi)`.
    The default :math:`hi=2\sqrt2` lies beyond every coordinate of a solution
    (:math:`s_g\le\sqrt2`), so no clamp is active at one: a clamp at :math:`\sqrt2` itself
    would make :math:`\sum_gs_g^2` flat in :math:`\lambda` there."""
    lo, _ = _multisection(lambda x: phi(act, x) > y[..., None], torch.zeros_like(y),
                          torch.full_like(y, hi), sections, iterations)
    return lo


def solve_budget(profile, like: torch.Tensor, budget: float = BUDGET, sections: int = 16,
                 iterations: int = 16) -> torch.Tensor:
    r"""The :math:`\lambda>0` (one per row of ``like``, shape ``(..., 1)``) with
    :math:`\|\text{profile}(\lambda)\|^2=\text{budget}`, by multisection of
    :math:`\log\lambda` on :math:`[10^{-12},10^{12}]` (16 rounds of 16 sections: a bracket
    of :math:`55\cdot2^{-64}` in :math:`\log\lambda`);
    ``profile`` maps :math:`\lambda` (shape ``(..., 1)``, any leading axes) to
    :math:`\mathbf s`, and its squared norm must not increase with :math:`\lambda` (e.g.
    :math:`s_g=\phi^{-1}(2\lambda/p_g)` with :math:`\phi` decreasing)."""
    lo = torch.full(like.shape[:-1], -12 * math.log(10), dtype=like.dtype, device=like.device)

    def over(log_lam: torch.Tensor) -> torch.Tensor:  # (..., k) candidates at once
        lam = log_lam.movedim(-1, 0)[..., None].exp()  # (k, ..., 1)
        return (profile(lam).square().sum(-1) > budget).movedim(0, -1)

    lo, up = _multisection(over, lo, -lo, sections, iterations)
    return ((lo + up) / 2).exp()[..., None]


def focused_profile(p: torch.Tensor, budget: float = BUDGET) -> torch.Tensor:
    r""":math:`s_{g^\ast}=\sqrt{\text{budget}}`, all other coordinates 0, with
    :math:`g^\ast=\arg\max_gp_g` per row."""
    s = torch.zeros_like(p)
    return s.scatter(-1, p.argmax(-1, keepdim=True), math.sqrt(budget))


def lagrange_multiplier(s: torch.Tensor, p: torch.Tensor, act: Activation) -> torch.Tensor:
    r"""The least-squares multiplier :math:`\lambda=\mathbf s^\top\nabla F/(2\|\mathbf s\|^2)`
    with :math:`\nabla F=\mathbf p\circ\sigma'(\mathbf s)`: the :math:`\lambda` for which
    :math:`\nabla F-2\lambda\mathbf s` is tangent to the sphere (no :math:`\phi` involved)."""
    return (s * p * act.derivative(s)).sum(-1) / (2 * s.square().sum(-1))


def lagrangian_curvature(s: torch.Tensor, p: torch.Tensor, act: Activation,
                         lam: torch.Tensor) -> torch.Tensor:
    r"""The smallest :math:`|\text{eigenvalue}|` of the Lagrangian's Hessian
    :math:`\mathrm{diag}(p_g\sigma''(s_g)-2\lambda)` on the tangent space
    :math:`\mathbf s^\perp` of the sphere (:math:`\sigma''` by autograd); near a
    nondegenerate maximum the distance to it is at most about the gradient-mapping norm over
    this curvature. ``s``: ``(B, M)``; out ``(B,)``."""
    z = s.detach().requires_grad_(True)
    d1 = act.derivative(z)
    d2 = torch.autograd.grad(d1.sum(), z)[0] if d1.requires_grad else torch.zeros_like(s)
    D = torch.diag_embed(p * d2 - 2 * lam[..., None])
    w = s / s.norm(dim=-1, keepdim=True)
    return tangent_spectrum(w, sphere.tangent_projection(w, D)).abs().amin(-1)


def phi_sensitivity(act: Activation, s: torch.Tensor, threshold: float) -> torch.Tensor:
    r""":math:`\max_g\phi(s_g)/|\phi'(s_g)|` over the coordinates above ``threshold``
    (``> 0``) of each row (:math:`\phi'` by autograd; 0 where there are none): a relative
    error :math:`\delta` in :math:`\phi` (float rounding inside a bisection for
    :math:`\phi^{-1}`) moves :math:`s` by at most about :math:`\delta` times this.
    Infinite where :math:`\phi'=0`."""
    if not threshold > 0:
        raise ValueError(f"threshold: {threshold} must be > 0")
    z = s.detach().clamp(min=threshold).requires_grad_(True)
    f = phi(act, z)
    (df,) = torch.autograd.grad(f.sum(), z)
    return torch.where(s > threshold, f.detach() / df.abs(), 0.0).amax(-1)


# --- the single-target data set ---------------------------------------------------------------

@dataclass(frozen=True)
class SingleTargetData:
    r"""Samples :math:`(g,g^{-1}h)`, target ``h``: dense inputs ``X`` (``n x 2M``, rows
    :math:`[\mathbf e_g;\mathbf e_{g^{-1}h}]`, sample ``g`` repeated ``counts[g]`` times),
    one-hot labels ``Y`` (``n x M``), and ``partner[g]`` :math:`=g^{-1}h`."""

    X: torch.Tensor
    Y: torch.Tensor
    counts: torch.Tensor
    partner: torch.Tensor
    target: int

    @property
    def M(self) -> int:
        return self.Y.shape[1]

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> torch.Tensor:
        """The empirical probabilities :math:`p_g=c_g/n`."""
        return self.counts.to(self.X.dtype) / self.n


def single_target_data(table, target: int, counts: torch.Tensor,
                       dtype: torch.dtype = torch.float64,
                       device: torch.device | str = "cpu") -> SingleTargetData:
    r"""The pairs :math:`(g,g^{-1}h)` with :math:`gg^{-1}h=h` read off the Cayley table
    (``table[g][b] == h``), sample ``g`` repeated ``counts[g] >= 1`` times."""
    t = torch.as_tensor(table, dtype=torch.long)
    M = t.shape[0]
    if not 0 <= target < M:
        raise ValueError(f"target: {target} must lie in range({M})")
    counts = torch.as_tensor(counts, dtype=torch.long)
    if counts.shape != (M,) or int(counts.min()) < 1:
        raise ValueError(f"counts: need {M} counts, each >= 1, got {counts.tolist()}")
    partner = (t == target).to(torch.int8).argmax(dim=1)  # the b with g b = h
    g = torch.arange(M).repeat_interleave(counts)
    n = g.shape[0]
    X = torch.zeros(n, 2 * M, dtype=dtype)
    X[torch.arange(n), g] = 1
    X[torch.arange(n), M + partner[g]] = 1
    Y = torch.zeros(n, M, dtype=dtype)
    Y[:, target] = 1
    return SingleTargetData(X.to(device), Y.to(device), counts.to(device),
                            partner.to(device), target)


def split_coordinates(w: torch.Tensor, data: SingleTargetData) -> tuple[torch.Tensor,
                                                                        torch.Tensor]:
    r""":math:`s_g=u_g+v_{g^{-1}h}` and :math:`t_g=u_g-v_{g^{-1}h}` of each row
    :math:`\mathbf w=[\mathbf u;\mathbf v]`, so :math:`\|\mathbf w\|^2=\tfrac12\sum_g
    (s_g^2+t_g^2)`."""
    M = data.M
    u, v = w[..., :M], w[..., M:].index_select(-1, data.partner)
    return u + v, u - v


def lift(s: torch.Tensor, data: SingleTargetData) -> torch.Tensor:
    r""":math:`\mathbf w=\tfrac12\sum_gs_g[\mathbf e_g;\mathbf e_{g^{-1}h}]` (:math:`t=0`)."""
    M = data.M
    w = torch.zeros(s.shape[:-1] + (2 * M,), dtype=s.dtype, device=s.device)
    w[..., :M] = s / 2
    w[..., M + data.partner] = s / 2
    return w


@dataclass(frozen=True)
class EnergyAscent:
    """End points ``w`` (unit rows), energies, Riemannian gradient norms, final step sizes,
    the iterations taken, and the largest decrease of E accepted for each start (at most
    the rounding slack)."""

    w: torch.Tensor
    energy: torch.Tensor
    grad_norm: torch.Tensor
    lr: torch.Tensor
    steps: int
    largest_decrease: torch.Tensor


def ascend_energy(w0: torch.Tensor, X: torch.Tensor, labels: torch.Tensor, act: Activation,
                  lr0: float, max_steps: int, gtol: float, *, grow: float = 1.5,
                  armijo: float = 0.5, max_growth: float = 2.0**20) -> EnergyAscent:
    r"""Projected gradient ascent of :math:`\mathcal E=\tfrac12\|L^\top\sigma(X\mathbf w)\|^2`
    (:func:`numerics.li2.energy.energy` with label matrix ``labels``) on the unit sphere, every
    start with its own step size: a step :math:`\mathbf w\to(\mathbf w+\mathrm{lr}\,\xi)/
    \|\cdot\|` (:math:`\xi` the Riemannian gradient) is taken when it gains at least
    ``armijo`` :math:`\cdot\mathrm{lr}\|\xi\|^2` up to the rounding slack of
    :math:`\mathcal E` (:func:`numerics.li2.energy.energy_rounding_scale` times
    :math:`8(n+d)u`), and lr grows by ``grow`` (up to ``max_growth`` times ``lr0``);
    otherwise lr halves and the point stays (Armijo backtracking). ``armijo = 1/2`` is the
    gain the descent lemma guarantees for lr at most 1/(local curvature), so lr settles
    below the oscillation limit 2/curvature. Stops when every gradient norm is ``<= gtol`` or after
    ``max_steps`` iterations; raises :class:`Diverged` on a non-finite value."""
    check_ascent_settings(lr0, max_steps, gtol, lr_name="lr0")
    u = torch.finfo(w0.dtype).eps
    slack_factor = 8 * (X.shape[0] + X.shape[1]) * u
    w = w0 / w0.norm(dim=-1, keepdim=True)
    e = energy(w, X, labels, act)
    lr = torch.full_like(e, lr0)
    decrease = torch.zeros_like(e)
    steps = 0
    while True:
        xi = tangent(w, energy_gradient(w, X, labels, act))
        norm = xi.norm(dim=-1)
        if steps == max_steps or bool((norm <= gtol).all()):
            break
        cand = sphere_step(w, xi, lr[:, None])
        e_cand = energy(cand, X, labels, act)
        if not bool(torch.isfinite(e_cand).all()):
            raise Diverged(f"projected ascent of E produced a non-finite value at step {steps}")
        slack = slack_factor * energy_rounding_scale(w, X, labels, act)
        take = e_cand >= e + armijo * lr * norm.square() - slack
        decrease = torch.maximum(decrease, torch.where(take, e - e_cand, 0.0))
        w = torch.where(take[:, None], cand, w)
        e = torch.where(take, e_cand, e)
        lr = torch.where(take, (lr * grow).clamp(max=max_growth * lr0), lr / 2)
        steps += 1
    return EnergyAscent(w, e, norm, lr, steps, decrease)


def energy_hessian(w: torch.Tensor, X: torch.Tensor, labels: torch.Tensor,
                   act: Activation) -> torch.Tensor:
    r""":math:`\nabla^2\mathcal E` at each row of ``w`` (``(B, d)`` in, ``(B, d, d)`` out):
    reverse-over-reverse autograd of :func:`numerics.li2.energy.energy`, one backward pass per
    coordinate (the rows of the batch do not interact, so one pass serves them all)."""
    x = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(energy(x, X, labels, act).sum(), x, create_graph=True)
    if not g.requires_grad:  # an energy without curvature
        return torch.zeros(w.shape + w.shape[-1:], dtype=w.dtype, device=w.device)
    rows = [torch.autograd.grad(g[:, j].sum(), x, retain_graph=True, allow_unused=True)[0]
            for j in range(w.shape[-1])]
    return torch.stack([torch.zeros_like(w) if r is None else r for r in rows], 1)


def riemannian_hessian(w: torch.Tensor, X: torch.Tensor, labels: torch.Tensor,
                       act: Activation) -> torch.Tensor:
    r""":math:`P_T(\nabla^2\mathcal E-(\mathbf w^\top\nabla\mathcal E)I)P_T` at each unit row
    of ``w`` (``(B, d)`` in, ``(B, d, d)`` out), :math:`P_T=I-\mathbf w\mathbf w^\top`."""
    return sphere.riemannian_hessian(w, energy_gradient(w, X, labels, act),
                                     energy_hessian(w, X, labels, act))


@dataclass(frozen=True)
class Polished:
    """End points after Newton steps, their energies and Riemannian gradient norms, the
    tangent Hessian spectra there (ascending, ``(B, d-1)``) and whether each start took
    every step (a start whose Hessian is not negative definite, or whose energy would drop
    beyond rounding, stops where it is)."""

    w: torch.Tensor
    energy: torch.Tensor
    grad_norm: torch.Tensor
    spectra: torch.Tensor
    newton: torch.Tensor


def newton_polish(w: torch.Tensor, X: torch.Tensor, labels: torch.Tensor, act: Activation,
                  iterations: int) -> Polished:
    r"""Riemannian Newton steps :math:`\mathbf w\to(\mathbf w+\Delta)/\|\cdot\|` with
    :math:`\Delta=-H_T^{+}\xi` (:math:`H_T` the tangent Hessian of
    :func:`riemannian_hessian` on :math:`\mathbf w^\perp`, :math:`\xi` the Riemannian
    gradient): quadratic convergence to a nondegenerate maximum from a point of a gradient
    ascent. A start moves only while its tangent spectrum is negative and its energy does
    not drop beyond the rounding slack of :func:`ascend_energy`."""
    if iterations < 0:
        raise ValueError(f"iterations: {iterations} must be >= 0")
    u = torch.finfo(w.dtype).eps
    slack_factor = 8 * (X.shape[0] + X.shape[1]) * u
    moving = torch.ones(w.shape[0], dtype=torch.bool, device=w.device)
    for _ in range(iterations + 1):
        H = riemannian_hessian(w, X, labels, act)
        values, vectors = torch.linalg.eigh(H)
        normal = (vectors * w[:, :, None]).sum(1).abs().argmax(-1)
        keep = torch.ones_like(values, dtype=torch.bool)
        keep[torch.arange(w.shape[0], device=w.device), normal] = False
        spectra = values[keep].reshape(w.shape[0], -1)
        xi = tangent(w, energy_gradient(w, X, labels, act))
        e = energy(w, X, labels, act)
        if _ == iterations:
            break
        coeff = torch.where(keep, (vectors * xi[:, :, None]).sum(1) / values, 0.0)
        cand = w - (vectors * coeff[:, None, :]).sum(-1)
        cand = cand / cand.norm(dim=-1, keepdim=True)
        e_cand = energy(cand, X, labels, act)
        slack = slack_factor * energy_rounding_scale(w, X, labels, act)
        moving &= (spectra.max(-1).values < 0) & (e_cand >= e - slack)
        w = torch.where(moving[:, None], cand, w)
    return Polished(w, e, xi.norm(dim=-1), spectra, moving)


def one_sided_slopes(w: torch.Tensor, X: torch.Tensor, labels: torch.Tensor,
                     act: Activation, step: float) -> torch.Tensor:
    r"""Forward differences :math:`(\mathcal E(\mathbf w_\epsilon)-\mathcal E(\mathbf w))/
    \epsilon` along :math:`\pm` each coordinate direction's tangent part (unit length),
    :math:`\mathbf w_\epsilon` renormalised; ``(B, 2d)``. At a kink (ReLU with some
    :math:`x_i^\top\mathbf w=0`) they expose a one-sided ascent direction that the a.e.
    gradient and Hessian miss."""
    d = w.shape[-1]
    eye = torch.eye(d, dtype=w.dtype, device=w.device)
    dirs = tangent(w[:, None, :], torch.cat([eye, -eye]))  # (B, 2d, d)
    dirs = dirs / dirs.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(w.dtype).tiny)
    moved = w[:, None, :] + step * dirs
    moved = moved / moved.norm(dim=-1, keepdim=True)
    return (energy(moved, X, labels, act) - energy(w, X, labels, act)[:, None]) / step


@dataclass(frozen=True)
class MaximumTest:
    """Per end point: the largest tangent Hessian eigenvalue, the largest one-sided slope, and
    whether the point is a strict local maximum by both tests."""

    max_eigenvalue: torch.Tensor
    max_slope: torch.Tensor
    is_maximum: torch.Tensor


def strict_maximum(w: torch.Tensor, X: torch.Tensor, labels: torch.Tensor, act: Activation,
                   *, eigen_tol: float, slope_step: float, slope_tol: torch.Tensor
                   ) -> MaximumTest:
    r"""A point is a strict local maximum when every tangent Hessian eigenvalue is below
    ``-eigen_tol`` (second order; :func:`numerics.li2.landscape.tangent_spectrum` drops the
    normal direction) and no one-sided slope exceeds ``slope_tol`` (per point; it
    catches kinks, where the second-order test is void)."""
    spectra = tangent_spectrum(w, riemannian_hessian(w, X, labels, act))
    top = spectra.max(-1).values
    slope = one_sided_slopes(w, X, labels, act, slope_step).max(-1).values
    return MaximumTest(top, slope, (top < -eigen_tol) & (slope <= slope_tol))


def canonical_sign(w: torch.Tensor, s: torch.Tensor, symmetric: bool) -> tuple[torch.Tensor,
                                                                                torch.Tensor]:
    r"""With ``symmetric`` (:math:`\sigma` odd or even, so :math:`\pm\mathbf w` are one
    point of the landscape), flip each row so that :math:`\sum_gs_g\ge0`."""
    if not symmetric:
        return w, s
    sign = torch.where(s.sum(-1, keepdim=True) < 0, -1.0, 1.0).to(w.dtype)
    return w * sign, s * sign


def distinct_rows(x: torch.Tensor, tol: float) -> list[torch.Tensor]:
    """Greedy clusters of the rows of ``x`` (indices), two rows joined when their max-abs
    difference is ``<= tol``; clusters in order of first appearance."""
    clusters: list[list[int]] = []
    reps: list[torch.Tensor] = []
    for i in range(x.shape[0]):
        for members, rep in zip(clusters, reps):
            if float((x[i] - rep).abs().max()) <= tol:
                members.append(i)
                break
        else:
            clusters.append([i])
            reps.append(x[i])
    return [torch.tensor(c, dtype=torch.long) for c in clusters]
