"""numerics.li2.lock_in and numerics.li2.sweep_points.lock_in_point: the rolling window's two
routes against the Gram built from scratch, the detector's slope and firing rule on known
series, the level metric against its definition and the trainer's ``fft_dist``, and the point's
one-step-at-a-time training against one uninterrupted run."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.lock_in import (
    UpdateWindow,
    first_at_least,
    first_fire,
    gap_ratio,
    level_metric,
    slopes,
)
from numerics.li2.sweep_points import decode, lock_in_point
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.claims.li2._groups import build_group


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), pushes=st.integers(1, 12), capacity=st.integers(3, 6),
       w=st.integers(1, 6))
def test_window_levels_are_the_gram_eigenvalues_of_the_last_w_changes(seed, pushes, capacity,
                                                                       w):
    w = min(w, capacity)
    g = torch.Generator().manual_seed(seed)
    changes = torch.randn(pushes, 2, 7, generator=g, dtype=torch.float64)
    window = UpdateWindow(2, 7, capacity)
    for c in changes:
        window.push(c)
    last = changes[max(0, pushes - w):]                        # (held, B, P)
    D = last.permute(1, 0, 2)
    expected = torch.linalg.eigvalsh(D @ D.mT).flip(-1)
    torch.testing.assert_close(window.levels(w), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(window.levels_svd(w), expected, rtol=1e-10, atol=1e-12)


def test_window_routes_agree_within_a_rounding_bound_that_resolves_small_errors():
    g = torch.Generator().manual_seed(1)
    # a rank-2 window with a small third direction: sigma_3 is what the bound divides by
    basis = torch.randn(3, 500, generator=g, dtype=torch.float64)
    window = UpdateWindow(1, 500, 20)
    for t in range(20):
        coef = torch.tensor([1.0 + t, math.sin(t), 1e-2 * math.cos(3 * t)], dtype=torch.float64)
        window.push((coef @ basis)[None])
    diff = (gap_ratio(window.levels(20)).log() - gap_ratio(window.levels_svd(20)).log()).abs()
    bound = window.rounding(20)
    assert float(diff) <= float(bound)
    # a bound that says something: a 0.1% error in a level is 100 times outside it
    assert 0 < float(bound) < 1e-2 * math.log(1.001)


def test_window_rejects_a_capacity_that_has_no_third_level():
    with pytest.raises(ValueError, match="capacity"):
        UpdateWindow(1, 4, 2)
    with pytest.raises(ValueError, match="w"):
        UpdateWindow(1, 4, 3).levels(4)


def test_gap_ratio_needs_three_levels():
    assert math.isnan(float(gap_ratio(torch.tensor([2.0, 1.0]))))
    assert float(gap_ratio(torch.tensor([4.0, 3.0, 1.5]))) == 2.0


def test_the_slope_fires_at_the_first_epoch_past_t_min_with_a_fast_enough_rise():
    T = 200
    t = torch.arange(T, dtype=torch.float64)
    rising = torch.exp(0.05 * (t - 120).clamp(min=0))          # slope 0.05 after epoch 120
    flat = torch.full((T,), 3.0, dtype=torch.float64)
    early = torch.exp(0.05 * t)                                # rises from the start
    ratio = torch.stack([rising, flat, early], 1)
    s = slopes(ratio, 25)
    assert torch.isnan(s[:25]).all()
    torch.testing.assert_close(s[150, 0], torch.tensor(0.05, dtype=torch.float64))
    fire = first_fire(s, 0.04, 100)
    # rising: s(t) = 0.05 (t - 120) / 25 > 0.04 first at t = 141; flat: never; early: t_min
    assert fire.tolist() == [141.0, math.inf, 100.0]
    # the threshold is strict: a slope equal to it does not fire
    assert math.isinf(float(first_fire(torch.full((T, 1), 0.04, dtype=torch.float64), 0.04,
                                       100)))


def test_first_at_least_takes_the_first_logged_epoch_with_a_level_per_column():
    epochs = torch.tensor([0, 10, 20, 30])
    values = torch.tensor([[0.1, 0.5], [0.2, 0.5], [0.3, 0.5], [0.2, 0.9]], dtype=torch.float64)
    out = first_at_least(epochs, values, torch.tensor([0.25, 1.0], dtype=torch.float64))
    assert out.tolist() == [20.0, math.inf]


def test_level_metric_vanishes_on_the_fitted_form_and_reads_the_uncentred_gram():
    n, a, b = 6, 3.0, 0.5
    # F F^T = (a - b) I + b 1 1^T exactly
    F = torch.cat([math.sqrt(a - b) * torch.eye(n, dtype=torch.float64),
                   math.sqrt(b) * torch.ones(n, 1, dtype=torch.float64)], 1)
    rho = level_metric(F)
    # P_1^perp ((a - b) I + b 1 1^T) = (a - b)(I - 1 1^T / n) has the fitted form too
    assert float(rho["raw"]) < 1e-14 and float(rho["centred"]) < 1e-14
    g = torch.Generator().manual_seed(0)
    F = torch.randn(40, 30, generator=g, dtype=torch.float64).square()
    G = F @ F.T
    d = G.diagonal().mean()
    o = (G.sum() - G.diagonal().sum()) / (40 * 39)
    fit = (d - o) * torch.eye(40, dtype=torch.float64) + o
    expected = torch.linalg.matrix_norm(G - fit) / torch.linalg.matrix_norm(G)
    rho = level_metric(F)
    torch.testing.assert_close(rho["raw"], expected, rtol=1e-13, atol=0)
    # the note's centred reading is another number
    assert abs(float(rho["centred"] - rho["raw"])) > 1e-3


def test_level_metric_is_the_trainers_fft_dist():
    trainer = GroupTrainer(build_group("Z7").table, Hyper.batch(seed=[0, 1], p=[0.5, 0.7]),
                           TrainConfig(K=24, diagnostics=("gram",)), dtype=torch.float64)
    trainer.train(3)
    _, fft_dist = trainer.history.series("fft_dist")
    F = trainer.forward_snapshot().F
    real = trainer.train_set.weight > 0
    ours = torch.stack([level_metric(F[b][real[b]])["raw"] for b in range(2)])
    torch.testing.assert_close(ours, fft_dist[-1], rtol=1e-12, atol=0)


def _point(**over):
    return {"table": [list(r) for r in build_group("Z7").table], "K": 16, "activation": "x2",
            "lr": 5e-3, "epochs": 12, "runs": [{"seed": 0, "eta": 1e-3, "p": 0.6},
                                               {"seed": 1, "eta": 0.0, "p": 0.5}],
            "windows": [3, 5], "rho_every": 2, "checks": [6, 12], "device": "cpu",
            "dtype": "float64", **over}


def test_the_point_trains_as_one_uninterrupted_run_and_logs_every_epoch():
    r = lock_in_point(_point())
    trainer = GroupTrainer(build_group("Z7").table,
                           Hyper.batch(seed=[0, 1], eta=[1e-3, 0.0], p=[0.6, 0.5], lr=5e-3),
                           TrainConfig(K=16, eval_every=1, diagnostics=()), dtype=torch.float64)
    trainer.train(12)
    _, acc = trainer.history.series("test_acc")
    assert torch.equal(decode(r["test_acc"]), acc)
    for w in ("3", "5"):
        ratio = decode(r["ratio"][w])
        assert ratio.shape == (13, 2)
        assert torch.isnan(ratio[:3]).all() and torch.isfinite(ratio[3:]).all()
    assert decode(r["norms"]).shape == (12, 2)
    assert r["rho_check"]["epochs"] == [6, 12]
    torch.testing.assert_close(decode(r["rho_check"]["raw"]), decode(r["rho_check"]["trainer"]),
                               rtol=1e-12, atol=0)
    svd = r["svd"]["5"]
    assert (decode(svd["eig"]).log() - decode(svd["svd"]).log()).abs().le(
        decode(svd["bound"])).all()


def test_the_point_rejects_checks_off_the_rho_grid():
    with pytest.raises(ValueError, match="checks"):
        lock_in_point(_point(checks=[5]))


@pytest.mark.slow
def test_the_reference_level_at_initialisation_is_the_third_partys_networks():
    """rho(0) at M=71, K=2048, n=2016, seed 0 (the quick threshold's reference, 0.0582)."""
    trainer = GroupTrainer(build_group("Z71").table, Hyper.batch(seed=[0], p=[0.4]),
                           TrainConfig(K=2048, diagnostics=("gram",)))
    assert trainer.train_set.count.tolist() == [2016]
    trainer.train(0)
    _, rho = trainer.history.series("fft_dist")
    assert abs(float(rho[0, 0]) - 0.0582) < 5e-5
