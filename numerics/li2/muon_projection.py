r"""The Muon projection of Li2 Thm. 8: a sequential node's Muon update in the basis of the
modes, the last column of :math:`\mathrm{polar}([\mathrm{diag}(\mathbf d), \mathbf g])`."""
from __future__ import annotations

import torch

from numerics.polar import newton_polar


def muon_direction(columns: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    r"""Last column of :math:`\mathrm{polar}([\mathrm{diag}(\mathbf d), \mathbf g])` for
    ``columns`` :math:`\mathbf d` ``(..., L)`` (0 for modes without an earlier node) and
    ``g`` ``(..., L)`` with a nonzero part :math:`s\mathbf e` on those modes.

    In the orthonormal basis of the found modes and :math:`\mathbf e` (normalised
    explicitly, so its direction is exact however small :math:`s` is) the matrix is the
    triangular :math:`R = \begin{pmatrix}D_S & \mathbf g_S\\ 0 & s\end{pmatrix}`; it is padded
    to :math:`(L+1)\times(L+1)` with identity rows for the unfound modes (a decoupled block,
    whose polar factor is the identity) and its polar factor is taken by
    :func:`newton_polar`."""
    if columns.shape != g.shape:
        raise ValueError(f"columns, g: shapes {tuple(columns.shape)} and {tuple(g.shape)} "
                         f"differ")
    found = columns > 0
    perp = torch.where(found, 0.0, g)
    s = perp.norm(dim=-1, keepdim=True)
    if not bool((s > 0).all()):
        raise ValueError("g: needs a nonzero component on the modes without an earlier node")
    L = g.shape[-1]
    top = torch.cat([torch.diag_embed(torch.where(found, columns, 1.0)),
                     torch.where(found, g, 0.0)[..., None]], -1)
    bottom = torch.cat([torch.zeros_like(g), s], -1)[..., None, :]
    last = newton_polar(torch.cat([top, bottom], -2))[..., :, L]
    return torch.where(found, last[..., :L], 0.0) + last[..., L:] * perp / s
