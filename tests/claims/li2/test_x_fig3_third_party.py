"""li2.x.fig3-third-party (its verdict and control: tests/quality/verdicts.py): it trains
nothing of its own (li2.fig3's runs, filed under li2.fig3 in the store); at quick size only the
"never" statements are compared and every number is undecided with their value kept; at their
setting every numeric route can fail and pass; reading B shifts the epochs by one."""
import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.claims.li2 import x_fig3_third_party as third
from verify.claims.li2._fig3_runs import SETTINGS, Summary
from verify.points import in_process_sweep
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict

CLAIM = "li2.x.fig3-third-party"
#: A setting no other test trains (seconds): the sweep it asks for is new to the process.
TINY = {"K": 32, "epochs": 20, "seeds": (0,)}


@pytest.fixture(scope="module")
def quick():
    return run_claim(get(CLAIM))


def test_the_two_claims_train_once_under_li2_fig3s_name():
    names = []

    def recording(fn, points, *, name, batch_size=1):
        names.append(name)
        return in_process_sweep(fn, points, name=name, batch_size=batch_size)

    run_claim(get("li2.fig3"), overrides=TINY, control=False, sweeper=recording)
    run_claim(get(CLAIM), overrides=TINY, control=False, sweeper=recording)
    assert names == ["li2.fig3:training"]


def test_at_quick_size_only_the_never_statements_are_compared(quick):
    assert quick.verdict is Verdict.INCONCLUSIVE
    decided = [e for e in quick.evidence if e.ok is not None]
    assert all(e.ok for e in decided)
    assert {e.quantity for e in decided} == {
        "seed 0, eta = 0: epoch test acc >= 0.5 is never (within 260 epochs)",
        "seed 0, eta = 0: epoch test acc >= 0.99 is never (within 260 epochs)",
        "controls (eta = 0): fraction that never reaches test acc 0.5"}
    numbers = [e for e in quick.evidence if e.ok is None]
    assert len(numbers) == 11 and all(isinstance(e.stated, float) for e in numbers)
    assert all("their number is for M = 71" in e.note for e in numbers)
    assert quick.control.rejected


@pytest.fixture
def at_quick_as_theirs(monkeypatch):
    """The quick setting taken as theirs, so that every numeric route is compared."""
    q = SETTINGS["quick"]
    monkeypatch.setattr(third, "THEIRS", (q["M"], q["K"], 504, q["lr"], q["epochs"],
                                          tuple(q["etas"])))


def _ours_as_stated(result):
    """Our seed-0 figures (and median) in their report's shape: what an exact report says."""
    by_name = {e.quantity: e.measured for e in result.evidence}
    seed0 = {}
    for name, (decay, none) in third.stated_seed0().items():
        pair = []
        for tag, value in (("> 0", decay), ("= 0", none)):
            label = f"seed 0, eta {tag}: {name}"
            pair.append(None if value is None else float(by_name[label][0]))
        seed0[name] = tuple(pair)
    t50 = by_name["2 seeds with decay: median epoch of test acc 0.5"][0]
    return {"seed0": lambda: seed0, "t50": lambda: (t50, t50, t50)}


def test_at_their_setting_every_number_is_compared_and_can_fail(at_quick_as_theirs):
    """Their M = 71 numbers cannot match an M = 29 run: the numeric routes have power."""
    result = run_claim(get(CLAIM), control=False, readings=False)
    assert result.verdict is Verdict.FAIL
    assert all(e.ok is not None for e in result.evidence)
    assert sum(e.ok is False for e in result.evidence) >= 6


def test_at_their_setting_a_report_of_our_own_figures_passes(at_quick_as_theirs):
    claim = get(CLAIM)
    measured = run_claim(claim, control=False, readings=False)
    exact = dataclasses.replace(claim, stated={**claim.stated, **_ours_as_stated(measured)})
    result = run_claim(exact, control=False, readings=False)
    assert result.verdict is Verdict.PASS, result.reason
    assert len(result.evidence) == 14


def test_reading_b_counts_their_epochs_from_zero(at_quick_as_theirs):
    printed = run_claim(get(CLAIM), control=False, readings=False)
    from_zero = run_claim(get(CLAIM), overrides={"epoch_count": "from 0"}, control=False,
                          readings=False)
    for a, b in zip(printed.evidence, from_zero.evidence):
        shift = 1.0 if "epoch" in a.quantity.rsplit(": ", 1)[-1] else 0.0
        if "never" not in a.quantity and "fraction" not in a.quantity:
            torch.testing.assert_close(torch.as_tensor(b.measured),
                                       torch.as_tensor(a.measured) - shift)


def test_the_control_swaps_the_decay_run_and_the_control():
    for name, (decay, none) in third.stated_seed0().items():
        assert third.swapped_seed0()[name] == (none, decay)


@settings(max_examples=20)
@given(st.lists(st.one_of(st.floats(0, 500), st.just(math.inf)), min_size=1, max_size=6),
       st.sampled_from(("steps", "from 0")))
def test_only_epochs_move_with_the_epoch_count_and_never_stays_never(values, count):
    stats = {"epoch test acc >= 0.5": torch.tensor(values, dtype=torch.float64),
             "peak ||G_F||": torch.tensor(values, dtype=torch.float64)}
    s = Summary(eta=(0.0,) * len(values), seed=(0,) * len(values), stats=stats, trends={},
                diag_epochs=torch.zeros(0))
    p = {"epoch_count": count}
    torch.testing.assert_close(third._ours(s, "epoch test acc >= 0.5", p),
                               stats["epoch test acc >= 0.5"] - float(count == "from 0"))
    assert torch.equal(third._ours(s, "peak ||G_F||", p), stats["peak ||G_F||"])
