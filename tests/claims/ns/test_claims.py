"""The Never Saddle claims of the first slice (issue 4; their verdicts and controls:
tests/quality/verdicts.py): what they record, and that every kind of route can fail."""
import pytest

from tests.claim_results import quick_result
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

CLAIMS = ["ns.ex3.2", "ns.def3.3", "ns.lemma4.4", "ns.def4.5", "ns.thm4.6",
          "ns.prior.woodworth"]


result = quick_result


@pytest.mark.parametrize("claim_id", CLAIMS)
def test_reading_and_statement_are_recorded(claim_id):
    described = get(claim_id).describe()
    assert described["paper"].startswith("Never Saddle")
    assert all(described[k].strip() for k in ("statement", "reading", "source"))


def test_every_route_kind_can_fail():
    """Across the controls, symbolic, numeric, rate and property items all reject."""
    failing = {e.route.value for cid in CLAIMS for e in result(cid).control.evidence
               if e.ok is False}
    assert {"symbolic", "numeric", "rate", "property"} <= failing


def test_planted_wrong_exponents_fail_on_each_of_their_routes():
    # L_p reading of the balance: fails for q < 2 on the symbolic and flow routes, not at q = 2.
    lemma = result("ns.lemma4.4").control.evidence
    assert all(e.ok is False for e in lemma if "conserved power" in e.quantity)
    flows = [e for e in lemma if e.route.value == "numeric" and "D(t) = D(0)" in e.quantity]
    assert all((e.ok is True) == (e.parameters["q"] == 2.0) for e in flows)
    # Gradient drive in place of |g|^(q-1): every q < 2 trajectory item fails.
    thm = [e for e in result("ns.thm4.6").control.evidence if "x(t)" in e.quantity]
    assert thm and all((e.ok is True) == (e.parameters["q"] == 2.0) for e in thm)


def test_measured_orders_match_rk4_and_heun():
    orders = {e.quantity.split()[0]: e for e in result("ns.thm4.6").evidence
              if e.route.value == "rate" and "order" in e.quantity}
    assert set(orders) == {"RK4", "HEUN"}
    assert all(e.ok and e.parameters["cases_with_an_order"] > 0 for e in orders.values())


def test_q1_findings_are_reported_not_verdicted():
    figures = result("ns.lemma4.4").figures
    sliding = next(v for k, v in figures.items() if "sliding counterexample" in k)
    # The classical solution keeps D = 0.9; sign descent and RK4 (Filippov) lose it.
    assert all(abs(v) < 1e-2 for v in sliding.values())
    thm_figures = result("ns.thm4.6").figures
    assert any(k.startswith("q = 1 regression") for k in thm_figures)
    assert not any(e.parameters.get("q") == 1.0 for e in result("ns.thm4.6").evidence
                   if "regression" in e.quantity)


def test_float32_scales_tolerances_and_cannot_measure_an_order():
    r = run_claim(get("ns.def3.3"), dtype="float32", control=False)
    numeric = next(e for e in r.evidence if e.route.value == "numeric")
    assert numeric.ok and numeric.tolerance.value > 1e-7
    rate = next(e for e in r.evidence if e.route.value == "rate")
    # RK4's error at these steps is below float32's roundoff floor: no order, inconclusive.
    assert rate.ok is None and r.verdict is Verdict.INCONCLUSIVE
