"""li2.lemma9 (the Muon projection: its printed remainder fails, the expansion holds to first
order in v_par) and li2.lemma10 (coupon-collector bound), with their pieces:
theory.li2.muon_dynamics (polar factor of the reduced problem, series of A (A^T A)^(-1/c)),
theory.li2.coupon_collector, numerics.li2.coupon_collector,
numerics.li2.muon_dynamics.fractional_polar."""
import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.coupon_collector import collection_time
from numerics.polar import fractional_polar, newton_schulz, polar_svd
from numerics.random import make_generator
from tests.planted import failed_quantities
from theory.li2.coupon_collector import derive_collection_integral, derive_uniform_time
from theory.li2.muon_dynamics import b, derive_fractional_series, derive_polar_2x2, q, s
from verify.claims.li2 import lemma9, lemma10
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import SEED

#: The items of li2.lemma9 that fail, both about the printed O(||v_perp||^2) remainder.
LEMMA9_FAILURES = {
    ("lim_{||v_perp|| -> 0} (exact last column - expansion) at fixed ||v_par|| = b: 0 if the "
     "remainder were O(||v_perp||^2)"),
    ("last column: ||v_perp|| -> 0 at ||v_par|| = 0.5 (printed O(||v_perp||^2)): order vs "
     "stated 2")}


@pytest.fixture(scope="module")
def result9():
    return run_claim(get("li2.lemma9"))


@pytest.fixture(scope="module")
def result10():
    return run_claim(get("li2.lemma10"))


# --- the claims -------------------------------------------------------------------------------

def test_lemma9_fails_only_on_the_printed_remainder(result9):
    assert failed_quantities(result9.evidence) == LEMMA9_FAILURES


def test_lemma9_control_is_rejected_by_the_first_order_routes(result9):
    failed = failed_quantities(result9.control.evidence)
    assert "c = 2: printed last column vs the series through eps^1 in ||v_par||" in failed
    assert any(q.startswith("last column: ||v_par|| -> 0") for q in failed)
    assert any(q.startswith("coefficient of v_par") for q in failed)


def test_lemma10_control_fails_on_the_equality_case_and_the_sampled_bound(result10):
    failed = failed_quantities(result10.control.evidence)
    assert failed == {"equality case: T_0 (Eq. 41) at uniform p vs the bound",
                      "T_0 >= Lemma 10's bound over sampled p"}


def test_lemma10_one_term_of_each_printed_max_is_never_active(result10):
    active = result10.figures["which term of each printed max is active"]
    assert active["Lemma 10: min_l 1/p_l > L H_L in"] == 0
    assert active["main text: H_L > 1/min p in"] == 0


@pytest.mark.parametrize("factor", [1.001, -1.0])
def test_lemma10_a_weaker_main_text_bound_fails_where_it_is_attained(factor):
    """The main text's 1/min p term is sharp (attained at L = 1, approached as min p -> 0): a
    bound larger by 0.1%, or a vacuous negative one, fails the tightness item (whatever the
    sampled p happen to reach)."""
    claim = get("li2.lemma10")
    weaker = dataclasses.replace(claim, stated={
        **claim.stated, "main_text_bound": lambda p: factor * lemma10.main_text_bound(p)})
    failed = failed_quantities(run_claim(weaker, control=False).evidence)
    assert any(q.startswith("tightness of the main text's bound") for q in failed), failed


# --- each route can fail ----------------------------------------------------------------------

def test_lemma9_numeric_routes_fail_with_newton_schulz(monkeypatch):
    """The author's five Newton-Schulz steps are not the polar factor: the trends in ||v_par||
    and the coefficient ratio reject them."""
    monkeypatch.setattr(lemma9, "polar_svd", newton_schulz)
    result = run_claim(get("li2.lemma9"), control=False, overrides={"seeds": 3})
    failed = failed_quantities(result.evidence)
    assert any(q.startswith("last column: ||v_par|| -> 0") for q in failed)
    assert any(q.startswith("coefficient of v_par") for q in failed)


def test_lemma9_eq38_route_can_fail(monkeypatch):
    monkeypatch.setattr(lemma9, "fractional_polar", lambda A, c: fractional_polar(A, c + 1))
    result = run_claim(get("li2.lemma9"), control=False, overrides={"seeds": 3})
    failed = failed_quantities(result.evidence)
    assert any(q.startswith("Eq. 38, c = 2") for q in failed)
    assert any(q.startswith("Eq. 38, c = 4") for q in failed)


def test_lemma10_quadrature_route_can_fail(monkeypatch):
    real = lemma10.collection_time

    def low(p, **kw):
        out = real(p, **kw)
        return type(out)(out.value * 0.9, out.error)

    monkeypatch.setattr(lemma10, "collection_time", low)
    result = run_claim(get("li2.lemma10"), control=False)
    failed = failed_quantities(result.evidence)
    assert "Eq. 41: exact rational integral vs quadrature" in failed
    assert "T_0 >= Lemma 10's bound over sampled p" in failed


# --- theory -----------------------------------------------------------------------------------

def test_reduced_polar_factor_ratio_is_exact():
    """beta_par / beta_perp = s / (1 + s) for every b: the printed ratio holds exactly."""
    _, column, _ = derive_polar_2x2().result
    beta_par, beta_perp = column[0] / b, column[1] / s
    assert sp.cancel(beta_par / beta_perp - s / (1 + s)) == 0


def test_series_second_order_term_does_not_vanish_with_v_perp():
    _, _, v2 = derive_fractional_series(2, 2).result
    assert sp.simplify(v2[1] + b**2 / (2 * (1 + q)**2)) == 0
    assert v2[1].subs(q, 0) == -b**2 / 2


@pytest.mark.parametrize("L", [1, 2, 3, 4, 5])
def test_uniform_collection_time_is_L_H_L(L):
    assert derive_uniform_time(L).result == L * sp.harmonic(L)


# --- numerics ---------------------------------------------------------------------------------

@given(n=st.integers(2, 10), perp=st.floats(1e-3, 10.0), par=st.floats(0.0, 10.0),
       seed=SEED.strategy())
def test_polar_last_column_has_the_closed_form(n, perp, par, seed):
    """polar([q, par q' + perp e]) last column = (v_par + (1 + perp) e) / sqrt((1+perp)^2 +
    par^2) for unit q ⟂ e (the reduced 2x2 derivation, in any dimension)."""
    frame, _ = torch.linalg.qr(torch.randn(n, 2, generator=make_generator(seed),
                                           dtype=torch.float64))
    qv, e = frame[:, 0], frame[:, 1]
    A = torch.stack([qv, par * qv + perp * e], -1)
    expected = (par * qv + (1 + perp) * e) / math.sqrt((1 + perp)**2 + par**2)
    assert torch.allclose(polar_svd(A)[:, -1], expected, atol=1e-12)


@given(n=st.integers(3, 9), k=st.integers(1, 3), seed=SEED.strategy())
def test_fractional_polar_at_c2_is_the_polar_factor(n, k, seed):
    A = torch.randn(n, k, generator=make_generator(seed), dtype=torch.float64)
    assert torch.allclose(fractional_polar(A, 2), polar_svd(A), atol=1e-11)
    # c = 1: A (A^T A)^{-1} is the pseudo-inverse's transpose.
    assert torch.allclose(fractional_polar(A, 1), torch.linalg.pinv(A).mT, atol=1e-10)


@given(L=st.integers(1, 4), seed=SEED.strategy())
@settings(max_examples=8)
def test_quadrature_matches_the_exact_integral(L, seed):
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, 20, L)
    probs = [sp.Rational(int(w), int(weights.sum())) for w in weights]
    exact = float(derive_collection_integral(probs).result)
    quad = collection_time(torch.tensor([[float(x) for x in probs]], dtype=torch.float64))
    assert abs(float(quad.value[0]) - exact) <= 2 * float(quad.error[0]) + 1e-13 * exact


@given(L=st.integers(2, 30), concentration=st.floats(0.1, 10.0), seed=SEED.strategy())
def test_collection_time_exceeds_both_printed_bounds(L, concentration, seed):
    p = torch.tensor(np.random.default_rng(seed).dirichlet(np.full(L, concentration)),
                     dtype=torch.float64).clamp_min(1e-12)
    p = p / p.sum()
    T0 = float(collection_time(p[None]).value[0])
    assert T0 >= float(lemma10.stated_bound(p)) * (1 - 1e-12)
    assert T0 >= float(lemma10.main_text_bound(p)) * (1 - 1e-12)
    assert T0 >= float(1 / p.min()) * (1 - 1e-12)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="p"):
        collection_time(torch.tensor([[0.5, 0.6]], dtype=torch.float64))
    with pytest.raises(ValueError, match="c"):
        fractional_polar(torch.ones(3, 2, dtype=torch.float64), 0)
    with pytest.raises(ValueError, match="full column rank"):
        fractional_polar(torch.ones(3, 2, dtype=torch.float64), 2)
    with pytest.raises(ValueError, match="order"):
        derive_fractional_series(2, 5)
