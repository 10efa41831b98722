r"""Projected ascent of Li2's energy (Eq. 7) on the unit sphere from many starts at once, with
an active set: a start leaves the batch as soon as it meets the gradient tolerance, so the late
steps cost only the starts still moving.

It is :func:`numerics.li2.landscape.ascend_sphere` run on each start alone (the same step, the same
stopping rule per start), computed differently:

* **The Cayley grid.** The sample :math:`(h_1,h_2)` sits in cell :math:`(a,c)=(h_1,h_1h_2)` of
  an :math:`M\times M` grid, so its second operand is :math:`h_2=a^{-1}c` and its target is
  the column :math:`c`. For :math:`\mathbf w=[\mathbf u;\mathbf v]` the pre-activations are
  :math:`z_{ac}=u_a+v_{a^{-1}c}` (one gather of :math:`\mathbf v`), and
  :math:`\tilde Y^\top\sigma(X\mathbf w)` is a sum over the rows of the grid:
  :math:`r_c=P_c-\tfrac{n_c}{n}\sum_{c'}P_{c'}` with :math:`P_c=\sum_a m_{ac}\sigma(z_{ac})`
  (:math:`m_{ac}=1` where the pair is in the task, 0 where a subset left it out; :math:`n_c`
  the samples with target :math:`c`). :math:`\mathcal E=\tfrac12\sum_cr_c^2`.
* **The gradient by the chain rule** (checked against autograd of
  :func:`numerics.li2.group_task.group_energy` in the tests):
  :math:`\partial\mathcal E/\partial P_c=r_c-\sum_{c'}\tfrac{n_{c'}}{n}r_{c'}=:\rho_c`, so
  :math:`\partial\mathcal E/\partial z_{ac}=m_{ac}\sigma'(z_{ac})\rho_c`, and
  :math:`\partial_{u_a}\mathcal E=\sum_c\partial\mathcal E/\partial z_{ac}`,
  :math:`\partial_{v_b}\mathcal E=\sum_{(a,c):\,a^{-1}c=b}\partial\mathcal E/\partial z_{ac}`
  (one scatter-add).

Against :func:`numerics.li2.group_task.group_energy` with autograd this replaces two gathers, a
scatter by target, a gather by target and autograd's bookkeeping by one gather, row sums and
one scatter: about 4.5x less CPU time per start-step on :math:`\mathbb Z_{71}`
(benchmarks/README.md).
Starts are evaluated in chunks of about ``chunk_elements / M^2`` so that the grid stays in
cache.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.activations import Activation
from numerics.li2.energy import sphere_step, tangent
from numerics.errors import Diverged, check_ascent_settings
from numerics.li2.group_task import GroupTask
from numerics.li2.landscape import AscentResult


@dataclass(frozen=True)
class CayleyGrid:
    r"""The task on the grid :math:`(a, c) = (h_1, h_1h_2)`: ``partner`` (``M*M``, long) is
    :math:`a^{-1}c` for each cell, row-major; ``weight`` (``(M, M, 1)``) is :math:`m_{ac}`, or
    None when every pair is in the task; ``freq`` (``(M, 1)``) is :math:`n_c/n`."""

    M: int
    partner: torch.Tensor
    weight: torch.Tensor | None
    freq: torch.Tensor


def cayley_grid(task: GroupTask, dtype: torch.dtype = torch.float64) -> CayleyGrid:
    """The grid of ``task`` (its samples, table and inverse map), on the task's device."""
    M = task.M
    rows = torch.arange(M, device=task.device)
    partner = task.table[task.inverse[:, None].expand(M, M), rows[None, :].expand(M, M)]
    weight = None
    if not task.full:
        weight = torch.zeros(M, M, 1, dtype=dtype, device=task.device)
        weight[task.left, task.target] = 1.0
    freq = (task.counts.to(dtype) / task.n)[:, None]
    return CayleyGrid(M, partner.reshape(-1), weight, freq)


def grid_energy_and_gradient(w: torch.Tensor, grid: CayleyGrid, act: Activation
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\mathcal E` and :math:`\nabla\mathcal E` (Euclidean, in :math:`\mathbb R^{2M}`)
    at each row of ``w`` (``(B, 2M)``), by the chain rule on the Cayley grid (module
    docstring)."""
    M = grid.M
    if w.dim() != 2 or w.shape[1] != 2 * M:
        raise ValueError(f"w: needs shape (B, 2M) = (B, {2 * M}), got {tuple(w.shape)}")
    B = w.shape[0]
    W = w.T.contiguous()  # (2M, B): the batch last, so gathers move contiguous rows
    z = W[M:].index_select(0, grid.partner).view(M, M, B)
    z.add_(W[:M, None, :])
    s = act(z)
    if grid.weight is not None:
        s = s * grid.weight
    P = s.sum(0)  # (M, B): column c
    r = P - grid.freq * P.sum(0, keepdim=True)
    energy = 0.5 * r.square().sum(0)
    rho = r - (grid.freq * r).sum(0, keepdim=True)
    dz = act.derivative(z).mul_(rho)
    if grid.weight is not None:
        dz.mul_(grid.weight)
    grad = torch.zeros_like(W)
    torch.sum(dz, 1, out=grad[:M])
    grad[M:].index_add_(0, grid.partner, dz.view(M * M, B))
    return energy, grad.T


@dataclass(frozen=True)
class ActiveAscentResult(AscentResult):
    """:class:`~numerics.li2.landscape.AscentResult` (``steps``: the most steps any start took)
    plus ``start_steps``, the steps each start took (``(B,)``)."""

    start_steps: torch.Tensor


def ascend_sphere_active(w0: torch.Tensor, task: GroupTask, act: Activation, lr: float,
                         max_steps: int, gtol: float, chunk_elements: int = 2**18
                         ) -> ActiveAscentResult:
    r"""Projected gradient ascent :math:`\mathbf w\leftarrow(\mathbf w+\mathrm{lr}\,P_T\nabla
    \mathcal E)/\|\cdot\|` from each row of ``w0`` (normalised first) until its Riemannian
    gradient norm is at most ``gtol`` or it has taken ``max_steps`` steps; each start stops on
    its own (as :func:`~numerics.li2.landscape.ascend_sphere` on that start alone). Raises
    :class:`Diverged` on a non-finite value."""
    if w0.dim() != 2 or w0.shape[1] != 2 * task.M:
        raise ValueError(f"w0: needs shape (B, 2M) = (B, {2 * task.M}), got "
                         f"{tuple(w0.shape)}")
    check_ascent_settings(lr, max_steps, gtol)
    if chunk_elements < 1:
        raise ValueError(f"chunk_elements: {chunk_elements} must be >= 1")
    grid = cayley_grid(task, w0.dtype)
    size = max(1, chunk_elements // task.M**2)

    def evaluate(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Energies and Riemannian gradients of the unit rows ``w``, in chunks."""
        parts = [grid_energy_and_gradient(w[i:i + size], grid, act)
                 for i in range(0, w.shape[0], size)]
        energy = torch.cat([p[0] for p in parts])
        return energy, tangent(w, torch.cat([p[1] for p in parts]))

    w = w0 / w0.norm(dim=-1, keepdim=True)
    e, g = evaluate(w)
    norm = g.norm(dim=-1)
    decrease = torch.zeros_like(e)
    steps = torch.zeros(w.shape[0], dtype=torch.long, device=w.device)
    live = (~(norm <= gtol)).nonzero().flatten()  # NaN norms stay live and raise below
    for step in range(1, max_steps + 1):
        if live.numel() == 0:
            break
        w_live = sphere_step(w[live], g[live], lr)
        e_live, g_live = evaluate(w_live)
        if not (torch.isfinite(w_live).all() and torch.isfinite(e_live).all()):
            raise Diverged(f"projected ascent produced a non-finite value at step {step}")
        decrease[live] = torch.maximum(decrease[live], e[live] - e_live)
        w[live], e[live], g[live] = w_live, e_live, g_live
        norm_live = g_live.norm(dim=-1)
        norm[live] = norm_live
        steps[live] += 1
        live = live[~(norm_live <= gtol)]
    return ActiveAscentResult(w, e, norm, int(steps.max()), norm <= gtol, decrease, steps)
