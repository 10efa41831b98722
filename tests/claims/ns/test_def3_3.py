"""ns.def3.3: the step-ladder plot reads its fitted order from the errors, not from the rate
evidence, whose ``measured`` is a JSON summary (a shape/max/norm dict beyond 16 cases): the
full fidelity's 48 gradient-flow cases raised "could not convert string to float" (issue 19)."""
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def test_more_than_16_order_cases_give_a_fitted_order():
    # 3 balances x 8 starts = 24 cases at q = 2, more than a summarised array's 16
    r = run_claim(get("ns.def3.3"), control=False,
                  overrides={"flow.q": (2.0,), "flow.inits": 8})
    assert r.error is None and r.verdict is Verdict.PASS
    rate = next(e for e in r.evidence if e.route.value == "rate")
    fitted = rate.parameters["cases_with_an_order"]
    assert rate.parameters["cases"] == 24 and fitted > 16
    plot = next(v for k, v in r.figures.items() if k.startswith("RK4 step ladder"))
    assert f"median of {fitted} cases" in str(plot["fitted"])
