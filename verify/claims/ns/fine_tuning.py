r"""ns.x.fine-tuning: the fine-tuning experiments (verify/claims/ns/SOURCES.md §6 items 3-4) at a
scale that runs on a CPU: "SGD with lr << 1 stays stuck while Adam escapes", and "after
fine-tuning Adam leaves fewer and weaker negative Hessian eigenvalues; SGD with a small lr stays
near a saddle".

Setting (:mod:`numerics.ns.fine_tuning`). A frozen random feature map :math:`\phi=\tanh(W_1x)`
("pretrained"), a new task :math:`y = W^\star\phi` with :math:`W^\star` of rank :math:`k`, and a
LoRA-style head :math:`W = BA` (:math:`B\in\mathbb R^{m\times r}`, :math:`A\in\mathbb R^{r\times
n}`) started as LoRA starts, :math:`B = 0`, :math:`A = a\hat A` (:math:`\|\hat A\|_F = 1`): the
paper's :math:`w_1 = 0,\ w_2 = a` at depth 2, next to the saddle :math:`B = A = 0`. Loss
:math:`f(W) = \tfrac12\operatorname{tr}((W-W^\star)\Sigma(W-W^\star)^\top)`, full batch; SGD
(plain, q = 2), sign descent (q = 1), Adam and AdamW (``torch.optim``'s formulas) at the same
learning rates, one problem and start per seed; each configuration is a sweep point.

Derived (the toolkit's, from the definitions).

* Hessian at the saddle: :math:`d^2f = 2\langle M, dB\,dA\rangle` with :math:`M = \nabla f(0) =
  -W^\star\Sigma`, so its eigenvalues are :math:`\pm\sigma_j(M)`, :math:`r` times each, and
  zeros: at depth 2 the saddle is strict, with :math:`r\,\operatorname{rank}M` negative
  directions of first order (higher order only from depth 3, ``ns.thm4.3``). At the start
  :math:`(0, a\hat A)` the Hessian differs from it by the block :math:`I\otimes A\Sigma
  A^\top\succeq 0`, of norm :math:`\le a^2\|\Sigma\|`.
* Escape: linearised at the saddle, GD's step multiplies the unstable mode by
  :math:`1+\eta\sigma_1(M)`, so the steps to leave grow like :math:`\log(1/a)/\log(1+\eta
  \sigma_1)` (flow: :math:`\log(1/a)/(\eta\sigma_1)`); sign descent moves every coordinate at
  speed :math:`\eta`, so its escape time is bounded as :math:`a\to0` (:math:`\kappa = 0`,
  ``ns.fig3-path``). Each optimiser's escape steps :math:`n(\eta)\to T/\eta`: order
  :math:`-1` in :math:`\eta`, and the ratio :math:`n_{SGD}/n_{sign}\to T_{GD}/T_{sign}` of order
  0: the gap grows like :math:`1/\eta` in epochs and like :math:`\log(1/a)` as a ratio, not as
  a ratio in :math:`\eta`. Adam reaches the sign limit only once its escape takes many more
  than :math:`1/(1-\beta_2)` steps (``ns.adam-vs-signgf``).
* Which mode: escape is read at 90% of the initial loss, the first escape alone. From a tiny
  start the modes leave one after another (saddle to saddle), so a lower fraction can need the
  second mode and then grows like :math:`\log(1/a)/\log(1+\eta\sigma_2)` (found: target
  singular values (4, 3), a seed with :math:`\sigma_2/\sigma_1 = 0.83`, at half the loss).

Evidence. Stated (signs over seeds, 95% Student-t interval): SGD escapes later than each of
sign descent, Adam and AdamW at every near-saddle scale :math:`a` (smallest lr); where SGD has
not escaped within the epoch budget, its Hessian has more eigenvalues below
:math:`-\tau\sigma_k(M)` and a more negative smallest one than each other optimiser's.
Derived vs measured: the Hessian at the start (Weyl); the order in :math:`\eta` of SGD's and
sign descent's escape steps (-1) and of their ratio (0); the coefficient of :math:`\log(1/a)` in
SGD's escape steps (sign descent's: 0). Control (not stated by the paper): the Hessian is
compared only at the lrs where SGD from the start away from the saddle (:math:`B, A` of norm 1)
has escaped within the budget while SGD from the saddle has not; at a budget where SGD is stuck
from anywhere, "stuck" is no sign of the saddle and the comparison is undecided.

Larger setting (:mod:`numerics.ns.lora_finetune`, :func:`_network`): a tanh MLP pretrained on
a random teacher's labels, fine-tuned through LoRA adapters on every layer (:math:`B = 0`,
:math:`\|A\|_F = 0.1`) on the labels shifted by one class; the paper's table (SGD at a small
lr, SGD at the tuned lr, Adam at the small lr) as validation accuracies over seeds, and the
extreme eigenvalues of the adapters' Hessian at the end by Lanczos on Hessian-vector products
(PyHessian's method). Items: Adam's accuracy minus SGD's at the small lr > 0; SGD's count of
Ritz values below :math:`-0.1|\lambda_{min}|` of the start, and its smallest, against Adam's.
SGD at the tuned lr is the gate that the new task is reachable at the budget.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

from numerics.ns.lora_finetune import finetune_point
from numerics.ns.fine_tuning import (
    METHODS,
    AdapterProblems,
    fine_tune_point,
    initial_adapter,
    make_problems,
)
from verify import (
    SEED,
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
    compare,
    fit_trend,
    pair_estimates,
    register,
    trend_evidence,
    undecided,
    unit_roundoff,
)
from verify.claims.ns import PAPER
from verify.claims.ns._seed_sign import SIGN, sign_evidence

#: The optimisers SGD is compared with.
OTHERS = tuple(m for m in METHODS if m != "sgd")

def stated_sgd_slower():
    r"""§6 item 3: at a matched small lr SGD stays stuck while Adam escapes:
    :math:`\log(n_{SGD}/n_X) > 0` (+1)."""
    return 1.0


def stated_fewer_negative():
    r"""§6 item 4: Adam leaves fewer and weaker negative eigenvalues than SGD with a small
    lr: (count, :math:`|\lambda_{min}|`) of SGD minus that of X > 0 (+1)."""
    return 1.0


# --- the runs -----------------------------------------------------------------------------------

def _starts(p: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(name, a, b): every near-saddle scale (B = 0), then the start away from the saddle."""
    return [(f"a={a:g}", a, 0.0) for a in p["a"]] + [("away", p["away"]["a"], p["away"]["b"])]


def _results(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
    p = run.params
    starts = _starts(p)
    common = {"seeds": list(p["seeds"]), "lrs": list(p["lrs"]), **p["problem"],
              "epochs": p["epochs"], "cap": p["cap"], "record_every": p["record_every"],
              "escape_fraction": p["escape_fraction"], "weight_decay": p["weight_decay"]}
    keys = [(method, name) for method in METHODS for name, _, _ in starts]
    points = [{**common, "method": method, "a": a, "b": b}
              for method in METHODS for _, a, b in starts]
    return dict(zip(keys, run.sweep("training", fine_tune_point, points)))


def _grid(r: Mapping[str, Any], key: str, lrs: int) -> np.ndarray:
    """A per-run list of a result as ``(lrs, seeds, ...)``."""
    x = np.asarray(r[key], dtype=np.float64)
    return x.reshape(lrs, -1, *x.shape[1:])


# --- Hessian at the start ---------------------------------------------------------------------

def _saddle_hessian(run: Run, problems: AdapterProblems) -> Iterator[Evidence]:
    r"""The spectrum at :math:`(0, a\hat A)` against :math:`\pm\sigma_j(M)` (``r`` times) and
    zeros, within Weyl's :math:`a^2\|\Sigma\|`."""
    p, q = run.params, run.params["problem"]
    seeds = list(p["seeds"])
    sv = torch.linalg.svdvals(problems.saddle_gradient())
    zeros = q["m"] * q["r"] + q["r"] * q["n"] - 2 * q["r"] * sv.shape[1]
    derived = torch.sort(torch.cat([sv.repeat(1, q["r"]), -sv.repeat(1, q["r"]),
                                    torch.zeros(len(seeds), zeros, dtype=sv.dtype)], 1))[0]
    sigma = torch.linalg.matrix_norm(problems.Sigma, ord=2).max().item()
    u = unit_roundoff(torch.float64)
    for a in p["a"]:
        B, A = initial_adapter(seeds, m=q["m"], r=q["r"], n=q["n"], a=a, b=0.0)
        measured = problems.hessian_spectrum(B, A)
        yield compare(Route.NUMERIC, f"Hessian spectrum at the LoRA start (B = 0, |A| = {a:g}) "
                      f"vs the saddle's: +-sigma_j(M) {q['r']} times each, zeros",
                      derived=derived.numpy(), measured=measured.numpy(), metric="absolute",
                      tolerance=Tolerance(a * a * sigma + 64 * derived.shape[1] * u
                                          * float(sv.max()),
                                          "Weyl: the start adds I x A Sigma A^T, norm <= a^2 "
                                          "||Sigma||; eigvalsh's backward error ~ P u max|lambda|"),
                      parameters={"a": a, "r": q["r"], "seeds": len(seeds)})


# --- escape ---------------------------------------------------------------------------------------

def _escape(run: Run, steps: dict, sigma: np.ndarray) -> Iterator[Evidence]:
    p = run.params
    lrs = list(p["lrs"])
    names = [name for name, _, _ in _starts(p)]
    near = names[:-1]
    stated = float(run.stated["sgd_slower"]())
    table: dict[str, Any] = {}
    for name in names:
        for X in OTHERS:
            ratio = np.log(steps[("sgd", name)] / steps[(X, name)])        # (lrs, seeds)
            table[f"{name}: log(n_SGD / n_{X}) per lr (mean over seeds)"] = \
                dict(zip([f"lr={x:g}" for x in lrs], ratio.mean(1).tolist()))
            if name in near:
                yield sign_evidence(f"{name}, lr = {lrs[-1]:g}: SGD escapes later than {X} "
                                    f"(sign of mean log(n_SGD / n_{X}) over seeds)", ratio[-1],
                                    stated=stated,
                                    parameters={"a": name, "lr": lrs[-1], "optimiser": X})
    run.figure("log ratio of escape steps, SGD over each optimiser (away: B, A of norm 1; "
               "read as no evidence of a saddle)", table)
    orders = {}
    for name in near:
        for method in METHODS:
            fit = fit_trend(lrs, steps[(method, name)].T)
            orders[f"{method}, {name}"] = {"order": fit.order, "interval": list(fit.interval)}
            if method in ("sgd", "signgd"):
                yield from trend_evidence(f"{name}: {method} escape steps as lr -> 0 (derived: "
                                          f"T / lr)", fit, stated_order=-1.0, bound="exact",
                                          parameters={"a": name})
        for X in OTHERS:
            fit = fit_trend(lrs, (steps[("sgd", name)] / steps[(X, name)]).T)
            orders[f"n_SGD / n_{X}, {name}"] = {"order": fit.order,
                                                "interval": list(fit.interval)}
            if X == "signgd":
                yield from trend_evidence(f"{name}: ratio n_SGD / n_signgd as lr -> 0 "
                                          f"(derived: constant T_GD / T_sign, not growing)",
                                          fit, stated_order=0.0, bound="exact",
                                          parameters={"a": name})
    run.figure("fitted order in lr of the escape steps and of their ratios (Adam reaches the "
               "sign limit only for n >> 1/(1 - beta2) steps)", orders)
    yield from _log_coefficient(run, steps, sigma, near)


def _log_coefficient(run: Run, steps: dict, sigma: np.ndarray, near: list[str]
                     ) -> Iterator[Evidence]:
    r"""Escape steps per unit :math:`\log(1/a)` from the last pair of scales, per seed: SGD's
    derived :math:`1/\log(1+\eta\sigma_1)`, sign descent's 0 (bounded escape time).

    Per seed bound: the escape step is the first integer step past the crossing (one pair
    estimate off by < 1/span); the finite-a bias shrinks by :math:`\rho` per pair, the
    derived rate of the leading correction (SGD: the next mode's share of the escape,
    :math:`(a_{k+1}/a_k)^{2(1-\sigma_2/\sigma_1)}`; sign descent: :math:`T(a) - T(0) = O(a)`),
    so what is left beyond the last pair is at most :math:`(|c| + 2/\text{span})\rho/(1-\rho)`
    with :math:`c` the last change of the estimates. Decided in units of that bound."""
    p = run.params
    a = list(p["a"])
    decade = a[-1] / a[-2]
    laws = {"sgd": decade ** (2 * (1 - sigma[:, 1] / sigma[:, 0])),
            "signgd": np.full(sigma.shape[0], decade)}
    figure = {}
    for i, lr in enumerate(p["lrs"]):
        derived = {"sgd": 1.0 / np.log1p(lr * sigma[:, 0]), "signgd": np.zeros(sigma.shape[0])}
        for method, rho in laws.items():
            est, bound = [], []
            for s in range(len(p["seeds"])):
                e, spans = pair_estimates(a, [float(steps[(method, n)][i, s]) for n in near],
                                          "log")
                change = abs(e[-1] - e[-2]) + 2 / spans[-1]
                est.append(e[-1])
                bound.append(1 / spans[-1] + change * rho[s] / (1 - rho[s]))
            est_, bound_ = np.array(est), np.array(bound)
            figure[f"{method}, lr={lr:g}"] = {"derived": derived[method].tolist(),
                                              "measured": est, "bound": bound}
            what = ("1/log(1 + lr sigma_1(M)) (linearised saddle)" if method == "sgd"
                    else "0 (escape time bounded as a -> 0)")
            yield compare(Route.RATE, f"lr = {lr:g}: {method} escape steps per unit log(1/a) "
                          f"vs {what}, in units of each seed's bound",
                          derived=derived[method] / bound_, measured=est_ / bound_,
                          metric="absolute",
                          tolerance=Tolerance(1.0, "per seed: integer escape steps (< 1/span) "
                                                   "+ the finite-a tail at the derived rate "
                                                   "rho per pair, (|c| + 2/span) rho/(1-rho)"),
                          parameters={"lr": lr, "a": a, "seeds": len(p["seeds"]),
                                      "rho": rho.tolist()})
    run.figure("escape steps per unit log(1/a) (last pair of scales) and each seed's bound",
               figure)


# --- Hessian at the budget ------------------------------------------------------------------------

def _stuck_lrs(results, p) -> tuple[list[int], np.ndarray]:
    """The lrs that separate the saddle: SGD from the scale nearest it has not escaped within
    the epoch budget on any seed (its loss still above the escape fraction) while SGD from the
    start away from it has on every seed; and the away start's loss ratios ``(lrs, seeds)``.
    At a budget where SGD is stuck from anywhere, stuck is no sign of the saddle."""
    L = len(p["lrs"])
    near = _grid(results[("sgd", _starts(p)[-2][0])], "loss_ratio", L)
    away = _grid(results[("sgd", "away")], "loss_ratio", L)
    f = p["escape_fraction"]
    return [i for i in range(L) if bool((near[i] > f).all() and (away[i] <= f).all())], away


def _hessian(run: Run, results, sigma: np.ndarray) -> Iterator[Evidence]:
    p = run.params
    lrs = list(p["lrs"])
    nearest = _starts(p)[-2][0]
    stuck, away = _stuck_lrs(results, p)
    tau = p["count_fraction"] * sigma[:, len(p["problem"]["singular"]) - 1]   # (seeds,)
    spectra = {m: _grid(results[(m, nearest)], "spectrum", len(lrs)) for m in METHODS}
    count = {m: (s < -tau[None, :, None]).sum(2) for m, s in spectra.items()}   # (lrs, seeds)
    low = {m: s[..., 0] for m, s in spectra.items()}
    stated = float(run.stated["fewer_negative"]())
    run.figure(f"Hessian after {p['epochs']} epochs from {nearest}: eigenvalues below "
               f"-{p['count_fraction']:g} sigma_k(M) and the smallest (mean over seeds)",
               {f"{m}, lr={lr:g}": {"count": float(count[m][i].mean()),
                                    "smallest": float(low[m][i].mean()),
                                    "SGD stuck here (and not from the start away)": i in stuck}
                for m in METHODS for i, lr in enumerate(lrs)}
               | {"saddle: -sigma_1(M) (mean)": float(-sigma[:, 0].mean()),
                  "saddle: count r rank(M)": p["problem"]["r"] * len(p["problem"]["singular"]),
                  "SGD from the start away: loss ratio after the budget per lr (max over seeds)":
                      away.max(1).tolist()})
    if not stuck:
        yield undecided(Route.NUMERIC, "Hessian after fine-tuning, SGD with a small lr vs the "
                        "others", "no lr of the grid separates the saddle at this budget: SGD "
                        "from the saddle escaped, or SGD from the start away (B, A of norm 1) "
                        "is stuck too", tolerance=SIGN,
                        parameters={"epochs": p["epochs"], "lrs": lrs})
        return
    for i in stuck:
        for X in OTHERS:
            params = {"a": nearest, "lr": lrs[i], "epochs": p["epochs"], "optimiser": X}
            yield sign_evidence(f"{nearest}, lr = {lrs[i]:g}, after {p['epochs']} epochs: SGD "
                                f"leaves more negative eigenvalues than {X} (count below "
                                f"-{p['count_fraction']:g} sigma_k(M))",
                                count["sgd"][i] - count[X][i], stated=stated, parameters=params)
            yield sign_evidence(f"{nearest}, lr = {lrs[i]:g}, after {p['epochs']} epochs: SGD's "
                                f"smallest eigenvalue more negative than {X}'s",
                                low[X][i] - low["sgd"][i], stated=stated, parameters=params)


# --- figures --------------------------------------------------------------------------------------

def _plots(run: Run, results, steps) -> None:
    p = run.params
    lrs = list(p["lrs"])
    nearest = _starts(p)[-2][0]
    epochs = np.arange(0, p["epochs"] + 1, p["record_every"]).tolist()
    series, styles = {}, {}
    for c, m in enumerate(METHODS):
        for name, style in ((nearest, "-"), ("away", ":")):
            curve = _grid(results[(m, name)], "curve", len(lrs))[-1]          # (seeds, T)
            key = f"{m}, {'LoRA start ' + nearest if name == nearest else 'start away'}"
            series[key] = (epochs, np.exp(np.log(np.maximum(curve, 1e-300)).mean(0)))
            styles[key] = f"C{c}{style}"
    run.plot(Plot(f"loss / initial loss against epoch at lr = {lrs[-1]:g} (geometric mean "
                  f"over seeds; dotted: start away from the saddle)", x_label="epoch",
                  y_label="loss / initial loss", series=series, styles=styles, log_y=True,
                  references=(Reference("escape fraction", y=p["escape_fraction"]),)))
    run.plot(Plot(f"escape steps against lr from {nearest} (geometric mean over seeds)",
                  x_label="lr", y_label="steps to the escape fraction of the loss",
                  series={m: (lrs, np.exp(np.log(steps[(m, nearest)]).mean(1)))
                          for m in METHODS}, log_x=True, log_y=True,
                  references=(Reference("order -1 (T / lr)", slope=-1.0),)))
    near = _starts(p)[:-1]
    run.plot(Plot(f"escape time lr x steps against the initial scale a at lr = {lrs[-1]:g} "
                  f"(geometric mean over seeds)", x_label="a (B = 0, |A| = a)",
                  y_label="escape time (lr x steps)", log_x=True,
                  series={m: ([a for _, a, _ in near],
                              [lrs[-1] * float(np.exp(np.log(steps[(m, n)][-1]).mean()))
                               for n, _, _ in near]) for m in METHODS}))
    run.figure(f"update l1/l2 (1: spread evenly, 1/sqrt(P): one coordinate) after "
               f"{p['epochs']} epochs at lr = {lrs[-1]:g} (mean over seeds)",
               {f"{m}, {name}": float(_grid(results[(m, name)], "update_l1_l2",
                                            len(lrs))[-1].mean())
                for m in METHODS for name in (nearest, "away")})


# --- the larger setting: a pretrained MLP fine-tuned through LoRA adapters -----------------------

def _network(run: Run) -> Iterator[Evidence]:
    r"""§6 items 3-4 on a pretrained tanh MLP (:mod:`numerics.ns.lora_finetune`): validation
    accuracy after fine-tuning, SGD at the small lr vs Adam at the same lr (SGD at the tuned
    lr as the gate that the task is reachable), and the Lanczos Ritz values of the adapters'
    Hessian at the end."""
    p = run.params["network"]
    common = {k: v for k, v in p.items() if k not in ("small_lr", "tuned_lrs", "count_fraction",
                                                      "pretrain_min", "reach_margin")}
    configs = [("sgd", p["small_lr"]), ("adam", p["small_lr"])] + \
        [("sgd", lr) for lr in p["tuned_lrs"]]
    (out,) = run.sweep("network", finetune_point,
                       [{**common, "runs": [list(c) for c in configs]}])
    start = {k: np.asarray(out[k], dtype=np.float64)
             for k in ("pretrain_accuracy", "start_accuracy", "ritz_start")}
    res = {c: {k: np.asarray(v, dtype=np.float64) for k, v in o.items() if k != "finite"}
           | {"finite": o["finite"]} for c, o in zip(configs, out["runs"])}
    sgd, adam = res[configs[0]] | start, res[configs[1]]
    tuned = [c for c in configs[2:] if res[c]["finite"]]
    best = max(tuned, key=lambda c: res[c]["accuracy"].mean()) if tuned else None
    chance = 1.0 / p["classes"]
    tau = p["count_fraction"]
    ref = np.abs(sgd["ritz_start"][:, 0])                       # the saddle's |lambda_min|
    count = {c: (r["ritz"] < -tau * ref[:, None]).sum(1) for c, r in res.items()
             if r["finite"]}
    lowest = {c: r["ritz"][:, 0] for c, r in res.items() if r["finite"]}
    name = {configs[0]: f"SGD (lr {p['small_lr']:g})", configs[1]: f"Adam (lr {p['small_lr']:g})"}
    name |= {c: f"SGD (lr {c[1]:g})" for c in configs[2:]}
    run.figure(f"network fine-tuning: validation accuracy on the new task after {p['steps']} "
               f"steps, Ritz values of the adapters' Hessian below -{tau:g} |lambda_min(start)| "
               f"and the smallest (mean and per seed; the paper's table: SGD lr << 1 / tuned / "
               f"Adam lr << 1)",
               {name[c]: {"accuracy": r["accuracy"].tolist(), "mean": float(r["accuracy"].mean()),
                          "finite": r["finite"],
                          "count": count[c].tolist() if c in count else None,
                          "smallest": lowest[c].tolist() if c in lowest else None,
                          "loss_ratio": r["loss_ratio"].tolist()} for c, r in res.items()}
               | {"tuned lr (best mean accuracy)": best[1] if best else None,
                  "pretrained accuracy (first task)": sgd["pretrain_accuracy"].tolist(),
                  "start accuracy (new task)": sgd["start_accuracy"].tolist(),
                  "start: smallest Ritz value": sgd["ritz_start"][:, 0].tolist()})
    if not run.is_control:
        k = sgd["ritz"].shape[1]
        run.plot(Plot(f"network: Ritz values of the adapters' Hessian after fine-tuning "
                      f"(seed {p['seeds'][0]}, {k} Lanczos steps, ascending)",
                      x_label="index", y_label="Ritz value",
                      series={name[c]: (list(range(k)), res[c]["ritz"][0].tolist())
                              for c in (configs[0], configs[1]) + ((best,) if best else ())
                              if res[c]["finite"]}
                      | {"start (LoRA, B = 0)": (list(range(k)), sgd["ritz_start"][0].tolist())},
                      references=(Reference("0", y=0.0),)))
    broken = []
    if not (sgd["finite"] and adam["finite"]):
        broken.append("a run at the small lr diverged")
    if bool((sgd["pretrain_accuracy"] < p["pretrain_min"]).any()):
        broken.append(f"pretraining did not train (accuracy {sgd['pretrain_accuracy'].min():.2f}"
                      f" < {p['pretrain_min']:g})")
    if best is None or bool((res[best]["accuracy"] < chance + p["reach_margin"]).any()):
        broken.append(f"SGD at no tuned lr fine-tuned every seed past chance + "
                      f"{p['reach_margin']:g} (the new task not reachable at this budget)")
    items = ("network: validation accuracy, Adam minus SGD at the small lr",
             "network: Hessian after fine-tuning, SGD at the small lr vs Adam")
    if broken:
        for q in items:
            yield undecided(Route.NUMERIC, q, "; ".join(broken), tolerance=SIGN,
                            parameters={"small_lr": p["small_lr"], "steps": p["steps"]})
        return
    params = {"lr": p["small_lr"], "steps": p["steps"], "seeds": len(p["seeds"]),
              "tuned_lr": best[1], "tuned_accuracy": float(res[best]["accuracy"].mean())}
    yield sign_evidence(f"network, lr = {p['small_lr']:g}, after {p['steps']} steps: SGD stays "
                        f"near the saddle while Adam fine-tunes (validation accuracy, Adam "
                        f"minus SGD)", adam["accuracy"] - sgd["accuracy"],
                        stated=float(run.stated["sgd_slower"]()), parameters=params)
    stated = float(run.stated["fewer_negative"]())
    a, s = configs[1], configs[0]
    yield sign_evidence(f"network, lr = {p['small_lr']:g}, after {p['steps']} steps: SGD "
                        f"leaves more negative Hessian eigenvalues than adam (Ritz values "
                        f"below -{tau:g} |lambda_min(start)|)", count[s] - count[a],
                        stated=stated, parameters=params)
    yield sign_evidence(f"network, lr = {p['small_lr']:g}, after {p['steps']} steps: SGD's "
                        f"smallest Hessian eigenvalue more negative than adam's",
                        lowest[a] - lowest[s], stated=stated, parameters=params)


def _validate(p: Mapping[str, Any]) -> None:
    if len(p["lrs"]) < 3:
        raise ValueError(f"lrs: a trend needs >= 3 learning rates, got {p['lrs']}")
    if len(p["a"]) < 4:
        raise ValueError(f"a: needs >= 4 scales (three pair estimates for the finite-a bias), "
                         f"got {p['a']}")


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    _validate(p)
    results = _results(run)
    if not run.ran("finite", all(r["finite"] for r in results.values()),
                   "every run's adapter stayed finite"):
        return
    censored = sum(sum(r["censored"]) for r in results.values())
    if not run.ran("every run escaped within the cap", censored == 0,
                   f"{censored} runs did not reach {p['escape_fraction']:g} x the initial loss "
                   f"in {p['cap']} steps"):
        return
    q = p["problem"]
    problems = make_problems(list(p["seeds"]), d_in=q["d_in"], n=q["n"], m=q["m"],
                             samples=q["samples"], singular=list(q["singular"]))
    sigma = torch.linalg.svdvals(problems.saddle_gradient()).numpy()            # (seeds, .)
    yield from _saddle_hessian(run, problems)
    steps = {k: _grid(r, "escape", len(p["lrs"])) for k, r in results.items()}  # (lrs, seeds)
    yield from _escape(run, steps, sigma)
    yield from _hessian(run, results, sigma)
    yield from _network(run)
    if not run.is_control:
        _plots(run, results, steps)


def _near_saddle(p) -> bool:
    return max(p["a"]) <= 1e-2


CLAIM = register(Claim(
    id="ns.x.fine-tuning",
    paper=PAPER,
    kind="experiment",
    title="Fine-tuning from a LoRA start: SGD with a small lr stuck at the saddle, sign "
          "methods escape; the Hessian after the budget",
    source="SOURCES §6 items 3-4 (fine-tuning table, Hessian spectrum), §4.14",
    statement=r"\text{(summaries)}\ \text{fine-tuning with SGD at lr}\ll1\text{ stays stuck "
              r"near a saddle while Adam at lr}\ll1\text{ escapes; after fine-tuning Adam "
              r"leaves fewer and weaker negative Hessian eigenvalues.}",
    reading=r"Toolkit's reading at CPU scale: a frozen feature map \tanh(W_1x) (d_in = 10, "
            r"n = 16 features, N = 64 samples), a rank-2 target W^* (singular values 4, 2) "
            r"on m = 4 outputs, a LoRA head BA of rank r = 2 from B = 0, |A|_F = a (the "
            r"saddle set at depth 2); full batch, float64. 'Stuck vs escapes': the steps n "
            r"to 90% of the initial loss (the first escape); per near-saddle scale a at the "
            r"smallest lr, the mean over seeds of log(n_SGD/n_X) > 0 by its 95% t-interval, "
            r"X = sign descent, Adam, AdamW. Derived and checked: n ~ T/lr (order -1 in lr "
            r"for SGD and sign descent), n_SGD/n_sign of order 0 in lr (the gap grows as "
            r"1/lr in epochs and as log(1/a) as a ratio, not as a ratio in lr), SGD's steps "
            r"per unit log(1/a) = 1/log(1 + lr sigma_1(M)), M = -W^* Sigma (sign descent's: "
            r"0, bounded escape); the Hessian at the start = the saddle's, eigenvalues "
            r"+-sigma_j(M) r times (a strict saddle at depth 2), within a^2 ||Sigma||. "
            r"'Fewer and weaker': after the epoch budget, at each lr where SGD from the "
            r"smallest a has not escaped but SGD from B, A of norm 1 has (else 'stuck' is no "
            r"sign of the saddle: undecided), the count of eigenvalues below -tau sigma_k(M) "
            r"(tau = 0.1) and the smallest eigenvalue, SGD minus X, > 0 by the t-interval. "
            r"Finding: at 50% of the loss a seed can need the second mode (log(1/a)/log(1 + "
            r"lr sigma_2)). Adam's escape order in lr (pre-asymptotic while n < 1/(1 - "
            r"beta2)) and the update's l1/l2 are reported. Larger setting (scaled down from "
            r"ResNet-18/ViT-L/BERT on CIFAR-10/Flowers/MRPC and PyHessian's top 50 on 1-2k "
            r"images): a tanh MLP d -> h -> h -> K (quick 16-32-32-4, full 24-48-48-5) "
            r"pretrained with Adam on a random teacher's labels (N = 512 / 1024, float64), "
            r"fine-tuned on the same inputs with the labels shifted by one class (start below "
            r"chance), frozen weights plus a LoRA adapter W + BA of rank r (2 / 4) on every "
            r"layer from B = 0, |A|_F = 0.1; full batch, torch.optim SGD and Adam. Table: "
            r"SGD at a small lr (quick 3e-3, full 5e-4), SGD at the tuned lr (best mean "
            r"validation accuracy over quick {0.3}, full {0.03, 0.1, 0.3, 1}), Adam at the "
            r"small lr, after 200 / 1000 steps, 4 / 6 seeds. (3): the validation accuracy, "
            r"Adam minus SGD at the small lr, > 0 by the 95% t-interval over seeds. (4): the "
            r"Ritz values of 30 / 60 Lanczos steps on Hessian-vector products of the training "
            r"loss in the adapters at the end: the count below -0.1 |lambda_min| of the LoRA "
            r"start and the smallest, SGD minus Adam > 0 (and Adam minus SGD). A run that "
            r"diverged at the small lr, a pretraining below 0.6 accuracy, or no tuned lr "
            r"fine-tuning every seed past chance + 0.1 (the new task not reachable at this "
            r"budget) leaves these items undecided.",
    parameters={
        "quick": {"seeds": list(range(6)), "lrs": [0.02, 0.01, 0.005],
                  "a": [1e-2, 1e-3, 1e-4, 1e-5], "away": {"a": 1.0, "b": 1.0},
                  "problem": {"d_in": 10, "n": 16, "m": 4, "r": 2, "samples": 64,
                              "singular": [4.0, 2.0]},
                  "epochs": 400, "record_every": 10, "cap": 20000, "escape_fraction": 0.9,
                  "weight_decay": 0.01, "count_fraction": 0.1,
                  "network": {"seeds": [0, 1, 2, 3], "d": 16, "hidden": 32, "classes": 4,
                              "teacher": 16, "n_train": 512, "n_val": 512,
                              "pretrain_steps": 300, "pretrain_lr": 0.01, "r": 2, "a": 0.1,
                              "steps": 200, "lanczos": 30, "small_lr": 3e-3,
                              "tuned_lrs": [0.3], "count_fraction": 0.1,
                              "pretrain_min": 0.6, "reach_margin": 0.1}},
        "full": {"seeds": list(range(12)), "lrs": [0.02, 0.01, 0.005, 0.0025, 0.00125],
                 "a": [1e-2, 1e-3, 1e-4, 1e-5, 1e-6], "away": {"a": 1.0, "b": 1.0},
                 "problem": {"d_in": 10, "n": 16, "m": 4, "r": 2, "samples": 64,
                             "singular": [4.0, 2.0]},
                 "epochs": 1600, "record_every": 20, "cap": 200000, "escape_fraction": 0.9,
                 "weight_decay": 0.01, "count_fraction": 0.1,
                 "network": {"seeds": list(range(6)), "d": 24, "hidden": 48, "classes": 5,
                             "teacher": 24, "n_train": 1024, "n_val": 1024,
                             "pretrain_steps": 600, "pretrain_lr": 0.01, "r": 4, "a": 0.1,
                             "steps": 1000, "lanczos": 60, "small_lr": 5e-4,
                             "tuned_lrs": [0.03, 0.1, 0.3, 1.0], "count_fraction": 0.1,
                             "pretrain_min": 0.6, "reach_margin": 0.1}},
    },
    stated={"sgd_slower": stated_sgd_slower, "fewer_negative": stated_fewer_negative},
    equivalent_mutants={f"{form}:{op}": "a direction: only its sign enters the decision"
                        for form in ("sgd_slower", "fewer_negative")
                        for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("reversed: SGD escapes first and leaves fewer negative "
                            "eigenvalues", {"sgd_slower": lambda: -1.0,
                                            "fewer_negative": lambda: -1.0}),
    assumptions=(
        Assumption("near the saddle", "every scale a <= 1e-2 with B = 0 (LoRA's start on the "
                   "saddle set)", _near_saddle),
        Assumption(">= 3 seeds", "a t-interval over seeds", lambda p: len(p["seeds"]) >= 3),
        Assumption("small learning rates", "lr <= 0.02: sign descent's first escape (time "
                   "~0.1) takes >= ~5 steps, so its order in lr lies within ~0.1 of the flow "
                   "limit's -1 (integer rounding of the steps)",
                   lambda p: max(p["lrs"]) <= 0.02),
    ),
    space={"seeds": Choice((list(range(6)), list(range(6, 12)), list(range(4)))),
           "a": Choice(([1e-2, 1e-3, 1e-4, 1e-5], [1e-1, 1e-2, 1e-3, 1e-4],
                        [3e-3, 3e-4, 3e-5, 3e-6])),
           "lrs": Choice(([0.02, 0.01, 0.005], [0.04, 0.02, 0.01], [0.01, 0.005, 0.0025])),
           "problem.singular": Choice(([4.0, 2.0], [4.0, 3.0], [2.0, 1.0], [4.0])),
           "problem.r": Choice((1, 2, 4)),
           "epochs": Choice((200, 400, 800)),
           "weight_decay": LogUniform(1e-3, 1e-1),
           "seed": SEED},
    tags=("training",),
))
