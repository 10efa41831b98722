"""li2.prop3: at eta = 0 and under (A2), G decays at sigma_min^2, mode by mode."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.random import make_generator
from numerics.li2.stage1_problems import balanced_labels, realisable_features_with_spectrum
from numerics.li2.two_layer import center
from theory.li2.stage1_expansion import annihilated, derive_eta0_modes
from verify.claim import NegativeControl
from verify.claims.li2.prop3 import _rk4_mode_error, stated_decay_rate
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict
from verify.claims.li2._stage1 import full_column_rank, realisability_gap

ROOT = Path(__file__).resolve().parents[3]


def test_each_route_is_present_the_control_fails_two_and_the_probe_is_reported():
    result = run_claim(get("li2.prop3"))
    assert {e.route.value for e in result.evidence} == {"symbolic", "numeric", "rate"}
    failed = {e.route.value for e in result.control.evidence if e.ok is False}
    assert failed == {"symbolic", "numeric"}  # the annihilator and the modal fit
    probe = [a for a in result.assumptions if a.probe]
    assert len(probe) == 1 and not probe[0].holds and "n=3, K=1, M=2" in probe[0].detail
    assert all(a.holds for a in result.assumptions if not a.probe)


def test_bound_and_rate_reject_a_wrong_exponent():
    claim = get("li2.prop3")
    variant = dataclasses.replace(claim, control=NegativeControl(
        "twice the exponent", {"decay_rate": lambda s: 2 * stated_decay_rate(s)}))
    bad = [e for e in run_claim(variant).control.evidence if e.ok is False]
    assert {e.route.value for e in bad} == {"numeric", "rate"}
    assert any(e.quantity.startswith("||G_F(t)||_F <= C0") for e in bad)


@pytest.mark.parametrize("rate", [lambda s: s**2.5, lambda s: 1.05 * s**2,
                                  lambda s: 1.001 * s**2],
                         ids=["sigma_min^2.5", "1.05 sigma_min^2", "1.001 sigma_min^2"])
def test_a_wrong_power_or_scale_of_the_stated_rate_fails(rate):
    # Issue 22: with sigma_min = 1 alone, sigma_min^2.5 was sigma_min^2; the rate case at
    # sigma_min = 1.6 tells them apart.
    claim = get("li2.prop3")
    planted = dataclasses.replace(claim, stated={**claim.stated, "decay_rate": rate})
    assert run_claim(planted, control=False).verdict is Verdict.FAIL


def _evidence_numbers(tmp_path: Path, name: str) -> list:
    out = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, "-m", "verify", "check", "li2.prop3", "--no-store",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(out.read_text())["claims"][0]
    return [record["evidence"], record["negative_control"]["evidence"], record["figures"]]


def test_two_serial_runs_give_identical_evidence(tmp_path):
    # Issue 22: torch's default lstsq driver on the CPU (gelsy) gave V* and the modal fit
    # different last digits in different processes; each run is its own process here.
    assert _evidence_numbers(tmp_path, "first") == _evidence_numbers(tmp_path, "second")


@settings(max_examples=3)
@given(K=st.integers(1, 2), M=st.integers(1, 2), extra=st.integers(1, 2))
def test_mode_solution_has_the_two_rates(K, M, extra):
    m = derive_eta0_modes(K, M, extra).result
    for i in range(K):
        for j in range(K):
            s_i, s_j = m.sigma[i], m.sigma[j]
            assert annihilated(m.G[i, j], m.t, (s_i**2, s_i**2 + s_j**2)) == 0
    assert m.G[K:, :] == sp.zeros(extra, K)
    # G -> 0: every term carries a decaying exponential.
    assert all(sp.limit(g, m.t, sp.oo) == 0 for g in m.G[:K, :])


@given(a=st.integers(-5, 5), b=st.integers(-5, 5), c=st.integers(1, 5))
def test_annihilator_detects_a_third_exponential(a, b, c):
    t, r1, r2 = sp.symbols("t r1 r2", positive=True)
    g = a * sp.exp(-r1 * t) + b * sp.exp(-(r1 + r2) * t)
    assert annihilated(g, t, (r1, r1 + r2)) == 0
    assert annihilated(g + c * sp.exp(-r2 * t), t, (r1, r1 + r2)) != 0


@given(n=st.integers(4, 30), M=st.integers(2, 4), extra=st.integers(0, 3),
       seed=st.integers(0, 2**31 - 1))
def test_realisable_features_have_the_spectrum(n, M, extra, seed):
    g = make_generator(seed)
    Y = balanced_labels(1, n, M, g)[0]
    r = int(torch.linalg.matrix_rank(center(Y)))
    K = min(r + extra, n - 1)
    s = torch.linspace(1.0, 3.0, K, dtype=torch.float64)
    F = realisable_features_with_spectrum(Y, s, K, g)
    Ft = center(F)
    torch.testing.assert_close(torch.linalg.svdvals(Ft), s.flip(0), rtol=1e-12, atol=1e-12)
    assert full_column_rank(Ft[None])[0]
    assert realisability_gap(Ft[None], center(Y)[None]) < 1e-12
    assert (Y.sum(0).max() - Y.sum(0).min()) <= 1  # balanced classes


def test_features_reject_a_wrong_spectrum():
    Y = balanced_labels(1, 8, 3, make_generator(0))[0]
    with pytest.raises(ValueError, match="singular_values"):
        realisable_features_with_spectrum(Y, torch.ones(3), 4, make_generator(0))
    with pytest.raises(ValueError, match="K"):
        realisable_features_with_spectrum(Y, torch.ones(1), 1, make_generator(0))


@given(z=st.floats(1e-3, 0.5), k=st.integers(1, 5000))
def test_rk4_mode_error_bounds_every_step_count(z, k):
    R = 1 - z + z**2 / 2 - z**3 / 6 + z**4 / 24
    exact = torch.exp(torch.tensor(-k * z, dtype=torch.float64)).item()
    # R is rounded once (relative u), so R**k carries k u relative; exp and pow one u more
    roundoff = (k + 2) * 2**-53 * (R**k + exact)
    assert abs(R**k - exact) <= _rk4_mode_error(z) + roundoff
