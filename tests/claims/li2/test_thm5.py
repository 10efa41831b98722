"""li2.thm5: the memorisation solution on single-target data. The verdict and what decides it,
the single-target data and energy (three label readings), the end-point tests (Newton
polish, strict-maximum and kink tests), and each route's power to reject a wrong statement.

Findings these tests pin down (see the claim's evidence): the global maximisers are as
stated for every activation in Thm. 5's list; "no other local optima" fails for x^q with
q > 2 (every focused point is a strict local maximum; smallest case Z2, any p) and for SiLU
(a second maximum with F < 0, not the mirror image of the first; smallest case Z2).
"""
import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.energy import energy
from numerics.li2.memorisation import (
    canonical_sign,
    distinct_rows,
    energy_hessian,
    lift,
    memorisation_activation,
    newton_polish,
    parity,
    single_target_data,
    split_coordinates,
    strict_maximum,
)
from numerics.random import make_generator
from numerics.li2.two_layer import center
from theory.li2.memorisation import derive_single_target_energy, derive_vertex_maxima
from verify.claims.li2 import thm5
from verify.claims.li2._groups import build_group
from verify.registry import get
from verify.runner import run_claim

SEEDS = st.integers(0, 2**31 - 1)
GROUPS = st.sampled_from(("Z2", "Z3", "Z4", "Z2xZ2", "S3"))


@pytest.fixture(scope="module")
def result():
    return run_claim(get("li2.thm5"))


def _data(group: str, seed: int):
    G = build_group(group)
    g = make_generator(seed)
    counts = 1 + torch.randint(0, 5, (G.order,), generator=g)
    return G, single_target_data(G.table, G.order - 1, counts)


# --- the claim --------------------------------------------------------------------------------

def test_fails_exactly_on_the_extra_local_maxima(result):
    failed = {e.quantity for e in result.evidence if e.ok is False}
    expected = set()
    for group in ("Z2", "S3"):
        for name in ("x^3", "x^4", "silu"):
            expected.add(f"{group}, sigma = {name}: distinct strict local maxima of E found (up "
                         f"to w -> -w for odd or even sigma)")
        for name in ("x^3", "x^4"):
            expected.add(f"{group}, sigma = {name}: focused points that are strict local "
                         f"maxima of F (exact second-order test)")
    assert failed == expected
    assert all(e.ok is True for e in result.evidence if e.quantity not in expected)
    assert all(a.holds for a in result.assumptions), [a.name for a in result.assumptions
                                                      if not a.holds]


def test_global_maximisers_and_classes_match_for_every_activation(result):
    items = {e.quantity: e for e in result.evidence}
    for name in thm5.PAPER_ACTIVATIONS:
        assert items[f"sigma = {name}: focused (1) or spreading (0)"].ok
        for group in ("Z2", "S3"):
            assert items[f"{group}, sigma = {name}: global maximiser w of E"].ok


def test_single_target_degeneracy_is_recorded(result):
    for key, (sample_max, ratio) in ((k, v) for k, v in result.figures.items()
                                     if "label readings" in k):
        M = 2 if key.startswith("Z2") else 6
        assert sample_max == 0.0
        assert ratio == pytest.approx(1 - 1 / M, rel=1e-12)


def test_control_rejects_the_flipped_saturating_family(result):
    failed = {e.quantity for e in result.control.evidence if e.ok is False}
    for name in ("tanh", "sigmoid"):
        assert f"sigma = {name}: focused (1) or spreading (0)" in failed
        for group in ("Z2", "S3"):
            assert f"{group}, sigma = {name}: global maximiser w of E" in failed
    assert "sigma = relu: focused (1) or spreading (0)" not in failed


def test_symbolic_reduction_rejects_unweighted_objective():
    run = type("R", (), {})()
    run.derivation = lambda d: d
    run.stated = {"objective": lambda p, values: sum(values, 0 * values[0]) / len(values)}
    (item,) = thm5._reduction(run, "S3", (3, 1, 2, 1, 1, 2))
    assert item.ok is False
    run.stated = {"objective": thm5.stated_objective}
    (item,) = thm5._reduction(run, "S3", (3, 1, 2, 1, 1, 2))
    assert item.ok is True


def test_paper_list_and_its_limits():
    assert [thm5.stated_classification(n) for n in ("x^2", "x^3.5", "relu", "tanh")] == [
        "focused", "focused", "spreading", "spreading"]
    with pytest.raises(ValueError, match="list"):
        thm5.stated_classification("x^1.5")
    with pytest.raises(ValueError, match="list"):
        thm5.stated_classification("gelu")


# --- data and energy --------------------------------------------------------------------------

@given(GROUPS, SEEDS)
def test_single_target_rows_all_have_the_target(group, seed):
    G, data = _data(group, seed)
    left = data.X[:, :G.order].argmax(1)
    right = data.X[:, G.order:].argmax(1)
    assert all(G.table[a][b] == G.order - 1 for a, b in zip(left.tolist(), right.tolist()))
    assert torch.bincount(left, minlength=G.order).tolist() == data.counts.tolist()


@given(GROUPS, SEEDS, st.sampled_from(thm5.PAPER_ACTIVATIONS))
def test_energy_is_the_reduced_objective_and_centring_kills_it(group, seed, name):
    G, data = _data(group, seed)
    act = memorisation_activation(name)
    w = torch.randn(3, 2 * G.order, generator=make_generator(seed + 1), dtype=torch.float64)
    s, t = split_coordinates(w, data)
    F = (data.p * act(s)).sum(-1)
    e = energy(w, data.X, data.Y / data.n, act)
    torch.testing.assert_close(e, F.square() / 2, rtol=1e-12, atol=1e-14)
    assert float(energy(w, data.X, center(data.Y), act).abs().max()) == 0.0
    classes = energy(w, data.X, (data.Y - 1 / G.order) / data.n, act)
    torch.testing.assert_close(classes, (1 - 1 / G.order) * e, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(w.square().sum(-1), (s.square() + t.square()).sum(-1) / 2)


@given(GROUPS, SEEDS)
def test_lift_and_split_are_inverse(group, seed):
    G, data = _data(group, seed)
    s = torch.randn(G.order, generator=make_generator(seed), dtype=torch.float64)
    s2, t2 = split_coordinates(lift(s, data), data)
    torch.testing.assert_close(s2, s)
    assert float(t2.abs().max()) == 0.0


@settings(max_examples=6)
@given(st.sampled_from(("Z2", "Z3", "S3")), st.lists(st.integers(1, 3), min_size=6, max_size=6))
def test_symbolic_energy_readings(group, counts):
    G = build_group(group)
    e = derive_single_target_energy(G.table, G.order - 1, tuple(counts[:G.order])).result
    assert e.sample_centred == 0
    assert sp.expand(e.class_centred - (1 - sp.Rational(1, G.order)) * e.uncentred) == 0


@settings(max_examples=10)
@given(st.integers(2, 5), st.sampled_from(("x^3", "x^4", "x^5/2")), SEEDS)
def test_vertex_count_is_one_for_squares_and_all_for_higher_powers(M, name, seed):
    g = make_generator(seed)
    weights = (1 + torch.randperm(50, generator=g)[:M]).tolist()  # distinct: unique argmax
    p = [sp.Rational(w, sum(weights)) for w in weights]
    assert sum(derive_vertex_maxima("x^2", p).result.strict) == 1
    assert sum(derive_vertex_maxima(name, p).result.strict) == M


def test_vertex_test_rejects_activations_with_positive_slope_at_zero():
    p = [sp.Rational(2, 3), sp.Rational(1, 3)]
    assert derive_vertex_maxima("relu", p).result.strict == (False, False)


# --- end-point tests --------------------------------------------------------------------------

@settings(max_examples=8)
@given(GROUPS, SEEDS, st.sampled_from(("x^3", "tanh", "silu")))
def test_hessian_matches_central_differences(group, seed, name):
    G, data = _data(group, seed)
    act = memorisation_activation(name)
    w = torch.randn(1, 2 * G.order, generator=make_generator(seed), dtype=torch.float64)
    H = energy_hessian(w, data.X, data.Y / data.n, act)[0]
    h, d = 1e-5, 2 * G.order
    fd = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d):
        for j in range(d):
            ei, ej = h * torch.eye(d)[i], h * torch.eye(d)[j]
            f = [float(energy(w + a * ei + b * ej, data.X, data.Y / data.n, act))
                 for a, b in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
            fd[i, j] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    torch.testing.assert_close(H, fd, rtol=1e-4, atol=1e-5 * (1 + float(H.abs().max())))


def test_newton_polish_reaches_the_spread_maximum_and_it_is_strict():
    G, data = _data("S3", 3)
    act = memorisation_activation("tanh")
    p = data.p[None]
    stated = thm5.stated_maximiser(p, act, "spreading", data.partner)[0]
    start = stated + 1e-3 * torch.randn(2 * G.order, generator=make_generator(1),
                                        dtype=torch.float64)
    pol = newton_polish((start / start.norm())[None], data.X, data.Y / data.n, act, 5)
    assert float((pol.w[0] - stated).abs().max()) < 1e-12
    test = strict_maximum(pol.w, data.X, data.Y / data.n, act, eigen_tol=1e-8,
                          slope_step=1e-6, slope_tol=pol.grad_norm + 1e-9)
    assert bool(test.is_maximum[0])


def test_kink_test_rejects_a_relu_point_with_a_dead_coordinate():
    # The spread optimum over all but one coordinate, that one at s_g = 0: the a.e. gradient
    # vanishes (ReLU'(0) = 0) but moving s_g up gains energy at first order.
    _, data = _data("Z3", 0)
    act = memorisation_activation("relu")
    p = data.p.clone()
    p[0] = 0
    s = math.sqrt(2) * p / p.norm()
    w = lift(s, data)[None]
    test = strict_maximum(w, data.X, data.Y / data.n, act, eigen_tol=1e-8, slope_step=1e-6,
                          slope_tol=torch.tensor([1e-9]))
    assert float(test.max_slope[0]) > 1e-3
    assert not bool(test.is_maximum[0])


def test_sign_canonicalisation_and_clusters():
    w = torch.tensor([[1.0, -2.0], [-1.0, 2.0]], dtype=torch.float64)
    s = torch.tensor([[-1.0, -1.0], [1.0, 1.0]], dtype=torch.float64)
    w2, s2 = canonical_sign(w, s, True)
    assert s2.tolist() == [[1.0, 1.0], [1.0, 1.0]] and w2[0].tolist() == [-1.0, 2.0]
    assert [c.tolist() for c in distinct_rows(s2, 1e-9)] == [[0, 1]]
    assert canonical_sign(w, s, False)[1].tolist() == s.tolist()
    assert parity(memorisation_activation("tanh")) == "odd"
    assert parity(memorisation_activation("x^2")) == "even"
    assert parity(memorisation_activation("silu")) == "none"


def test_bad_data_raises():
    G = build_group("Z3")
    with pytest.raises(ValueError, match="counts"):
        single_target_data(G.table, 0, torch.tensor([1, 0, 2]))
    with pytest.raises(ValueError, match="target"):
        single_target_data(G.table, 5, torch.tensor([1, 1, 1]))
