"""numerics.li2.batched_ascent: the grid gradient against autograd of the definition, the active
set against numerics.li2.landscape.ascend_sphere run one start at a time, and the guards."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.li2 import batched_ascent
from numerics.activations import ACTIVATIONS, activation
from numerics.li2.batched_ascent import (
    ascend_sphere_active,
    cayley_grid,
    grid_energy_and_gradient,
)
from numerics.errors import Diverged
from numerics.li2.group_task import first_layer, group_energy, group_task
from numerics.li2.landscape import ascend_sphere
from verify.claims.li2._groups import build_group

U = torch.finfo(torch.float64).eps / 2  # unit roundoff
GROUPS = ("Z5", "Z7", "S3", "D4", "Q8", "A4", "Z2xZ4")


def rounding_scales(w: torch.Tensor, task, act) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Magnitudes that the energy's and the gradient's sums cancel down from, per start, from
    the samples (not the grid): with :math:`A_c=\sum_{i:t_i=c}|\sigma(z_i)|+\tfrac{n_c}{n}
    \sum_i|\sigma(z_i)|`, the energy's scale is :math:`\tfrac12\sum_cA_c^2` and the
    gradient's :math:`2\max_cA_c` times the largest sum of :math:`|\sigma'(z_i)|` over the
    samples that share an operand. (With a linear :math:`\sigma` on full data both the energy
    and its gradient vanish identically, and only rounding is left to compare.)"""
    z = first_layer(w, task)  # (B, n)
    s, ds = act(z).abs(), act.derivative(z).abs()
    M = task.M
    per_class = torch.zeros(w.shape[0], M, dtype=w.dtype).index_add_(1, task.target, s)
    A = per_class + (task.counts.to(w.dtype) / task.n) * s.sum(1, keepdim=True)
    by_operand = torch.cat([torch.zeros(w.shape[0], M, dtype=w.dtype).index_add_(1, idx, ds)
                            for idx in (task.left, task.right)], 1)
    return 0.5 * A.square().sum(1), 2 * A.amax(1) * by_operand.amax(1)


@settings(max_examples=25)
@given(group=st.sampled_from(GROUPS), name=st.sampled_from(sorted(ACTIVATIONS)),
       ratio=st.sampled_from([1.0, 0.7, 0.35]), seed=st.integers(0, 2**31 - 1))
def test_grid_gradient_is_the_gradient_of_the_energy(group, name, ratio, seed):
    r"""Energy and gradient on the Cayley grid equal :func:`group_energy` and its autograd
    gradient (the definition, Eq. 7), for abelian and non-abelian groups, full data and
    subsets. Both sum the same at most :math:`n=M^2` terms in different orders: the measured
    gap is a few u of :func:`rounding_scales`, the tolerance 1e-13 (about 450 u) of them,
    while a wrong term (a wrong partner, weight or frequency) moves the result by a fair
    fraction of them (the next test)."""
    g = torch.Generator().manual_seed(seed)
    task = group_task(build_group(group).table, ratio=ratio, generator=g)
    act = activation(name)
    w = torch.randn(4, 2 * task.M, generator=g, dtype=torch.float64)
    x = w.clone().requires_grad_(True)
    energy = group_energy(x, task, act)
    (grad,) = torch.autograd.grad(energy.sum(), x)
    e_grid, g_grid = grid_energy_and_gradient(w, cayley_grid(task), act)
    scale_e, scale_g = rounding_scales(w, task, act)
    assert bool(((e_grid - energy.detach()).abs() <= 1e-13 * scale_e).all())
    assert bool(((g_grid - grad).abs().amax(1) <= 1e-13 * scale_g).all())


def test_grid_gradient_fails_for_a_wrong_partner():
    """The same comparison rejects a grid whose second operand is :math:`c\\,a^{-1}` instead
    of :math:`a^{-1}c` (the same map on an abelian group, a different one on S3)."""
    task = group_task(build_group("S3").table)
    grid = cayley_grid(task)
    M = task.M
    wrong_partner = task.table[torch.arange(M)[None, :].expand(M, M),
                               task.inverse[:, None].expand(M, M)].reshape(-1)
    wrong = batched_ascent.CayleyGrid(M, wrong_partner, grid.weight, grid.freq)
    w = torch.randn(3, 2 * M, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    act = activation("x2")
    x = w.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(group_energy(x, task, act).sum(), x)
    _, g_wrong = grid_energy_and_gradient(w, wrong, act)
    _, scale_g = rounding_scales(w, task, act)
    assert bool(((g_wrong - grad).abs().amax(1) > 1e-3 * scale_g).all())


@pytest.fixture(scope="module")
def ascents():
    """Active-set ascent of 12 starts and ascend_sphere on each start alone, on a cyclic and
    a non-abelian group, with lr and tolerance as li2.thm2 chooses them."""
    out = {}
    for name in ("Z11", "D4"):
        task = group_task(build_group(name).table)
        M = task.M
        act, lr, gtol = activation("x2"), 0.4 / M, 1e4 * U * M
        w0 = torch.randn(12, 2 * M, generator=torch.Generator().manual_seed(1),
                         dtype=torch.float64)
        loop = [ascend_sphere(w0[i:i + 1], task, act, lr, 5000, gtol) for i in range(12)]
        out[name] = (ascend_sphere_active(w0, task, act, lr, 5000, gtol), loop, lr, gtol)
    return out


@pytest.mark.parametrize("name", ["Z11", "D4"])
def test_active_set_takes_the_steps_of_each_start_alone(ascents, name):
    r"""Each start takes exactly the steps ascend_sphere takes on it alone and ends at the same
    point. Tolerance: the two gradients differ by rounding (a few u relative, above); the
    projected step with lr below 1/L does not expand distances near a maximum, so the
    per-step rounding (at most ~16 u of the unit-norm iterate) adds up at most linearly over
    the steps."""
    active, loop, _, _ = ascents[name]
    steps = torch.tensor([r.steps for r in loop])
    assert torch.equal(active.start_steps, steps)
    assert active.steps == int(steps.max())
    assert bool(active.converged.all()) and all(bool(r.converged.all()) for r in loop)
    w_loop = torch.cat([r.w for r in loop])
    e_loop = torch.cat([r.energy for r in loop])
    assert float((active.w - w_loop).norm(dim=-1).max()) <= 16 * U * int(steps.max())
    assert float(((active.energy - e_loop) / e_loop).abs().max()) <= 16 * U * int(steps.max())
    torch.testing.assert_close(active.largest_decrease,
                               torch.cat([r.largest_decrease for r in loop]),
                               rtol=0, atol=1e-12)
    assert bool((active.grad_norm <= ascents[name][3]).all())


def test_converged_starts_leave_the_batch(monkeypatch):
    """One energy evaluation per start at the beginning and one per step it takes: starts
    that have converged are not evaluated again."""
    task = group_task(build_group("Z7").table)
    rows = []
    original = batched_ascent.grid_energy_and_gradient

    def counting(w, grid, act):
        rows.append(w.shape[0])
        return original(w, grid, act)

    monkeypatch.setattr(batched_ascent, "grid_energy_and_gradient", counting)
    w0 = torch.randn(10, 14, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    result = ascend_sphere_active(w0, task, activation("x2"), 0.4 / 7, 5000, 1e4 * U * 7)
    assert sum(rows) == 10 + int(result.start_steps.sum())
    assert int(result.start_steps.min()) < int(result.start_steps.max())


def test_a_converged_start_takes_no_step_and_max_steps_stops_the_rest():
    task = group_task(build_group("Z7").table)
    act, lr, gtol = activation("x2"), 0.4 / 7, 1e4 * U * 7
    w0 = torch.randn(3, 14, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    done = ascend_sphere_active(w0, task, act, lr, 5000, gtol)
    again = ascend_sphere_active(torch.cat([done.w[:1], w0[1:]]), task, act, lr, 2, gtol)
    assert again.start_steps.tolist() == [0, 2, 2]
    assert again.converged.tolist() == [True, False, False]
    assert again.steps == 2


@pytest.mark.parametrize("kwargs, match", [
    ({"lr": 0.0}, "lr"), ({"max_steps": 0}, "max_steps"), ({"gtol": -1.0}, "gtol"),
    ({"chunk_elements": 0}, "chunk_elements"), ({"w0": torch.ones(2, 13)}, "w0"),
])
def test_bad_inputs_name_the_parameter(kwargs, match):
    task = group_task(build_group("Z7").table)
    arguments = {"w0": torch.ones(2, 14, dtype=torch.float64), "lr": 0.05, "max_steps": 10,
                 "gtol": 1e-8, **kwargs}
    with pytest.raises(ValueError, match=match):
        ascend_sphere_active(arguments.pop("w0"), task, activation("x2"), **arguments)


def test_non_finite_start_raises_diverged():
    task = group_task(build_group("Z7").table)
    w0 = torch.ones(2, 14, dtype=torch.float64)
    w0[1, 3] = math.nan
    with pytest.raises(Diverged, match="non-finite"):
        ascend_sphere_active(w0, task, activation("x2"), 0.05, 10, 1e-8)
