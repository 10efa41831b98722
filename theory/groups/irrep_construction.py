r"""Unitary matrices of an irreducible representation, from its character, exactly.

Let :math:`e` be a self-adjoint idempotent of a subgroup's algebra :math:`\mathbb CH` whose
representation occurs in :math:`\mathrm{Res}_H\chi` exactly once: :math:`e_\lambda =
\frac1{|H|}\sum_h\overline{\lambda(h)}\,h` for a linear character :math:`\lambda`, or
:math:`e = \frac{d_\psi}{|H|}\sum_h\overline{\psi(h)_{11}}\,h` for an irrep :math:`\psi` of
:math:`H` (the fallback). With :math:`z_\chi = \frac{d}{|G|}\sum_g\overline{\chi(g)}\,g`,
:math:`f = z_\chi e` is a self-adjoint idempotent and the left ideal :math:`\mathbb CGf` is the
irrep, inside the regular representation. For :math:`b_i = g_if`,

.. math:: \langle g_if, g\,g_jf\rangle = f(g_j^{-1}g^{-1}g_i),

so every matrix entry is a coefficient of :math:`f`: no eigenvectors are computed.

* If some :math:`g_1, \dots, g_d` make the :math:`b_i` orthogonal (always, when
  :math:`\chi = \mathrm{Ind}_H^G\lambda`: coset representatives), the matrices
  :math:`C(g)_{ij} = f(g_j^{-1}g^{-1}g_i)/f(1)` are unitary with entries in
  :math:`\mathbb Q(\zeta_N)`.
* Otherwise Gram-Schmidt gives an orthogonal basis with squared norms :math:`D_i` and matrices
  :math:`C(g)` in :math:`\mathbb Q(\zeta_N)`; the unitary matrices are
  :math:`D^{1/2}C(g)D^{-1/2}` (square roots only off the diagonal).

For a real-valued :math:`\chi` of type R, a real :math:`\lambda` (values :math:`\pm1`) makes
:math:`f` real, hence real orthogonal matrices.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

from theory.groups.characters import linear_characters
from theory.groups.cyclotomic import Cyc, CyclotomicField
from theory.groups.finite_group import FiniteGroup
from theory.groups.subgroups import as_group, subgroup_classes

#: Node budget of the search for an orthogonal orbit basis (per seed).
SEARCH_BUDGET = 20000


@dataclass(frozen=True)
class Seed:
    """A self-adjoint idempotent ``{h: coefficient}`` of a subgroup, and where it came from."""

    coefficients: dict
    description: str
    real: bool


@dataclass(frozen=True)
class Construction:
    """Matrices ``C(g)`` over the field and the squared norms ``D`` (``None``: orthonormal)."""

    matrices: tuple[tuple[tuple[Cyc, ...], ...], ...]
    scale: tuple[Cyc, ...] | None
    description: str


def _linear_seeds(G: FiniteGroup, F: CyclotomicField, chi: tuple[Cyc, ...],
                  real: bool) -> Iterator[Seed]:
    ci, N = G.class_index, F.N
    for H in subgroup_classes(G):
        for lam in linear_characters(G, H.elements):
            is_real = all((2 * a) % N == 0 for a in lam.values())
            if real and not is_real:
                continue
            m = sum((chi[ci[h]] * F.root(-lam[h]) for h in H.elements), F.zero) / H.order
            if m != 1:
                continue
            coeffs = {h: F.root(-lam[h]) * Fraction(1, H.order) for h in H.elements}
            kind = "trivial" if not any(lam.values()) else ("real" if is_real else "complex")
            yield Seed(coeffs, f"a {kind} linear character of a subgroup of order {H.order}",
                       is_real)


def _irrep_seeds(G: FiniteGroup, F: CyclotomicField, chi: tuple[Cyc, ...], real: bool,
                 subgroup_irreps: Callable, skip_linear: bool) -> Iterator[Seed]:
    ci = G.class_index
    for H in subgroup_classes(G):
        if H.order == G.order:
            continue
        sub = as_group(G, H.elements)
        for psi in subgroup_irreps(sub):
            if (skip_linear and psi.dim == 1) or (real and not psi.is_real):
                continue
            pF = psi.exact_matrices[0][0][0].F
            diag = [pF.embed(m[0][0], F) for m in psi.exact_matrices]
            char = [pF.embed(x, F) for x in psi.exact_character]
            m = sum((chi[ci[h]] * c.conjugate() for h, c in zip(H.elements, char)),
                    F.zero) / H.order
            if m != 1:
                continue
            coeffs = {h: x.conjugate() * Fraction(psi.dim, H.order)
                      for h, x in zip(H.elements, diag)}
            yield Seed(coeffs, f"an irrep of dimension {psi.dim} of a subgroup of order {H.order}",
                       psi.is_real)


def _ideal_generator(G: FiniteGroup, F: CyclotomicField, chi: tuple[Cyc, ...],
                     seed: Seed) -> list[Cyc]:
    """Coefficients of :math:`f = z_\\chi e` on every element."""
    t, inv, ci = G.table, G.inverse, G.class_index
    d = chi[0].to_fraction()
    conj_chi = [x.conjugate() * (d / G.order) for x in chi]
    ncls = len(chi)
    f = []
    for x in range(G.order):
        per_class = [F.zero] * ncls
        for h, c in seed.coefficients.items():
            k = ci[t[x][inv[h]]]
            per_class[k] = per_class[k] + c
        f.append(sum((a * b for a, b in zip(conj_chi, per_class) if b), F.zero))
    return f


def _orthogonal_orbit(G: FiniteGroup, f: list[Cyc], d: int) -> list[int] | None:
    """``g_1 = e, ..., g_d`` with :math:`f(g_j^{-1}g_i) = 0` for ``i != j``, or None."""
    t, inv = G.table, G.inverse
    zero = {x for x in range(G.order) if not f[x]}
    candidates = sorted(zero)
    budget = [SEARCH_BUDGET]

    def extend(chosen: list[int], start: int) -> list[int] | None:
        if len(chosen) == d:
            return chosen
        for pos in range(start, len(candidates)):
            budget[0] -= 1
            if budget[0] < 0:
                return None
            g = candidates[pos]
            if all(t[inv[h]][g] in zero for h in chosen):
                found = extend(chosen + [g], pos + 1)
                if found:
                    return found
        return None

    return extend([G.identity], 0)


def _matrices(G: FiniteGroup, f: list[Cyc], basis: list[int]):
    """``T(g)_ij = f(g_j^{-1} g^{-1} g_i)`` for every g."""
    t, inv = G.table, G.inverse
    out = []
    for g in range(G.order):
        gi = inv[g]
        out.append([[f[t[inv[bj]][t[gi][bi]]] for bj in basis] for bi in basis])
    return out


def _gram_schmidt(G: FiniteGroup, F: CyclotomicField, f: list[Cyc], d: int):
    """Greedy ``g_i`` with independent ``g_i f``; returns (elements, K, D) with the orthogonal
    basis ``c_s = sum_j K[j][s] b_j`` and squared norms ``D``."""
    t, inv = G.table, G.inverse
    chosen: list[int] = []
    K: list[list[Cyc]] = []  # columns: c_s in terms of b_0..b_{s}
    D: list[Cyc] = []
    for g in range(G.order):
        # <b_i, b_new> = f(g^-1 g_i)
        ip = [f[t[inv[g]][gi]] for gi in chosen]
        proj = []
        for s in range(len(chosen)):
            c_s_b = sum((K[s][i].conjugate() * ip[i] for i in range(len(chosen))), F.zero)
            proj.append(c_s_b / D[s])
        new_norm = f[G.identity]
        for s in range(len(chosen)):
            c_s_b = proj[s] * D[s]
            new_norm = new_norm - c_s_b * c_s_b.conjugate() / D[s]
        if not new_norm:
            continue
        col = [F.zero] * len(chosen) + [F.one]
        for s in range(len(chosen)):
            for i in range(s + 1):
                col[i] = col[i] - proj[s] * K[s][i]
        K = [k + [F.zero] for k in K] + [col]
        chosen.append(g)
        D.append(new_norm)
        if len(chosen) == d:
            break
    return chosen, K, D


def construct(G: FiniteGroup, F: CyclotomicField, chi: tuple[Cyc, ...], want_real: bool,
              subgroup_irreps: Callable, linear: bool = True) -> Construction:
    """Unitary matrices for the irreducible character ``chi`` (values on classes).

    Seeds are tried largest subgroup first (so an induced, monomial form is found when there
    is one); the first seed with an orthogonal orbit basis wins, else the first seed is
    orthogonalised. ``want_real`` admits only real seeds when any exists.
    ``linear=False`` skips linear seeds (to test the fallback).
    """
    d = int(chi[0].to_fraction())

    def seeds(real: bool) -> Iterator[Seed]:
        if linear:
            yield from _linear_seeds(G, F, chi, real)
        yield from _irrep_seeds(G, F, chi, real, subgroup_irreps, skip_linear=linear)

    first = None
    for real in ([True, False] if want_real else [False]):
        for seed in seeds(real):
            f = _ideal_generator(G, F, chi, seed)
            if first is None:
                first = (seed, f)
            basis = _orthogonal_orbit(G, f, d)
            if basis:
                norm = f[G.identity].to_fraction()
                mats = _matrices(G, f, basis)
                return Construction(
                    tuple(tuple(tuple(x / norm for x in row) for row in m) for m in mats),
                    None, f"left ideal from {seed.description}; orthogonal orbit basis")
        if first is not None:
            break
    if first is None:
        raise NotImplementedError(
            f"{G.name}: no subgroup representation occurs exactly once in the restriction of "
            f"the irreducible character of degree {d}")
    seed, f = first
    chosen, K, D = _gram_schmidt(G, F, f, d)
    mats = _matrices(G, f, chosen)
    out = []
    for T in mats:
        C = []
        for r in range(d):
            row = []
            for s in range(d):
                acc = F.zero
                for i in range(d):
                    if K[r][i]:
                        for j in range(d):
                            if K[s][j] and T[i][j]:
                                acc = acc + K[r][i].conjugate() * T[i][j] * K[s][j]
                row.append(acc / D[r])
            C.append(tuple(row))
        out.append(tuple(C))
    return Construction(tuple(out), tuple(D),
                        f"left ideal from {seed.description}; Gram-Schmidt")
