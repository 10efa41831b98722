"""Small exact linear algebra over a cyclotomic field (lists of lists of :class:`Cyc`).

>>> from theory.groups.cyclotomic import cyclotomic_field
>>> F = cyclotomic_field(4)
>>> i = F.root(1)
>>> charpoly([[F.zero, -F.one], [F.one, F.zero]], F) == [F.one, F.zero, F.one]
True
>>> nullspace([[F.one, i], [-i, F.one]], F) == [[-i, F.one]]
True
"""
from __future__ import annotations

from theory.groups.cyclotomic import Cyc, CyclotomicField

Matrix = list[list[Cyc]]


def matmul(a: Matrix, b: Matrix, F: CyclotomicField) -> Matrix:
    cols = range(len(b[0])) if b else range(0)
    out = []
    for row in a:
        new = []
        for j in cols:
            acc = F.zero
            for x, brow in zip(row, b):
                y = brow[j]
                if x and y:
                    acc = acc + x * y
            new.append(acc)
        out.append(new)
    return out


def adjoint(a: Matrix) -> Matrix:
    """Conjugate transpose."""
    return [[a[i][j].conjugate() for i in range(len(a))] for j in range(len(a[0]))]


def identity(d: int, F: CyclotomicField) -> Matrix:
    return [[F.one if i == j else F.zero for j in range(d)] for i in range(d)]


def rref(rows: Matrix, F: CyclotomicField) -> tuple[Matrix, list[int]]:
    """Reduced row echelon form (zero rows dropped) and the pivot columns."""
    rows = [list(r) for r in rows]
    pivots: list[int] = []
    ncols = len(rows[0]) if rows else 0
    r = 0
    for c in range(ncols):
        p = next((i for i in range(r, len(rows)) if rows[i][c]), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        inv = rows[r][c].inverse()
        rows[r] = [x * inv for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c]:
                f = rows[i][c]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
    return rows[:r], pivots


def nullspace(a: Matrix, F: CyclotomicField) -> Matrix:
    """A basis (as rows) of ``{x : a x = 0}``."""
    ncols = len(a[0])
    rows, pivots = rref(a, F)
    basis = []
    for free in (c for c in range(ncols) if c not in pivots):
        x = [F.zero] * ncols
        x[free] = F.one
        for row, p in zip(rows, pivots):
            x[p] = -row[free]
        basis.append(x)
    return basis


def charpoly(a: Matrix, F: CyclotomicField) -> list[Cyc]:
    """Coefficients ``[c_0, ..., c_n]`` of ``det(x I - a)`` (Faddeev-LeVerrier)."""
    n = len(a)
    coeffs = [F.zero] * n + [F.one]
    m = [[F.zero] * n for _ in range(n)]
    for k in range(1, n + 1):
        am = matmul(a, m, F)
        m = [[am[i][j] + (coeffs[n - k + 1] if i == j else F.zero) for j in range(n)]
             for i in range(n)]
        am = matmul(a, m, F)
        trace = F.zero
        for i in range(n):
            trace = trace + am[i][i]
        coeffs[n - k] = -trace / k
    return coeffs


def evaluate(coeffs: list[Cyc], x: Cyc) -> Cyc:
    acc = x.F.zero
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc
