r"""li2.x.lock-in: the third party's spectral lock-in detector and level metric
(arXiv 2605.08119; verify/claims/li2/SOURCES.md §7.2 items 2-3, §7.4).

Their claims (the stated forms, each a direction):

* the detector (window :math:`w=20`, lag 25, slope 0.04, :math:`t\ge100`;
  :mod:`numerics.li2.lock_in`) fires in the runs with weight decay that grok (15/15) and not in
  the controls without it (0/15);
* it *lags* grokking: it fires after test accuracy reaches 0.99 (by about 35 epochs);
* a short window gives false positives: at :math:`w=5` it fires in the controls (3/3);
* with ReLU it does not fire (0/15);
* the level metric :math:`\rho` crosses its threshold (0.075) before test accuracy reaches 0.5
  in grokking runs (84 epochs ahead), and also in runs with weight decay that do *not* grok
  (60/60 of their :math:`M\times p` sweep): an initiation marker, not a predictor.

Routes. The training (measured): the two-layer network, class-centred MSE, Adam with coupled
weight decay, one step at a time, every first-layer change :math:`\Delta W_t` (weight decay
included) kept in a rolling window (:func:`numerics.li2.sweep_points.lock_in_point`); runs with
decay, controls (:math:`\eta=0`), runs with decay on scarce data (which do not grok) and, at
full fidelity, ReLU runs with decay (at quick size they do not grok within the budget), seeds
on the batch axis. The levels :math:`\sigma_k` come from ``eigvalsh`` of
the window's Gram in float64 (their route); an independent route, the squared singular values
of the stacked changes (never forming the Gram), must give the same
:math:`\log(\sigma_2/\sigma_3)` within the first-order rounding bound of the two
(:meth:`numerics.li2.lock_in.UpdateWindow.rounding`) at check epochs. :math:`\rho` is the
trainer's ``fft_dist`` (the author's ``fit_diag_11`` on the uncentred :math:`FF^\top`, which is
what their code thresholds; their note writes :math:`P_1^\perp FF^\top`), recomputed in float64
from the features at check epochs within the float32 rounding bound
:math:`2\gamma_{K+n}\sqrt n` (a Gram entry errs by at most :math:`\gamma_K\|\mathbf f_i\|
\|\mathbf f_j\|`, so :math:`\|\delta G\|_F\le\gamma_K\operatorname{tr}G\le\gamma_K\sqrt
n\|G\|_F`; the fit is a projection, so :math:`\rho` moves by at most :math:`(1+\rho)` times
that relative error, and :math:`\rho\le1`); the note's centred reading is reported beside it.

Evidence. Each stated form is the fraction of runs in which the event as stated holds (e.g.
"fires" in a decay run, "does not fire" in a control, "fire epoch > :math:`t_{0.99}`" in a
decay run that did both), with its Wilson interval at the family-wise level (Bonferroni over
the forms): confirmed when the interval lies above 1/2, refuted when below, undecided across.
Negative control inside the check: surrogate windows of structureless changes, each of the
decay runs' norms in an independent uniformly random direction (the Gram of Gaussian vectors
in :math:`\mathbb R^P`: a Wishart matrix), must not fire (same interval rule): the detector
reads the directions of the updates, not their sizes. Every run must have trained beyond
chance (:mod:`verify.claims.li2._trained`), the decay runs must grok (test accuracy 0.99
within the budget) and the scarce runs counted as non-grokking are those that do not.

Scale. The detector's epochs and thresholds were tuned by the third party at their setting
(:math:`M=71`, test accuracy 0.5 at epoch ~101, 0.99 at ~139). Quick fidelity (:math:`Z_{23}`,
:math:`K=128`, :math:`p=0.5`, lr :math:`5\times10^{-3}`, :math:`\eta=2\times10^{-3}`) is chosen
so that grokking happens on the same clock (0.5 at epochs ~95-100, 0.99 at ~130-140), and the
detector is used *unscaled* (:math:`t\ge100`, lag 25, slope 0.04). :math:`\rho` of random
features at initialisation falls with the width, roughly as :math:`K^{-1/2}` (0.058 at their
size, 0.20 at quick), so at quick size it is above 0.075 before any step; the threshold is
scaled by the initial level: run :math:`b` crosses at
:math:`\rho_b(t)\ge0.075\,\rho_b(0)/\rho_{\rm ref}(0)` with :math:`\rho_{\rm ref}(0)=0.0582`
(the toolkit's value at :math:`M=71`, :math:`K=2048`, :math:`n=2016`, seed 0); at full fidelity
the threshold is their absolute 0.075. Both are part of the Reading.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

from numerics.errors import Diverged
from numerics.li2.lock_in import first_at_least, first_fire, gap_ratio, slopes
from numerics.li2.repulsion_along_training import wilson_interval
from numerics.li2.sweep_points import decode, lock_in_point
from verify import (
    LEVEL,
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
    at_least,
    at_most,
    register,
    undecided,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained

#: The third party's numbers (SOURCES §7.4), reported beside the measured ones.
THIRD_PARTY = {"fires, decay runs": "15/15 at median epoch 174", "fires, controls": "0/15",
               "late sigma2/sigma3": "~300 (decay) vs 1.31 (control)",
               "lag after test 0.99": "+35 epochs", "w=5 controls": "3/3 false positives",
               "ReLU": "0/15", "rho crosses 0.075": "epoch 17, 84 before test 0.5; 0/15 "
                                                    "controls; 60/60 of the M x p sweep"}

#: The groups of runs and the activation each is trained with.
GROUPS = {"decay": "x2", "control": "x2", "scarce": "x2", "relu": "relu"}

#: An event's probability is decided against a coin flip.
HALF = 0.5


# --- the stated forms ---------------------------------------------------------------------------

def stated_fires_with_decay():
    """The detector fires in the runs with weight decay that grok (+1)."""
    return 1.0


def stated_fires_in_controls():
    """It does not fire in the controls without weight decay (-1)."""
    return -1.0


def stated_lags():
    """It fires after test accuracy reaches 0.99 (+1)."""
    return 1.0


def stated_short_window_fires_in_controls():
    """At window 5 it fires in the controls: false positives (+1)."""
    return 1.0


def stated_fires_with_relu():
    """With ReLU it does not fire (-1)."""
    return -1.0


def stated_rho_leads():
    """rho crosses its threshold before test accuracy reaches 0.5 (+1)."""
    return 1.0


def stated_rho_without_grokking():
    """rho crosses its threshold also in runs with weight decay that do not grok (+1)."""
    return 1.0


FORMS = {"fires_with_decay": stated_fires_with_decay,
         "fires_in_controls": stated_fires_in_controls, "lags": stated_lags,
         "short_window_fires_in_controls": stated_short_window_fires_in_controls,
         "fires_with_relu": stated_fires_with_relu, "rho_leads": stated_rho_leads,
         "rho_without_grokking": stated_rho_without_grokking}


# --- the runs -----------------------------------------------------------------------------------

def _runs(p: Mapping[str, Any]) -> dict[str, list[dict[str, float]]]:
    seeds = list(p["seeds"])
    runs = {"decay": [{"seed": s, "eta": p["eta"], "p": p["p"]} for s in seeds],
            "control": [{"seed": s, "eta": 0.0, "p": p["p"]} for s in seeds],
            "scarce": [{"seed": s, "eta": p["eta"], "p": p["scarce_p"]} for s in seeds]}
    # ReLU where ``relu`` is set (full fidelity): at quick size the ReLU runs do not grok within
    # the budget, so "does not fire" would not be read off runs like the third party's
    if p["relu"]:
        runs["relu"] = [{"seed": s, "eta": p["eta"], "p": p["p"]} for s in seeds]
    return runs


def _results(run: Run) -> dict[str, dict[str, Any]]:
    """One sweep point per activation (memoised: the control and the mutants reuse it), its
    groups' runs on the batch axis; returned per group."""
    p = run.params
    runs = _runs(p)
    table = [list(row) for row in build_group(p["group"]).table]
    activations = list(dict.fromkeys(GROUPS[g] for g in runs))
    points = [{"table": table, "K": p["K"], "activation": a, "lr": p["lr"],
               "epochs": p["relu"]["epochs"] if a == "relu" else p["epochs"],
               "runs": [r for g in runs if GROUPS[g] == a
                                               for r in runs[g]],
               "windows": sorted({p["window"], p["short_window"], *p["windows"]}),
               "rho_every": p["rho_every"], "checks": list(p["checks"]),
               "device": str(run.device), "dtype": p["dtype"]} for a in activations]
    results = dict(zip(activations, run.sweep("training", lock_in_point, points)))
    out = {}
    for a, r in results.items():
        if not r["finite"]:
            raise Diverged(f"training diverged ({a})")
        start = 0
        for g in (g for g in runs if GROUPS[g] == a):
            cols = slice(start, start + len(runs[g]))
            start += len(runs[g])
            out[g] = _columns(r, cols)
    return out


def _columns(r: Mapping[str, Any], cols: slice) -> dict[str, Any]:
    """A group's columns of a point's result, decoded."""
    return {"test_acc": decode(r["test_acc"])[:, cols],
            "train_acc": decode(r["train_acc"])[cols], "train_loss": decode(r["train_loss"])[cols],
            "rho_epochs": decode(r["rho"]["epochs"]), "rho": decode(r["rho"]["values"])[:, cols],
            "ratio": {int(w): decode(v)[:, cols] for w, v in r["ratio"].items()},
            "norms": decode(r["norms"])[:, cols],
            "svd": {int(w): {k: decode(s[k])[:, cols] for k in ("eig", "svd", "bound")}
                    for w, s in r["svd"].items()},
            "rho_check": {k: decode(r["rho_check"][k])[:, cols]
                          for k in ("raw", "centred", "trainer")}}


def _fire(ratio: torch.Tensor, p: Mapping[str, Any]) -> torch.Tensor:
    return first_fire(slopes(ratio, p["lag"]), p["slope"], p["t_min"])


def _first_accuracy(g: Mapping[str, Any], level: float) -> torch.Tensor:
    acc = g["test_acc"]
    return first_at_least(torch.arange(acc.shape[0]), acc, level)


def _rho_threshold(g: Mapping[str, Any], p: Mapping[str, Any]) -> torch.Tensor:
    """Per run: 0.075, or 0.075 scaled by the run's initial level over the reference's."""
    if p["rho_reference"] is None:
        return torch.full((g["rho"].shape[1],), p["rho_threshold"], dtype=torch.float64)
    return p["rho_threshold"] * g["rho"][0] / p["rho_reference"]


def _rho_cross(g: Mapping[str, Any], p: Mapping[str, Any]) -> torch.Tensor:
    return first_at_least(g["rho_epochs"], g["rho"], _rho_threshold(g, p))


def surrogate_ratios(norms: torch.Tensor, size: int, window: int, seed: int) -> torch.Tensor:
    r""":math:`\sigma_2/\sigma_3` along training (``(T + 1, B)``, row 0 NaN like the
    measured one) of windows of structureless changes: the :math:`t`-th of norm
    ``norms[t - 1]`` (``(T, B)``) in a uniformly random direction of :math:`\mathbb R^{\rm
    size}`, all independent. Their cosines are those of Gaussian vectors, whose Gram is a
    Wishart matrix :math:`LL^\top`, sampled by Bartlett's decomposition (:math:`L` lower
    triangular, :math:`L_{ii}^2\sim\chi^2_{{\rm size}-i}`, :math:`L_{ij}\sim N(0,1)` below
    the diagonal): :math:`T\times T` numbers, not :math:`T\times P`."""
    T, B = norms.shape
    if size < T:
        raise ValueError(f"size: {size} must be >= the {T} changes")
    rng = np.random.default_rng(seed)
    L = np.tril(rng.standard_normal((B, T, T)), -1)
    idx = np.arange(T)
    L[:, idx, idx] = np.sqrt(rng.chisquare(size - idx, (B, T)))
    wishart = torch.from_numpy(L @ L.transpose(0, 2, 1))
    d = wishart.diagonal(dim1=-2, dim2=-1).sqrt()
    n = norms.mT.to(torch.float64)                                       # (B, T)
    G = wishart / (d[:, :, None] * d[:, None, :]) * (n[:, :, None] * n[:, None, :])
    rows = [torch.full((B,), math.nan, dtype=torch.float64)]
    for t in range(1, T + 1):
        lo = max(0, t - window)
        rows.append(gap_ratio(torch.linalg.eigvalsh(G[:, lo:t, lo:t]).flip(-1)))
    return torch.stack(rows)


# --- the evidence ------------------------------------------------------------------------------

def _fraction(quantity: str, hits: int, trials: int, level: float,
              parameters: Mapping[str, Any], note: str = "") -> Evidence:
    """Confirmed when the Wilson interval of hits / trials lies above 1/2, refuted when below,
    undecided when it contains 1/2 or there is no trial."""
    tolerance = Tolerance(0.0, "the Wilson interval carries the sampling error over runs "
                               "(Bonferroni over the forms)")
    params = {**parameters, "runs": trials, "hits": hits}
    if trials == 0:
        return undecided(Route.NUMERIC, quantity, "no run to count", tolerance=tolerance,
                         parameters=params)
    lo, hi = wilson_interval(hits, trials, level)
    params["interval"] = [lo, hi]
    if lo < HALF <= hi:
        return undecided(Route.NUMERIC, quantity, f"{hits}/{trials}: the Wilson {level:.4f} "
                         f"interval [{lo:.3f}, {hi:.3f}] contains 1/2", tolerance=tolerance,
                         parameters=params)
    refuted = hi < HALF
    return at_least(Route.NUMERIC, f"{quantity}: Wilson {level:.4f} "
                    f"{'upper' if refuted else 'lower'} bound of the fraction of runs",
                    measured=hi if refuted else lo, bound=HALF, tolerance=tolerance,
                    parameters=params, note=f"{hits}/{trials} runs. {note}".strip())


def _event(stated: float, happened: torch.Tensor) -> tuple[int, int]:
    """(runs where the event as stated holds, runs): the event itself for a stated +1, its
    absence for -1."""
    holds = happened if stated > 0 else ~happened
    return int(holds.sum()), len(holds)


def _route_checks(groups: Mapping[str, Mapping[str, Any]], p: Mapping[str, Any]
                  ) -> Iterator[Evidence]:
    """The SVD route against the Gram route, and rho recomputed against the trainer's."""
    eig = torch.cat([g["svd"][w]["eig"].flatten() for g in groups.values() for w in g["svd"]])
    svd = torch.cat([g["svd"][w]["svd"].flatten() for g in groups.values() for w in g["svd"]])
    bound = torch.cat([g["svd"][w]["bound"].flatten() for g in groups.values()
                       for w in g["svd"]])
    yield at_most(Route.NUMERIC, "|log(sigma2/sigma3)| by eigvalsh of the window's Gram "
                  "against the squared singular values of the stacked changes (float64)",
                  measured=(eig.log() - svd.log()).abs(), bound=bound,
                  tolerance=Tolerance(0.0, "the bound is the first-order rounding bound of the "
                                           "two routes, entry by entry"),
                  parameters={"check epochs": list(p["checks"]), "windows": sorted(
                      {p["window"], p["short_window"], *p["windows"]})})
    raw = torch.cat([g["rho_check"]["raw"].flatten() for g in groups.values()])
    trainer = torch.cat([g["rho_check"]["trainer"].flatten() for g in groups.values()])
    n = max(build_group(p["group"]).order ** 2 * f for f in (p["p"], p["scarce_p"]))
    u = torch.finfo(torch.float32).eps / 2
    m = p["K"] + n
    tol = 2 * m * u / (1 - m * u) * math.sqrt(n)
    yield at_most(Route.NUMERIC, "|rho (the trainer's fft_dist, float32) - rho recomputed in "
                  "float64 from the features (uncentred FF^T)|",
                  measured=(trainer - raw).abs(), bound=torch.full_like(raw, tol),
                  tolerance=Tolerance(0.0, "2 gamma_(K+n) sqrt(n) in float32: a Gram entry "
                                           "errs by gamma_K |f_i||f_j|, rho by (1 + rho) "
                                           "times the Gram's relative error"),
                  parameters={"check epochs": list(p["checks"]), "bound": tol})


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    M = build_group(p["group"]).order
    groups = _results(run)
    record_trained(run, M, torch.cat([g["train_acc"] for g in groups.values()]),
                   torch.cat([g["train_loss"] for g in groups.values()]),
                   where=f"the end of every run ({', '.join(groups)})",
                   test_accuracy=torch.cat([g["test_acc"][-1] for g in groups.values()]))
    decay = groups["decay"]
    t05, t99 = _first_accuracy(decay, 0.5), _first_accuracy(decay, 0.99)
    if not run.ran("the decay runs grokked", bool(torch.isfinite(t99).all()),
                   f"first epochs with test accuracy 0.99: {t99.tolist()} (budget "
                   f"{p['epochs']})"):
        return
    yield from _route_checks(groups, p)

    w, short = p["window"], p["short_window"]
    fire = {g: _fire(groups[g]["ratio"][w], p) for g in groups}
    fire_short = _fire(groups["control"]["ratio"][short], p)
    rho_cross = {g: _rho_cross(groups[g], p) for g in groups}
    scarce_groks = torch.isfinite(_first_accuracy(groups["scarce"], 0.99))
    stated = {k: float(run.stated[k]()) for k in FORMS}
    detector = {"window": w, "lag": p["lag"], "slope": p["slope"], "t_min": p["t_min"]}
    both = torch.isfinite(fire["decay"])

    items = [
        ("fires_with_decay", "the detector fires in the decay runs", torch.isfinite(
            fire["decay"]), ""),
        ("fires_in_controls", "the detector fires in the controls (eta = 0)",
         torch.isfinite(fire["control"]), ""),
        ("lags", "the detector fires after test accuracy reaches 0.99 (decay runs that fired)",
         (fire["decay"] > t99)[both], f"fire - t_0.99: {(fire['decay'] - t99).tolist()}"),
        ("short_window_fires_in_controls", f"the detector at window {short} fires in the "
         f"controls", torch.isfinite(fire_short), ""),
        ("rho_leads", "rho crosses its threshold before test accuracy reaches 0.5 (decay runs)",
         rho_cross["decay"] < t05, f"t_0.5 - rho crossing: {(t05 - rho_cross['decay']).tolist()}"),
        ("rho_without_grokking", f"rho crosses its threshold in decay runs that do not grok "
         f"(p = {p['scarce_p']:g})", torch.isfinite(rho_cross["scarce"])[~scarce_groks], ""),
    ]
    if "relu" in groups:
        items.append(("fires_with_relu", "the detector fires in the ReLU decay runs",
                      torch.isfinite(fire["relu"]), ""))
    # one interval per statement and one for the surrogate
    level = 1 - (1 - LEVEL) / (len(items) + 1)
    for form, quantity, happened, note in items:
        hits, trials = _event(stated[form], happened)
        yield _fraction(f"{quantity}: stated {stated[form]:+g}", hits, trials, level,
                        {**detector, "form": form}, note)

    surrogate = surrogate_ratios(decay["norms"], 2 * M * p["K"], w, p["surrogate_seed"])
    surrogate_fire = _fire(surrogate, p)
    yield _fraction("negative control: windows of the decay runs' update norms in random "
                    "directions do not fire", *_event(-1.0, torch.isfinite(surrogate_fire)),
                    level, detector)
    _report(run, groups, fire, fire_short, rho_cross, t05, t99, scarce_groks, surrogate)


def _median(x: torch.Tensor) -> float:
    """The median of the finite entries (NaN when none)."""
    x = x[torch.isfinite(x)]
    return float(x.median()) if len(x) else math.nan


def _epochs(x: torch.Tensor) -> list[float | None]:
    return [None if not math.isfinite(v) else v for v in x.tolist()]


def _report(run: Run, groups: Mapping[str, Mapping[str, Any]], fire: Mapping[str, torch.Tensor],
            fire_short: torch.Tensor, rho_cross: Mapping[str, torch.Tensor], t05: torch.Tensor,
            t99: torch.Tensor, scarce_groks: torch.Tensor, surrogate: torch.Tensor) -> None:
    p = run.params
    late = slice(p["epochs"] // 2, None)       # their "late": epochs 200-400 of 400
    run.figure("runs (epochs; None: never)", {g: {
        "final test accuracy": groups[g]["test_acc"][-1].tolist(),
        "test 0.5": _epochs(_first_accuracy(groups[g], 0.5)),
        "test 0.99": _epochs(_first_accuracy(groups[g], 0.99)),
        f"detector fires (window {p['window']})": _epochs(fire[g]),
        f"late sigma2/sigma3 (median over the second half, window {p['window']})":
            groups[g]["ratio"][p["window"]][late].median(0).values.tolist(),
        "rho crosses": _epochs(rho_cross[g]),
        "rho threshold": _rho_threshold(groups[g], p).tolist()} for g in groups})
    run.figure("lag and lead (decay runs, epochs)", {
        "fire - t_0.99": _epochs(fire["decay"] - t99),
        "t_0.5 - rho crossing": _epochs(t05 - rho_cross["decay"]),
        "scarce runs that grokked": int(scarce_groks.sum())})
    run.figure("window sensitivity: runs that fire, median fire epoch, median late "
               "sigma2/sigma3", {f"w={w}": {
                   g: [int(torch.isfinite(f).sum()), len(f), _median(f),
                       _median(groups[g]["ratio"][w][late].median(0).values)]
                   for g in ("decay", "control") for f in [_fire(groups[g]["ratio"][w], p)]}
                   for w in sorted(groups["decay"]["ratio"])})
    run.figure(f"control at window {p['short_window']}: fire epochs", _epochs(fire_short))
    run.figure("rho at the check epochs, median over runs: the code's uncentred FF^T (what is "
               "thresholded) and the note's P_1^perp FF^T", {g: {
                   "uncentred": groups[g]["rho_check"]["raw"].median(1).values.tolist(),
                   "centred": groups[g]["rho_check"]["centred"].median(1).values.tolist()}
                   for g in groups} | {"epochs": list(p["checks"])})
    run.figure("the third party's numbers (M=71, K=2048, n=2016)", THIRD_PARTY)
    if run.is_control:
        return
    w = p["window"]
    epochs = list(range(groups["decay"]["ratio"][w].shape[0]))
    series = {name: (epochs, x.nanmedian(1).values.tolist()) for name, x in (
        ("decay runs (median)", groups["decay"]["ratio"][w]),
        ("controls, eta = 0 (median)", groups["control"]["ratio"][w]),
        *((("ReLU decay runs (median)", groups["relu"]["ratio"][w]),) if "relu" in groups
          else ()),
        ("surrogate: random directions (median)", surrogate))}
    values = torch.tensor([v for _, y in series.values() for v in y])
    values = values[torch.isfinite(values) & (values > 0)]
    span = [float(values.min()), float(values.max())]
    for name, e in (("detector fires (median decay run)", _median(fire["decay"])),
                    ("test accuracy 0.99 (median decay run)", _median(t99))):
        if math.isfinite(e):
            series[name] = ([e, e], span)
    run.plot(Plot(f"sigma2/sigma3 of the rolling window of the last {w} first-layer updates "
                  f"(Gram eigenvalues), with the detector's firing and test accuracy 0.99",
                  x_label="epoch", y_label="sigma2 / sigma3", log_y=True, series=series,
                  styles={k: v for k, v in (
                      ("decay runs (median)", "C0-"), ("controls, eta = 0 (median)", "C1-"),
                      ("ReLU decay runs (median)", "C2-"),
                      ("surrogate: random directions (median)", "C7:"),
                      ("detector fires (median decay run)", "C3--"),
                      ("test accuracy 0.99 (median decay run)", "C4--")) if k in series}))
    rho_epochs = groups["decay"]["rho_epochs"].tolist()
    run.plot(Plot("rho (the author's fit_diag_11 of FF^T) along training, median over runs",
                  x_label="epoch", y_label="rho", series={
                      f"{g} runs": (rho_epochs, groups[g]["rho"].median(1).values.tolist())
                      for g in groups},
                  references=(Reference("threshold (median decay run)",
                                        y=float(_rho_threshold(groups["decay"], p).median())),)))


def _stated_forms_flipped() -> dict[str, Any]:
    return {k: (lambda v=-f(): v) for k, f in FORMS.items()}


CLAIM = register(Claim(
    id="li2.x.lock-in",
    paper=PAPER,
    kind="experiment",
    title="The third party's spectral lock-in detector (sigma2/sigma3 of rolling updates) and "
          "level metric rho: fires with grokking, lags it; rho an initiation marker",
    source="third-party study arXiv 2605.08119 (SOURCES §7.2 items 2-3, §7.4)",
    statement=r"s(t)=\tfrac1{25}[\log\tfrac{\sigma_2}{\sigma_3}(t)-\log\tfrac{\sigma_2}{\sigma_3}"
              r"(t-25)]>0.04,\ t\ge100:\ \text{fires in 15/15 grokking runs, 0/15 controls, "
              r"after test accuracy 0.99; window 5: false positives; ReLU: 0/15};\ "
              r"\rho\ge0.075\ \text{before test 0.5, and also without grokking}",
    reading=r"Their detector on the first layer's updates (weight decay included), window w=20, "
            r"levels = eigenvalues of the w x w Gram. Each statement is the fraction of runs in "
            r"which the stated event holds, decided by its Wilson interval against 1/2 "
            r"(Bonferroni over the statements). 'Grok runs': weight decay eta > 0 (they must "
            r"reach test accuracy 0.99 within the budget); controls: eta = 0; ReLU: the decay "
            r"runs with ReLU; non-grokking runs: decay runs on scarce data that do not reach "
            r"0.99. 'Lags': fire epoch > first epoch with test accuracy 0.99. rho: the code's "
            r"fit_diag_11 of the uncentred FF^T (their fft\_dist\_from\_ideal, which their "
            r"0.075 was set on), logged every 10 epochs at quick, every epoch at full. Quick: "
            r"Z_23, K=128, p=0.5 (scarce 0.3), lr 5e-3, eta 2e-3, 250 epochs, 8 seeds per "
            r"group, no ReLU runs: grokking on their clock (test 0.5 at ~100), the detector "
            r"unscaled (t >= 100, lag 25, slope 0.04); rho's threshold scaled by the initial "
            r"level, 0.075 rho_b(0)/0.0582 (0.0582: rho(0) at M=71, K=2048, n=2016), as rho(0) "
            r"falls roughly as K^{-1/2}. Full: their setting, 15 seeds, ReLU for 800 epochs, "
            r"absolute 0.075.",
    parameters={
        "quick": {"group": "Z23", "K": 128, "p": 0.5, "scarce_p": 0.3, "lr": 5e-3,
                  # 8 seeds: 8/8 clears 1/2 at the family-wise level (5/5 does not)
                  "eta": 2e-3, "seeds": tuple(range(8)), "epochs": 250, "relu": None,
                  # windows: 20 and the short 5 only (10 and 30 at full: time)
                  "window": 20, "short_window": 5, "windows": (), "lag": 25,
                  "slope": 0.04, "t_min": 100, "rho_threshold": 0.075,
                  # rho(0) of the third party's network (M=71, K=2048, n=2016, seed 0; the
                  # toolkit's trainer, tests/numerics/li2/test_lock_in.py)
                  "rho_reference": 0.0582,
                  # rho every 10 epochs: it crosses near epoch 10, grokking comes near 100
                  "rho_every": 10, "checks": (250,), "surrogate_seed": 0,
                  # the third party trains in float32; the detector is a statistic of the run
                  "dtype": "float32"},
        "full": {"group": "Z71", "K": 2048, "p": 0.4, "scarce_p": 0.1, "lr": 1e-3,
                 "eta": 2e-4, "seeds": tuple(range(15)), "epochs": 400,
                 "relu": {"epochs": 800},
                 "window": 20, "short_window": 5, "windows": (10, 30), "lag": 25,
                 "slope": 0.04, "t_min": 100, "rho_threshold": 0.075, "rho_reference": None,
                 "rho_every": 1, "checks": (100, 200, 400), "surrogate_seed": 0,
                 "dtype": "float32"},
    },
    stated=dict(FORMS),
    equivalent_mutants={f"{form}:{op}": "a direction: only its sign enters the decision"
                        for form in FORMS for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("every statement reversed (fires in controls, not with decay, "
                            "leads grokking, ...)", _stated_forms_flipped()),
    assumptions=(
        Assumption(">= 8 seeds per group", "a Wilson interval of 8/8 or 0/8 clears 1/2 at "
                   "the family-wise level", lambda p: len(p["seeds"]) >= 8),
        Assumption("weight decay on in the decay runs", "eta > 0 (the controls have 0)",
                   lambda p: p["eta"] > 0),
        Assumption("the third party's detector", "window 20, lag 25, slope 0.04, t >= 100, "
                   "short window 5: the settings they tuned at M=71",
                   lambda p: (p["window"], p["lag"], p["slope"], p["t_min"],
                              p["short_window"]) == (20, 25, 0.04, 100, 5)),
        Assumption("scarce data below the full fraction", "scarce_p < p",
                   lambda p: p["scarce_p"] < p["p"]),
    ),
    # Width, step size, decay, the two fractions, the seeds and the detector's window and
    # slope (other values leave "the third party's detector"); each point costs ~10 s.
    space={"K": Choice((96, 128, 192)), "lr": LogUniform(3e-3, 8e-3),
           "eta": LogUniform(1e-3, 4e-3), "scarce_p": Choice((0.25, 0.3, 0.35)),
           "seeds": Choice((tuple(range(8)), tuple(range(8, 16)), tuple(range(5)))),
           "window": Choice((20, 30)), "slope": Choice((0.04, 0.02))},
    tags=("training",),
))
