"""li2.lemma2: Muon's polar direction, its inner product with G, and Newton-Schulz."""
from __future__ import annotations

import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.claims.li2.lemma2 as lemma2
from numerics.li2.energy import directional_derivative, joint_energy_gradient
from numerics.polar import (
    AUTHOR_NS_COEFFICIENTS,
    frobenius_inner,
    newton_schulz,
    nuclear_norm,
    numerical_rank,
    polar_eigh,
    polar_svd,
    singular_values_eigvalsh,
)
from numerics.random import make_generator, random_low_rank, random_with_singular_values
from tests.planted import failed_quantities
from theory.identity import ZeroStatus, is_zero
from theory.li2.polar import (
    derive_newton_schulz_sign,
    derive_polar_inner_product_2x2,
    derive_trace_argument,
)
from verify.evidence import symbolic_identity
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import SEED, strategy
from verify.verdict import Verdict

U64 = torch.finfo(torch.float64).eps
# Smaller run for the tests that plant a broken route: every route still runs.
SMALL = {"energy_cases": 3, "stationarity_cases": 8, "ns_shapes": [[4, 4]],
         "ns_conditions": [1.0]}


@st.composite
def shape_and_rank(draw, max_dim: int = 12):
    m = draw(st.integers(1, max_dim))
    n = draw(st.integers(1, max_dim))
    return m, n, draw(st.integers(0, min(m, n))), draw(SEED.strategy())


# --- the claim -------------------------------------------------------------------------------

def test_runs_inside_its_assumptions_and_ns_keeps_singular_values_positive():
    result = run_claim(get("li2.lemma2"))
    assert result.inside_assumptions
    assert result.figures["NS: every step keeps singular values positive (exact)"] is True


def test_claim_passes_in_float32():
    result = run_claim(get("li2.lemma2"), dtype="float32", control=False, overrides=SMALL)
    assert result.verdict is Verdict.PASS, result.reason



def test_control_is_rejected_by_symbolic_and_numeric_routes():
    control = run_claim(get("li2.lemma2"), overrides=SMALL).control
    failed = {e.route.value for e in control.evidence if e.ok is False}
    assert {"symbolic", "numeric", "property"} <= failed


# --- each route can fail ---------------------------------------------------------------------

def test_polar_route_fails_when_polar_is_newton_schulz(monkeypatch):
    monkeypatch.setattr(lemma2, "polar_svd", newton_schulz)
    result = run_claim(get("li2.lemma2"), control=False, overrides=SMALL)
    assert result.verdict is Verdict.FAIL
    failed = failed_quantities(result.evidence)
    assert any(q.startswith("<polar(G), G>") for q in failed)
    assert any(q.startswith("d/de E_joint") for q in failed)
    assert any(q.startswith("||G_hat||_F^2") for q in failed)


def test_stationarity_route_fails_with_a_full_svd(monkeypatch):
    """A full SVD keeps the singular vectors of zero singular values: G_hat != 0 at G = 0."""

    def full_svd_polar(G):
        U, _, Vh = torch.linalg.svd(G, full_matrices=False)
        return U @ Vh

    monkeypatch.setattr(lemma2, "polar_svd", full_svd_polar)
    result = run_claim(get("li2.lemma2"), control=False, overrides=SMALL)
    assert result.verdict is Verdict.FAIL
    assert {q for q in failed_quantities(result.evidence)} == {
        "||G_hat||_F^2 = rank(G) (so G_hat = 0 iff G = 0)"}


def test_second_polar_route_can_fail(monkeypatch):
    monkeypatch.setattr(lemma2, "polar_eigh", lambda G: polar_eigh(G) * (1 + 1e-6))
    result = run_claim(get("li2.lemma2"), control=False, overrides=SMALL)
    assert failed_quantities(result.evidence) == {"polar factor: SVD U V^T vs G (G^T G)^{-1/2}"}


def test_ascent_route_can_fail(monkeypatch):
    """The normalised gradient G/||G||_F ascends at rate ||G||_F, not ||G||_*."""
    monkeypatch.setattr(lemma2, "directional_derivative",
                        lambda W, X, Y, direction: directional_derivative(
                            W, X, Y, joint_energy_gradient(W, X, Y)
                            / torch.linalg.matrix_norm(joint_energy_gradient(W, X, Y))))
    result = run_claim(get("li2.lemma2"), control=False, overrides=SMALL)
    assert {q for q in failed_quantities(result.evidence)} == {
        "d/de E_joint(W + e G_hat) at e=0 vs ||G||_*",
        "ascent rate = ||G||_* over sampled energy problems"}


def test_symbolic_route_rejects_the_frobenius_norm():
    inner, (d1, d2) = derive_polar_inner_product_2x2(False).result
    evidence = symbolic_identity("wrong norm", stated=lemma2.frobenius_norm_instead([d1, d2]),
                                 derived=inner)
    assert evidence.ok is False


# --- theory ----------------------------------------------------------------------------------

@pytest.mark.parametrize("reflection", [False, True])
def test_2x2_reduces_to_trace_of_d(reflection):
    inner, (d1, d2) = derive_polar_inner_product_2x2(reflection).result
    assert inner == d1 + d2


@given(rows=st.integers(1, 3), cols=st.integers(1, 3), data=st.data())
@settings(max_examples=10)
def test_trace_argument_any_size(rows, cols, data):
    rank = data.draw(st.integers(1, min(rows, cols)))
    inner, gram_form, trace_d, U, D, V = derive_trace_argument(rows, cols, rank).result
    assert is_zero(inner - gram_form).status is ZeroStatus.ZERO
    assert is_zero(inner - lemma2.stated_proof_trace(U, D, V)).status is ZeroStatus.ZERO
    assert trace_d == sp.Add(*D.diagonal())


def test_trace_argument_rejects_bad_sizes():
    with pytest.raises(ValueError, match="rank"):
        derive_trace_argument(2, 3, 3)
    with pytest.raises(ValueError, match="rows"):
        derive_trace_argument(0, 3, 1)


def test_newton_schulz_sign_condition():
    assert derive_newton_schulz_sign(
        [tuple(sp.Rational(str(x)) for x in abc) for abc in AUTHOR_NS_COEFFICIENTS]).result
    # b^2 - 4ac = 40 > 0: a + bt + ct^2 has positive roots in t, so phi changes sign.
    assert not derive_newton_schulz_sign([(3, -10, 5)]).result
    with pytest.raises(ValueError, match="coefficients"):
        derive_newton_schulz_sign([])


# --- numerics --------------------------------------------------------------------------------

@given(shape_and_rank())
def test_polar_inner_product_is_nuclear_norm(case):
    m, n, r, seed = case
    G = random_low_rank(3, m, n, r, make_generator(seed))
    inner, nuclear = frobenius_inner(polar_svd(G), G), nuclear_norm(G)
    scale = max(float(nuclear.max()), 1.0)
    assert float((inner - nuclear).abs().max()) <= 4 * (m + n) * U64 * scale
    assert torch.equal(numerical_rank(G), torch.full((3,), r))
    assert torch.allclose(polar_svd(G).square().sum((-2, -1)),
                          torch.full((3,), float(r), dtype=torch.float64),
                          rtol=0, atol=4 * max(m, n) * U64 * max(r, 1))


@given(shape_and_rank())
def test_singular_values_eigvalsh_match_svdvals(case):
    m, n, r, seed = case
    G = random_low_rank(2, m, n, r, make_generator(seed))
    reference = torch.linalg.svdvals(G)
    scale = max(float(reference.max()), 1.0)
    error = float((singular_values_eigvalsh(G) - reference).abs().max())
    assert error <= 8 * (m + n) * U64 * scale


@given(st.integers(1, 8), st.integers(1, 8), SEED.strategy())
def test_polar_routes_agree_on_full_rank(m, n, seed):
    G = random_low_rank(2, m, n, min(m, n), make_generator(seed))
    d = torch.linalg.svdvals(G)
    kappa = float((d[..., 0] / d[..., -1]).max())
    assert float((polar_eigh(G) - polar_svd(G)).abs().max()) <= 4 * max(m, n) * kappa**2 * U64


@given(st.integers(1, 10), st.integers(1, 10), SEED.strategy(),
       st.floats(-8, 0))
def test_newton_schulz_acts_on_singular_values(m, n, seed, log_smallest):
    r"""NS(G) = U p(D/||G||_F) V^T, with p the composition of the scalar quintics."""
    k = min(m, n)
    spectrum = torch.logspace(0, log_smallest, k, dtype=torch.float64)
    G = random_with_singular_values(spectrum, m, n, 2, make_generator(seed))
    U, d, Vh = torch.linalg.svd(G, full_matrices=False)
    x = d / torch.linalg.matrix_norm(G)[..., None]
    for a, b, c in AUTHOR_NS_COEFFICIENTS:
        x = a * x + b * x**3 + c * x**5
    expected = (U * x[..., None, :]) @ Vh
    assert torch.allclose(newton_schulz(G), expected, rtol=0, atol=1e-12)
    assert bool((frobenius_inner(newton_schulz(G), G) > 0).all())


def test_zero_matrix_conventions():
    Z = torch.zeros(2, 3, 5, dtype=torch.float64)
    assert torch.equal(polar_svd(Z), Z)
    assert torch.equal(newton_schulz(Z), Z)
    assert torch.equal(nuclear_norm(Z), torch.zeros(2, dtype=torch.float64))


@given(strategy(lemma2.ENERGY_SPACE))
@settings(max_examples=10)
def test_ascent_rate_is_nuclear_norm(c):
    gen = make_generator(c["seed"])
    X = torch.randn(c["n"], c["d"], generator=gen, dtype=torch.float64)
    Y = torch.nn.functional.one_hot(torch.randint(0, c["M"], (c["n"],), generator=gen),
                                    c["M"]).to(torch.float64)
    W = torch.randn(c["d"], c["K"], generator=gen, dtype=torch.float64)
    G = joint_energy_gradient(W, X, Y)
    rate = directional_derivative(W, X, Y, polar_svd(G))
    bound = 2 * (c["n"] + c["d"] + c["M"] + c["K"]) * U64
    assert math.isclose(float(rate), float(nuclear_norm(G)), rel_tol=bound)
    assert float(rate) >= 0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="polar_eigh needs full rank"):
        polar_eigh(random_low_rank(1, 4, 3, 2, make_generator(0)))
    with pytest.raises(ValueError, match="rank"):
        random_low_rank(1, 4, 3, 4, make_generator(0))
    with pytest.raises(ValueError, match="G: needs at least 2"):
        polar_svd(torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="coefficients"):
        newton_schulz(torch.ones(2, 2, dtype=torch.float64), ())
    with pytest.raises(ValueError, match="singular_values"):
        random_with_singular_values(torch.ones(4), 3, 3, 1, make_generator(0))
