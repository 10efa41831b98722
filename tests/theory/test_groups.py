"""theory.groups: Cayley tables, the named families, classes, and the table validator."""
import math
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from theory.groups import (
    FiniteGroup,
    alternating,
    cyclic,
    dihedral,
    direct_product,
    from_cayley_table,
    quaternion,
    subgroup_classes,
    symmetric,
)


def relabel(G: FiniteGroup, seed: int) -> FiniteGroup:
    """The same group with its elements renumbered at random (the identity moves too)."""
    perm = list(range(G.order))
    random.Random(seed).shuffle(perm)  # new index of old element g is perm[g]
    table = [[0] * G.order for _ in range(G.order)]
    for a in range(G.order):
        for b in range(G.order):
            table[perm[a]][perm[b]] = perm[G.table[a][b]]
    return from_cayley_table(table, name=f"{G.name} relabelled")


def is_group(G: FiniteGroup) -> bool:
    return from_cayley_table(G.table).inverse == G.inverse


FAMILIES = [cyclic(1), cyclic(6), cyclic(7), dihedral(1), dihedral(2), dihedral(3), dihedral(6),
            symmetric(1), symmetric(3), symmetric(4), alternating(3), alternating(4),
            quaternion(), direct_product(cyclic(2), cyclic(4)),
            direct_product(symmetric(3), cyclic(2), cyclic(2))]


@pytest.mark.parametrize("G", FAMILIES, ids=lambda G: G.name)
def test_named_groups_pass_the_validator(G):
    assert is_group(G)
    assert G.identity == 0
    assert all(G.table[g][G.inverse[g]] == G.identity == G.table[G.inverse[g]][g]
               for g in range(G.order))
    assert len(set(G.elements)) == G.order


def test_orders_names_and_abelianness():
    orders = [G.order for G in (cyclic(5), dihedral(5), symmetric(4), alternating(4))]
    assert orders == [5, 10, 24, 12]
    assert [G.name for G in (cyclic(5), dihedral(5), symmetric(4), quaternion())] == \
        ["Z5", "D5", "S4", "Q8"]
    assert dihedral(1).is_abelian and dihedral(2).is_abelian and not dihedral(3).is_abelian
    assert alternating(3).is_abelian and not alternating(4).is_abelian
    assert [alternating(n).order for n in (1, 2, 3)] == [1, 1, 3]
    assert not quaternion().is_abelian
    assert direct_product(cyclic(2), cyclic(3)).is_abelian
    assert not direct_product(cyclic(2), symmetric(3)).is_abelian


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_dihedral_relations(n):
    G = dihedral(n)
    r, s = 1, n
    assert G.power(r, n) == G.identity and G.element_order(r) == n
    assert G.table[s][s] == G.identity
    assert G.table[G.table[s][r]][s] == G.inverse[r]  # s r s = r^-1
    assert G.elements[r] == "r" and G.elements[s] == "s"
    # classes: (n+3)/2 for odd n, (n+6)/2 for even n
    assert len(G.conjugacy_classes()) == ((n + 3) // 2 if n % 2 else (n + 6) // 2)


def test_quaternion_relations():
    G = quaternion()
    idx = {label: g for g, label in enumerate(G.elements)}
    t = G.table
    for u in "ijk":
        assert t[idx[u]][idx[u]] == idx["-1"]
    assert t[idx["i"]][idx["j"]] == idx["k"] and t[idx["j"]][idx["i"]] == idx["-k"]
    assert t[idx["j"]][idx["k"]] == idx["i"] and t[idx["k"]][idx["i"]] == idx["j"]
    assert sorted(len(c) for c in G.conjugacy_classes()) == [1, 1, 2, 2, 2]


def test_symmetric_composition_convention():
    G = symmetric(3)
    idx = {label: g for g, label in enumerate(G.elements)}
    # (p*q)(i) = p(q(i)): (0 1) after (1 2) is the 3-cycle 0->1->2->0... i.e. (0 1 2)
    assert G.table[idx["(0 1)"]][idx["(1 2)"]] == idx["(0 1 2)"]
    assert G.table[idx["(1 2)"]][idx["(0 1)"]] == idx["(0 2 1)"]


@pytest.mark.parametrize("G, sizes", [
    (symmetric(4), [1, 3, 6, 6, 8]), (alternating(4), [1, 3, 4, 4]), (dihedral(4), [1, 1, 2, 2, 2]),
    (symmetric(3), [1, 2, 3]), (cyclic(5), [1] * 5)], ids=lambda x: getattr(x, "name", ""))
def test_conjugacy_classes(G, sizes):
    classes = G.conjugacy_classes()
    assert classes[0] == (G.identity,)
    assert sorted(g for c in classes for g in c) == list(range(G.order))
    assert sorted(len(c) for c in classes) == sizes
    for c in classes:  # closed under conjugation
        assert {G.table[G.table[x][c[0]]][G.inverse[x]] for x in range(G.order)} == set(c)
    assert [G.class_index[c[0]] for c in classes] == list(range(len(classes)))


def test_element_orders_and_exponent():
    assert symmetric(4).exponent == 12 and quaternion().exponent == 4 and cyclic(12).exponent == 12
    assert direct_product(cyclic(4), cyclic(6)).exponent == 12
    G = symmetric(4)
    assert sorted({G.element_order(g) for g in range(G.order)}) == [1, 2, 3, 4]


def test_direct_product_is_componentwise():
    A, B = dihedral(3), cyclic(4)
    G = direct_product(A, B)
    assert G.order == 24 and G.name == "D3 x Z4"
    for a1, b1, a2, b2 in [(1, 2, 4, 3), (5, 0, 2, 1), (3, 3, 3, 3)]:
        prod = G.table[a1 * 4 + b1][a2 * 4 + b2]
        assert prod == A.table[a1][a2] * 4 + B.table[b1][b2]
    assert G.elements[1 * 4 + 2] == "(r, 2)"


def test_subgroup_classes():
    assert len(subgroup_classes(symmetric(4))) == 11
    assert len(subgroup_classes(direct_product(cyclic(2), cyclic(2), cyclic(2)))) == 16
    assert [H.order for H in subgroup_classes(quaternion())] == [8, 4, 4, 4, 2, 1]


def test_equality_and_hash():
    assert cyclic(4) == cyclic(4) and hash(cyclic(4)) == hash(cyclic(4))
    assert cyclic(4) != direct_product(cyclic(2), cyclic(2))
    assert repr(cyclic(4)) == "FiniteGroup('Z4', order=4)"


# -- bad arguments ---------------------------------------------------------------------------

@pytest.mark.parametrize("make, arg", [
    (cyclic, 0), (cyclic, -3), (cyclic, 2.5), (cyclic, True), (dihedral, 0), (symmetric, 0),
    (symmetric, 7), (alternating, 0), (alternating, 9), (cyclic, 10**6)])
def test_bad_parameters_name_the_parameter_and_range(make, arg):
    with pytest.raises(ValueError, match=r"^n must be an integer in 1\.\.\d+, got "):
        make(arg)


def test_bad_direct_product_arguments():
    with pytest.raises(ValueError, match="groups: direct_product needs at least one group"):
        direct_product()
    with pytest.raises(ValueError, match=r"groups\[1\] must be a FiniteGroup"):
        direct_product(cyclic(2), 3)
    with pytest.raises(ValueError, match="groups: the product has order 4096"):
        direct_product(cyclic(64), cyclic(64))


# -- the validator ---------------------------------------------------------------------------

@pytest.mark.parametrize("table, message", [
    ([], "table must have at least one row"),
    ([[0, 1], [1]], "not square: row 1 has 1 entries, expected 2"),
    ([[0, 1], [1, 2]], r"not closed: table\[1\]\[1\] = 2 is not an element index in range\(2\)"),
    ([[0, -1], [1, 0]], r"not closed: table\[0\]\[1\] = -1"),
    ([[0, 1.5], [1, 0]], r"not closed: table\[0\]\[1\] = 1.5 is not an integer"),
    ([[0, True], [1, 0]], r"not closed: table\[0\]\[1\] = True is a bool"),
    ([[0, 1, 2], [1, 2, 0], [2, 0, 2]], r"^not associative: \(1\*1\)\*2 = 2 but 1\*\(1\*2\) = 1$"),
    # x*y = x (left-zero band): associative, no identity
    ([[0, 0], [1, 1]], "^no identity: no element e with e\\*a = a\\*e = a for all a$"),
    # max on {0,1,2}: associative, identity 0, but nothing inverts 1
    ([[0, 1, 2], [1, 1, 2], [2, 2, 2]],
     r"^no inverse: element 1 has no b with 1\*b = b\*1 = 0 \(the identity\)$"),
])
def test_validator_names_the_first_violation(table, message):
    with pytest.raises(ValueError, match=message):
        from_cayley_table(table)


def test_validator_reports_lexicographically_first_associativity_failure():
    # A loop of order 5 (Latin square, identity 0, every element its own inverse): a group
    # of order 5 is Z5, where only 0 is self-inverse, so this table is not associative.
    t = [[0, 1, 2, 3, 4], [1, 0, 3, 4, 2], [2, 4, 0, 1, 3], [3, 2, 4, 0, 1], [4, 3, 1, 2, 0]]
    with pytest.raises(ValueError) as info:
        from_cayley_table(t)
    a, b, c = (int(x) for x in re.match(r"not associative: \((\d+)\*(\d+)\)\*(\d+)",
                                        str(info.value)).groups())
    lhs, rhs = t[t[a][b]][c], t[a][t[b][c]]
    assert str(info.value) == f"not associative: ({a}*{b})*{c} = {lhs} but {a}*({b}*{c}) = {rhs}"
    assert lhs != rhs
    assert all(t[t[x][y]][z] == t[x][t[y][z]]
               for x in range(5) for y in range(5) for z in range(5) if (x, y, z) < (a, b, c))


def test_direct_construction_checks_identity_and_inverse():
    with pytest.raises(ValueError, match="identity=1 is not a left identity"):
        FiniteGroup(((0, 1), (1, 0)), 1, (0, 1))
    with pytest.raises(ValueError, match="inverse"):
        FiniteGroup(((0, 1, 2), (1, 2, 0), (2, 0, 1)), 0, (0, 1, 2))


GROUP_TABLES = st.sampled_from([cyclic(5), cyclic(8), dihedral(3), dihedral(4), quaternion(),
                                alternating(4), direct_product(cyclic(2), cyclic(2))])


@given(GROUP_TABLES, st.integers(0, 10**6))
def test_relabelled_groups_are_groups_with_the_same_class_sizes(G, seed):
    H = relabel(G, seed)
    assert sorted(map(len, H.conjugacy_classes())) == sorted(map(len, G.conjugacy_classes()))
    assert H.conjugacy_classes()[0] == (H.identity,)
    assert H.exponent == G.exponent and H.is_abelian == G.is_abelian


@given(GROUP_TABLES, st.integers(0, 10**6), st.data())
def test_any_changed_entry_is_rejected(G, seed, data):
    """A group table is a Latin square, so changing one entry always leaves a non-group."""
    H = relabel(G, seed)
    a = data.draw(st.integers(0, G.order - 1))
    b = data.draw(st.integers(0, G.order - 1))
    new = data.draw(st.integers(0, G.order - 1).filter(lambda x: x != H.table[a][b]))
    table = [list(r) for r in H.table]
    table[a][b] = new
    with pytest.raises(ValueError, match="^(not associative|no identity|no inverse)"):
        from_cayley_table(table)


def test_large_tables_use_lights_test_and_still_reject():
    G = cyclic(150)  # above FULL_ASSOCIATIVITY_ORDER
    assert is_group(G)
    table = [list(r) for r in G.table]
    table[7][9] = 17
    with pytest.raises(ValueError, match="^not associative"):
        from_cayley_table(table)


def test_group_order_bounds_are_consistent():
    assert math.factorial(6) == symmetric(6).order == 2 * alternating(6).order
