"""numerics.li2.group_task (the group task by gathers, the float regular representation, Burnside's
dimensions) and the claim li2.groups-defs."""
import dataclasses

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from numerics.activations import ACTIVATIONS, activation
from numerics.li2.energy import energy
from numerics.li2.group_task import (
    cayley_tensor,
    centred_label_projection,
    class_algebra_dimensions,
    conjugacy_labels,
    dense_inputs,
    first_layer,
    group_energy,
    group_task,
    inversion,
    inversion_matrix,
    isotypic_dimensions,
    regular_matrices,
)
from numerics.random import make_generator, randn
from numerics.li2.two_layer import center
from theory.groups import cyclic, dihedral, direct_product, quaternion
from theory.groups.irreps import irreps, real_irreps
from verify.claims.li2.groups_defs import eq8_exact
from verify.claims.li2._groups import build_group, float_projectors
from verify.registry import get
from verify.runner import run_claim

SEEDS = st.integers(0, 2**31 - 1)
# Small groups of every family the claims use (cyclic, products, dihedral, Q8).
GROUPS = st.one_of(
    st.integers(1, 9).map(cyclic),
    st.integers(3, 6).map(dihedral),
    st.tuples(st.integers(2, 3), st.integers(2, 4)).map(
        lambda ab: direct_product(cyclic(ab[0]), cyclic(ab[1]))),
    st.just(quaternion()),
)


@pytest.fixture(scope="module")
def defs_result():
    return run_claim(get("li2.groups-defs"))


@settings(max_examples=25)
@given(GROUPS.filter(lambda G: G.order > 2), st.sampled_from((1.0, 0.6, 0.3)),
       st.sampled_from(tuple(ACTIVATIONS)), SEEDS)
def test_gather_energy_matches_the_dense_definition(G, ratio, name, seed):
    task = group_task(G.table, ratio=ratio, generator=make_generator(seed))
    X, Y = dense_inputs(task)
    w = randn(4, 2 * G.order, generator=make_generator(seed + 1))
    act = activation(name)
    torch.testing.assert_close(first_layer(w, task), w @ X.T, rtol=0, atol=0)
    dense = energy(w, X, center(Y), act)
    torch.testing.assert_close(group_energy(w, task, act), dense, rtol=1e-12,
                               atol=1e-12 * float(dense.abs().max() + 1))
    f = act(w @ X.T).T
    torch.testing.assert_close(centred_label_projection(f, task), center(Y).T @ f,
                               rtol=1e-12, atol=1e-12 * float(f.abs().sum() + 1))


@example(cyclic(1), 1.0, 0)   # found by exploration: the trivial group's whole task, one pair
@given(GROUPS, st.floats(0.05, 1.0), SEEDS)
def test_subsets_are_distinct_pairs_with_their_products(G, ratio, seed):
    M = G.order
    n = round(ratio * M * M)
    if ratio < 1 and n < 2:   # a subset too small to centre; the whole task is always built
        with pytest.raises(ValueError, match="ratio"):
            group_task(G.table, ratio=ratio, generator=make_generator(seed))
        return
    task = group_task(G.table, ratio=ratio, generator=make_generator(seed))
    again = group_task(G.table, ratio=ratio, generator=make_generator(seed))
    pairs = task.left * M + task.right
    assert task.n == n and pairs.unique().numel() == n
    assert torch.equal(pairs, again.left * M + again.right)
    assert all(G.table[a][b] == t for a, b, t in
               zip(task.left.tolist(), task.right.tolist(), task.target.tolist()))
    assert int(task.counts.sum()) == n


@given(GROUPS, SEEDS)
def test_float_regular_representation_and_inversion(G, seed):
    R = regular_matrices(G.table)
    P = inversion_matrix(G.table)
    t = torch.tensor(G.table)
    assert torch.equal(R[:, None] @ R[None, :], R[t])  # R_a R_b = R_ab for all pairs
    assert torch.equal(P @ P, torch.eye(G.order, dtype=P.dtype)) and torch.equal(P, P.T)
    task = group_task(G.table)
    u = randn(G.order, generator=make_generator(seed))
    torch.testing.assert_close(inversion(u, task), P @ u)


@given(GROUPS, SEEDS)
def test_burnside_and_isotypic_dimensions_match_the_exact_irreps(G, seed):
    exact = sorted(r.dim for r in irreps(G))
    numeric = class_algebra_dimensions(G.table, make_generator(seed))
    torch.testing.assert_close(numeric, torch.tensor(exact, dtype=torch.float64))
    iso = sorted(2 * r.source.dim**2 if r.type == "C" else r.source.dim**2
                 for r in real_irreps(G))
    assert isotypic_dimensions(G.table, make_generator(seed)).tolist() == iso
    labels = conjugacy_labels(G.table).tolist()
    assert sorted(set(labels)) == sorted(min(c) for c in G.conjugacy_classes())


@given(GROUPS)
def test_float_projectors_are_the_orthogonal_isotypic_projectors(G):
    Pi = float_projectors(G)
    eye = torch.eye(G.order, dtype=torch.float64)
    torch.testing.assert_close(Pi.sum(0), eye)
    torch.testing.assert_close(Pi @ Pi, Pi, atol=1e-12, rtol=0)
    torch.testing.assert_close(Pi, Pi.mT)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="square"):
        cayley_tensor([[0, 1]])
    with pytest.raises(ValueError, match="range"):
        cayley_tensor([[0, 2], [1, 0]])
    with pytest.raises(ValueError, match="identity"):
        group_task([[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="ratio"):
        group_task(cyclic(3).table, ratio=1.5)
    with pytest.raises(ValueError, match="generator"):
        group_task(cyclic(3).table, ratio=0.5)
    with pytest.raises(ValueError, match="2M"):
        group_energy(torch.zeros(5, dtype=torch.float64), group_task(cyclic(3).table),
                     activation("x2"))
    with pytest.raises(ValueError, match="Z<n>"):
        build_group("G7")


def test_groups_defs_control_is_caught_on_the_nonabelian_groups_only(defs_result):
    failed = {e.quantity.split(":")[0] for e in defs_result.control.evidence if e.ok is False}
    # Swapping the operands is invisible on abelian groups and caught on every other one.
    assert failed == {"S3", "D4", "Q8", "S4"}


def test_each_groups_defs_route_can_fail():
    G = dihedral(3)
    # The exact route of Eq. 8: transposed blocks are not a homomorphism on D3.
    def transposed(rep, h):
        return [list(row) for row in zip(*rep.exact_matrices[h])]

    residual, rank = eq8_exact(G, block=transposed)
    assert residual and rank == G.order
    # The isotypic dimensions with m_k = 1 (d_k instead of d_k^2) are rejected.
    claim = get("li2.groups-defs")
    wrong = dataclasses.replace(
        claim, stated={**claim.stated,
                       "isotypic_dimension": lambda d, kind: 2 * d if kind == "C" else d})
    result = run_claim(wrong, overrides={"groups": ("S3",)}, control=False)
    bad = [e.quantity for e in result.evidence if e.ok is False]
    assert bad == ["S3: real isotypic dimensions m_k d_k = d_k^2"]
    # sum d_k^2 = M against sum d_k = M: the measured (Burnside) route disagrees.
    wrong = dataclasses.replace(claim, stated={**claim.stated, "dimension_sum": lambda M: M - 2})
    result = run_claim(wrong, overrides={"groups": ("S3",)}, control=False)
    assert [e.quantity for e in result.evidence if e.ok is False] == ["S3: sum_k d_k^2 = M"]
