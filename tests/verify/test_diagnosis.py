"""verify.diagnosis: one true, readable sentence per claim record."""
from __future__ import annotations

from tests.planted import gauss, gauss_check, gauss_off_by_one, make_claim
from verify.diagnosis import diagnose, diagnosed
from verify.pytest_plugin import describe_failure
from verify.runner import run_claim


def item(quantity, *, ok, stated=None, derived=None, measured=None, route="numeric",
         metric="relative", discrepancy=0.0, tolerance=1e-12, parameters=None, note="",
         comparisons=None):
    return {"route": route, "quantity": quantity, "stated": stated, "derived": derived,
            "measured": measured, "metric": metric, "discrepancy": discrepancy,
            "comparisons": comparisons or {}, "tolerance": tolerance,
            "tolerance_why": "test", "parameters": parameters or {}, "finite": True, "ok": ok,
            "note": note}


def record(verdict, evidence, **extra):
    return {"id": "test.x", "verdict": verdict, "reason": "the reason", "evidence": evidence,
            "negative_control": {"description": "off by one", "rejected": True,
                                 "verdict_of_variant": "fail", "reason": ""}, **extra}


def test_a_factor_shared_by_every_group_is_said_once_with_the_smallest_case():
    groups = {"Z3": ([1 / 16], [0.25]), "Z8": ([1 / 8, 1 / 16], [0.5, 0.25]),
              "Z4": ([1 / 16], [0.25])}
    evidence = [item(f"{g}: E*/M at the distinct maxima", ok=False, stated=s, measured=m,
                     discrepancy=0.75, parameters={"group": g},
                     comparisons={"stated~measured": 0.75}) for g, (s, m) in groups.items()]
    evidence.append(item("Z3: gradient at the maxima", ok=True, discrepancy=1e-16))
    text = diagnose(record("fail", evidence))
    assert text.startswith("stated 1/16, measured 1/4 (a factor 4)")
    assert "smallest case group Z3" in text
    assert "a factor 4 in all 3 groups (Z3; Z4; Z8)" in text
    assert text.endswith("for Z3: E*/M at the distinct maxima")


def test_exact_items_are_called_exact_and_evaluated_at_their_witness():
    evidence = [item("closed form", ok=False, route="symbolic", metric="exact", tolerance=0.0,
                     discrepancy=3.0,
                     stated={"latex": "", "sympy": "Matrix([[beta*x/2]])"},
                     derived={"latex": "", "sympy": "Matrix([[beta*x]])"},
                     note="nonzero by exact rational witness; witness {'beta': '2', 'x': '3/2'}"),
                item("sum 1..n", ok=False, stated=56.0, measured=55.0, discrepancy=0.02,
                     parameters={"n": 10}, comparisons={"stated~measured": 0.02})]
    text = diagnose(record("fail", evidence))
    assert text.startswith("stated 3/2, derived 3 at the exact witness beta = 2, x = 3/2")
    assert "for closed form" in text and "2 of 2 items fail" in text


def test_a_single_numeric_failure_names_its_case():
    evidence = [item("sum 1..n", ok=False, stated=56.0, measured=55.0, discrepancy=0.018,
                     parameters={"n": 10}, comparisons={"stated~measured": 0.018})]
    assert diagnose(record("fail", evidence)) == \
        "stated 56, measured 55 (off by -1), at n = 10, for sum 1..n"


def test_a_violated_bound_and_a_wrong_order():
    bound = item("x >= bound", ok=False, route="symbolic", metric="violation", tolerance=0.0,
                 stated=3.5, measured=0.0, discrepancy=1.0,
                 comparisons={"measured>=stated": 1.0})
    assert diagnose(record("fail", [bound])).startswith(
        "measured 0 < stated bound 7/2 (exact)")
    rate = item("remainder as t -> 0: order vs stated 1", ok=False, route="rate",
                metric="order", stated=1.0, tolerance=0.2, discrepancy=1.0,
                measured={"order": -0.01, "interval": [-0.02, 0.0]})
    assert diagnose(record("fail", [rate])).startswith(
        "order -0.0100 [-0.0200, 0] < stated 1, for remainder")


def test_inconclusive_says_what_is_undecided_and_what_would_decide_it():
    undecided = item("K = 16: lower bound of the mean over 8 seeds >= 0", ok=None,
                     metric="none", discrepancy=None, tolerance=0.0,
                     note="the interval [-0.2, 0.03] contains 0: the 8 seeds do not separate "
                          "the two optimisers at this budget", parameters={"seeds": [1, 2]})
    text = diagnose(record("inconclusive", [undecided]))
    assert text.startswith("the interval [-0.2, 0.03] contains 0")
    assert "more seeds" in text and text.endswith("would decide it")
    control = record("inconclusive", [item("a", ok=True, discrepancy=1e-13)],
                     negative_control={"description": "off by one", "rejected": False,
                                       "verdict_of_variant": "pass"})
    assert diagnose(control).startswith("no power: the planted wrong variant (off by one) "
                                        "got pass")


def test_pass_names_the_tightest_item_with_comparable_digits():
    evidence = [item("angle", ok=True, metric="absolute", discrepancy=42.0, tolerance=45.0,
                     parameters={"K": 512}),
                item("sum", ok=True, discrepancy=1e-16)]
    text = diagnose(record("pass", evidence))
    assert text == ("discrepancy 4.2e+01 (tol 4.5e+01), 93% of the tolerance, the tightest "
                    "of 2 items: angle, at K = 512")
    exact = [item("a", ok=True, route="symbolic", metric="exact", tolerance=0.0)]
    assert diagnose(record("pass", exact)) == "the only item agrees exactly (discrepancy 0)"


def test_error_skipped_and_broken_records_never_raise():
    assert diagnose(record("error", [], error="Traceback...\nValueError: boom\n")) == \
        "error: ValueError: boom"
    assert diagnose({"verdict": "skipped", "reason": "no CUDA"}) == "skipped: no CUDA"
    assert isinstance(diagnose({"verdict": "fail", "evidence": [{"ok": False}]}), str)
    assert isinstance(diagnose({}), str)


def test_a_run_records_the_diagnosis_and_the_plugin_shows_it():
    result = run_claim(make_claim("test.false", stated=gauss_off_by_one, control=gauss),
                       fidelity="quick")
    rec = diagnosed(result.as_record())
    assert rec["verdict"] == "fail" and rec["diagnosis"] == diagnose(rec)
    assert "stated" in rec["diagnosis"]
    text = describe_failure(result, "test.false: verdict fail")
    assert f"diagnosis: {rec['diagnosis']}" in text.splitlines()


def test_a_broken_run_is_diagnosed_as_such():
    record = {"verdict": "inconclusive", "reason": "x", "evidence": [],
              "assumptions": [{"name": "the net trained beyond chance", "holds": False,
                               "source": "ran", "detail": "test accuracy 0.04, chance 0.04"},
                              {"name": "flow stayed finite", "holds": False, "source": "ran"}]}
    assert diagnose(record) == ("the simulation did not do what the check needs: the net "
                                "trained beyond chance: test accuracy 0.04, chance 0.04 "
                                "(and 1 more)")


def test_a_pass_on_signs_says_what_was_measured_not_agree_exactly():
    """Statistical items with discrepancy 0 (a sign held) are not an exact agreement: the line
    gives the measured interval nearest to the other sign (issue 31)."""
    signs = [item(f"Z{m}: the ridge top layer groks faster", ok=True, metric="sign",
                  stated=-1.0, tolerance=0.0, measured={"mean": mean, "interval": [lo, hi]})
             for m, (mean, lo, hi) in ((23, (-0.2, -0.4, -0.01)), (41, (-0.75, -0.78, -0.72)))]
    text = diagnose(record("pass", signs))
    assert "exactly" not in text
    assert text == ("2 of 2 items hold; nearest the other side: measured -0.2 [-0.4, -0.01], "
                    "stated sign -, at Z23: the ridge top layer groks faster")


def order_item(order, lo, hi, *, ok, stated=1.0, bound=">=", discrepancy=0.0, tolerance=0.2,
               **measured):
    return item("remainder as t -> 0: order vs stated 1", ok=ok, route="rate", metric="order",
                stated=stated, discrepancy=discrepancy, tolerance=tolerance,
                comparisons={f"measured {bound} stated": discrepancy},
                measured={"order": order, "interval": [lo, hi], **measured})


def test_a_pass_on_a_fitted_order_says_the_order_and_its_interval():
    assert diagnose(record("pass", [order_item(1.2, 1.03, 1.38, ok=True)])) == (
        "the only item holds; nearest the other side: order 1.20 [1.03, 1.38] >= stated 1, "
        "at remainder as t -> 0: order vs stated 1")
    inside = order_item(0.98, 0.95, 1.02, ok=True, bound="==")
    assert "order 0.980 [0.950, 1.02] holds stated 1" in diagnose(record("pass", [inside]))
    # the stated order beyond the t-interval but inside the bend allowance: a share of it
    bent = order_item(0.9, 0.85, 0.95, ok=True, bound="==", discrepancy=0.05, tolerance=0.1)
    assert diagnose(record("pass", [bent])).startswith(
        "order 0.900 [0.850, 0.950], stated 1 within its bend allowance, 50% of the tolerance")


def test_an_undecided_order_says_its_resolution():
    undecided = order_item(1.18, 0.947, 1.41, ok=None, bound="==", discrepancy=None,
                           reach=0.606, **{"resolution needed": 0.1})
    undecided["note"] = ("undecided at resolution 0.606: ...; more seeds or a longer grid "
                         "towards the limit resolve it")
    assert diagnose(record("inconclusive", [undecided])) == (
        "order 1.18 [0.947, 1.41] holds stated 1, undecided at resolution 0.606 (needs 0.1), "
        "for remainder as t -> 0: order vs stated 1; more seeds or a longer grid towards the "
        "limit would decide it")


def test_a_threshold_in_degrees_is_said_in_degrees():
    """li2.eq6: an angle against a stated 0 within 45 degrees is the statement 'below 45
    degrees', not 'stated 0' (issue 31)."""
    quantity = "angle (degrees) between node j's step and the decoupled step, median over nodes"
    summary = {"shape": [20], "max_abs": 0.0, "fro": 0.0}
    passing = item(quantity, ok=True, metric="absolute", stated=summary,
                   measured={"shape": [20], "max_abs": 42.03, "fro": 142.0},
                   discrepancy=42.03, tolerance=45.0, parameters={"M": 29})
    assert diagnose(record("pass", [passing, item("sum", ok=True, discrepancy=1e-16)])) == (
        f"42.0 deg < 45 deg, 93% of the tolerance, the tightest of 2 items: {quantity}, "
        "at M = 29")
    failing = item(quantity, ok=False, metric="absolute", stated=[0.0, 0.0],
                   measured=[45.9, 44.0], discrepancy=45.9, tolerance=45.0,
                   parameters={"M": 71}, comparisons={"stated~measured": 45.9})
    assert diagnose(record("fail", [failing])) == f"45.9 deg > 45 deg, at M = 71, for {quantity}"


def test_no_pass_line_says_agree_exactly_for_a_statistical_or_fitted_item():
    """'agree exactly (discrepancy 0)' only where every item is exact; a Monte Carlo mean, a
    fitted order, a sign, a training outcome or a bound met with room says what was measured
    (issue 31)."""
    exact = item("closed form", ok=True, route="symbolic", metric="exact", tolerance=0.0)
    measured = [
        item("Monte Carlo mean in standard errors", ok=True, route="monte-carlo",
             metric="absolute", stated=0.0, measured=0.0, tolerance=2.5),
        order_item(1.2, 1.03, 1.38, ok=True),
        item("sign of the mean log ratio", ok=True, metric="sign", stated=1.0, tolerance=0.0,
             measured={"mean": 0.9, "interval": [0.8, 1.0]}),
        item("grokking outcome per configuration", ok=True, metric="absolute",
             stated=[1.0, 0.0, 1.0, 0.0], measured=[1.0, 0.0, 1.0, 0.0], tolerance=0.0),
        item("-(off-diagonal ratio) >= -0.08", ok=True, route="numeric", metric="violation",
             stated=[-0.08, -0.08], measured=[-0.0731, -0.0542], tolerance=0.0,
             comparisons={"measured>=stated": 0.0}),
    ]
    for e in measured:
        for evidence in ([e], [exact, e]):
            text = diagnose(record("pass", evidence))
            assert "exactly" not in text and "discrepancy 0" not in text, text
    assert diagnose(record("pass", [exact, exact])) == "all 2 items agree exactly (discrepancy 0)"
    assert diagnose(record("pass", measured[3:4])).endswith(
        "measured [1, 0, 1, 0] as stated, at grokking outcome per configuration")
    assert "measured -0.0731 >= stated bound -0.08" in diagnose(record("pass", measured[4:]))


def test_a_probe_that_does_not_hold_is_never_red_and_never_decides():
    """li2.fig3 passes at quick, below the paper's size: its probe 'the paper's size' does not
    hold, and the report says so in neutral ink, not as a red FAILS (issue 31)."""
    from verify.report.html import claim_section

    def check(run):
        run.assume("the paper's size", False, detail="n = 10", probe=True)
        yield from gauss_check(run)

    result = run_claim(make_claim("test.probe", check=check), fidelity="quick")
    rec = diagnosed(result.as_record())
    assert rec["verdict"] == "pass" and rec["inside_assumptions"] is True
    html = claim_section(rec)
    assert "ok-false" not in html and "FAILS" not in html
    assert "<td class='ok-probe'>not met (probe: reported, not deciding)</td>" in html
