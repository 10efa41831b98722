"""li2.thm6-training (its verdict and control: tests/quality/verdicts.py): each route can fail; the
pieces of numerics.li2.repulsion_along_training (routes, bounds, pair selections, Wilson intervals)
over drawn sizes and seeds."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import numerics.li2.repulsion_along_training as repulsion
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.random import make_generator, randn
from numerics.li2.repulsion_along_training import (
    FeatureSVD,
    at_checkpoints,
    disjoint_similar_pairs,
    feature_cosines,
    ridge_routes,
    sample_centred_features,
    top_pairs,
    wilson_interval,
)
from numerics.li2.ridge_inverse import (
    full_residual_similarity,
    residual_operator,
    ridge_inverse_svd,
    ridge_inverse_woodbury,
    third_party_code_ridge_inverse,
)
from numerics.li2.two_layer import center
from verify.claims.li2.thm6_training import (
    LEVEL,
    THIRD_PARTY_MEDIAN_SIGN_MATCH,
    THIRD_PARTY_SEED0_NEGATIVE,
    THIRD_PARTY_SEED0_SIGN_MATCH,
    _third_party_evidence,
    stated_woodbury,
)
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import TRAINED, record_trained
from verify.registry import get
from verify.run import Run
from verify.runner import run_claim
from verify.verdict import Verdict

F64 = torch.float64


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.thm6-training"))


def test_both_planted_signs_are_caught_and_there_are_8_items(quick):
    failed = {e.quantity.split(" ")[0] for e in quick.control.evidence if e.ok is False}
    assert {"Thm", "Wilson"} <= failed            # both planted signs are caught
    assert len(quick.evidence) == 8               # 6 with x^2, the ReLU sign rule at 2 readings
    assert sum("ReLU" in e.quantity for e in quick.evidence) == 2


def test_the_float32_woodbury_error_follows_the_condition_number(quick):
    """Where the routes part (float32, eta down to 1e-6), the error grows like kappa(A): its
    fitted order is within 0.2 of kappa's and error / (u kappa) stays within a factor 10
    while kappa spans four decades."""
    fig = quick.figures["Woodbury float32 error along eta, epoch 700"]
    assert abs(fig["order"] - np.mean(fig["order of kappa(A) per seed"])) < 0.2
    ratio = np.array(fig["error / (u_W kappa)"])
    assert ratio.max() / ratio.min() < 10 and ratio.max() < 1


def test_grokking_happens_between_the_checkpoints(quick):
    acc = quick.figures["test accuracy at the checkpoints, per seed"]
    assert max(acc["100"]) < 0.1 and min(acc["700"]) > 0.99


def test_a_network_left_at_chance_makes_the_verdict_inconclusive(quick):
    # Adam at lr = 10 keeps the training accuracy near chance 1/23, where every x^2 item passes
    result = run_claim(get("li2.thm6-training"), overrides={"lr": 10.0,
                                                            "relu": {"checkpoints": ()}},
                       control=False)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.reason.startswith("the simulation did not do what the check needs: "
                                    f"{TRAINED}")
    assert all(e.ok for e in result.evidence)
    # the quick run's x^2 and ReLU networks both trained
    assert [a.holds for a in quick.assumptions if a.source == "ran"] == [True, True]


def test_trained_needs_finite_losses_and_half_the_way_from_chance():
    run = _full_run()
    assert record_trained(run, 4, [0.625, 1.0], [0.1, 0.2], where="end")      # need 0.625
    assert not record_trained(run, 4, [0.62, 1.0], [0.1, 0.2], where="end")
    assert not record_trained(run, 4, [1.0, 1.0], [0.1, math.nan], where="end")
    assert [a.holds for a in run.data_assumptions] == [True, False, False]
    assert all(a.source == "ran" and a.name == TRAINED for a in run.data_assumptions)


@pytest.mark.parametrize("name, wrong, failing", [
    ("woodbury", third_party_code_ridge_inverse, "max |B_Woodbury"),   # their extra 1/eta
    ("sign_rule", lambda beta: beta / abs(beta), "Thm 6 sign rule"),
    ("similar_sign", lambda: 1.0, "Wilson"),
])
def test_each_route_can_fail(quick, name, wrong, failing):
    claim = get("li2.thm6-training")
    variant = dataclasses.replace(claim, stated={**claim.stated, name: wrong})
    result = run_claim(variant, control=False)          # training is cached
    assert result.verdict is Verdict.FAIL
    assert any(e.quantity.startswith(failing) and e.ok is False for e in result.evidence)


def _full_run() -> Run:
    claim = get("li2.thm6-training")
    return Run(claim_id=claim.id, fidelity="full", params=claim.parameters["full"],
               stated=claim.stated, seed=0, device=torch.device("cpu"), dtype=F64)


def _their_stats(shift: float) -> dict[int, dict[str, list[float]]]:
    return {e: {"frac B<0 on +sim": [THIRD_PARTY_SEED0_NEGATIVE[e] + shift] * 5,
                # seed 0 first; the other four at their 5-seed median
                "sign match, their code": [THIRD_PARTY_SEED0_SIGN_MATCH[e] + shift]
                + [THIRD_PARTY_MEDIAN_SIGN_MATCH[e] + shift] * 4}
            for e in THIRD_PARTY_SEED0_NEGATIVE}


def test_the_third_party_route_accepts_their_numbers_and_rejects_shifted_ones():
    run = _full_run()
    exact = list(_third_party_evidence(run, _their_stats(0.0)))
    assert len(exact) == 3 and all(e.ok for e in exact)
    shifted = list(_third_party_evidence(run, _their_stats(0.05)))
    assert all(e.ok is False for e in shifted)


# --- the stated Woodbury form ------------------------------------------------------------

def test_the_stated_woodbury_form_is_the_ridge_inverse_exactly():
    F = sp.Matrix([[1, 2, 0], [sp.Rational(1, 3), -1, 4]])         # n = 2 < K = 3
    eta = sp.Rational(1, 5)
    B = (F.T * F + eta * sp.eye(3)).inv()
    assert sp.simplify(stated_woodbury(F, eta) - B) == sp.zeros(3, 3)


# --- routes and bounds -------------------------------------------------------------------

def features(n: int, K: int, seed: int) -> torch.Tensor:
    return center(randn(n, K, generator=make_generator(seed), dtype=F64))


@settings(max_examples=25)
@given(st.integers(3, 20), st.integers(2, 24), st.floats(1e-5, 10.0), st.integers(0, 2**31 - 1),
       st.sampled_from([torch.float64, torch.float32]))
def test_the_woodbury_error_stays_within_its_bound(n, K, eta, seed, dtype):
    Ft = features(n, K, seed).unsqueeze(0)
    r = ridge_routes(Ft, eta, ridge_inverse_woodbury, woodbury_dtype=dtype)
    error = (r.woodbury - r.stable).abs().amax((-1, -2)) * r.lam_min
    assert bool((error <= r.woodbury_bound()).all())
    solve = (r.solve - r.stable).abs().amax((-1, -2)) * r.lam_min
    assert bool((solve <= 2 * r.stable_bound()).all())
    eye = torch.eye(K, dtype=F64)
    A = Ft[0].T @ Ft[0] + eta * eye
    assert torch.allclose(r.stable[0] @ A, eye, atol=1e3 * float(r.kappa) * 2e-16)


@settings(max_examples=15)
@given(st.integers(3, 12), st.integers(2, 16), st.integers(0, 2**31 - 1))
def test_a_shared_svd_gives_the_same_routes_at_every_eta(n, K, seed):
    Ft = features(n, K, seed).unsqueeze(0)
    svd = FeatureSVD.of(Ft)
    for eta in (1e-4, 0.3, 2.0):
        assert torch.equal(svd.ridge_inverse(eta), ridge_inverse_svd(Ft, eta))
        shared = ridge_routes(Ft, eta, ridge_inverse_woodbury, svd=svd)
        own = ridge_routes(Ft, eta, ridge_inverse_woodbury)
        for field in ("stable", "solve", "woodbury", "lam_max", "lam_min", "gain"):
            assert torch.equal(getattr(shared, field), getattr(own, field))


@settings(max_examples=15)
@given(st.integers(3, 12), st.integers(3, 16), st.floats(1e-3, 10.0), st.integers(0, 2**31 - 1))
def test_the_full_residual_similarity_is_each_pairs_quadratic_form(n, K, eta, seed):
    Ft = features(n, K, seed)
    pairs = top_pairs(feature_cosines(Ft), 6)
    P = residual_operator(Ft, eta)
    one_by_one = torch.stack([Ft[:, j] @ (P @ Ft[:, l]) for j, l in pairs.tolist()])
    # the same sums in another order: n terms of size |f_j| |f_l|, each rounded
    scale = Ft.norm(dim=0)[pairs[:, 0]] * Ft.norm(dim=0)[pairs[:, 1]]
    assert bool(((full_residual_similarity(Ft, eta, pairs) - one_by_one).abs()
                 <= 4 * n * torch.finfo(F64).eps * scale).all())


def test_a_wrong_woodbury_breaks_the_bound():
    Ft = features(12, 16, 3).unsqueeze(0)
    r = ridge_routes(Ft, 1e-2, third_party_code_ridge_inverse)
    error = (r.woodbury - r.stable).abs().amax((-1, -2)) * r.lam_min
    assert bool((error > 1e6 * r.woodbury_bound()).all())


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf])
def test_routes_reject_a_bad_eta(bad):
    with pytest.raises(ValueError, match="eta"):
        ridge_routes(features(4, 3, 0), bad, ridge_inverse_woodbury)


# --- similarity and pairs ----------------------------------------------------------------

@settings(max_examples=20)
@given(st.integers(2, 12), st.integers(2, 30), st.floats(-0.5, 0.8), st.integers(0, 2**31 - 1),
       st.integers(1, 40))
def test_disjoint_pairs_do_not_depend_on_the_screening_block(n, K, threshold, seed, block):
    cos = feature_cosines(features(n, K, seed))
    one_pass = disjoint_similar_pairs(cos, threshold)
    saved = repulsion._GREEDY_BLOCK
    try:
        repulsion._GREEDY_BLOCK = block
        assert torch.equal(disjoint_similar_pairs(cos, threshold), one_pass)
    finally:
        repulsion._GREEDY_BLOCK = saved


@settings(max_examples=30)
@given(st.integers(2, 12), st.integers(2, 14), st.floats(-0.5, 0.8), st.integers(0, 2**31 - 1))
def test_disjoint_pairs_are_disjoint_similar_and_greedy(n, K, threshold, seed):
    cos = feature_cosines(features(n, K, seed))
    pairs = disjoint_similar_pairs(cos, threshold)
    nodes = pairs.flatten().tolist()
    assert len(nodes) == len(set(nodes))                               # node-disjoint
    values = cos[pairs[:, 0], pairs[:, 1]]
    assert bool((values > threshold).all()) and bool((pairs[:, 0] < pairs[:, 1]).all())
    assert bool((values[:-1] >= values[1:]).all())                     # chosen in order
    free = sorted(set(range(K)) - set(nodes))
    for a in free:                                                     # maximal
        for b in free:
            assert a == b or cos[a, b] <= threshold
    upper = cos[torch.triu_indices(K, K, 1).unbind()]
    if bool((upper > threshold).any()):
        assert torch.isclose(values[0], upper.max())


@settings(max_examples=20)
@given(st.integers(2, 10), st.integers(2, 12), st.integers(1, 30), st.integers(0, 2**31 - 1))
def test_top_pairs_have_the_largest_absolute_cosines(n, K, count, seed):
    cos = feature_cosines(features(n, K, seed))
    pairs = top_pairs(cos, count)
    upper = cos[torch.triu_indices(K, K, 1).unbind()].abs()
    chosen = cos[pairs[:, 0], pairs[:, 1]].abs()
    assert len(pairs) == min(count, len(upper))
    assert torch.allclose(chosen.sort().values, upper.topk(len(pairs)).values.sort().values)


def test_cosines_are_symmetric_unit_on_the_diagonal_and_zero_for_a_dead_node():
    Ft = features(6, 4, 1)
    Ft[:, 2] = 0
    cos = feature_cosines(Ft)
    assert torch.allclose(cos, cos.T)
    assert torch.allclose(cos.diagonal()[[0, 1, 3]], torch.ones(3, dtype=F64))
    assert bool((cos[2] == 0).all())


@settings(max_examples=40)
@given(st.integers(1, 500), st.data(), st.sampled_from([0.9, 0.95, 0.995]))
def test_wilson_interval_matches_scipy(trials, data, level):
    hits = data.draw(st.integers(0, trials))
    lo, hi = wilson_interval(hits, trials, level)
    ci = stats.binomtest(hits, trials).proportion_ci(confidence_level=level, method="wilson")
    assert math.isclose(lo, ci.low, abs_tol=1e-12) and math.isclose(hi, ci.high, abs_tol=1e-12)
    assert lo <= hits / trials <= hi


@pytest.mark.parametrize("hits, trials, level", [(3, 2, 0.95), (0, 0, 0.95), (1, 2, 1.0)])
def test_wilson_interval_rejects_bad_input(hits, trials, level):
    with pytest.raises(ValueError):
        wilson_interval(hits, trials, level)


# --- checkpoints -------------------------------------------------------------------------

@settings(max_examples=3)
@given(st.integers(0, 2**31 - 1))
def test_checkpoints_resume_exactly_and_the_features_are_centred(seed):
    def trainer():
        return GroupTrainer(build_group("Z5").table, Hyper.batch(seed=[seed, seed + 1],
                                                                 eta=1e-2, lr=2e-2, p=0.6),
                            TrainConfig(K=6, eval_every=2, diagnostics=()), dtype=F64)
    a = at_checkpoints(trainer(), [2, 4, 7], sample_centred_features)
    b = trainer()
    b.train(7)
    assert torch.equal(a[7], sample_centred_features(b))
    assert torch.allclose(a[4].sum(1), torch.zeros(2, 6, dtype=F64), atol=1e-12)
    with pytest.raises(ValueError, match="epochs"):
        at_checkpoints(b, [3], sample_centred_features)


def test_unequal_training_sizes_are_refused():
    t = GroupTrainer(build_group("Z5").table, Hyper.batch(seed=[0, 1], p=[0.4, 0.6]),
                     TrainConfig(K=4, diagnostics=()), dtype=F64)
    with pytest.raises(ValueError, match="training sizes"):
        sample_centred_features(t)


def test_wilson_pooling_power_against_one_half():
    """At 380 pairs (3 seeds x 127 node-disjoint pairs) the quick run's Bonferroni interval
    (over its checkpoints and the two readings of eta) excludes 1/2 from a fraction of 0.6 on:
    the quick run's sample size can tell repulsion from a coin."""
    quick = get("li2.thm6-training").parameters["quick"]
    level = 1 - (1 - LEVEL) / (2 * len(quick["checkpoints"]))
    lo, _ = wilson_interval(int(0.6 * 380), 380, level)
    assert lo > 0.5 and np.isfinite(lo)


def test_relu_variant_repels_similar_features_and_reports_the_third_partys_sign_match():
    """The ReLU network (their variant; full fidelity runs it at their checkpoints 100, 300,
    500): at quick size it fits its training set but does not grok by epoch 350, and similar
    features still get b_jl < 0 (Wilson lower bound above 1/2 at both readings of eta); their
    statistics are reported beside their ReLU numbers."""
    result = run_claim(get("li2.thm6-training"),
                       overrides={"relu": {"checkpoints": (100, 350)}}, control=False)
    assert result.verdict is Verdict.PASS, result.reason
    relu = [e for e in result.evidence if "ReLU: " in e.quantity]
    assert len(relu) == 2 and all(e.ok is True for e in relu)
    assert all(e.parameters["checkpoints"] == [100, 350] for e in relu)
    ran = {a.name: a.holds for a in result.assumptions if a.source == "ran"}
    assert ran == {TRAINED: True, f"{TRAINED} (ReLU)": True}
    stats = result.figures["ReLU: the third party's statistics at their selection and their "
                           "eta, per checkpoint and seed"]
    assert set(stats) == {"100", "350"}
    assert result.figures["ReLU: the third party's reported sign match (seed 0, M = 71, K = "
                          "2048)"] == {"100": 0.91, "300": 0.995, "500": 1.0}
