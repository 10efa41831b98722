"""li2.thm1: the energy gradient, the Stage-II node update and ascent on the
sphere, by sympy, autograd, backprop through the network and projected ascent; Stage-II
trained nodes at local maxima of E (cosine and second-order test)."""
import dataclasses

import pytest
import sympy as sp
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numerics.activations import ACTIVATIONS, activation
from numerics.li2.energy import (
    ascend,
    energy,
    energy_gradient,
    sphere_smoothness_bound,
    sphere_step,
    stage2_node_update,
    tangent,
)
from numerics.li2.sphere_newton import gradient_and_hessian, newton_polish
from numerics.random import make_generator, randn
from numerics.li2.two_layer import center, one_hot_labels
from theory.li2.energy import (
    centred_matrix,
    derive_energy_gradient,
    freeze_activation,
    sigma,
    sigma_prime,
    symbolic_activation,
)
from theory.identity import ZeroStatus, is_zero
from verify.claims.li2.thm1 import (
    SPACE,
    gate_dropped_gradient,
    second_order_item,
    stated_energy_gradient,
    tangent_spectrum,
)
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import strategy

SMOOTH = tuple(n for n in ACTIVATIONS if n != "relu")


@pytest.fixture(scope="module")
def quick_result():
    return run_claim(get("li2.thm1"))


def _problem(c, batch=3):
    g = make_generator(c["seed"])
    X = randn(c["n"], c["d"], generator=g)
    Yt = center(one_hot_labels(c["n"], c["M"], g))
    W = randn(batch, c["d"], generator=g)
    return X, Yt, W / W.norm(dim=-1, keepdim=True)


def _stated(W, X, Yt, act, form=stated_energy_gradient):
    return form(W[..., None], X, Yt, act.fn, act.derivative).squeeze(-1)


def test_each_route_is_present(quick_result):
    routes = {e.route.value for e in quick_result.evidence}
    assert routes == {"symbolic", "numeric", "property"}


def test_every_route_rejects_the_dropped_gate(quick_result):
    # The control's evidence: each symbolic identity, each activation's numeric comparison,
    # the property route and the x2 ascent (the gate-dropped direction loses energy) fail.
    control = {e.quantity: e for e in quick_result.control.evidence}
    failed = {q for q, e in control.items() if e.ok is False}
    assert all(q in failed for q in control if not q.startswith("largest decrease")), failed
    assert "largest decrease of E over one projected ascent step, sigma = x2" in failed
    assert {control[q].route.value for q in failed} == {"symbolic", "numeric", "property"}


@settings(max_examples=5)
@given(st.integers(1, 3), st.integers(1, 2), st.integers(1, 2), st.integers(0, 2**31 - 1))
def test_sympy_gradient_of_x2_energy_matches_autograd(n, d, M, seed):
    grad, w, X, Yt, _, _ = derive_energy_gradient(n, d, M, "x2").result
    g = make_generator(seed)
    values = {s: randn(1, generator=g).item() for s in (*w, *X, *Yt)}
    tw, tX, tYt = (torch.tensor([[values[e] for e in row] for row in m.tolist()],
                                dtype=torch.float64) for m in (w, X, Yt))
    expected = torch.tensor([float(e.xreplace(values)) for e in grad], dtype=torch.float64)
    got = energy_gradient(tw.T, tX, tYt, activation("x2"))[0]
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_generic_identity_holds_and_dropped_gate_is_exposed_by_a_witness():
    grad, w, X, Yt, s, ds = derive_energy_gradient(2, 2, 1, "generic").result
    a, b = freeze_activation([stated_energy_gradient(w, X, Yt, s, ds), grad])
    assert is_zero(a - b).status is ZeroStatus.ZERO
    a, b = freeze_activation([gate_dropped_gradient(w, X, Yt, s, ds), grad])
    # Without freezing, sigma(17/3) stays unevaluated and no witness can be found.
    assert is_zero(a - b).status is ZeroStatus.NONZERO


def test_freeze_gives_one_symbol_per_application():
    z = sp.Symbol("z")
    a, b = freeze_activation([sp.Matrix([sigma(z) * sigma_prime(z)]), sp.Matrix([sigma(z)])])
    assert not a.atoms(sigma, sigma_prime) and len(a[0].free_symbols) == 2
    assert b[0].is_Symbol and b[0] in a[0].free_symbols


@given(strategy(SPACE), st.integers(1, 5))
def test_stage2_network_update_is_the_energy_gradient_node_by_node(c, K):
    X, Yt, W = _problem(c, K)
    act = activation(c["activation"])
    update = stage2_node_update(W.T, X, Yt, act).T
    expected = energy_gradient(W, X, Yt, act)
    torch.testing.assert_close(update, expected, rtol=1e-10,
                               atol=1e-12 * (1 + expected.abs().max()))


@given(strategy(SPACE))
def test_stated_gradient_matches_autograd(c):
    X, Yt, W = _problem(c)
    act = activation(c["activation"])
    expected = energy_gradient(W, X, Yt, act)
    torch.testing.assert_close(_stated(W, X, Yt, act), expected, rtol=1e-10,
                               atol=1e-12 * (1 + expected.abs().max()))


@given(strategy({k: SPACE[k] for k in ("n", "d", "M", "seed")}), st.sampled_from(SMOOTH))
def test_autograd_matches_central_differences(c, name):
    X, Yt, W = _problem(c, 1)
    act, h = activation(name), 1e-5
    steps = h * torch.eye(c["d"], dtype=torch.float64)
    fd = (energy(W + steps, X, Yt, act) - energy(W - steps, X, Yt, act)) / (2 * h)
    g = energy_gradient(W, X, Yt, act)[0]
    # Central differences err by O(h^2 |E'''|) + O(u |E| / h).
    torch.testing.assert_close(fd, g, rtol=1e-5, atol=1e-6 * (1 + g.abs().max()))


@given(st.sampled_from(tuple(ACTIVATIONS)), st.integers(0, 2**31 - 1))
def test_hand_derivatives_match_autograd(name, seed):
    act = activation(name)
    z = 3 * randn(200, generator=make_generator(seed))
    z = z[z.abs() > 1e-9].requires_grad_(True)  # ReLU: a.e.
    (auto,) = torch.autograd.grad(act(z).sum(), z)
    torch.testing.assert_close(act.derivative(z.detach()), auto, rtol=1e-12, atol=1e-14)


@given(strategy({k: SPACE[k] for k in ("n", "d", "M", "seed")}), st.sampled_from(SMOOTH))
def test_smoothness_bound_dominates_the_curvature_along_ascent_arcs(c, name):
    X, Yt, W = _problem(c, 1)
    act = activation(name)
    xi = tangent(W, randn(1, c["d"], generator=make_generator(c["seed"] + 1)))
    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    arc = (W + t * xi) / (W + t * xi).norm()
    (f1,) = torch.autograd.grad(energy(arc, X, Yt, act).sum(), t, create_graph=True)
    (f2,) = torch.autograd.grad(f1, t)
    assert abs(float(f2)) <= sphere_smoothness_bound(X, Yt, act) * float(xi.square().sum())


@settings(max_examples=10)
@given(strategy({k: SPACE[k] for k in ("n", "d", "M", "seed")}), st.sampled_from(SMOOTH))
def test_energy_never_decreases_at_lr_one_over_L(c, name):
    X, Yt, W = _problem(c, 4)
    act = activation(name)
    L = sphere_smoothness_bound(X, Yt, act)
    assume(L > 0)  # L = 0 only when all labels share one class: Yt = 0 and E = 0
    lr = 1 / L
    trace = ascend(W, X, Yt, act, lambda w: energy_gradient(w, X, Yt, act), lr, 20)
    increments = trace.energy[1:] - trace.energy[:-1]
    assert float(increments.min()) >= -1e-12 * (1 + float(trace.rounding_scale.max()))


@given(strategy({k: SPACE[k] for k in ("d", "seed")}), st.floats(1e-3, 10.0))
def test_sphere_step_stays_on_the_sphere_and_tangent_is_orthogonal(c, lr):
    g = make_generator(c["seed"])
    w, v = randn(3, c["d"], generator=g), randn(3, c["d"], generator=g)
    w = w / w.norm(dim=-1, keepdim=True)
    torch.testing.assert_close((tangent(w, v) * w).sum(-1), torch.zeros(3, dtype=torch.float64),
                               rtol=0, atol=1e-12 * (1 + v.norm()))
    torch.testing.assert_close(sphere_step(w, v, lr).norm(dim=-1),
                               torch.ones(3, dtype=torch.float64))


def test_uncentred_labels_in_the_cotangent_change_the_update():
    # The derived route is sensitive to G_F: with Y in place of Yt it no longer matches.
    c = {"n": 12, "d": 3, "M": 3, "seed": 5}
    X, Yt, W = _problem(c)
    Y = one_hot_labels(12, 3, make_generator(7))
    act = activation("tanh")
    gap = stage2_node_update(W.T, X, Y, act).T - energy_gradient(W, X, Y - Y.mean(0), act)
    assert float(gap.abs().max()) > 1e-3


def test_bad_names_and_ranges_raise():
    with pytest.raises(ValueError, match="x2, relu, silu, tanh, sigmoid"):
        activation("gelu")
    with pytest.raises(ValueError, match="generic, x2"):
        symbolic_activation("tanh")
    with pytest.raises(ValueError, match="n: 1"):
        centred_matrix("Y", 1, 2)
    X = torch.ones(2, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="lr"):
        ascend(X, X, X, activation("x2"), lambda w: w, 0.0, 1)


def test_trained_nodes_are_local_maxima_and_the_dropped_gate_is_rejected(quick_result):
    ok = {e.quantity: e.ok for e in quick_result.evidence}
    cos = "1 - cos(Stage-II trained node, local maximum of E reached by ascent from it), " \
          "sigma = x2"
    second = "second-order test: largest tangent Hessian eigenvalue of E at each maximum, " \
             "sigma = x2"
    assert ok[cos] is True and ok[second] is True
    assert all(a.holds for a in quick_result.assumptions)
    # The gate-dropped direction ascends something else: from the trained node it moves away.
    control = {e.quantity: e.ok for e in quick_result.control.evidence}
    assert control[cos] is False


def _polished(f, seed, d=5, B=4):
    W = randn(B, d, generator=make_generator(seed))
    return newton_polish(W / W.norm(dim=-1, keepdim=True), f)


def test_second_order_item_rejects_minima_and_accepts_maxima():
    c = {"n": 24, "d": 5, "M": 3, "seed": 11}
    X, Yt, _ = _problem(c)
    act = activation("x2")

    def E(w):
        return energy(w, X, Yt, act)

    def spectrum(w):
        _, _, R = gradient_and_hessian(w, E)
        return tangent_spectrum(w, R)

    maxima = _polished(E, 1)
    minima = _polished(lambda w: -E(w), 2)  # saddle-free Newton on -E: minima of E
    args = ({}, c["n"], c["d"], c["M"])
    assert second_order_item(spectrum(maxima.w), "x2", *args).ok is True
    assert second_order_item(spectrum(minima.w), "x2", *args).ok is False
    # tangent_spectrum drops the normal direction, not the largest eigenvalue
    assert (spectrum(minima.w) > 0).any()


def test_untrained_nodes_make_the_maxima_item_inconclusive():
    claim = get("li2.thm1")
    quick = claim.parameters["quick"]
    short = {**quick, "maxima": {**quick["maxima"], "train_steps": 0}}
    result = run_claim(dataclasses.replace(claim, parameters={**claim.parameters,
                                                              "quick": short}))
    assert result.verdict.value == "inconclusive", result.reason
    assert any(not a.holds and a.name.startswith("Stage-II training reached")
               for a in result.assumptions)
