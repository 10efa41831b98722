"""li2.fig10-ridge-top: the quick run (Z_23 slower, Z_41 faster with the ridge top layer), its
rejected control, the stated direction per M, and a group below the paper's sizes."""
import dataclasses

import numpy as np
import pytest

from numerics.li2.init_sweep_points import BELOW_AT_START, paired_log_ratio
from numerics.li2.train_splits import train_count
from verify.claims.li2._groups import build_group
from verify.claims.li2.fig10_ridge_top import direction_evidence, stated_ridge_slower
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig10-ridge-top"))


def test_ridge_is_slower_at_23_and_faster_at_41(quick):
    """The paper's setting (K = 256, p = 0.8, lr 0.005, weight decay 5e-5), 4 seeds: the ridge
    top layer takes about 2.6x the epochs to test accuracy 0.99 at M = 23 and about 0.55x at
    M = 41, each by a 95% interval that excludes 1."""
    assert quick.verdict is Verdict.PASS, quick.reason
    assert quick.control.rejected and quick.control.verdict is Verdict.FAIL
    assert len(quick.evidence) == 4 and all(e.ok is True for e in quick.evidence)
    ratio = {(e.parameters["M"], e.parameters["threshold"]): e.parameters["ratio"]
             for e in quick.evidence}
    assert ratio[(23, 0.99)] > 1.5 and ratio[(41, 0.99)] < 0.8
    table = quick.figures["ridge against trained top layer, per group and threshold"]
    assert table["Z23, t_0.99"]["effect"] == "slower"
    assert table["Z41, t_0.99"]["effect"] == "faster"
    assert all(a.holds for a in quick.assumptions)
    assert BELOW_AT_START in {a.name for a in quick.assumptions if a.source == "ran"}


def test_the_stated_direction_can_fail(quick):
    claim = get("li2.fig10-ridge-top")
    variant = dataclasses.replace(claim, stated={"ridge_slower": lambda M: 1.0})
    result = run_claim(variant, control=False)             # the training is memoised
    assert result.verdict is Verdict.FAIL
    assert [e.ok for e in result.evidence] == [True, True, False, False]


def test_the_direction_per_group_size():
    assert [stated_ridge_slower(M) for M in (11, 23, 31, 41, 89, 127)] == \
        [1.0, 1.0, 0.0, -1.0, -1.0, -1.0]
    t = np.array([300.0, 320.0, 310.0])
    pr = paired_log_ratio(t, [False] * 3, t / 2, [False] * 3, 0.95)
    item = direction_evidence("M = 31", pr, stated_ridge_slower(31), {})
    assert item.ok is None and "no direction" in item.note
    assert direction_evidence("M = 23", pr, stated_ridge_slower(23), {}).ok is True
    assert direction_evidence("M = 41", pr, stated_ridge_slower(41), {}).ok is False


def test_below_the_papers_sizes_the_ridge_is_faster():
    """At Z_11 (n = 97 < K = 256) in the same setting the ridge top layer groks about 14x
    faster: the rule 'slower for M <= 23', extrapolated below the paper's sizes, fails there,
    outside the assumptions."""
    result = run_claim(get("li2.fig10-ridge-top"), control=False,
                       overrides={"groups": ("Z11",), "seeds": (0, 1, 2)})
    assert result.verdict is Verdict.FAIL, result.reason
    assert all(e.ok is False for e in result.evidence)
    assert not result.inside_assumptions
    assert all(e.parameters["ratio"] < 0.2 for e in result.evidence)


def test_networks_left_at_chance_do_not_pass():
    result = run_claim(get("li2.fig10-ridge-top"), control=False, overrides={
        "groups": ("Z7",), "K": 16, "lr": 20.0, "budget": 40, "chunk": 20})
    ran = {a.name: a.holds for a in result.assumptions if a.source == "ran"}
    assert ran["the network trained beyond chance (Z7)"] is False
    assert result.verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("fidelity", ["quick", "full"])
def test_every_group_keeps_a_training_and_a_test_set(fidelity):
    p = get("li2.fig10-ridge-top").parameters[fidelity]
    for g in p["groups"]:
        M = build_group(g).order
        assert 2 <= train_count(M, p["p"]) < M * M
    assert len(set(p["seeds"])) == len(p["seeds"]) >= 3
