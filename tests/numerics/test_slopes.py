"""numerics.slopes: the shared least-squares slopes, and bit-identity with the fits they replace."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from numerics.slopes import exponential_rate, least_squares_slope, loglog_slope
from numerics.step_studies import observed_order


def test_loglog_slope_recovers_a_power_law_and_is_polyfit():
    x = np.geomspace(1e-3, 1.0, 7)
    assert loglog_slope(x, 3.0 * x**1.5) == pytest.approx(1.5, abs=1e-12)
    rng = np.random.default_rng(0)
    y = rng.uniform(0.1, 2.0, 7)
    assert loglog_slope(x, y) == np.polyfit(np.log(x), np.log(y), 1)[0]
    assert loglog_slope(list(x), list(y)) == loglog_slope(x, y)


def test_exponential_rate_recovers_a_decay_and_is_polyfit():
    t = np.linspace(0.0, 5.0, 11)
    assert exponential_rate(t, 2.0 * np.exp(-0.7 * t)) == pytest.approx(0.7, abs=1e-12)
    y = np.random.default_rng(1).uniform(0.1, 2.0, (11, 3))
    for b in range(3):  # a strided column, as the claims pass it
        assert exponential_rate(t, y[:, b]) == -np.polyfit(t, np.log(y[:, b]), 1)[0]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_least_squares_slope_is_batched_and_bit_identical_to_the_centred_sums(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 9, generator=g, dtype=torch.float64).to(dtype)
    y = torch.randn(5, 9, generator=g, dtype=torch.float64).to(dtype)
    s = least_squares_slope(x, y)
    assert s.shape == (5,)
    for b in range(5):
        xc = x[b] - x[b].mean()
        assert torch.equal(s[b], (xc * (y[b] - y[b].mean())).sum() / (xc**2).sum())
        fit = np.polyfit(x[b].double().numpy(), y[b].double().numpy(), 1)[0]
        assert float(s[b]) == pytest.approx(fit, rel=1e-4 if dtype == torch.float32 else 1e-10)
    # a transposed (non-contiguous) input, as ns.fig2-metric passes it: the same sums
    xt, yt = x.T.contiguous().T, y.T.contiguous().T
    xc = xt - xt.mean(-1, keepdim=True)
    expected = (xc * (yt - yt.mean(-1, keepdim=True))).sum(-1) / (xc**2).sum(-1)
    assert torch.equal(least_squares_slope(xt, yt), expected)


def test_observed_order_is_unchanged_by_the_shared_slope():
    errors = torch.tensor([1e-2, 2.6e-3, 6.1e-4, 1.6e-4], dtype=torch.float64)
    k = torch.arange(4, dtype=torch.float64)
    logs = torch.log2(errors)
    k_c = k - k.mean()
    assert torch.equal(observed_order(errors), -(k_c * (logs - logs.mean())).sum() / (k_c**2).sum())
