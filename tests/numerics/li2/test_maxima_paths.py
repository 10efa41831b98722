"""numerics.li2.maxima_paths: the paths between two maxima and their lowest points."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.group_task import group_energy, group_task
from numerics.li2.maxima_paths import (
    bent,
    great_circle,
    pairwise_pass_heights,
    pass_heights,
    respace,
)
from numerics.random import make_generator
from theory.groups import cyclic

SEEDS = st.integers(0, 2**31 - 1)


def frequency_maximum(M: int, k: int, phase: float = 0.0) -> torch.Tensor:
    """[u; Pu] normalised, u = cos(2 pi k m / M + phase): a maximum of Z_M's x^2 energy."""
    m = torch.arange(M, dtype=torch.float64)
    w = torch.cat([torch.cos(2 * math.pi * k * m / M + phase),
                   torch.cos(-2 * math.pi * k * m / M + phase)])
    return w / w.norm()


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, d=st.integers(2, 12), points=st.integers(2, 17))
def test_great_circle_and_bent_paths_keep_their_ends_on_the_sphere(seed, d, points):
    g = make_generator(seed)
    w = torch.randn(2, 3, d, generator=g, dtype=torch.float64)
    w = w / w.norm(dim=-1, keepdim=True)
    path = great_circle(w[0], w[1], points)
    for p in (path, bent(path, g, 0.5), respace(bent(path, g, 0.5))):
        torch.testing.assert_close(p[:, 0], w[0])
        torch.testing.assert_close(p[:, -1], w[1])
        torch.testing.assert_close(p.norm(dim=-1), torch.ones(3, points, dtype=torch.float64))
    # equal angles along the great circle
    if points > 2:
        steps = (path[:, 1:] * path[:, :-1]).sum(-1)
        torch.testing.assert_close(steps, steps[:, :1].expand_as(steps))


def test_respace_keeps_an_even_path_and_evens_out_an_uneven_one():
    even = great_circle(torch.tensor([[1.0, 0.0]], dtype=torch.float64),
                        torch.tensor([[0.0, 1.0]], dtype=torch.float64), 6)
    torch.testing.assert_close(respace(even), even)
    t = torch.tensor([0.0, 0.05, 0.1, 0.9, 1.0], dtype=torch.float64)[None, :, None]
    path = torch.cat([torch.cos(t), torch.sin(t)], -1)

    def spread(p):
        seg = (p[:, 1:] - p[:, :-1]).norm(dim=-1)
        return float(seg.max() / seg.min())

    # equal steps along the polygon, then projected onto the circle: the chord through the
    # long segment is bent back, so the steps agree to O(angle^2), not exactly
    assert spread(path) > 15 and spread(respace(path)) < 1.1


def test_antipodal_ends_are_refused():
    w = torch.eye(3, dtype=torch.float64)[:1]
    with pytest.raises(ValueError, match="antipodal"):
        great_circle(w, -w, 5)


def test_different_frequencies_dip_and_one_family_does_not():
    M = 7
    task, x2 = group_task(cyclic(M).table), activation("x2")
    w1, w2 = frequency_maximum(M, 1), frequency_maximum(M, 2)
    rotated = frequency_maximum(M, 1, 1.5)  # the same family as w1 (Cor. 1's flat circle)
    across, within = pass_heights(torch.stack([w1, w1]), torch.stack([w2, rotated]), task, x2,
                                  make_generator(0), lr=0.4 / M, steps=10)
    # equal ends whose outputs lie in orthogonal frequencies: the great circle's midpoint has
    # E = E*/2 (cos^4 + sin^4 at pi/4 plus a vanishing cross term); the string climbs little
    assert across.great_circle == pytest.approx(across.ends[0] / 2, rel=1e-12)
    assert across.string >= across.great_circle
    assert 0.45 < across.dip <= 0.5 + 1e-12
    assert abs(within.dip) < 1e-12  # joined at constant height: a connected pair
    energies = group_energy(great_circle(w1[None], rotated[None], 9)[0], task, x2)
    torch.testing.assert_close(energies, energies[:1].expand_as(energies), rtol=1e-12, atol=0)


def test_pairwise_takes_the_nearer_of_plus_minus_the_far_end():
    M = 5
    task = group_task(cyclic(M).table)
    out = pairwise_pass_heights([frequency_maximum(M, 1), -frequency_maximum(M, 2)], task,
                                activation("x2"), make_generator(1), lr=0.1, steps=0)
    assert [p for p, _ in out] == [(0, 1)]
    assert out[0][1].string == out[0][1].great_circle  # no climbing with steps = 0
