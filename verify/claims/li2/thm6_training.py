r"""li2.thm6-training: Theorem 6's repulsion along training, at checkpoints of the paper's
network (verify/claims/li2/SOURCES.md ``li2.thm6`` and ``li2.sec5-gradient``; the third-party
study, SOURCES §7).

A two-layer :math:`\sigma(x)=x^2` network is trained on modular addition with the code's
class-centred MSE and Adam (coupled weight decay), the third party's setting scaled down at
quick fidelity (:math:`K=256>n=238`, as their :math:`K=2048>n=2016`). At each checkpoint the
centred features :math:`\tilde F` give :math:`B=(\tilde F^\top\tilde F+\eta I)^{-1}` by

* the third party's route: the Woodbury form
  :math:`\eta^{-1}(I-\tilde F^\top(\tilde F\tilde F^\top+\eta I)^{-1}\tilde F)` (stated form
  ``woodbury``), in float64 as they ran it and in float32 (what an MPS device, which has no
  float64, would give);
* stable routes: the thin SVD (eigendecomposition of :math:`\tilde F^\top\tilde F`) and a
  Cholesky solve.

Evidence: the Woodbury error stays within its first-order rounding bound
:math:`4\max(n,K)u\,(a_W+\kappa)` (:mod:`numerics.li2.repulsion_along_training`) and the two
stable routes within :math:`4\max(n,K)u\kappa`; signs agree on every pair that bound
determines (an :math:`\eta` sweep in float32, where the routes part, shows the error growing
with :math:`\kappa(A)\propto1/\eta`: reported as a figure with its fitted order); the theorem's
sign rule with :math:`P_{\eta,-j\ell}` (Schur terms) holds at the most similar pairs; and the
statistic :math:`\Pr[b_{j\ell}<0\mid\cos(\tilde{\mathbf f}_j,\tilde{\mathbf f}_\ell)>\tau]` is above
1/2 (Wilson lower bound above 1/2; below, by the upper bound: refuted; across: undecided).
Every seed must have trained beyond chance (:mod:`verify.claims.li2._trained`). Full fidelity
is the third party's setting and compares with their numbers (SOURCES §7.3).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from numerics.errors import Diverged
from numerics.li2.repulsion_along_training import (
    FeatureSVD,
    RidgeRoutes,
    disjoint_similar_pairs,
    feature_cosines,
    ridge_routes,
    top_pairs,
    wilson_interval,
)
from numerics.li2.ridge_inverse import (
    full_residual_similarity,
    pair_entries,
    schur_terms,
    similarity_rounding_bound,
    third_party_code_residual_similarity,
    third_party_code_ridge_inverse,
)
from numerics.li2.sweep_points import (
    centred_features_at,
    checkpoint_weights_point,
    decode,
    thm6_trainer,
)
from numerics.li2.train_splits import train_count
from verify import (
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Plot,
    Reference,
    Route,
    Run,
    Tolerance,
    at_least,
    at_most,
    compare,
    fit_trend,
    order_along,
    register,
    undecided,
)
from verify.arrays import eye, inv, transpose
from verify.bounds import interval
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._sign_rule import flipped_sign, stated_sign
from verify.claims.li2._trained import TRAINED, record_trained

#: The third party's reported statistics (SOURCES §7.3), by checkpoint epoch.
THIRD_PARTY_SEED0_NEGATIVE = {50: 0.83, 100: 0.91, 175: 0.97, 250: 0.97, 300: 0.99}
THIRD_PARTY_SEED0_SIGN_MATCH = {50: 0.83, 100: 0.91, 175: 0.975, 250: 0.975, 300: 0.995}
THIRD_PARTY_MEDIAN_SIGN_MATCH = {50: 0.865, 100: 0.895, 175: 0.955, 250: 0.970, 300: 0.985}
#: Their technical note: IQR <= 0.015 at every checkpoint (5 seeds).
THIRD_PARTY_IQR = 0.015
#: Their ReLU run (seed 0, 800 epochs): sign match by checkpoint epoch.
THIRD_PARTY_RELU_SIGN_MATCH = {100: 0.91, 300: 0.995, 500: 1.000}

#: Family-wise level of the Wilson intervals (Bonferroni over checkpoints and readings).
LEVEL = 0.95


# --- the stated forms -------------------------------------------------------------------------

def stated_woodbury(Ft, eta):
    r"""The third party's route to :math:`B` (SOURCES §2.1's
    :math:`I-\tilde FB\tilde F^\top=\eta(\tilde F\tilde F^\top+\eta I)^{-1}`, solved for
    :math:`B`): :math:`\eta^{-1}\big(I_K-\tilde F^\top(\tilde F\tilde F^\top+\eta I_n)^{-1}
    \tilde F\big)`."""
    n, K = Ft.shape[-2], Ft.shape[-1]
    return (eye(K, Ft) - transpose(Ft) @ inv(Ft @ transpose(Ft) + eta * eye(n, Ft)) @ Ft) / eta


def stated_similar_sign():
    r"""Thm. 6's reading for trained networks: similar features get :math:`b_{j\ell}<0` (-1)."""
    return -1.0


def flipped_similar_sign():
    """Planted error: similar features attract (b_jl > 0)."""
    return 1.0


# --- training and the routes at each checkpoint ---------------------------------------------

def _n(p) -> int:
    return train_count(p["M"], p["p"])


def readings(p) -> dict[str, float]:
    r"""The two readings of :math:`\eta` in :math:`B`: the paper's scale
    :math:`\eta_{\rm paper}=n\,\eta_{\rm code}/2` (the ridge the code's loss implies, SOURCES §2.4)
    and
    the optimiser's ``weight_decay`` as the third party used it."""
    return {"paper": _n(p) * p["weight_decay"] / 2, "third party": p["weight_decay"]}


@dataclass(frozen=True)
class Training:
    """Centred features ``(S, n, K)`` (float64) and test accuracy per seed at each checkpoint;
    training accuracy and loss per seed at the last one."""

    features: dict[int, torch.Tensor]
    test_accuracy: dict[int, list[float]]
    train_accuracy: list[float]
    loss: list[float]


def _checkpoint_epochs(p, activation: str) -> tuple[int, ...]:
    return tuple(p["checkpoints"] if activation == "x2" else p["relu"]["checkpoints"])


def _train(run: Run, activation: str = "x2") -> Training:
    """The training run: one seed per point of a sweep (:meth:`Run.sweep`: in this process or
    on a Dask cluster, each seed stored as it finishes), the features rebuilt here from each
    checkpoint's first-layer weights; memoised (the stated forms do not enter). ``relu``: the
    same network with ReLU at the checkpoints of ``relu``."""
    p = run.params
    checkpoints = _checkpoint_epochs(p, activation)
    if any(c % p["eval_every"] for c in checkpoints):
        raise ValueError(f"checkpoints: {checkpoints} must be multiples of eval_every "
                         f"{p['eval_every']} (the test accuracy is logged there)")

    def simulate() -> Training:
        setting = {"table": [list(row) for row in build_group(f"Z{p['M']}").table],
                   "K": p["K"], "p": p["p"], "lr": p["lr"], "weight_decay": p["weight_decay"],
                   "checkpoints": list(checkpoints), "eval_every": p["eval_every"],
                   "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch."),
                   # x^2 points as they always were (the same stored results)
                   **({} if activation == "x2" else {"activation": activation})}
        seeds = list(p["seeds"])
        runs = run.sweep("training", checkpoint_weights_point,
                         [{**setting, "seed": s} for s in seeds])
        trainer = thm6_trainer(setting["table"], seeds, setting)
        features = {c: centred_features_at(trainer, torch.stack(
                        [decode(r["W"][i]) for r in runs]).to(run.device))
                    for i, c in enumerate(checkpoints)}
        # float(): the store writes a non-finite value as a string ('nan', 'inf')
        return Training(features, {c: [float(r["test_acc"][i]) for r in runs]
                                   for i, c in enumerate(checkpoints)},
                        [float(r["train_acc"]) for r in runs],
                        [float(r["train_loss"]) for r in runs])

    training = run.memo(_key("training", activation), simulate)
    if not all(bool(torch.isfinite(F).all()) for F in training.features.values()):
        raise Diverged("features at a checkpoint are not finite")
    return training


@dataclass(frozen=True)
class Checkpoint:
    """Everything measured at one checkpoint and one reading of eta (seeds on axis 0)."""

    epoch: int
    reading: str
    routes: RidgeRoutes
    cos: torch.Tensor
    similar: tuple[torch.Tensor, ...]   # per seed: node-disjoint most similar pairs


def _key(name: str, activation: str) -> str:
    """A memo key: the x^2 run's as it was, the ReLU run's marked."""
    return name if activation == "x2" else f"{name} ({activation})"


def _checkpoints(run: Run, activation: str = "x2") -> list[Checkpoint]:
    """Routes, cosines and most similar pairs at every checkpoint and reading; cached as one
    entry (the sign forms do not enter, the Woodbury form is in the key)."""
    def compute() -> list[Checkpoint]:
        features = _train(run, activation).features
        out = []
        for epoch, Ft in features.items():
            cos = feature_cosines(Ft)
            similar = tuple(disjoint_similar_pairs(c, run.params["threshold"]) for c in cos)
            svd = FeatureSVD.of(Ft)      # eta-free: one SVD for both readings
            for name, eta in readings(run.params).items():
                routes = ridge_routes(Ft, eta, run.stated["woodbury"], svd=svd)
                out.append(Checkpoint(epoch, name, routes, cos, similar))
        return out

    return run.memo(_key("checkpoints", activation), compute, uses=("woodbury",))


def _error(r: RidgeRoutes, B: torch.Tensor) -> torch.Tensor:
    r""":math:`\max|B-B_{\rm svd}|/\|B\|_2` per seed."""
    return (B - r.stable).abs().amax((-1, -2)) * r.lam_min


def _sweep(run: Run) -> dict[int, list[RidgeRoutes]]:
    """The Woodbury route in float32 along the eta sweep, at the sweep checkpoints (cached)."""
    def compute() -> dict[int, list[RidgeRoutes]]:
        features = _train(run).features
        out = {}
        for epoch in run.params["sweep_at"]:
            svd = FeatureSVD.of(features[epoch])      # eta-free: one SVD for the sweep
            out[epoch] = [ridge_routes(features[epoch], eta, run.stated["woodbury"],
                                       woodbury_dtype=torch.float32, solve=False, svd=svd)
                          for eta in run.params["eta_sweep"]]
        return out

    return run.memo("sweep", compute, uses=("woodbury",))


# --- evidence: the routes ---------------------------------------------------------------------

def _route_evidence(run: Run, points: list[Checkpoint], sweep: dict[int, list[RidgeRoutes]]
                    ) -> Iterator[Evidence]:
    p = run.params
    n, K = _n(p), p["K"]
    cases = [(f"epoch {c.epoch}, eta {c.reading} {c.routes.eta:.3g}, float64", c.routes)
             for c in points]
    cases += [(f"epoch {e}, eta {r.eta:g}, float32", r) for e, rs in sweep.items() for r in rs]
    errors = torch.cat([_error(r, r.woodbury) for _, r in cases])
    bounds = torch.cat([r.woodbury_bound() for _, r in cases])
    size = {"n": n, "K": K, "checkpoints": p["checkpoints"], "readings": readings(p),
            "eta_sweep (float32)": p["eta_sweep"], "sweep_at": p["sweep_at"],
            "seeds": p["seeds"]}
    yield at_most(Route.NUMERIC, "max |B_Woodbury - B_svd| / ||B||_2 <= its rounding bound "
                  "4 max(n,K) u_W (a_W + kappa) + 4 max(n,K) u kappa, every checkpoint, "
                  "reading, precision and seed", measured=errors, bound=bounds,
                  tolerance=Tolerance(0.0, "the bound is the first-order rounding analysis of "
                                           "the two routes "
                                           "(numerics.li2.repulsion_along_training); "
                                           "nothing is added to it"),
                  parameters=size)
    solved = [c.routes for c in points]
    errors_solve = torch.cat([_error(r, r.solve) for r in solved])
    yield at_most(Route.NUMERIC, "max |B_Cholesky - B_svd| / ||B||_2 <= 4 max(n,K) u kappa "
                  "(twice: one per stable route), every checkpoint, reading and seed",
                  measured=errors_solve, bound=torch.cat([2 * r.stable_bound() for r in solved]),
                  tolerance=Tolerance(0.0, "backward-stable routes: each within 4 max(n,K) u "
                                           "kappa(A) of B (verify.tolerances.conditioned)"),
                  parameters=size)

    determined_w, determined_s, flips = [], [], {}
    for label, r in cases:
        pairs = torch.triu_indices(K, K, offset=1, device=r.stable.device)
        b = r.stable[:, pairs[0], pairs[1]]
        bw = r.woodbury[:, pairs[0], pairs[1]]
        sure = b.abs() > (r.woodbury_bound() * r.norm)[:, None]
        determined_w.append(torch.sign(bw[sure]))
        determined_s.append(torch.sign(b[sure]))
        flips[label] = {"sign flips": int((torch.sign(bw) != torch.sign(b)).sum()),
                        "flips on determined pairs": int(((torch.sign(bw) != torch.sign(b))
                                                          & sure).sum()),
                        "undetermined": int((~sure).sum()), "pairs": b.numel(),
                        "max kappa": float(r.kappa.max()), "max a_W": float(r.gain.max()),
                        "error / (u_W a_W)": _ratio_range(_error(r, r.woodbury), r.gain,
                                                          r.woodbury_dtype),
                        "error / (u_W kappa)": _ratio_range(_error(r, r.woodbury), r.kappa,
                                                            r.woodbury_dtype)}
    run.figure("Woodbury route against the SVD route, per case", flips)
    stated, derived = torch.cat(determined_w), torch.cat(determined_s)
    quantity = "sign of b_jl by the Woodbury route = by the SVD route, on every pair j<l whose " \
               "|b_jl| exceeds the Woodbury bound"
    tol = Tolerance(0.0, "exact: a sign that rounding cannot flip must agree")
    if not len(stated):
        yield undecided(Route.NUMERIC, quantity, "no pair is determined at this precision",
                        tolerance=tol, parameters=size)
    else:
        undetermined = sum(v["undetermined"] for v in flips.values())
        yield compare(Route.NUMERIC, quantity, stated=stated, derived=derived, tolerance=tol,
                      metric="absolute", parameters=size,
                      note=f"{len(stated)} determined, {undetermined} undetermined pairs; every "
                           f"sign flip lies among the undetermined")


def _ratio_range(error: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> list[float]:
    ratio = error / (scale * torch.finfo(dtype).eps)
    return [float(ratio.min()), float(ratio.max())]


def _order_on_grid(etas: list[float], values: torch.Tensor) -> float:
    """The log-log order of ``values`` (one per grid point) along the eta grid."""
    table = dict(zip(etas, values.tolist()))
    return order_along(table.__getitem__, etas)


def _trend_figure(run: Run, sweep: dict[int, list[RidgeRoutes]]) -> None:
    r"""Figure: the float32 Woodbury error along the eta sweep, its fitted log-log order (a
    t-interval over seeds) beside the orders of :math:`\kappa(A)` and of the gain :math:`a_W`
    on the same grid. Reported, not decided: the rounding model bounds the error (evidence
    above); how closely the error follows the bound is a property of rounding, not of the
    paper."""
    etas = list(run.params["eta_sweep"])
    for epoch, rs in sweep.items():
        errors = torch.stack([_error(r, r.woodbury) for r in rs], 1)      # (S, G)
        orders = {"order of kappa(A) per seed": [_order_on_grid(etas, row) for row in
                                                 torch.stack([r.kappa for r in rs], 1)],
                  "order of a_W per seed": [_order_on_grid(etas, row) for row in
                                            torch.stack([r.gain for r in rs], 1)],
                  "error / (u_W kappa)": (errors / torch.stack([r.kappa for r in rs], 1)
                                          / torch.finfo(torch.float32).eps).tolist()}
        if errors.shape[0] >= 2:
            fit = fit_trend(etas, errors, limit="zero",
                            floors=torch.stack([r.stable_bound() for r in rs], 1))
            orders |= fit.figure(float(np.mean(orders["order of kappa(A) per seed"])))
        run.figure(f"Woodbury float32 error along eta, epoch {epoch}", orders)


# --- evidence: Theorem 6 at the checkpoints -------------------------------------------------

def _theorem_pairs(run: Run, points: list[Checkpoint]
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""At the ``schur_pairs`` most similar pairs of each checkpoint, reading and seed:
    :math:`\beta=\tilde{\mathbf f}_j^\top P_{\eta,-j\ell}\tilde{\mathbf f}_\ell`, :math:`b_{j\ell}`
    (SVD route), and whether both exceed their rounding bounds (cached: the sign forms do not
    enter)."""
    def compute() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        p = run.params
        features = _train(run).features
        betas, bs, beta_bounds, b_bounds = [], [], [], []
        for c in points:
            for s in range(len(c.similar)):
                pairs = c.similar[s][:p["schur_pairs"]]
                Ft = features[c.epoch][s]
                beta = schur_terms(Ft, c.routes.eta, pairs)[1]
                betas.append(beta)
                bs.append(pair_entries(c.routes.stable[s], pairs))
                beta_bounds.append(similarity_rounding_bound(Ft, c.routes.eta, pairs))
                b_bounds.append(torch.full_like(beta, float(c.routes.stable_bound()[s]
                                                            * c.routes.norm[s])))
        beta, b = torch.cat(betas), torch.cat(bs)
        sure = (beta.abs() > torch.cat(beta_bounds)) & (b.abs() > torch.cat(b_bounds))
        return beta, b, sure

    return run.memo("schur", compute, uses=("woodbury",))


def _theorem_evidence(run: Run, points: list[Checkpoint]) -> Iterator[Evidence]:
    p = run.params
    beta, b, sure = _theorem_pairs(run, points)
    quantity = "Thm 6 sign rule sign(b_jl) = -sign(f_j^T P_{eta,-jl} f_l) at the most similar " \
               "node-disjoint pairs of every checkpoint, reading and seed"
    tol = Tolerance(0.0, "exact: every pair whose |beta| and |b_jl| exceed their rounding bounds "
                         "must obey the rule; the others are excluded and counted")
    size = {"pairs per seed and checkpoint": p["schur_pairs"], "checked": len(beta),
            "checkpoints": p["checkpoints"], "readings": readings(p)}
    if not bool(sure.any()):
        yield undecided(Route.NUMERIC, quantity, "no pair's sign is determined", tolerance=tol,
                        parameters=size)
        return
    yield compare(Route.NUMERIC, quantity, stated=run.stated["sign_rule"](beta[sure]),
                  derived=torch.sign(b[sure]), tolerance=tol, metric="absolute",
                  parameters=size,
                  note=f"{int(sure.sum())} determined, {int((~sure).sum())} undetermined")


def _repulsion_evidence(run: Run, points: list[Checkpoint], label: str = ""
                        ) -> Iterator[Evidence]:
    r"""Wilson intervals of :math:`\Pr[\mathrm{sign}\,b_{j\ell}=\text{stated}\mid\cos>\tau]`
    on node-disjoint most-similar pairs pooled over seeds, one per checkpoint and reading."""
    p = run.params
    level = 1 - (1 - LEVEL) / len(points)
    predicted = float(run.stated["similar_sign"]())
    table: dict[str, dict] = {}
    intervals: dict[str, list[tuple[float, float]]] = {}
    all_pairs: dict[str, dict] = {}
    for c in points:
        hits = trials = 0
        for s in range(c.cos.shape[0]):
            pairs = c.similar[s]
            b = pair_entries(c.routes.stable[s], pairs)
            b = b[b.abs() > c.routes.stable_bound()[s] * c.routes.norm[s]]
            hits += int((torch.sign(b) == predicted).sum())
            trials += len(b)
        lo, hi = wilson_interval(hits, trials, level) if trials else (math.nan, math.nan)
        intervals.setdefault(c.reading, []).append((lo, hi))
        table[f"epoch {c.epoch}, eta {c.reading}"] = {
            "pairs": trials, "fraction with the stated sign": hits / trials if trials else None,
            "Wilson interval": [lo, hi]}
        all_pairs[f"epoch {c.epoch}, eta {c.reading}"] = _all_pairs_fractions(c)
    run.figure(f"{label}node-disjoint most similar pairs (cos > {p['threshold']:g}), pooled "
               f"over seeds, "
               f"{level:.4f} Wilson intervals", table)
    run.figure(f"{label}all pairs j<l: fraction with b_jl < 0 given cos > tau (pooled over "
               "seeds; pairs "
               "share nodes, so no interval)", all_pairs)
    if not run.is_control:
        # the repulsion along training: the fraction of similar pairs with the stated sign
        # at each checkpoint, its interval, and the coin-flip line it must clear
        series, styles = {}, {}
        for i, reading in enumerate(dict.fromkeys(c.reading for c in points)):
            epochs = [c.epoch for c in points if c.reading == reading]
            rows = [table[f"epoch {e}, eta {reading}"] for e in epochs]
            name = f"eta {reading}"
            series[name] = (epochs, [math.nan if r["fraction with the stated sign"] is None
                                     else r["fraction with the stated sign"] for r in rows])
            series[f"{name}, Wilson interval low"] = (epochs,
                                                      [r["Wilson interval"][0] for r in rows])
            series[f"{name}, high"] = (epochs, [r["Wilson interval"][1] for r in rows])
            styles.update({name: f"C{i}-", f"{name}, Wilson interval low": f"C{i}:",
                           f"{name}, high": f"C{i}:"})
        run.plot(Plot(f"{label}similar pairs (cos > {p['threshold']:g}) whose b_jl has the "
                      f"stated sign, "
                      f"along training (pooled over seeds; dotted: {level:.4f} Wilson interval)",
                      x_label="epoch", y_label="fraction of pairs", series=series,
                      styles=styles, references=(Reference("coin flip", y=0.5),)))
    tolerance = Tolerance(0.0, "the interval carries the sampling error (Bonferroni over "
                               "checkpoints and readings)")
    params = {"checkpoints": sorted({c.epoch for c in points}), "seeds": p["seeds"],
              "threshold": p["threshold"]}
    for reading, bounds in intervals.items():
        lows, highs = (torch.tensor(x) for x in zip(*bounds))
        event = (f"{label}Pr[sign(b_jl) = {predicted:+g} | cos(f_j, f_l) > "
                 f"{p['threshold']:g}] >= 1/2 "
                 f"at each checkpoint, eta {reading} = {readings(p)[reading]:.3g}")
        # confirmed where the lower end is above 1/2, refuted where the upper end is below;
        # an interval across 1/2 (few similar pairs) decides nothing
        refuted = bool((highs < 0.5).any())
        if not refuted and bool((lows < 0.5).any()):
            yield undecided(Route.NUMERIC, f"Wilson {level:.4f} lower bound of {event}",
                            f"the intervals {[[round(x, 3) for x in b] for b in bounds]} "
                            f"contain 1/2 at some checkpoint", tolerance=tolerance,
                            parameters=params)
            continue
        yield at_least(Route.NUMERIC, f"Wilson {level:.4f} {'upper' if refuted else 'lower'} "
                       f"bound of {event}", measured=highs if refuted else lows,
                       bound=torch.full((len(bounds),), 0.5), tolerance=tolerance,
                       parameters=params,
                       note="'similar': cosine of the sample-centred activation columns above "
                            "the threshold; node-disjoint pairs chosen greedily by decreasing "
                            "cosine, so no two counted pairs share a feature")


def _all_pairs_fractions(c: Checkpoint) -> dict[str, float | None]:
    K = c.cos.shape[-1]
    pairs = torch.triu_indices(K, K, offset=1, device=c.cos.device)
    cos = c.cos[:, pairs[0], pairs[1]]
    b = c.routes.stable[:, pairs[0], pairs[1]]
    out = {}
    for tau in (0.0, 0.3, 0.5):
        keep = cos > tau
        out[f"cos > {tau:g}"] = float((b[keep] < 0).double().mean()) if keep.any() else None
        out[f"pairs with cos > {tau:g}"] = int(keep.sum())
    return out


# --- the third party's statistics -------------------------------------------------------------

def _their_statistics(run: Run, points: list[Checkpoint], activation: str = "x2"
                      ) -> dict[int, dict[str, list[float]]]:
    r"""Per checkpoint and seed, at their selection (top pairs by :math:`|\cos|`) and their
    :math:`\eta`: frac :math:`b<0` on +sim (stable :math:`B`), their code's sign match
    (:math:`B` with the extra :math:`1/\eta`, their residual similarity), and the intended
    full-:math:`P_\eta` rule computed their way (Woodbury float64) and stably. Cached (the
    sign forms do not enter, the Woodbury form is in the key)."""
    return run.memo(_key("their statistics", activation),
                    lambda: _compute_their_statistics(run, points, activation),
                    uses=("woodbury",))


def _compute_their_statistics(run: Run, points: list[Checkpoint], activation: str
                              ) -> dict[int, dict[str, list[float]]]:
    features = _train(run, activation).features
    out: dict[int, dict[str, list[float]]] = {}
    for c in points:
        if c.reading != "third party":
            continue
        Ft, eta, stats = features[c.epoch], c.routes.eta, {}
        for s in range(Ft.shape[0]):
            pairs = top_pairs(c.cos[s], run.params["third_party_pairs"])
            cos = c.cos[s][pairs[:, 0], pairs[:, 1]]
            b = pair_entries(c.routes.stable[s], pairs)
            B_code = third_party_code_ridge_inverse(Ft[s], eta)
            code = pair_entries(B_code, pairs)
            residual = third_party_code_residual_similarity(Ft[s], B_code, pairs)
            G = Ft[s].T @ Ft[s]
            Bw = c.routes.woodbury[s]
            theirs = (G - G @ Bw @ G)[pairs[:, 0], pairs[:, 1]]     # f_j^T (I - Ft B_W Ft^T) f_l
            stable = full_residual_similarity(Ft[s], eta, pairs)
            for name, value in (
                    ("frac B<0 on +sim", (b[cos > 0] < 0).double().mean()),
                    ("sign match, their code", (torch.sign(code) == -torch.sign(residual))
                     .double().mean()),
                    ("sign match, full P_eta, their way (Woodbury)",
                     (torch.sign(pair_entries(Bw, pairs)) == -torch.sign(theirs)).double().mean()),
                    ("sign match, full P_eta, stable", (torch.sign(b) == -torch.sign(stable))
                     .double().mean())):
                stats.setdefault(name, []).append(float(value))
        out[c.epoch] = stats
    return out


def _spread(values: list[float]) -> float:
    q = np.quantile(values, [0.25, 0.75]) if len(values) > 1 else (0.0, 0.0)
    return float(q[1] - q[0])


def _third_party_evidence(run: Run, stats: dict[int, dict[str, list[float]]]
                          ) -> Iterator[Evidence]:
    p = run.params
    seeds = list(p["seeds"])
    if 0 not in seeds:
        raise ValueError("seeds: the third-party comparison needs seed 0 (their single-seed "
                         "table)")
    epochs = [e for e in p["checkpoints"] if e in THIRD_PARTY_SEED0_NEGATIVE]
    for name, reported, rounding in (
            ("frac B<0 on +sim", THIRD_PARTY_SEED0_NEGATIVE, 0.005),
            ("sign match, their code", THIRD_PARTY_SEED0_SIGN_MATCH, 0.0025)):
        ours = [stats[e][name][seeds.index(0)] for e in epochs]
        spread = max(_spread(stats[e][name]) for e in epochs)
        yield compare(Route.NUMERIC, f"third party, seed 0: {name} at epochs {epochs}",
                      stated=torch.tensor([reported[e] for e in epochs]),
                      measured=torch.tensor(ours), metric="absolute",
                      tolerance=Tolerance(spread + rounding, f"our largest {len(seeds)}-seed "
                                          f"IQR {spread:.3g} (same seed: same init and split, "
                                          f"only float arithmetic differs) + their rounding "
                                          f"{rounding:g}"))
    medians = [float(np.median(stats[e]["sign match, their code"])) for e in epochs]
    spread = max(_spread(stats[e]["sign match, their code"]) for e in epochs)
    yield compare(Route.NUMERIC, f"third party, {len(seeds)} seeds: median sign match of their "
                  f"code at epochs {epochs}",
                  stated=torch.tensor([THIRD_PARTY_MEDIAN_SIGN_MATCH[e] for e in epochs]),
                  measured=torch.tensor(medians), metric="absolute",
                  tolerance=Tolerance(max(THIRD_PARTY_IQR, spread) + 0.0025,
                                      "the larger of their IQR bound 0.015 and ours, + their "
                                      "rounding 0.0025"))


# --- the check ------------------------------------------------------------------------------

def _setting_matches(p) -> bool:
    return (p["M"], p["K"], _n(p), p["weight_decay"], p["lr"]) == (71, 2048, 2016, 2e-4, 1e-3) \
        and set(THIRD_PARTY_SEED0_NEGATIVE) <= set(p["checkpoints"])


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    matches = _setting_matches(p)
    run.assume("the third party's setting: M = 71, K = 2048, n = 2016, weight decay 2e-4, "
               "Adam lr 1e-3, checkpoints 50-300", matches,
               detail=f"M = {p['M']}, K = {p['K']}, n = {_n(p)}, weight decay "
                      f"{p['weight_decay']:g}", probe=not matches)
    training = _train(run)
    last = max(p["checkpoints"])
    record_trained(run, p["M"], training.train_accuracy, training.loss, where=f"epoch {last}",
                   test_accuracy=training.test_accuracy[last])
    run.figure("test accuracy at the checkpoints, per seed", training.test_accuracy)
    points = _checkpoints(run)
    sweep = _sweep(run)
    yield from _route_evidence(run, points, sweep)
    _trend_figure(run, sweep)
    yield from _theorem_evidence(run, points)
    yield from _repulsion_evidence(run, points)
    stats = _their_statistics(run, points)
    run.figure("the third party's statistics at their selection (top pairs by |cos|) and their "
               "eta, per checkpoint and seed", stats)
    run.figure("the third party's reported numbers (M = 71, K = 2048)", {
        "seed 0, frac B<0 on +sim": THIRD_PARTY_SEED0_NEGATIVE,
        "seed 0, sign match": THIRD_PARTY_SEED0_SIGN_MATCH,
        "5-seed median sign match": THIRD_PARTY_MEDIAN_SIGN_MATCH})
    if p["third_party"]:
        yield from _third_party_evidence(run, stats)
    if p["relu"] and p["relu"]["checkpoints"]:   # no checkpoints: no ReLU run
        yield from _relu_evidence(run)


def _relu_evidence(run: Run) -> Iterator[Evidence]:
    """The same network with ReLU (the third party's variant): the repulsion statistic along
    training as evidence, their sign match at their selection beside their numbers."""
    p = run.params
    training = _train(run, "relu")
    last = max(_checkpoint_epochs(p, "relu"))
    record_trained(run, p["M"], training.train_accuracy, training.loss,
                   where=f"ReLU, epoch {last}", test_accuracy=training.test_accuracy[last],
                   name=f"{TRAINED} (ReLU)")
    run.figure("ReLU: test accuracy at the checkpoints, per seed", training.test_accuracy)
    points = _checkpoints(run, "relu")
    yield from _repulsion_evidence(run, points, label="ReLU: ")
    stats = _their_statistics(run, points, "relu")
    run.figure("ReLU: the third party's statistics at their selection and their eta, per "
               "checkpoint and seed", stats)
    run.figure("ReLU: the third party's reported sign match (seed 0, M = 71, K = 2048)",
               THIRD_PARTY_RELU_SIGN_MATCH)


CLAIM = register(Claim(
    id="li2.thm6-training",
    paper=PAPER,
    kind="theorem",
    title="Thm 6 along training: Woodbury vs stable B at checkpoints, the sign rule, and "
          "Pr[b_jl < 0 | similar features]",
    source="Thm. 6 (§5), App. B.1; §5 preamble; third-party study arXiv 2605.08119 (§7.2-7.3)",
    statement=r"\mathrm{sign}(b_{j\ell})=-\mathrm{sign}\big(\tilde{\mathbf f}_j^\top "
              r"P_{\eta,-j\ell}\tilde{\mathbf f}_\ell\big);\ \text{similar features get}\ "
              r"b_{j\ell}<0\ \text{and push each other apart};\ "
              r"B=(\tilde F^\top\tilde F+\eta I)^{-1}=\eta^{-1}\big(I-\tilde F^\top"
              r"(\tilde F\tilde F^\top+\eta I)^{-1}\tilde F\big)",
    reading=r"\tilde F=P_1^\perp\sigma(XW): the hidden activations on the n training samples, "
            r"sample-centred, at checkpoints of Adam training (coupled weight decay "
            r"\eta_{code}, lr 10^{-3}, x^2, the code's class-centred MSE, default init, full "
            r"batch; epoch t = after t steps). \eta in B is read two ways: the paper's scale "
            r"\eta_{paper}=n\eta_{code}/2 (§2.4) and the third party's \eta=\eta_{code}. "
            r"'Features similar': \cos(\tilde{\mathbf f}_j,\tilde{\mathbf f}_\ell)>\tau "
            r"(\tau=0: positively correlated), counted on node-disjoint pairs chosen greedily "
            r"by decreasing cosine (each node with its most similar free partner), pooled over "
            r"seeds; 'get b_{j\ell}<0' is read as \Pr[b_{j\ell}<0\mid\text{similar}]>1/2, "
            r"confirmed by a Wilson lower bound above 1/2, refuted by an upper bound below it, "
            r"undecided by an interval across it (Bonferroni over checkpoints and readings; "
            r"the interval treats the disjoint pairs as independent, which B's coupling of "
            r"all nodes makes approximate). The third party's statistics (top 200 pairs by "
            r"|\cos|, \eta_{code}, their code's B with an extra 1/\eta) are reported, and "
            r"compared with their numbers only in their setting (full fidelity). Quick "
            r"fidelity: M=23, K=256 > n=238 (as their K=2048 > n=2016), \eta_{paper}=0.20 as "
            r"in Fig. 3, checkpoints 100, 350, 700: before, during and after grokking (test "
            r"accuracy 0 -> 1 between epochs 200 and 700).",
    parameters={
        "quick": {"M": 23, "K": 256, "p": 0.45, "lr": 1e-3, "weight_decay": 1.7e-3,
                  "seeds": (0, 1, 2), "checkpoints": (100, 350, 700),
                  "eval_every": 50, "threshold": 0.0, "schur_pairs": 1,
                  "third_party_pairs": 200, "eta_sweep": (1e-2, 1e-3, 1e-4, 1e-5, 1e-6),
                  "sweep_at": (700,), "third_party": False,
                  # ReLU on the same seeds at two of the checkpoints (about a second more;
                  # the ReLU net fits its training set but does not grok at this size)
                  "relu": {"checkpoints": (100, 350)}},
        "full": {"M": 71, "K": 2048, "p": 0.4, "lr": 1e-3, "weight_decay": 2e-4,
                 "seeds": (0, 1, 2, 3, 4), "checkpoints": (50, 100, 175, 250, 300),
                 "eval_every": 25, "threshold": 0.0, "schur_pairs": 2,
                 "third_party_pairs": 200, "eta_sweep": (1e-2, 1e-3, 1e-4, 1e-5, 1e-6),
                 "sweep_at": (50, 300), "third_party": True,
                 # their ReLU checkpoints (seed 0: sign match 0.91, 0.995, 1.000)
                 "relu": {"checkpoints": (100, 300, 500)}},
    },
    stated={"woodbury": stated_woodbury, "sign_rule": stated_sign,
            "similar_sign": stated_similar_sign},
    check=check,
    control=NegativeControl("sign flipped: sign(b_jl) = +sign(f_j^T P_{eta,-jl} f_l), and "
                            "similar features get b_jl > 0",
                            {"sign_rule": flipped_sign, "similar_sign": flipped_similar_sign}),
    assumptions=(
        Assumption("B exists", "weight decay > 0 and every swept eta > 0",
                   lambda p: p["weight_decay"] > 0 and min(p["eta_sweep"]) > 0),
        Assumption("weight decay matched to the paper's", "n eta / 2 within 10% of the "
                   "paper's 2016 x 2e-4 / 2 = 0.2016",
                   lambda p: abs(_n(p) * p["weight_decay"] / 2 / 0.2016 - 1) < 0.1),
        Assumption("sweep checkpoints are checkpoints", "sweep_at is a subset of checkpoints",
                   lambda p: set(p["sweep_at"]) <= set(p["checkpoints"])),
    ),
    # the group Z_M, width K (down to K < n), training ratio, Adam's step and weight decay
    # (the matched eta_paper = n eta / 2 ~ 0.2 holds only along a curve of (M, p, eta)), and
    # the seeds (they fix init and split). A step that keeps the network at chance is
    # recorded by the "trained beyond chance" criterion: inconclusive, not a verdict.
    space={"M": IntRange(11, 23), "K": IntRange(32, 256), "p": Choice((0.3, 0.45, 0.6, 0.8)),
           "lr": LogUniform(3e-4, 1.0), "weight_decay": LogUniform(3e-4, 1e-2),
           "seeds": Choice(((0, 1, 2), (3, 4, 5), (6, 7, 8))),
           "relu": Choice(({"checkpoints": ()}, {"checkpoints": (100, 350, 700)}))},
    bounds={"threshold": interval(0, 1, "[)", "similar means cos > threshold: below 0 "
                                  "every pair is similar, from 1 none is")},
    tags=("training",),
))
