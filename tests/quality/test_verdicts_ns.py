"""The Never Saddle claims against the registry-wide table of expected verdicts
(tests/quality/verdicts.py); one file per paper so the two run in parallel."""
import pytest

from tests.quality.verdicts import check_against_the_table, ids


@pytest.mark.parametrize("claim_id", ids("ns"))
def test_verdict_and_control(claim_id):
    check_against_the_table(claim_id)
