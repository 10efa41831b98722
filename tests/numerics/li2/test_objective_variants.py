"""The top layer's fixed points under the code's and the paper's objectives, the bound a
trained top layer's own gradient puts on its distance to them, and the point function."""
import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.objective_variants import (
    centred,
    objective_variant_point,
    ridge,
    stationarity_bound,
)
from verify.claims.li2._groups import build_group


def _problem(seed: int, n: int, K: int, M: int):
    g = torch.Generator().manual_seed(seed)
    F = torch.randn(n, K, generator=g, dtype=torch.float64).square()  # x^2 features: a mean
    Y = torch.nn.functional.one_hot(torch.randint(0, M, (n,), generator=g), M).double()
    return F, Y, g


def code_gradient(F, Y, V, eta):
    """The code's class-centred MSE (mean over samples, no 1/2) plus (eta/2)||V||^2, by
    autograd: nothing of the module's algebra is reused."""
    V = V.clone().requires_grad_(True)
    M = Y.shape[1]
    O = F @ V
    loss = ((O - O.mean(1, keepdim=True) - (Y - 1 / M)).square().sum(1).mean()
            + eta / 2 * V.square().sum())
    return torch.autograd.grad(loss, V)[0]


def paper_gradient(F, Y, V, eta):
    """The trainer's mse_sample (2J/n) plus (eta/2)||V||^2, by autograd."""
    V = V.clone().requires_grad_(True)
    R = Y - F @ V
    loss = (R - R.mean(0, keepdim=True)).square().sum() / F.shape[0] + eta / 2 * V.square().sum()
    return torch.autograd.grad(loss, V)[0]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 30), K=st.integers(2, 40),
       M=st.integers(2, 6), log_eta=st.floats(-4, 0))
def test_the_derived_fixed_points_zero_each_objectives_gradient(seed, n, K, M, log_eta):
    F, Y, _ = _problem(seed, n, K, M)
    eta = 10 ** log_eta
    code = ridge(F, Y - 1 / M, n * eta / 2)
    paper = ridge(centred(F), centred(Y), n * eta / 2)
    for grad, V in ((code_gradient, code), (paper_gradient, paper)):
        g = grad(F, Y, V, eta)
        # relative to the penalty's own gradient: float64 solves of a well-posed ridge
        assert torch.linalg.matrix_norm(g) <= 1e-8 * (1 + eta * torch.linalg.matrix_norm(V))
    # a planted wrong scale of the ridge (eta itself, the symbol read literally) is no fixed
    # point of the code's objective unless the two scales coincide (n = 2)
    if n != 2:
        wrong = ridge(F, Y - 1 / M, eta)
        assert torch.linalg.matrix_norm(code_gradient(F, Y, wrong, eta)) > 1e-6


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 30), K=st.integers(2, 40),
       M=st.integers(2, 6), log_eta=st.floats(-3, 0), scale=st.floats(1e-3, 10))
def test_a_top_layers_own_gradient_bounds_its_distance_to_the_fixed_point(
        seed, n, K, M, log_eta, scale):
    F, Y, g = _problem(seed, n, K, M)
    eta = 10 ** log_eta
    fixed = ridge(F, Y - 1 / M, n * eta / 2)
    V = fixed + scale * torch.randn(K, M, generator=g, dtype=torch.float64)
    distance = float(torch.linalg.matrix_norm(V - fixed))
    assert distance <= stationarity_bound(code_gradient(F, Y, V, eta), eta) * (1 + 1e-9)


def test_the_point_reports_outcomes_times_and_the_top_layer():
    table = [list(r) for r in build_group("Z7").table]
    point = {"table": table, "seeds": [0, 1], "p": 0.7, "lr": 1e-2, "K": 32, "eta": 1e-3,
             "loss": "mse_class", "top_layer": "trained", "ridge_lambda": 1e-3, "epochs": 30,
             "eval_every": 5, "thresholds": [0.99], "device": "cpu", "dtype": "float64"}
    r = objective_variant_point(point)
    assert r["finite"] and len(r["top_layer"]) == 2
    for d in r["top_layer"]:
        # the bound is a bound: the distance to the run's own fixed point never exceeds it
        assert d["to_code"] <= d["bound"] * (1 + 1e-9)
        assert 0 < d["mean_feature_share"] <= 1 and math.isfinite(d["code_to_paper"])
    assert r["test_acc"]["shape"] == [7, 2]  # epochs 0, 5, ..., 30
    assert objective_variant_point({**point, "eta": 0.0})["top_layer"] is None
    assert objective_variant_point({**point, "top_layer": "ridge"})["top_layer"] is None
