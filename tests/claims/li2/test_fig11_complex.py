"""li2.fig11-complex: the quick run (the derived sign 0 refutes the stated -1; the measured
times coincide seed by seed), and the complex trainer: the real network's start, loss and
split, no gradient on the imaginary parts at real weights, and a gradient there once they are
not real (so the 'stays real' item can fail)."""
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.complex_weights import ComplexGroupTrainer
from numerics.li2.deep_group_network import loss_and_accuracy
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.random import make_generator
from verify.claims.li2._groups import build_group
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig11-complex"))


def _item(result, text):
    return [e for e in result.evidence if text in e.quantity]


def test_the_stated_sign_fails_against_the_real_trajectory(quick):
    assert quick.verdict is Verdict.FAIL
    (stays,) = _item(quick, "stay real")
    assert stays.ok is True
    (sign,) = _item(quick, "sign of log t_complex")
    assert sign.ok is False
    # t_0.5 coincides on every seed (the interval [0, 0]); by t_0.99 the float32 rounding of
    # the two implementations has moved a few runs by a few epochs either way: no sign
    for e in _item(quick, "complex weights grok faster"):
        assert e.ok is None
    table = quick.figures["complex against real weights, per group and threshold"]
    assert table["Z23, t_0.5"]["equal on every seed"]
    lo, hi = table["Z23, t_0.99"]["95% interval"]
    assert 0.95 < lo <= 1 <= hi < 1.05


def test_the_control_and_a_true_sign_0(quick):
    claim = get("li2.fig11-complex")
    slower = dataclasses.replace(claim, stated={"complex_faster": lambda: 1.0})
    assert run_claim(slower, control=False).verdict is Verdict.FAIL
    equal = dataclasses.replace(claim, stated={"complex_faster": lambda: 0.0})
    (sign,) = _item(run_claim(equal, control=False), "sign of log t_complex")
    assert sign.ok is True


def _trainer(seed, M, K, dtype=torch.float64):
    hyper = Hyper.batch(seed=[seed, seed + 1], p=0.7, eta=1e-4, lr=1e-2)
    config = TrainConfig(K=K, activation="x2", loss="mse_class", eval_every=1, diag_every=1,
                         diagnostics=())
    table = build_group(f"Z{M}").table
    return (ComplexGroupTrainer(table, hyper, config, dtype=dtype),
            GroupTrainer(table, hyper, config, dtype=dtype))


def _grads(tr):
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in tr.params.items()}
    S = tr.train_set
    loss, _ = loss_and_accuracy(tr.real_output(S, leaves), S, tr.M, "mse_class")
    return dict(zip(leaves, torch.autograd.grad(loss.sum(), list(leaves.values()))))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 2), M=st.sampled_from([5, 7, 11]), K=st.integers(2, 16))
def test_real_weights_get_no_imaginary_gradient(seed, M, K):
    cplx, real = _trainer(seed, M, K)
    torch.testing.assert_close(cplx.params["W_re"], real.W, rtol=0, atol=0)
    torch.testing.assert_close(cplx.params["V_re"], real.V, rtol=0, atol=0)
    g = _grads(cplx)
    assert float(g["W_im"].abs().max()) == 0.0 and float(g["V_im"].abs().max()) == 0.0
    assert float(g["W_re"].abs().max()) > 0
    # a complex point: the imaginary parts do get a gradient
    gen = make_generator(seed)
    cplx.params["W_im"] = 0.1 * torch.randn(cplx.params["W_im"].shape, generator=gen,
                                            dtype=torch.float64)
    g = _grads(cplx)
    assert float(g["V_im"].abs().max()) > 0 and float(g["W_im"].abs().max()) > 0


def test_training_matches_the_real_trainer_and_stays_real():
    cplx, real = _trainer(3, 7, 8)
    h_c, h_r = cplx.train(20), real.train(20)
    for name in ("train_loss", "test_acc"):
        e_c, v_c = h_c.series(name)
        e_r, v_r = h_r.series(name)
        assert e_c.tolist() == e_r.tolist()
        # float64, 20 Adam steps from the same start: the two implementations sum in another
        # order, so they agree to a few hundred roundings
        torch.testing.assert_close(v_c, v_r, rtol=1e-10, atol=1e-12)
    assert float(cplx.imaginary_size().max()) == 0.0


def test_rejects_what_the_code_cannot_build():
    hyper = Hyper.batch(seed=[0])
    table = build_group("Z5").table
    for change in ({"activation": "relu"}, {"loss": "mse_sample"}):
        with pytest.raises(ValueError):
            ComplexGroupTrainer(table, hyper, TrainConfig(K=4, **{"activation": "x2",
                                                                 "loss": "mse_class",
                                                                 **change}))
