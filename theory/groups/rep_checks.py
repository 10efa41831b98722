r"""Exact checks of irreps and of the operators of :mod:`theory.groups.irreps` (escnn-style
``check_*``).

Every check works in :math:`\mathbb Q(\zeta_N)` and returns a list of violations (empty when the
property holds), each a sentence naming the elements involved, so a test reads
``assert not check_homomorphism(G, rep)`` and a failure prints what broke.
Matrices with a ``scale`` :math:`D` are checked in the form :math:`C(g)`: :math:`D^{1/2}C
D^{-1/2}` is a homomorphism iff :math:`C` is, and unitary iff :math:`C^*DC = D`.

>>> from theory.groups.constructors import dihedral
>>> check_all(dihedral(5))
[]
"""
from __future__ import annotations

from collections.abc import Iterable

from theory.groups.characters import inner, irreducible_characters
from theory.groups.cyc_linalg import adjoint, matmul
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, projector_coefficients, real_irreps

MAX_REPORTED = 5


def _first(violations: Iterable[str]) -> list[str]:
    out = []
    for v in violations:
        out.append(v)
        if len(out) == MAX_REPORTED:
            break
    return out


def check_homomorphism(G: FiniteGroup, rep, pairs=None) -> list[str]:
    """:math:`\\rho(a)\\rho(b) = \\rho(ab)` for all pairs (or the given ``pairs``)."""
    F, mats, t = rep.field, rep.exact_matrices, G.table
    pairs = pairs if pairs is not None else ((a, b) for a in range(G.order)
                                             for b in range(G.order))
    return _first(f"rho({a}) rho({b}) != rho({t[a][b]})" for a, b in pairs
                  if [list(r) for r in matmul(mats[a], mats[b], F)]
                  != [list(r) for r in mats[t[a][b]]])


def check_unitary(G: FiniteGroup, rep) -> list[str]:
    """:math:`C(g)^*DC(g) = D` (:math:`D = I` without a scale), and real entries for a
    :class:`~theory.groups.irreps.RealIrrep`."""
    F, d = rep.field, len(rep.exact_matrices[0])
    D = [[(rep.scale[i] if rep.scale else F.one) if i == j else F.zero for j in range(d)]
         for i in range(d)]

    def bad(g: int) -> bool:
        m = [list(r) for r in rep.exact_matrices[g]]
        return matmul(matmul(adjoint(m), D, F), m, F) != D

    out = [f"rho({g}) is not unitary" for g in range(G.order) if bad(g)]
    if hasattr(rep, "complex_indices"):
        out += [f"rho({g}) has a non-real entry" for g in range(G.order)
                if not all(x.is_real() for row in rep.exact_matrices[g] for x in row)]
    return _first(out)


def check_character(G: FiniteGroup, rep) -> list[str]:
    """The trace of every matrix equals the character."""
    F, d = rep.field, len(rep.exact_matrices[0])
    return _first(f"trace rho({g}) != chi({g})" for g, m in enumerate(rep.exact_matrices)
                  if sum((m[i][i] for i in range(d)), F.zero) != rep.exact_character[g])


def check_orthogonality(G: FiniteGroup) -> list[str]:
    """Count, :math:`\\sum d^2 = |G|`, row orthogonality :math:`\\langle\\chi_k,\\chi_l\\rangle =
    \\delta_{kl}` and column orthogonality :math:`\\sum_k\\chi_k(g)\\overline{\\chi_k(h)} =
    |C_G(g)|\\,[g\\sim h]`."""
    chars = irreducible_characters(G)
    classes = G.conjugacy_classes()
    out = []
    if len(chars) != len(classes):
        out.append(f"{len(chars)} irreps for {len(classes)} classes")
    total = sum(int(c[0].to_fraction()) ** 2 for c in chars)
    if total != G.order:
        out.append(f"sum of d^2 = {total}, not |G| = {G.order}")
    for k, a in enumerate(chars):
        for m, b in enumerate(chars):
            if inner(G, a, b) != (1 if k == m else 0):
                out.append(f"<chi_{k}, chi_{m}> = {inner(G, a, b)!r}")
    F = chars[0][0].F
    for c, ca in enumerate(classes):
        for e, cb in enumerate(classes):
            s = sum((chi[c] * chi[e].conjugate() for chi in chars), F.zero)
            expected = G.order // len(ca) if c == e else 0
            if s != expected:
                out.append(f"column orthogonality fails for classes {c}, {e}")
    return _first(out)


def check_types(G: FiniteGroup) -> list[str]:
    """Frobenius-Schur indicator against type and conjugate index; type R, C, H consistent
    with whether the character is real; :math:`\\langle\\chi_{\\mathbb R},
    \\chi_{\\mathbb R}\\rangle` of a real irrep is 1, 2 or 4 (its commutant R, C or H)."""
    out = []
    reps = irreps(G)
    for r in reps:
        real_char = all(x.is_real() for x in r.exact_character)
        if r.type == "C" and (real_char or r.conjugate_index == r.index):
            out.append(f"irrep {r.index}: type C but its character is real")
        if r.type in "RH" and (not real_char or r.conjugate_index != r.index):
            out.append(f"irrep {r.index}: type {r.type} but its character is not real")
        if r.type == "H" and r.dim % 2:
            out.append(f"irrep {r.index}: type H in odd dimension {r.dim}")
        conj = reps[r.conjugate_index].exact_character
        if any(x.conjugate() != y for x, y in zip(r.exact_character, conj)):
            out.append(f"irrep {r.index}: conjugate_index {r.conjugate_index} is wrong")
    for r in real_irreps(G):
        F = r.field
        norm = sum((x * x for x in r.exact_character), F.zero) / G.order
        if norm != {"R": 1, "C": 2, "H": 4}[r.type]:
            out.append(f"real irrep from {r.complex_indices}: <chi, chi> = {norm!r}")
    dims = sum(r.dim * r.multiplicity for r in real_irreps(G))
    if dims != G.order:
        out.append(f"real irreps with multiplicities fill {dims} dimensions, not {G.order}")
    return _first(out)


def _convolve(G: FiniteGroup, p, q):
    F = p[0].F
    out = [F.zero] * G.order
    t = G.table
    for a, x in enumerate(p):
        if x:
            for b, y in enumerate(q):
                if y:
                    out[t[a][b]] = out[t[a][b]] + x * y
    return out


def check_projectors(G: FiniteGroup, real: bool = False) -> list[str]:
    """:math:`\\Pi_k\\Pi_l = \\delta_{kl}\\Pi_k` and :math:`\\sum_k\\Pi_k = I`, as identities of
    the group algebra (:math:`\\Pi_k = \\sum_g p_k(g)R_g` and the :math:`R_g` are independent)."""
    ps = projector_coefficients(G, real)
    F = ps[0][0].F
    out = []
    for k, p in enumerate(ps):
        for m, q in enumerate(ps):
            expected = list(p) if k == m else [F.zero] * G.order
            if _convolve(G, p, q) != expected:
                out.append(f"Pi_{k} Pi_{m} != {'Pi_' + str(k) if k == m else '0'}")
    total = [sum((p[g] for p in ps), F.zero) for g in range(G.order)]
    if total != [F.one if g == G.identity else F.zero for g in range(G.order)]:
        out.append("sum of the projectors is not I")
    return _first(out)


def check_all(G: FiniteGroup) -> list[str]:
    """Every check above, on every complex and real irrep of ``G``."""
    out = check_orthogonality(G) + check_types(G) + check_projectors(G)
    out += check_projectors(G, real=True)
    for rep in irreps(G) + real_irreps(G):
        name = (f"real irrep from {rep.complex_indices}" if hasattr(rep, "complex_indices")
                else f"irrep {rep.index}")
        for check in (check_homomorphism, check_unitary, check_character):
            out += [f"{name}: {v}" for v in check(G, rep)]
    return _first(out)
