r"""The training loss of Li2's two-layer :math:`x^2` network as a function of its weights, its
Hessian's top eigenvalues (Lanczos on Hessian-vector products in float64) and a sharpness that
the network's rescaling symmetries leave unchanged (§8 of the paper: "sharp optima correspond
to overfit random features").

The loss is the author's class-centred MSE (verify/claims/li2/SOURCES.md §6.3) on the training
pairs :math:`(h_1,h_2)`, without weight decay:
:math:`L(\theta)=\frac1n\sum_i\|P\mathbf o_i-(\mathbf e_{y_i}-\tfrac1M\mathbf 1)\|^2`,
:math:`\mathbf o_i=V^\top\sigma(W^\top\mathbf x_i)`, :math:`P=I-\tfrac1M\mathbf 1\mathbf 1^\top`,
:math:`\theta=(W,V)` flattened (``W`` ``(2M, K)`` first, then ``V`` ``(K, M)``).

Sharpness is not a property of the function the network computes: two symmetries move
:math:`\lambda_{\max}(\nabla^2L)` while the outputs stay.

* Per node, :math:`(\mathbf w_j,\mathbf v_j)\to(a\mathbf w_j,\mathbf v_j/a^2)` leaves every
  output unchanged (:math:`\sigma(az)=a^2\sigma(z)`). :func:`balance` picks the
  representative of smallest :math:`\|\theta\|`, :math:`a^6=2\|\mathbf v_j\|^2/
  \|\mathbf w_j\|^2`, i.e. :math:`\|\mathbf w_j\|^2=2\|\mathbf v_j\|^2` (the relation gradient
  flow conserves up to its initial offset).
* The network is 3-homogeneous, :math:`\mathbf o(c\theta)=c^3\mathbf o(\theta)`. Euler's
  identity :math:`J_i\theta=3\mathbf o_i` gives, for the Gauss-Newton part
  :math:`\frac2n\sum_iJ_i^\top PJ_i` of the Hessian, the floor
  :math:`\lambda_{\max}\ge\theta^\top H\theta/\|\theta\|^2=18\,\overline{\|P\mathbf o\|^2}/
  \|\theta\|^2`, set by the outputs alone. :func:`normalised_sharpness` is
  :math:`\lambda_{\max}\|\theta\|^2/(18\,\overline{\|P\mathbf o\|^2})`: dimensionless, 1 when
  the sharpest direction is the radial one, and unchanged to leading order when
  :math:`\theta\to c\theta` at fixed outputs (the Gauss-Newton part scales as
  :math:`c^{-2}` there).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh

#: :math:`\mathbf o(c\theta)=c^{3}\mathbf o(\theta)`: :math:`\sigma(x)=x^2` in the hidden
#: layer, linear on top.
HOMOGENEITY = 3


@dataclass(frozen=True)
class TrainingPairs:
    """The training samples of one run: operands ``left``, ``right`` (``(n,)``, in
    ``range(M)``) and labels ``target`` (``(n,)``)."""

    left: torch.Tensor
    right: torch.Tensor
    target: torch.Tensor
    M: int

    @property
    def n(self) -> int:
        return self.left.shape[0]


def outputs(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs) -> torch.Tensor:
    r""":math:`\mathbf o_i=V^\top\sigma(\mathbf w_{h_1}+\mathbf w_{M+h_2})` per sample
    (``(n, M)``), :math:`\sigma(x)=x^2`."""
    pre = W[data.left] + W[data.M + data.right]
    return pre.square() @ V


def data_loss(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs) -> torch.Tensor:
    r""":math:`L=\frac1n\sum_i\|P\mathbf o_i-(\mathbf e_{y_i}-\tfrac1M\mathbf 1)\|^2` (no
    weight decay)."""
    o = outputs(W, V, data)
    centred = o - o.mean(-1, keepdim=True)
    target = torch.nn.functional.one_hot(data.target, data.M).to(o.dtype) - 1.0 / data.M
    return (centred - target).square().sum(-1).mean()


def _unflatten(theta: torch.Tensor, M: int, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    return theta[:2 * M * K].view(2 * M, K), theta[2 * M * K:].view(K, M)


def flatten(W: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r""":math:`\theta=(\mathrm{vec}\,W,\mathrm{vec}\,V)`."""
    return torch.cat((W.reshape(-1), V.reshape(-1)))


def hessian_vector_product(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs
                           ) -> Callable[[torch.Tensor], torch.Tensor]:
    r""":math:`\mathbf x\mapsto\nabla^2L(\theta)\mathbf x` at :math:`\theta=(W,V)` (forward
    over reverse, :mod:`torch.func`), in the dtype of ``W``."""
    M, K = data.M, W.shape[1]
    theta = flatten(W, V).detach()
    grad = torch.func.grad(lambda t: data_loss(*_unflatten(t, M, K), data))
    return lambda x: torch.func.jvp(grad, (theta,), (x,))[1]


def top_eigenvalues(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs, k: int,
                    tol: float = 1e-6) -> np.ndarray:
    r"""The ``k`` largest eigenvalues of :math:`\nabla^2L` at :math:`(W,V)`, descending: Lanczos
    (ARPACK's ``eigsh``, ``which="LA"``) on float64 Hessian-vector products, to relative
    accuracy ``tol``; a fixed start vector, so the result is a function of the weights."""
    W, V = W.detach().to(torch.float64), V.detach().to(torch.float64)
    d = W.numel() + V.numel()
    if not 1 <= k < d:
        raise ValueError(f"k: {k} must lie in [1, {d - 1}]")
    hvp = hessian_vector_product(W, V, data)
    op = LinearOperator((d, d), dtype=np.float64,
                        matvec=lambda x: hvp(torch.from_numpy(np.ascontiguousarray(
                            x.reshape(-1)))).numpy())
    start = np.ones(d) / np.sqrt(d)
    values = eigsh(op, k=k, which="LA", tol=tol, v0=start, return_eigenvectors=False)
    return np.sort(values)[::-1]


def balance(W: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The smallest-norm point of the orbit :math:`(\mathbf w_j,\mathbf v_j)\to(a_j\mathbf
    w_j,\mathbf v_j/a_j^2)`: :math:`a_j^6=2\|\mathbf v_j\|^2/\|\mathbf w_j\|^2` (``W``
    ``(2M, K)``, ``V`` ``(K, M)``). A node with a zero half (it computes nothing) keeps
    :math:`a_j=1`: its orbit has no smallest point off 0."""
    w2, v2 = W.square().sum(0), V.square().sum(1)
    live = (w2 > 0) & (v2 > 0)
    a = torch.where(live, (2 * v2 / torch.where(live, w2, 1.0)).pow(1 / 6), 1.0)
    return W * a, V / a.square()[:, None]


def euler_floor(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs) -> torch.Tensor:
    r""":math:`2\,\mathrm{HOMOGENEITY}^2\,\overline{\|P\mathbf o\|^2}/\|\theta\|^2`: the
    Gauss-Newton curvature along :math:`\theta` itself, a lower bound of its largest
    eigenvalue."""
    o = outputs(W, V, data)
    centred = o - o.mean(-1, keepdim=True)
    mean_sq = centred.square().sum(-1).mean()
    return 2 * HOMOGENEITY**2 * mean_sq / flatten(W, V).square().sum()


@dataclass(frozen=True)
class Sharpness:
    """At the balanced representative: the top Hessian eigenvalues (descending), the Euler
    floor, :math:`\\|\\theta\\|^2`, and the normalised sharpness
    :math:`\\lambda_{\\max}/\\text{floor}`."""

    eigenvalues: np.ndarray
    floor: float
    norm_sq: float

    @property
    def normalised(self) -> float:
        return float(self.eigenvalues[0] / self.floor)


def sharpness(W: torch.Tensor, V: torch.Tensor, data: TrainingPairs, k: int) -> Sharpness:
    r""":func:`top_eigenvalues` and :func:`euler_floor` at :func:`balance` of ``(W, V)``, in
    float64."""
    Wb, Vb = balance(W.detach().to(torch.float64), V.detach().to(torch.float64))
    return Sharpness(top_eigenvalues(Wb, Vb, data, k), float(euler_floor(Wb, Vb, data)),
                     float(flatten(Wb, Vb).square().sum()))
