"""li2.appA2 (li2.secA2): the verdict and what decides it, the cross-feature identities on
sympy matrices and torch tensors, the arrangement by target, and each route's power to reject
a wrong constant or a wrong projector formula.

Finding pinned down: 'features from different irreps are orthogonal, so Ft^T Ft is block
diagonal' fails on Z_4 (the smallest case; also Z_6, Z_8, D_5, A_4): the square parts of the
nodes of irreps k and k + M/2 (Z_M) coincide. The cross parts are block diagonal, and every
other printed fact holds on Z_7 and D_4, exactly on Z_3 and D_4.
"""
import dataclasses

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.group_task import group_task, inversion, regular_matrices
from numerics.random import make_generator
from numerics.li2.target_reconstruction import pair_parts, target_arrangement
from tests.planted import failed_quantities
from theory.groups.irreps import regular_representation
from theory.li2.target_reconstruction import derive_cross_feature, derive_square_decoupling
from verify.claims.li2.appA2 import (
    stated_cross_feature,
    stated_cross_gram,
    stated_decomposition,
    stated_irrep_fit,
)
from verify.evidence import Route
from verify.claims.li2._groups import build_group, complex_projectors
from verify.registry import get
from verify.runner import run_claim

SEEDS = st.integers(0, 2**31 - 1)
SMALL = {"symbolic_groups": ("Z3",), "exact_groups": ("Z3",), "exact_fit_groups": ("Z3",),
         "groups": ("Z7",), "probe_groups": ()}


@pytest.fixture(scope="module")
def appA2_result():
    return run_claim(get("li2.secA2"))


def test_appA2_fails_only_on_the_block_diagonal_gram_of_Z4(appA2_result):
    r = appA2_result
    failed = failed_quantities(r.evidence)
    assert failed == {e.quantity for e in r.evidence
                      if e.quantity.startswith("Z4") and "Ft^* Ft block diagonal" in e.quantity}
    assert all(e.ok for e in r.evidence if e.quantity.startswith(("Z3", "S3", "Z7", "D4")))
    cross = [e for e in r.evidence if "cross parts alone" in e.quantity]
    assert cross and all(e.ok for e in cross)


def test_control_fails_on_both_routes(appA2_result):
    failed = [e for e in appA2_result.control.evidence if e.ok is False]
    assert {e.route for e in failed} == {Route.SYMBOLIC, Route.NUMERIC}
    assert all("c_U" in e.quantity or e.quantity.startswith("Z4") for e in failed)


def _variant(**stated):
    claim = get("li2.appA2")
    return dataclasses.replace(claim, stated={**claim.stated, **stated})


def test_decomposition_routes_reject_the_trivial_irrep_included():
    def with_trivial(R, Pis):
        return stated_decomposition(R, [0 * Pis[0], *Pis])  # sum over every k, k = 0 too
    r = run_claim(_variant(decomposition=with_trivial), control=False, overrides=SMALL)
    failed = [e for e in r.evidence if e.ok is False]
    assert {e.route for e in failed} == {Route.SYMBOLIC, Route.NUMERIC}
    assert all("Pi_k R_h' Pi_k vs" in e.quantity for e in failed)


def test_irrep_fit_routes_reject_the_conjugate_projector():
    def conjugate(R, Pi):  # Pi_k conjugated is the projector of the conjugate irrep
        return stated_irrep_fit(R, Pi.conjugate() if isinstance(Pi, sp.MatrixBase)
                                else Pi.conj())
    r = run_claim(_variant(irrep_fit=conjugate), control=False, overrides=SMALL)
    failed = [e for e in r.evidence if e.ok is False]
    assert {e.route for e in failed} == {Route.SYMBOLIC, Route.NUMERIC}


@given(name=st.sampled_from(["Z5", "Z6", "S3", "D4", "Q8"]))
@settings(max_examples=5)
def test_arrangement_lists_the_samples_of_each_target(name):
    G = build_group(name)
    task = group_task(G.table)
    idx = target_arrangement(task)
    assert (task.target[idx] == torch.arange(G.order)[:, None]).all()
    assert sorted(idx.reshape(-1).tolist()) == list(range(task.n))


@given(name=st.sampled_from(["Z4", "Z7", "S3", "D4"]), seed=SEEDS)
@settings(max_examples=12)
def test_cross_feature_and_gram_on_random_complex_nodes(name, seed):
    G = build_group(name)
    task = group_task(G.table)
    g = make_generator(seed)
    u, v = (torch.randn(3, G.order, generator=g, dtype=torch.complex128) for _ in range(2))
    cross, _ = pair_parts(u, v, task)
    U = u[:, :, None] * inversion(v, task)[:, None, :]
    R = regular_matrices(G.table).to(U.dtype)
    idx = target_arrangement(task)
    for j in range(3):
        assert torch.allclose(stated_cross_feature(R, U[j]), cross[:, j][idx], atol=1e-12)
        for k in range(3):
            want = (cross[:, j] * cross[:, k].conj()).sum()
            assert torch.allclose(stated_cross_gram(U[j], U[k]), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["Z3", "Z4"])
def test_symbolic_cross_feature_and_square_parts(name):
    G = build_group(name)
    C, U = derive_cross_feature(G).result
    R = [sp.Matrix(Rh) for Rh in regular_representation(G)]
    assert sp.expand(stated_cross_feature(R, U) - C) == sp.zeros(G.order, G.order)
    assert derive_square_decoupling(G).result == sp.zeros(G.order + 1, 1)


def test_stated_forms_agree_on_sympy_and_torch():
    G = build_group("Z3")
    R_sym = [sp.Matrix(Rh) for Rh in regular_representation(G)]
    R = regular_matrices(G.table).to(torch.complex128)
    P = complex_projectors(G)
    U = torch.tensor([[1, 2j, 0], [0, 1, -1], [3, 0, 1j]], dtype=torch.complex128)
    U_sym = sp.Matrix(3, 3, lambda a, b: sp.sympify(complex(U[a, b]).real)
                      + sp.I * sp.sympify(complex(U[a, b]).imag))
    got = torch.tensor(sp.matrix2numpy(stated_cross_feature(R_sym, U_sym)).astype(complex))
    assert torch.allclose(got, stated_cross_feature(R, U))
    fit = stated_irrep_fit(R, P[1])
    assert fit.shape == (9, 3)
    # the fits of every nontrivial irrep add up to the centred target
    total = sum(stated_irrep_fit(R, P[k]) for k in range(1, 3))
    task = group_task(G.table)
    want = (torch.nn.functional.one_hot(task.target, 3) - 1 / 3)[target_arrangement(task)]
    assert torch.allclose(total, want.reshape(9, 3).to(total.dtype), atol=1e-12)
