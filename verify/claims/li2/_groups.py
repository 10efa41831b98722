r"""Groups by short name (``Z7``, ``D4``, ``Z3xZ3``, ``Q8``) and their exact real isotypic
projectors as float tensors: the setup every group claim shares.

The projectors are computed exactly in :mod:`theory.groups.irreps` and rounded once, so a numerical
route that uses them inherits no error from a float eigendecomposition.
"""
from __future__ import annotations

import torch

from numerics.li2.target_reconstruction import complex_dtype
from theory.groups import FiniteGroup, group_from_name
from theory.groups.irreps import projector_coefficients
from verify import Choice

#: Small groups covering every irrep type (R, C, H; abelian and not), for stress searches.
#: Listed roughly by size, so hypothesis shrinks towards the smaller groups.
SMALL_GROUPS = ("Z3", "Z4", "Z2xZ2", "Z5", "Z6", "S3", "Z7", "Z8", "D4", "Q8", "Z3xZ3", "D5")
#: A stress dimension over claims' ``groups`` parameter: one small group per run.
ONE_SMALL_GROUP = Choice(tuple((g,) for g in SMALL_GROUPS))

#: The group named ``spec`` (``Z7``, ``D4``, ``Z3xZ3``, ``Q8``): claims name groups this way.
build_group = group_from_name


def _coefficient_index(G: FiniteGroup) -> torch.Tensor:
    r"""``[a, b] -> a b^{-1}``: where entry ``[a, b]`` of :math:`\sum_g p(g)R_g` reads ``p``."""
    return torch.tensor(G.table)[:, torch.tensor(G.inverse)]


def float_projectors(G: FiniteGroup, device: torch.device | str = "cpu",
                     dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""The real isotypic projectors :math:`\Pi_k` (one per real irrep, in
    :func:`theory.groups.irreps.real_irreps` order) as a ``(K, M, M)`` tensor: entry ``[a, b]`` is
    the exact coefficient :math:`p_k(ab^{-1})` of :math:`\Pi_k=\sum_gp_k(g)R_g`, rounded once."""
    coeffs = projector_coefficients(G, real=True)
    values = torch.tensor([[complex(c).real for c in p] for p in coeffs], dtype=torch.float64)
    return values[:, _coefficient_index(G)].to(device=device, dtype=dtype)


def complex_projectors(G: FiniteGroup, device: torch.device | str = "cpu",
                       dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""The isotypic projectors :math:`\Pi_k=\frac{d_k}{M}\sum_g\overline{\chi_k(g)}R_g` of the
    complex irreps (:func:`theory.groups.irreps.irreps` order) as a complex ``(K, M, M)`` tensor
    (``complex128`` for float64, ``complex64`` for float32), exact coefficients rounded once."""
    coeffs = projector_coefficients(G)
    values = torch.tensor([[complex(c) for c in p] for p in coeffs], dtype=torch.complex128)
    return values[:, _coefficient_index(G)].to(device=device, dtype=complex_dtype(dtype))
