"""ns.adam-vs-signgf: torch's Adam/AdamW at beta1 = beta2 = 0, eps = 0, full batch are sign
descent step for step and approach SignGF at order 1 as lr -> 0; eps > 0, beta2 = 0.999 and
minibatches each stay away from it (the regime where the sign theory stops describing Adam)."""
import pytest
import torch

import verify.claims.ns.adam_vs_signgf as avs
from numerics.ns.adam_sign import adam_run, default_problems, drive_run
from numerics.random import make_generator
from tests.claim_results import quick_result
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def setting():
    gen = make_generator(3)
    problems = default_problems(gen, 2)
    W0 = 0.5 * (1 + 0.2 * torch.randn(2, 2, 20, generator=gen, dtype=torch.float64))
    return problems, W0


def test_passes_and_the_gradient_drive_is_rejected():
    r = quick_result("ns.adam-vs-signgf")
    assert r.verdict is Verdict.PASS and r.inside_assumptions
    rejected = {e.quantity for e in r.control.evidence if e.ok is False}
    assert any("Euler scheme of the stated drive" in q for q in rejected)
    assert any("x_SignGF| as lr -> 0" in q for q in rejected)
    orders = r.figures["distance to SignGF: fitted order in lr per optimiser and regime"]
    for name, fit in orders.items():
        # the sign limit converges at order ~1, every departure plateaus (order ~0)
        assert (fit["order"] > 0.8) if "sign limit" in name else (abs(fit["order"]) < 0.3)


@pytest.mark.parametrize("decay", [0.0, 0.3])
def test_adam_at_zero_betas_and_eps_is_sign_descent(setting, decay):
    problems, W0 = setting
    adam = adam_run(problems, W0, lr=0.01, steps=50, betas=(0.0, 0.0), eps=0.0, decay=decay,
                    decoupled=decay > 0)
    euler = drive_run(problems, W0, avs.stated_drive, lr=0.01, steps=50, decay=decay)
    torch.testing.assert_close(adam, euler, rtol=0, atol=1e-13)


def test_eps_limit_is_the_smoothed_sign_scheme(setting):
    """With beta = 0 and eps > 0, Adam is the Euler scheme of -g/(|g| + eps): the step -> 0
    limit the reading names for the eps departure."""
    problems, W0 = setting
    eps = 1e-3
    adam = adam_run(problems, W0, lr=0.01, steps=30, betas=(0.0, 0.0), eps=eps)
    euler = drive_run(problems, W0, lambda g: -g / (g.abs() + eps), lr=0.01, steps=30)
    torch.testing.assert_close(adam, euler, rtol=1e-12, atol=1e-14)


def test_minibatches_are_blocks_of_a_partition(setting):
    problems, _ = setting
    blocks = problems.batches(5)
    assert blocks.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    x = torch.randn(2, 20, dtype=torch.float64, generator=make_generator(0))
    mean = sum(problems.grad_x(x, b.expand(2, -1)) for b in blocks) / 2
    torch.testing.assert_close(mean, problems.grad_x(x), rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="divide"):
        problems.batches(3)
