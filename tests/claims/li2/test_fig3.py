"""li2.fig3 (its verdict and control: tests/quality/verdicts.py): every qualitative route can
fail; the summary statistics match the raw history (verify/claims/li2/_fig3_runs.py). The third
party's numbers are li2.x.fig3-third-party's (tests/claims/li2/test_x_fig3_third_party.py)."""
import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.claims.li2._fig3_runs import first_crossing, summarise
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import TRAINED
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.fig3"))


def test_has_five_evidence_items_none_of_them_the_third_partys(quick):
    assert len(quick.evidence) == 5
    assert not any("third party" in e.quantity for e in quick.evidence)
    assert all("third_party" not in get("li2.fig3").parameters[f] for f in ("medium", "full"))


@pytest.mark.parametrize("name, wrong", [
    ("gf_sign", lambda: -1.0),              # decay gives a smaller ||G_F||
    ("stage_order", lambda: (-1.0, 1.0)),   # W first, then V
    ("diagonal", lambda: 0.01),             # diagonal within 1%
])
def test_each_qualitative_route_can_fail(quick, name, wrong):
    claim = get("li2.fig3")
    variant = dataclasses.replace(claim, stated={**claim.stated, name: wrong})
    result = run_claim(variant, control=False)   # the training is cached: no new run
    assert result.verdict is Verdict.FAIL
    failed = [e for e in result.evidence if e.ok is False]
    assert len(failed) >= 1 and all(e.ok for e in quick.evidence)


def test_a_run_that_fits_nothing_makes_the_verdict_inconclusive(quick):
    """Adam at lr 1 leaves every run near chance 1/29: neither grokking nor its absence says
    anything about weight decay (without the health item this read as a fail)."""
    assert [(a.name, a.holds) for a in quick.assumptions if a.source == "ran"] == [
        (TRAINED, True)]
    result = run_claim(get("li2.fig3"), overrides={"lr": 1.0, "K": 64, "epochs": 160},
                       control=False)
    assert result.verdict is Verdict.INCONCLUSIVE and "would have been fail" in result.reason
    assert [a.holds for a in result.assumptions if a.source == "ran"] == [False]


@settings(max_examples=40)
@given(st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=1, max_size=8),
       st.floats(0.05, 1.0))
def test_first_crossing_is_the_first_epoch_at_or_above_the_threshold(rows, threshold):
    values = torch.tensor(rows, dtype=torch.float64)
    epochs = torch.arange(len(rows)) * 5
    got = first_crossing(epochs, values, threshold)
    for b in range(values.shape[1]):
        hits = [int(epochs[i]) for i in range(len(rows)) if rows[i][b] >= threshold]
        assert got[b] == (hits[0] if hits else math.inf)


@settings(max_examples=4)
@given(st.integers(0, 2**31 - 1))
def test_summary_matches_the_raw_history(seed):
    trainer = GroupTrainer(build_group("Z7").table,
                           Hyper.batch(seed=[seed, seed], eta=[1e-2, 0.0], lr=2e-2, p=0.6),
                           TrainConfig(K=16, eval_every=2, diag_every=2,
                                       diagnostics=("gradient", "gram", "updates")),
                           dtype=torch.float64)
    trainer.train(12)
    s = summarise(trainer.history.series, trainer.hyper.eta, trainer.hyper.seed, (2, 8))
    e, gf = trainer.history.series("gf_norm")
    window = (e >= 2) & (e <= 8)
    torch.testing.assert_close(s.stats["window mean ||G_F||"], gf[window].mean(0))
    torch.testing.assert_close(s.stats["peak ||G_F||"], gf.max(0).values)
    _, fft = trainer.history.series("fft_ratio")
    torch.testing.assert_close(s.stats["max off/diag of P FF^T"], fft.max(0).values)
    _, acc = trainer.history.series("test_acc")
    assert torch.equal(s.stats["outcome"] == 1.0, (acc >= 0.99).any(0))


READING_B = "B (big update read as the cosine distance)"


def test_reading_b_reads_the_stages_off_the_update_cosines(quick):
    """Reading B (a big update: the layer whose update direction turns most): at quick W's
    consecutive updates turn more than V's from the first diagnostic epoch, so the order
    'first V, then W' fails there; the printed reading (relative sizes) holds."""
    [b] = [r for r in quick.readings if r.name == READING_B]
    [item] = [e for e in b.evidence if "reading B" in e.quantity]
    assert item.ok is False
    assert all(x < 0 for x in item.parameters["log(d_V/d_W) at the first diagnostic epoch"])
    assert not any("reading B" in e.quantity for e in quick.evidence)


@pytest.mark.parametrize("wrong", [(-1.0, 1.0), (1.0, 1.0)])
def test_reading_b_rejects_a_planted_order(wrong):
    """Planted orders (W first, then V; V throughout) are rejected under reading B too: the
    item compares the cosine signs, not the sizes."""
    claim = get("li2.fig3")
    variant = dataclasses.replace(claim, stated={**claim.stated, "stage_order": lambda: wrong},
                                  readings=())
    result = run_claim(variant, overrides={"stage_measure": "cosine distance"}, control=False)
    failed = [e.quantity for e in result.evidence if e.ok is False]
    assert failed == [e.quantity for e in result.evidence if "reading B" in e.quantity]
