"""li2.thm8 (Muon rebalances gradient updates), with its pieces: the Markov chain of modes found
(theory.li2.coupon_collector), node-by-node collection and the Muon flows
(numerics.li2.coupon_collector, numerics.li2.muon_dynamics)."""
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.coupon_collector import collect, collection_time
from numerics.li2.energy import stage2_node_update
from numerics.li2.muon_dynamics import (
    SequentialMuon,
    joint_gradient,
    mode_update_norms,
    priority_winner,
    sequential_muon,
)
from numerics.li2.muon_projection import muon_direction
from numerics.polar import newton_polar, polar_svd
from numerics.random import make_generator
from tests.planted import failed_quantities
from theory.li2.coupon_collector import derive_expected_nodes, probabilities, theta
from verify.claims.li2 import thm8
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import SEED
from verify.verdict import Verdict

Z_SAFE = 6.0

# Smaller simulations for the tests that plant a broken route (new cache keys), under reading
# B (T_a <= the formula), where the claim holds, so that each planted break shows alone.
SMALL = {"T_a_relation": "<=",
         "flow": {"mu": [1.0, 0.8, 0.6, 0.5], "a": 2.0, "trials": 1000, "dt": 0.25,
                  "max_time": 300.0, "level": 1 - 1e-3},
         "collection": {"configs": [{"mu": [1.0, 0.8, 0.6, 0.5], "a": 2.0}], "trials": 3000,
                        "max_nodes": 20000},
         "sequential": {"mu": [1.0, 0.7, 0.4, 0.25], "a": [2.0, 8.0], "trials": 16,
                        "columns": ["normalised"], "dt": 0.2, "level": 1 - 1e-2,
                        "rest_speed": 0.05, "max_node_time": 100.0, "max_nodes": 200},
         "joint": {"mu": [1.0, 0.8, 0.6], "a": 2.0, "trials": 4, "dt": 0.1, "steps": 50}}


@pytest.fixture(scope="module")
def result():
    return run_claim(get("li2.thm8"))


# --- the claim --------------------------------------------------------------------------------

def test_runs_inside_its_assumptions_and_the_control_fails_the_mode_items(result):
    assert result.inside_assumptions
    failed = failed_quantities(result.control.evidence)
    assert any(q.startswith("P(node -> zeta_l)") for q in failed)
    assert any(q.startswith("mean nodes to find all modes") for q in failed)


def test_muon_guiding_needs_exactly_L_nodes(result):
    """The finding reported with the verdict: T_a = L, below the printed formula."""
    figure = result.figures["sequential Muon: mean nodes, the T_a formula, L"]
    assert all(m == figure["L"] for m in figure["measured"])
    assert all(f > figure["L"] for f in figure["formula"])


def test_fails_as_printed_and_holds_as_the_proofs_bound(result):
    # as printed: the measured T_a (= L) is not the formula, and the formula itself does not
    # tend to L for mu_max/mu_min = 2.5 (its excess grows from 11.8 at a = 16 to 421 at 32)
    assert failed_quantities(result.evidence) == {
        "mean nodes with Muon guiding (polar factor of [earlier gradients, g_j]) = 2^-a T_0 + "
        "(1 - 2^-a) L",
        "T_a ~ L for large a, read of the printed formula: formula / L - 1 at a = 32 <= at "
        "a = 16"}
    (item,) = [e for e in result.evidence if e.quantity.startswith("T_a ~ L for large a")]
    assert item.measured[0] < item.stated[0] and item.measured[1] > item.stated[1]
    (bound,) = result.readings
    assert bound.verdict is Verdict.PASS, bound.reason


def test_joint_muon_covers_every_mode(result):
    figure = result.figures["modes covered by K = L nodes trained jointly (mean over trials)"]
    assert figure["muon"] == figure["L"] > figure["gradient"]


# --- each route can fail ----------------------------------------------------------------------

def test_collection_routes_fail_when_the_model_is_not_halved(monkeypatch):
    monkeypatch.setattr(thm8, "priority_winner",
                        lambda mu, a, gen, suppression=1.0: priority_winner(mu, a, gen, 1.0))
    run = run_claim(get("li2.thm8"), control=False, overrides=SMALL)
    assert failed_quantities(run.evidence) == {
        ("mean nodes with found modes' mu halved (the proof's Muon model) vs 2^-a T_0 + "
         "(1 - 2^-a) L, in standard errors")}


def test_muon_guiding_routes_fail_for_gradient_flow_nodes(monkeypatch):
    """Sequential nodes without Muon are independent: T = T_0 > the formula's T_a."""
    def independent(mu, a, trials, gen, **kw):
        out = collect(priority_winner(mu, a, gen), mu.shape[-1], trials, max_nodes=20000)
        return SequentialMuon(out.nodes, out.found, 0)

    monkeypatch.setattr(thm8, "sequential_muon", independent)
    run = run_claim(get("li2.thm8"), control=False,
                    overrides={**SMALL, "sequential": {**SMALL["sequential"], "trials": 200,
                                                       "mu": [1.0, 0.8, 0.6, 0.5],
                                                       "a": [2.0, 4.0]}})
    assert run.verdict is Verdict.FAIL, run.reason
    failed = failed_quantities(run.evidence)
    assert any(q.startswith("mean nodes with Muon guiding") for q in failed)
    assert any(q.startswith("T_a ~ L") for q in failed)


def test_eq6_and_rebalancing_routes_can_fail(monkeypatch):
    monkeypatch.setattr(thm8, "stage2_node_update",
                        lambda W, X, Yt, act: 1.01 * stage2_node_update(W, X, Yt, act))
    monkeypatch.setattr(thm8, "polar_svd", lambda G: G)
    run = run_claim(get("li2.thm8"), control=False, overrides=SMALL)
    failed = failed_quantities(run.evidence)
    assert any(q.startswith("Eq. 6 node update") for q in failed)
    assert any(q.startswith("Muon: update each mode receives") for q in failed)


# --- theory -----------------------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_independent_chain_at_uniform_p_is_L_H_L(L):
    probs = [sp.Rational(1, L)] * L
    assert derive_expected_nodes(probs).result == L * sp.harmonic(L)


def test_fully_suppressed_model_needs_exactly_L_nodes():
    """theta -> 0 (found modes never win again): the chain needs L nodes, as Muon does."""
    halved = derive_expected_nodes(probabilities(3), theta).result
    assert sp.cancel(halved.subs(theta, 0)) == 3


# --- numerics ---------------------------------------------------------------------------------

@given(n=st.integers(1, 7), seed=SEED.strategy())
def test_newton_polar_matches_the_svd(n, seed):
    X = torch.randn(3, n, n, generator=make_generator(seed), dtype=torch.float64)
    assert torch.allclose(newton_polar(X), polar_svd(X), atol=1e-10)


@given(L=st.integers(2, 7), seed=SEED.strategy())
def test_muon_direction_is_the_last_column_of_the_polar_factor(L, seed):
    gen = make_generator(seed)
    g = torch.randn(4, L, generator=gen, dtype=torch.float64)
    found = torch.rand(4, L, generator=gen) < 0.5
    found[:, 0] = False  # at least one mode without an earlier node
    d = torch.where(found, torch.rand(4, L, generator=gen, dtype=torch.float64) + 0.2, 0.0)
    A = torch.cat([torch.diag_embed(d), g[..., None]], -1)
    assert torch.allclose(muon_direction(d, g), polar_svd(A)[..., -1], atol=1e-10)


@given(L=st.integers(2, 6), extra=st.integers(0, 4), seed=SEED.strategy())
def test_muon_gives_every_mode_a_unit_update(L, extra, seed):
    gen = make_generator(seed)
    W = torch.rand(2, L, L + extra, generator=gen, dtype=torch.float64) + 0.05
    mu = torch.rand(L, generator=gen, dtype=torch.float64) + 0.1
    norms = mode_update_norms(polar_svd(joint_gradient(mu, W)))
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-12)


@given(L=st.integers(2, 6), seed=SEED.strategy())
@settings(max_examples=10)
def test_collection_mean_matches_the_integral(L, seed):
    gen = make_generator(seed)
    mu = torch.rand(L, generator=gen, dtype=torch.float64) * 0.6 + 0.4
    p = thm8.stated_selection(mu, 2.0)
    nodes = collect(priority_winner(mu, 2.0, gen), L, 4000, max_nodes=100000).nodes.double()
    T0 = float(collection_time(p[None]).value[0])
    assert abs(float(nodes.mean()) - T0) <= Z_SAFE * float(nodes.std()) / 4000**0.5


def test_sequential_muon_finds_a_new_mode_with_every_node():
    mu = torch.tensor([1.0, 0.5, 0.2, 0.05], dtype=torch.float64)
    for columns in ("normalised", "as they arise"):
        out = sequential_muon(mu, 1.5, 16, make_generator(1), columns=columns, dt=0.2,
                              level=0.99, rest_speed=0.05, max_node_time=100.0, max_nodes=50)
        assert bool((out.nodes == 4).all()) and bool((out.found == 1).all())


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="columns"):
        sequential_muon(torch.ones(3), 2.0, 2, make_generator(0), columns="raw", dt=0.1,
                        level=0.9, rest_speed=0.1, max_node_time=1.0, max_nodes=3)
    with pytest.raises(ValueError, match="g"):
        muon_direction(torch.ones(1, 3), torch.ones(1, 3))
    with pytest.raises(RuntimeError, match="max_nodes"):
        collect(lambda found: torch.zeros(found.shape[0], dtype=torch.long), 2, 3, max_nodes=5)
