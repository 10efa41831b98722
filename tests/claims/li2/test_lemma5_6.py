"""li2.lemma5 and li2.lemma6: the KKT conditions and the focused-versus-spread maximisers of
F(s) = sum_g p_g sigma(s_g) on s >= 0, |s|^2 <= 2; the reduced-problem numerics, the sympy
classification of phi = sigma'/x, and each route's power to reject a wrong statement."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import Activation
from numerics.li2.memorisation import (
    ascend_reduced,
    focused_profile,
    inverse_phi,
    lagrange_multiplier,
    memorisation_activation,
    phi,
    project_feasible,
    second_derivative_bound,
    solve_budget,
)
from numerics.random import make_generator
from theory.li2.energy import freeze_activation, sigma_prime
from theory.identity import ZeroStatus, is_zero
from theory.li2.memorisation import X, derive_kkt, derive_phi, symbolic_sigma
from verify.claims.li2 import _reduced_memorisation, lemma5, lemma6
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

SEEDS = st.integers(0, 2**31 - 1)
DECREASING = ("x^1.5", "relu", "silu", "tanh", "sigmoid", "x^2-x^3/3")
SHARED = DECREASING + ("x^2", "x^3", "x^4")


@pytest.fixture(scope="module")
def lemma5_result():
    return run_claim(get("li2.lemma5"))


@pytest.fixture(scope="module")
def lemma6_result():
    return run_claim(get("li2.lemma6"))


def _dirichlet(seed: int, M: int, alpha: float = 2.0) -> torch.Tensor:
    return torch.tensor(np.random.default_rng(seed).dirichlet(np.full(M, alpha)))[None]


# --- the claims -------------------------------------------------------------------------------

def test_lemma5_has_both_routes_and_runs_inside_its_assumptions(lemma5_result):
    r = lemma5_result
    assert {e.route.value for e in r.evidence} == {"symbolic", "numeric"}
    assert all(a.holds for a in r.assumptions), [a.name for a in r.assumptions if not a.holds]


def test_lemma5_control_fails_the_symbolic_and_every_stationarity_item(lemma5_result):
    failed = {e.quantity for e in lemma5_result.control.evidence if e.ok is False}
    stationarity = {e.quantity for e in lemma5_result.evidence
                    if "2 lambda" in e.quantity and e.route.value == "numeric"}
    assert len(stationarity) == len(_reduced_memorisation.ACTIVATIONS)
    assert stationarity <= failed
    assert any(q.startswith("stationarity") for q in failed)


def test_lemma6_control_changes_every_decreasing_maximiser_only(lemma6_result):
    r = lemma6_result
    failed = {e.quantity for e in r.control.evidence if e.ok is False}
    # p in the numerator changes every spread maximiser and reverses its order.
    for name in DECREASING:
        assert f"sigma = {name}: the maximiser s* (strictly decreasing phi)" in failed
    assert not any("nondecreasing" in q for q in failed)


def test_lemma6_exercises_the_thresholded_branch(lemma6_result):
    key = next(k for k in lemma6_result.figures if k.startswith("x^2-x^3/3: coordinates at 0"))
    assert lemma6_result.figures[key] > 0


def test_budget_and_multiplier_items_catch_an_interior_optimum(monkeypatch):
    # sigma = x - x^2 has sigma' < 0 beyond 1/2: the optimum s_g = 1/2 leaves the budget
    # slack (M/4 < 2) with lambda = 0, outside Thm. 5's hypothesis; both items must fail.
    hump = Activation("hump", lambda z: z - z * z, lambda z: 1 - 2 * z)
    real = lemma5.memorisation_activation
    monkeypatch.setattr(lemma5, "memorisation_activation",
                        lambda name: hump if name == "hump" else real(name))
    monkeypatch.setattr(_reduced_memorisation, "memorisation_activation",
                        lemma5.memorisation_activation)
    r = run_claim(get("li2.lemma5"), overrides={"activations": ("hump",)}, control=False)
    failed = {e.quantity for e in r.evidence if e.ok is False}
    assert "sigma = hump: budget sum_g s*_g^2 at the optimum (tight: 2)" in failed
    assert "sigma = hump: the multiplier lambda > 0 at the optimum" in failed
    assert not next(a for a in r.assumptions if a.name.startswith("hump: sigma'")).holds


def test_lemma6_records_each_ascent_converged_at_the_default_step(lemma6_result):
    ran = [a for a in lemma6_result.assumptions if a.source == "ran"]
    assert len(ran) == len(_reduced_memorisation.ACTIVATIONS)
    assert all(a.holds for a in ran), [a.detail for a in ran if not a.holds]


def test_lemma6_with_too_large_a_step_is_inconclusive_not_passed():
    # Issue 22: at lr_scale = 1e8 the ascent jumps across the sphere; its own gradient
    # mapping, divided by lr, looks converged and the bounds built on it grew with lr, so the
    # maximiser items passed. Measured at the step 1/L the mapping shows the failure.
    r = run_claim(get("li2.lemma6"), overrides={"lr_scale": 1e8}, control=False)
    assert r.verdict is Verdict.INCONCLUSIVE
    assert "ascent converged to its gradient tolerance" in r.reason
    broken = {a.name.split(":")[0] for a in r.assumptions if a.source == "ran" and not a.holds}
    assert "tanh" in broken  # 2500 steps without converging at that step


def test_lemma6_symbolic_route_rejects_a_finite_phi_at_zero(monkeypatch):
    monkeypatch.setattr(lemma6, "INFINITE_AT_ZERO", ("relu", "x^2-x^3/3"))
    r = run_claim(get("li2.lemma6"), overrides={"activations": ()}, control=False)
    assert r.verdict is Verdict.FAIL
    assert all(e.route.value == "symbolic" for e in r.evidence if e.ok is False)


# --- theory -----------------------------------------------------------------------------------

def test_phi_classes_from_the_definitions():
    expected = {"x^1.5": "strictly decreasing", "x^2": "nondecreasing",
                "x^3": "nondecreasing", "x^4": "nondecreasing", "relu": "strictly decreasing",
                "silu": "strictly decreasing", "tanh": "strictly decreasing",
                "sigmoid": "strictly decreasing", "x^2-x^3/3": "strictly decreasing"}
    facts = {name: derive_phi(name).result for name in expected}
    assert {n: f.monotonicity for n, f in facts.items()} == expected
    assert {n for n, f in facts.items() if f.phi_at_zero is sp.oo} == {
        "x^1.5", "relu", "silu", "tanh", "sigmoid"}
    assert facts["x^2-x^3/3"].phi_at_zero == 2


@settings(max_examples=10)
@given(st.sampled_from(SHARED), st.floats(0.05, 1.4))
def test_sympy_phi_matches_the_torch_activation(name, x):
    # theory/ and numerics/ define each activation separately: their phi must agree.
    expr = derive_phi(name).result.phi
    value = float(expr.subs(X, sp.Rational(x)).evalf(30))
    got = float(phi(memorisation_activation(name), torch.tensor(x, dtype=torch.float64)))
    assert got == pytest.approx(value, rel=1e-12)


def test_interval_route_returns_both_signs_for_a_sign_change():
    from theory.li2.memorisation import _interval_sign

    sign, _ = _interval_sign(sp.exp(X) - 2, sp.sqrt(2), 16)  # changes sign at log 2
    assert sign == "both"


def test_kkt_identity_and_its_witness():
    per_s, s, p, lam = derive_kkt(2).result
    right = sp.Matrix([pg * sigma_prime(sg) / sg - 2 * lam for pg, sg in zip(p, s)])
    wrong = sp.Matrix([pg * sigma_prime(sg) - 2 * lam for pg, sg in zip(p, s)])
    assert is_zero(sp.Matrix(freeze_activation([right - per_s])[0])).status is ZeroStatus.ZERO
    assert is_zero(freeze_activation([wrong - per_s])[0]).status is ZeroStatus.NONZERO


def test_bad_activation_names_raise():
    with pytest.raises(ValueError, match="x\\^<q>"):
        symbolic_sigma("gelu")
    with pytest.raises(ValueError, match="positive rational"):
        symbolic_sigma("x^-1")
    with pytest.raises(ValueError, match="x\\^<q>"):
        memorisation_activation("gelu")
    with pytest.raises(ValueError, match="ratio|monotonicity"):
        lemma6.stated_profile(torch.ones(1, 2), memorisation_activation("relu"), "neither")


# --- numerics ---------------------------------------------------------------------------------

@given(st.sampled_from(DECREASING), st.floats(0.02, 1.41))
def test_inverse_phi_inverts_phi(name, s):
    act = memorisation_activation(name)
    x = torch.tensor([s], dtype=torch.float64)
    back = inverse_phi(act, phi(act, x))
    assert float(back) == pytest.approx(s, rel=1e-12, abs=1e-14)


@given(st.sampled_from(DECREASING), st.integers(2, 7), SEEDS)
def test_budget_solution_is_on_the_sphere(name, M, seed):
    act = memorisation_activation(name)
    p = _dirichlet(seed, M)
    s = lemma6.stated_profile(p, act, "strictly decreasing")
    assert float(s.square().sum()) == pytest.approx(2.0, rel=1e-12)


@given(st.integers(2, 9), SEEDS)
def test_relu_profile_is_proportional_to_p(M, seed):
    # phi = 1/x, so s_g = p_g / (2 lambda): s = sqrt2 p / |p|, a closed form the bisection
    # machinery must reproduce.
    p = _dirichlet(seed, M)
    s = lemma6.stated_profile(p, memorisation_activation("relu"), "strictly decreasing")
    torch.testing.assert_close(s, math.sqrt(2) * p / p.norm(), rtol=1e-13, atol=1e-15)


@given(st.integers(1, 6), SEEDS)
def test_projection_is_the_nearest_feasible_point(M, seed):
    g = make_generator(seed)
    x = 2 * torch.randn(M, generator=g, dtype=torch.float64)
    px = project_feasible(x)
    assert float(px.min()) >= 0 and float(px.square().sum()) <= 2 * (1 + 1e-15)
    torch.testing.assert_close(project_feasible(px), px)
    for _ in range(20):
        z = project_feasible(3 * torch.randn(M, generator=g, dtype=torch.float64))
        assert float((x - px).norm()) <= float((x - z).norm()) + 1e-12


@settings(max_examples=10)
@given(st.sampled_from(SHARED), st.integers(2, 6), SEEDS)
def test_ascent_is_monotone_and_multiplier_makes_the_residual_tangent(name, M, seed):
    act = memorisation_activation(name)
    p = _dirichlet(seed, M)
    L = max(float(p.max()) * second_derivative_bound(act, math.sqrt(2) / 64, math.sqrt(2)),
            float(p.max()))
    s0 = torch.randn(4, M, generator=make_generator(seed), dtype=torch.float64).abs()
    r = ascend_reduced(s0, p, act, 1 / L, 300, 1e-12)
    assert float(r.largest_decrease.max()) <= 1e-13
    lam = lagrange_multiplier(r.s, p.expand_as(r.s), act)
    residual = p * act.derivative(r.s) - 2 * lam[:, None] * r.s
    assert float((residual * r.s).sum(-1).abs().max()) <= 1e-13


def test_focused_profile_puts_the_budget_on_the_argmax():
    p = torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64)
    torch.testing.assert_close(focused_profile(p), torch.tensor([[0, math.sqrt(2), 0]],
                                                                dtype=torch.float64))


def test_solve_budget_follows_the_given_profile():
    # A profile whose squared norm is 4 / lambda: lambda = 2.
    lam = solve_budget(lambda lam: (2 / lam.sqrt()).expand(*lam.shape[:-1], 1),
                       torch.ones(3, 1, dtype=torch.float64))
    torch.testing.assert_close(lam, torch.full((3, 1), 2.0, dtype=torch.float64))


def test_support_ranks():
    s = torch.tensor([[0.5, 0.0, 1.0, 1e-12]], dtype=torch.float64)
    assert lemma6.support_ranks(s, 1e-9).tolist() == [[1.0, 0.0, 2.0, 0.0]]


def test_bad_arguments_raise():
    act = memorisation_activation("tanh")
    s = torch.ones(1, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="lr"):
        ascend_reduced(s, s, act, 0.0, 1, 1e-9)
    with pytest.raises(ValueError, match="max_steps"):
        ascend_reduced(s, s, act, 0.1, 0, 1e-9)
    with pytest.raises(ValueError, match="lo, hi"):
        second_derivative_bound(act, 1.0, 0.5)
    with pytest.raises(ValueError, match="q"):
        memorisation_activation("x^-2")
