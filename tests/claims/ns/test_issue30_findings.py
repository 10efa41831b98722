"""The three findings of issue 30 item 9, pinned at their smallest configurations: each is
settled by the check's design, not by a looser tolerance."""
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def test_thm4_6_seed_2763043_compares_on_the_resolved_window_and_fits_asymptotic_orders():
    # Before: a pinned gradient coordinate (q = 1.25, L = 3, lam = 1) made the regression
    # ladders chatter (NaN item) and the coarsest Heun rung was pre-asymptotic (order 2.51).
    result = run_claim(get("ns.thm4.6"), seed=2763043, control=False, readings=False)
    assert result.verdict is Verdict.PASS
    item = next(e for e in result.evidence if "regression" in e.quantity and "1.25" in e.quantity)
    assert item.ok is True and 0.1 * item.parameters["T"] <= item.parameters["t_r"] < 2.0
    heun = next(e for e in result.evidence if e.quantity.startswith("HEUN order"))
    assert heun.ok is True


def test_lemma4_4_at_q_1_reports_the_filippov_ladder_and_verdicts_sign_descent():
    result = run_claim(get("ns.lemma4.4"), overrides={"flow.q": (1.0,)}, readings=False)
    assert result.verdict is Verdict.PASS and result.control.verdict is Verdict.FAIL
    assert not any(e.parameters.get("q") == 1.0 for e in result.evidence if e.ok is None)
    assert any(k.startswith("q = 1 regression") for k in result.figures)
    assert any(e.quantity.startswith("sign descent") and e.ok for e in result.evidence)


def test_table1_at_lr_0_05_names_the_saddle_stall_instead_of_failing():
    # AdamW (beta = 0, eps = 0) at L = 2 ends with 3 coordinates at x_k = 0, |g_k| ~ 1e-2:
    # the same error at lr and lr/2 (a stall, not chattering), so no box point.
    result = run_claim(get("ns.table1"), overrides={"limits.lr": 0.05}, control=False,
                       readings=False)
    assert result.verdict is Verdict.INCONCLUSIVE
    stalled = [e for e in result.evidence if e.ok is None and "AdamW" in e.quantity]
    assert [e.parameters["L"] for e in stalled] == [2]
    assert stalled[0].parameters["stalled coordinates"] == 3
