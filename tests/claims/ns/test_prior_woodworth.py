"""ns.prior.woodworth: planted mutants that stationarity and the rate alone would let through
(issue 22): the sign of q (an argmin is a minimum) and the a^(2-D) term of the depth-D
relation (differentiated away by the rate) are each rejected."""
import dataclasses

import pytest

from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.mark.parametrize("name, mutant, caught_by", [
    ("q", lambda stated: lambda z: -stated(z), "sum q(beta/s(a)) at feasible"),
    ("depth_D", lambda _: lambda a, D, theta: a ** (2 - D + 0.1) - D * (D - 2) * theta,
     "w_+^(2-D) itself"),
    ("depth_D", lambda _: lambda a, D, theta: 1.05 * a ** (2 - D) - D * (D - 2) * theta,
     "w_+^(2-D) itself"),
    ("depth_D", lambda stated: lambda a, D, theta: 1.05 * stated(a, D, theta),
     "d/dt w_+^(2-D)"),
    ("scale", lambda stated: lambda a: 1.05 * stated(a), "normalised Hessian"),
], ids=["-q", "exponent 2-D+0.1", "a^(2-D) x1.05", "relation x1.05", "scale x1.05"])
def test_planted_mutant_fails(name, mutant, caught_by):
    """``mutant`` builds the wrong form from the stated one."""
    claim = get("ns.prior.woodworth")
    variant = dataclasses.replace(claim, stated={**claim.stated,
                                                 name: mutant(claim.stated[name])})
    result = run_claim(variant, control=False)
    assert result.verdict is Verdict.FAIL
    assert any(e.ok is False and e.quantity.startswith(caught_by) for e in result.evidence)

