"""numerics.bisection: batched bisection, and bit-identity with the loops it replaces."""
from __future__ import annotations

import math

import pytest
import torch

from numerics.bisection import bisect


def _adjacent_loop(above, lo, hi, iterations):
    """balance_manifold's former loop: stop once every midpoint is an end of its bracket."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if bool(((mid == lo) | (mid == hi)).all()):
            return lo, hi, True
        up = above(mid)
        lo, hi = torch.where(up, mid, lo), torch.where(up, hi, mid)
    return lo, hi, False


def _unchanged_loop(above, lo, hi, iterations):
    """decayed_limits' former loop: stop once a halving changes no bracket."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        up = above(mid)
        new_lo, new_hi = torch.where(up, mid, lo), torch.where(up, hi, mid)
        if torch.equal(new_lo, lo) and torch.equal(new_hi, hi):
            break
        lo, hi = new_lo, new_hi
    return 0.5 * (lo + hi)


def _fixed_loop(above, lo, hi, iterations):
    """subsampled_energy's former loop: a fixed count, midpoint (a + b) / 2."""
    a, b = lo.clone(), hi.clone()
    for _ in range(iterations):
        mid = (a + b) / 2
        up = above(mid)
        a, b = torch.where(up, mid, a), torch.where(up, b, mid)
    return a, b


def _switch_points(dtype):
    g = torch.Generator().manual_seed(3)
    c = torch.rand(4, 6, generator=g, dtype=torch.float64).to(dtype) * 3 - 1  # roots in [-1, 2]
    return c, (lambda x: x < c)  # true below the switch point c


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_bisection_brackets_the_root_to_adjacent_floats(dtype):
    c, above = _switch_points(dtype)
    lo, hi = torch.full_like(c, -2.0), torch.full_like(c, 3.0)
    r = bisect(above, lo, hi, iterations=400, until_adjacent=True)
    assert r.adjacent is True and r.halvings < 200
    assert bool(((r.lo <= c) & (c <= r.hi)).all())
    assert bool((r.hi.nextafter(r.lo) <= r.lo).all())  # lo, hi adjacent (or equal)
    assert bisect(above, lo, hi, iterations=5, until_adjacent=True).adjacent is False
    assert bisect(above, lo, hi, iterations=5).adjacent is None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_bisection_reproduces_the_former_loops_bit_for_bit(dtype):
    c, above = _switch_points(dtype)
    lo, hi = torch.full_like(c, -2.0), torch.full_like(c, 3.0)
    lo_a, hi_a, ok = _adjacent_loop(above, lo, hi, 400)
    r = bisect(above, lo, hi, iterations=400, until_adjacent=True)
    assert ok and torch.equal(r.lo, lo_a) and torch.equal(r.hi, hi_a)
    # the "no bracket changed" rule ends at the same midpoints
    assert torch.equal(r.midpoint, _unchanged_loop(above, lo, hi, 400))
    for n in (0, 1, 7, 64):
        a, b = _fixed_loop(above, lo, hi, n)
        f = bisect(above, lo, hi, iterations=n)
        assert torch.equal(f.lo, a) and torch.equal(f.hi, b) and f.halvings == n


def test_bisection_stops_at_the_cap_and_rejects_negative_counts():
    x = torch.tensor([math.nan, 0.0], dtype=torch.float64)
    r = bisect(lambda m: m < 0.5, x, torch.ones(2, dtype=torch.float64), iterations=80,
               until_adjacent=True)
    assert r.adjacent is False and r.halvings == 80  # a NaN bracket never settles
    with pytest.raises(ValueError, match="iterations"):
        bisect(lambda m: m < 0.5, x, x, iterations=-1)
