"""A finite group as an integer Cayley table, and the validating constructor.

Elements are the indices ``0 .. n-1``; ``table[a][b]`` is the index of ``a*b``. The tables are
plain tuples of ints, so a torch layer can turn them into gather indices unchanged.

>>> G = from_cayley_table([[0, 1], [1, 0]], name="Z2")
>>> G.order, G.identity, G.inverse, G.is_abelian
(2, 0, (0, 1), True)
>>> from_cayley_table([[0, 1], [1, 1]])
Traceback (most recent call last):
...
ValueError: no inverse: element 1 has no b with 1*b = b*1 = 0 (the identity)
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

#: Largest order the named constructors build: the table has ``order**2`` entries.
MAX_ORDER = 2048

#: Up to this order associativity is checked on every triple (the first violation in
#: lexicographic order is reported); above it, Light's test on a generating set is used.
FULL_ASSOCIATIVITY_ORDER = 128


@dataclass(frozen=True, repr=False)
class FiniteGroup:
    """A finite group given by its Cayley table.

    ``table[a][b]`` is the index of ``a*b``; ``identity`` the index of the identity;
    ``inverse[a]`` the index of ``a^-1``; ``elements`` optional labels. Build it with
    :func:`from_cayley_table` (which checks the group axioms) or a named constructor; the
    dataclass itself only checks shapes and the identity and inverse entries.
    """

    table: tuple[tuple[int, ...], ...]
    identity: int
    inverse: tuple[int, ...]
    name: str = "G"
    elements: tuple[str, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "table", tuple(tuple(row) for row in self.table))
        object.__setattr__(self, "inverse", tuple(self.inverse))
        if self.elements is not None:
            object.__setattr__(self, "elements", tuple(self.elements))
        n = len(self.table)
        if n == 0 or any(len(row) != n for row in self.table):
            raise ValueError("table must be a non-empty square table")
        e = self.identity
        if not 0 <= e < n or self.table[e] != tuple(range(n)):
            raise ValueError(f"identity={e} is not a left identity of the table")
        if len(self.inverse) != n or any(self.table[a][b] != e for a, b in enumerate(self.inverse)):
            raise ValueError("inverse: inverse[a] must satisfy a*inverse[a] = identity for all a")
        if self.elements is not None and len(self.elements) != n:
            raise ValueError(f"elements: {len(self.elements)} labels for {n} elements")

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.table, self.identity, self.inverse, self.name, self.elements))
            self.__dict__["_hash"] = h
        return h

    def __repr__(self) -> str:
        return f"FiniteGroup({self.name!r}, order={self.order})"

    @property
    def order(self) -> int:
        return len(self.table)

    def mul(self, a: int, b: int) -> int:
        return self.table[a][b]

    def power(self, g: int, k: int) -> int:
        """``g**k`` for any integer ``k`` (negative powers use the inverse)."""
        if k < 0:
            g, k = self.inverse[g], -k
        out = self.identity
        for _ in range(k):
            out = self.table[out][g]
        return out

    def label(self, g: int) -> str:
        return self.elements[g] if self.elements is not None else str(g)

    def element_order(self, g: int) -> int:
        return self._orders[g]

    @cached_property
    def _orders(self) -> tuple[int, ...]:
        orders = []
        for g in range(self.order):
            k, x = 1, g
            while x != self.identity:
                x, k = self.table[x][g], k + 1
            orders.append(k)
        return tuple(orders)

    @cached_property
    def exponent(self) -> int:
        """Least common multiple of the element orders."""
        return math.lcm(*self._orders)

    @cached_property
    def is_abelian(self) -> bool:
        t = self.table
        return all(t[a][b] == t[b][a] for a in range(self.order) for b in range(a))

    def conjugacy_classes(self) -> tuple[tuple[int, ...], ...]:
        """The classes as sorted tuples of indices: the identity's first, then by least index."""
        return self._classes

    @cached_property
    def _classes(self) -> tuple[tuple[int, ...], ...]:
        t, inv = self.table, self.inverse
        seen: set[int] = set()
        classes = []
        for g in [self.identity, *range(self.order)]:
            if g in seen:
                continue
            cls = tuple(sorted({t[t[x][g]][inv[x]] for x in range(self.order)}))
            seen.update(cls)
            classes.append(cls)
        return tuple(classes)

    @cached_property
    def class_index(self) -> tuple[int, ...]:
        """``class_index[g]``: the position of g's class in :meth:`conjugacy_classes`."""
        out = [0] * self.order
        for c, cls in enumerate(self._classes):
            for g in cls:
                out[g] = c
        return tuple(out)


def _as_int(x, where: str) -> int:
    if isinstance(x, bool):
        raise ValueError(f"not closed: {where} = {x!r} is a bool, not an element index")
    try:
        return operator.index(x)
    except TypeError:
        raise ValueError(f"not closed: {where} = {x!r} is not an integer element index") from None


def _magma_generators(t: tuple[tuple[int, ...], ...]) -> list[int]:
    """A set of elements generating the whole table under its product (associative or not)."""
    n = len(t)
    span: set[int] = set()
    gens: list[int] = []
    for a in range(n):
        if a in span:
            continue
        gens.append(a)
        queue = [a]
        span.add(a)
        while queue:
            x = queue.pop()
            for y in list(span):
                for z in (t[x][y], t[y][x]):
                    if z not in span:
                        span.add(z)
                        queue.append(z)
    return gens


def _associativity_violation(t: tuple[tuple[int, ...], ...]) -> str | None:
    n = len(t)
    # Light's test: associativity holds iff (x*s)*y = x*(s*y) for s in a generating set.
    middle = range(n) if n <= FULL_ASSOCIATIVITY_ORDER else _magma_generators(t)
    for a in range(n):
        row_a = t[a]
        for b in middle:
            ab = row_a[b]
            lhs, row_b = t[ab], t[b]
            if [row_a[x] for x in row_b] != list(lhs):
                c = next(c for c in range(n) if lhs[c] != row_a[row_b[c]])
                return (f"not associative: ({a}*{b})*{c} = {lhs[c]} "
                        f"but {a}*({b}*{c}) = {row_a[row_b[c]]}")
    return None


def from_cayley_table(table: Sequence[Sequence[int]], name: str = "G",
                      elements: Sequence[str] | None = None) -> FiniteGroup:
    """Validate a Cayley table and build the group; a ValueError names the first violation.

    Checked in this order: shape, closure (entries are indices in ``range(n)``),
    associativity, a two-sided identity, two-sided inverses.

    >>> from_cayley_table([[0, 1, 2], [1, 2, 0], [2, 0, 2]])
    Traceback (most recent call last):
    ...
    ValueError: not associative: (1*1)*2 = 2 but 1*(1*2) = 1
    """
    rows = [list(r) for r in table]
    n = len(rows)
    if n == 0:
        raise ValueError("table must have at least one row (the trivial group is [[0]])")
    for i, row in enumerate(rows):
        if len(row) != n:
            raise ValueError(f"not square: row {i} has {len(row)} entries, expected {n}")
    for a, row in enumerate(rows):
        for b, x in enumerate(row):
            v = _as_int(x, f"table[{a}][{b}]")
            if not 0 <= v < n:
                raise ValueError(f"not closed: table[{a}][{b}] = {v} is not an element index "
                                 f"in range({n})")
            row[b] = v
    t = tuple(tuple(r) for r in rows)
    bad = _associativity_violation(t)
    if bad:
        raise ValueError(bad)
    ident = tuple(range(n))
    identity = next((e for e in range(n)
                     if t[e] == ident and all(t[a][e] == a for a in range(n))), None)
    if identity is None:
        raise ValueError("no identity: no element e with e*a = a*e = a for all a")
    inverse = []
    for a in range(n):
        b = next((b for b in range(n) if t[a][b] == identity and t[b][a] == identity), None)
        if b is None:
            raise ValueError(f"no inverse: element {a} has no b with {a}*b = b*{a} = "
                             f"{identity} (the identity)")
        inverse.append(b)
    labels = None if elements is None else tuple(str(s) for s in elements)
    if labels is not None and len(labels) != n:
        raise ValueError(f"elements: {len(labels)} labels for {n} elements")
    return FiniteGroup(t, identity, tuple(inverse), name, labels)


def trusted_group(table: tuple[tuple[int, ...], ...], identity: int, name: str,
                  elements: tuple[str, ...] | None = None) -> FiniteGroup:
    """Build a group from a table known to be one (the named constructors): no axiom check."""
    inverse = tuple(row.index(identity) for row in table)
    return FiniteGroup(table, identity, inverse, name, elements)
