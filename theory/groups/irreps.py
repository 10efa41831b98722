r"""Irreducible representations of a finite group, exactly, and the operators of Li2 §4.2.

``irreps(G)`` gives every complex irrep :math:`C_k` with unitary matrices whose entries lie in
:math:`\mathbb Q(\zeta_N)` (``N`` the exponent), except that some need square roots of positive
elements of that field off the diagonal (Gram-Schmidt, see
:mod:`theory.groups.irrep_construction`). An irrep of type R is given by **real orthogonal**
matrices whenever a real construction exists (checked in the tests for every group listed
there); ``Irrep.is_real`` says so.

``real_irreps(G)`` gives the irreducible real representations:

* type R: the irrep itself (real orthogonal matrices), dimension :math:`d`;
* type C: the pair :math:`C_k, \bar C_k` as one block of dimension :math:`2d`, the realification
  :math:`\begin{pmatrix}\mathrm{Re}\,C_k & -\mathrm{Im}\,C_k\\ \mathrm{Im}\,C_k & \mathrm{Re}\,C_k
  \end{pmatrix}` of the member with the lower index (so :math:`e^{i\theta}` becomes the rotation
  by :math:`\theta`);
* type H: the realification of :math:`C_k` in the same way, dimension :math:`2d`. It is
  irreducible over :math:`\mathbb R` (its commutant is the quaternions) and its complexification
  is :math:`C_k \oplus C_k`.

>>> from theory.groups.constructors import cyclic, quaternion
>>> [(r.dim, r.type) for r in irreps(cyclic(3))]
[(1, 'R'), (1, 'C'), (1, 'C')]
>>> irreps(cyclic(3))[1].matrices[1]
Matrix([[-1/2 + sqrt(3)*I/2]])
>>> [(r.dim, r.type) for r in real_irreps(cyclic(3))]
[(1, 'R'), (2, 'C')]
>>> real_irreps(cyclic(3))[1].matrices[1]
Matrix([
[     -1/2, -sqrt(3)/2],
[sqrt(3)/2,       -1/2]])
>>> [(r.dim, r.type) for r in irreps(quaternion())]
[(1, 'R'), (1, 'R'), (1, 'R'), (1, 'R'), (2, 'H')]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import sympy as sp

from theory.groups.characters import irreducible_characters
from theory.groups.cyclotomic import Cyc, CyclotomicField, cyclotomic_field
from theory.groups.finite_group import FiniteGroup
from theory.groups.irrep_construction import construct

TYPES = {1: "R", 0: "C", -1: "H"}


def _sign(x: Cyc) -> int:
    """Sign of a nonzero real cyclotomic number (double precision, else 50 digits)."""
    v = complex(x).real
    if abs(v) < 1e-9:
        v = float(sp.re(sp.N(x.to_sympy(), 50)))
    return 1 if v > 0 else -1


def _sympy_matrices(exact, scale) -> tuple[sp.ImmutableMatrix, ...]:
    """Exact sympy matrices of :math:`D^{1/2}C(g)D^{-1/2}`. A real entry
    :math:`c\\sqrt{D_i/D_j}` is written :math:`\\pm\\sqrt{c^2D_i/D_j}`, a single square root."""
    d = len(exact[0])
    if scale is None:
        return tuple(sp.ImmutableMatrix(d, d, lambda i, j: m[i][j].to_sympy()) for m in exact)
    ratio = [[scale[i] / scale[j] for j in range(d)] for i in range(d)]
    cache: dict[tuple, sp.Expr] = {}

    def entry(x: Cyc, i: int, j: int) -> sp.Expr:
        if i == j or not x:
            return x.to_sympy()
        key = (x.key, i, j)
        if key not in cache:
            if x.is_real():
                cache[key] = _sign(x) * sp.sqrt((x * x * ratio[i][j]).to_sympy())
            else:
                cache[key] = sp.expand(x.to_sympy() * sp.sqrt(ratio[i][j].to_sympy()))
        return cache[key]

    return tuple(sp.ImmutableMatrix(d, d, lambda i, j: entry(m[i][j], i, j)) for m in exact)


def _realified_sympy(rep: Irrep) -> tuple[sp.ImmutableMatrix, ...]:
    """Sympy form of the realification, from the parts of the entries in the irrep's own
    (smaller) field."""
    d, scale = rep.dim, rep.scale
    factor = [[sp.Integer(1)] * d for _ in range(d)]
    if scale is not None:
        factor = [[sp.sqrt((scale[i] / scale[j]).to_sympy()) if i != j else sp.Integer(1)
                   for j in range(d)] for i in range(d)]
    out = []
    for m in rep.exact_matrices:
        parts = [[m[i][j].to_sympy_parts() for j in range(d)] for i in range(d)]

        def entry(r: int, c: int) -> sp.Expr:
            i, j = r % d, c % d
            re, im = parts[i][j]
            value = re if (r < d) == (c < d) else (im if r >= d else -im)
            return sp.expand(value * factor[i][j])

        out.append(sp.ImmutableMatrix(2 * d, 2 * d, entry))
    return tuple(out)


def _complex_matrices(exact, scale) -> tuple[tuple[tuple[complex, ...], ...], ...]:
    d = len(exact[0])
    f = [[1.0] * d for _ in range(d)]
    if scale is not None:
        f = [[math.sqrt(complex(scale[i] / scale[j]).real) for j in range(d)] for i in range(d)]
    return tuple(tuple(tuple(complex(m[i][j]) * f[i][j] for j in range(d)) for i in range(d))
                 for m in exact)


@dataclass(frozen=True, eq=False)
class Irrep:
    """A complex irreducible unitary representation of a finite group.

    ``exact_matrices[g]`` is :math:`C(g)` over ``field`` (tuples of rows of
    :class:`~theory.groups.cyclotomic.Cyc`); with ``scale = (D_1, ..., D_d)`` the unitary matrices
    are :math:`D^{1/2}C(g)D^{-1/2}`, otherwise :math:`C(g)` itself. ``matrices`` gives them as sympy
    matrices, ``character`` the exact values per element.
    """

    index: int
    dim: int
    type: str
    frobenius_schur: int
    conjugate_index: int
    exact_matrices: tuple
    scale: tuple[Cyc, ...] | None
    exact_character: tuple[Cyc, ...]
    construction: str

    @property
    def field(self) -> CyclotomicField:
        return self.exact_character[0].F

    @cached_property
    def is_real(self) -> bool:
        """Whether every matrix is real (always for type R in the groups tested)."""
        return all(x.is_real() for m in self.exact_matrices for row in m for x in row)

    @cached_property
    def matrices(self) -> tuple[sp.ImmutableMatrix, ...]:
        return _sympy_matrices(self.exact_matrices, self.scale)

    @cached_property
    def character(self) -> tuple[sp.Expr, ...]:
        return tuple(x.to_sympy() for x in self.exact_character)

    def to_complex(self) -> tuple[tuple[tuple[complex, ...], ...], ...]:
        """The matrices as nested tuples of Python complex numbers (double precision)."""
        return _complex_matrices(self.exact_matrices, self.scale)

    def __repr__(self) -> str:
        return f"Irrep(index={self.index}, dim={self.dim}, type={self.type!r})"


@dataclass(frozen=True, eq=False)
class RealIrrep:
    """An irreducible real orthogonal representation (see the module notes).

    ``complex_indices``: the complex irrep(s) it comes from (one, or a conjugate pair);
    ``multiplicity``: how often it occurs in the real regular representation (``d`` for types R
    and C, ``d/2`` for type H, with ``d`` the complex dimension); ``exact_matrices`` and
    ``scale`` as in :class:`Irrep`, with real entries; ``source``: the complex irrep it is
    built from.
    """

    dim: int
    type: str
    complex_indices: tuple[int, ...]
    multiplicity: int
    exact_matrices: tuple
    scale: tuple[Cyc, ...] | None
    exact_character: tuple[Cyc, ...]
    source: Irrep

    @property
    def field(self) -> CyclotomicField:
        return self.exact_character[0].F

    @cached_property
    def matrices(self) -> tuple[sp.ImmutableMatrix, ...]:
        if self.type == "R":
            return self.source.matrices
        return _realified_sympy(self.source)

    @cached_property
    def character(self) -> tuple[sp.Expr, ...]:
        if self.type == "R":
            return self.source.character
        return tuple(2 * x.to_sympy_parts()[0] for x in self.source.exact_character)

    def to_real(self) -> tuple[tuple[tuple[float, ...], ...], ...]:
        """The matrices as nested tuples of Python floats."""
        return tuple(tuple(tuple(x.real for x in row) for row in m)
                     for m in _complex_matrices(self.exact_matrices, self.scale))

    def __repr__(self) -> str:
        return f"RealIrrep(dim={self.dim}, type={self.type!r}, from={self.complex_indices})"


def irreps(G: FiniteGroup) -> tuple[Irrep, ...]:
    """Every complex irrep of ``G``, trivial first (see
    :func:`theory.groups.characters.irreducible_characters` for the order). Cached per group."""
    return _irreps(G, True, True)


@lru_cache(maxsize=64)
def _irreps(G: FiniteGroup, induce: bool, linear: bool) -> tuple[Irrep, ...]:
    """``induce=False`` / ``linear=False`` switch off the first routes (to test fallbacks)."""
    F = cyclotomic_field(G.exponent)
    chars = irreducible_characters(G, induce)
    ci, t = G.class_index, G.table
    keys = [tuple(x.key for x in chi) for chi in chars]
    out = []
    for k, chi in enumerate(chars):
        d = int(chi[0].to_fraction())
        fs = sum((chi[ci[t[g][g]]] for g in range(G.order)), F.zero) / G.order
        fs = int(fs.to_fraction())
        conj_index = keys.index(tuple(x.conjugate().key for x in chi))
        per_element = tuple(chi[ci[g]] for g in range(G.order))
        if d == 1:
            mats = tuple(((x,),) for x in per_element)
            scale, how = None, "linear character"
        else:
            built = construct(G, F, chi, TYPES[fs] == "R", irreps, linear=linear)
            mats, scale, how = built.matrices, built.scale, built.description
            for g, m in enumerate(mats):
                if sum((m[i][i] for i in range(d)), F.zero) != per_element[g]:
                    raise ArithmeticError(f"{G.name}: trace of irrep {k} at {g} is not chi")
        out.append(Irrep(k, d, TYPES[fs], fs, conj_index, mats, scale, per_element, how))
    return tuple(out)


def _realify(rep: Irrep) -> tuple[CyclotomicField, tuple, tuple[Cyc, ...] | None]:
    F = rep.field
    M = cyclotomic_field(math.lcm(F.N, 4))
    out = []
    for m in rep.exact_matrices:
        parts = [[F.real_imag(x, M) for x in row] for row in m]
        re = [[p[0] for p in row] for row in parts]
        im = [[p[1] for p in row] for row in parts]
        top = [tuple(a) + tuple(-b for b in bb) for a, bb in zip(re, im)]
        bottom = [tuple(b) + tuple(a) for a, b in zip(re, im)]
        out.append(tuple(top + bottom))
    scale = None if rep.scale is None else tuple(F.embed(x, M) for x in rep.scale) * 2
    return M, tuple(out), scale


@lru_cache(maxsize=64)
def real_irreps(G: FiniteGroup) -> tuple[RealIrrep, ...]:
    """The irreducible real representations, one per complex irrep of type R or H and one per
    conjugate pair of type C, in the order of the (lower) complex index.

    Raises NotImplementedError if an irrep of type R came out with complex matrices (no
    real construction was found; not the case for any group in the tests).
    """
    out = []
    for rep in irreps(G):
        if rep.type == "R":
            if not rep.is_real:
                raise NotImplementedError(f"{G.name}: no real form found for irrep {rep.index}")
            out.append(RealIrrep(rep.dim, "R", (rep.index,), rep.dim, rep.exact_matrices,
                                 rep.scale, rep.exact_character, rep))
            continue
        if rep.type == "C" and rep.conjugate_index < rep.index:
            continue
        M, mats, scale = _realify(rep)
        chars = tuple(sum((m[j][j] for j in range(2 * rep.dim)), M.zero) for m in mats)
        pair = (rep.index, rep.conjugate_index) if rep.type == "C" else (rep.index,)
        mult = rep.dim if rep.type == "C" else rep.dim // 2
        out.append(RealIrrep(2 * rep.dim, rep.type, pair, mult, mats, scale, chars, rep))
    return tuple(out)


def character_table(G: FiniteGroup) -> sp.ImmutableMatrix:
    """Exact character table, **classes x irreps**: entry ``[c, k]`` is :math:`\\chi_k` on
    ``G.conjugacy_classes()[c]``.

    >>> from theory.groups.constructors import symmetric
    >>> character_table(symmetric(3))
    Matrix([
    [1,  1,  2],
    [1, -1,  0],
    [1,  1, -1]])
    """
    reps = irreps(G)
    classes = G.conjugacy_classes()
    return sp.ImmutableMatrix(len(classes), len(reps),
                              lambda c, k: reps[k].character[classes[c][0]])


def regular_representation(G: FiniteGroup) -> tuple[sp.ImmutableSparseMatrix, ...]:
    """:math:`R_h` with :math:`\\mathbf e_{h h'} = R_h\\mathbf e_{h'}` (permutation matrices,
    sparse): ``R_h[table[h][k], k] = 1``."""
    n = G.order
    return tuple(sp.ImmutableSparseMatrix(n, n, {(G.table[h][k], k): 1 for k in range(n)})
                 for h in range(n))


def inversion_operator(G: FiniteGroup) -> sp.ImmutableSparseMatrix:
    """:math:`P\\mathbf e_h = \\mathbf e_{h^{-1}}` (symmetric, :math:`P^2 = I`)."""
    n = G.order
    return sp.ImmutableSparseMatrix(n, n, {(G.inverse[h], h): 1 for h in range(n)})


def projector_coefficients(G: FiniteGroup, real: bool = False) -> tuple[tuple[Cyc, ...], ...]:
    """Group-algebra coefficients :math:`p_k(g) = \\frac{d_k}{|G|}\\overline{\\chi_k(g)}` of
    the central idempotents, per irrep (``real=True``: per real irrep, a conjugate pair of
    type C summed), so that :math:`\\Pi_k = \\sum_g p_k(g) R_g`."""
    reps = irreps(G)
    groups = ([r.complex_indices for r in real_irreps(G)] if real
              else [(r.index,) for r in reps])
    out = []
    for idx in groups:
        coeffs = [reps[0].field.zero] * G.order
        for k in idx:
            coeffs = [c + x.conjugate() * reps[k].dim / G.order
                      for c, x in zip(coeffs, reps[k].exact_character)]
        out.append(tuple(coeffs))
    return tuple(out)


def isotypic_projectors(G: FiniteGroup, real: bool = False) -> tuple[sp.ImmutableMatrix, ...]:
    """:math:`\\Pi_k = \\frac{d_k}{|G|}\\sum_g\\overline{\\chi_k(g)}R_g`, one per irrep (or per
    real irrep with ``real=True``, where a conjugate pair's projectors are summed so that
    every projector is real). Entry ``[a, b]`` is :math:`p_k(ab^{-1})`."""
    n, t, inv = G.order, G.table, G.inverse
    out = []
    for coeffs in projector_coefficients(G, real):
        values = [c.to_sympy() for c in coeffs]
        out.append(sp.ImmutableMatrix(n, n, lambda a, b: values[t[a][inv[b]]]))
    return tuple(out)


def regular_decomposition(G: FiniteGroup) -> sp.ImmutableMatrix:
    """The unitary :math:`Q` of Li2 Eq. 8:
    :math:`Q^*R_hQ = \\bigoplus_k\\bigoplus_{r=1}^{d_k}C_k(h)`.

    Column ``(k, r, i)`` (irrep ``k`` in ``irreps(G)`` order, copy ``r``, row ``i``; ``i``
    fastest) is :math:`\\sqrt{d_k/|G|}\\sum_g\\overline{C_k(g)_{ir}}\\,\\mathbf e_g`, by Schur
    orthogonality an orthonormal basis in which :math:`R_h` acts on copy ``r`` by
    :math:`C_k(h)`.
    """
    n = G.order
    columns = []
    for rep in irreps(G):
        norm = sp.sqrt(sp.Rational(rep.dim, n))
        for r in range(rep.dim):
            for i in range(rep.dim):
                columns.append([sp.expand(norm * sp.conjugate(m[i, r])) for m in rep.matrices])
    return sp.ImmutableMatrix(n, n, lambda g, c: columns[c][g])
