"""numerics.ns.fine_tuning: the adapter's gradients and Hessian against autograd and the saddle's
known spectrum, and the point function's bookkeeping (deterministic, validated, escape steps)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.ns.fine_tuning import (
    METHODS,
    fine_tune_point,
    initial_adapter,
    make_problems,
)

SHAPE = {"d_in": 6, "n": 5, "m": 3, "samples": 20}
POINT = {"seeds": [0, 1], "lrs": [0.02, 0.01], **SHAPE, "r": 2, "singular": [3.0, 1.5],
         "a": 1e-3, "b": 0.0, "epochs": 40, "record_every": 10, "cap": 5000,
         "escape_fraction": 0.5, "weight_decay": 0.01}


@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**20), r=st.integers(1, 3), scale=st.floats(0.1, 2.0))
def test_gradients_match_autograd(seed, r, scale):
    problems = make_problems([seed], singular=[2.0, 1.0], **SHAPE)
    B, A = initial_adapter([seed], m=3, r=r, n=5, a=scale, b=scale)
    B.requires_grad_(True)
    A.requires_grad_(True)
    gB, gA = torch.autograd.grad(problems.loss(B, A).sum(), (B, A))
    mB, mA = problems.grads(B.detach(), A.detach())
    torch.testing.assert_close(mB, gB, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(mA, gA, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_hessian_at_the_saddle_is_plus_minus_the_singular_values(r):
    problems = make_problems([4, 5], singular=[2.0, 1.0], **SHAPE)
    zero = (torch.zeros(2, 3, r, dtype=torch.float64), torch.zeros(2, r, 5, dtype=torch.float64))
    sv = torch.linalg.svdvals(problems.saddle_gradient())                  # (2, 3)
    nonzero = torch.cat([sv.repeat(1, r), -sv.repeat(1, r)], 1)
    zeros = torch.zeros(2, 3 * r + 5 * r - nonzero.shape[1], dtype=torch.float64)
    expected = torch.sort(torch.cat([nonzero, zeros], 1))[0]
    torch.testing.assert_close(problems.hessian_spectrum(*zero), expected, rtol=0, atol=1e-12)


def test_the_point_is_deterministic_and_every_method_escapes():
    for method in METHODS:
        r1, r2 = (fine_tune_point({**POINT, "method": method}) for _ in range(2))
        assert r1 == r2 and r1["finite"] and not any(r1["censored"])
        assert len(r1["curve"]) == 4 and len(r1["curve"][0]) == 40 // 10 + 1
        # the smaller lr needs more steps on every seed
        assert all(s > f for f, s in zip(r1["escape"][:2], r1["escape"][2:]))


def test_sgd_from_the_saddle_is_slower_than_sign_descent():
    sgd = fine_tune_point({**POINT, "method": "sgd"})["escape"]
    sign = fine_tune_point({**POINT, "method": "signgd"})["escape"]
    assert all(g > s for g, s in zip(sgd, sign))


@pytest.mark.parametrize("change", [{"method": "lbfgs"}, {"epochs": 45}, {"epochs": 6000}])
def test_bad_points_are_refused(change):
    with pytest.raises(ValueError):
        fine_tune_point({**POINT, "method": "sgd", **change})
