"""One quick-fidelity run per claim and test process, shared by the claim test files (each run
includes the negative control's)."""
from functools import cache

from verify.registry import get
from verify.runner import run_claim
from verify.results import ClaimResult


@cache
def quick_result(claim_id: str) -> ClaimResult:
    return run_claim(get(claim_id))
