r"""Li2's group-task energy and reconstruction features for activations other than
:math:`\sigma(x)=x^2`: the quadratic family :math:`\sigma(x)=ax+bx^2` (Thm. 2's stated
extension), the features :math:`\sigma(X\mathbf w)` of a set of nodes, and the rounding scale
of the energy under a polynomial activation.
"""
from __future__ import annotations

import torch

from numerics.activations import Activation
from numerics.li2.group_task import GroupTask, centred_label_projection, first_layer
from numerics.li2.target_reconstruction import centred_targets


def quadratic(a: float, b: float) -> Activation:
    r""":math:`\sigma(x)=ax+bx^2` with :math:`\sigma'(x)=a+2bx`; works on complex tensors too
    (holomorphic), as Thm. 3's complex nodes need.

    >>> quadratic(1.0, 0.5)(torch.tensor(2.0))
    tensor(4.)
    """
    return Activation(f"{a:g}x+{b:g}x^2", lambda z: a * z + b * z * z,
                      lambda z: a + 2 * b * z)


def activation_features(W: torch.Tensor, task: GroupTask, act: Activation) -> torch.Tensor:
    r""":math:`F=\sigma(XW)` for the nodes in the rows of ``W`` (``(K, 2M)``, real or complex):
    ``(n, K)``, samples first, not centred."""
    if W.dim() != 2:
        raise ValueError(f"W: needs a (K, 2M) matrix of nodes, got shape {tuple(W.shape)}")
    return act(first_layer(W, task)).T


def quadratic_rounding_scale(w: torch.Tensor, task: GroupTask, a: float, b: float
                             ) -> torch.Tensor:
    r""":math:`\tfrac12\sum_m(\sum_i|\tilde Y_{im}|(|a||z_i|+|b|z_i^2))^2` per row of ``w``
    (``(B, 2M)``): the sum of absolute terms that bounds the rounding error of
    :math:`\mathcal E` under :math:`\sigma=ax+bx^2` (each :math:`\sigma(z_i)` errs by
    :math:`O(u)(|az_i|+|bz_i^2|)`, each :math:`c_m=\sum_i\tilde Y_{im}\sigma(z_i)` by
    :math:`\gamma_n` times its absolute sum; Higham, ch. 3). It exceeds :math:`\mathcal E`
    wherever the linear part cancels."""
    z = first_layer(w, task).T  # (n, B)
    Yt = centred_targets(task, w.dtype).abs()
    return 0.5 * (Yt.T @ (abs(a) * z.abs() + abs(b) * z.square())).square().sum(0)


def relu_directional_derivatives(w: torch.Tensor, xi: torch.Tensor, task: GroupTask,
                                 kink_tol: float) -> torch.Tensor:
    r"""One-sided directional derivatives :math:`D_\xi\mathcal E(\mathbf w)` of the ReLU
    energy at the rows of ``w`` (``(B, 2M)``) along ``xi`` (``(B, R, 2M)``): exact where
    pre-activations sit on the kink (:math:`|z_i|\le` ``kink_tol``), where
    :math:`\mathrm{relu}'(z;d)=\max(d,0)`, and :math:`\mathbf 1[z>0]\,d` elsewhere. Then
    :math:`D_\xi\mathcal E=\sum_mc_m\,(\tilde Y^\top\mathrm{relu}'(\mathbf z;X\xi))_m` with
    :math:`c=\tilde Y^\top\mathrm{relu}(\mathbf z)` (the chain rule through a smooth outer
    function). Out ``(B, R)``. Along a tangent :math:`\xi\perp\mathbf w` it is also the
    derivative on the unit sphere (the normalisation is second order)."""
    z = first_layer(w, task)  # (B, n)
    dz = first_layer(xi, task)  # (B, R, n)
    kink = (z.abs() <= kink_tol)[:, None, :]
    dsigma = torch.where(kink, dz.clamp(min=0), (z > 0).to(z.dtype)[:, None, :] * dz)
    c = centred_label_projection(torch.relu(z).T, task)  # (M, B)
    B, R, n = dsigma.shape
    dc = centred_label_projection(dsigma.reshape(B * R, n).T, task).reshape(-1, B, R)
    return (c[:, :, None] * dc).sum(0)
