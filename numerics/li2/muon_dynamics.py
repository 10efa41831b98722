r"""The abstract dynamics of Li2 §6 (Eq. 10) under gradient flow and under Muon, batched.

Coordinates are those of the basis :math:`\{\boldsymbol\zeta_l\}`: a node is
:math:`\boldsymbol\alpha\in\mathbb R^L` on the unit sphere, its gradient is
:math:`A(\mathbf w)\mathbf w = \boldsymbol\mu\odot\boldsymbol\alpha^{\circ2}` (assumption 2 of
Thm. 8), and every flow is projected onto the sphere,
:math:`\dot{\boldsymbol\alpha} = \mathbf d - \boldsymbol\alpha\langle\boldsymbol\alpha,
\mathbf d\rangle/\|\boldsymbol\alpha\|^2` for an update direction :math:`\mathbf d`.

* Gradient flow: :math:`\mathbf d = \boldsymbol\mu\odot\boldsymbol\alpha^{\circ2}`.
* Sequential Muon (Thm. 8): node :math:`j` moves along the last column of the polar factor of
  :math:`[\mathbf g_1, \dots, \mathbf g_{j-1}, \mathbf g_j]`, the earlier nodes' gradients at
  their vertices, :math:`\mu_{l_s}\boldsymbol\zeta_{l_s}` ("as they arise") or
  :math:`\boldsymbol\zeta_{l_s}` ("normalised"). Earlier gradients on the same mode are
  parallel, so together they act as one column :math:`d_l\boldsymbol\zeta_l` with
  :math:`d_l^2` the sum of their squared norms (the polar factor's last column
  :math:`(GG^\top)^{+1/2}\mathbf g_j` depends on :math:`G` only through :math:`GG^\top`).
* Joint Muon: all :math:`K` nodes move along the columns of :math:`\mathrm{polar}(G)`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged
from numerics.li2.extreme_values import frechet
from numerics.integrators import rk4_step
from numerics.li2.muon_projection import muon_direction
from numerics.polar import polar_svd

Field = Callable[[float, torch.Tensor], torch.Tensor]
COLUMNS = ("normalised", "as they arise")


def tangent(alpha: torch.Tensor, direction: torch.Tensor, dim: int = -1) -> torch.Tensor:
    r"""The part of ``direction`` tangent to the sphere through ``alpha`` (along ``dim``)."""
    inner = (alpha * direction).sum(dim, keepdim=True)
    return direction - alpha * inner / alpha.square().sum(dim, keepdim=True)


def eq10_gradient(mu: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    r""":math:`A(\mathbf w)\mathbf w = \sum_l\mu_l\alpha_l^2\boldsymbol\zeta_l` in coordinates."""
    return mu * alpha.square()


def gradient_field(mu: torch.Tensor) -> Field:
    """Eq. 10 projected onto the sphere (Lemma 8's flow), for ``(..., L)`` states."""
    return lambda t, alpha: tangent(alpha, eq10_gradient(mu, alpha))


def muon_field(mu: torch.Tensor, columns: torch.Tensor) -> Field:
    """A sequential node's flow under Muon, projected onto the sphere."""
    return lambda t, alpha: tangent(alpha, muon_direction(columns, eq10_gradient(mu, alpha)))


def initial_nodes(trials: int, mu: torch.Tensor, a: float, generator: torch.Generator
                  ) -> torch.Tensor:
    r"""``(trials, L)`` nodes with i.i.d. Fréchet(:math:`a`) coefficients (assumption 3 of
    Thm. 8), scaled onto the unit sphere (the flows are scale-free in direction)."""
    alpha = frechet((trials, mu.shape[-1]), a, generator, device=mu.device, dtype=mu.dtype)
    return alpha / alpha.norm(dim=-1, keepdim=True)


def priority_winner(mu: torch.Tensor, a: float, generator: torch.Generator,
                    suppression: float = 1.0) -> Callable[[torch.Tensor], torch.Tensor]:
    r"""For :func:`numerics.li2.coupon_collector.collect`: each new node draws Fréchet
    coefficients and lands on :math:`\arg\max_l\tilde\mu_l\alpha_l(0)`, with
    :math:`\tilde\mu_l = \mu_l` for unfound modes and ``suppression`` :math:`\times\mu_l` for
    found ones (1: independent nodes, Lemma 8's rule; 1/2: the proof's Muon model)."""
    def winner(found: torch.Tensor) -> torch.Tensor:
        alpha = frechet(tuple(found.shape), a, generator, device=mu.device, dtype=mu.dtype)
        scale = torch.where(found > 0, suppression * mu, mu)
        return (scale * alpha).argmax(-1)

    return winner


@dataclass(frozen=True)
class VertexRun:
    """Flows run until every trial is within ``level`` of a vertex (or ``max_time``):
    ``alpha`` the final states, ``winner`` the argmax coordinate, ``resolved`` whether
    :math:`\\max_l\\alpha_l \\ge` level was reached, ``time`` the time run."""

    alpha: torch.Tensor
    winner: torch.Tensor
    resolved: torch.Tensor
    time: float


def _check_step(dt: float, max_time: float, level: float) -> None:
    if not (dt > 0 and max_time > 0):
        raise ValueError(f"dt, max_time: {dt!r}, {max_time!r} must be > 0")
    if not 0 < level < 1:
        raise ValueError(f"level: {level!r} must lie in (0, 1)")


def run_to_vertex(field: Field, alpha0: torch.Tensor, *, dt: float, max_time: float,
                  level: float) -> VertexRun:
    """RK4 on ``field`` (one batch, a fixed step) until every trial has a coordinate
    :math:`\\ge` ``level``; the state is scaled back onto the sphere after each step (the flow
    keeps the norm; this removes the integrator's drift). Raises :class:`Diverged` on NaN."""
    _check_step(dt, max_time, level)
    alpha, time = alpha0, 0.0
    while time < max_time:
        if bool((alpha.amax(-1) >= level).all()):
            break
        alpha = rk4_step(field, time, alpha, dt)
        alpha = alpha / alpha.norm(dim=-1, keepdim=True)
        time += dt
        if not bool(torch.isfinite(alpha).all()):
            raise Diverged(f"Eq. 10 flow: non-finite state at t = {time:.4g}")
    top, winner = alpha.max(-1)
    return VertexRun(alpha, winner, top >= level, time)


@dataclass(frozen=True)
class SequentialMuon:
    """Per trial: ``nodes`` until all modes were found, ``found`` ``(R, L)`` nodes per mode;
    ``unresolved`` nodes stopped at the time limit before resting at a vertex (counted where
    their largest coordinate was)."""

    nodes: torch.Tensor
    found: torch.Tensor
    unresolved: int


def sequential_muon(mu: torch.Tensor, a: float, trials: int, generator: torch.Generator, *,
                    columns: str = "normalised", dt: float, level: float, rest_speed: float,
                    max_node_time: float, max_nodes: int) -> SequentialMuon:
    r"""Thm. 8's Muon with nodes optimised one after another: node :math:`j` starts from
    Fréchet coefficients and follows :func:`muon_field` with the earlier nodes' gradients
    (``columns``: "normalised" or "as they arise") until it rests at a vertex: a coordinate
    :math:`\ge` ``level`` and a speed :math:`\|\Delta\boldsymbol\alpha\|/dt\le`
    ``rest_speed`` (a node that starts next to an earlier node's vertex is near a fixed point
    that Muon's unit-norm update leaves at speed O(1); only a stable vertex is a rest). Then
    the next node starts. All trials step together (one batch), each on its own node."""
    if columns not in COLUMNS:
        raise ValueError(f"columns: {columns!r} is not one of {', '.join(COLUMNS)}")
    _check_step(dt, max_node_time, level)
    if not rest_speed > 0:
        raise ValueError(f"rest_speed: {rest_speed!r} must be > 0")
    L = mu.shape[-1]
    norm = mu if columns == "as they arise" else torch.ones_like(mu)
    found = torch.zeros(trials, L, dtype=mu.dtype, device=mu.device)
    nodes = torch.zeros(trials, dtype=torch.long, device=mu.device)
    alpha = initial_nodes(trials, mu, a, generator)
    clock = torch.zeros(trials, dtype=mu.dtype, device=mu.device)
    active = torch.ones(trials, dtype=torch.bool, device=mu.device)
    unresolved = 0
    while bool(active.any()):
        idx = active.nonzero()[:, 0]
        field = muon_field(mu, found[idx].sqrt() * norm)
        state = rk4_step(field, 0.0, alpha[idx], dt)
        state = state / state.norm(dim=-1, keepdim=True)
        if not bool(torch.isfinite(state).all()):
            raise Diverged("sequential Muon: non-finite node state")
        at_rest = (state - alpha[idx]).norm(dim=-1) <= rest_speed * dt
        alpha[idx] = state
        clock[idx] += dt
        top, winner = state.max(-1)
        rested = (top >= level) & at_rest
        stop = rested | (clock[idx] >= max_node_time)
        unresolved += int((stop & ~rested).sum())
        done = idx[stop]
        if done.numel() == 0:
            continue
        found[done, winner[stop]] += 1
        nodes[done] += 1
        if int(nodes.max()) > max_nodes:
            raise RuntimeError(f"max_nodes: some run needed more than {max_nodes} nodes")
        complete = (found[done] > 0).all(-1)
        active[done[complete]] = False
        restart = done[~complete]
        if restart.numel():
            alpha[restart] = initial_nodes(restart.numel(), mu, a, generator)
            clock[restart] = 0
    return SequentialMuon(nodes, found.round().to(torch.long), unresolved)


def mode_update_norms(update: torch.Tensor) -> torch.Tensor:
    r"""The update each mode receives, summed over nodes: the row norms
    :math:`\|\boldsymbol\zeta_l^\top\Delta W\|` of an ``(..., L, K)`` update."""
    return update.norm(dim=-1)


def joint_gradient(mu: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    r""":math:`G = [A(\mathbf w_1)\mathbf w_1, \dots, A(\mathbf w_K)\mathbf w_K]` for ``W``
    ``(..., L, K)`` (nodes are columns)."""
    return mu[..., :, None] * W.square()


def joint_field(mu: torch.Tensor, method: str) -> Field:
    """All ``K`` nodes at once: gradient flow, or Muon's polar factor of the joint gradient;
    each node projected onto its own sphere."""
    if method not in ("gradient", "muon"):
        raise ValueError(f"method: {method!r} is not 'gradient' or 'muon'")

    def field(t: float, W: torch.Tensor) -> torch.Tensor:
        G = joint_gradient(mu, W)
        return tangent(W, polar_svd(G) if method == "muon" else G, dim=-2)

    return field

