r"""Li2 App. A.1, Eq. 23: the vertices of the simplex are strict local maxima of Eq. 22's
bound, derived from its definition.

Eq. 22 bounds the energy by :math:`f(\mathbf c)=\tfrac M8\sum_kc_k^2/d_k` on the simplex
:math:`\sum_kc_k=1`, :math:`c_k\ge0`. Along the edge from the vertex :math:`\mathbf e_{k_0}`
towards :math:`\mathbf e_j` (the feasible directions at a vertex are the nonnegative
combinations of these edges, and a first-order change is linear in the direction),
:math:`g(t)=f(\mathbf e_{k_0}+t(\mathbf e_j-\mathbf e_{k_0}))-f(\mathbf e_{k_0})`, a
polynomial in :math:`t` whose coefficient of :math:`t` decides strictness.

>>> d = derive_vertex_edges(12, (1, 1, 2)).result
>>> d[(2, 0)]["slope"], d[(2, 0)]["value"]
(-3/2, 3/4)
"""
from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

from theory.derivation import Derivation

t = sp.Symbol("t", nonnegative=True)


def derive_vertex_edges(M: int, dims: Sequence[int]) -> Derivation:
    r"""For every ordered pair :math:`(k_0, j)`, :math:`k_0\ne j`, of the nontrivial irreps
    with dimensions ``dims``: the vertex value :math:`f(\mathbf e_{k_0})`, the edge polynomial
    :math:`g(t)` and its slope :math:`g'(0)`, exactly."""
    if M < 1 or not dims or any(int(x) < 1 for x in dims):
        raise ValueError(f"M, dims: need M >= 1 and dimensions >= 1, got {M!r}, {dims!r}")
    c = sp.symbols(f"c0:{len(dims)}", nonnegative=True)
    f = sp.Rational(M, 8) * sum(ck**2 / int(d) for ck, d in zip(c, dims))
    out = {}
    d_ = Derivation(f"Eq. 23: the simplex vertices of f(c) = M/8 sum_k c_k^2/d_k (M={M}, "
                    f"dims={list(dims)})")
    d_.step("f(c) =", f)
    for k0 in range(len(dims)):
        vertex = {ck: int(i == k0) for i, ck in enumerate(c)}
        value = f.subs(vertex)
        for j in range(len(dims)):
            if j == k0:
                continue
            edge = {ck: (1 - t if i == k0 else t if i == j else 0) for i, ck in enumerate(c)}
            g = sp.expand(f.subs(edge) - value)
            out[(k0, j)] = {"value": value, "edge": g, "slope": g.diff(t).subs(t, 0)}
    first = next(iter(out.values()))
    d_.step("g(t) along the first edge =", first["edge"])
    d_.result = out
    return d_
