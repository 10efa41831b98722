r"""Point functions of Li2's top-layer training claims (``li2.fig14-zero-init``,
``li2.fig10-ridge-top``): one configuration with its seeds on the batch axis, JSON parameters
in, JSON data out, in the convention of :mod:`numerics.li2.sweep_points` (whose
:func:`~numerics.li2.sweep_points.encode` / :func:`~numerics.li2.sweep_points.decode` records
they use), so ``verify.sweep.run_sweep`` can run them in this process or on a Dask worker.

* :func:`top_layer_grokking_point`: the two-layer network with a trained top layer (its
  initial scale ``top_init``; 0 gives :math:`V(0)=0`) or a ridge top layer (``top_layer``
  ``"ridge"``, the author's ``set_weight_reg``), or the deep residual network of §6
  (``layers`` >= 2 hidden layers, :class:`numerics.li2.deep_group_network.DeepGroupTrainer`),
  trained in chunks until every run has reached every test-accuracy threshold or the budget is
  spent; its grokking times (:func:`earliest_crossing`: whether every run started below the
  thresholds, so that the times have ratios).
* :func:`complex_grokking_point` (``li2.fig11-complex``): the same record for the code's
  complex-weight two-layer network, with the size of its imaginary parts at the end.
* :func:`depth_grokking_point` (``li2.sec6-deep``, Fig. 9): the same record for the deep
  network of §6 at one depth, with each layer's irrep purity at the start and at the end.

And the paired comparison both claims make of two such configurations, run on the same seeds
(the same first-layer initialisation and split per seed): :func:`paired_log_ratio` (per seed
:math:`\log(t_a/t_b)`, with the side on which a censored time bounds it, and a Student-t
interval over seeds), :func:`slope_of_log_ratios` (its per-seed slope along a grid, e.g. the
training fraction) and :func:`decide_direction` (a stated sign against the interval).

Censoring. A run that never reaches the threshold within the budget records the budget, a
lower bound of its time (:mod:`numerics.li2.grokking_time`). Then :math:`\log(t_a/t_b)` is a
lower bound where only :math:`t_a` is censored, an upper bound where only :math:`t_b` is, and
no bound where both are. A sign is decided only from values that bound it on the side the
decision needs (every seed exact, or a bound in that direction); the interval is then that of
the bounds, as in ``li2.sec7-predictions``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from numerics.li2.complex_weights import ComplexGroupTrainer
from numerics.li2.deep_group_network import DeepConfig, DeepGroupTrainer
from numerics.li2.grokking_time import (
    EXACT,
    LOWER,
    UNBOUNDED,
    UPPER,
)
from numerics.li2.sweep_points import _dtype, decode, encode, grokking_record
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec


def _trainer(point: Mapping[str, Any]) -> GroupTrainer | DeepGroupTrainer:
    hyper = Hyper.batch(seed=list(point["seeds"]), p=point["p"], eta=point["eta"],
                        lr=point["lr"], top_init=point["top_init"])
    optimizer = OptimizerSpec(point["optimizer"])
    dtype = _dtype(point["dtype"])
    if point["layers"] == 1:
        config = TrainConfig(K=point["K"], activation=point["activation"], loss=point["loss"],
                             optimizer=optimizer, top_layer=point["top_layer"],
                             ridge_lambda=point["ridge_lambda"],
                             eval_every=point["eval_every"], diag_every=point["eval_every"],
                             diagnostics=())
        return GroupTrainer(point["table"], hyper, config, device=point["device"], dtype=dtype)
    if point["top_layer"] != "trained":
        raise ValueError("top_layer: the deep network has only a trained top layer")
    config = DeepConfig(K=point["K"], layers=point["layers"], activation=point["activation"],
                        residual=True, loss=point["loss"], optimizer=optimizer)
    return DeepGroupTrainer(point["table"], hyper, config, eval_every=point["eval_every"],
                            device=point["device"], dtype=dtype)


def top_layer_grokking_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration on the group ``table`` with its ``seeds`` on the batch axis: ``layers``
    (1: the two-layer network; more: that many residual hidden layers), ``K``, ``activation``,
    ``loss``, ``optimizer``, ``p``, ``eta``, ``lr``, ``top_init``, ``top_layer``
    (``"trained"`` or ``"ridge"``), ``ridge_lambda``; test accuracy every ``eval_every``
    epochs, trained in chunks of ``chunk`` until every run has reached every threshold or
    ``budget`` epochs have run (:func:`numerics.li2.grokking_time.train_until`). Returns
    whether the final training losses are finite, the final training accuracy and loss, and
    per threshold (in the order of ``thresholds``) the grokking times, their censoring, the
    run's length and the logging interval."""
    return grokking_record(_trainer(point).train, point)


#: What :func:`earliest_crossing` > 0 establishes, under the name the claims record it.
BELOW_AT_START = "every run starts below each test-accuracy threshold"


def earliest_crossing(results: Sequence[Mapping[str, Any]]) -> float:
    """The earliest grokking time over every run and threshold of the results of
    :func:`top_layer_grokking_point`: 0 when some run's test accuracy was at a threshold
    before any step (a test set so small that chance reaches it), where no time ratio is
    defined."""
    return min(float(decode(g["epochs"]).min()) for r in results for g in r["times"])


# --- the paired comparison ------------------------------------------------------------------

@dataclass(frozen=True)
class PairedRatio:
    """Per seed a value (a log ratio of grokking times, or its slope along a grid) and the side
    on which it bounds the true one (``EXACT``, ``LOWER``, ``UPPER``, ``UNBOUNDED`` of
    :mod:`numerics.li2.grokking_time`); their mean and two-sided Student-t interval at
    ``level`` (``S - 1`` degrees of freedom)."""

    values: np.ndarray
    sides: np.ndarray
    mean: float
    interval: tuple[float, float]
    level: float

    def as_record(self) -> dict[str, Any]:
        """The mean, interval, per-seed values and sides as JSON data."""
        return {"mean": self.mean, "interval": list(self.interval),
                "per_seed": self.values.tolist(), "sides": self.sides.tolist()}

    @property
    def ratio(self) -> tuple[float, tuple[float, float]]:
        """The geometric-mean ratio and its interval (``exp`` of the mean and interval)."""
        lo, hi = self.interval
        return math.exp(self.mean), (math.exp(lo), math.exp(hi))


def _summary(values: np.ndarray, sides: np.ndarray, level: float) -> PairedRatio:
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"values: need >= 2 seeds, got shape {values.shape}")
    mean = float(values.mean())
    half = float(stats.t.ppf(0.5 + level / 2, df=values.size - 1) * values.std(ddof=1)
                 / math.sqrt(values.size))
    return PairedRatio(values, sides, mean, (mean - half, mean + half), level)


def ratio_sides(censored_a: Any, censored_b: Any) -> np.ndarray:
    r"""Per seed, the side on which the recorded :math:`\log(t_a/t_b)` bounds the true one."""
    a, b = np.asarray(censored_a, bool), np.asarray(censored_b, bool)
    sides = np.full(a.shape, EXACT)
    sides[a & ~b], sides[~a & b], sides[a & b] = LOWER, UPPER, UNBOUNDED
    return sides


def paired_log_ratio(t_a: Any, censored_a: Any, t_b: Any, censored_b: Any, level: float
                     ) -> PairedRatio:
    r""":math:`\log(t_a/t_b)` per seed (``(S,)`` times in epochs, > 0) and its interval."""
    a, b = np.asarray(t_a, np.float64), np.asarray(t_b, np.float64)
    if a.shape != b.shape or not (np.all(a > 0) and np.all(b > 0)):
        raise ValueError("t_a, t_b: positive times of the same shape (S,)")
    return _summary(np.log(a / b), ratio_sides(censored_a, censored_b), level)


def slope_of_log_ratios(x: Sequence[float], ratios: Sequence[PairedRatio], level: float
                        ) -> PairedRatio:
    r"""Per seed, the least-squares slope of the log ratios (one :class:`PairedRatio` per grid
    point, the same seeds) on :math:`\log x`, and its interval. The slope is
    :math:`\sum_g c_gy_g` with :math:`c_g\propto\log x_g-\overline{\log x}`, so a bound
    :math:`y_g` bounds it on its own side where :math:`c_g>0` and on the other where
    :math:`c_g<0`; a seed whose bounds pull both ways is ``UNBOUNDED``."""
    lx = np.log(np.asarray(x, np.float64))
    if lx.size < 2 or len(ratios) != lx.size:
        raise ValueError("x: need >= 2 grid points, one PairedRatio each")
    c = lx - lx.mean()
    Y = np.stack([r.values for r in ratios], 1)                    # (S, G)
    slopes = Y @ c / float(c @ c)
    flip = {LOWER: UPPER, UPPER: LOWER}
    sides = np.full(Y.shape[0], EXACT)
    for s in range(Y.shape[0]):
        pulls = set()
        for g, r in enumerate(ratios):
            side = int(r.sides[s])
            if side == EXACT or c[g] == 0:
                continue
            pulls.add(UNBOUNDED if side == UNBOUNDED else side if c[g] > 0 else flip[side])
        sides[s] = pulls.pop() if len(pulls) == 1 else (UNBOUNDED if pulls else EXACT)
    return _summary(slopes, sides, level)


def decide_direction(pr: PairedRatio, direction: float) -> tuple[bool | None, float, str]:
    """The stated sign of the mean (``direction`` > 0: positive) against the interval:
    ``(True, 0, ...)`` when the whole interval lies on the stated side and every seed's value
    is exact or bounds it towards 0 from that side; ``(False, gap, ...)`` when it lies on the
    other side (``gap``: how far beyond 0) with every bound on that side; else ``(None, nan,
    why)``."""
    s = 1.0 if direction > 0 else -1.0
    lo, hi = (s * v for v in pr.interval)
    lo, hi = min(lo, hi), max(lo, hi)
    toward = {LOWER, EXACT} if s > 0 else {UPPER, EXACT}      # bounds that cannot overstate
    away = {UPPER, EXACT} if s > 0 else {LOWER, EXACT}
    sides = {int(v) for v in pr.sides}
    shown = f"[{pr.interval[0]:.3f}, {pr.interval[1]:.3f}]"
    if lo > 0 and sides <= toward:
        return True, 0.0, f"the {pr.level:.0%} interval {shown} lies on the stated side"
    if hi < 0 and sides <= away:
        return False, -hi, f"the {pr.level:.0%} interval {shown} lies on the other side"
    if sides == {UNBOUNDED}:
        return None, math.nan, "every seed's two runs are censored: no bound on either side"
    if lo > 0 or hi < 0:
        return None, math.nan, (f"the interval {shown} excludes 0, but censored runs bound "
                                f"the values only on the other side")
    return None, math.nan, (f"the {pr.level:.0%} interval {shown} contains 0: the sign is not "
                            f"resolved with these {pr.values.size} seeds")


def complex_grokking_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """The code's complex-weight two-layer network
    (:class:`numerics.li2.complex_weights.ComplexGroupTrainer`) at the point's configuration
    (the keys of :func:`top_layer_grokking_point` for ``layers`` 1 and a trained top layer;
    ``activation`` must be ``"x2"``): the same record, and ``imaginary`` (:func:`encode`d,
    ``(B,)``), the largest :math:`|\\Im|` of any weight at the end."""
    hyper = Hyper.batch(seed=list(point["seeds"]), p=point["p"], eta=point["eta"],
                        lr=point["lr"], top_init=point["top_init"])
    config = TrainConfig(K=point["K"], activation=point["activation"], loss=point["loss"],
                         optimizer=OptimizerSpec(point["optimizer"]),
                         eval_every=point["eval_every"], diag_every=point["eval_every"],
                         diagnostics=())
    trainer = ComplexGroupTrainer(point["table"], hyper, config, device=point["device"],
                                  dtype=_dtype(point["dtype"]))
    return {**grokking_record(trainer.train, point),
            "imaginary": encode(trainer.imaginary_size())}


def depth_grokking_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """The deep network of §6 (:class:`numerics.li2.deep_group_network.DeepGroupTrainer`,
    ``layers`` hidden layers, ``residual``, ``K``, ``activation``, ``optimizer``, ``loss``) on
    the group ``table`` with its ``seeds`` on the batch axis (``p``, ``eta``, ``lr``,
    ``top_init``), trained as :func:`top_layer_grokking_point` trains; the same record, and
    each layer's irrep purity (``projectors``, an :func:`encode` record) at the start and at
    the end (``purity_start``, ``purity_end``: ``(B, L)``; ``purity_epoch``: the last
    epoch)."""
    hyper = Hyper.batch(seed=list(point["seeds"]), p=point["p"], eta=point["eta"],
                        lr=point["lr"], top_init=point["top_init"])
    config = DeepConfig(K=point["K"], layers=point["layers"], activation=point["activation"],
                        residual=point["residual"], loss=point["loss"],
                        optimizer=OptimizerSpec(point["optimizer"]))
    # purity at the start and at the end of each chunk only (the end of a train call)
    trainer = DeepGroupTrainer(point["table"], hyper, config,
                               projectors=decode(point["projectors"]),
                               eval_every=point["eval_every"], purity_every=point["budget"] + 1,
                               device=point["device"], dtype=_dtype(point["dtype"]))
    record = grokking_record(trainer.train, point)
    epochs, purity = trainer.history.series("purity")
    return {**record, "purity_start": encode(purity[0]), "purity_end": encode(purity[-1]),
            "purity_epoch": int(epochs[-1])}
