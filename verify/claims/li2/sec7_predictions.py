r"""li2.sec7-predictions: §7 "When does grokking happen?", the qualitative predictions on the
grokking time, as fitted log-log slopes over seeds.

Routes. The paper's predictions, written as signs of :math:`\partial\log t/\partial\log x`
(and a slope of :math:`-1` for weight decay) (stated); batched full-batch training of the
two-layer network on :math:`\mathbb Z_M` (:class:`numerics.li2.trainer.GroupTrainer`,
measured) with the author's Adam: the grokking time :math:`t_a` (first logged epoch with test
accuracy :math:`\ge a`, :math:`a\in\{0.5, 0.99\}`, :mod:`numerics.li2.grokking_time`) along one
geometric grid per factor, every other factor at a base point (a star design; the base
configuration is shared). The weight-decay law is also checked under heavy-ball gradient
descent (the code's ``sgd``), the dynamics the §7 argument is derived for. Each seed's slope is
the least-squares slope of :math:`\log t` on :math:`\log x`, and the 95% Student-t interval over
seeds is :mod:`verify.error_trends`'s. Runs are batched per configuration (its seeds on the
batch axis), and each batch trains until all its runs have grokked or the budget is spent; each
configuration is one point of a sweep (:func:`numerics.li2.sweep_points.grokking_point`), so
``check --backend dask`` spreads them over a cluster and a rerun reuses the stored ones.

Decisions. A sign is confirmed when the whole interval lies on the stated side of 0, refuted
when it lies on the other side, undecided when it contains 0. The weight-decay slope uses
:func:`verify.error_trends.trend_evidence` (``bound="exact"``, the interval widened by the bend
allowance). Censored runs (no
grokking within the budget) enter with the budget as a lower bound of their time; the slope is
then a one-sided bound (:func:`numerics.li2.grokking_time.censoring_side`), used only on the side it
bounds: a decision the bound does not support is undecided, never guessed.

:math:`G_F` along the sweeps (the ICLR review points, SOURCES §1.1). Every configuration, and the
base one at :math:`\eta=0` (trained ``alignment.budget`` epochs; it need not grok), logs
:math:`\cos(G_F,\tilde Y\tilde Y^\top\tilde F)` and :math:`\|G_F\|` every
``alignment.every`` epochs through ``alignment.window``, then at each chunk's end
(:func:`numerics.li2.gradient_spectrum.alignment`; the training and its grokking times are
those of the unlogged run). Stated (Prop. 1, added for reviewer aGxx): early on :math:`G_F`
is dominated by :math:`\tilde Y\tilde Y^\top\tilde F`, at :math:`\eta=0` and at
:math:`\eta>0`. "Early": after 0 and up to the checkpoint where :math:`\|G_F\|` peaks (the
end of its rise, Prop. 1's claim 4); "dominated": a cosine above :math:`1/\sqrt2` (the part
along :math:`\tilde Y\tilde Y^\top\tilde F` outweighs the rest); decided per weight decay
on the t-interval over seeds of each seed's largest early cosine. Reported, not decided: how
long the cosine stays above :math:`1/\sqrt2` and its value at the end, per :math:`\eta`;
for reviewer sYi6, the peak of :math:`\|G_F\|`, its epoch and the early cosine along each
factor's grid. Decided for sYi6: the two relations that state a direction at small :math:`t`
(:math:`G_F(t)\approx t[\beta\tilde Y\tilde Y^\top\tilde F+\dots]`, :math:`t` in steps
of the learning rate): :math:`\|G_F\|` at the first checkpoint after 0 grows with the
learning rate and with :math:`\beta`, as the sign of the per-seed log-log slope along those
grids (:func:`sign_evidence`, the same runs). The relations for :math:`G_F(+\infty)`
(:math:`\propto\eta`, shrinking with :math:`K`) are about the ridge solution at fixed
features and stay figures.

Training past the fit (§7 "staying longer before overfitting" and "early stopping"): one
more sweep point (:func:`numerics.li2.overfit_drift.overfit_drift_point`), the base
configuration at a scarce training fraction where nothing generalises, trained a fixed number
of epochs with Adam (the base learning rate) and with vanilla gradient descent (momentum 0,
the gradient-descent grid's learning rate), the same seeds. Decided: vanilla GD fits the
training set later (the paired log ratio of the epochs at which training accuracy reaches 1,
:func:`verify.claims.li2._paired.direction_evidence`, censoring one-sided); and, per
optimiser, :math:`\mathcal E` of the learned nodes (``li2.fig7``'s measure) rises over the
second half of the run (the sign of its per-seed slope on the epoch, t-interval), decided only
when every seed memorised (fitted, test accuracy below 0.5). The code has no stable softmax:
that half of the statement is not checked.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from numerics.errors import Diverged
from numerics.li2.gradient_spectrum import first_run_above
from numerics.li2.grokking_time import EXACT, LOWER, UPPER, censoring_side
from numerics.li2.init_sweep_points import paired_log_ratio
from numerics.li2.overfit_drift import FITTED, first_fit, late_slopes, overfit_drift_point
from numerics.li2.sweep_points import decode, grokking_point
from numerics.li2.train_splits import train_count
from verify import (
    LEVEL,
    UNREAD_BEND,
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Plot,
    Reference,
    Route,
    Run,
    Tolerance,
    TrendFit,
    fit_trend,
    register,
    to_json_value,
    trend_evidence,
    undecided,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._interval_side import side_evidence
from verify.claims.li2._paired import direction_evidence
from verify.claims.li2._trained import record_trained

# --- the paper's predictions (§7 table) ---------------------------------------------------------


def stated_eta_slope():
    r"""Weight decay: :math:`G_F(+\infty)\propto\eta\tilde Y\tilde Y^\top F`, so
    :math:`t_{\rm grok}\sim1/\eta`: slope :math:`-1`."""
    return -1.0


def stated_alpha_sign():
    r"""Init scale: small :math:`\alpha` speeds up feature learning (:math:`t` grows with
    :math:`\alpha`)."""
    return 1.0


def stated_beta_sign():
    r"""Output scale: :math:`\beta>1` speeds up grokking (:math:`t` falls as :math:`\beta`
    grows from 1)."""
    return -1.0


def stated_beta_over_alpha_sign():
    r"""Too large a :math:`\beta/\alpha` hurts (:math:`t` grows with :math:`\beta/\alpha` at a
    large :math:`\beta`)."""
    return 1.0


def stated_width_sign():
    r"""Width: very large :math:`K` shrinks :math:`G_F(+\infty)` (Lemma 1), toward the NTK
    regime (:math:`t` grows with :math:`K`)."""
    return 1.0


def stated_data_sign():
    """Data size: more data gives faster learning (Thm. 4)."""
    return -1.0


def stated_lr_sign():
    r"""Learning rate: a larger one strengthens :math:`G_F(t)\approx t\tilde Y\tilde Y^\top F`
    (:math:`t` falls with the learning rate)."""
    return -1.0


def stated_early_alignment():
    r"""Prop. 1 (added in the rebuttal to reviewer aGxx): early in training
    :math:`G_F(t)=t\tilde Y\tilde Y^\top\tilde F+O(\alpha)+O(\alpha t)+O(t^2)` is dominated
    by :math:`\tilde Y\tilde Y^\top\tilde F`, at :math:`\eta=0` as at :math:`\eta>0` (its
    leading term does not involve :math:`\eta`): the cosine lies above the level
    :data:`DOMINANT` (side +1)."""
    return 1.0


def stated_overfit_delay_sign():
    r"""Staying longer before overfitting: vanilla SGD converges slowly to
    :math:`V_{\rm ridge}`, so it fits the training set later than Adam (the sign of
    :math:`\log(t_{\rm fit,SGD}/t_{\rm fit,Adam})`, +1)."""
    return 1.0


def stated_memorisation_drift_sign():
    r"""With scarce data the memorisation maxima have higher :math:`\mathcal E`, so long
    training drifts toward them: :math:`\mathcal E` of the learned nodes rises late in a
    memorising run (the sign of its slope on the epoch, +1)."""
    return 1.0


def stated_gf_lr_sign():
    r"""Reviewer sYi6 / §7: :math:`G_F(t)\approx t\tilde Y\tilde Y^\top F` is strengthened
    by a larger learning rate: early :math:`\|G_F\|` grows with it (sign +1)."""
    return 1.0


def stated_gf_beta_sign():
    r"""Reviewer sYi6 / App. C.3: :math:`G_F(t)=O(\alpha)+t[\beta\tilde Y\tilde Y^\top
    \tilde F+\dots]`: early :math:`\|G_F\|` grows with the output scale :math:`\beta`
    (sign +1)."""
    return 1.0


#: "Dominated": the component of G_F along Yt Yt^T Ft is larger than the rest,
#: cos^2 > 1 - cos^2, i.e. cos > 1/sqrt(2).
DOMINANT = 2 ** -0.5

REVERSED = {"early_alignment": lambda: -1.0, "eta_slope": lambda: 1.0,
            "alpha_sign": lambda: -1.0, "beta_sign": lambda: 1.0,
            "beta_over_alpha_sign": lambda: -1.0, "width_sign": lambda: -1.0,
            "data_sign": lambda: 1.0, "lr_sign": lambda: 1.0,
            "overfit_delay_sign": lambda: -1.0, "memorisation_drift_sign": lambda: -1.0,
            "gf_lr_sign": lambda: -1.0, "gf_beta_sign": lambda: -1.0}

#: prediction -> (stated form, the factor)
PREDICTIONS = {
    "eta": ("eta_slope", "weight decay eta (the optimiser's)"),
    "alpha": ("alpha_sign", "init scale alpha (top_layer_init_multiplier)"),
    "beta": ("beta_sign", "output scale beta (output_multiplier)"),
    "beta_over_alpha": ("beta_over_alpha_sign", "beta / alpha at the large beta"),
    "K": ("width_sign", "width K"),
    "p": ("data_sign", "training fraction p"),
    "lr": ("lr_sign", "learning rate"),
    "eta_gd": ("eta_slope", "weight decay eta under gradient descent"),
}

SIGN_TOLERANCE = Tolerance(0.0, "a sign: the whole 95% interval must lie on the stated side "
                                "of 0 (an interval containing 0 leaves it undecided)")


# --- the runs -----------------------------------------------------------------------------------

#: A configuration: (optimiser, K, p, eta, lr, top_init, out_scale).
Point = tuple[str, float, float, float, float, float, float]
FIELDS = ("optimizer", "K", "p", "eta", "lr", "top_init", "out_scale")


def _point(base: Mapping[str, Any], **change: Any) -> Point:
    return tuple(change.get(k, base[k]) if k == "optimizer" else float(change.get(k, base[k]))
                 for k in FIELDS)


def grid_points(p: Mapping[str, Any]) -> dict[str, list[Point]]:
    """Per prediction, the configurations along its grid."""
    base = {**p["base"], "K": p["K"], "optimizer": p["optimizer"]}
    g, gd = p["grids"], p["gradient_descent"]
    return {
        "eta": [_point(base, eta=x) for x in g["eta"]],
        "alpha": [_point(base, top_init=x) for x in g["top_init"]],
        "beta": [_point(base, out_scale=x) for x in g["out_scale"]],
        "beta_over_alpha": [_point(base, out_scale=p["large_beta"], top_init=x)
                            for x in g["top_init_at_large_beta"]],
        "K": [_point(base, K=x) for x in g["K"]],
        "p": [_point(base, p=x) for x in g["p"]],
        "lr": [_point(base, lr=x) for x in g["lr"]],
        "eta_gd": [_point(base, optimizer="sgd", lr=gd["lr"], eta=x) for x in gd["eta"]],
    }


def grid_values(p: Mapping[str, Any]) -> dict[str, list[float]]:
    """Per prediction, the factor along its grid."""
    g = p["grids"]
    return {"eta": list(g["eta"]), "alpha": list(g["top_init"]), "beta": list(g["out_scale"]),
            "beta_over_alpha": [p["large_beta"] / a for a in g["top_init_at_large_beta"]],
            "K": list(g["K"]), "p": list(g["p"]), "lr": list(g["lr"]),
            "eta_gd": list(p["gradient_descent"]["eta"])}


@dataclass(frozen=True)
class Times:
    """Per configuration and threshold: grokking times over seeds and their censoring."""

    epochs: dict[tuple[Point, float], torch.Tensor]
    censored: dict[tuple[Point, float], torch.Tensor]
    budget: int
    resolution: int
    batch_sizes: dict[str, int]
    final_train: dict[Point, torch.Tensor]   # training accuracy at the end of each run
    final_loss: dict[Point, torch.Tensor]
    #: per configuration (and the base at eta = 0): checkpoint epochs, cos(G_F, Yt Yt^T Ft)
    #: and ||G_F|| (``(C, S)`` each)
    alignment: dict[Point, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def _label(pt: Point) -> str:
    return ", ".join(v if k == "optimizer" else f"{k}={v:g}" for k, v in zip(FIELDS, pt))


def _times(run: Run) -> Times:
    """The runs of every configuration, one point each of a sweep (:meth:`Run.sweep`: in this
    process or on a Dask cluster, each configuration stored as it finishes; memoised, so the
    control reuses them). A point is one trainer, the configuration's seeds on its batch axis:
    a batch trains until its slowest run groks, and the cost of an epoch grows with the batch,
    so configurations that grok at different times are not made to wait for each other
    (every run depends only on its own configuration and seed)."""
    p = run.params
    configs = sorted({pt for pts in grid_points(p).values() for pt in pts})
    zero = zero_eta_point(p)
    table = [list(row) for row in build_group(p["group"]).table]
    seeds = list(p["seeds"])
    points = [{"table": table, "seeds": seeds, **dict(zip(FIELDS, pt)), "K": int(pt[1]),
               "activation": p["activation"], "loss": p["loss"], "eval_every": p["eval_every"],
               "budget": (p["alignment"]["budget"] if pt == zero else
                          p["gradient_descent"]["budget"] if pt[0] == "sgd" else p["budget"]),
               "chunk": p["chunk"], "thresholds": list(p["thresholds"]),
               "alignment": {k: p["alignment"][k] for k in ("every", "window")},
               "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}
              for pt in configs + [zero]]
    results = run.sweep("training", grokking_point, points)
    alignment = {pt: tuple(decode(r["alignment"][k]) for k in ("epochs", "global_cos", "gf_norm"))
                 for pt, r in zip(configs + [zero], results)}
    epochs, censored, sizes, final_train, final_loss = {}, {}, {}, {}, {}
    budget = resolution = 0
    for pt, r in zip(configs, results):
        opt, K, frac, eta = pt[:4]
        if not r["finite"]:
            raise Diverged(f"training diverged ({opt}, K={K}, p={frac}, eta={eta})")
        final_train[pt], final_loss[pt] = decode(r["final_train"]), decode(r["final_loss"])
        sizes[_label(pt)] = len(seeds)
        for a, g in zip(p["thresholds"], r["times"]):
            budget, resolution = max(budget, g["budget"]), max(resolution, g["resolution"])
            epochs[(pt, a)] = decode(g["epochs"])
            censored[(pt, a)] = decode(g["censored"])
    return Times(epochs, censored, budget, resolution, sizes, final_train, final_loss, alignment)


def zero_eta_point(p: Mapping[str, Any]) -> Point:
    """The base configuration without weight decay: trained only for the alignment of G_F
    (``alignment.budget`` epochs; it need not grok)."""
    return _point({**p["base"], "K": p["K"], "optimizer": p["optimizer"]}, eta=0.0)


# --- evidence -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CensoredFit:
    """A slope fit over seeds whose imputed slopes may be one-sided bounds."""

    fit: TrendFit
    sides: torch.Tensor          # per seed: EXACT, LOWER, UPPER or UNBOUNDED
    censored: int                # censored (seed, point) pairs

    def bounds(self, direction: int) -> bool:
        """Whether every seed's imputed slope is exact or a bound in ``direction``
        (LOWER: the true slope is at least it; UPPER: at most)."""
        return bool(((self.sides == EXACT) | (self.sides == direction)).all())


def fit_times(x: list[float], T: torch.Tensor, C: torch.Tensor) -> CensoredFit:
    """Fit ``log T`` (``(S, G)``) on ``log x`` (``x`` decreasing) with censoring ``C``."""
    fit = fit_trend(x, T, limit="zero")
    sides = censoring_side(torch.log(torch.tensor(x, dtype=torch.float64)), C)
    return CensoredFit(fit, sides, int(C.sum()))


def sign_evidence(quantity: str, cf: CensoredFit, stated_sign: float,
                  parameters: Mapping[str, Any]) -> Evidence:
    """Stated sign of the slope against its interval (module docstring)."""
    lo, hi = cf.fit.interval
    s = 1.0 if stated_sign > 0 else -1.0
    # the one-sided bound under which a confirmation (a refutation) stays valid
    confirm, refute = (LOWER, UPPER) if s > 0 else (UPPER, LOWER)
    params = {**parameters, "censored points": cf.censored,
              "slope sides": cf.sides.tolist()}
    if not np.isfinite(cf.fit.order):
        return undecided(Route.RATE, quantity, "no slope could be fitted",
                         tolerance=SIGN_TOLERANCE, parameters=params)
    near, far = (lo, hi) if s > 0 else (hi, lo)   # interval ends nearest / farthest from 0
    detail = {**params, "slope": cf.fit.order, "interval": [lo, hi],
              "per_seed": cf.fit.orders.tolist()}
    if s * near > 0 and cf.bounds(confirm):
        gap = 0.0
    elif s * far < 0 and cf.bounds(refute):
        gap = -s * far
    elif s * near > 0 or s * far < 0:
        return undecided(Route.RATE, quantity, f"the interval [{lo:.3f}, {hi:.3f}] excludes 0, "
                         "but censored runs bound the slope only on the other side",
                         tolerance=SIGN_TOLERANCE, parameters=detail)
    else:
        return undecided(Route.RATE, quantity, f"the 95% interval [{lo:.3f}, {hi:.3f}] "
                         "contains 0: the sign is not resolved with these seeds",
                         tolerance=SIGN_TOLERANCE, parameters=detail)
    return Evidence(
        route=Route.RATE, quantity=quantity, stated=s, derived=None,
        measured=to_json_value({"slope": cf.fit.order, "interval": [lo, hi],
                                "per_seed": cf.fit.orders.tolist()}),
        metric="sign", discrepancy=gap, tolerance=SIGN_TOLERANCE, parameters=params,
        finite=True, comparisons={"interval on the stated side": gap},
        note=f"95% t-interval [{lo:.3f}, {hi:.3f}] over {cf.fit.errors.shape[0]} seeds; "
             "discrepancy = how far the interval lies beyond 0 on the wrong side")


def slope_evidence(quantity: str, cf: CensoredFit, stated: float,
                   parameters: Mapping[str, Any]) -> list[Evidence]:
    """Stated slope against the interval (``trend_evidence``, exact); with censored runs only
    a failure on the bounded side can be decided, beyond the fit's own bend allowance."""
    params = {**parameters, "censored points": cf.censored}
    if cf.censored == 0:
        return trend_evidence(quantity, cf.fit, stated_order=stated, bound="exact",
                              parameters=params)
    lo, hi = cf.fit.interval
    readable = math.isfinite(cf.fit.bend)
    bend = cf.fit.bend if readable else UNREAD_BEND.value
    tolerance = Tolerance(bend, "bend allowance of the bounds' fit (verify.error_trends): the "
                                "slope at the limit may lie this far off" if readable
                          else UNREAD_BEND.why)
    if cf.bounds(LOWER) and lo > stated + bend:
        gap = lo - stated
    elif cf.bounds(UPPER) and hi < stated - bend:
        gap = stated - hi
    else:
        return [undecided(Route.RATE, f"{quantity}: slope vs stated {stated:g}",
                          f"censored runs make the slope a one-sided bound; interval of the "
                          f"bounds [{lo:.3f}, {hi:.3f}]", tolerance=tolerance,
                          parameters=params)]
    return [Evidence(route=Route.RATE, quantity=f"{quantity}: slope vs stated {stated:g}",
                     stated=stated, derived=None,
                     measured=to_json_value({"bound": [lo, hi]}), metric="order",
                     discrepancy=gap, tolerance=tolerance, parameters=params, finite=True,
                     comparisons={"bound beyond stated": gap},
                     note="censored runs: the interval bounds the slope from one side")]


@dataclass(frozen=True)
class EarlyGF:
    """Per seed: the checkpoint at which ||G_F|| peaks (the end of its early rise, Prop. 1's
    claim 4), the largest cosine of G_F with Yt Yt^T Ft after 0 and up to it, and the peak."""

    peak_epoch: torch.Tensor
    early_cos: torch.Tensor
    peak_norm: torch.Tensor


def early_gf(epochs: torch.Tensor, cos: torch.Tensor, norm: torch.Tensor) -> EarlyGF:
    """:class:`EarlyGF` from the checkpoint series (``(C, S)``). Epoch 0 is left out: there
    :math:`G_F(0)` is the initialisation's :math:`O(\alpha)` term, which Prop. 1 does not
    describe; a seed whose ||G_F|| peaks at 0 has no early rise, and its cosine is nan."""
    peak = norm.argmax(0)
    later = (epochs > 0)[:, None] & (torch.arange(len(epochs))[:, None] <= peak[None, :])
    early = torch.where(later, cos.double(), -math.inf).amax(0)
    # ||G_F|| largest at initialisation (a large alpha: the O(alpha) term dominates): no rise
    early = torch.where(later.any(0), early, math.nan)
    return EarlyGF(epochs[peak].double(), early, norm.double().amax(0))


def _alignment_evidence(run: Run, T: Times) -> Iterator[Evidence]:
    r"""Reviewer aGxx: :math:`\cos(G_F,\tilde Y\tilde Y^\top\tilde F)` along training at
    :math:`\eta=0` and :math:`\eta>0` (the stated early dominance per weight decay, the time
    it lasts and the late value reported); reviewer sYi6: the early :math:`G_F` along each
    factor's grid (reported)."""
    p = run.params
    base = _point({**p["base"], "K": p["K"], "optimizer": p["optimizer"]})
    etas = [zero_eta_point(p)] + sorted(pt for pt in grid_points(p)["eta"])
    tol = Tolerance(0.0, "the whole 95% interval over seeds above 1/sqrt(2): the part of G_F "
                         "along Yt Yt^T Ft outweighs the rest")
    curves, lasting = {}, {}
    for pt in etas:
        e, cos, norm = T.alignment[pt]
        early = early_gf(e, cos, norm)
        yield side_evidence(
            f"Prop. 1 (rebuttal to aGxx): early cos(G_F, Yt Yt^T Ft) > 1/sqrt(2) at eta = "
            f"{pt[3]:g}", early.early_cos.tolist(), DOMINANT,
            float(run.stated["early_alignment"]()), tol,
            {"configuration": _label(pt), "early": "0 < t <= the epoch of the peak of ||G_F||",
             "peak epochs": early.peak_epoch.tolist(), "checkpoint every":
             p["alignment"]["every"]})
        start, stop = first_run_above(e.tolist(), cos, DOMINANT)
        lasting[f"eta={pt[3]:g}"] = {
            "epochs above 1/sqrt(2), per seed": (stop - start).tolist(),
            "from, to": [start.tolist(), stop.tolist()],
            "early max cos": early.early_cos.tolist(), "peak ||G_F||": early.peak_norm.tolist(),
            "cos at the last checkpoint": cos[-1].tolist(), "last checkpoint": int(e[-1])}
        curves[f"eta={pt[3]:g}"] = (e.tolist(), cos.double().median(1).values.tolist())
    run.figure("cos(G_F, Yt Yt^T Ft) per weight decay (base configuration): how long it stays "
               "above 1/sqrt(2) (to the checkpoint resolution) and its late value", lasting)
    if not run.is_control:
        run.plot(Plot("cos(G_F, Yt Yt^T Ft) along training, base configuration (median over "
                      f"{len(p['seeds'])} seeds)", x_label="epoch",
                      y_label="cos(G_F, Yt Yt^T Ft)", series=curves,
                      references=(Reference("1/sqrt(2): dominated", y=DOMINANT),)))
    factors, rel = {}, {}
    values = grid_values(p)
    ref = float(early_gf(*T.alignment[base]).peak_norm.median())
    for name, (_, label) in PREDICTIONS.items():
        rows = []
        for x, pt in sorted(zip(values[name], grid_points(p)[name])):
            e, cos, norm = T.alignment[pt]
            early = early_gf(e, cos, norm)
            rows.append({"value": x, "median peak ||G_F||": float(early.peak_norm.median()),
                         f"median ||G_F|| at epoch {int(e[1])}": float(norm[1].median()),
                         "median early max cos": float(early.early_cos.median()),
                         "median peak epoch": float(early.peak_epoch.median())})
        factors[label] = rows
        if name in ("alpha", "beta", "K", "p", "lr") and base in grid_points(p)[name]:
            x0 = next(x for x, pt in zip(values[name], grid_points(p)[name]) if pt == base)
            rel[label] = ([r["value"] / x0 for r in rows],
                          [r["median peak ||G_F||"] / ref for r in rows])
    run.figure("early G_F along each factor's grid (reviewer sYi6; reported, not decided)",
               factors)
    if not run.is_control and rel:
        run.plot(Plot("peak ||G_F|| (its early rise) against each factor, relative to the base "
                      "configuration (median over seeds)", x_label="factor / its base value",
                      y_label="peak ||G_F|| / the base's", log_x=True, log_y=True, series=rel))


#: reviewer sYi6's relations read as items: prediction -> (stated form, factor in words)
GF_FACTORS = {"lr": ("gf_lr_sign", "learning rate"), "beta": ("gf_beta_sign", "output scale beta")}


def _gf_factor_evidence(run: Run, T: Times) -> Iterator[Evidence]:
    r"""Reviewer sYi6 (module docstring): the rebuttal's relations between the hyperparameters
    and :math:`G_F` that say a direction at small :math:`t`, :math:`G_F(t)\approx
    t[\beta\tilde Y\tilde Y^\top\tilde F+\dots]` with :math:`t` counted in steps of the
    learning rate: :math:`\|G_F\|` at the first checkpoint after 0 grows with the learning
    rate and with :math:`\beta`. Per seed the least-squares slope of :math:`\log\|G_F(t_1)\|`
    on :math:`\log x` along the factor's grid (the runs the grokking times come from), and
    the stated sign against its t-interval (:func:`sign_evidence`, nothing censored)."""
    p = run.params
    points, values = grid_points(p), grid_values(p)
    for name, (form, label) in GF_FACTORS.items():
        pairs = sorted(zip(values[name], points[name]), reverse=True)
        x = [v for v, _ in pairs]
        first = {int(T.alignment[pt][0][1]) for _, pt in pairs}
        norms = torch.stack([T.alignment[pt][2][1].double() for _, pt in pairs], 1)   # (S, G)
        quantity = f"reviewer sYi6: ||G_F(t_1)|| vs {label}: sign of d log ||G_F|| / d log x"
        params = {"factor": label, "grid": x, "t_1 (epochs)": sorted(first),
                  "||G_F(t_1)|| per seed x grid": norms.tolist(), "seeds": len(p["seeds"])}
        if len(first) != 1 or not bool(torch.isfinite(norms).all() and (norms > 0).all()):
            yield undecided(Route.RATE, quantity, "the first checkpoint differs between the "
                            "grid's runs or a norm is not finite and positive",
                            tolerance=SIGN_TOLERANCE, parameters=params)
            continue
        cf = fit_times(x, norms, torch.zeros_like(norms, dtype=torch.bool))
        yield sign_evidence(quantity, cf, float(run.stated[form]()), params)


#: a memorising run: every training pair fitted at the end and the test accuracy below the
#: first grokking threshold (0.5): it has not generalised
MEMORISED_BELOW = 0.5


def overfitting_point(run: Run) -> dict[str, Any]:
    """The runs of the two statements on training past the fit (one sweep point): the base
    configuration at the scarce training fraction ``overfitting.p``, Adam at the base
    learning rate and vanilla gradient descent (momentum 0) at the gradient-descent grid's,
    the same seeds (so the same initialisations and splits) in both arms."""
    p, o = run.params, run.params["overfitting"]
    return {"table": [list(r) for r in build_group(p["group"]).table],
            "seeds": list(p["seeds"]), "K": int(p["K"]), "p": o["p"],
            **{k: p["base"][k] for k in ("eta", "top_init", "out_scale")},
            "activation": p["activation"], "loss": p["loss"], "epochs": o["epochs"],
            "eval_every": o["eval_every"], "diag_every": o["diag_every"],
            "arms": {"Adam": {"optimizer": p["optimizer"], "lr": p["base"]["lr"]},
                     "vanilla GD": {"optimizer": "sgd", "lr": p["gradient_descent"]["lr"],
                                    "momentum": 0.0}},
            "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}


def _overfitting_evidence(run: Run) -> Iterator[Evidence]:
    r"""§7 "staying longer before overfitting" and "long training drifts to the higher-
    :math:`\mathcal E` memorisation maxima" (the claim's reading), on one pair of runs at
    scarce data."""
    p, o = run.params, run.params["overfitting"]
    point = overfitting_point(run)
    res = run.sweep("overfitting", overfit_drift_point, [point])[0]
    base = {"group": p["group"], "K": p["K"], "p": o["p"], "eta": p["base"]["eta"],
            "epochs": o["epochs"], "seeds": len(p["seeds"]),
            "learning rates": {a: point["arms"][a]["lr"] for a in point["arms"]}}
    arms = {}
    for name, r in res.items():
        if not r["finite"]:
            arms[name] = None
            continue
        e = decode(r["epochs"])
        t, c = first_fit(e, decode(r["train_acc"]))
        arms[name] = {"fit": (t, c), "test": decode(r["test_acc"]),
                      "final_train": decode(r["final_train"]),
                      "energy": (decode(r["energy_epochs"]), decode(r["energy"]))}
    # (a) the epoch of the fit of the training set, vanilla GD over Adam, paired by seed
    q = ("§7 staying longer before overfitting: epoch train accuracy reaches 1, vanilla GD "
         "over Adam (sign of the log ratio)")
    if arms["Adam"] is None or arms["vanilla GD"] is None:
        yield undecided(Route.NUMERIC, q, "a run diverged (non-finite loss)",
                        tolerance=SIGN_TOLERANCE, parameters=base)
    else:
        (t_gd, c_gd), (t_ad, c_ad) = arms["vanilla GD"]["fit"], arms["Adam"]["fit"]
        # censored runs (never fitted within the budget) enter with the budget, a lower bound
        # of their time: paired_log_ratio marks the side each such ratio bounds, and
        # direction_evidence decides only on a side the bounds support
        pr = paired_log_ratio(t_gd, c_gd, t_ad, c_ad, LEVEL)
        yield direction_evidence(q, pr, float(run.stated["overfit_delay_sign"]()),
                                 {**base, "epochs to fit (vanilla GD)": t_gd.tolist(),
                                  "epochs to fit (Adam)": t_ad.tolist(),
                                  "never fitted (GD, Adam)": [int(c_gd.sum()), int(c_ad.sum())],
                                  "logging interval (epochs)": o["eval_every"]})
    # (b) E of the learned nodes along the late window of each memorising run
    start = o["late_from"] * o["epochs"]
    tol = Tolerance(0.0, "a sign: the whole 95% t-interval over seeds of the late slope of E "
                         "on the epoch must lie above 0 (one containing 0 is undecided)")
    drift = {}
    for name, a in arms.items():
        q = (f"§7 long training drifts to higher-E memorisation maxima: slope of E (learned "
             f"nodes) per 1000 epochs from epoch {start:g} on, {name}")
        if a is None:
            yield undecided(Route.NUMERIC, q, "the run diverged (non-finite loss)",
                            tolerance=tol, parameters=base)
            continue
        fitted = bool((a["final_train"] >= FITTED).all())
        final_test = a["test"][-1]
        ee, E = a["energy"]
        # per 1000 epochs, so the interval prints at a readable scale (only its side counts)
        slopes = 1000.0 * late_slopes(ee, E, start)
        late = ee >= start
        params = {**base, "arm": name, "late window": [float(ee[late][0]), float(ee[-1])]
                  if late.any() else [], "E at the window's start and end":
                  [E[late][0].tolist(), E[-1].tolist()] if late.any() else [],
                  "final test accuracy": final_test.tolist()}
        drift[name] = {"E per checkpoint (median over seeds)": E.median(1).values.tolist(),
                       "checkpoints": ee.tolist(),
                       "late slopes per seed (per 1000 epochs)": slopes.tolist()}
        if not fitted or bool((final_test >= MEMORISED_BELOW).any()):
            yield undecided(Route.NUMERIC, q, "not a memorising run: a seed did not fit the "
                            "training set or its test accuracy reached 0.5", tolerance=tol,
                            parameters=params)
        elif not bool(torch.isfinite(slopes).all()):
            yield undecided(Route.NUMERIC, q, "E is not finite on the late window (a node "
                            "direction undefined) or it has fewer than 3 checkpoints",
                            tolerance=tol, parameters=params)
        else:
            yield side_evidence(q, slopes.tolist(), 0.0,
                                float(run.stated["memorisation_drift_sign"]()), tol, params)
    run.figure("E of the learned nodes along the memorising runs (scarce data; §7 early "
               "stopping)", drift)


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    M = build_group(p["group"]).order
    T = _times(run)
    points, values = grid_points(p), grid_values(p)
    n_base = train_count(M, p["base"]["p"])
    run.assume("K >= n on the width grid's large end (the lazy side of Lemma 1)",
               max(p["grids"]["K"]) >= n_base,
               detail=f"K up to {max(p['grids']['K'])}, n = {n_base}")
    worst = min(T.final_train, key=lambda pt: float(T.final_train[pt].min()))
    record_trained(run, M, torch.cat(list(T.final_train.values())),
                   torch.cat(list(T.final_loss.values())),
                   where=f"the end of the runs of all {len(T.final_train)} configurations "
                         f"(lowest: {_label(worst)})")
    run.assume("every grid point groks within the budget",
               not any(bool(c.any()) for c in T.censored.values()),
               detail=f"longest run {T.budget} epochs; censored (config, threshold): "
                      f"{sum(int(c.any()) for c in T.censored.values())}")
    table: dict[str, Any] = {}
    for name, (form, label) in PREDICTIONS.items():
        # the fit wants the factor decreasing along the grid
        pairs = sorted(zip(values[name], points[name]), reverse=True)
        x = [v for v, _ in pairs]
        curves = {}
        for a in p["thresholds"]:
            E = torch.stack([T.epochs[(pt, a)] for _, pt in pairs], 1)
            C = torch.stack([T.censored[(pt, a)] for _, pt in pairs], 1)
            cf = fit_times(x, E, C)
            params = {"factor": label, "grid": x, "threshold": a, "seeds": len(p["seeds"]),
                      "median epochs per point": E.median(0).values.tolist(),
                      "base": dict(p["base"]), "K": p["K"], "group": p["group"]}
            table[f"{name}, t_{a:g}"] = {"grid": x, "epochs": E.tolist(),
                                         "censored": C.tolist(), "slope": cf.fit.order,
                                         "interval": list(cf.fit.interval)}
            curves[f"t_{a:g} (fitted slope {cf.fit.order:.2f})"] = (
                x, E.double().median(0).values.tolist())
            quantity = f"t_{a:g} vs {label}"
            if name in ("eta", "eta_gd"):
                yield from slope_evidence(quantity, cf, float(run.stated[form]()), params)
            else:
                yield sign_evidence(f"{quantity}: sign of d log t / d log x", cf,
                                    float(run.stated[form]()), params)
        if not run.is_control and all(v > 0 for xs, ys in curves.values() for v in xs + ys):
            # the prediction as a reader checks it: median grokking time against the factor
            # on log-log axes, where the stated law is a slope
            slope = [Reference(f"stated slope {float(run.stated[form]()):g}",
                               slope=float(run.stated[form]()))] if form == "eta_slope" else []
            run.plot(Plot(f"grokking time vs {label} (median over {len(p['seeds'])} seeds; "
                          f"censored runs at the budget)", x_label=label,
                          y_label="epochs to the test-accuracy threshold", log_x=True,
                          log_y=True, series=curves, references=tuple(slope)))
    run.figure("grokking times per prediction (epochs, seeds x grid; censored = budget)", table)
    yield from _alignment_evidence(run, T)
    yield from _gf_factor_evidence(run, T)
    yield from _overfitting_evidence(run)
    run.figure("runs", {"longest run (epochs)": T.budget, "logging interval": T.resolution,
                        "runs per trainer (one configuration, its seeds)": T.batch_sizes})


CLAIM = register(Claim(
    id="li2.sec7-predictions",
    paper=PAPER,
    kind="remark",
    title="§7: grokking time vs weight decay, init scale, output scale, width, data and "
          "learning rate",
    source="§7 (table of factors), App. C.3 for beta, Lemma 1 for K, Thm. 4 for n; Prop. 1 "
           "and the ICLR 2026 rebuttal (reviewers aGxx, sYi6) for G_F along the sweeps",
    statement=r"t_{\rm grok}\sim1/\eta;\ \text{small }\alpha\text{ speeds up};\ \beta>1\ "
              r"\text{speeds up, too large }\beta/\alpha\text{ hurts};\ \text{very large }K\ "
              r"\text{slows (NTK)};\ \text{more data is faster};\ \text{a larger learning rate "
              r"strengthens }G_F(t)\approx t\tilde Y\tilde Y^\top F;\ \text{early on }G_F\text{ "
              r"is dominated by }\tilde Y\tilde Y^\top\tilde F\text{ at }\eta=0\text{ and "
              r"}\eta>0",
    reading=r"The author's code, trained as the paper's experiments are: two-layer network, "
            r"\sigma(x)=x^2, the code's class-centred MSE, Adam with coupled weight decay "
            r"\eta (the optimiser's; \eta_{paper}=n\eta/2), default nn.Linear init with V(0) "
            r"scaled by \alpha = top\_layer\_init\_multiplier, outputs times \beta = "
            r"output\_multiplier, full batch. t_a = first logged epoch with test accuracy "
            r"\ge a, a \in \{0.5, 0.99\}. Each factor moves along a geometric grid with the "
            r"others at a base point; a prediction is the sign of d\log t/d\log x (for \eta the "
            r"slope -1, within the t-interval plus 0.2 for the pre-asymptotic bend). "
            r"'\beta>1 speeds up': \beta from 1 upward; 'too large \beta/\alpha hurts': "
            r"\alpha decreasing at a large \beta (literally \beta/\alpha; the expansion's "
            r"O(\beta^2\alpha), O(\beta^3\alpha^2) terms would instead point to \beta\alpha, "
            r"which the \beta grid covers); 'very large K': a grid reaching K \ge n; "
            r"learning rate: at \eta>0 (grokking without weight decay at a large learning "
            r"rate is an existence statement, not a trend). The \eta law is also fitted under "
            r"heavy-ball gradient descent (momentum 0.9), the flow the argument is about. "
            r"Censored runs: the budget is a lower bound of their time. Prop. 1 (rebuttal): "
            r"'early' = after 0 up to the peak of \|G_F\|, 'dominated by \tilde Y\tilde "
            r"Y^\top\tilde F' = \cos(G_F,\tilde Y\tilde Y^\top\tilde F)>1/\sqrt2, with "
            r"G_F=P_1^\perp(Y-\hat Y)V^\top at the code's weights; at \eta=0 (the base "
            r"configuration) and along the \eta grid. Reviewer sYi6's hyperparameter-to-G_F "
            r"relations: the two that state a direction at small t, G_F(t)\approx "
            r"t[\beta\tilde Y\tilde Y^\top\tilde F+\dots] with t in steps of the learning "
            r"rate: \|G_F\| at the first checkpoint after 0 (t_1, epoch 5) grows with the "
            r"learning rate and with \beta (sign of d\log\|G_F(t_1)\|/d\log x over seeds, "
            r"on the runs of those grids, Adam); G_F(+\infty)\propto\eta and 'very large K "
            r"shrinks G_F(+\infty)' describe the ridge solution at fixed features, which a "
            r"trained network never holds, and stay figures. 'Staying longer before "
            r"overfitting' (stable softmax, vanilla SGD converge slowly to V_{ridge}): vanilla "
            r"gradient descent (momentum 0, at the gradient-descent grid's learning rate) fits "
            r"the training set (train accuracy 1) later than Adam (base learning rate), the "
            r"same seeds, at scarce data (sign of the paired log ratio of the epochs); the "
            r"code has no stable softmax, so that half is not checked. 'Long training drifts "
            r"to the higher-E memorisation maxima': in those memorising runs (every seed "
            r"fits, test accuracy < 0.5) E of the learned nodes (li2.fig7's measure: median "
            r"E on the sphere over the half of the nodes of largest norm) rises over the "
            r"second half of the run (sign of its slope on the epoch over seeds), per "
            r"optimiser.",
    parameters={
        "quick": {"group": "Z19", "K": 128, "seeds": (0, 1, 2),
                  "base": {"p": 0.5, "eta": 1.5e-3, "lr": 1e-2, "top_init": 1.0,
                           "out_scale": 1.0},
                  "grids": {"eta": (3e-3, 1.5e-3, 7.5e-4, 3.75e-4),
                            "top_init": (4.0, 1.0, 0.25),
                            "out_scale": (2.0, 2**0.5, 1.0),
                            "top_init_at_large_beta": (1.0, 0.5, 0.25),
                            "K": (512, 256, 128), "p": (0.72, 0.6, 0.5),
                            "lr": (2e-2, 1e-2, 5e-3)},
                  "gradient_descent": {"lr": 1.0, "eta": (4e-3, 2e-3, 1e-3), "budget": 1300},
                  # chunk: how often a batch checks whether all its runs have grokked (the
                  # times are logged every eval_every epochs whatever the chunk)
                  "large_beta": 2.0, "budget": 700, "chunk": 25, "eval_every": 5,
                  "thresholds": (0.5, 0.99), "optimizer": "adam", "activation": "x2",
                  "loss": "mse_class",
                  # cos(G_F, Yt Yt^T Ft) and ||G_F|| every 5 epochs through the early rise of
                  # ||G_F|| (its peak comes by epoch ~15-30 on the quick grids), then at each
                  # chunk's end; the eta = 0 run for 300 epochs, past that rise and decay
                  "alignment": {"every": 5, "window": 60, "budget": 300},
                  # §7 on training past the fit: the base configuration at a quarter of the
                  # pairs (Z19: 90 of 361; nothing generalises, every run fits the training
                  # set, Adam by epoch ~10, vanilla GD by ~60-80), 1200 epochs (E of Adam's
                  # nodes levels off by ~500, vanilla GD's still rises at 1500), E every 25
                  # epochs, its slope read on the second half; about 3 s on a busy core
                  "overfitting": {"p": 0.25, "epochs": 1200, "eval_every": 5,
                                  "diag_every": 25, "late_from": 0.5}},
        "full": {"group": "Z41", "K": 512, "seeds": tuple(range(8)),
                 "base": {"p": 0.4, "eta": 5e-4, "lr": 5e-3, "top_init": 1.0,
                          "out_scale": 1.0},
                 "grids": {"eta": (2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4),
                           "top_init": (4.0, 2.0, 1.0, 0.5, 0.25),
                           "out_scale": (4.0, 2**1.5, 2.0, 2**0.5, 1.0),
                           "top_init_at_large_beta": (1.0, 0.5, 0.25, 0.125),
                           "K": (4096, 2048, 1024, 512, 256),
                           "p": (0.8, 0.64, 0.512, 0.4096),
                           "lr": (2e-2, 1e-2, 5e-3, 2.5e-3)},
                 "gradient_descent": {"lr": 1.0, "eta": (2e-3, 1e-3, 5e-4, 2.5e-4),
                                      "budget": 12000},
                 "large_beta": 4.0, "budget": 4000, "chunk": 100, "eval_every": 5,
                 "thresholds": (0.5, 0.99), "optimizer": "adam", "activation": "x2",
                 "loss": "mse_class", "alignment": {"every": 5, "window": 300, "budget": 2000},
                 "overfitting": {"p": 0.2, "epochs": 8000, "eval_every": 5,
                                 "diag_every": 100, "late_from": 0.5}},
    },
    stated={"early_alignment": stated_early_alignment, "eta_slope": stated_eta_slope,
            "alpha_sign": stated_alpha_sign,
            "beta_sign": stated_beta_sign, "beta_over_alpha_sign": stated_beta_over_alpha_sign,
            "width_sign": stated_width_sign, "data_sign": stated_data_sign,
            "lr_sign": stated_lr_sign, "overfit_delay_sign": stated_overfit_delay_sign,
            "memorisation_drift_sign": stated_memorisation_drift_sign,
            "gf_lr_sign": stated_gf_lr_sign, "gf_beta_sign": stated_gf_beta_sign},
    equivalent_mutants={
        **{f"early_alignment:{op}": "a side of the level 1/sqrt(2): only its sign enters the "
                                    "decision" for op in ("scale", "nudge")},
        **{f"{form}:{op}": "a direction: only its sign enters the decision (sign_evidence)"
           for form in ("alpha_sign", "beta_sign", "beta_over_alpha_sign", "width_sign",
                        "data_sign", "lr_sign", "overfit_delay_sign", "gf_lr_sign",
                        "gf_beta_sign") for op in ("scale", "nudge")},
        **{f"memorisation_drift_sign:{op}": "a side of 0: only its sign enters the decision "
                                            "(side_evidence)" for op in ("scale", "nudge")},
        **{f"eta_slope:{op}": "a slope of -1.05 or -1.001 against -1: within 10% of it, "
                              "the resolution an order item needs (verify.error_trends), "
                              "which grokking times on a finite grid of eta do not reach"
           for op in ("scale", "nudge")}},
    check=check,
    control=NegativeControl("every prediction reversed (t ~ eta, large alpha faster, ...)",
                            REVERSED),
    assumptions=(
        Assumption(">= 3 seeds per point", "a t-interval needs seeds (SOURCES §2.5: >= 5 "
                   "at full fidelity)", lambda p: len(p["seeds"]) >= 3),
        Assumption("weight decay on", "the base point has eta > 0 (grokking needs it at "
                   "these learning rates)", lambda p: p["base"]["eta"] > 0),
    ),
    # The base point's weight decay, learning rate (a step that leaves the networks at chance
    # is recorded by the "trained beyond chance" criterion) and training fraction; the width
    # grid (its large end below n is outside "K >= n"); the eta grids of Adam and of gradient
    # descent; the seeds (two: outside). Each is cheaper than the fidelity's (t ~ 1/eta: the
    # grids stop at larger eta; half the widths), about 2/3 of a quick run; a larger eta
    # under gradient descent (8e-3) leaves the network at chance.
    space={"base.eta": LogUniform(1.5e-3, 4e-3), "base.lr": LogUniform(5e-3, 0.5),
           "base.p": Choice((0.5, 0.6, 0.72)),
           "grids.K": Choice(((256, 128, 64), (128, 64, 32))),
           "grids.eta": Choice(((3e-3, 1.5e-3, 7.5e-4), (6e-3, 3e-3, 1.5e-3))),
           "gradient_descent.eta": Choice(((4e-3, 2e-3), (4e-3, 4e-3 * 2**-0.5, 2e-3))),
           "seeds": Choice(((0, 1, 2), (3, 4, 5), (0, 1)))},
    tags=("training",),
))
