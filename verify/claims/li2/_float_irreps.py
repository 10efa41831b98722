r"""Float images of the exact irrep data on the group task (:math:`\sigma(x)=x^2`, full data):
:func:`float_decomposition`, Eq. 8's unitary :math:`Q` in complex128 with its per-copy column
blocks; :func:`float_points`, the vertices of Thm. 2's simplex
:math:`[\mathbf u;\pm P\mathbf u]` as unit float64 vectors; and :data:`X2`, the activation
:math:`\sigma(x)=x^2` they are evaluated with.

Used by ``li2.thm7`` (Thm. 7) and ``li2.appA1`` (App. A.1).
"""
from __future__ import annotations

import math
from functools import lru_cache

import torch

from numerics.activations import activation
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps
from theory.li2.group_energy import character_points, irrep_points, paper_form

X2 = activation("x2")


@lru_cache(maxsize=32)
def float_decomposition(G: FiniteGroup) -> tuple[torch.Tensor, list[list[list[int]]]]:
    r"""Eq. 8's unitary :math:`Q` in complex128, column :math:`(k,r,i)` =
    :math:`\sqrt{d_k/M}\,\overline{U_k(g)_{ir}}` from the float unitary irreps, and per
    irrep (trivial first) the columns of each copy :math:`r` (for :func:`block_sums`)."""
    M = G.order
    cols, blocks = [], []
    for rep in irreps(G):
        U = torch.tensor(rep.to_complex(), dtype=torch.complex128)  # (M, d, d)
        copies = []
        for r in range(rep.dim):
            copies.append(list(range(len(cols), len(cols) + rep.dim)))
            cols.extend(math.sqrt(rep.dim / M) * U[:, i, r].conj() for i in range(rep.dim))
        blocks.append(copies)
    return torch.stack(cols, 1), blocks


def float_points(G: FiniteGroup) -> tuple[torch.Tensor, list[str], list[int]]:
    r"""The vertices of Thm. 2's simplex as unit float vectors: :math:`[\mathbf u;\pm P\mathbf u]`
    with :math:`\mathbf u` a matrix coefficient of each nontrivial real irrep, and
    :math:`[\chi_k;P\chi_k]` for real irreps of dimension :math:`\ge2`; labels; components."""
    rows, labels, comps = [], [], []
    for pt in irrep_points(G):
        for sign in (1, -1):
            rows.append([complex(x).real for x in paper_form(G, pt.u, sign)])
            labels.append(f"{pt.label} of component {pt.component}, {'+' if sign > 0 else '-'}")
            comps.append(pt.component)
    for pt in character_points(G):
        rows.append([complex(x).real for x in paper_form(G, pt.u)])
        labels.append(f"chi of component {pt.component}")
        comps.append(pt.component)
    w = torch.tensor(rows, dtype=torch.float64)
    return w / w.norm(dim=-1, keepdim=True), labels, comps
