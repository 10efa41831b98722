"""Groups by short name: ``Z7``, ``D4``, ``S3``, ``A4``, ``Q8`` and direct products such as
``Z3xZ3`` (factors joined by ``x``).

>>> group_from_name("Z3xZ3").order, group_from_name("D4").is_abelian
(9, False)
>>> check_group_name("Z0")
Traceback (most recent call last):
ValueError: group: 'Z0': the order in 'Z0' must be >= 1
"""
from __future__ import annotations

import re

from theory.groups.constructors import (
    alternating,
    cyclic,
    dihedral,
    direct_product,
    quaternion,
    symmetric,
)
from theory.groups.finite_group import FiniteGroup

_FACTOR = re.compile(r"^(Z|D|S|A)(\d+)$|^Q8$")
_NAMES = "Z<n>, D<n>, S<n>, A<n>, Q8 (or a product such as Z3xZ3)"


def check_group_name(spec: str) -> None:
    """Raise the ValueError :func:`group_from_name` would for a malformed name, without building
    the group (so a parameter is checked before any work; ``S10`` is not built to be checked)."""
    if not isinstance(spec, str):
        raise ValueError(f"group: {spec!r} is not a string")
    for part in spec.split("x"):
        m = _FACTOR.match(part)
        if not m:
            raise ValueError(f"group: {spec!r} is not one of {_NAMES}")
        if m.group(2) is not None and int(m.group(2)) < 1:
            raise ValueError(f"group: {spec!r}: the order in {part!r} must be >= 1")


def _factor(spec: str) -> FiniteGroup:
    m = _FACTOR.match(spec)
    if not m:
        raise ValueError(f"group: {spec!r} is not one of {_NAMES}")
    if spec == "Q8":
        return quaternion()
    family, n = m.group(1), int(m.group(2))
    return {"Z": cyclic, "D": dihedral, "S": symmetric, "A": alternating}[family](n)


def group_from_name(spec: str) -> FiniteGroup:
    """The group named ``spec``."""
    parts = spec.split("x")
    return _factor(parts[0]) if len(parts) == 1 else direct_product(*map(_factor, parts))
