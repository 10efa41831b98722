"""verify.design: early decisions, sequential seeds and bisection, and their measured error
rates.

The Monte Carlo tests use 2000 simulated sequential runs per setting. Their bound on a count
of false decisions is the 0.999 quantile of Binomial(2000, alpha): if the true rate were
exactly alpha, a count above it would have probability 0.001, so the slack is what chance
allows and is not tuned to the fixed seeds (which make each test deterministic).
"""
from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from verify import design
from verify.design import (
    GiveUp,
    HeldAbove,
    HeldBelow,
    SequentialPlan,
    Watcher,
    bisect_threshold,
    decide,
    disagreement_rate,
    evaluations_saved,
    first_decision,
    full_grid_threshold,
    sequential_mean,
    sequential_proportion,
    wilson_interval,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "design.md"
REPS = 2000
ALPHA = 0.05
MC_BOUND = int(stats.binom.ppf(0.999, REPS, ALPHA))  # 131 of 2000


def _json(record):
    return json.loads(json.dumps(record, allow_nan=False))


def test_the_documentation_runs():
    failed, attempted = doctest.testfile(str(DOCS), module_relative=False,
                                         optionflags=doctest.ELLIPSIS)
    assert attempted > 20 and failed == 0


# --- intervals --------------------------------------------------------------------------


@pytest.mark.parametrize("x,n,level",
                         [(0, 5, 0.95), (3, 10, 0.9), (10, 10, 0.99), (17, 40, 0.99375)])
def test_intervals_agree_with_scipy(x, n, level):
    test = stats.binomtest(x, n)
    w = test.proportion_ci(level, method="wilson")
    assert wilson_interval(x, n, level) == pytest.approx((w.low, w.high), abs=1e-12)
    e = test.proportion_ci(level, method="exact")
    assert design.clopper_pearson_interval(x, n, level) == pytest.approx((e.low, e.high),
                                                                         abs=1e-9)


def test_t_interval_agrees_with_scipy():
    v = np.random.default_rng(3).normal(size=9)
    lo, hi = stats.t.interval(0.9, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
    assert design.t_interval(v, 0.9) == pytest.approx((lo, hi), abs=1e-12)


def test_bad_input_names_the_parameter():
    for kwargs, name in [({"batch": 0, "cap": 4}, "batch"), ({"batch": 4, "cap": 3}, "cap"),
                         ({"batch": 4, "cap": 8, "alpha": 1.0}, "alpha")]:
        with pytest.raises(ValueError, match=name):
            SequentialPlan(**kwargs)
    plan = SequentialPlan(4, 8)
    with pytest.raises(ValueError, match="side"):
        sequential_proportion(plan, lambda look, size: [True] * size, 0.5, "=>")
    with pytest.raises(ValueError, match="p0"):
        sequential_proportion(plan, lambda look, size: [True] * size, 1.5, ">=")
    with pytest.raises(ValueError, match="interval must be 'auto'"):
        sequential_proportion(plan, lambda look, size: [True] * size, 0.5, ">=", interval="wald")
    with pytest.raises(ValueError, match="must return 4 values"):
        sequential_proportion(plan, lambda look, size: [True], 0.5, ">=")
    with pytest.raises(ValueError, match="booleans"):
        sequential_proportion(plan, lambda look, size: [0.3] * size, 0.5, ">=")
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError, match="window"):
        HeldAbove("acc", 0.9, 0)
    with pytest.raises(ValueError, match="give_up.level"):
        HeldAbove("acc", 0.9, 2, GiveUp(10, 0.95))
    with pytest.raises(ValueError, match="resolution"):
        bisect_threshold(lambda x: x > 1, 0.5, 2.0, 0.9, log=True)
    with pytest.raises(ValueError, match="lo must be positive"):
        bisect_threshold(lambda x: x > 1, 0.0, 2.0, 1.1, log=True)


# --- sequential seeds: measured error rates -----------------------------------------------


def _proportion_runs(p, p0, plan, seed, interval="auto"):
    rng = np.random.default_rng(seed)
    results = [sequential_proportion(plan, lambda look, size: rng.random(size) < p, p0, ">=",
                                     interval=interval) for _ in range(REPS)]
    decisions = np.array([r.decision for r in results])
    return decisions, np.array([r.seeds for r in results]), results[0]


def _agrees_with_exact(count, probability):
    """The simulated count lies in the central 0.999 range of Binomial(REPS, probability)."""
    lo, hi = stats.binom.ppf([0.0005, 0.9995], REPS, probability)
    return lo <= count <= hi


@pytest.mark.parametrize("p0,seed", [(0.5, 11), (0.2, 12)])
def test_wilson_false_decision_rate_at_the_boundary_is_at_most_alpha(p0, seed):
    # At p = p0 every decision ('holds' or 'fails') needs an interval that misses the true p:
    # the worst case for the false-decision rate. Measured: 49/2000 at 0.5, 68/2000 at 0.2;
    # exact 0.0287 and 0.0310 (Bonferroni over 8 correlated looks is conservative).
    plan = SequentialPlan(8, 64, ALPHA)
    decisions, seeds, first = _proportion_runs(p0, p0, plan, seed)
    decided = np.count_nonzero(decisions != "undecided")
    exact = design.operating_characteristics(plan, p0, p0, ">=", interval="wilson")
    assert first.interval_method == "wilson"
    assert first.false_decision_bound == pytest.approx(exact.holds + exact.fails)
    assert decided <= MC_BOUND and exact.holds + exact.fails <= ALPHA
    assert _agrees_with_exact(decided, exact.holds + exact.fails)
    assert seeds.mean() == pytest.approx(exact.expected_seeds, abs=1.0)  # undecided use the cap


def test_without_the_correction_the_rate_exceeds_alpha():
    # The same runs judged at level 1 - alpha at every look (no correction): the Monte Carlo
    # check must see the inflation, or it could not see a broken correction either.
    class Uncorrected(SequentialPlan):
        @property
        def level_per_look(self):
            return 1.0 - self.alpha

    plan = Uncorrected(8, 64, ALPHA)
    decisions, _, _ = _proportion_runs(0.5, 0.5, plan, 11, interval="wilson")
    decided = np.count_nonzero(decisions != "undecided")
    assert decided > 2 * MC_BOUND  # measured 410/2000
    exact = design.operating_characteristics(plan, 0.5, 0.5, ">=", interval="wilson")
    assert _agrees_with_exact(decided, exact.holds + exact.fails)


def test_near_zero_wilson_exceeds_alpha_and_auto_switches_to_clopper_pearson():
    plan = SequentialPlan(8, 64, ALPHA)
    wilson = design.operating_characteristics(plan, 0.02, 0.02, ">=", interval="wilson")
    assert wilson.holds + wilson.fails > ALPHA  # 0.064: Wilson's coverage dips near 0
    decisions, _, first = _proportion_runs(0.02, 0.02, plan, 13)
    assert first.interval_method == "clopper-pearson" and "Clopper-Pearson" in first.reason
    decided = np.count_nonzero(decisions != "undecided")
    assert decided <= MC_BOUND and _agrees_with_exact(decided, first.false_decision_bound)
    assert first.false_decision_bound < ALPHA  # 0.0044; measured 7/2000


def test_exact_rates_over_every_boundary():
    plan = SequentialPlan(8, 64, ALPHA)
    p0s = [round(0.01 * i, 2) for i in range(1, 100)]
    wilson = [design.operating_characteristics(plan, p0, p0, ">=", interval="wilson")
              for p0 in p0s]
    assert max(oc.holds + oc.fails for oc in wilson) > 2 * ALPHA  # 0.109 near the ends
    auto = [sequential_proportion(plan, lambda look, size: [True] * size, p0, ">=")
            for p0 in p0s]
    assert max(r.false_decision_bound for r in auto) <= ALPHA  # 0.046
    # The boundary's rate bounds the false-decision rate at every other share (coupling).
    for p0 in (0.05, 0.3, 0.5):
        bound = auto[p0s.index(p0)].false_decision_bound
        method = auto[p0s.index(p0)].interval_method
        for p in (p0 - 0.04, p0 - 0.01, p0 + 0.01, p0 + 0.04):
            oc = design.operating_characteristics(plan, p, p0, ">=", interval=method)
            assert oc.wrong(p0, ">=") <= bound + 1e-12
            assert oc.holds + oc.fails + oc.undecided == pytest.approx(1.0)


@pytest.mark.parametrize("p,expected", [(0.9, "holds"), (0.1, "fails")])
def test_far_from_the_boundary_decisions_come_early(p, expected):
    decisions, seeds, _ = _proportion_runs(p, 0.5, SequentialPlan(8, 64, ALPHA), 14)
    assert np.all(decisions == expected)
    # Measured: 14 seeds on average (1.8 looks) against the cap of 64.
    assert seeds.mean() < 20 and np.median(seeds) <= 16
    exact = design.operating_characteristics(SequentialPlan(8, 64, ALPHA), p, 0.5, ">=")
    assert exact.expected_seeds == pytest.approx(14.3, abs=0.1)


def test_t_false_decision_rate_at_the_boundary_is_at_most_alpha():
    rng = np.random.default_rng(21)
    plan = SequentialPlan(5, 40, ALPHA)
    at = [sequential_mean(plan, lambda look, size: rng.normal(0.0, 1.0, size), 0.0, ">")
          for _ in range(REPS)]
    assert sum(r.decided for r in at) <= MC_BOUND  # measured 57/2000
    far = [sequential_mean(plan, lambda look, size: rng.normal(1.5, 1.0, size), 0.0, ">")
           for _ in range(200)]
    assert all(r.decision == "holds" for r in far)
    assert np.mean([r.seeds for r in far]) < 12  # measured 1.9 looks of 5


def test_sequential_result_records_its_plan_and_reason():
    r = sequential_proportion(SequentialPlan(10, 25, 0.1), lambda look, size: [False] * size,
                              0.5, ">=")
    assert r.decision == "fails" and r.looks == 1 and r.trials == 10
    assert r.history[0].interval == r.interval
    rec = _json(r.as_record())
    assert rec["plan"] == {"batch": 10, "cap": 25, "alpha": 0.1, "looks": 3,
                           "level_per_look": pytest.approx(1 - 0.1 / 3)}
    assert "Bonferroni over 3 planned looks" in rec["reason"] and "alpha = 0.1" in rec["reason"]
    assert 0 < rec["false_decision_bound"] <= 0.1 and rec["interval_method"] == "wilson"
    # The last batch is cut to the cap; an undecided run reports the interval it reached.
    r = sequential_proportion(SequentialPlan(10, 25), lambda look, size: [True, False] * (size // 2)
                              + [True] * (size % 2), 0.5, "<=")
    assert r.decision == "undecided" and r.trials == 25 and r.looks == 3
    assert r.interval[0] < 0.5 < r.interval[1]
    m = sequential_mean(SequentialPlan(1, 3), lambda look, size: [float(look)], 0.0, "<")
    assert m.history[0].interval == (-math.inf, math.inf)
    assert _json(m.as_record())["successes"] is None and "t interval" in m.reason


# --- early decision per run ---------------------------------------------------------------


def test_held_window_dates_the_outcome_at_its_start():
    rule = HeldAbove("acc", 0.9, 3)
    d = decide(rule, [0.95, 0.96, 0.5, 0.91, 0.92, 0.93, 0.2], steps=[0, 10, 20, 30, 40, 50, 60])
    assert (d.outcome, d.at, d.known_at, d.evaluations, d.step) == ("reached", 3, 5, 6, 30)
    # A NaN (diverged evaluation) breaks a window; a window closing on the last value counts.
    assert decide(rule, [0.95, math.nan, 0.95, 0.95]).outcome == "undecided"
    assert decide(rule, [0.1, 0.95, 0.95, 0.95]).at == 1
    assert decide(HeldBelow("loss", 0.1, 1), {"loss": [1.0, 0.05]}).at == 1


def test_not_reached_only_by_a_stated_give_up():
    values = [0.1] * 50
    assert decide(HeldAbove("acc", 0.9, 2), values).outcome == "undecided"
    d = decide(HeldAbove("acc", 0.9, 2, GiveUp(after=9, level=0.5)), values)
    assert (d.outcome, d.at, d.evaluations) == ("not reached", 9, 10)
    # A run that came within the give-up level before `after` is not given up on.
    close = [0.1, 0.6] + [0.1] * 48
    assert decide(HeldAbove("acc", 0.9, 2, GiveUp(9, 0.5)), close).outcome == "undecided"
    assert decide(HeldBelow("loss", 0.1, 2, GiveUp(3, 0.5)), [1.0] * 5).outcome == "not reached"


def test_watcher_stops_a_loop_and_keeps_the_first_decision():
    w = Watcher(HeldAbove("acc", 0.9, 2))
    trained = []
    for epoch, acc in enumerate([0.2, 0.95, 0.97, 0.1, 0.1]):
        trained.append(epoch)
        if w.update({"acc": acc, "loss": 1 - acc}, step=epoch).stop:
            break
    assert trained == [0, 1, 2] and w.decision.at == 1
    w.update(0.0)  # after the decision: ignored
    assert w.decision.outcome == "reached" and w.decision.evaluations == 3
    with pytest.raises(ValueError, match="no metric 'acc'"):
        Watcher(HeldAbove("acc", 0.9, 2)).update({"loss": 0.1})

    def stream():
        yield from [0.95, 0.95]
        raise AssertionError("read past the decision")

    assert first_decision(HeldAbove("acc", 0.9, 2), stream()).known_at == 1


def test_decision_record_names_the_rule():
    rule = HeldAbove("test_acc", 0.95, 3, GiveUp(100, 0.5))
    rec = _json(decide(rule, [1.0] * 5, steps=np.arange(5) * 200).as_record())
    assert rec["rule"]["kind"] == "HeldAbove" and rec["rule"]["window"] == 3
    assert rec["rule"]["give_up"] == {"after": 100, "level": 0.5}
    assert rec["rule"]["text"].startswith("test_acc >= 0.95 held for 3 consecutive")
    assert (rec["outcome"], rec["at"], rec["step"]) == ("reached", 0, "0")


def _curves(rng, n, spike_share):
    """Full-budget accuracy curves of 200 evaluations: a run groks (rises to ~1) at a random
    time or never; some runs show single-evaluation noise spikes above 0.9 before that."""
    runs, outcomes = [], []
    for _ in range(n):
        t = rng.integers(20, 260)  # beyond 200: never groks in budget
        acc = np.where(np.arange(200) >= t, 0.99, 0.3) + rng.normal(0, 0.01, 200)
        if rng.random() < spike_share:
            acc[rng.integers(0, 20)] = 0.95
        runs.append(acc)
        outcomes.append(bool(acc[-1] >= 0.9))
    return runs, outcomes


def test_disagreement_rate_measures_early_errors():
    rng = np.random.default_rng(31)
    runs, _ = _curves(rng, 300, spike_share=0.3)

    def full(v):
        return v[-1] >= 0.9

    one = disagreement_rate(HeldAbove("acc", 0.9, 1), runs, full)
    three = disagreement_rate(HeldAbove("acc", 0.9, 3), runs, full)
    spiked = sum(np.any(r[:20] == 0.95) and not full(r) for r in runs)
    # A window of 1 is fooled by exactly the spiked runs that never grok; 3 by none.
    assert one.count == spiked > 0 and three.count == 0
    assert one.interval[0] <= one.rate <= one.interval[1] and three.interval[0] == 0.0
    # Every run that grokked early enough to hold 3 evaluations is decided; one that grokked
    # in the last two evaluations stays undecided, runs its budget and agrees by construction.
    assert three.decided == sum(bool(np.all(r[-3:] >= 0.9)) for r in runs) < sum(map(full, runs))
    assert three.total == 300
    assert 0.0 < three.saved < 1.0  # reached runs stop early; the others read everything
    rec = _json(three.as_record())
    assert rec["count"] == 0 and rec["rule"]["window"] == 3

    # Giving up early is a guess; its errors are measured the same way.
    gave_up = disagreement_rate(HeldAbove("acc", 0.9, 3, GiveUp(99, 0.9)), runs, full)
    late = sum(full(r) and not np.any(r[:100] >= 0.9) for r in runs)
    assert gave_up.count == late > 0 and gave_up.saved > three.saved


# --- adaptive grids -----------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.0123, 0.37, 0.999])
def test_bisection_matches_the_full_grid(threshold):
    b = bisect_threshold(lambda x: x >= threshold, 0.0, 1.0, 0.01)
    assert b.status == "resolved" and b.contains(threshold) and b.width <= 0.01
    assert b.evaluations == 2 + math.ceil(math.log2(1.0 / 0.01))
    xs = design.grid(0.0, 1.0, 0.01)
    g = full_grid_threshold([(x, x >= threshold) for x in xs])
    assert len(xs) == 101 and g.contains(threshold) and b.overlaps(g)
    assert evaluations_saved(b, len(xs)) == 92


def test_bisection_on_a_log_axis_decreasing():
    b = bisect_threshold(lambda lr: lr <= 3e-3, 1e-5, 1e-1, 1.2, log=True, increasing=False)
    assert b.status == "resolved" and b.contains(3e-3) and b.width <= 1.2
    assert "ratio" in b.text and all(x > 0 for x, _ in b.points)
    g = full_grid_threshold({x: x <= 3e-3 for x in design.grid(1e-5, 1e-1, 1.2, log=True)},
                            increasing=False, log=True)
    assert b.overlaps(g) and g.width <= 1.2 + 1e-12


def test_bisection_reports_what_it_could_not_decide():
    assert bisect_threshold(lambda x: True, 0, 1, 0.1).status == "not bracketed"
    assert bisect_threshold(lambda x: x < 0.5, 0, 1, 0.1).status == "not bracketed"
    assert bisect_threshold(lambda x: None if x == 0 else True, 0, 1, 0.1).status == \
        "not bracketed"
    # An undecided midpoint stops the search, keeps the bracket reached, records the point.
    b = bisect_threshold(lambda x: None if 0.3 < x < 0.45 else x >= 0.4, 0.0, 1.0, 0.01)
    assert b.status == "undecided" and (b.lo, b.hi) == (0.25, 0.5)
    assert b.undecided_points == (0.375,) and b.points[-1] == (0.375, None)
    assert "undecided at 0.375" in b.text
    rec = _json(b.as_record())
    assert rec["points"][-1] == [0.375, None] and rec["status"] == "undecided"


def test_full_grid_reports_several_switches():
    g = full_grid_threshold([(0.1, False), (0.2, True), (0.3, False), (0.4, True), (0.5, True)])
    assert (g.status, g.lo, g.hi, g.resolution) == ("non-monotone", 0.2, 0.3, None)
    g = full_grid_threshold([(0.1, "fails"), (0.2, "undecided"), (0.3, "holds")])
    assert (g.status, g.lo, g.hi) == ("resolved", 0.1, 0.3)
    assert full_grid_threshold([(0.1, True), (0.2, True)]).status == "not bracketed"
    with pytest.raises(ValueError, match="repeated"):
        full_grid_threshold([(0.1, True), (0.1, False)])


def test_noisy_bisection_with_sequential_seeds():
    # Each point's outcome is a sequential decision on seeds whose success probability rises
    # through 1/2 at x* = 0.3. A bracket can only miss x* by a false decision at one of its
    # points; over 100 bisections none did (each point's false-decision rate is <= alpha,
    # and far from x* far smaller).
    rng = np.random.default_rng(41)
    plan = SequentialPlan(8, 48, ALPHA)

    def share(x):
        p = 1 / (1 + math.exp(-(x - 0.3) / 0.03))
        return sequential_proportion(plan, lambda look, size: rng.random(size) < p, 0.5, ">=")

    brackets = [bisect_threshold(share, 0.0, 1.0, 0.02) for _ in range(100)]
    assert sum(not b.contains(0.3) for b in brackets) <= 2
    assert all(b.status in ("resolved", "undecided") for b in brackets)
    assert all(b.evaluations <= 2 + 6 for b in brackets)
