"""ns.fig2-metric's band item: the solutions reached inside Fig. 2's "feature learning" band
(m in [0.9, 1)) are sparser than those below it, paired by seed; the reversed direction is
rejected, and a horizon too short for the loss level leaves the item undecided."""
import dataclasses

from verify import NegativeControl, run_claim
from verify.claims.ns import _band_sparsity as bs
from verify.registry import get

QUANTITY = "support size"


def _band_only(**params):
    claim = get("ns.fig2-metric")
    quick = {**claim.parameters["quick"],
             "sparsity": {**claim.parameters["quick"]["sparsity"], **params}}
    return dataclasses.replace(
        claim, check=bs.band_sparsity_evidence, parameters={**claim.parameters, "quick": quick},
        control=NegativeControl("reversed: the band denser than below it",
                                {"band_sparser": lambda: -1.0}))


def test_band_is_sparser_and_the_reversed_direction_is_rejected():
    result = run_claim(_band_only(), readings=False)
    (item,) = [e for e in result.evidence if e.quantity.startswith(QUANTITY)]
    assert item.ok is True and item.derived == 1.0
    low, high = item.measured["interval"]
    assert 0 < low < high
    (planted,) = [e for e in result.control.evidence if e.quantity.startswith(QUANTITY)]
    assert planted.ok is False and result.control.rejected
    per_pair = next(v for k, v in result.figures.items() if k.startswith("support size at"))
    # below the band, q = 1.25 at L = 3 (m = 5/6) is the densest pair at this size
    assert max(per_pair, key=per_pair.get).startswith("q=1.25, L=3")


def test_a_horizon_too_short_for_the_loss_level_is_undecided():
    result = run_claim(_band_only(tau_max=2.0), control=False, readings=False)
    (item,) = [e for e in result.evidence if e.quantity.startswith(QUANTITY)]
    assert item.ok is None and "undecided at loss resolution f/Delta = 0.001" in item.note


def test_stated_direction():
    assert bs.stated_band_sparser() == 1.0
