"""Per-entry step sizes in numerics.integrators and verify.step_ladders.flow_limits: runs at
different steps sharing one batch give each run's own numbers (to rounding)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.integrators import integrate, integrate_to_rest
from numerics.random import make_generator
from numerics.ns.steepest_flows import DifferenceOfPowersFlow, default_regression
from verify.step_ladders import flow_limits

FLOAT64 = torch.float64


RATES = (1.0, 3.0)


def _linear(t, y, rates=RATES):
    """dy/dt = -K y, the entries (dim 1) taking the rates in turn."""
    K = torch.tensor(rates, dtype=FLOAT64).repeat(y.shape[1] // len(rates))
    return -K[None, :, None] * y


@given(st.integers(0, 2**31 - 1), st.integers(1, 20))
@settings(max_examples=10)
def test_tensor_step_gives_each_entry_its_own_run(seed, steps):
    gen = make_generator(seed)
    y0 = torch.randn(2, 2, 3, generator=gen, dtype=FLOAT64)
    dt = 0.01 + 0.2 * torch.rand(2, generator=gen, dtype=FLOAT64)
    both = integrate(_linear, y0, dt=dt[None, :, None], steps=steps).final
    for b in range(2):
        alone = integrate(lambda t, y, rate=RATES[b]: _linear(t, y, (rate,)), y0[:, b:b + 1],
                          dt=float(dt[b]), steps=steps).final
        assert torch.allclose(both[:, b:b + 1], alone, rtol=1e-14, atol=0)


def test_entries_stop_on_their_own_and_the_halved_run_takes_twice_the_steps():
    y0 = torch.ones(1, 2, 1, dtype=FLOAT64)
    rest = integrate_to_rest(_linear, y0, dt=torch.tensor([0.1, 0.1], dtype=FLOAT64),
                             chunk=10, speed=lambda t, y: _linear(t, y).abs()[0, :, 0],
                             tol=1e-6, max_steps=10_000, halved=True)
    # |dy/dt| = K e^{-K t} <= 1e-6 at t = ln(K/1e-6)/K: 13.8 (K = 1), 4.97 (K = 3), rounded
    # up to whole chunks of 1 time unit
    assert rest.steps.tolist() == [140, 50]
    exact = torch.exp(-torch.tensor(RATES, dtype=FLOAT64) * rest.steps * 0.1)
    assert torch.allclose(rest.final[0, :, 0], exact, rtol=1e-6)
    assert torch.allclose(rest.halved[0, :, 0], exact, rtol=1e-7)
    assert bool((rest.remaining() > 0).all())


def test_bad_steps_are_rejected():
    y0 = torch.ones(1, 2, 1, dtype=FLOAT64)
    with pytest.raises(ValueError, match="dt"):
        integrate(_linear, y0, dt=torch.tensor([0.1, -0.1], dtype=FLOAT64)[None, :, None],
                  steps=3)
    with pytest.raises(ValueError, match="sizes"):
        flow_limits(_linear, y0, lambda y: y[0], dt=[0.1], sizes=[1], chunk=10, tol=1e-6,
                    max_steps=100)


def test_runs_in_one_batch_match_each_run_alone():
    # ns.prior.woodworth's runs (a = 0.5, 1.5) at its steps: together with the written-out
    # tangent, and one at a time with forward-mode autograd
    problem, _ = default_regression(make_generator(0), device="cpu", dtype=FLOAT64)
    d = problem.A.shape[1]
    flow = DifferenceOfPowersFlow(problem.grad, 2)
    W0 = torch.cat([torch.full((2, 1, d), a, dtype=FLOAT64) for a in (0.5, 1.5)], dim=1)
    steps = [0.4185621185442618, 0.17522598664441758]
    settings_ = {"chunk": 100, "tol": 500 * 2.0**-53, "max_steps": 20_000}
    together = flow_limits(flow, W0, flow.beta, dt=steps, sizes=[1, 1],
                           tangent=lambda W, V: 2 * (W[0] * V[0] - W[1] * V[1]), **settings_)
    alone = [flow_limits(flow, W0[:, b:b + 1], flow.beta, dt=[steps[b]], sizes=[1],
                         **settings_)[0] for b in range(2)]
    for a, b in zip(together, alone):
        assert (a.steps, a.dt) == (b.steps, b.dt)
        assert torch.allclose(a.coarse, b.coarse, rtol=1e-12, atol=1e-14)
        assert torch.allclose(a.fine, b.fine, rtol=1e-12, atol=1e-14)
        assert a.remaining == pytest.approx(b.remaining, rel=1e-6)
