"""ns.thm4.14 (the drift form of weight decay: passes, the gradient-flow drive is rejected) and
ns.x.thm4.14-limit (the limit minimises f + M_reg: fails for q < 2); the pieces behind them in
theory/ns/weight_decay_regularizer.py, numerics/ns/decayed_limits.py and
numerics/penalised_least_squares.py."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.decayed_limits import (
    adaptive_rest,
    balanced_factors,
    mirror_rate,
    sign_box_radius,
    switching_gradient,
)
from numerics.errors import Diverged
from numerics.penalised_least_squares import (
    box_least_squares,
    lasso,
    min_sup_norm,
    power_penalised,
    ridge,
)
from numerics.random import make_generator
from numerics.ns.steepest_flows import ProductInverseMetric, depth_mask
from tests.claim_results import quick_result
from theory.ns.reparam_balance import ALPHA, Q
from theory.ns.weight_decay_regularizer import (
    DEPTH,
    X,
    derive_coupled_fixed_points,
    derive_decoupled_fixed_points,
    derive_decoupled_regularizer,
    derive_kolb_penalty,
    tidy,
)
from verify import resolved_records
from verify.claims.ns import thm4_14
from verify.claims.ns._ladders import MIN_WINDOW
from verify.claims.ns._weight_decay_limits import sign_settle_time
from verify.registry import get
from verify.run import Run
from verify.verdict import Verdict

seeds = st.integers(0, 2**31 - 1)


result = quick_result


# --- the claims ---------------------------------------------------------------------------------

def test_every_route_kind_rejects_the_gradient_drive():
    failed = [e for e in result("ns.thm4.14").control.evidence if e.ok is False]
    assert {"symbolic", "property", "numeric"} <= {e.route.value for e in failed}
    # The gradient drive equals the steepest one at q = 2: those trajectories still agree.
    trajectories = [e for e in result("ns.thm4.14").control.evidence if "x(t)" in e.quantity]
    assert all((e.ok is True) == (e.parameters["q"] == 2.0) for e in trajectories)
    # ... and the q = 3/2 limit's lasso weight alpha^2 becomes alpha.
    assert any("q = 3/2, L = 3" in e.quantity for e in failed)


def test_limit_reading_fails_below_q2_and_holds_at_q2():
    r = result("ns.x.thm4.14-limit")
    assert r.verdict is Verdict.FAIL
    by_q = {e.parameters["q"]: e for e in r.evidence if e.parameters["L"] in (2, 3)
            and e.parameters["q"] != 1}
    assert by_q[2.0].ok is True and by_q[1.5].ok is False
    # In each failing item the derived reading-2 target and the simulated limit agree.
    for e in r.evidence:
        assert e.comparisons["derived~measured"] <= e.tolerance.value, e.quantity
    assert all(e.ok is False for e in r.evidence if e.parameters["q"] == 1)


def test_limits_are_dense_for_adamw_and_sparse_for_gradient_flow():
    figures = result("ns.thm4.14").figures
    limits = next(v for k, v in figures.items() if k.startswith("limits"))
    assert limits["q=2, L=2"]["support"] < limits["q=1, L=2 (AdamW)"]["support"]
    assert limits["q=1, L=2 (AdamW)"]["max|x| / radius"] == pytest.approx(1, abs=1e-3)


def test_adamw_limits_settle_for_the_offset_relaxation_time():
    """lr/10 is held for 2 ln(10) / alpha_min (offsets relax as e^(-alpha t) at q = 1), not for
    the last 20% of the steps, in both claims."""
    for claim_id in ("ns.thm4.14", "ns.x.thm4.14-limit"):
        items = [e for e in result(claim_id).evidence if "AdamW" in e.quantity]
        alpha_min = min(e.parameters["alpha"] for e in items)
        for e in items:
            assert e.parameters["settle time at lr/10"] == pytest.approx(
                2 * math.log(10) / alpha_min, rel=1e-12)


def test_settle_time_needs_a_box_cell():
    run = Run(claim_id="ns.thm4.14", fidelity="quick", params={}, stated={}, seed=0,
              device=torch.device("cpu"), dtype=torch.float64)
    with pytest.raises(ValueError, match="cells"):
        sign_settle_time(run, [{"L": 2, "coupled": 0.1}])


# --- theory ---------------------------------------------------------------------------------------

def test_regulariser_exponents_and_known_answers():
    reg = derive_decoupled_regularizer().result
    assert tidy(reg.exponent - (2 - Q * (DEPTH - 1) / DEPTH)) == 0
    assert tidy(reg.potential.subs(Q, 2) - ALPHA * DEPTH / 2 * X ** (2 / DEPTH)) == 0
    assert derive_coupled_fixed_points().result.potential == ALPHA * DEPTH * X ** (2 / DEPTH) / 2
    fixed = derive_decoupled_fixed_points().result
    assert tidy(fixed.exponent - Q / (Q - 1) / DEPTH) == 0  # L_(p/L)
    assert fixed.box_radius.subs(DEPTH, 1) == 1 / ALPHA  # Xie & Li
    assert derive_kolb_penalty(2).result == 2 * X


def test_kolb_rejects_bad_depth():
    with pytest.raises(ValueError, match="L"):
        derive_kolb_penalty(1)


@settings(max_examples=15)
@given(q=st.sampled_from([1.0, 1.25, 1.5, 1.75, 2.0]), L=st.integers(2, 6),
       alpha=st.floats(0.05, 2.0), seed=seeds)
def test_measured_drift_is_the_derived_gradient(q, L, alpha, seed):
    """(ẋ_decayed - ẋ_free)/M at balanced factors is -alpha x^(1-m), any g."""
    gen = make_generator(seed)
    x = 0.05 + 3 * torch.rand(1, 6, generator=gen, dtype=torch.float64)
    g = torch.randn(1, 6, generator=gen, dtype=torch.float64)
    mask = depth_mask(torch.tensor([L]), L)
    W = balanced_factors(x, mask)
    qt, at = torch.full((1, 1), q, dtype=torch.float64), torch.full((1, 1), alpha,
                                                                     dtype=torch.float64)
    drift = mirror_rate(W, g, qt, mask, decoupled=at) - mirror_rate(W, g, qt, mask)
    gradient = derive_decoupled_regularizer().result.gradient.subs(
        {Q: sp.nsimplify(q), DEPTH: L, ALPHA: alpha})
    expected = torch.tensor([float(gradient.subs(X, float(v))) for v in x[0]],
                            dtype=torch.float64)
    torch.testing.assert_close(-drift[0], expected, rtol=1e-12, atol=0)


@settings(max_examples=10)
@given(q=st.sampled_from([1.0, 1.5, 2.0]), L=st.integers(2, 5), alpha=st.floats(0.05, 1.0),
       seed=seeds)
def test_switching_gradient_is_the_coupled_regulariser(q, L, alpha, seed):
    x = 0.1 + 2 * torch.rand(1, 5, generator=make_generator(seed), dtype=torch.float64)
    mask = depth_mask(torch.tensor([L]), L)
    g_star = switching_gradient(balanced_factors(x, mask), torch.full((1, 1), q,
                                                                     dtype=torch.float64),
                                mask, coupled=torch.full((1, 1), alpha, dtype=torch.float64),
                                bound=1e3)
    torch.testing.assert_close(-g_star, alpha * x ** (2 / L - 1), rtol=1e-12, atol=0)


@settings(max_examples=10)
@given(L=st.integers(1, 6), alpha=st.floats(0.3, 3.0))
def test_sign_box_radius_is_alpha_to_minus_L(L, alpha):
    mask = depth_mask(torch.tensor([L]), L)
    radius = sign_box_radius(mask, torch.full((1, 1), alpha, dtype=torch.float64),
                             lo=1e-20, hi=1e20)
    assert float(radius) == pytest.approx(alpha ** (-L), rel=1e-12)


@settings(max_examples=10)
@given(L=st.integers(2, 4), scale=st.floats(0.05, 3.0), seed=seeds)
def test_metric_scaling_law(L, scale, seed):
    """M(x; s c) = s^(L-1) M(x s^(-L/q); c), the law DecayedMirrorFlow rests on."""
    gen = make_generator(seed)
    q = torch.full((1, 1), 1.5, dtype=torch.float64)
    mask = depth_mask(torch.tensor([L]), L)
    offsets = torch.rand(L, 1, 4, generator=gen, dtype=torch.float64)
    offsets[0] = 0
    x = torch.randn(1, 4, generator=gen, dtype=torch.float64)
    direct = ProductInverseMetric(scale * offsets, q, mask)(x)
    scaled = scale ** (L - 1) * ProductInverseMetric(offsets, q, mask)(x * scale ** (-L / 1.5))
    torch.testing.assert_close(direct, scaled, rtol=1e-12, atol=0)


def test_adaptive_rest_reaches_the_rest_point_and_estimates_the_distance():
    rate = torch.tensor([[0.05, 1.0]], dtype=torch.float64)
    rest = adaptive_rest(lambda t, y: -rate * y, torch.ones(1, 2, dtype=torch.float64),
                         lambda y: y, dt=0.1, tol=1e-10, speed_tol=1e-9, max_steps=10000)
    distance = float(rest.final.abs().max())
    assert rest.remaining == pytest.approx(distance, rel=1e-3)
    assert rest.rejected < rest.accepted


# --- reference minimisers ---------------------------------------------------------------------

def _problem(seed: int, N: int = 6, d: int = 12):
    gen = make_generator(seed)
    A = torch.randn(N, d, generator=gen, dtype=torch.float64)
    return A, A @ torch.randn(d, generator=gen, dtype=torch.float64)


@settings(max_examples=10)
@given(seed=seeds, fraction=st.floats(0.1, 0.9))
def test_lasso_ridge_box_and_power_satisfy_their_kkt_conditions(seed, fraction):
    A, y = _problem(seed)
    N = A.shape[0]

    def grad(x):
        return A.T @ (A @ x - y) / N

    weight = fraction * float(grad(torch.zeros(A.shape[1], dtype=torch.float64)).abs().max())
    x, _ = lasso(A, y, weight)
    g, on = grad(x), x != 0
    torch.testing.assert_close(g[on], -weight * torch.sign(x[on]), rtol=1e-9, atol=1e-12)
    assert bool((g[~on].abs() <= weight * (1 + 1e-9)).all())
    torch.testing.assert_close(grad(ridge(A, y, weight)), -weight * ridge(A, y, weight))
    xp = power_penalised(A, y, weight, 1.5)
    torch.testing.assert_close(grad(xp), -weight * torch.sign(xp) * xp.abs() ** 0.5,
                               rtol=1e-8, atol=1e-10)
    radius = 0.5 * min_sup_norm(A, y)
    xb = box_least_squares(A, y, radius)
    gb, inside = grad(xb), xb.abs() < radius * (1 - 1e-9)
    assert float(gb[inside].abs().max()) < 1e-10 if bool(inside.any()) else True
    assert bool((gb[~inside] * xb[~inside] <= 1e-12).all())  # pushing outward only


def test_bad_weights_are_rejected():
    A, y = _problem(0)
    for call in (lambda: lasso(A, y, 0.0), lambda: ridge(A, y, -1.0),
                 lambda: box_least_squares(A, y, math.inf),
                 lambda: power_penalised(A, y, 1.0, 2.5)):
        with pytest.raises(ValueError):
            call()


def test_lasso_raises_when_its_iterations_run_out():
    A, y = _problem(1)
    with pytest.raises(Diverged):
        lasso(A, y, 1e-3, iterations=1, check_every=2)


def test_sparsity_summary_of_a_spike_and_a_flat_vector():
    from numerics.ns.decayed_limits import sparsity

    assert sparsity(torch.tensor([0.0, 2.0, 0.0]), 1e-3).as_dict() == {"support": 1,
                                                                        "l1/l2": 1.0}
    flat = sparsity(torch.ones(16), 1e-3)
    assert flat.support == 16 and flat.l1_over_l2 == pytest.approx(np.sqrt(16))


def _synthetic_ladder(chatter_from: int | None, records: int = 31, levels: int = 3
                      ) -> list[torch.Tensor]:
    """Rungs of x(t) = exp(-t) with an RK4-like error 1e-3 h^4 (h halving per rung), and from
    record ``chatter_from`` on a rung-alternating swing of half the size (a chattering
    ladder)."""
    t = torch.linspace(0, 3, records, dtype=torch.float64)[:, None]
    rungs = [torch.exp(-t) + 1e-3 * t * 2.0 ** (-4 * k) for k in range(levels)]
    if chatter_from is not None:
        for k, rung in enumerate(rungs):
            rung[chatter_from:] += 0.5 * (-1) ** k
    return rungs


@pytest.mark.parametrize("chatter_from, expected", [(None, 31), (12, 12), (1, 1)])
def test_the_resolved_window_ends_where_the_ladder_starts_to_chatter(chatter_from, expected):
    resolved = _synthetic_ladder(None)
    n = resolved_records([_synthetic_ladder(chatter_from), resolved])
    assert n == expected
    t_r = (n - 1) * 3 / 30
    # Resolved everywhere: t_r = T; chattering from the start: below the decision threshold.
    assert (t_r >= MIN_WINDOW * 3) == (chatter_from != 1)


def test_every_rung_pair_counts_not_only_the_finest():
    rungs = _synthetic_ladder(None)
    rungs[0] = rungs[0] + 0.5 * (torch.arange(31) >= 20)[:, None]
    assert resolved_records([rungs]) == 20


def _trajectory_outcome(q: float, stated: dict) -> tuple:
    claim = get("ns.thm4.14")
    params = dict(claim.parameters["quick"])
    params["trajectories"] = {**params["trajectories"], "q": [q], "L": [2]}
    run = Run("ns.thm4.14", "quick", params, stated, 0, torch.device("cpu"), torch.float64)
    (evidence,) = thm4_14._trajectories(run)
    ran = [a for a in run.data_assumptions if a.source == "ran"]
    return evidence, ran[0].holds


def test_stiff_trajectory_ladder_is_a_run_that_did_not_resolve_not_a_nan():
    """Issue 19: at q = 1.1 the decayed flow reaches a stiff phase (drive slope
    (q-1)|g|^(q-2) past RK4's stability at the ladder's steps); at the quick steps it comes
    before a tenth of T, and the run records that it did not resolve x(t) (an honest
    inconclusive reason), not only a NaN comparison. Resolved everywhere (q = 1.5): t_r = T."""
    claim = get("ns.thm4.14")
    stiff, stiff_ran = _trajectory_outcome(1.1, claim.stated)
    assert (stiff.ok, stiff_ran) == (None, False)
    assert stiff.parameters["t_r"] < MIN_WINDOW * stiff.parameters["T"]
    smooth, smooth_ran = _trajectory_outcome(1.5, claim.stated)
    assert (smooth.ok, smooth_ran) == (True, True)
    assert smooth.parameters["t_r"] == smooth.parameters["T"]
    assert smooth.parameters["window"] == "[0, T]"


def test_a_wrong_drive_is_rejected_on_the_resolved_window():
    """The planted gradient drive at q = 1.1 changes the velocity field from t = 0: on its
    resolved window (shorter than T) the flows separate far beyond the ladders' budget."""
    claim = get("ns.thm4.14")
    evidence, ran = _trajectory_outcome(1.1, {**claim.stated, **claim.control.stated})
    assert ran and evidence.ok is False
    T = evidence.parameters["T"]
    assert MIN_WINDOW * T <= evidence.parameters["t_r"] < T
    assert evidence.comparisons["stated~measured"] > 5 * evidence.tolerance.value
