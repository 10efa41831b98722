r"""The two kinds of memorisation of Li2's §8, read off the hidden nodes of a trained two-layer
network: nodes that sit at a memorisation maximum of Thm. 5, and random features that the top
layer fits.

* **Thm. 5.** On the data of one target :math:`h` (samples :math:`(g,g^{-1}h)`), for
  :math:`\sigma=x^2` (:math:`\phi=\sigma'/x` constant, the focused case) the maxima of
  :math:`\mathcal E` on the sphere are
  :math:`\mathbf w=\tfrac1{\sqrt2}[\mathbf e_{g^\ast};\mathbf e_{g^{\ast-1}h}]` (``li2.thm5``;
  :func:`numerics.li2.memorisation.focused_profile`): all of the node's mass on one entry of
  :math:`\mathbf u` and one of :math:`\mathbf v`, and the pair :math:`(g^\ast,g^{\ast-1}h)`
  a training sample. A node's *focus* is :math:`(\max_gu_g^2+\max_gv_g^2)/\|\mathbf w\|^2`
  (1 there); it counts as at such a maximum when its focus exceeds ½ (more than half of its
  mass on one pair, which no Fourier node has for :math:`M\ge5`: a real Fourier node puts at
  most :math:`2/M` of each block's mass on one entry) and its two largest entries form a
  training pair.
* **Random features.** A node whose direction stayed where it started: more than half of its
  squared norm along its initial direction, :math:`\cos^2(\mathbf w_j(T),\mathbf w_j(0))>\tfrac12`
  (two random directions in :math:`\mathbb R^{2M}` have :math:`\cos^2\approx1/(2M)`).

Between the two, a node can memorise without sitting at one maximum: its *training-pair share*
:math:`\sum_{(a,b)\ \rm training}u_a^2v_b^2/(\|\mathbf u\|^2\|\mathbf v\|^2)` is the part of
the cross term :math:`\mathbf u\mathbf v^\top` (the part of :math:`\sigma(u_{h_1}+v_{h_2})`
that depends on the pair, App. A.1) that lies on training pairs: 1 at a Thm. 5 maximum and on any
node supported on a few training pairs, about the training fraction :math:`p` for a node blind
to the split (random or Fourier). It is reported, not used to classify.

A node's weight in a network is its output scale :math:`\|\mathbf w_j\|^2\|\mathbf v_j\|`
(:math:`\mathbf v_j\sigma(\mathbf x^\top\mathbf w_j)`, :math:`\sigma(x)=x^2`), so nodes that
weight decay has switched off do not count. A network is of a kind when more than half of its
node weight is of that kind, else ``mixed``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

#: The kinds of a memorising network (and of a node, but ``mixed``: a node is ``other``).
THM5, RANDOM_FEATURES, MIXED = "Thm. 5 maximum", "random features", "mixed"
#: More than this share (of a node's mass, of a network's node weight) decides a kind.
MAJORITY = 0.5


@dataclass(frozen=True)
class NodeKinds:
    """Per run (leading axis ``B``): the share of node weight at Thm. 5 maxima and the share
    that is random features, the weighted mean focus, initial alignment and training-pair
    share, and the kind."""

    thm5_share: torch.Tensor
    random_share: torch.Tensor
    focus: torch.Tensor
    alignment: torch.Tensor
    pair_share: torch.Tensor
    kinds: tuple[str, ...]


def node_focus(W: torch.Tensor) -> torch.Tensor:
    r""":math:`(\max_gu_g^2+\max_gv_g^2)/\|\mathbf w\|^2` per node (``W`` ``(..., 2M, K)``;
    0 for a zero node)."""
    M = W.shape[-2] // 2
    sq = W.square()
    top = sq[..., :M, :].amax(-2) + sq[..., M:, :].amax(-2)
    total = sq.sum(-2)
    return torch.where(total > 0, top / torch.where(total > 0, total, 1.0), 0.0)


def on_training_pair(W: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    r"""Whether each node's largest entries :math:`(\arg\max_gu_g^2,\arg\max_gv_g^2)` form a
    training pair; ``pairs`` ``(..., M, M)`` boolean, true at the training pairs
    :math:`(h_1,h_2)`."""
    M = W.shape[-2] // 2
    a = W[..., :M, :].square().argmax(-2)                  # (..., K)
    b = W[..., M:, :].square().argmax(-2)
    flat = pairs.flatten(-2)
    return torch.gather(flat, -1, a * M + b)


def initial_alignment(W: torch.Tensor, W0: torch.Tensor) -> torch.Tensor:
    r""":math:`\cos^2(\mathbf w_j,\mathbf w_j(0))` per node (0 for a zero node)."""
    dot = (W * W0).sum(-2)
    norms = W.square().sum(-2) * W0.square().sum(-2)
    return torch.where(norms > 0, dot.square() / torch.where(norms > 0, norms, 1.0), 0.0)


def training_pair_share(W: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    r""":math:`(\mathbf u^{\circ2})^\top\Pi\,\mathbf v^{\circ2}/(\|\mathbf u\|^2
    \|\mathbf v\|^2)` per node, :math:`\Pi` the 0/1 matrix ``pairs`` ``(..., M, M)`` of
    training pairs (0 for a node with a zero half)."""
    M = W.shape[-2] // 2
    u2, v2 = W[..., :M, :].square(), W[..., M:, :].square()
    cross = torch.einsum("...ak,...ab,...bk->...k", u2, pairs.to(W.dtype), v2)
    norms = u2.sum(-2) * v2.sum(-2)
    return torch.where(norms > 0, cross / torch.where(norms > 0, norms, 1.0), 0.0)


def classify(W: torch.Tensor, V: torch.Tensor, W0: torch.Tensor, pairs: torch.Tensor
             ) -> NodeKinds:
    r"""The node kinds of each run: ``W``, ``W0`` ``(B, 2M, K)``, ``V`` ``(B, K, M)``,
    ``pairs`` ``(B, M, M)``."""
    weight = W.square().sum(-2) * V.norm(dim=-1)            # (B, K)
    total = weight.sum(-1).clamp(min=torch.finfo(W.dtype).tiny)
    focus = node_focus(W)
    align = initial_alignment(W, W0)
    thm5 = (focus > MAJORITY) & on_training_pair(W, pairs)
    rand = ~thm5 & (align > MAJORITY)

    def share(mask: torch.Tensor) -> torch.Tensor:
        return (weight * mask).sum(-1) / total

    t, r = share(thm5), share(rand)
    kinds = tuple(THM5 if a > MAJORITY else RANDOM_FEATURES if b > MAJORITY else MIXED
                  for a, b in zip(t.tolist(), r.tolist()))
    return NodeKinds(t, r, share(focus), share(align), share(training_pair_share(W, pairs)),
                     kinds)
