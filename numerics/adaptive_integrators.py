r"""Adaptive explicit Runge–Kutta integration of a batch of independent ODEs
:math:`\dot y_b = f(t_b, y_b)`, each trajectory :math:`b` with its own step size and time.

An embedded pair advances :math:`y` with weights :math:`b` (order :math:`p`) and estimates the
local error with :math:`\hat b` (order :math:`\hat p`): :math:`\mathrm{err}=h\sum_j(b_j-\hat
b_j)k_j`, including the first-same-as-last stage :math:`k = f(t+h, y_{\rm new})`. The control is
scipy's ``solve_ivp`` for RK45, DOP853 and RK23 (Hairer, Nørsett & Wanner, *Solving ODEs I*,
§II.4), applied per trajectory: the error norm is the root mean square of
:math:`\mathrm{err}/(\mathrm{atol}+\mathrm{rtol}\max(|y|,|y_{\rm new}|))` over the trajectory's
components (DOP853 combines two estimates, see :class:`EmbeddedPair`); a step is accepted
when it is below 1, and the next step is
:math:`h\cdot\min(10,\max(0.2,\,0.9\,\|\mathrm{err}\|^{-1/(\hat p+1)}))` (at most :math:`h`
right after a rejection). The first step is Hairer's starting-step algorithm, as in scipy.

All trajectories advance together, one tensor operation per stage: a finished trajectory rides
along with a zero step (or leaves the batch, see ``restrict``), a rejected one keeps its state
and retries with a smaller step. The arithmetic of one trajectory involves only that
trajectory's entries, so a batch reproduces each trajectory run alone: the same steps, and the
same states up to rounding. Not always to the bit: torch's vectorised power in the step-size
factor can round differently from its scalar one by an ulp, depending on where the trajectory
sits in the batch (as can a field's own batched operations, e.g. a matrix product).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.errors import Diverged

#: ``field(t, y)``: ``t`` holds each trajectory's time, shaped to broadcast against ``y`` (the
#: batch size on the batch axis, 1 elsewhere); a field that does not depend on time ignores it.
BatchedField = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# scipy.integrate's RungeKutta step-size controller (scipy/integrate/_ivp/rk.py).
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0


@dataclass(frozen=True)
class EmbeddedPair:
    r"""The Butcher tableau of an embedded pair whose last evaluation, at the new state, is
    the next step's first: nodes ``c``, the rows ``a`` (row :math:`i` weighs
    :math:`k_0..k_{i-1}`), solution weights ``b`` (order ``order``) and error weights ``e``
    :math:`= b-\hat b` (one entry more, for :math:`f(t+h,y_{\rm new})`); ``error_order`` is
    :math:`\hat p`, the order the step-size control assumes for the error estimate.

    ``e3``: a second, lower-order estimate (DOP853's 3rd-order one). The error norm is then
    Hairer's :math:`h\,\|\epsilon_5\|^2/\sqrt{\|\epsilon_5\|^2+0.01\|\epsilon_3\|^2}`
    (RMS norms of :math:`\sum_je_jk_j` and :math:`\sum_je_{3,j}k_j` over the scale), instead
    of the RMS norm of :math:`h\sum_je_jk_j` over the scale."""

    name: str
    order: int
    error_order: int
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...]
    e3: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        s = len(self.c)
        if not (len(self.a) == s and all(len(row) == i for i, row in enumerate(self.a))
                and len(self.b) == s and len(self.e) == s + 1
                and (self.e3 is None or len(self.e3) == s + 1)):
            raise ValueError(f"{self.name}: a tableau of {s} stages needs rows a[i] of i "
                             f"entries, {s} weights b and {s + 1} error weights e (and e3)")
        if not (isinstance(self.error_order, int) and self.error_order >= 1):
            raise ValueError(f"error_order: {self.error_order!r} must be an integer >= 1")

    @property
    def stages(self) -> int:
        """Field evaluations per step (the last one is at the new state, reused next step)."""
        return len(self.c)


#: Dormand & Prince (1980), 5(4): scipy's RK45.
DORMAND_PRINCE = EmbeddedPair(
    "dopri5", 5, 4,
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
    a=((),
       (1 / 5,),
       (3 / 40, 9 / 40),
       (44 / 45, -56 / 15, 32 / 9),
       (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
       (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656)),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    e=(-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40))

#: Bogacki & Shampine (1989), 3(2): scipy's RK23.
BOGACKI_SHAMPINE = EmbeddedPair(
    "bosh3", 3, 2,
    c=(0.0, 1 / 2, 3 / 4),
    a=((), (1 / 2,), (0.0, 3 / 4)),
    b=(2 / 9, 1 / 3, 4 / 9),
    e=(5 / 72, -1 / 12, -1 / 9, 1 / 8))

#: Dormand & Prince's 8(5,3) (Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.10): scipy's
#: DOP853. Its error norm combines a 5th- and a 3rd-order estimate (:class:`EmbeddedPair`).
DOP853 = EmbeddedPair(
    "dop853", 8, 7,
    c=(0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726,
       0.3333333333333333, 0.25, 0.3076923076923077, 0.6512820512820513, 0.6,
       0.8571428571428571, 1.0),
    a=((),
       (0.05260015195876773,),
       (0.0197250569845379, 0.0591751709536137),
       (0.02958758547680685, 0.0, 0.08876275643042054),
       (0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792),
       (0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242),
       (0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125),
       (0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328,
        -0.015319437748624402, 0.008273789163814023),
       (0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726,
        27.59209969944671, 20.154067550477894, -43.48988418106996),
       (0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843,
        21.230051448181193, 15.279233632882423, -33.28821096898486, -0.020331201708508627),
       (-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295,
        -8.149787010746927, -18.52006565999696, 22.739487099350505, 2.4936055526796523,
        -3.0467644718982196),
       (2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625,
        -17.9589318631188, 27.94888452941996, -2.8589982771350235, -8.87285693353063,
        12.360567175794303, 0.6433927460157636)),
    b=(0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
       -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034,
       0.04471061572777259),
    e=(0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502,
       1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571,
       -0.022355307863886294, 0.0),
    e3=(-0.18980075407240762, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
        -5.801203960010585, -0.4226823213237919, -0.1521609496625161, 0.20136540080403034,
        0.02265179219836082, 0.0))

PAIRS = {p.name: p for p in (DORMAND_PRINCE, BOGACKI_SHAMPINE, DOP853)}


@dataclass(frozen=True)
class AdaptiveResult:
    """``final``: each trajectory's state at its end time (shaped like ``y0``); ``accepted``,
    ``rejected``: steps per trajectory ``(B,)``; ``evaluations``: field evaluations each
    trajectory needed (what a run of it alone would cost, ``(B,)``); ``field_calls``: batched
    calls of the field (each evaluates every trajectory, finished ones included)."""

    final: torch.Tensor
    accepted: torch.Tensor
    rejected: torch.Tensor
    evaluations: torch.Tensor
    field_calls: int


def _combine(weights: tuple[float, ...], ks: list[torch.Tensor]) -> torch.Tensor:
    r""":math:`\sum_j w_jk_j` over the nonzero weights, always in the same order (elementwise,
    so each trajectory's result does not depend on the rest of the batch)."""
    terms = [(w, k) for w, k in zip(weights, ks) if w != 0.0]
    w0, k0 = terms[0]
    total = k0 * w0
    for w, k in terms[1:]:
        total.add_(k, alpha=w)
    return total


def _initial_step(field: BatchedField, t: torch.Tensor, y: torch.Tensor, f0: torch.Tensor,
                  span: torch.Tensor, pair: EmbeddedPair, rtol: float, atol: float,
                  rms: Callable[[torch.Tensor], torch.Tensor],
                  per_trajectory: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """scipy's ``select_initial_step`` per trajectory (one batched field evaluation)."""
    scale = atol + y.abs() * rtol
    d0, d1 = rms(y / scale), rms(f0 / scale)
    h0 = torch.where((d0 < 1e-5) | (d1 < 1e-5), torch.full_like(d0, 1e-6), 0.01 * d0 / d1)
    h0 = torch.minimum(h0, span)
    # A trajectory with nothing to integrate (span 0) gets a dummy step; it is finished anyway.
    h0 = torch.where(h0 > 0, h0, torch.ones_like(h0))
    f1 = field(per_trajectory(t + h0), y + per_trajectory(h0) * f0)
    d2 = rms((f1 - f0) / scale) / h0
    flat = (d1 <= 1e-15) & (d2 <= 1e-15)
    h1 = torch.where(flat, torch.clamp(h0 * 1e-3, min=1e-6),
                     (0.01 / torch.maximum(d1, d2)) ** (1 / (pair.error_order + 1)))
    return torch.minimum(torch.minimum(100 * h0, h1), span)


def integrate_adaptive(field: BatchedField, y0: torch.Tensor, t_end: float | torch.Tensor, *,
                       rtol: float, atol: float, method: str | EmbeddedPair = "dopri5",
                       batch_dim: int = 0,
                       max_steps: int = 100_000,
                       restrict: Callable[[torch.Tensor], BatchedField] | None = None,
                       compact_below: float = 0.75) -> AdaptiveResult:
    r"""Integrate every trajectory of ``y0`` (the batch on axis ``batch_dim``) from
    :math:`t=0` to ``t_end`` (a number, or one end time per trajectory) with the embedded pair
    ``method`` (``"dopri5"``, ``"dop853"``, ``"bosh3"`` or an :class:`EmbeddedPair`) under the
    error control described in the module docstring, each trajectory with its own steps.

    ``restrict(index)``, if given, returns the field of the trajectories ``index`` (a long
    tensor of positions in ``y0``; e.g. a flow with per-trajectory parameters slices them).
    Finished trajectories then leave the batch whenever at most ``compact_below`` of it is
    still running, so the late steps cost only the trajectories still running. Without it
    finished trajectories ride along with a zero step to the end.

    Raises ``ValueError`` on bad arguments and :class:`~numerics.errors.Diverged` when a
    trajectory's step falls below 10 ulps of its time (a blow-up, a stiff or non-finite
    field: the message says whether the field returned NaN/Inf) or it has taken ``max_steps``
    steps (accepted plus rejected) without reaching its end time.
    """
    if not (isinstance(method, EmbeddedPair) or (isinstance(method, str) and method in PAIRS)):
        raise ValueError(f"method: {method!r} is not one of {', '.join(PAIRS)} nor an "
                         "EmbeddedPair")
    if not (isinstance(y0, torch.Tensor) and y0.is_floating_point() and y0.dim() >= 1):
        raise ValueError("y0: needs a floating-point tensor with a batch axis")
    if not -y0.dim() <= batch_dim < y0.dim():
        raise ValueError(f"batch_dim: {batch_dim} is not an axis of y0 (shape "
                         f"{tuple(y0.shape)})")
    if not bool(torch.isfinite(y0).all()):
        raise ValueError("y0: every entry must be finite")
    eps = torch.finfo(y0.dtype).eps
    if not (isinstance(rtol, (int, float)) and 100 * eps <= rtol < math.inf):
        raise ValueError(f"rtol: {rtol!r} must be a finite number >= 100 eps = {100 * eps:.1e}"
                         f" ({y0.dtype}); a tighter tolerance cannot be met through rounding")
    if not (isinstance(atol, (int, float)) and 0 < atol < math.inf):
        raise ValueError(f"atol: {atol!r} must be a finite number > 0")
    if not (isinstance(max_steps, int) and max_steps >= 1):
        raise ValueError(f"max_steps: {max_steps!r} must be an integer >= 1")
    if not 0 < compact_below < 1:
        raise ValueError(f"compact_below: {compact_below!r} must lie in (0, 1)")
    pair = method if isinstance(method, EmbeddedPair) else PAIRS[method]
    axis = batch_dim % y0.dim()
    B = y0.shape[axis]
    t_end = torch.as_tensor(t_end, dtype=torch.float64).to(y0.device)
    if t_end.dim() == 0:
        t_end = t_end.expand(B)
    if t_end.shape != (B,) or not bool((torch.isfinite(t_end) & (t_end >= 0)).all()):
        raise ValueError(f"t_end: needs a finite number >= 0 or {B} of them (one per "
                         f"trajectory), got shape {tuple(t_end.shape)}")
    shape = [1] * y0.dim()
    shape[axis] = -1
    others = [d for d in range(y0.dim()) if d != axis]

    def per_trajectory(v: torch.Tensor) -> torch.Tensor:
        """``(B,)`` to broadcast against the state, in its dtype."""
        return v.to(y0.dtype).view(shape)

    def rms(v: torch.Tensor) -> torch.Tensor:
        """Root mean square over each trajectory's components, ``(B,)`` float64."""
        squares = v.square()
        return (squares.mean(others) if others else squares).double().sqrt()

    calls = 0

    def evaluate(t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        nonlocal calls
        calls += 1
        return field(t, y)

    # The working batch: ``rows`` are the positions in y0 of its trajectories.
    rows = torch.arange(B, device=y0.device)
    y = y0
    t = torch.zeros(B, dtype=torch.float64, device=y0.device)
    f = evaluate(per_trajectory(t), y)
    if not bool(torch.isfinite(f).all()):
        raise Diverged(f"{pair.name}: the field is non-finite at the initial state")
    h = _initial_step(evaluate, t, y, f, t_end, pair, rtol, atol, rms, per_trajectory)
    done = t_end <= 0
    retry = torch.zeros(B, dtype=torch.bool, device=y0.device)
    nonfinite = torch.zeros_like(retry)  # whether the last try's error norm was NaN/Inf
    accepted = torch.zeros(B, dtype=torch.long, device=y0.device)
    rejected = torch.zeros_like(accepted)
    final, accepted_all, rejected_all = y0.clone(), accepted.clone(), rejected.clone()
    exponent = -1.0 / (pair.error_order + 1)
    while not bool(done.all()):
        live = ~done
        # scipy's floor: 10 ulps of t; a new step is raised to it, a retry below it fails.
        min_step = 10 * (torch.nextafter(t, torch.full_like(t, math.inf)) - t)
        too_small = live & retry & (h < min_step)
        if bool(too_small.any()):
            raise Diverged(_stalled(pair.name, "step size below 10 ulps of t", rows, t, h,
                                    too_small, nonfinite))
        h = torch.where(retry, h, torch.maximum(h, min_step))
        at_end = t + h >= t_end
        t_new = torch.where(at_end, t_end, t + h)
        step = torch.where(live, t_new - t, torch.zeros_like(t))
        h_b = per_trajectory(step)
        ks = [f]
        for c, row in zip(pair.c[1:], pair.a[1:]):
            ks.append(evaluate(per_trajectory(t + c * step),
                               torch.addcmul(y, h_b, _combine(row, ks))))
        y_new = torch.addcmul(y, h_b, _combine(pair.b, ks))
        ks.append(evaluate(per_trajectory(t_new), y_new))
        scale = torch.maximum(y.abs(), y_new.abs()).mul_(rtol).add_(atol)
        if pair.e3 is None:
            norm = rms(_combine(pair.e, ks).mul_(h_b).div_(scale))
        else:
            fifth = rms(_combine(pair.e, ks).div_(scale)).square()
            third = rms(_combine(pair.e3, ks).div_(scale)).square()
            denominator = (fifth + 0.01 * third).sqrt()
            # 0 where both estimates vanish (as scipy); NaN stays NaN, and is rejected.
            norm = torch.where(denominator == 0, torch.zeros_like(step),
                               step * fifth / denominator)
        nonfinite = ~torch.isfinite(norm)
        ok = live & (norm < 1)
        factor = SAFETY * norm ** exponent  # inf at norm 0: capped below
        factor = torch.where(torch.isnan(factor), torch.zeros_like(factor), factor)
        grow = torch.clamp(factor, max=MAX_FACTOR)
        grow = torch.where(retry, torch.clamp(grow, max=1.0), grow)
        h = torch.where(live, step * torch.where(ok, grow, torch.clamp(factor, min=MIN_FACTOR)),
                        h)
        ok_b = ok.view(shape)
        y = torch.where(ok_b, y_new, y)
        f = torch.where(ok_b, ks[-1], f)
        t = torch.where(ok, t_new, t)
        done = done | (ok & at_end)
        retry = live & ~ok
        accepted += ok
        rejected += retry
        over = ~done & (accepted + rejected >= max_steps)
        if bool(over.any()):
            raise Diverged(_stalled(pair.name, f"{max_steps} steps without reaching t_end", rows,
                                    t, h, over, nonfinite))
        running = int((~done).sum())
        if restrict is not None and 0 < running <= compact_below * rows.numel():
            final.index_copy_(axis, rows, y)
            accepted_all[rows], rejected_all[rows] = accepted, rejected
            keep = (~done).nonzero().flatten()
            y, f = y.index_select(axis, keep), f.index_select(axis, keep)
            t, h, t_end, retry, nonfinite, accepted, rejected, done, rows = (
                v[keep] for v in (t, h, t_end, retry, nonfinite, accepted, rejected, done, rows))
            field = restrict(rows)
    final.index_copy_(axis, rows, y)
    accepted_all[rows], rejected_all[rows] = accepted, rejected
    evaluations = 2 + pair.stages * (accepted_all + rejected_all)  # + f(0, y0), first step
    return AdaptiveResult(final, accepted_all, rejected_all, evaluations, calls)


def _stalled(method: str, what: str, rows: torch.Tensor, t: torch.Tensor, h: torch.Tensor,
             stuck: torch.Tensor, nonfinite: torch.Tensor) -> str:
    """The message of a :class:`Diverged`: how many trajectories, where, and whether the
    field was NaN/Inf at their last try."""
    i = int(stuck.nonzero()[0])
    first = int(rows[i])
    cause = (" (the field returned NaN/Inf at the last try)" if bool((stuck & nonfinite).any())
             else "")
    return (f"{method}: {int(stuck.sum())} trajector{'ies' if int(stuck.sum()) > 1 else 'y'} "
            f"stalled: {what}; e.g. trajectory {first} at t = {float(t[i]):.6g} with step "
            f"{float(h[i]):.3g}{cause}")
