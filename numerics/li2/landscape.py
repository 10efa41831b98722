r"""The landscape of Li2's energy on the group task, on the unit sphere (Thm. 2, Cor. 1).

Projected gradient ascent of :math:`\mathcal E` (Eq. 7) from many random starts at once, the
Riemannian gradient and Hessian at the end points, their decomposition over real isotypic
components (purity), and the distinct local maxima found.

On the unit sphere, with :math:`P_T=I-\mathbf w\mathbf w^\top`, the Riemannian gradient is
:math:`P_T\nabla\mathcal E` and the Riemannian Hessian is
:math:`P_T\big(\nabla^2\mathcal E-(\mathbf w^\top\nabla\mathcal E)\,I\big)P_T` restricted to
the tangent space :math:`\mathbf w^\perp` (dimension :math:`2M-1`). Gradients and Hessians are
torch autograd of :func:`numerics.li2.group_task.group_energy`; nothing uses a closed form.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics import sphere
from numerics.activations import Activation
from numerics.li2.energy import sphere_step, tangent
from numerics.errors import Diverged, check_ascent_settings
from numerics.li2.group_task import GroupTask, group_energy, inversion


def energy_and_riemannian_gradient(w: torch.Tensor, task: GroupTask,
                                   act: Activation) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\mathcal E` and :math:`P_T\nabla\mathcal E` at unit rows ``w`` (``(B, 2M)``)."""
    w = w.detach().requires_grad_(True)
    e = group_energy(w, task, act)
    (g,) = torch.autograd.grad(e.sum(), w)
    return e.detach(), tangent(w.detach(), g)


def energy_hessian(w: torch.Tensor, task: GroupTask, act: Activation) -> torch.Tensor:
    r""":math:`\nabla^2\mathcal E` in :math:`\mathbb R^{2M}` at each row of ``w``
    (``(B, 2M)`` in, ``(B, 2M, 2M)`` out), by forward-over-reverse autograd."""
    def single(x: torch.Tensor) -> torch.Tensor:
        return group_energy(x, task, act)

    return torch.func.vmap(torch.func.hessian(single))(w)


def energy_hessian_by_rows(w: torch.Tensor, task: GroupTask, act: Activation
                           ) -> torch.Tensor:
    r""":math:`\nabla^2\mathcal E` as :func:`energy_hessian`, by reverse-over-reverse autograd:
    one backward pass per coordinate, all rows of the batch at once (they do not interact).
    Equal to :func:`energy_hessian` to rounding; it avoids ``torch.func``, whose first use
    imports ``torch._dynamo`` (about a second of CPU per process)."""
    x = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(group_energy(x, task, act).sum(), x, create_graph=True)
    rows = [torch.autograd.grad(g[:, j].sum(), x, retain_graph=True)[0]
            for j in range(w.shape[-1])]
    return torch.stack(rows, 1)


def riemannian_hessian(w: torch.Tensor, task: GroupTask, act: Activation,
                       hessian: Callable[[torch.Tensor, GroupTask, Activation],
                                         torch.Tensor] = energy_hessian) -> torch.Tensor:
    r""":math:`P_T(\nabla^2\mathcal E-(\mathbf w^\top\nabla\mathcal E)I)P_T` at each unit row
    of ``w`` (``(B, 2M)`` in, ``(B, 2M, 2M)`` out), by autograd (``hessian``: how
    :math:`\nabla^2\mathcal E` is taken, :func:`energy_hessian` or
    :func:`energy_hessian_by_rows`)."""
    H = hessian(w, task, act)
    x = w.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(group_energy(x, task, act).sum(), x)
    return sphere.riemannian_hessian(w.detach(), g, H)


def tangent_spectrum(w: torch.Tensor, hessian: torch.Tensor) -> torch.Tensor:
    r"""Eigenvalues of the Riemannian Hessian on :math:`\mathbf w^\perp`, ascending
    (``(B, 2M-1)``): the eigenvalue of :math:`P_THP_T` whose eigenvector is :math:`\pm\mathbf w`
    (it is 0, from the projection) is dropped."""
    values, vectors = torch.linalg.eigh(hessian)
    normal = (vectors * w[:, :, None]).sum(1).abs().argmax(-1)
    keep = torch.ones_like(values, dtype=torch.bool)
    keep[torch.arange(w.shape[0], device=w.device), normal] = False
    return values[keep].reshape(w.shape[0], -1)


@dataclass(frozen=True)
class AscentResult:
    """End points ``w`` (``(B, 2M)``, unit rows), their energies and Riemannian gradient
    norms, the steps taken, whether each met the gradient tolerance, and the largest decrease
    of E met by each start along the way (0 for a monotone ascent)."""

    w: torch.Tensor
    energy: torch.Tensor
    grad_norm: torch.Tensor
    steps: int
    converged: torch.Tensor
    largest_decrease: torch.Tensor


def ascend_sphere(w0: torch.Tensor, task: GroupTask, act: Activation, lr: float,
                  max_steps: int, gtol: float) -> AscentResult:
    r"""Projected gradient ascent :math:`\mathbf w\leftarrow(\mathbf w+\mathrm{lr}\,P_T\nabla
    \mathcal E)/\|\cdot\|` from the rows of ``w0`` (normalised first), all starts in one batch,
    until every Riemannian gradient norm is at most ``gtol`` or ``max_steps``; raises
    :class:`Diverged` on a non-finite value."""
    check_ascent_settings(lr, max_steps, gtol)
    w = w0 / w0.norm(dim=-1, keepdim=True)
    e, g = energy_and_riemannian_gradient(w, task, act)
    decrease = torch.zeros_like(e)
    steps = 0
    while steps < max_steps and not bool((g.norm(dim=-1) <= gtol).all()):
        w = sphere_step(w, g, lr)
        e_new, g = energy_and_riemannian_gradient(w, task, act)
        if not (torch.isfinite(w).all() and torch.isfinite(e_new).all()):
            raise Diverged(f"projected ascent produced a non-finite value at step {steps + 1}")
        decrease = torch.maximum(decrease, e - e_new)
        e = e_new
        steps += 1
    norm = g.norm(dim=-1)
    return AscentResult(w, e, norm, steps, norm <= gtol, decrease)


def purity(x: torch.Tensor, projectors: torch.Tensor) -> torch.Tensor:
    r"""Fraction of :math:`\|\mathbf x\|^2` in each component, :math:`\|\Pi_k\mathbf x\|^2/
    \|\mathbf x\|^2` (``x``: ``(B, M)``, ``projectors``: ``(K, M, M)`` orthogonal projectors;
    out ``(B, K)``)."""
    parts = torch.einsum("kab,nb->nka", projectors, x)
    return parts.square().sum(-1) / x.square().sum(-1, keepdim=True)


def form_residual(w: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r"""How far the second block is from :math:`\pm P\mathbf u`:
    :math:`\min_\pm\|\mathbf w_2\mp P\mathbf u\|/\|\mathbf u\|` for :math:`\mathbf w=
    [\mathbf u;\mathbf w_2]` (Thm. 2's form :math:`[\mathbf u;\pm P\mathbf u]`, real domain)."""
    M = task.M
    u, second = w[:, :M], w[:, M:]
    pu = inversion(u, task)
    gap = torch.minimum((second - pu).norm(dim=-1), (second + pu).norm(dim=-1))
    return gap / u.norm(dim=-1)


@dataclass(frozen=True)
class MaximumClass:
    """One distinct local maximum found: the ascent end points with the same dominant real
    isotypic component and the same energy (within ``energy_rtol``).

    ``component``: the dominant component's index (``-1`` without projectors); ``energy``:
    the mean energy of the members and ``energy_spread`` their largest deviation from it;
    ``members``: the start indices; ``grad_norm``: the largest Riemannian gradient norm;
    ``purity_u`` / ``purity_v``: the smallest fraction of the first / second block in the
    component; ``form_residual``: (min, max) of :func:`form_residual`; ``spectra``: tangent
    Hessian eigenvalues at up to ``hessian_samples`` members (``(S, 2M-1)``); ``nullity``:
    per sampled member, eigenvalues with :math:`|\\lambda|\\le` ``null_tol`` times the largest
    :math:`|\\lambda|`; ``max_eigenvalue``: the largest one over the sampled members;
    ``null_threshold``: the smallest of the thresholds used (an eigenvalue at most this in
    absolute value counts as zero).
    """

    component: int
    energy: float
    energy_spread: float
    members: torch.Tensor
    grad_norm: float
    purity_u: float
    purity_v: float
    form_residual: tuple[float, float]
    representative: torch.Tensor
    spectra: torch.Tensor
    nullity: tuple[int, ...]
    max_eigenvalue: float
    null_threshold: float

    @property
    def is_maximum(self) -> bool:
        """Second-order test: no tangent Hessian eigenvalue above the null threshold."""
        return self.max_eigenvalue <= self.null_threshold


@dataclass(frozen=True)
class Landscape:
    """What random-start ascent found: the per-start ascent result and purities
    (``purity_u``, ``purity_v``: ``(B, K)`` or None), :func:`form_residual` of each end
    point (``form``), each start's class index (``-1`` where
    it did not converge; CPU), and the distinct critical points reached, highest energy first
    (each says whether it passed the second-order test, :attr:`MaximumClass.is_maximum`)."""

    ascent: AscentResult
    purity_u: torch.Tensor | None
    purity_v: torch.Tensor | None
    form: torch.Tensor
    label: torch.Tensor
    classes: tuple[MaximumClass, ...]


def _split_by_energy(energy: torch.Tensor, members: torch.Tensor, rtol: float
                     ) -> list[torch.Tensor]:
    order = energy[members].argsort()
    sorted_members, sorted_e = members[order], energy[members][order]
    scale = sorted_e.abs().clamp(min=torch.finfo(energy.dtype).tiny)
    cut = (sorted_e[1:] - sorted_e[:-1]) > rtol * scale[1:]
    groups, start = [], 0
    for i in cut.nonzero().flatten().tolist():
        groups.append(sorted_members[start:i + 1])
        start = i + 1
    groups.append(sorted_members[start:])
    return groups


def ascend_in_chunks(w0: torch.Tensor, task: GroupTask, act: Activation, lr: float,
                     max_steps: int, gtol: float, chunk_elements: int = 2**20) -> AscentResult:
    """:func:`ascend_sphere` on consecutive chunks of the starts, each of about
    ``chunk_elements / n`` rows (the starts do not interact, so this changes nothing but the
    memory traffic: the ``n x chunk`` intermediates stay in cache). ``steps`` is the largest
    number of steps any chunk took."""
    if chunk_elements < 1:
        raise ValueError(f"chunk_elements: {chunk_elements} must be >= 1")
    size = max(1, chunk_elements // task.n)
    parts = [ascend_sphere(w0[i:i + size], task, act, lr, max_steps, gtol)
             for i in range(0, w0.shape[0], size)]
    return AscentResult(torch.cat([p.w for p in parts]), torch.cat([p.energy for p in parts]),
                        torch.cat([p.grad_norm for p in parts]), max(p.steps for p in parts),
                        torch.cat([p.converged for p in parts]),
                        torch.cat([p.largest_decrease for p in parts]))


def find_local_maxima(task: GroupTask, act: Activation, starts: int, generator: torch.Generator,
                      *, lr: float, max_steps: int, gtol: float,
                      projectors: torch.Tensor | None = None, energy_rtol: float = 1e-6,
                      hessian_samples: int = 3, null_tol: float | None = None,
                      dtype: torch.dtype = torch.float64,
                      chunk_elements: int = 2**20,
                      ascend: Callable[..., AscentResult] | None = None,
                      hessian: Callable[[torch.Tensor, GroupTask, Activation],
                                        torch.Tensor] = energy_hessian) -> Landscape:
    r"""Ascend from ``starts`` Gaussian starts (drawn on the CPU from ``generator``, then moved
    to the task's device) and group the converged end points into distinct maxima.

    Two end points are the same maximum when their dominant real isotypic component (argmax
    of the purity of the whole :math:`\mathbf w`, both blocks) agrees and their energies agree
    to ``energy_rtol``. This is the coarsest identification the theory supports: within one
    component the maxima of Thm. 2 form continuous families (the flat directions of Cor. 1),
    so points are not compared coordinate by coordinate. ``null_tol`` defaults to
    :math:`\sqrt u` of ``dtype`` (relative to the largest :math:`|\lambda|`). The starts are
    ascended in chunks (:func:`ascend_in_chunks`; on CUDA pass a large ``chunk_elements``),
    or by ``ascend(w0, task, act, lr, max_steps, gtol, chunk_elements)`` when given (e.g.
    :func:`numerics.li2.batched_ascent.ascend_sphere_active`, the same step and per-start stopping
    rule with an active set). ``hessian`` is passed to :func:`riemannian_hessian`.
    """
    if starts < 1:
        raise ValueError(f"starts: {starts} must be >= 1")
    if hessian_samples < 1:
        raise ValueError(f"hessian_samples: {hessian_samples} must be >= 1")
    null_tol = torch.finfo(dtype).eps ** 0.5 if null_tol is None else null_tol
    M = task.M
    w0 = torch.randn(starts, 2 * M, generator=generator, dtype=torch.float64)
    result = (ascend or ascend_in_chunks)(w0.to(device=task.device, dtype=dtype), task, act, lr,
                                          max_steps, gtol, chunk_elements)
    w = result.w
    pu = pv = None
    if projectors is not None:
        projectors = projectors.to(device=w.device, dtype=dtype)
        pu, pv = purity(w[:, :M], projectors), purity(w[:, M:], projectors)
        whole = (pu * w[:, :M].square().sum(-1, keepdim=True)
                 + pv * w[:, M:].square().sum(-1, keepdim=True))
        component = whole.argmax(-1)
    else:
        component = torch.full((starts,), -1, dtype=torch.long, device=w.device)
    residual = form_residual(w, task)
    classes: list[MaximumClass] = []
    converged = result.converged.nonzero().flatten()
    for comp in component[converged].unique().tolist():
        in_comp = converged[component[converged] == comp]
        for members in _split_by_energy(result.energy, in_comp, energy_rtol):
            sample = members[:hessian_samples]
            spectra = tangent_spectrum(w[sample], riemannian_hessian(w[sample], task, act, hessian))
            scale = spectra.abs().amax(-1, keepdim=True)
            e = result.energy[members]
            classes.append(MaximumClass(
                component=comp, energy=float(e.mean()),
                energy_spread=float((e - e.mean()).abs().max()), members=members.cpu(),
                grad_norm=float(result.grad_norm[members].max()),
                purity_u=float(pu[members, comp].min()) if pu is not None else float("nan"),
                purity_v=float(pv[members, comp].min()) if pv is not None else float("nan"),
                form_residual=(float(residual[members].min()), float(residual[members].max())),
                representative=w[members[0]].cpu(), spectra=spectra.cpu(),
                nullity=tuple((spectra.abs() <= null_tol * scale).sum(-1).tolist()),
                max_eigenvalue=float(spectra.max()),
                null_threshold=null_tol * float(scale.min())))
    classes.sort(key=lambda c: (-c.energy, c.component))
    label = torch.full((starts,), -1, dtype=torch.long)
    for i, c in enumerate(classes):
        label[c.members] = i
    return Landscape(result, pu, pv, residual, label, tuple(classes))
