"""Finite groups as integer Cayley tables: the public surface.

The group type and its validating constructor live in :mod:`theory.groups.finite_group`, the named
families in :mod:`theory.groups.constructors`, subgroups in :mod:`theory.groups.subgroups`.

>>> G = dihedral(3)
>>> G.order, G.is_abelian, [len(c) for c in G.conjugacy_classes()]
(6, False, [1, 2, 3])
>>> G.table[1][G.inverse[1]] == G.identity
True
>>> [G.element_order(g) for g in range(G.order)], G.exponent
([1, 3, 3, 2, 2, 2], 6)
"""
from theory.groups.finite_group import MAX_ORDER, FiniteGroup, from_cayley_table
from theory.groups.constructors import (
    alternating,
    cyclic,
    dihedral,
    direct_product,
    quaternion,
    symmetric,
)
from theory.groups.names import check_group_name, group_from_name
from theory.groups.subgroups import Subgroup, subgroup_classes

__all__ = [
    "MAX_ORDER", "FiniteGroup", "Subgroup", "alternating", "check_group_name", "cyclic",
    "dihedral", "direct_product", "from_cayley_table", "group_from_name", "quaternion",
    "subgroup_classes", "symmetric",
]
