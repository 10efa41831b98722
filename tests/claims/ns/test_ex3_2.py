"""ns.ex3.2: a KKT solve that does not converge for a planted wrong Hessian is undecided at that
delta instead of raising, so the other routes' evidence still rejects the variant (issue 19:
at full fidelity the control was 'not rejected' because the solve raised)."""
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def test_control_is_rejected_where_its_kkt_solve_diverges():
    claim = get("ns.ex3.2")
    # delta = 0.3: Newton on the quartic Hessian (not the derivative of the arcsinh gradient)
    # stalls, as at full fidelity's delta = 0.1, 0.3 and 100
    result = run_claim(claim, overrides={"bias.delta": (0.3,)})
    assert result.verdict is Verdict.PASS
    assert result.control.rejected and result.control.verdict is Verdict.FAIL
    evidence = result.control.evidence
    undecided = [e for e in evidence if e.quantity.startswith("limit of gradient flow")]
    assert len(undecided) == 1 and undecided[0].ok is None
    assert any(e.ok is False and e.route.value == "symbolic" for e in evidence)
