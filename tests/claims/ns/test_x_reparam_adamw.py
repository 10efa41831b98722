"""ns.x.reparam-adamw: deep reparameterised AdamW with large decay is sparse where plain AdamW is
not, coupled decay at depth collapses, and the derived exponents order the sparsity; planted
reversals are rejected, and the network and its measurements behave as defined."""
import dataclasses

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.reparam_adamw import (
    balanced_factors,
    effective,
    forward,
    initial_weights,
    layer_shapes,
    make_tasks,
    relative_sparsity,
    reparam_point,
)
from verify.claims.ns import x_reparam_adamw as claim_module
from verify.registry import get
from verify.runner import ParameterError, run_claim

CLAIM = get("ns.x.reparam-adamw")


@pytest.fixture(scope="module")
def result():
    return run_claim(CLAIM)


def _variant(**stated):
    return run_claim(dataclasses.replace(CLAIM, stated={**CLAIM.stated, **stated}),
                     control=False, readings=False)


def _failed(result):
    return [e.quantity for e in result.evidence if e.ok is False]


def test_the_claim_passes_with_every_item_decided(result):
    assert result.verdict.value == "pass"
    assert all(e.ok for e in result.evidence)
    quantities = " | ".join(e.quantity for e in result.evidence)
    for piece in ("sparsity at L = 2 minus at L = 1", "sparsity at L = 3 minus at L = 1",
                  "minus at alpha = 0.01", "minus the floor 0.9", "coupled minus decoupled",
                  "derived type ordering"):
        assert piece in quantities


def test_the_reversed_depth_control_is_rejected_on_both_depth_items(result):
    assert result.control.rejected
    failed = [e.quantity for e in result.control.evidence if e.ok is False]
    assert len(failed) == 2 and all("minus at L = 1" in q for q in failed)


def test_reversed_decay_and_coupled_statements_fail(result):
    # the same sweep points: the process memo serves them
    decay = _variant(decay_sparser=lambda: -1.0)
    assert decay.verdict.value == "fail"
    assert all("minus at alpha = 0.01" in q for q in _failed(decay))
    coupled = _variant(coupled_extreme=lambda: -1.0)
    assert coupled.verdict.value == "fail"
    assert [q.split(":")[0] for q in _failed(coupled)] == [
        "coupled (Adam + L2), L = 3, alpha = 1"]


def test_an_extreme_floor_above_what_is_measured_fails(result):
    """Every coupled L = 3 seed collapses at alpha = 1 (value 1): a floor the values cannot
    exceed turns item (ii) into a failure, so the floor is read, not ignored."""
    evidence = [e for e in result.evidence if "minus the floor" in e.quantity]
    assert evidence[0].parameters["collapsed seeds"] == len(CLAIM.parameters["quick"]["seeds"])


def test_derived_exponents_are_1_plus_1_over_L_and_2_over_L():
    class FakeRun:
        @staticmethod
        def derivation(d):
            return d
    e = claim_module.derived_exponents(FakeRun, [1, 2, 3])
    for L in (1, 2, 3):
        assert e["decoupled", L] == 1 + sp.Rational(1, L)
        assert e["coupled", L] == sp.Rational(2, L)
    assert claim_module._predicted(e, ("coupled", 3), ("decoupled", 3)) == 1.0
    assert claim_module._predicted(e, ("coupled", 1), ("decoupled", 1)) is None


def test_bad_input_is_refused_before_any_work():
    with pytest.raises(ParameterError):
        run_claim(CLAIM, overrides={"threshold": 0.0}, control=False)
    with pytest.raises(ParameterError):
        run_claim(CLAIM, overrides={"alpha_small": -0.01}, control=False)
    with pytest.raises(ValueError):
        claim_module._validate({**CLAIM.parameters["quick"], "depths": [2, 3]})
    with pytest.raises(ValueError):
        claim_module._validate({**CLAIM.parameters["quick"], "alpha_small": 2.0})


@given(L=st.integers(1, 4), seed=st.integers(0, 10**6))
@settings(max_examples=20, deadline=None)
def test_balanced_factors_reproduce_the_draw_and_the_network_at_every_depth(L, seed):
    shapes = layer_shapes(6, 5, 3, 1)
    W0 = initial_weights([seed], shapes)
    factors = {n: balanced_factors(w, L) for n, w in W0.items()}
    for n, W in effective(factors).items():
        assert torch.allclose(W, W0[n], rtol=1e-12, atol=0)
        assert (factors[n][:, 1:] >= 0).all()
    X = torch.randn(1, 4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    assert torch.allclose(forward(effective(factors), X, 1), forward(W0, X, 1), rtol=1e-10)


@given(seed=st.integers(0, 10**6), k=st.integers(1, 5))
@settings(max_examples=20, deadline=None)
def test_labels_depend_on_the_planted_features_only(seed, k):
    tasks = make_tasks([seed], d=8, k=k, classes=3, n_train=20, n_test=10)
    assert int(tasks.support.sum()) == k
    T, off = tasks.teacher[0], ~tasks.support[0]
    assert (T[:, off] == 0).all() and (T[:, ~off] != 0).all()
    X = tasks.X_test[0].clone()
    X[:, off] = torch.randn(X.shape[0], int(off.sum()), dtype=torch.float64)
    assert torch.equal((X @ T.T).argmax(1), tasks.y_test[0])
    again = make_tasks([seed], d=8, k=k, classes=3, n_train=20, n_test=10)
    assert torch.equal(again.y_train, tasks.y_train) and 0 < tasks.chance().item() <= 1


def test_relative_sparsity_counts_entries_below_the_threshold_of_the_largest():
    W = torch.tensor([[[1.0, 1e-4], [1e-2, 0.5]]], dtype=torch.float64)
    assert relative_sparsity(W, [1e-3, 1e-1]).tolist() == [[0.25, 0.5]]
    assert relative_sparsity(torch.zeros(1, 2, 2, dtype=torch.float64), [1e-3]).tolist() == [[1.0]]


def test_training_lowers_the_loss_under_both_decays():
    """Guards the gradients' layout: autograd returns the factors' gradients transposed in
    memory, and torch's fused Adam kernel read them as contiguous and diverged."""
    point = {"seeds": [0], "alphas": [0.01], "d": 8, "k": 2, "classes": 3, "n_train": 64,
             "n_test": 64, "hidden": 6, "blocks": 1, "lr": 0.01, "steps": 150, "batch": 16,
             "thresholds": [1e-3], "L": 2}
    for decay in ("coupled", "decoupled"):
        r = reparam_point({**point, "decay": decay})
        assert r["finite"] and r["loss_end"][0] < 0.5 * r["loss_start"][0]
        assert r["accuracy"][0] > r["chance"][0]
