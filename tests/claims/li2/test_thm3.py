"""li2.thm3: the verdict and its control, the exact and float readings of [u; +-Pu], the
least-squares and node-construction pieces, and each route's power to reject a wrong claim.

Findings pinned down: with the conjugate second block P conj(u) the targets are reconstructed
exactly; without it (odd Z_M) nothing is (residual 1); real exact [u; +-Pu] reaches at best the
antisymmetric share sqrt(#{h: h^2 != e} / (2(M-1))) of the targets; real [u; +-Pu'] needs N^2
pairs per real component (4(M-1) nodes for odd Z_M); at the paper's count 2M-2 the residual
stays 1/sqrt(2).
"""
import dataclasses
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.group_task import group_task, inversion
from numerics.random import make_generator
from numerics.li2.target_reconstruction import (
    centre,
    centred_targets,
    least_squares,
    node_features,
    pair_parts,
    polarisation_vectors,
    square_vectors,
    symmetric_vectors,
)
from tests.planted import failed_quantities
from theory.li2.target_reconstruction import (
    derive_antisymmetric_residual,
    derive_node_count,
    derive_reconstruction,
)
from verify.claims.li2._groups import build_group
from verify.claims.li2._irrep_nodes import float_nodes
from verify.claims.li2.thm3 import (
    fit,
    stated_count_bound,
    stated_node_count,
)
from verify.evidence import Route
from verify.registry import get
from verify.run import Run
from verify.runner import run_claim
from verify.verdict import Verdict

SEEDS = st.integers(0, 2**31 - 1)
SMALL = {"count_groups": ("Z3", "Z4", "S3", "D4"), "exact_groups": ("Z3",),
         "float_groups": ("Z7", "D4")}


@pytest.fixture(scope="module")
def thm3_result():
    return run_claim(get("li2.thm3"))


def test_thm3_control_fails_on_the_count_and_the_first_K_nodes(thm3_result):
    r = thm3_result
    failed = failed_quantities(r.control.evidence)
    assert any("K = 2 sum" in q for q in failed)
    assert any("first K (stated) nodes" in q for q in failed)


def test_alias_and_readings_reported(thm3_result):
    quantities = [e.quantity for e in thm3_result.evidence]
    for reading in ("complex-conjugate", "complex-plain", "real-exact", "real-perturbed"):
        assert any(reading in q for q in quantities)
    plain = [e for e in thm3_result.evidence if "complex-plain" in e.quantity]
    assert all(e.derived == pytest.approx(1.0) for e in plain)  # odd Z_M: nothing reconstructed


def _variant(**stated):
    claim = get("li2.thm3")
    return dataclasses.replace(claim, stated={**claim.stated, **stated})


def test_symbolic_and_numeric_routes_reject_a_nonzero_residual():
    r = run_claim(_variant(residual=lambda: sp.Rational(1, 10)), control=False, overrides=SMALL)
    assert r.verdict is Verdict.FAIL
    routes = {e.route for e in r.evidence if e.ok is False}
    assert routes == {Route.SYMBOLIC, Route.NUMERIC}


def test_count_routes_reject_wrong_abelian_count_and_bound():
    r = run_claim(_variant(K_abelian=lambda M: 2 * M - 1, K_bound=lambda M, kappa: M),
                  control=False, overrides=SMALL)
    failed = failed_quantities(r.evidence)
    assert any("abelian" in q for q in failed) and any("bound" in q for q in failed)


@pytest.mark.parametrize("weaker", [lambda M, k: 1.001 * stated_count_bound(M, k),
                                    lambda M, k: stated_count_bound(M, k) ** 1.1])
def test_a_weaker_node_bound_fails_where_the_bound_is_attained(weaker):
    """The bound is sharp (abelian groups, S3 and D4 attain it): a looser one is rejected."""
    r = run_claim(_variant(K_bound=weaker), control=False, overrides=SMALL)
    assert any(q.startswith("tightness") for q in failed_quantities(r.evidence))
    bound = next(e for e in r.evidence if e.quantity.startswith("bound"))
    assert bound.ok is True and "slack measured/bound" in bound.note


def test_stated_counts():
    assert stated_node_count([1] * 6) == 12  # Z7: 2M - 2
    assert stated_node_count([1, 1, 1, 2]) == 38  # D4: 2 (3 + 16)
    assert stated_count_bound(8, 4) == 38  # D4 meets the bound
    assert stated_count_bound(7, 6) == 12


@given(M=st.integers(3, 25))
@settings(max_examples=12)
def test_antisymmetric_share_of_cyclic_groups(M):
    share = derive_antisymmetric_residual(build_group(f"Z{M}")).result
    squares_not_e = M - 1 if M % 2 else M - 2
    assert share == sp.Rational(squares_not_e, 2 * (M - 1))


@pytest.mark.parametrize("name", ["Z4", "S3"])
def test_exact_readings_of_small_groups(name):
    G = build_group(name)
    res = derive_reconstruction(G, ("complex-conjugate", "real-exact")).result
    assert res["complex-conjugate"].residual_sq == 0
    assert res["real-exact"].residual_sq == derive_antisymmetric_residual(G).result
    assert res["complex-conjugate"].nodes == derive_node_count(G).result[0]


def _run(seed: int = 0) -> Run:
    claim = get("li2.thm3")
    return Run("li2.thm3", "quick", claim.parameters["quick"], claim.stated, seed,
               torch.device("cpu"), torch.float64)


@given(name=st.sampled_from(["Z3", "Z4", "Z5", "S3"]),
       reading=st.sampled_from(["complex-conjugate", "complex-plain", "real-exact",
                                "real-perturbed"]), seed=SEEDS)
@settings(max_examples=12)
def test_float_residual_matches_the_exact_one(name, reading, seed):
    G = build_group(name)
    exact = derive_reconstruction(G, (reading,)).result[reading].residual_sq
    ls, *_ = fit(G, name, reading, _run(seed))
    assert ls.relative_residual == pytest.approx(math.sqrt(float(exact)), abs=1e-11)


@given(n=st.integers(4, 40), K=st.integers(1, 8), seed=SEEDS, complex_=st.booleans())
@settings(max_examples=25)
def test_least_squares_on_planted_spans(n, K, seed, complex_):
    g = make_generator(seed)
    K = min(K, n - 1)
    F = torch.randn(n, K, generator=g, dtype=torch.float64)
    if complex_:
        F = F + 1j * torch.randn(n, K, generator=g, dtype=torch.float64)
    inside = F @ torch.randn(K, 3, generator=g, dtype=torch.float64).to(F.dtype)
    ls = least_squares(torch.cat([F, F[:, :1]], 1), inside, 1e-8)  # a repeated column
    assert ls.rank == K and ls.relative_residual < 1e-10
    Q, _ = torch.linalg.qr(torch.cat([F, torch.randn(n, 1, generator=g,
                                                     dtype=torch.float64).to(F.dtype)], 1))
    outside = Q[:, K:]  # orthogonal to the span of F
    assert least_squares(F, outside, 1e-8).relative_residual == pytest.approx(1.0, abs=1e-10)


@given(N=st.integers(1, 4), seed=SEEDS)
@settings(max_examples=20)
def test_node_vector_sets_span_what_they_claim(N, seed):
    g = make_generator(seed)
    B, _ = torch.linalg.qr(torch.randn(7, N, generator=g, dtype=torch.float64))
    def span_dim(U, conj):
        outer = U[:, :, None] * (U.conj() if conj else U)[:, None, :]
        return int(torch.linalg.matrix_rank(outer.reshape(U.shape[0], -1)))
    P = polarisation_vectors(B)
    assert P.shape[0] == N * N and span_dim(P, True) == N * N  # End(span B) over C
    S = symmetric_vectors(B)
    assert span_dim(S, False) == N * (N + 1) // 2  # symmetric matrices only
    assert square_vectors(B).shape[0] == N * N


@given(name=st.sampled_from(["Z5", "S3", "D4"]), seed=SEEDS)
@settings(max_examples=10)
def test_pair_parts_are_cross_and_square(name, seed):
    G = build_group(name)
    task = group_task(G.table)
    g = make_generator(seed)
    u, s = (torch.randn(2, G.order, generator=g, dtype=torch.float64) for _ in range(2))
    cross, square = pair_parts(u, s, task)
    a, b = task.left, task.right
    assert torch.allclose(cross, (2 * u[:, a] * s[:, b]).T, atol=1e-12)
    assert torch.allclose(square, (u[:, a] ** 2 + s[:, b] ** 2).T, atol=1e-12)


def test_conjugate_second_block_reconstructs_and_plain_does_not():
    G = build_group("Z11")
    task = group_task(G.table)
    Yt = centred_targets(task)
    out = {}
    for reading in ("complex-conjugate", "complex-plain"):
        W, _ = float_nodes(G, task, reading)
        assert W.shape[0] == 2 * G.order - 2
        out[reading] = least_squares(centre(node_features(W, task)), Yt, 1e-8).relative_residual
    assert out["complex-conjugate"] < 1e-12 and out["complex-plain"] == pytest.approx(1.0)


def test_real_nodes_at_the_complex_count_never_reconstruct():
    G = build_group("Z7")
    for seed in range(3):
        ls, K, *_ = fit(G, "Z7", "real-perturbed-complex-count", _run(seed))
        assert K == 2 * G.order - 2
        assert ls.relative_residual == pytest.approx(2**-0.5, abs=1e-12)


def test_bad_arguments():
    G = build_group("Z5")
    task = group_task(G.table)
    with pytest.raises(ValueError, match="reading"):
        float_nodes(G, task, "quaternionic")
    with pytest.raises(ValueError, match="generator"):
        float_nodes(G, task, "real-perturbed")
    with pytest.raises(ValueError, match="rcond"):
        least_squares(torch.ones(3, 1), torch.ones(3, 1), 0.0)
    with pytest.raises(ValueError, match="W"):
        node_features(torch.ones(10), task)
    assert inversion(torch.arange(5.0), task).tolist() == [0.0, 4.0, 3.0, 2.0, 1.0]
