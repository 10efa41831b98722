"""li2.eq6 (its verdict and control: tests/quality/verdicts.py): the exact routes agree to roundoff
over drawn problems and reject planted errors; the measured node step is the trainer's own
gradient."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.arrays import transpose
from verify.claims.li2.eq6 import (
    ACTIVATIONS,
    actual_steps,
    chain_rule_case,
    decoupling_case,
    node_cosines,
    tangent_of,
)
from verify.claims.li2._groups import build_group
from verify.registry import get
from verify.run import Run
from verify.runner import run_claim

SEEDS = st.integers(0, 2**31 - 1)
GROUPS = st.sampled_from(("Z5", "Z6", "D3", "Z7"))


def make_run(**stated) -> Run:
    claim = get("li2.eq6")
    return Run(claim_id=claim.id, fidelity="quick", params=claim.parameters["quick"],
               stated={**claim.stated, **stated}, seed=0, device=torch.device("cpu"),
               dtype=torch.float64)


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.eq6"))


def test_the_exact_and_the_training_route_both_catch_the_control(quick):
    # the planted coupling is caught by the exact route and by the training route
    assert sum(e.ok is False for e in quick.control.evidence) == 2


@settings(max_examples=15)
@given(GROUPS, st.integers(1, 8), st.sampled_from(ACTIVATIONS), SEEDS)
def test_exact_routes_agree_to_roundoff(group, K, name, seed):
    run = make_run()
    stated, measured = chain_rule_case(run, group, K, name, seed)
    torch.testing.assert_close(stated, measured, rtol=1e-12, atol=1e-13)
    whole, alone = decoupling_case(run, group, K, name, seed)
    torch.testing.assert_close(whole, alone, rtol=1e-12, atol=1e-13)


@settings(max_examples=10)
@given(GROUPS, st.integers(2, 8), SEEDS)
def test_exact_routes_reject_planted_errors(group, K, seed):
    gateless = make_run(node_update=lambda X, d, g: transpose(X) @ g)   # D_j dropped
    stated, measured = chain_rule_case(gateless, group, K, "x2", seed)
    assert (stated - measured).abs().max() > 1e-3 * measured.abs().max()
    coupled = make_run(direction=get("li2.eq6").control.stated["direction"])
    whole, alone = decoupling_case(coupled, group, K, "x2", seed)
    assert (whole - alone).abs().max() > 1e-3 * alone.abs().max()


@settings(max_examples=30)
@given(st.one_of(st.floats(-1, 0), st.floats(1e-6, 1)))
def test_tangent_of_the_angle(c):
    got = float(tangent_of(torch.tensor(c, dtype=torch.float64)))
    if c <= 0:
        assert got == math.inf
    else:
        assert math.isclose(1 / math.sqrt(1 + got * got), c, rel_tol=1e-9)   # cos(atan t)


@settings(max_examples=5)
@given(st.integers(0, 2**31 - 1), st.sampled_from((0.4, 0.7)))
def test_measured_step_is_the_trainers_gradient(seed, p):
    """The step X^T D_j g_j that the angle uses is -(n/2) dL/dw_j of the paper's loss."""
    trainer = GroupTrainer(build_group("Z7").table, Hyper.batch(seed=[seed, seed + 1], p=p),
                           TrainConfig(K=6, loss="mse_sample"), dtype=torch.float64)
    _, gW, _ = trainer.gradients()
    run = make_run(direction=lambda Yt, Ft: -(Yt @ transpose(Yt) @ Ft))
    step = actual_steps(trainer)["step"]
    # with the planted direction -Yt Yt^T Ft the angle flips: cos -> -cos
    cos_flipped = node_cosines(run, trainer, step)
    cos = node_cosines(make_run(), trainer, step)
    torch.testing.assert_close(cos_flipped, -cos)
    n = trainer.forward_snapshot().train.count[:, None, None]
    torch.testing.assert_close(step, -(n / 2) * gW, rtol=1e-10, atol=1e-12)


def test_a_net_that_fitted_nothing_is_inconclusive():
    """lr = 10 throws the training about: the Stage-II angles would be read off nothing."""
    from verify.registry import get
    from verify.runner import run_claim
    r = run_claim(get("li2.eq6"), overrides={"lr": 10.0}, control=False)
    assert r.verdict.value == "inconclusive"
    assert "the network trained beyond chance" in r.reason
