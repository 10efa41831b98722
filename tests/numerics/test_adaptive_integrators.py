"""numerics.adaptive_integrators: the order of the embedded pairs, agreement with scipy's
solve_ivp (same controller), per-trajectory independence, compaction, and the guards."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from numerics.adaptive_integrators import (
    BOGACKI_SHAMPINE,
    DOP853,
    DORMAND_PRINCE,
    EmbeddedPair,
    integrate_adaptive,
)
from numerics.errors import Diverged
from numerics.ns.steepest_flows import ProductFlow, default_regression
from verify.error_trends import fit_trend, geometric_grid

U = torch.finfo(torch.float64).eps / 2  # unit roundoff


def rotation_field(a: torch.Tensor, w: torch.Tensor):
    r""":math:`\dot y = \begin{pmatrix}-a&-\omega\\\omega&-a\end{pmatrix}y` with rates ``a``,
    ``w`` per trajectory (``y``: ``(B, 2)``): elementwise in the batch."""
    def field(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.stack([-a * y[:, 0] - w * y[:, 1], w * y[:, 0] - a * y[:, 1]], 1)

    return field


def damped_rotation(seed: int, trajectories: int):
    r"""Rates, initial states and the exact solution :math:`e^{-at}R(\omega t)y_0` of a batch
    of damped rotations."""
    g = torch.Generator().manual_seed(seed)
    a = 0.1 + 0.9 * torch.rand(trajectories, generator=g, dtype=torch.float64)
    w = 1 + 2 * torch.rand(trajectories, generator=g, dtype=torch.float64)
    y0 = torch.randn(trajectories, 2, generator=g, dtype=torch.float64)

    def exact(T: float) -> torch.Tensor:
        c, s, decay = torch.cos(w * T), torch.sin(w * T), torch.exp(-a * T)
        return decay[:, None] * torch.stack([c * y0[:, 0] - s * y0[:, 1],
                                             s * y0[:, 0] + c * y0[:, 1]], 1)

    return a, w, y0, exact


def tolerance_trends(pair: EmbeddedPair, tolerances: np.ndarray, seed: int = 3):
    """Fitted log-log trends of the global error and of the accepted steps against the
    tolerance (rtol = atol), over six trajectories (the seeds of the fit) in one batch."""
    a, w, y0, exact = damped_rotation(seed, 6)
    field, T = rotation_field(a, w), 5.0
    errors, steps = [], []
    for tol in tolerances:
        result = integrate_adaptive(field, y0, T, rtol=float(tol), atol=float(tol),
                                    method=pair)
        errors.append((result.final - exact(T)).abs().amax(1))
        steps.append(result.accepted.double())
    errors, steps = torch.stack(errors, 1), torch.stack(steps, 1)
    # Roundoff floor of the global error: each accepted step rounds each component once.
    return fit_trend(tolerances, errors, floors=8 * U * steps), fit_trend(tolerances, steps)


@pytest.mark.parametrize("pair, loosest, tightest", [(DORMAND_PRINCE, 1e-4, 1e-10),
                                                     (DOP853, 1e-5, 1e-12),
                                                     (BOGACKI_SHAMPINE, 1e-3, 1e-8)])
def test_order_of_each_pair_on_a_linear_ode(pair, loosest, tightest):
    r"""With error-per-step control the step is :math:`h\propto\mathrm{tol}^{1/(\hat p+1)}`
    (the embedded estimate is :math:`O(h^{\hat p+1})`), so the number of steps grows like
    :math:`\mathrm{tol}^{-1/(\hat p+1)}`, and the propagated solution of order :math:`p=\hat
    p+1` has a global error :math:`\propto N h^{p+1}\propto\mathrm{tol}`: slope 1. Together
    the two slopes give the order, :math:`p = -1/\text{(steps slope)}`: 5 for Dormand–Prince,
    8 for DOP853 and 3 for Bogacki–Shampine (steps slopes -1/5, -1/8, -1/3: distinct within
    the bend allowance). Each interval is widened by its own fit's bend allowance (the step
    count carries an additive constant, the first and the last truncated step, which bends
    its line at the loosest tolerances)."""
    error_fit, steps_fit = tolerance_trends(pair, geometric_grid(loosest, tightest, 7))
    lo, hi = error_fit.interval
    assert lo - error_fit.bend <= 1.0 <= hi + error_fit.bend, error_fit.figure(1.0)
    expected = -1.0 / (pair.error_order + 1)
    lo, hi = steps_fit.interval
    assert lo - steps_fit.bend <= expected <= hi + steps_fit.bend, steps_fit.figure(expected)
    # p = -1/slope, monotone on negative slopes: the widened slope interval maps onto p's
    assert -1.0 / (lo - steps_fit.bend) <= pair.order <= -1.0 / (hi + steps_fit.bend)


def test_order_check_rejects_a_planted_first_order_pair():
    """The same check fails for Dormand–Prince with two solution weights moved by 1e-2 (still
    consistent, sum b = 1, but only first order): the error no longer falls like tol."""
    b = list(DORMAND_PRINCE.b)
    b[0], b[2] = b[0] + 1e-2, b[2] - 1e-2
    wrong = dataclasses.replace(DORMAND_PRINCE, name="planted", b=tuple(b))
    error_fit, _ = tolerance_trends(wrong, geometric_grid(1e-4, 1e-8, 5))
    assert error_fit.interval[1] + error_fit.bend < 1.0, error_fit.figure(1.0)


@pytest.mark.parametrize("method, scipy_method", [("dopri5", "RK45"), ("dop853", "DOP853")])
def test_reproduces_scipy_on_a_steepest_flow(method, scipy_method):
    """Same pair, same controller, same starting step: per initialisation the batch needs
    exactly scipy's number of field evaluations and ends where scipy ends, to far below the
    tolerance (the two differ only in the order of the stage sums)."""
    generator = torch.Generator().manual_seed(0)
    problem, _ = default_regression(generator)
    B, L, d = 6, 3, problem.A.shape[1]
    W0 = (0.25 + 0.5 * torch.rand(L, B, d, generator=generator, dtype=torch.float64)) \
        * (2 * torch.randint(0, 2, (L, B, d), generator=generator) - 1)
    flow = ProductFlow(problem.grad, 2.0, torch.ones(L, B, 1, dtype=torch.float64))
    tol, T = 1e-8, 10.0
    batched = integrate_adaptive(flow, W0, T, rtol=tol, atol=tol, batch_dim=1, method=method)
    one = ProductFlow(problem.grad, 2.0, torch.ones(L, 1, 1, dtype=torch.float64))

    def rhs(t: float, state: np.ndarray) -> np.ndarray:
        W = torch.from_numpy(state).reshape(L, 1, d)
        return one(t, W).reshape(-1).numpy()

    for b in range(B):
        start = W0[:, b].reshape(-1).numpy()
        sol = solve_ivp(rhs, (0.0, T), start, method=scipy_method, rtol=tol, atol=tol)
        assert sol.success
        assert int(batched.evaluations[b]) == sol.nfev
        gap = np.abs(batched.final[:, b].reshape(-1).numpy() - sol.y[:, -1]).max()
        # Rounding of the stage sums (~1e-16 a step) over ~100 steps, far below tol.
        assert gap <= 1e-12


def assert_same_trajectory(a: torch.Tensor, b: torch.Tensor, steps: int) -> None:
    """Equal up to an ulp in each step size: torch's vectorised and scalar powers (the step
    factor) may round differently by position in the batch. Each step then perturbs a damped
    rotation's state by a few u relative, and the perturbations add up over the steps at most
    (the flow does not expand)."""
    torch.testing.assert_close(a, b, rtol=0, atol=16 * U * max(steps, 1))


def test_a_batch_gives_each_trajectory_as_if_alone():
    """Each trajectory's arithmetic uses only its own entries (elementwise field): the same
    step counts and the same end state up to rounding as a run of it alone, with its own
    end time."""
    a, w, y0, _ = damped_rotation(5, 5)
    t_end = torch.tensor([0.5, 3.0, 0.0, 7.0, 2.0], dtype=torch.float64)
    batch = integrate_adaptive(rotation_field(a, w), y0, t_end, rtol=1e-7, atol=1e-9)
    for b in range(5):
        one = slice(b, b + 1)
        single = integrate_adaptive(rotation_field(a[one], w[one]), y0[one], float(t_end[b]),
                                    rtol=1e-7, atol=1e-9)
        assert int(single.accepted[0]) == int(batch.accepted[b])
        assert_same_trajectory(single.final[0], batch.final[b], int(batch.accepted[b]))
        assert int(single.rejected[0]) == int(batch.rejected[b])
    assert torch.equal(batch.final[2], y0[2]) and int(batch.accepted[2]) == 0


@settings(max_examples=8)
@given(seed=st.integers(0, 2**31 - 1), trajectories=st.integers(2, 9),
       exponent=st.floats(4.0, 9.0), compact_below=st.floats(0.3, 0.95))
def test_leaving_the_batch_changes_nothing(seed, trajectories, exponent, compact_below):
    """With ``restrict`` finished trajectories leave the batch: every trajectory still gets
    the same steps and the same end state up to rounding."""
    a, w, y0, _ = damped_rotation(seed, trajectories)
    g = torch.Generator().manual_seed(seed + 1)
    t_end = 4 * torch.rand(trajectories, generator=g, dtype=torch.float64)
    tol = 10.0**-exponent
    full = integrate_adaptive(rotation_field(a, w), y0, t_end, rtol=tol, atol=tol)
    kept = []

    def restrict(index: torch.Tensor):
        kept.append(index.clone())
        return rotation_field(a[index], w[index])

    compacted = integrate_adaptive(rotation_field(a, w), y0, t_end, rtol=tol, atol=tol,
                                   restrict=restrict, compact_below=compact_below)
    assert torch.equal(full.accepted, compacted.accepted)
    assert_same_trajectory(full.final, compacted.final, int(full.accepted.max()))
    assert torch.equal(full.rejected, compacted.rejected)
    assert compacted.field_calls == full.field_calls  # the slowest trajectory sets both
    for before, after in zip([torch.arange(trajectories)] + kept, kept):
        # each restriction keeps a strict subset, in order
        assert after.numel() < before.numel() and bool(torch.isin(after, before).all())
        assert bool((after[1:] > after[:-1]).all())
    finished = t_end <= 0
    assert bool((full.accepted[finished] == 0).all())


def test_product_flow_batch_matches_single_runs():
    """The steepest flow's gradient is a matrix product, whose rounding may depend on the
    batch size: a batch with compaction matches single runs to rounding, with the same
    steps."""
    generator = torch.Generator().manual_seed(1)
    problem, _ = default_regression(generator)
    B, L, d = 5, 2, problem.A.shape[1]
    W0 = 0.5 + 0.5 * torch.rand(L, B, d, generator=generator, dtype=torch.float64)
    mask = torch.ones(L, B, 1, dtype=torch.float64)
    flow = ProductFlow(problem.grad, 2.0, mask)
    batch = integrate_adaptive(flow, W0, 5.0, rtol=1e-9, atol=1e-9, batch_dim=1,
                               restrict=lambda i: dataclasses.replace(flow, mask=mask[:, i]))
    for b in range(B):
        single = integrate_adaptive(dataclasses.replace(flow, mask=mask[:, b:b + 1]),
                                    W0[:, b:b + 1], 5.0, rtol=1e-9, atol=1e-9, batch_dim=1)
        assert int(single.accepted[0]) == int(batch.accepted[b])
        # ~1e-16 of rounding a step over ~50 steps, amplified by at most the flow's growth.
        torch.testing.assert_close(single.final[:, 0], batch.final[:, b], rtol=1e-13, atol=0)


def test_blow_up_raises_diverged():
    r""":math:`\dot y = y^2`, :math:`y(0)=1` blows up at :math:`t=1`: the steps shrink to
    10 ulps of t before t = 2."""
    with pytest.raises(Diverged, match="step size below 10 ulps"):
        integrate_adaptive(lambda t, y: y * y, torch.ones(3, 1, dtype=torch.float64), 2.0,
                           rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("method", ["dopri5", "dop853", "bosh3"])
def test_non_finite_field_is_reported(method):
    """A field that returns NaN beyond y = 2 stalls the trajectory that gets there, and the
    message says the field was NaN/Inf."""
    def field(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(y > 2, torch.full_like(y, math.nan), torch.ones_like(y))

    with pytest.raises(Diverged, match="1 trajectory stalled.*NaN/Inf"):
        integrate_adaptive(field, torch.tensor([[0.0], [1.5]], dtype=torch.float64), 1.0,
                           rtol=1e-6, atol=1e-9, method=method)
    with pytest.raises(Diverged, match="non-finite at the initial state"):
        integrate_adaptive(field, torch.tensor([[3.0]], dtype=torch.float64), 1.0,
                           rtol=1e-6, atol=1e-9, method=method)


def test_max_steps_guard():
    a, w, y0, _ = damped_rotation(0, 3)
    with pytest.raises(Diverged, match="3 trajectories stalled: 5 steps without reaching"):
        integrate_adaptive(rotation_field(a, w), y0, 50.0, rtol=1e-10, atol=1e-10, max_steps=5)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "rk4"}, "method"),
    ({"rtol": 1e-16}, "rtol"),
    ({"rtol": math.nan}, "rtol"),
    ({"atol": 0.0}, "atol"),
    ({"batch_dim": 2}, "batch_dim"),
    ({"max_steps": 0}, "max_steps"),
    ({"compact_below": 1.0}, "compact_below"),
    ({"t_end": -1.0}, "t_end"),
    ({"t_end": torch.ones(2, dtype=torch.float64)}, "t_end"),
    ({"y0": torch.tensor([[math.inf, 0.0]], dtype=torch.float64)}, "y0"),
    ({"y0": torch.zeros(3, 2, dtype=torch.long)}, "y0"),
])
def test_bad_inputs_name_the_parameter(kwargs, match):
    a, w, y0, _ = damped_rotation(0, 3)
    field = rotation_field(a, w)
    arguments = {"y0": y0, "t_end": 1.0, "rtol": 1e-6, "atol": 1e-9, **kwargs}
    with pytest.raises(ValueError, match=match):
        integrate_adaptive(field, arguments.pop("y0"), arguments.pop("t_end"), **arguments)


def test_bad_tableau_is_rejected():
    with pytest.raises(ValueError, match="error weights"):
        dataclasses.replace(DORMAND_PRINCE, e=DORMAND_PRINCE.e[:-1])
