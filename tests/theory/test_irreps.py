"""theory.groups.irreps: exact irreps of every type, real irreps, R_h, P, projectors, Q (Li2 §4.2).

The property checks are exact (in Q(zeta_N), see theory.groups.rep_checks); the sympy matrices are
also compared exactly for the groups whose entries sympy writes as radicals, and numerically
(50 digits) for all.
"""
import cmath
import itertools
import math
import random

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from theory.groups.characters import _by_induction, irreducible_characters
from theory.groups.cyclotomic import cyclotomic_field
from theory.groups.constructors import _hamilton
from theory.groups import (
    alternating,
    cyclic,
    dihedral,
    direct_product,
    from_cayley_table,
    quaternion,
    symmetric,
)
from theory.groups.irreps import (
    Irrep,
    _irreps,
    character_table,
    inversion_operator,
    irreps,
    isotypic_projectors,
    real_irreps,
    regular_decomposition,
    regular_representation,
)
from theory.groups.rep_checks import (
    check_all,
    check_character,
    check_homomorphism,
    check_orthogonality,
    check_projectors,
    check_types,
    check_unitary,
)

GROUPS = [cyclic(1), cyclic(2), cyclic(5), cyclic(6), cyclic(7), cyclic(8),
          direct_product(cyclic(2), cyclic(4)), direct_product(cyclic(3), cyclic(3)),
          direct_product(cyclic(2), cyclic(3)), dihedral(1), dihedral(2), dihedral(3),
          dihedral(4), dihedral(5), dihedral(6), symmetric(3), symmetric(4), alternating(4),
          quaternion()]
ids = [G.name for G in GROUPS]

#: Groups whose matrix entries sympy writes in radicals it can multiply out exactly.
RADICAL_GROUPS = [cyclic(3), cyclic(4), cyclic(6), dihedral(3), dihedral(4), dihedral(6),
                  symmetric(3), alternating(4), quaternion(), direct_product(cyclic(2), cyclic(4))]


def types(G):
    return [(r.dim, r.type) for r in irreps(G)]


def is_zero_matrix(m) -> bool:
    return all(sp.expand(x) == 0 for x in m)


# -- the properties, exactly, on every listed group -------------------------------------------

@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_dimensions_count_and_character_orthogonality(G):
    reps = irreps(G)
    assert sum(r.dim ** 2 for r in reps) == G.order
    assert len(reps) == len(G.conjugacy_classes())
    assert not check_orthogonality(G)
    assert reps[0].dim == 1 and all(x == 1 for x in reps[0].exact_character)


@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_matrices_are_unitary_homomorphisms_with_the_character_as_trace(G):
    for rep in irreps(G):
        assert not check_homomorphism(G, rep)
        assert not check_unitary(G, rep)
        assert not check_character(G, rep)


@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_types_match_the_frobenius_schur_indicator(G):
    assert not check_types(G)
    for rep in irreps(G):
        nu = sum(rep.exact_character[G.table[g][g]] for g in range(G.order)) / G.order
        assert nu == {"R": 1, "C": 0, "H": -1}[rep.type] == rep.frobenius_schur
        if rep.type == "R":
            assert rep.is_real  # type R comes as real orthogonal matrices


@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_real_irreps_are_real_orthogonal_homomorphisms(G):
    reals = real_irreps(G)
    for r in reals:
        assert not check_homomorphism(G, r)
        assert not check_unitary(G, r)  # includes: every entry real
        assert not check_character(G, r)
    complex_covered = sorted(i for r in reals for i in r.complex_indices)
    assert complex_covered == list(range(len(irreps(G))))


@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_isotypic_projectors_in_the_group_algebra(G):
    assert not check_projectors(G)
    assert not check_projectors(G, real=True)


def test_types_of_the_named_groups():
    assert types(quaternion()) == [(1, "R")] * 4 + [(2, "H")]
    assert types(cyclic(5)) == [(1, "R")] + [(1, "C")] * 4
    assert types(cyclic(6)) == [(1, "R"), (1, "C"), (1, "C"), (1, "R"), (1, "C"), (1, "C")]
    assert [r.conjugate_index for r in irreps(cyclic(6))] == [0, 5, 4, 3, 2, 1]
    assert types(alternating(4)) == [(1, "R"), (1, "C"), (1, "C"), (3, "R")]
    assert types(symmetric(4)) == [(1, "R")] * 2 + [(2, "R")] + [(3, "R")] * 2
    for n in range(3, 7):
        assert {t for _, t in types(dihedral(n))} == {"R"}
        two = [complex(r.exact_character[1]) for r in irreps(dihedral(n)) if r.dim == 2]
        assert all(abs(z - 2 * math.cos(2 * math.pi * k / n)) < 1e-12
                   for k, z in enumerate(two, start=1))  # ordered by frequency k
        assert sorted(d for d, _ in types(dihedral(n))) == \
            [1] * (2 if n % 2 else 4) + [2] * ((n - 1) // 2 if n % 2 else (n - 2) // 2)
    assert {t for _, t in types(symmetric(3))} == {"R"}


def test_real_irreps_of_the_named_groups():
    def shape(G):
        return [(r.dim, r.type, r.multiplicity) for r in real_irreps(G)]

    assert shape(quaternion()) == [(1, "R", 1)] * 4 + [(4, "H", 1)]
    assert shape(cyclic(5)) == [(1, "R", 1), (2, "C", 1), (2, "C", 1)]
    assert shape(alternating(4)) == [(1, "R", 1), (2, "C", 1), (3, "R", 3)]
    assert [r.complex_indices for r in real_irreps(cyclic(6))] == [(0,), (1, 5), (2, 4), (3,)]


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 12])
def test_cyclic_irreps_are_the_fourier_characters_and_rotations(n):
    F = cyclotomic_field(n)
    for k, rep in enumerate(irreps(cyclic(n))):
        assert [m[0][0] for m in rep.exact_matrices] == [F.root(j * k) for j in range(n)]
    for r in real_irreps(cyclic(n)):
        k = r.complex_indices[0]
        if r.type == "C":
            theta = 2 * math.pi * k / n
            rot = ((math.cos(theta), -math.sin(theta)), (math.sin(theta), math.cos(theta)))
            assert all(abs(a - b) < 1e-14 for a, b in zip(itertools.chain(*r.to_real()[1]),
                                                           itertools.chain(*rot)))
            angle = 2 * sp.pi * k / n
            exact = sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])
            assert is_zero_matrix(r.matrices[1] - exact)


def test_product_of_cyclic_groups_labels_characters_like_elements():
    a, b = 2, 3
    G = direct_product(cyclic(a), cyclic(b))
    F = cyclotomic_field(G.exponent)
    for k, l in itertools.product(range(a), range(b)):
        chi = irreps(G)[k * b + l].exact_character
        for i, j in itertools.product(range(a), range(b)):
            e = (i * k * (G.exponent // a) + j * l * (G.exponent // b))
            assert chi[i * b + j] == F.root(e)


def test_character_table_of_s3_and_q8():
    assert character_table(symmetric(3)) == sp.Matrix([[1, 1, 2], [1, -1, 0], [1, 1, -1]])
    Q = character_table(quaternion())
    assert Q.shape == (5, 5)
    assert list(Q[:, 4]) == [2, -2, 0, 0, 0]  # classes {1}, {-1}, {+-i}, {+-j}, {+-k}
    assert sorted(Q.row(2)) == [-1, -1, 1, 1, 0] or sorted(Q.row(2)) == [-1, -1, 0, 1, 1]


# -- the sympy matrices themselves ----------------------------------------------------------

@pytest.mark.parametrize("G", RADICAL_GROUPS, ids=[G.name for G in RADICAL_GROUPS])
def test_sympy_matrices_exactly(G):
    for rep in list(irreps(G)) + list(real_irreps(G)):
        m = rep.matrices
        for a in range(G.order):
            assert is_zero_matrix(m[a] * m[a].H - sp.eye(m[a].shape[0]))
            for b in range(G.order):
                assert is_zero_matrix(m[a] * m[b] - m[G.table[a][b]])
        assert all(sp.expand(m[g].trace() - rep.character[g]) == 0 for g in range(G.order))


@pytest.mark.parametrize("G", GROUPS, ids=ids)
def test_sympy_matrices_match_the_exact_form_numerically(G):
    rng = random.Random(0)
    for rep in list(irreps(G)) + list(real_irreps(G)):
        floats = rep.to_complex() if isinstance(rep, Irrep) else rep.to_real()
        for g in rng.sample(range(G.order), min(G.order, 4)):
            exact = rep.matrices[g]
            assert all(abs(complex(sp.N(exact[i, j], 50)) - floats[g][i][j]) < 1e-13
                       for i in range(exact.rows) for j in range(exact.cols))
            if not isinstance(rep, Irrep) or rep.is_real:
                assert all(x.is_real for x in exact)


def test_dihedral_real_form_uses_rotations():
    c = sp.cos(2 * sp.pi / 5)
    rep = next(r for r in irreps(dihedral(5)) if sp.expand(r.character[1] - 2 * c) == 0)
    rot = rep.matrices[1]  # r
    assert is_zero_matrix(rot - sp.Matrix([[sp.cos(2 * sp.pi / 5), -sp.sin(2 * sp.pi / 5)],
                                           [sp.sin(2 * sp.pi / 5), sp.cos(2 * sp.pi / 5)]]))


# -- regular representation, inversion, projectors, Q ----------------------------------------

@pytest.mark.parametrize("G", [symmetric(3), quaternion(), dihedral(4), cyclic(5)],
                         ids=lambda G: G.name)
def test_regular_representation_and_inversion(G):
    R, P, n = regular_representation(G), inversion_operator(G), G.order
    e = [sp.Matrix.eye(n).col(h) for h in range(n)]
    for h1, h2 in itertools.product(range(n), repeat=2):
        assert R[h1] * R[h2] == R[G.table[h1][h2]]
        assert R[h1] * e[h2] == e[G.table[h1][h2]]
    assert P * P == sp.eye(n) and P.T == P
    assert all(P * e[h] == e[G.inverse[h]] for h in range(n))


@pytest.mark.parametrize("G", [symmetric(3), cyclic(4), cyclic(3), quaternion(), alternating(4)],
                         ids=lambda G: G.name)
@pytest.mark.parametrize("real", [False, True])
def test_projectors_as_sympy_matrices(G, real):
    Pis = isotypic_projectors(G, real=real)
    n = G.order
    R = regular_representation(G)
    for k, A in enumerate(Pis):
        for m, B in enumerate(Pis):
            assert is_zero_matrix(A * B - (A if k == m else sp.zeros(n)))
        assert is_zero_matrix(A * R[1] - R[1] * A)  # central
        if real:
            assert all(x.is_real for x in A)
    assert is_zero_matrix(sum(Pis, sp.zeros(n)) - sp.eye(n))
    if not real:  # rank of Pi_k = dim of the isotypic subspace = d_k^2
        assert [sp.expand(A.trace()) for A in Pis] == [r.dim ** 2 for r in irreps(G)]


@pytest.mark.parametrize("G", [symmetric(3), quaternion(), cyclic(4)], ids=lambda G: G.name)
def test_regular_decomposition_block_diagonalises_exactly(G):
    Q, R, n = regular_decomposition(G), regular_representation(G), G.order
    assert is_zero_matrix(Q.H * Q - sp.eye(n))
    for h in range(n):
        blocks = sp.diag(*[rep.matrices[h] for rep in irreps(G) for _ in range(rep.dim)])
        assert is_zero_matrix(Q.H * R[h] * Q - blocks)


@pytest.mark.parametrize("G", [symmetric(4), dihedral(5), alternating(4)], ids=lambda G: G.name)
def test_regular_decomposition_block_diagonalises_numerically(G):
    n = G.order
    Q = [[complex(sp.N(x, 30)) for x in row] for row in regular_decomposition(G).tolist()]
    floats = [rep.to_complex() for rep in irreps(G)]
    for h in (1, n - 1):
        blocks = [[0j] * n for _ in range(n)]
        offset = 0
        for rep, mats in zip(irreps(G), floats):
            for _ in range(rep.dim):
                for i, j in itertools.product(range(rep.dim), repeat=2):
                    blocks[offset + i][offset + j] = mats[h][i][j]
                offset += rep.dim
        for a, b in itertools.product(range(n), repeat=2):
            # (Q^* R_h Q)_{ab} = sum_g conj(Q[h g][a]) Q[g][b]
            v = sum(Q[G.table[h][g]][a].conjugate() * Q[g][b] for g in range(n))
            assert abs(v - blocks[a][b]) < 1e-12


# -- fallbacks and a group that is not an M-group ----------------------------------------------

def binary_tetrahedral():
    """SL(2, 3) as the 24 Hurwitz unit quaternions; not an M-group (its 2-dim irreps are not
    induced), so route 1 of theory.groups.characters cannot find them all."""
    from fractions import Fraction
    units = []
    for axis, sign in itertools.product(range(4), (1, -1)):
        q = [Fraction(0)] * 4
        q[axis] = Fraction(sign)
        units.append(tuple(q))
    units += [tuple(Fraction(s, 2) for s in signs)
              for signs in itertools.product((1, -1), repeat=4)]
    index = {q: i for i, q in enumerate(units)}
    return from_cayley_table([[index[_hamilton(p, q)] for q in units] for p in units],
                             name="SL(2,3)")


def test_binary_tetrahedral_needs_burnside_and_is_complete():
    G = binary_tetrahedral()
    F = cyclotomic_field(G.exponent)
    assert len(_by_induction(G, F)) < len(G.conjugacy_classes())
    assert sorted(types(G)) == [(1, "C"), (1, "C"), (1, "R"), (2, "C"), (2, "C"), (2, "H"),
                                (3, "R")]
    assert not check_all(G)


@pytest.mark.parametrize("G", [symmetric(4), alternating(4), quaternion(), dihedral(5)],
                         ids=lambda G: G.name)
def test_fallback_routes_agree_with_the_default(G):
    """Burnside's algorithm alone, and seeds from subgroup irreps instead of linear
    characters: same characters, and again unitary homomorphisms."""
    assert irreducible_characters(G, induce=False) == irreducible_characters(G)
    reps = _irreps(G, False, False)
    assert [r.exact_character for r in reps] == [r.exact_character for r in irreps(G)]
    assert any("irrep of dimension" in r.construction for r in reps if r.dim > 1)
    for rep in reps:
        assert not check_homomorphism(G, rep)
        assert not check_unitary(G, rep)
        assert rep.type != "R" or rep.is_real


# -- the checks are not vacuous -----------------------------------------------------------------

def test_checks_catch_planted_errors():
    G = symmetric(3)
    rep = irreps(G)[2]
    mats = list(rep.exact_matrices)
    swapped = Irrep(rep.index, rep.dim, rep.type, rep.frobenius_schur, rep.conjugate_index,
                    tuple([mats[0], mats[2], mats[1]] + mats[3:]), rep.scale,
                    rep.exact_character, "planted")
    assert check_homomorphism(G, swapped)
    doubled = Irrep(rep.index, rep.dim, rep.type, rep.frobenius_schur, rep.conjugate_index,
                    tuple(tuple(tuple(x * 2 for x in row) for row in m) for m in mats),
                    rep.scale, rep.exact_character, "planted")
    assert check_unitary(G, doubled) and check_character(G, doubled)
    F = rep.field
    wrong_char = Irrep(rep.index, rep.dim, rep.type, rep.frobenius_schur, rep.conjugate_index,
                       rep.exact_matrices, rep.scale,
                       (F.rational(3),) + rep.exact_character[1:], "planted")
    assert check_character(G, wrong_char)


# -- hypothesis: groups drawn from the families ---------------------------------------------------

def relabel(G, seed):
    perm = list(range(G.order))
    random.Random(seed).shuffle(perm)
    table = [[0] * G.order for _ in range(G.order)]
    for a, b in itertools.product(range(G.order), repeat=2):
        table[perm[a]][perm[b]] = perm[G.table[a][b]]
    return from_cayley_table(table, name=f"{G.name}'")


small_groups = st.one_of(
    st.integers(1, 12).map(cyclic),
    st.integers(1, 7).map(dihedral),
    st.tuples(st.integers(1, 5), st.integers(1, 5)).map(
        lambda ab: direct_product(cyclic(ab[0]), cyclic(ab[1]))),
    st.sampled_from([symmetric(3), alternating(4), quaternion(),
                     direct_product(dihedral(3), cyclic(2))]),
)


@given(small_groups, st.integers(0, 10**6), st.data())
def test_properties_hold_for_drawn_groups(G, seed, data):
    """Every property, exactly, on a drawn group whose elements are renumbered at random
    (so the identity is rarely index 0); homomorphism on drawn pairs."""
    H = relabel(G, seed)
    n = H.order
    reps = irreps(H)
    assert sum(r.dim ** 2 for r in reps) == n and len(reps) == len(H.conjugacy_classes())
    assert not check_orthogonality(H)
    assert not check_types(H)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                               min_size=1, max_size=10))
    for rep in list(reps) + list(real_irreps(H)):
        assert not check_homomorphism(H, rep, pairs)
        assert not check_unitary(H, rep)
        assert not check_character(H, rep)
    assert not check_projectors(H)
    # same irreps up to relabelling: the multiset of (dim, type)
    assert sorted(types(H)) == sorted(types(G))


@given(st.integers(1, 30))
def test_cyclic_fourier_characters_for_drawn_orders(n):
    reps = irreps(cyclic(n))
    assert [r.type for r in reps].count("R") == (2 if n % 2 == 0 else 1)
    assert all(r.conjugate_index == (-r.index) % n for r in reps)
    g = reps[1 % n].to_complex()[1 % n][0][0] if n > 1 else 1
    assert abs(g - cmath.exp(2j * cmath.pi / n)) < 1e-12 or n == 1


# -- larger groups --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("G", [alternating(5), direct_product(symmetric(4), cyclic(2)),
                               direct_product(quaternion(), cyclic(3)), dihedral(12)],
                         ids=lambda G: G.name)
def test_larger_groups(G):
    rng = random.Random(1)
    pairs = [(rng.randrange(G.order), rng.randrange(G.order)) for _ in range(200)]
    assert not check_orthogonality(G) and not check_types(G) and not check_projectors(G)
    for rep in list(irreps(G)) + list(real_irreps(G)):
        assert not check_homomorphism(G, rep, pairs)
        assert not check_unitary(G, rep) and not check_character(G, rep)
