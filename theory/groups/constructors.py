"""Named finite groups: cyclic, dihedral, symmetric, alternating, quaternion, direct products.

Every constructor puts the identity at index 0.

>>> [G.order for G in (cyclic(5), dihedral(4), symmetric(3), alternating(4), quaternion())]
[5, 8, 6, 12, 8]
>>> direct_product(cyclic(2), cyclic(3)).name
'Z2 x Z3'
"""
from __future__ import annotations

import itertools
import math

from theory.groups.finite_group import MAX_ORDER, FiniteGroup, trusted_group

#: symmetric(n) and alternating(n) are built for n up to this (S_6 has order 720).
MAX_PERMUTATION_DEGREE = 6


def _check_int(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return value


def cyclic(n: int) -> FiniteGroup:
    """:math:`\\mathbb Z_n`: element ``k`` is :math:`g^k`, ``a*b = (a + b) mod n``."""
    _check_int("n", n, 1, MAX_ORDER)
    table = tuple(tuple(range(a, n)) + tuple(range(a)) for a in range(n))
    return trusted_group(table, 0, f"Z{n}", tuple(str(k) for k in range(n)))


def dihedral(n: int) -> FiniteGroup:
    """:math:`D_n`, the symmetries of the regular n-gon, of order ``2n``.

    Element ``k + n*j`` is :math:`r^k s^j` (rotations ``0..n-1``, then reflections), with
    :math:`r^n = s^2 = e` and :math:`s r s = r^{-1}`. ``n = 1`` gives :math:`\\mathbb Z_2` and
    ``n = 2`` the Klein four-group (both abelian); ``n >= 3`` is non-abelian.
    """
    _check_int("n", n, 1, MAX_ORDER // 2)

    def mul(a: int, b: int) -> int:
        k1, j1 = a % n, a // n
        k2, j2 = b % n, b // n
        return (k1 + (-k2 if j1 else k2)) % n + n * (j1 ^ j2)

    table = tuple(tuple(mul(a, b) for b in range(2 * n)) for a in range(2 * n))
    labels = tuple(("e" if k == 0 else "r" if k == 1 else f"r^{k}") if j == 0 else
                   ("s" if k == 0 else ("r" if k == 1 else f"r^{k}") + " s")
                   for j in (0, 1) for k in range(n))
    return trusted_group(table, 0, f"D{n}", labels)


def _cycle_label(p: tuple[int, ...]) -> str:
    seen, cycles = set(), []
    for i in range(len(p)):
        if i in seen or p[i] == i:
            continue
        cyc, j = [], i
        while j not in seen:
            seen.add(j)
            cyc.append(j)
            j = p[j]
        cycles.append("(" + " ".join(map(str, cyc)) + ")")
    return "".join(cycles) or "e"


def _permutation_group(perms: list[tuple[int, ...]], name: str) -> FiniteGroup:
    index = {p: i for i, p in enumerate(perms)}
    # (p q)(i) = p(q(i)): q acts first.
    table = tuple(tuple(index[tuple(p[x] for x in q)] for q in perms) for p in perms)
    return trusted_group(table, 0, name, tuple(_cycle_label(p) for p in perms))


def _is_even(p: tuple[int, ...]) -> bool:
    inversions = sum(1 for i in range(len(p)) for j in range(i) if p[j] > p[i])
    return inversions % 2 == 0


def symmetric(n: int) -> FiniteGroup:
    """:math:`S_n` on ``{0..n-1}``: permutations in lexicographic order of their one-line form
    (the identity first); ``(p*q)(i) = p(q(i))``; labels in 0-based cycle notation."""
    _check_int("n", n, 1, MAX_PERMUTATION_DEGREE)
    return _permutation_group(list(itertools.permutations(range(n))), f"S{n}")


def alternating(n: int) -> FiniteGroup:
    """:math:`A_n`, the even permutations, ordered and multiplied as in :func:`symmetric`.
    ``A_1`` and ``A_2`` are trivial, ``A_3`` is cyclic of order 3."""
    _check_int("n", n, 1, MAX_PERMUTATION_DEGREE)
    perms = [p for p in itertools.permutations(range(n)) if _is_even(p)]
    return _permutation_group(perms, f"A{n}")


def _hamilton(p: tuple[int, ...], q: tuple[int, ...]) -> tuple[int, ...]:
    a1, b1, c1, d1 = p
    a2, b2, c2, d2 = q
    return (a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2,
            a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
            a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2,
            a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2)


def quaternion() -> FiniteGroup:
    """:math:`Q_8 = \\{\\pm1, \\pm i, \\pm j, \\pm k\\}`, ordered ``1, -1, i, -i, j, -j, k, -k``."""
    units = []
    for axis in range(4):
        for sign in (1, -1):
            q = [0, 0, 0, 0]
            q[axis] = sign
            units.append(tuple(q))
    index = {q: i for i, q in enumerate(units)}
    table = tuple(tuple(index[_hamilton(p, q)] for q in units) for p in units)
    labels = ("1", "-1", "i", "-i", "j", "-j", "k", "-k")
    return trusted_group(table, 0, "Q8", labels)


def direct_product(*groups: FiniteGroup) -> FiniteGroup:
    """:math:`G_1 \\times \\dots \\times G_r`; element ``(g_1, ..., g_r)`` has the mixed-radix
    index ``((g_1 |G_2| + g_2) |G_3| + ...)`` (the first factor varies slowest)."""
    if not groups:
        raise ValueError("groups: direct_product needs at least one group")
    for i, G in enumerate(groups):
        if not isinstance(G, FiniteGroup):
            raise ValueError(f"groups[{i}] must be a FiniteGroup, got {type(G).__name__}")
    order = math.prod(G.order for G in groups)
    if order > MAX_ORDER:
        raise ValueError(f"groups: the product has order {order}; at most {MAX_ORDER} is built")
    tuples = list(itertools.product(*(range(G.order) for G in groups)))
    radix = [math.prod(G.order for G in groups[i + 1:]) for i in range(len(groups))]

    def index(t) -> int:
        return sum(x * r for x, r in zip(t, radix))

    tables = [G.table for G in groups]
    table = tuple(tuple(index([tb[x][y] for tb, x, y in zip(tables, a, b)]) for b in tuples)
                  for a in tuples)
    identity = index([G.identity for G in groups])
    labels = tuple("(" + ", ".join(G.label(x) for G, x in zip(groups, t)) + ")" for t in tuples)
    return trusted_group(table, identity, " x ".join(G.name for G in groups), labels)
