r"""The nodes of Thm. 3's target reconstruction in floating point: :func:`float_nodes` builds,
for each reading of :math:`\mathbf w=[\mathbf u;\pm P\mathbf u]`
(:data:`theory.li2.target_reconstruction.READINGS`), the rows ``[u; +s]``, ``[u; -s]`` from
orthonormal bases of the rounded exact isotypic projectors (:math:`\cos,\sin` for cyclic
groups in the real-exact reading).

Used by ``li2.thm3`` (Thm. 3) and ``li2.appA2`` (App. A.2).
"""
from __future__ import annotations

import torch

from numerics.li2.group_task import GroupTask, inversion
from numerics.li2.target_reconstruction import (
    cos_sin_components,
    paired_nodes,
    perturbed,
    polarisation_vectors,
    range_basis,
    square_vectors,
    symmetric_vectors,
)
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import real_irreps
from theory.li2.target_reconstruction import READINGS
from verify.claims.li2._groups import complex_projectors, float_projectors


def _cyclic_powers(G: FiniteGroup) -> torch.Tensor | None:
    g = next((g for g in range(G.order) if G.element_order(g) == G.order), None)
    if g is None:
        return None
    return torch.tensor([G.power(g, m) for m in range(G.order)])


def float_nodes(G: FiniteGroup, task: GroupTask, reading: str,
                generator: torch.Generator | None = None, dtype: torch.dtype = torch.float64,
                perturbation: float = 0.1) -> tuple[torch.Tensor, list[int]]:
    r"""The nodes of ``reading`` (see :data:`theory.li2.target_reconstruction.READINGS`) in
    floating point: ``(K, 2M)`` rows ``[u; +s]``, ``[u; -s]`` per :math:`\mathbf u`, and the
    component (irrep or real irrep index) of each row. Bases are orthonormal eigenvectors of
    the rounded exact projectors; cyclic groups use :math:`\cos,\sin` in the real-exact
    reading; ``perturbation`` is the relative size of :math:`\mathbf u'-\mathbf u`, drawn
    from ``generator`` (needed by the perturbed readings only)."""
    if reading not in READINGS:
        raise ValueError(f"reading: {reading!r} is not one of {', '.join(READINGS)}")
    if "perturbed" in reading and generator is None:
        raise ValueError(f"generator: the reading {reading!r} draws its perturbations from a "
                         f"torch.Generator")
    dev = task.device
    blocks, labels = [], []
    if reading.startswith("complex"):
        P = complex_projectors(G, dev, dtype)
        for k in range(1, P.shape[0]):
            U = polarisation_vectors(range_basis(P[k]))
            S = inversion(U.conj() if reading == "complex-conjugate" else U, task)
            blocks.append(paired_nodes(U, S))
            labels += [k] * (2 * U.shape[0])
        return torch.cat(blocks), labels
    P = float_projectors(G, dev, dtype)
    powers = _cyclic_powers(G)
    cos_sin = cos_sin_components(powers.to(dev), dtype) if powers is not None else None
    types = [r.type for r in real_irreps(G)]
    for j in range(1, P.shape[0]):
        B = range_basis(P[j])
        if reading == "real-exact":
            U = _matching(cos_sin, B).T if cos_sin is not None else symmetric_vectors(B)
            S = inversion(U, task)
        else:
            U = square_vectors(B)
            if reading == "real-perturbed-complex-count" and types[j] == "C":
                U = U[:U.shape[0] // 2]
            S = inversion(perturbed(U, B, perturbation, generator), task)
        blocks.append(paired_nodes(U, S))
        labels += [j] * (2 * U.shape[0])
    return torch.cat(blocks), labels


def _matching(components: list[torch.Tensor], B: torch.Tensor) -> torch.Tensor:
    """The cos/sin columns whose span is the range of ``B`` (the same real component)."""
    for C in components:
        if C.shape[1] == B.shape[1] and (B @ (B.T @ C) - C).norm() < 1e-6 * C.norm():
            return C
    raise ValueError("B: no frequency of the cyclic group spans this component")
