"""li2.fig8: the quick run and its verdict; the paired route decides both ways and abstains
when the seeds cannot tell; learning-rate selection; the full-fidelity path on a tiny task."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec
from verify.claims.li2.fig8 import Outcome, paired_evidence, paired_interval, select_lr
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import TRAINED
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig8"))


def test_quick_fidelity_cannot_separate_the_optimisers(quick):
    """M = 23, K = 16, 8 seeds: the paired interval contains 0 (Adam lower in 6 of 8 seeds),
    so the claim is inconclusive at this size, not passed or failed."""
    assert quick.verdict is Verdict.INCONCLUSIVE, quick.reason
    (item,) = quick.evidence
    assert item.ok is None and "contains 0" in item.note
    lo, hi = item.parameters["interval"]
    assert lo < 0 < hi
    table = quick.figures["K = 16"]
    assert table["adam"]["lr"] == 1e-2 and table["muon"]["lr"] == 3e-2
    assert len(table["paired"]["log L_adam - log L_muon per seed"]) == 8
    assert all(a["holds"] for a in (x.as_record() for x in quick.assumptions))


def test_both_optimisers_start_from_the_same_weights():
    """The comparison is paired: a seed fixes the initial weights and the split."""
    def trainer(name):
        return GroupTrainer(build_group("Z7").table, Hyper.batch(seed=[3, 4], p=0.5),
                            TrainConfig(K=4, optimizer=OptimizerSpec(name=name),
                                        diagnostics=()))
    adam, muon = trainer("adam"), trainer("muon")
    assert torch.equal(adam.W, muon.W) and torch.equal(adam.Vt, muon.Vt)
    assert torch.equal(adam.train_set.index, muon.train_set.index)


# --- the paired route --------------------------------------------------------------------

@settings(max_examples=40)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=12), st.sampled_from([0.9, 0.95]))
def test_paired_interval_is_scipys_t_interval(d, level):
    d = np.array(d)
    mean, lo, hi = paired_interval(d, level)
    assert math.isclose(mean, d.mean(), abs_tol=1e-12)
    if d.std() > 1e-9:
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=level)
        assert math.isclose(lo, ci.low, abs_tol=1e-9) and math.isclose(hi, ci.high, abs_tol=1e-9)


@settings(max_examples=30)
@given(st.floats(0.2, 2.0), st.integers(3, 12), st.integers(0, 2**31 - 1))
def test_the_paired_route_decides_both_ways_and_abstains_on_noise(effect, seeds, seed):
    rng = np.random.default_rng(seed)
    noise = 0.01 * rng.standard_normal(seeds)
    muon_lower = paired_evidence("t", effect + noise, +1.0, 0.95, {})
    assert muon_lower.ok is True
    assert paired_evidence("t", effect + noise, -1.0, 0.95, {}).ok is False   # control
    assert paired_evidence("t", -effect + noise, +1.0, 0.95, {}).ok is False  # Adam lower
    straddle = np.concatenate([[effect, -effect], noise[: seeds - 2]])
    assert paired_evidence("t", straddle, +1.0, 0.95, {}).ok is None


def test_paired_interval_needs_two_seeds():
    with pytest.raises(ValueError, match="paired"):
        paired_interval(np.array([0.3]), 0.95)


# --- learning-rate selection ---------------------------------------------------------------

def _outcome(final: list[list[float]]) -> Outcome:
    loss = torch.tensor(final, dtype=torch.float64)            # (S, L)
    return Outcome(seeds=tuple(range(len(final))), lrs=tuple(0.1 * (i + 1)
                                                            for i in range(loss.shape[1])),
                   epochs=torch.tensor([0, 10]), test_loss=torch.stack([loss, loss]),
                   test_acc=torch.zeros(2, *loss.shape, dtype=torch.float64),
                   train_acc=torch.ones(*loss.shape, dtype=torch.float64),
                   train_loss=torch.zeros(*loss.shape, dtype=torch.float64))


def test_selection_uses_only_the_selection_seeds_and_treats_nan_as_worst():
    o = _outcome([[1.0, 0.5, math.nan], [1.0, 0.6, 0.1], [0.1, 9.0, 0.1]])
    lr, medians = select_lr(o, (0, 1))
    assert lr == pytest.approx(0.2) and medians[o.lrs[2]] == math.inf
    assert select_lr(_outcome([[1.0], [2.0]]), ())[0] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="selection"):
        select_lr(o, ())


def test_the_full_fidelity_path_on_a_tiny_task():
    """lr grids, selection seeds and two widths, at a size that trains in a second."""
    result = run_claim(get("li2.fig8"), control=False, overrides={
        "M": 7, "Ks": (3, 4), "p": 0.6, "weight_decay": 1e-2, "epochs": 40, "eval_every": 20,
        "adam_lrs": (1e-2, 3e-2), "muon_lrs": (3e-2, 1e-1), "selection_seeds": (0, 1),
        "seeds": (2, 3, 4), "plateau": 10.0})
    assert result.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE), result.reason
    assert len(result.evidence) == 2
    for K in (3, 4):
        table = result.figures[f"K = {K}"]
        assert len(table["adam"]["selection (median final test loss per lr)"]) == 2
        assert len(table["paired"]["log L_adam - log L_muon per seed"]) == 3
    assert "0.9750" in result.evidence[0].quantity        # Bonferroni over the two widths


def test_a_net_that_fits_nothing_makes_the_verdict_inconclusive():
    """Adam at lr 10 fits nothing of a tiny task, so Muon would win by default: the
    comparison decides nothing."""
    result = run_claim(get("li2.fig8"), control=False, overrides={
        "M": 7, "Ks": (4,), "p": 0.6, "weight_decay": 1e-2, "epochs": 200, "eval_every": 20,
        "adam_lrs": (10.0,), "muon_lrs": (1e-1,), "seeds": (2, 3, 4), "plateau": 10.0})
    assert result.verdict is Verdict.INCONCLUSIVE, result.reason
    ran = {a.name: a.holds for a in result.assumptions if a.source == "ran"}
    assert ran[f"{TRAINED} (adam, K = 4)"] is False


def test_overlapping_seed_sets_are_refused():
    result = run_claim(get("li2.fig8"), control=False,
                       overrides={"selection_seeds": (10,), "adam_lrs": (1e-2, 3e-2)})
    assert result.verdict is Verdict.ERROR and "selection and evaluation" in result.reason
