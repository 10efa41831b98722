"""numerics.li2.memorisation_kinds: Thm. 5's focused node, a Fourier node, a node at its
initial direction, and the network's kind by node weight."""
import math

import torch

from numerics.li2.memorisation_kinds import (
    MIXED,
    RANDOM_FEATURES,
    THM5,
    classify,
    initial_alignment,
    node_focus,
    on_training_pair,
    training_pair_share,
)

M = 7


def _focused(a: int, b: int) -> torch.Tensor:
    w = torch.zeros(2 * M, dtype=torch.float64)
    w[a] = w[M + b] = 1 / math.sqrt(2)
    return w


def _fourier(k: int) -> torch.Tensor:
    g = torch.arange(M, dtype=torch.float64)
    u = torch.cos(2 * math.pi * k * g / M)
    return torch.cat((u, u)) / torch.cat((u, u)).norm()


def test_focus_is_one_at_a_thm5_maximum_and_at_most_2_over_m_for_a_fourier_node():
    W = torch.stack((_focused(2, 5), _fourier(1), _fourier(3)), 1)
    f = node_focus(W)
    assert torch.isclose(f[0], torch.tensor(1.0, dtype=torch.float64))
    assert bool((f[1:] <= 2 / M + 1e-12).all())


def test_the_focused_pair_must_be_a_training_pair():
    W = torch.stack((_focused(2, 5), _focused(1, 1)), 1)
    pairs = torch.zeros(M, M, dtype=torch.bool)
    pairs[2, 5] = True
    assert on_training_pair(W, pairs).tolist() == [True, False]


def test_alignment_is_cos_squared_and_ignores_sign_and_scale():
    w0 = _fourier(2)
    W0 = torch.stack((w0, w0, w0), 1)
    W = torch.stack((-3 * w0, torch.zeros_like(w0), _fourier(1)), 1)
    a = initial_alignment(W, W0)
    assert torch.allclose(a, torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), atol=1e-12)


def test_the_kind_is_the_majority_of_node_weight():
    W0 = torch.stack([_fourier(k % 3 + 1) for k in range(4)], 1)
    thm5 = torch.stack((_focused(0, 1), _focused(2, 3), W0[:, 2], W0[:, 3]), 1)
    V = torch.ones(4, M, dtype=torch.float64)
    pairs = torch.zeros(M, M, dtype=torch.bool)
    pairs[0, 1] = pairs[2, 3] = True
    # two Thm. 5 nodes and two unmoved nodes, the first weighted 2:1 by V
    V_thm5 = V.clone()
    V_thm5[:2] *= 2
    V_random = V.clone()
    V_random[2:] *= 2
    W = torch.stack((thm5, thm5, thm5))
    out = classify(W, torch.stack((V_thm5, V_random, V)), torch.stack((W0, W0, W0)),
                   torch.stack((pairs, pairs, pairs)))
    assert out.kinds == (THM5, RANDOM_FEATURES, MIXED)
    assert torch.allclose(out.thm5_share + out.random_share,
                          torch.ones(3, dtype=torch.float64))


def test_dead_nodes_carry_no_weight():
    W0 = torch.stack((_fourier(1), _fourier(2)), 1)
    W = torch.stack((_focused(0, 1), torch.zeros(2 * M, dtype=torch.float64)), 1)
    V = torch.ones(2, M, dtype=torch.float64)
    pairs = torch.zeros(M, M, dtype=torch.bool)
    pairs[0, 1] = True
    out = classify(W[None], V[None], W0[None], pairs[None])
    assert out.kinds == (THM5,) and float(out.thm5_share[0]) == 1.0


def test_the_training_pair_share_is_one_on_training_pairs_and_p_for_a_blind_node():
    pairs = torch.zeros(M, M, dtype=torch.bool)
    pairs[2, 5] = pairs[3, 1] = True
    two = _focused(2, 5) + _focused(3, 1)                  # supported on two training pairs
    W = torch.stack((_focused(2, 5), two, _focused(2, 1), torch.ones(2 * M,
                                                                       dtype=torch.float64)), 1)
    share = training_pair_share(W, pairs)
    # the two-pair node also puts mass on (2, 1) and (3, 5), which are not training pairs
    assert torch.allclose(share, torch.tensor([1.0, 0.5, 0.0, 2 / M**2], dtype=torch.float64))
