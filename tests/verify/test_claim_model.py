"""The claim machinery: verdicts come from evidence, NaN never passes, controls have teeth."""
import math

import pytest
import sympy as sp

from numerics.errors import Diverged
from verify.diagnosis import diagnose
from tests.planted import gauss, gauss_check, gauss_off_by_one, make_claim, planted
from verify.claim import SkipClaim
from verify.evidence import Route, Tolerance, compare, compare_cases, symbolic_identity
from verify.registry import UnknownClaim, get, select
from verify.runner import run_claim
from verify.verdict import Verdict


def test_true_claim_passes_and_its_control_is_rejected():
    result = run_claim(make_claim())
    assert result.verdict is Verdict.PASS
    assert result.control.rejected
    assert result.control.verdict is Verdict.FAIL


def test_planted_false_claim_fails():
    result = run_claim(make_claim(stated=gauss_off_by_one, control=gauss))
    assert result.verdict is Verdict.FAIL
    assert {e.ok for e in result.evidence} == {False}


def test_control_that_passes_makes_the_claim_inconclusive():
    # The "wrong" variant is the same formula written differently: the check cannot
    # tell it apart, so a pass means nothing.
    result = run_claim(make_claim(control=lambda n: (n * n + n) / 2))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "no power" in result.reason
    assert not result.control.rejected


def _nan_check(run):
    yield from gauss_check(run)
    yield compare(Route.NUMERIC, "broken simulation", stated=1.0, measured=math.nan,
                  tolerance=Tolerance(0.1, "test"))


def test_nan_in_any_route_is_inconclusive_never_pass():
    result = run_claim(make_claim(check=_nan_check))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "non-finite" in result.reason


def test_nan_beside_a_failure_is_still_inconclusive():
    result = run_claim(make_claim(stated=gauss_off_by_one, control=gauss, check=_nan_check))
    assert result.verdict is Verdict.INCONCLUSIVE


def _broken_run_check(run):
    """The planted sum, beside a simulation that reports it did not do its job."""
    run.ran("the net trained beyond chance", False, "test accuracy 0.04, chance 0.04")
    yield from gauss_check(run)


@pytest.mark.parametrize("stated", [gauss, gauss_off_by_one])
def test_a_broken_simulation_is_inconclusive_whatever_the_evidence(stated):
    """``run.ran(..., False)`` voids both a pass and a fail, names the broken part and its
    figure, and does not count as the claim's setting being outside its assumptions."""
    result = run_claim(make_claim(stated=stated, check=_broken_run_check))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "did not do what the check needs: the net trained beyond chance" in result.reason
    assert "test accuracy 0.04" in result.reason
    assert ("would have been pass" if stated is gauss else "would have been fail") in result.reason
    assert result.inside_assumptions
    assert [a.source for a in result.assumptions] == ["ran"]


@pytest.mark.parametrize("exc, verdict, words", [
    (Diverged("energy blew up at step 12"), Verdict.INCONCLUSIVE, "diverged"),
    (SkipClaim("needs CUDA"), Verdict.SKIPPED, "needs CUDA"),
    (ZeroDivisionError("boom"), Verdict.ERROR, "ZeroDivisionError"),
])
def test_exceptions_become_verdicts(exc, verdict, words):
    def check(run):
        raise exc
        yield  # pragma: no cover

    result = run_claim(make_claim(check=check))
    assert result.verdict is verdict
    assert words in result.reason
    # the terminal's one line names the cause (was: "the check returned no evidence")
    assert words in diagnose(result.as_record())
    if verdict is Verdict.ERROR:
        assert "Traceback" in result.error


def test_no_evidence_is_inconclusive():
    result = run_claim(make_claim(check=lambda run: iter(())))
    assert result.verdict is Verdict.INCONCLUSIVE


def test_undecided_symbolic_identity_is_inconclusive_not_pass():
    x = sp.Symbol("x", positive=True)
    e = symbolic_identity("trig", stated=sp.sin(x) ** 2 + sp.cos(x) ** 2, derived=sp.Integer(1))
    assert e.ok is None


def test_symbolic_identity_three_values():
    x = sp.Symbol("x")
    assert symbolic_identity("q", stated=(x + 1) ** 2, derived=x**2 + 2 * x + 1).ok is True
    wrong = symbolic_identity("q", stated=(x + 1) ** 2, derived=x**2 + 1)
    assert wrong.ok is False and wrong.discrepancy > 0


def test_compare_needs_two_routes_and_a_reason():
    with pytest.raises(ValueError, match="at least two"):
        compare(Route.NUMERIC, "q", stated=1.0, tolerance=Tolerance(1, "x"))
    with pytest.raises(ValueError, match="reason"):
        Tolerance(1e-3, "  ")
    with pytest.raises(ValueError, match="metric"):
        compare(Route.NUMERIC, "q", stated=1.0, measured=1.0, tolerance=Tolerance(1, "x"),
                metric="cosine")


def test_compare_takes_the_worst_pair():
    e = compare(Route.NUMERIC, "q", stated=1.0, derived=1.0, measured=1.5,
                tolerance=Tolerance(0.1, "test"))
    assert e.comparisons["stated~derived"] == 0
    assert e.discrepancy == pytest.approx(1 / 3)
    assert e.ok is False


def test_compare_cases_reports_the_worst_configuration():
    cases = [({"n": n}, [1.0, 2.0], [1.0, 2.0 + (n == 3)]) for n in range(1, 6)]
    e = compare_cases(Route.PROPERTY, "q", cases, tolerance=Tolerance(1e-9, "test"))
    assert e.ok is False and "'n': 3" in e.note


def test_same_seed_same_figures_other_seed_other_draws():
    claim = get("li2.eq2")
    a, b = run_claim(claim, seed=7), run_claim(claim, seed=7)
    c = run_claim(claim, seed=8)
    records = [[ev.as_record() for ev in r.evidence] for r in (a, b, c)]
    assert records[0] == records[1]
    assert records[0][2]["note"] != records[2][2]["note"]  # other sampled configurations


def test_bad_arguments_name_the_parameter():
    claim = make_claim()
    with pytest.raises(ValueError, match="fidelity"):
        run_claim(claim, fidelity="fast")
    with pytest.raises(ValueError, match="dtype"):
        run_claim(claim, dtype="float16")
    with pytest.raises(ValueError, match="seed"):
        run_claim(claim, seed=-1)


def test_registry_ids_aliases_and_globs():
    assert get("li2.d0") is get("li2.eq2")
    assert get("li2.eq2") in select(["li2.*"])
    with pytest.raises(UnknownClaim, match="li2.nope"):
        get("li2.nope")
    with pytest.raises(UnknownClaim, match="zz"):
        select(["zz.*"])
    with planted(make_claim("test.dup")):
        with pytest.raises(ValueError, match="twice"):
            from verify.registry import register
            register(make_claim("test.dup"))


def test_unmeasurable_item_is_inconclusive_with_its_reason():
    from verify.evidence import undecided

    def check(run):
        yield from gauss_check(run)
        yield undecided(Route.RATE, "order", "below the roundoff floor",
                        tolerance=Tolerance(0.5, "test"))

    result = run_claim(make_claim(check=check))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "below the roundoff floor" in result.reason


def test_inequality_evidence():
    from verify.evidence import at_least

    tol = Tolerance(1e-12, "test")
    assert at_least(Route.PROPERTY, "q", measured=[2.0, 3.0], bound=[1.0, 3.0],
                    tolerance=tol).ok is True
    low = at_least(Route.PROPERTY, "q", measured=[2.0, 1.0], bound=[1.0, 4.0], tolerance=tol)
    assert low.ok is False and low.discrepancy == pytest.approx(0.75)
    assert at_least(Route.PROPERTY, "q", measured=[math.nan], bound=[1.0],
                    tolerance=tol).ok is None


def test_upper_bound_evidence():
    from verify.evidence import at_most

    tol = Tolerance(1e-12, "test")
    assert at_most(Route.PROPERTY, "q", measured=[1.0, 3.0], bound=[2.0, 3.0],
                   tolerance=tol).ok is True
    high = at_most(Route.PROPERTY, "q", measured=[4.0, 1.0], bound=[1.0, 2.0], tolerance=tol)
    assert high.ok is False and high.discrepancy == pytest.approx(0.75)
    assert high.measured == [4.0, 1.0] and high.stated == [1.0, 2.0]


def test_inequality_evidence_reports_its_slack():
    """A one-sided bound says how far it is from being attained: the larger side over the
    smaller at the tightest and loosest entry, where both sides are positive."""
    from verify.evidence import at_least, at_most

    tol = Tolerance(0.0, "test")
    upper = at_most(Route.PROPERTY, "q", measured=[2.0, 1.0], bound=[3.0, 1.0], tolerance=tol,
                    note="why")
    assert upper.note == "why; slack bound/measured 1 (tightest, entry 1) to 1.5"
    lower = at_least(Route.PROPERTY, "q", measured=[4.0], bound=[2.0], tolerance=tol)
    assert lower.note == "slack measured/bound 2 (tightest)"
    assert at_least(Route.PROPERTY, "q", measured=[1.0], bound=[0.0], tolerance=tol).note == ""
