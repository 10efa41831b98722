"""li2.remark-lda: the verdict, each planted error rejected by its own routes, the exact
Yt^T X against torch on full and subsampled tasks, the linear energy as a quadratic form, and
the eigenspace fraction with a repeated top eigenvalue."""
import dataclasses

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.group_task import group_energy, group_task
from numerics.random import make_generator
from theory.li2.group_energy import exact_full_cross, task_matrices
from theory.matrices import centering_matrix
from verify.claims.li2.remark_lda import (
    bottom_eigenvalue,
    eigenspace_fraction,
    lda_matrix,
    uncentred_cross,
)
from verify.evidence import Route
from verify.claims.li2._groups import build_group
from verify.registry import get
from verify.runner import run_claim

SEEDS = st.integers(0, 2**31 - 1)
GROUPS = st.sampled_from(["Z3", "Z4", "Z5", "Z2xZ2", "S3"])


def _failed(result):
    return [e for e in result.evidence if e.ok is False]


def _replace(**stated):
    claim = get("li2.remark-lda")
    return dataclasses.replace(claim, stated={**claim.stated, **stated})


def test_uncentred_labels_are_rejected_by_the_exact_and_float_full_data_routes():
    failed = _failed(run_claim(_replace(full_cross=uncentred_cross), control=False))
    assert {e.route for e in failed} == {Route.SYMBOLIC, Route.NUMERIC}
    assert all("full task" in e.quantity for e in failed)


def test_bottom_eigenvector_is_rejected_by_the_ascent():
    failed = _failed(run_claim(_replace(maximiser=bottom_eigenvalue), control=False))
    assert failed and all("stated eigen" in e.quantity for e in failed)


@pytest.mark.parametrize("name", ["Z3", "S3", "Z2xZ2"])
def test_exact_full_cross_vanishes_but_not_uncentred(name):
    G = build_group(name)
    cross, energy, _ = exact_full_cross(G)
    assert cross == sp.zeros(G.order, 2 * G.order) and energy == 0
    X, Y = task_matrices(G)
    assert Y.T * X == uncentred_cross(G.order)


@given(name=GROUPS, seed=SEEDS, ratio=st.sampled_from([0.3, 0.5, 0.8, 1.0]))
@settings(max_examples=15)
def test_exact_cross_matches_torch_on_subsamples(name, seed, ratio):
    G = build_group(name)
    task = group_task(G.table, ratio=ratio, generator=make_generator(seed))
    pairs = list(zip(task.left.tolist(), task.right.tolist()))
    X, Y = task_matrices(G, pairs)
    exact = (centering_matrix(len(pairs)) * Y).T * X
    cross, _ = lda_matrix(task, torch.float64)
    assert torch.allclose(cross, torch.tensor(exact.tolist(), dtype=torch.float64), atol=1e-12)
    if ratio == 1.0:
        assert exact == sp.zeros(G.order, 2 * G.order)


@given(name=GROUPS, seed=SEEDS, ratio=st.sampled_from([0.4, 0.7, 1.0]))
@settings(max_examples=15)
def test_linear_energy_is_half_the_quadratic_form(name, seed, ratio):
    G = build_group(name)
    g = make_generator(seed)
    task = group_task(G.table, ratio=ratio, generator=g)
    _, S = lda_matrix(task, torch.float64)
    w = torch.randn(4, 2 * G.order, generator=g, dtype=torch.float64)
    e = group_energy(w, task, activation("linear"))
    assert torch.allclose(e, 0.5 * ((w @ S) * w).sum(-1), rtol=1e-10, atol=1e-12)


@given(seed=SEEDS, d=st.integers(3, 8))
@settings(max_examples=20)
def test_eigenspace_fraction_with_a_repeated_top_eigenvalue(seed, d):
    g = make_generator(seed)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    values = torch.cat([torch.linspace(0.0, 1.0, d - 2, dtype=torch.float64),
                        torch.full((2,), 3.0, dtype=torch.float64)])
    c = torch.randn(2, generator=g, dtype=torch.float64)
    w = (Q[:, -2:] @ c)[None]
    fraction, dim, gap = eigenspace_fraction(w, values, Q, values[-1], 1e-8)
    assert dim == 2 and gap == pytest.approx(3.0 - float(values[-3]))
    assert float(fraction[0]) == pytest.approx(1.0, abs=1e-12)
    fraction, _, _ = eigenspace_fraction(w, values, Q, values[0], 1e-8)
    assert float(fraction[0]) == pytest.approx(0.0, abs=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError, match="pairs"):
        task_matrices(build_group("Z3"), [])
    with pytest.raises(ValueError, match="ratio"):
        group_task(build_group("Z3").table, ratio=1.5, generator=make_generator(0))
