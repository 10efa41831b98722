"""verify.diagnosis: one true, readable sentence per claim record."""
from __future__ import annotations

from tests.planted import gauss, gauss_off_by_one, make_claim
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
        "stated order 1, measured order -0.01 (interval [-0.02, 0])")


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
    exact = [item("a", ok=True, discrepancy=0.0, tolerance=0.0)]
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
