"""numerics.li2.lr_solutions: the learned-node energy, the per-seed slopes and sign test, the
median difference, and the point function's record."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2.lr_solutions import (
    learned_node_energy,
    lr_solution_point,
    median_difference,
    seed_slopes,
    sign_test,
)
from numerics.li2.phase_boundary import group_table
from numerics.li2.sweep_points import decode


def test_the_learned_nodes_are_the_half_of_largest_norm():
    E = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    norm = torch.tensor([[0.1, 2.0, 0.2, 3.0], [1.0, 0.0, 0.0, 0.0]])
    # run 0: nodes 1 and 3 (energies 2, 4; torch's median of two is the lower); run 1: node 0
    # (the other of the top half has norm 0, no direction)
    assert learned_node_energy(E, norm).tolist() == [2.0, 5.0]


def test_a_run_without_a_direction_has_no_energy():
    out = learned_node_energy(torch.ones(1, 3), torch.zeros(1, 3))
    assert math.isnan(out.item())


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="shapes"):
        learned_node_energy(torch.ones(2, 3), torch.ones(2, 4))


def test_the_slope_of_a_step_down_is_negative_and_of_a_flat_row_zero():
    outcome = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], float)   # lrs x seeds
    s = seed_slopes(outcome, [0.01, 0.1, 1.0])          # seeds: falls, flat, rises
    assert s[0] < 0 and s[1] == 0 and s[2] > 0
    assert np.isclose(s[0], -1 / (2 * math.log(10))) and np.isclose(s[2], -s[0])
    # a seed whose outcome does not change counts as flat, not as a sign of rounding
    assert seed_slopes(np.ones((2, 3)), [0.01, 0.1]).tolist() == [0.0] * 3


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=30))
@settings(max_examples=50, deadline=None)
def test_the_sign_test_counts_and_brackets_the_share(slopes):
    t = sign_test(slopes, 0.95)
    s = np.asarray(slopes)
    assert (t.negative, t.positive, t.ties) == ((s < 0).sum(), (s > 0).sum(), (s == 0).sum())
    if t.negative + t.positive:
        assert t.interval[0] <= t.share <= t.interval[1]
    else:
        assert math.isnan(t.share)


def test_four_seeds_all_falling_exclude_half_and_three_do_not():
    assert sign_test([-1.0] * 4, 0.95).interval[1] < 0.5
    assert sign_test([-1.0] * 3, 0.95).interval[1] > 0.5


def test_the_median_difference_and_its_interval():
    a, b = np.arange(10.0) + 5, np.arange(10.0)
    d, (lo, hi) = median_difference(a, b, 0.95)
    assert d == 5.0 and lo <= 5.0 <= hi and lo > 0
    assert median_difference(a, b, 0.95) == (d, (lo, hi))        # seeded: repeatable
    d, (lo, hi) = median_difference(b, b, 0.95)
    assert d == 0 and lo < 0 < hi


def test_a_point_trains_lrs_outer_seeds_inner():
    point = {"table": group_table("Z5").tolist(), "lrs": [0.01, 0.05], "seeds": [0, 1, 2],
             "eta": 1e-3, "p": 0.6, "K": 8, "activation": "x2", "loss": "mse_class",
             "optimizer": "adam", "epochs": 20, "eval_every": 10, "device": "cpu",
             "dtype": "float64"}
    r = lr_solution_point(point)
    assert r["finite"] is True
    assert decode(r["epochs"]).tolist() == [0, 10, 20]
    assert decode(r["test_acc"]).shape == (3, 6)
    assert decode(r["energy"]).shape == (6,) and bool(torch.isfinite(decode(r["energy"])).all())
    # the same seed at both lrs starts from the same network: the same test accuracy at 0
    test0 = decode(r["test_acc"])[0]
    assert torch.equal(test0[:3], test0[3:])
