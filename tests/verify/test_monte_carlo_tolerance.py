"""verify.tolerances.monte_carlo / bonferroni_z: the Bonferroni CLT band of Monte Carlo claims."""
from __future__ import annotations

from statistics import NormalDist

import pytest

from verify import FALSE_ALARM, Tolerance, bonferroni_z, monte_carlo


def test_bonferroni_z_is_the_two_sided_normal_quantile():
    assert bonferroni_z(1, 0.05) == pytest.approx(1.959964, abs=1e-6)
    # bit for bit the formula the Monte Carlo claims used before the helper
    for tests in (1, 3, 27, 128):
        assert bonferroni_z(tests) == NormalDist().inv_cdf(1 - FALSE_ALARM / (2 * tests))


def test_bonferroni_z_grows_with_the_number_of_comparisons():
    assert bonferroni_z(1, 0.05) < bonferroni_z(10, 0.05) < bonferroni_z(100, 0.05)
    with pytest.raises(ValueError, match="false_alarm"):
        bonferroni_z(3, 1.5)
    with pytest.raises(ValueError, match="tests"):
        bonferroni_z(0)


def test_monte_carlo_tolerance_is_z_times_the_standard_error():
    t = monte_carlo(tests=12)
    assert isinstance(t, Tolerance) and t.value == bonferroni_z(12)
    assert "12 comparisons" in t.why and "0.001" in t.why
    se = 0.0123
    t = monte_carlo(se, tests=5, false_alarm=1e-6, what="entry", note="largest SE")
    assert t.value == bonferroni_z(5, 1e-6) * se
    assert t.why.startswith("CLT: each entry") and t.why.endswith("; largest SE")


def test_monte_carlo_false_alarm_rate_is_at_most_alpha():
    # simulated standard normals: the family-wise exceedance is <= alpha (Bonferroni)
    import torch
    g = torch.Generator().manual_seed(0)
    z = torch.randn(20000, 10, generator=g, dtype=torch.float64)
    band = monte_carlo(tests=10, false_alarm=0.05).value
    rate = float((z.abs().amax(1) > band).double().mean())
    assert rate < 0.05 + 4 * (0.05 * 0.95 / 20000) ** 0.5
