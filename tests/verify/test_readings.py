"""Alternative readings (issue 22): each declared reading gets its own verdict, the claim's
stays the printed reading's, and the diagnosis heads with both."""
from __future__ import annotations

import pytest

from verify import (
    Claim,
    NegativeControl,
    Reading,
    Route,
    Run,
    Tolerance,
    Verdict,
    compare,
    run_claim,
)
from verify.diagnosis import diagnose, diagnosed


def stated_power_sum(n: int, k: int) -> float:
    """Printed: sum_{i<n} i^k / n^(k+1) -> 1/(k+1); the tail is O(1/n)."""
    return 1 / (k + 1)


def _check(run: Run):
    n, k = run.params["n"], run.params["k"]
    # "exclusive" sums i < n (the printed reading), "inclusive" i <= n: both are Riemann sums
    top = n if run.params["upper"] == "inclusive" else n - 1
    measured = sum(i**k for i in range(top + 1)) / n ** (k + 1)
    yield compare(Route.NUMERIC, "Riemann sum vs 1/(k+1)", derived=run.stated["limit"](n, k),
                  measured=measured,
                  tolerance=Tolerance(0.4 / n, "a test: the O(1/n) tail of an exclusive sum "
                                               "is 1/(2n) below the limit, inside 0.4/n only "
                                               "for the midpoint-like reading"))


def _claim(**extra) -> Claim:
    fields = dict(
        id="demo.riemann", paper="demo", kind="equation", title="a Riemann sum",
        source="folklore", statement=r"\frac1{n^{k+1}}\sum_{i<n}i^k\approx\frac1{k+1}",
        reading="sum over i < n", parameters={"quick": {"n": 50, "k": 1, "upper": "exclusive"},
                                              "full": {"n": 500, "k": 1,
                                                       "upper": "exclusive"}},
        stated={"limit": stated_power_sum}, check=_check,
        control=NegativeControl("1/k", {"limit": lambda n, k: 1 / k}),
        readings=(Reading("B (i <= n)", "the sum includes i = n",
                          parameters={"upper": "inclusive"}),
                  Reading("C (a shifted limit)", "the limit read as 1/(k+1) - 1/(2n)",
                          stated={"limit": lambda n, k: 1 / (k + 1) - 1 / (2 * n)})))
    fields.update(extra)
    return Claim(**fields)


def test_each_reading_gets_its_own_verdict_and_the_claim_keeps_the_printed_one():
    result = run_claim(_claim())
    # exclusive: 1/2 - 1/(2n) vs 1/2, off by 1/(2n) > 0.4/n
    assert result.verdict is Verdict.FAIL
    got = {r.name: r.verdict for r in result.readings}
    # inclusive: 1/2 + 1/(2n), also off by 1/(2n); shifted limit: exact
    assert got == {"B (i <= n)": Verdict.FAIL, "C (a shifted limit)": Verdict.PASS}
    record = diagnosed(result.as_record())
    assert record["diagnosis"].startswith(
        "fails as printed; fails under reading B (i <= n); holds under reading C (a shifted "
        "limit); as printed: ")
    # the report's readings table gives the printed reading its own sentence
    printed = diagnose(record, readings=False)
    assert record["diagnosis"].endswith(printed) and "as printed" not in printed
    by_name = {r["name"]: r for r in record["readings"]}
    assert by_name["B (i <= n)"]["parameters"] == {"upper": "inclusive"}
    # a reading keeps only the items it decides on: C passes everything, B fails its one
    assert by_name["C (a shifted limit)"]["evidence"] == []
    assert [e["ok"] for e in by_name["B (i <= n)"]["evidence"]] == [False]


def test_readings_off_leaves_no_verdicts_and_no_reading_rows():
    result = run_claim(_claim(), readings=False, control=False)
    assert result.readings is None
    assert "readings" not in result.as_record()
    # the declared readings stay part of the claim's description (`list --json`, `show`)
    assert [r["name"] for r in _claim().describe()["readings"]] == ["B (i <= n)",
                                                                    "C (a shifted limit)"]


def test_no_headline_without_readings():
    record = diagnosed(run_claim(_claim(readings=())).as_record())
    assert "as printed" not in record["diagnosis"]
    assert diagnose({**record, "readings": []}) == record["diagnosis"]


@pytest.mark.parametrize("reading, message", [
    (Reading("X", "nothing"), "changes nothing"),
    (Reading("X", "unknown", parameters={"nn": 3}), "unknown parameters or stated forms"),
    (Reading("X", "unknown", stated={"limit2": stated_power_sum}), "['limit2']"),
])
def test_a_reading_must_change_something_the_claim_has(reading, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _claim(readings=(reading,))


def test_a_comparison_only_reading_reuses_the_printed_runs_simulations():
    calls = []

    def simulate(n: int) -> float:
        calls.append(n)
        return sum(range(n)) / n**2

    def check(run: Run):
        measured = run.memo("simulation", lambda: simulate(run.params["n"]))
        yield compare(Route.NUMERIC, "Riemann sum vs 1/2", derived=run.stated["limit"](0, 1),
                      measured=measured, tolerance=Tolerance(run.params["tol"], "a test"))

    def claim(compares_only: bool) -> Claim:
        return _claim(id=f"demo.memo{compares_only}", check=check,
                      parameters={"quick": {"n": 40, "tol": 1e-3}, "full": {"n": 40, "tol": 1e-3}},
                      readings=(Reading("B (looser)", "a looser tolerance", {"tol": 0.1},
                                        compares_only=compares_only),))

    result = run_claim(claim(True), control=False)
    assert calls == [40]                    # simulated once, for both readings
    assert (result.verdict, result.readings[0].verdict) == (Verdict.FAIL, Verdict.PASS)
    run_claim(claim(False), control=False)
    assert calls == [40, 40, 40]            # a reading that may change the simulation reruns it


def test_a_comparison_only_reading_never_replays_a_memoised_route():
    # memo_route stores evidence, i.e. comparisons: a reading that changes what is compared
    # must get its own, even when it shares the printed run's simulations
    def check(run: Run):
        yield from run.memo_route("route", ("limit",), lambda: iter([compare(
            Route.NUMERIC, "Riemann sum vs 1/2", derived=run.stated["limit"](0, 1),
            measured=sum(range(40)) / 40**2, tolerance=Tolerance(run.params["tol"], "a test"))]))

    claim = _claim(id="demo.route", check=check,
                   parameters={"quick": {"tol": 1e-3}, "full": {"tol": 1e-3}},
                   readings=(Reading("B (looser)", "a looser tolerance", {"tol": 0.1},
                                     compares_only=True),))
    result = run_claim(claim, control=False)
    assert (result.verdict, result.readings[0].verdict) == (Verdict.FAIL, Verdict.PASS)
