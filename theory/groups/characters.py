r"""Exact irreducible characters of a finite group: class functions over :math:`\mathbb Q(\zeta_N)`.

``N`` is the exponent of the group. Two routes, used in this order:

1. **Induction** (complete for every M-group, which includes all abelian, nilpotent and
   supersolvable groups, :math:`S_4` and :math:`A_4`): every linear character :math:`\lambda`
   of every subgroup :math:`H` (up to conjugacy) is induced to :math:`G`, smallest index first;
   the known irreducibles are subtracted by inner products, and a remainder of norm 1 is a new
   irreducible. Complex conjugates and products with linear characters are tried as well.
2. **Burnside's algorithm** on what is left: the central idempotents of the missing
   characters span an ideal of the centre of the group algebra, which is split by the
   eigenspaces of the class sums. The eigenvalues :math:`|C|\chi(g_C)/\chi(1)` are found exactly
   among the finitely many values :math:`|C|(\zeta^{a_1}+\dots+\zeta^{a_d})/d`.

>>> from theory.groups.constructors import symmetric
>>> [[int(v.to_fraction()) for v in chi] for chi in irreducible_characters(symmetric(3))]
[[1, 1, 1], [1, -1, 1], [2, 0, -1]]
"""
from __future__ import annotations

import itertools
import math
from collections import deque
from fractions import Fraction
from functools import lru_cache

from theory.groups.cyc_linalg import charpoly, evaluate, nullspace, rref
from theory.groups.cyclotomic import Cyc, CyclotomicField, cyclotomic_field
from theory.groups.finite_group import FiniteGroup
from theory.groups.subgroups import derived_subgroup, subgroup_classes

ClassFunction = tuple[Cyc, ...]

#: Burnside's step skips a class sum whose eigenvalue candidates number more than this.
MAX_EIGENVALUE_CANDIDATES = 20000


def linear_characters(G: FiniteGroup, elements) -> list[dict[int, int]]:
    """Every linear character of the subgroup with these elements, as ``{h: a}`` meaning
    :math:`\\lambda(h) = \\zeta_N^a` with ``N = G.exponent``.

    Built up a chain :math:`H' = K_0 < K_1 < \\dots < H` with :math:`K_i = \\langle K_{i-1},
    a_i\\rangle`: if :math:`a_i^m \\in K_{i-1}` first for ``m``, then :math:`\\lambda(a_i)` is any
    m-th root of :math:`\\lambda(a_i^m)`. The order is lexicographic in the exponents chosen
    for ``a_1, a_2, ...`` with the last generator varying slowest (for ``direct_product(Z_a,
    Z_b)`` the character ``k*b + l`` is :math:`(i, j) \\mapsto \\zeta_a^{ik}\\zeta_b^{jl}`).
    """
    N, t = G.exponent, G.table
    members = set(elements)
    K = derived_subgroup(G, members)
    chars: list[tuple[dict[int, int], tuple[int, ...]]] = [({g: 0 for g in K}, ())]
    K_list = sorted(K)
    while len(K_list) < len(members):
        a = min(members.difference(K_list))
        power, m = a, 1
        while power not in chars[0][0]:
            power, m = t[power][a], m + 1
        powers = [G.identity]
        for _ in range(m - 1):
            powers.append(t[powers[-1]][a])
        new = []
        for chi, key in chars:
            x = chi[power]
            assert x % m == 0
            for s in range(m):
                e = x // m + s * N // m
                ext = {}
                for j, p in enumerate(powers):
                    for k in K_list:
                        ext[t[k][p]] = (chi[k] + j * e) % N
                new.append((ext, key + (s,)))
        chars = new
        K_list = sorted(chars[0][0])
    chars.sort(key=lambda ck: tuple(reversed(ck[1])))
    return [c for c, _ in chars]


def inner(G: FiniteGroup, a: ClassFunction, b: ClassFunction) -> Cyc:
    """:math:`\\langle a, b\\rangle = \\frac1{|G|}\\sum_g a(g)\\overline{b(g)}`."""
    acc = a[0].F.zero
    for cls, x, y in zip(G.conjugacy_classes(), a, b):
        if x and y:
            acc = acc + x * y.conjugate() * len(cls)
    return acc / G.order


def _int(x: Cyc, what: str) -> int:
    q = x.to_fraction()
    if q.denominator != 1:
        raise ArithmeticError(f"{what} = {q} should be an integer")
    return int(q)


def induced(G: FiniteGroup, F: CyclotomicField, H, lam: dict[int, int]) -> ClassFunction:
    """:math:`\\mathrm{Ind}_H^G\\lambda(g) =
    \\frac{|G|}{|H||C(g)|}\\sum_{h\\in H\\cap C(g)}\\lambda(h)`."""
    classes = G.conjugacy_classes()
    exps: list[list[int]] = [[] for _ in classes]
    for h in H:
        exps[G.class_index[h]].append(lam[h])
    return tuple(F.from_exponents(e) * Fraction(G.order, len(H) * len(cls)) if e else F.zero
                 for e, cls in zip(exps, classes))


def _key(chi: ClassFunction) -> tuple:
    return tuple(x.key for x in chi)


def _descending(chi: ClassFunction) -> tuple:
    """Sort key: the values class by class, larger real part first, then larger imaginary
    part (so the 2-dim irreps of D_n come in the order k = 1, 2, ...)."""
    out = []
    for x in chi:
        z = complex(x)
        out += [-round(z.real, 9), -round(z.imag, 9)]
    return tuple(out)


def _sorted(G: FiniteGroup, chars: list[ClassFunction]) -> tuple[ClassFunction, ...]:
    trivial = [c for c in chars if all(x == 1 for x in c)]
    rest = [c for c in chars if c is not trivial[0]]
    rest.sort(key=lambda c: (c[0].to_fraction(), _descending(c)))
    return tuple(trivial + rest)


@lru_cache(maxsize=64)
def irreducible_characters(G: FiniteGroup, induce: bool = True) -> tuple[ClassFunction, ...]:
    """The irreducible characters as class functions (values on
    ``G.conjugacy_classes()``), trivial first.

    Abelian groups: in the order of :func:`linear_characters` (for ``cyclic(n)`` character
    ``k`` is :math:`j \\mapsto \\zeta_n^{jk}`). Otherwise by degree, then by the values class
    by class, larger (real part, then imaginary part) first: for ``dihedral(n)`` the 2-dim
    irreps come as :math:`k = 1, 2, \\dots` with :math:`\\chi_k(r) = 2\\cos(2\\pi k/n)`.
    ``induce=False`` skips route 1 (for testing Burnside's route on its own).
    """
    F = cyclotomic_field(G.exponent)
    classes = G.conjugacy_classes()
    if G.is_abelian:
        return tuple(tuple(F.root(lam[cls[0]]) for cls in classes)
                     for lam in linear_characters(G, range(G.order)))
    found: list[ClassFunction] = []
    if induce:
        found = _by_induction(G, F)
    if sum(_int(c[0], "degree") ** 2 for c in found) < G.order:
        found = found + _burnside(G, F, found)
    if len(found) != len(classes) or sum(_int(c[0], "degree") ** 2 for c in found) != G.order:
        raise ArithmeticError(f"{G.name}: found {len(found)} irreducible characters for "
                              f"{len(classes)} classes")
    return _sorted(G, found)


def _by_induction(G: FiniteGroup, F: CyclotomicField) -> list[ClassFunction]:
    subgroups = subgroup_classes(G)  # largest first: small index, small degree first
    candidates = deque()
    for H in subgroups:
        for lam in linear_characters(G, H.elements):
            candidates.append(induced(G, F, H.elements, lam))
    found: list[ClassFunction] = []
    keys: set[tuple] = set()
    total = 0
    while candidates and total < G.order:
        psi = candidates.popleft()
        for chi in found:
            c = inner(G, psi, chi)
            if c:
                psi = tuple(x - y * c for x, y in zip(psi, chi))
        if _int(inner(G, psi, psi), "norm") != 1 or _key(psi) in keys:
            continue
        found.append(psi)
        keys.add(_key(psi))
        total += _int(psi[0], "degree") ** 2
        extra = [tuple(x.conjugate() for x in psi)]
        extra += [tuple(x * y for x, y in zip(psi, lin)) for lin in found if lin[0] == 1]
        candidates.extendleft(e for e in extra if _key(e) not in keys)
    return found


def _structure_constants(G: FiniteGroup) -> list[list[list[int]]]:
    """``a[i][j][l]``: :math:`K_iK_j = \\sum_l a_{ijl}K_l` for the class sums :math:`K_i`."""
    classes, t, inv, ci = G.conjugacy_classes(), G.table, G.inverse, G.class_index
    k = len(classes)
    a = [[[0] * k for _ in range(k)] for _ in range(k)]
    for i, Ci in enumerate(classes):
        for l, cls in enumerate(classes):
            g = cls[0]
            for x in Ci:
                a[i][ci[t[inv[x]][g]]][l] += 1
    return a


def _burnside(G: FiniteGroup, F: CyclotomicField,
              found: list[ClassFunction]) -> list[ClassFunction]:
    classes = G.conjugacy_classes()
    k, n = len(classes), G.order
    a = _structure_constants(G)

    def class_times(i: int, v: list[Cyc]) -> list[Cyc]:
        out = []
        for l in range(k):
            acc = F.zero
            for j in range(k):
                if a[i][j][l] and v[j]:
                    acc = acc + v[j] * a[i][j][l]
            out.append(acc)
        return out

    def times(u: list[Cyc], v: list[Cyc]) -> list[Cyc]:
        out = [F.zero] * k
        for i in range(k):
            if u[i]:
                out = [x + y * u[i] for x, y in zip(out, class_times(i, v))]
        return out

    # Central idempotents of the characters already found, and the ideal of the rest.
    E = [F.zero] * k
    for chi in found:
        d = _int(chi[0], "degree")
        E = [x + y.conjugate() * d / n for x, y in zip(E, chi)]
    residual = []
    for l in range(k):
        unit = [F.one if j == l else F.zero for j in range(k)]
        residual.append([x - y for x, y in zip(unit, class_times(l, E))])
    basis, _ = rref(residual, F)
    room = n - sum(_int(c[0], "degree") ** 2 for c in found)
    degrees = [d for d in range(1, math.isqrt(room) + 1) if n % d == 0]
    candidate_sets = {}
    for i in range(1, k):
        g, size = classes[i][0], len(classes[i])
        o = G.element_order(g)
        count = sum(math.comb(o + d - 1, d) for d in degrees)
        if count <= MAX_EIGENVALUE_CANDIDATES:
            cands = set()
            for d in degrees:
                for combo in itertools.combinations_with_replacement(range(o), d):
                    cands.add(F.from_exponents(c * (G.exponent // o) for c in combo) * size / d)
            candidate_sets[i] = cands
    order = sorted(candidate_sets, key=lambda i: len(candidate_sets[i]))
    todo, done = [basis], []
    while todo:
        S = todo.pop()
        if len(S) == 1:
            done.append(S[0])
            continue
        _, pivots = rref(S, F)
        for i in order:
            # Multiplication by K_i on S, in the coordinates given by the pivot columns.
            images = [class_times(i, row) for row in S]
            L = [[images[r][p] for r in range(len(S))] for p in pivots]
            poly = charpoly(L, F)
            roots = [mu for mu in candidate_sets[i] if not evaluate(poly, mu)]
            if len(roots) < 2:
                continue
            for mu in roots:
                shifted = [[L[r][c] - (mu if r == c else F.zero) for c in range(len(S))]
                           for r in range(len(S))]
                kernel = nullspace(shifted, F)
                vectors = [[sum((x * row[j] for x, row in zip(v, S)), F.zero) for j in range(k)]
                           for v in kernel]
                todo.append(rref(vectors, F)[0])
            break
        else:
            raise NotImplementedError(
                f"{G.name}: Burnside's step could not split a {len(S)}-dimensional ideal "
                "with the eigenvalue candidates it tries")
    out = []
    for z in done:
        square = times(z, z)
        p = next(j for j in range(k) if z[j])
        e = [x * z[p] / square[p] for x in z]  # the idempotent: z^2 = c z
        d2 = (e[0] * n).to_fraction()
        d = math.isqrt(int(d2))
        if d * d != d2:
            raise ArithmeticError(f"{G.name}: idempotent with d^2 = {d2}")
        out.append(tuple(x.conjugate() * n / d for x in e))
    return out
