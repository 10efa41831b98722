"""The table of expected verdicts covers the registry exactly."""
from tests.quality.verdicts import EXPECTED
from verify.registry import builtin_claims


def test_every_registered_claim_has_an_expected_verdict():
    registered = {c.id for c in builtin_claims()}
    assert registered == set(EXPECTED), (
        f"add to tests/quality/verdicts.py: {sorted(registered - set(EXPECTED))}; "
        f"remove: {sorted(set(EXPECTED) - registered)}")
