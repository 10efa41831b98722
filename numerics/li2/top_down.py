r"""Top-down modulation (Li2 Thm. 7) in torch: a hidden layer that learned some irreps, the
least-squares top layer on it, the residual, and ascent of the modified energy it induces.

On the full group task (:mod:`numerics.li2.group_task`), with real isotypic projectors
:math:`\Pi_j` of the learned components given (e.g.
:func:`verify.claims.li2._groups.float_projectors`):

* nodes :math:`[\mathbf b_a;\pm P\mathbf b_c]` for an orthonormal basis :math:`\{\mathbf b_a\}`
  of each learned :math:`\mathcal H_j` (:func:`subset_nodes`);
* :math:`\hat Y=\tilde F V` with :math:`V=(\tilde F^\top\tilde F+\eta I)^{-1}\tilde F^\top\tilde Y`,
  or for :math:`\eta=0` the projection of :math:`\tilde Y` on the column space of
  :math:`\tilde F` (:func:`top_layer_fit`), and :math:`R=\tilde Y-\hat Y`;
* :math:`\mathcal E_{\mathcal S}(\mathbf w)=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2`
  (:func:`modified_energy`, any :math:`\sigma`); for :math:`\sigma(x)=x^2` its gradient,
  projected ascent on the unit sphere and Riemannian Hessian in closed form
  (:func:`modified_energy_and_gradient`, :func:`ascend_modified`,
  :func:`modified_riemannian_hessian`; the tests compare them with autograd).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics import solves, sphere
from numerics.activations import Activation
from numerics.li2.energy import sphere_step, tangent
from numerics.errors import Diverged, check_ascent_settings
from numerics.li2.group_task import GroupTask, dense_inputs, first_layer, inversion
from numerics.li2.landscape import AscentResult


def component_basis(projector: torch.Tensor) -> torch.Tensor:
    r"""Orthonormal basis (rows) of the range of a real orthogonal projector (its
    eigenvectors with eigenvalue above 1/2; the others are 0 up to rounding)."""
    values, vectors = torch.linalg.eigh(projector)
    return vectors[:, values > 0.5].T


def subset_nodes(projectors: torch.Tensor, task: GroupTask) -> torch.Tensor:
    r"""``(K, 2M)`` nodes :math:`[\mathbf b_a;\pm P\mathbf b_c]`, all pairs :math:`(a,c)` of
    basis vectors of each learned component (``projectors``: ``(J, M, M)``), both signs."""
    if projectors.dim() != 3 or projectors.shape[1:] != (task.M, task.M):
        raise ValueError(f"projectors: needs shape (J, M, M) with M = {task.M}, got "
                         f"{tuple(projectors.shape)}")
    nodes = []
    for P in projectors:
        B = component_basis(P)
        PB = inversion(B, task)
        D = B.shape[0]
        first = B[:, None, :].expand(D, D, -1)
        second = PB[None, :, :].expand(D, D, -1)
        for sign in (1.0, -1.0):
            nodes.append(torch.cat([first, sign * second], -1).reshape(D * D, -1))
    return torch.cat(nodes)


def centred_labels(task: GroupTask, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r""":math:`\tilde Y=P_1^\perp Y` (``n x M``)."""
    Y = torch.nn.functional.one_hot(task.target, task.M).to(dtype)
    return Y - Y.mean(0, keepdim=True)


@dataclass(frozen=True)
class TopLayerFit:
    r"""``fitted`` :math:`\hat Y`, ``residual`` :math:`R=\tilde Y-\hat Y` (both ``n x M``),
    the singular values of :math:`\tilde F` and the rank used (``eta = 0``) or ``None``."""

    fitted: torch.Tensor
    residual: torch.Tensor
    singular_values: torch.Tensor
    rank: int | None


def top_layer_fit(W: torch.Tensor, task: GroupTask, act: Activation, eta: float = 0.0,
                  rank_rtol: float | None = None) -> TopLayerFit:
    r"""The top layer on the nodes ``W`` (``(K, 2M)``). ``eta > 0``: the ridge solution;
    ``eta = 0``: the orthogonal projection on the left singular vectors of :math:`\tilde F`
    whose singular value exceeds ``rank_rtol`` times the largest (default :math:`\sqrt u`:
    the nodes' exact rank deficiency leaves singular values at rounding level,
    :math:`\sim n u` relative, and the others are :math:`O(1)`)."""
    if eta < 0:
        raise ValueError(f"eta: {eta} must be >= 0")
    F = act(first_layer(W, task)).T
    Ft = F - F.mean(0, keepdim=True)
    Yt = centred_labels(task, W.dtype)
    U, s, _ = torch.linalg.svd(Ft, full_matrices=False)
    if eta > 0:
        eye = torch.eye(Ft.shape[1], dtype=Ft.dtype, device=Ft.device)
        fitted = Ft @ solves.solve_spd(Ft.T @ Ft + eta * eye, Ft.T @ Yt, name="ridge matrix")
        return TopLayerFit(fitted, Yt - fitted, s, None)
    rtol = torch.finfo(W.dtype).eps ** 0.5 if rank_rtol is None else rank_rtol
    rank = int((s > rtol * s[0]).sum())
    Uk = U[:, :rank]
    fitted = Uk @ (Uk.T @ Yt)
    return TopLayerFit(fitted, Yt - fitted, s, rank)


def modified_energy(w: torch.Tensor, task: GroupTask, residual: torch.Tensor,
                    act: Activation) -> torch.Tensor:
    r""":math:`\mathcal E_{\mathcal S}(\mathbf w)=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2`, one
    value per row of ``w`` (``(..., 2M)`` in, ``(...)`` out)."""
    if w.shape[-1] != 2 * task.M:
        raise ValueError(f"w: last dimension {w.shape[-1]} must be 2M = {2 * task.M}")
    f = act(first_layer(w, task))  # (..., n)
    return 0.5 * (f @ residual).square().sum(-1)


def modified_energy_and_gradient(w: torch.Tensor, task: GroupTask, residual: torch.Tensor
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\mathcal E_{\mathcal S}` and :math:`\nabla\mathcal E_{\mathcal S}=X^\top(2\mathbf z
    \circ RR^\top\mathbf z^{\circ2})` (the chain rule, :math:`\mathbf z=X\mathbf w`,
    :math:`\sigma(x)=x^2`; the tests compare it with autograd) for rows ``w`` (``(B, 2M)``):
    :math:`X^\top` is a scatter-add over the operands of each sample."""
    M = task.M
    z = first_layer(w, task)  # (B, n)
    q = z.square() @ residual  # (B, M)
    per_sample = 2 * z * (q @ residual.T)  # (B, n)
    g = torch.zeros_like(w)
    g[:, :M] = g[:, :M].index_add(1, task.left, per_sample)
    g[:, M:] = g[:, M:].index_add(1, task.right, per_sample)
    return 0.5 * q.square().sum(-1), g


def _energy_and_riemannian_gradient(w: torch.Tensor, task: GroupTask, residual: torch.Tensor
                                    ) -> tuple[torch.Tensor, torch.Tensor]:
    e, g = modified_energy_and_gradient(w, task, residual)
    return e, tangent(w, g)


def ascend_modified(w0: torch.Tensor, task: GroupTask, residual: torch.Tensor, lr: float,
                    max_steps: int, gtol: float) -> AscentResult:
    r"""Projected gradient ascent of :math:`\mathcal E_{\mathcal S}` (:math:`\sigma(x)=x^2`) on
    the unit sphere from the
    rows of ``w0`` (normalised first); a row stops once its Riemannian gradient norm is at
    most ``gtol``, the whole run after ``max_steps`` (``steps``: the steps the slowest row
    took); raises :class:`Diverged` on a non-finite value."""
    check_ascent_settings(lr, max_steps, gtol)
    w = w0 / w0.norm(dim=-1, keepdim=True)
    e, g = _energy_and_riemannian_gradient(w, task, residual)
    decrease = torch.zeros_like(e)
    active = g.norm(dim=-1) > gtol
    steps = 0
    while steps < max_steps and bool(active.any()):
        # Only the starts not yet converged move: the others are done, and the slow tail
        # (starts near a critical point of E_S) then costs little per step.
        idx = active.nonzero().flatten()
        w_new = sphere_step(w[idx], g[idx], lr)
        e_new, g_new = _energy_and_riemannian_gradient(w_new, task, residual)
        if not (torch.isfinite(w_new).all() and torch.isfinite(e_new).all()):
            raise Diverged(f"projected ascent produced a non-finite value at step {steps + 1}")
        decrease[idx] = torch.maximum(decrease[idx], e[idx] - e_new)
        w[idx], e[idx], g[idx] = w_new, e_new, g_new
        active[idx] = g_new.norm(dim=-1) > gtol
        steps += 1
    norm = g.norm(dim=-1)
    return AscentResult(w, e, norm, steps, norm <= gtol, decrease)


def modified_riemannian_hessian(w: torch.Tensor, task: GroupTask, residual: torch.Tensor
                                ) -> torch.Tensor:
    r""":math:`P_T(\nabla^2\mathcal E_{\mathcal S}-(\mathbf w^\top\nabla\mathcal E_{\mathcal S})I)
    P_T` at each unit row of ``w`` (``(B, 2M)`` in, ``(B, 2M, 2M)`` out), for
    :math:`\sigma(x)=x^2`. With :math:`\mathbf z=X\mathbf w`, :math:`A=RR^\top`:
    :math:`\nabla\mathcal E_{\mathcal S}=X^\top(2\mathbf z\circ A\mathbf z^{\circ2})` and
    :math:`\nabla^2\mathcal E_{\mathcal S}=X^\top[\mathrm{diag}(2A\mathbf z^{\circ2})+
    \mathrm{diag}(2\mathbf z)A\,\mathrm{diag}(2\mathbf z)]X` (the chain rule; the tests
    compare it with autograd), with dense :math:`X` (``n x 2M``)."""
    X, _ = dense_inputs(task, w.dtype)
    z = w @ X.T  # (B, n)
    Az2 = (z.square() @ residual) @ residual.T  # A z^2, (B, n)
    g = (2 * z * Az2) @ X
    J = (2 * z)[:, :, None] * X  # diag(2z) X, (B, n, 2M)
    RJ = residual.T @ J  # (B, M, 2M)
    H = RJ.transpose(-1, -2) @ RJ + X.T @ (2 * Az2[:, :, None] * X)
    return sphere.riemannian_hessian(w, g, H)


def component_mass(w: torch.Tensor, projectors: torch.Tensor, M: int) -> torch.Tensor:
    r"""Fraction of :math:`\|\mathbf w\|^2` in each real isotypic component, both blocks:
    :math:`(\|\Pi_j\mathbf w_1\|^2+\|\Pi_j\mathbf w_2\|^2)/\|\mathbf w\|^2` (``(B, J)``; the
    second block of :math:`[\mathbf u;P\mathbf v]` lies in the component of :math:`\mathbf v`,
    since :math:`P` maps each real isotypic component to itself)."""
    parts = torch.einsum("jab,nb->nja", projectors, w[:, :M]).square().sum(-1)
    parts = parts + torch.einsum("jab,nb->nja", projectors, w[:, M:]).square().sum(-1)
    return parts / w.square().sum(-1, keepdim=True)


def activation_matrix(w: torch.Tensor, task: GroupTask, act: Activation) -> torch.Tensor:
    r""":math:`S_{ij}=\sigma(u_i+v_j)` for :math:`\mathbf w=[\mathbf u;P\mathbf v]` (Eq. 13),
    i.e. :math:`\mathbf v=P\mathbf w_2`; ``(..., 2M)`` in, ``(..., M, M)`` out."""
    M = task.M
    u, v = w[..., :M], inversion(w[..., M:], task)
    return act(u[..., :, None] + v[..., None, :])


def block_sums(S: torch.Tensor, Q: torch.Tensor, blocks: list[list[list[int]]]
               ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""For each irrep :math:`k` (``blocks[k]``: for each copy :math:`r` the columns of
    :math:`Q` of block :math:`(k,r)`), :math:`T_k=\sum_r\hat S_{k,r}` with
    :math:`\hat S=Q^*SQ`; returns :math:`\mathrm{tr}\,T_k` and :math:`\|T_k\|_F^2`
    (``(..., K)`` each). ``Q`` is the complex unitary of Eq. 8."""
    Sh = Q.conj().T @ S.to(Q.dtype) @ Q
    traces, frob = [], []
    for copies in blocks:
        T = sum(Sh[..., c, :][..., :, c] for c in (torch.tensor(c, device=Q.device)
                                                    for c in copies))
        traces.append(torch.diagonal(T, dim1=-2, dim2=-1).sum(-1))
        frob.append(T.abs().square().sum((-2, -1)))
    return torch.stack(traces, -1), torch.stack(frob, -1)
