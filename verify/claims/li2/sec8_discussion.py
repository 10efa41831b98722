r"""li2.sec8-discussion: three statements of the paper's §8 (discussion): (1) weight decay is
sufficient but not necessary for grokking; (2) there are two kinds of memorisation, random
features that the top layer overfits and nodes that land on the memorisation maxima of Thm. 5;
(3) sharp optima correspond to overfit random features, while the maxima of :math:`\mathcal E`
are flat (Cor. 1) (verify/claims/li2/SOURCES.md ``li2.sec8-discussion``, with the reviewer's
point that grokking happens without weight decay). §8's fourth statement, on learning rates,
is ``li2.fig7``'s. The check: the Hessian spectrum of the training loss at memorising and at
generalising endpoints.

Routes: the statements (stated); batched full-batch training of the two-layer :math:`x^2`
network (:class:`numerics.li2.trainer.GroupTrainer`, the code's class-centred MSE and Adam with
coupled weight decay, measured) in four configurations on the same seeds: plentiful data
(training fraction above the memorisation threshold) with and without weight decay :math:`\eta`,
scarce data with and without. Each configuration is one sweep point
(:func:`numerics.li2.sweep_points.endpoint_point`), its seeds on the batch axis, trained a fixed
budget of epochs. An endpoint *generalises* when its test accuracy is at least 0.99 (the
grokking threshold of ``li2.sec7-predictions``), *memorises* when its training accuracy is at
least 0.99 and its test accuracy below ½.

(1) Sufficient: every run with :math:`\eta>0` on plentiful data generalises. Not necessary: at
least one run with :math:`\eta=0` at the same setting generalises within the budget (an
existence statement: one run shows it; none in the budget decides nothing and is reported).

(2) Each memorising endpoint's nodes are classified (:mod:`numerics.li2.memorisation_kinds`):
at a Thm. 5 maximum (for :math:`x^2` the focused node
:math:`\tfrac1{\sqrt2}[\mathbf e_{g^\ast};\mathbf e_{g^{\ast-1}h}]` on a training pair, as
``li2.thm5`` derives: focus above ½ on a training pair) or a random feature (more than half its
squared norm along its initial direction); the endpoint is of the kind that holds more than half
its node weight, else mixed. "Two kinds": both kinds occur among the memorising endpoints
(existence: decided when both are seen), and, read as a dichotomy, every memorising endpoint is
of one of them (the share of mixed ones is reported against 0).

(3) Sharpness (:mod:`numerics.li2.loss_hessian`): the largest eigenvalue of the Hessian of the
training loss (no weight-decay term), Lanczos on float64 Hessian-vector products, at the
balanced representative of the endpoint's per-node rescaling orbit, over the Euler floor
:math:`18\,\overline{\|P\mathbf o\|^2}/\|\theta\|^2` (a reading: the paper gives no measure,
and :math:`\lambda_{\max}` alone changes under the network's rescalings while its function
stays). "Sharp optima are overfit random features": the mean log sharpness of the
random-feature memorising endpoints exceeds that of the generalising ones, by a 95% Welch
interval; against the generalising endpoints at :math:`\eta=0` (both minima of the same data
loss, same learning rate) and, reported beside, those at :math:`\eta>0`. Every run must have
trained beyond chance (:mod:`verify.claims.li2._trained`).
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from numerics.errors import Diverged
from numerics.li2.memorisation_kinds import MIXED, RANDOM_FEATURES, THM5
from numerics.li2.sweep_points import decode, endpoint_point
from verify import (
    LEVEL,
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Plot,
    Route,
    Run,
    Tolerance,
    compare,
    register,
    undecided,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained

#: Test accuracy of a generalising endpoint (``li2.sec7-predictions``' grokking threshold).
GENERALISES = 0.99
#: A memorising endpoint fits its training set (>= this) and fails the test set (< ½).
FITS, FAILS_TEST = 0.99, 0.5
COUNT = Tolerance(0.0, "a count of runs or kinds: no rounding enters it")
SIGN = Tolerance(0.0, "a sign: the whole 95% Welch interval must lie on the stated side of 0 "
                      "(one that contains 0 is undecided)")
CONFIGS = ("plentiful, eta > 0", "plentiful, eta = 0", "scarce, eta > 0", "scarce, eta = 0")


def stated_sufficient() -> float:
    r"""§8: weight decay is sufficient: the share of runs with :math:`\eta>0` (plentiful
    data) that generalise is 1."""
    return 1.0


def stated_not_necessary() -> float:
    r"""§8: weight decay is not necessary: some run with :math:`\eta=0` generalises (1)."""
    return 1.0


def stated_kinds() -> float:
    """§8: two kinds of memorisation (random features; Thm. 5 maxima)."""
    return 2.0


def stated_dichotomy() -> float:
    """§8 read as a dichotomy: the share of memorising endpoints of neither kind is 0."""
    return 0.0


def stated_random_sharper() -> float:
    r"""§8: sharp optima are overfit random features: :math:`\log S_{\rm random}-\log
    S_{\rm generalising}>0` (+1)."""
    return 1.0


# --- the runs -----------------------------------------------------------------------------------

def _configs(p: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    return {"plentiful, eta > 0": {"p": p["p_plentiful"], "eta": p["eta"]},
            "plentiful, eta = 0": {"p": p["p_plentiful"], "eta": 0.0},
            "scarce, eta > 0": {"p": p["p_scarce"], "eta": p["eta_scarce"]},
            "scarce, eta = 0": {"p": p["p_scarce"], "eta": 0.0}}


def _endpoints(run: Run) -> dict[str, dict[str, Any]]:
    """Per configuration, per run: the fit, the kind and the sharpness (``run.sweep``:
    memoised, so the control and the mutants reuse it)."""
    p = run.params
    table = [list(row) for row in build_group(p["group"]).table]
    configs = _configs(p)
    points = [{"table": table, "seeds": list(p["seeds"]), "K": p["K"], "lr": p["lr"],
               "optimizer": "adam", "epochs": p["epochs"], "top": p["top"],
               "device": str(run.device), "dtype": p["dtype"], **c} for c in configs.values()]
    results = run.sweep("training", endpoint_point, points)
    out = {}
    for name, r in zip(configs, results):
        if not r["finite"]:
            raise Diverged(f"training diverged ({name})")
        hess = r["hessian"]
        out[name] = {
            **{k: decode(r[k]).numpy() for k in ("train_acc", "test_acc", "train_loss",
                                                 "thm5_share", "random_share", "focus",
                                                 "alignment", "pair_share")},
            "kinds": list(r["kinds"]),
            "spectra": np.array([h["eigenvalues"] for h in hess]),
            "floor": np.array([h["floor"] for h in hess]),
            "norm_sq": np.array([h["norm_sq"] for h in hess])}
        e = out[name]
        e["lambda_max"] = e["spectra"][:, 0]
        e["sharpness"] = e["lambda_max"] / e["floor"]
        e["generalises"] = e["test_acc"] >= GENERALISES
        e["memorises"] = (e["train_acc"] >= FITS) & (e["test_acc"] < FAILS_TEST)
    return out


# --- the decisions ------------------------------------------------------------------------------

def _welch(a: np.ndarray, b: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mean of a minus mean of b and its 95% Welch interval."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, (diff, diff)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df) * se)
    return diff, (diff - half, diff + half)


def _sign_evidence(quantity: str, a: np.ndarray, b: np.ndarray, stated: float,
                   parameters: Mapping[str, Any]) -> Evidence:
    """The stated sign of mean(log a) - mean(log b) against its Welch interval; fewer than two
    endpoints on a side decide nothing."""
    if a.size < 2 or b.size < 2:
        return undecided(Route.NUMERIC, quantity, f"{a.size} and {b.size} endpoints: a Welch "
                         f"interval needs two on each side", tolerance=SIGN,
                         parameters=parameters)
    diff, (lo, hi) = _welch(np.log(a), np.log(b))
    s = 1.0 if stated > 0 else -1.0
    lo_s, hi_s = sorted((s * lo, s * hi))
    shown = f"[{lo:.3f}, {hi:.3f}]"
    if lo_s > 0:
        ok, gap, note = True, 0.0, f"the 95% interval {shown} lies on the stated side"
    elif hi_s < 0:
        ok, gap, note = False, -hi_s, f"the 95% interval {shown} lies on the other side"
    else:
        ok, gap, note = None, None, f"the 95% interval {shown} contains 0"
    return Evidence(route=Route.NUMERIC, quantity=quantity, stated=stated, derived=None,
                    measured={"mean log ratio": diff, "interval": [lo, hi],
                              "ratio": math.exp(diff), "n": [int(a.size), int(b.size)]},
                    metric="sign", discrepancy=gap, tolerance=SIGN,
                    parameters=dict(parameters), finite=True,
                    comparisons={} if ok is None else {"interval beyond 0 on the wrong side": gap},
                    note=note)


def _weight_decay(run: Run, ends: Mapping[str, Mapping[str, Any]]) -> Iterator[Evidence]:
    p = run.params
    budget = {"epochs": p["epochs"], "lr": p["lr"], "p": p["p_plentiful"],
              "seeds": len(p["seeds"])}
    with_decay = ends["plentiful, eta > 0"]["generalises"]
    yield compare(Route.NUMERIC, "(1) weight decay is sufficient: share of runs with eta > 0 "
                  "(plentiful data) that generalise", tolerance=COUNT,
                  stated=float(run.stated["sufficient"]()), measured=float(with_decay.mean()),
                  metric="absolute", parameters={**budget, "eta": p["eta"]})
    without = ends["plentiful, eta = 0"]["generalises"]
    quantity = ("(1) weight decay is not necessary: some run with eta = 0 at the same setting "
                "generalises within the budget")
    if not without.any():
        yield undecided(Route.NUMERIC, quantity, f"none of {without.size} runs with eta = 0 "
                        f"generalised within {p['epochs']} epochs: weight decay was needed here, "
                        f"but an absence in {without.size} seeds and one budget shows no "
                        f"necessity", tolerance=COUNT, parameters=budget)
        return
    yield compare(Route.NUMERIC, quantity, tolerance=COUNT,
                  stated=float(run.stated["not_necessary"]()), measured=1.0,
                  metric="absolute", parameters={**budget, "generalised": int(without.sum())},
                  note=f"{int(without.sum())} of {without.size} runs at eta = 0 generalised")


def _kinds(run: Run, ends: Mapping[str, Mapping[str, Any]]) -> Iterator[Evidence]:
    kinds = [k for e in ends.values() for k, m in zip(e["kinds"], e["memorises"]) if m]
    counts = {k: kinds.count(k) for k in (THM5, RANDOM_FEATURES, MIXED)}
    run.figure("(2) memorising endpoints by kind", {
        **counts, "per configuration": {
            name: [{"kind": k, "Thm. 5 share": float(t), "random-feature share": float(r),
                    "focus": float(f), "initial alignment": float(a),
                    "training-pair share of u v^T": float(c)}
                   for k, m, t, r, f, a, c in zip(e["kinds"], e["memorises"], e["thm5_share"],
                                                   e["random_share"], e["focus"],
                                                   e["alignment"], e["pair_share"])
                   if m] for name, e in ends.items()},
        "training fraction (a split-blind node's training-pair share)": run.params["p_scarce"]})
    found = sum(counts[k] > 0 for k in (THM5, RANDOM_FEATURES))
    quantity = "(2) two kinds of memorisation occur (random features; Thm. 5 maxima)"
    if not kinds:
        yield undecided(Route.NUMERIC, quantity, "no run memorised", tolerance=COUNT)
        return
    if found < 2:
        yield undecided(Route.NUMERIC, quantity, f"only {found} kind(s) among {len(kinds)} "
                        f"memorising endpoints ({counts})", tolerance=COUNT,
                        parameters=counts)
    else:
        yield compare(Route.NUMERIC, quantity, tolerance=COUNT,
                      stated=float(run.stated["kinds"]()), measured=float(found),
                      metric="absolute", parameters=counts)
    yield compare(Route.NUMERIC, "(2) every memorising endpoint is of one of the two kinds "
                  "(share of mixed ones)", tolerance=COUNT,
                  stated=float(run.stated["dichotomy"]()),
                  measured=counts[MIXED] / len(kinds), metric="absolute", parameters=counts)


def _pooled(ends: Mapping[str, Mapping[str, Any]], names: Sequence[str], mask: str,
            kind: str | None = None, key: str = "sharpness") -> np.ndarray:
    """``key`` of the endpoints of configurations ``names`` that ``mask`` (``memorises`` or
    ``generalises``) selects, of memorisation kind ``kind`` where given."""
    return np.concatenate([
        ends[n][key][ends[n][mask] & (np.array(ends[n]["kinds"]) == kind if kind else True)]
        for n in names])


def _sharpness(run: Run, ends: Mapping[str, Mapping[str, Any]]) -> Iterator[Evidence]:
    p = run.params
    random = _pooled(ends, CONFIGS, "memorises", RANDOM_FEATURES)
    at_zero = _pooled(ends, ("plentiful, eta = 0",), "generalises")
    at_decay = _pooled(ends, ("plentiful, eta > 0",), "generalises")
    stated = float(run.stated["random_sharper"]())
    for label, gen in (("eta = 0", at_zero), ("eta > 0", at_decay)):
        yield _sign_evidence(f"(3) random-feature memorisation is sharper than generalising "
                             f"endpoints at {label} (sign of mean log S_random - log S_gen)",
                             random, gen, stated, {"lr": p["lr"], "epochs": p["epochs"]})
    groups = {"random-feature memorisation": (CONFIGS, "memorises", RANDOM_FEATURES),
              "Thm. 5 memorisation": (CONFIGS, "memorises", THM5),
              "mixed memorisation": (CONFIGS, "memorises", MIXED),
              "generalising, eta = 0": (("plentiful, eta = 0",), "generalises", None),
              "generalising, eta > 0": (("plentiful, eta > 0",), "generalises", None)}

    def summary(v: np.ndarray) -> dict[str, Any]:
        return {"geometric mean": float(np.exp(np.log(v).mean())) if v.size else None,
                "values": v.tolist()}

    # lambda_max alone (balanced weights) beside S: the reading's normalisation should not
    # be what makes the order
    run.figure("(3) normalised sharpness S = lambda_max ||theta||^2 / (18 mean ||P o||^2)",
               {k: {"runs": int(_pooled(ends, *g).size), "S": summary(_pooled(ends, *g)),
                    "lambda_max": summary(_pooled(ends, *g, key="lambda_max"))}
                for k, g in groups.items()})
    series = {}
    for name, e in ends.items():
        for kind, mask in (("memorising", e["memorises"]), ("generalising", e["generalises"])):
            if mask.any():
                spectra = e["spectra"][mask] / e["floor"][mask][:, None]
                series[f"{name}: {kind}"] = (list(range(1, spectra.shape[1] + 1)),
                                             np.median(spectra, 0).tolist())
    if series and not run.is_control:
        run.plot(Plot("Top Hessian eigenvalues of the training loss at the endpoints, over the "
                      "Euler floor 18 mean ||P o||^2 / ||theta||^2 (balanced weights; median "
                      "over the runs of each configuration and kind)",
                      x_label="eigenvalue index", y_label="lambda_i / floor", log_y=True,
                      series=series))


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    M = build_group(p["group"]).order
    ends = _endpoints(run)
    if not record_trained(run, M, np.concatenate([e["train_acc"] for e in ends.values()]),
                          np.concatenate([e["train_loss"] for e in ends.values()]),
                          where=f"the end of every run ({', '.join(CONFIGS)})",
                          test_accuracy=np.concatenate([e["test_acc"]
                                                        for e in ends.values()])):
        return
    run.figure("endpoints", {name: {
        "generalise": int(e["generalises"].sum()), "memorise": int(e["memorises"].sum()),
        "test accuracy": e["test_acc"].tolist(), "training loss": e["train_loss"].tolist()}
        for name, e in ends.items()})
    yield from _weight_decay(run, ends)
    yield from _kinds(run, ends)
    yield from _sharpness(run, ends)


CLAIM = register(Claim(
    id="li2.sec8-discussion",
    paper=PAPER,
    kind="experiment",
    title="§8: weight decay sufficient, not necessary; two kinds of memorisation; sharp "
          "optima are overfit random features",
    source="§8 (discussion); SOURCES li2.sec8-discussion, §6.3",
    statement=r"\eta>0\Rightarrow\text{grokking};\ \eta=0\not\Rightarrow\text{no grokking};\ "
              r"\text{memorisation}\in\{\text{random features},\ \text{Thm. 5 maxima}\};\ "
              r"\lambda_{\max}(\nabla^2L)\ \text{large at random-feature optima, maxima of }"
              r"\mathcal E\text{ flat}",
    reading=r"The two-layer x^2 network, the code's class-centred MSE, Adam with coupled weight "
            r"decay, default init, full batch, a fixed budget of epochs, four configurations on "
            r"the same seeds (plentiful / scarce data x eta > 0 / eta = 0). Generalising: test "
            r"accuracy >= 0.99; memorising: training accuracy >= 0.99 and test accuracy < 1/2. "
            r"(1) sufficient: every eta > 0 run on plentiful data generalises; not necessary: "
            r"some eta = 0 run does (none: undecided). (2) a node is at a Thm. 5 maximum when "
            r"more than half its squared norm sits on one entry of u and one of v that form a "
            r"training pair (the focused maximiser of Thm. 5 for x^2), a random feature when "
            r"cos^2 with its initial direction exceeds 1/2; an endpoint is of the kind holding "
            r"more than half its node weight ||w_j||^2 ||v_j||, else mixed; 'two kinds' = both "
            r"occur, and (dichotomy) no memorising endpoint is mixed. (3) sharpness S = "
            r"lambda_max of the data-loss Hessian at the balanced representative of the per-node "
            r"rescaling orbit (||w_j||^2 = 2||v_j||^2), times ||theta||^2, over 18 mean ||P o||^2 "
            r"(Euler's floor of a 3-homogeneous net's Gauss-Newton curvature): invariant under "
            r"the rescalings that keep the function; 'random features are sharp' = mean log S of "
            r"random-feature memorising endpoints above that of generalising endpoints by a 95% "
            r"Welch interval, at eta = 0 (matched) and at eta > 0. Quick: Z_11, K = 32, lr 5e-3, "
            r"400 epochs, 4 seeds; full: Z_23, K = 256, lr 2e-3, 3000 epochs, 8 seeds.",
    parameters={
        "quick": {"group": "Z11", "K": 32, "seeds": (0, 1, 2, 3), "lr": 5e-3,
                  # p 0.9 groks with eta 5e-3 in a few hundred epochs (li2.fig14-zero-init's
                  # setting); p 0.2 keeps n = 24 < K pairs, below the code's memorisation line
                  # 2.7482 ln M / M = 0.60, where K random features can interpolate
                  "p_plentiful": 0.9, "p_scarce": 0.2, "eta": 5e-3, "eta_scarce": 2e-2,
                  "epochs": 400, "top": 6,
                  # training in the code's float32; the Hessian is computed in float64
                  "dtype": "float32"},
        "full": {"group": "Z23", "K": 256, "seeds": tuple(range(8)), "lr": 2e-3,
                 "p_plentiful": 0.6, "p_scarce": 0.15, "eta": 2e-3, "eta_scarce": 1e-2,
                 "epochs": 3000, "top": 10, "dtype": "float32"},
    },
    stated={"sufficient": stated_sufficient, "not_necessary": stated_not_necessary,
            "kinds": stated_kinds, "dichotomy": stated_dichotomy,
            "random_sharper": stated_random_sharper},
    equivalent_mutants={"random_sharper:scale": "a direction: only its sign enters",
                        "random_sharper:nudge": "a direction: only its sign enters",
                        "dichotomy:scale": "0 scaled is 0"},
    check=check,
    control=NegativeControl("weight decay necessary and not sufficient, one kind of "
                            "memorisation, generalising optima the sharper",
                            {"sufficient": lambda: 0.0, "not_necessary": lambda: 0.0,
                             "kinds": lambda: 1.0, "dichotomy": lambda: 1.0,
                             "random_sharper": lambda: -1.0}),
    assumptions=(
        Assumption(">= 2 seeds", "a Welch interval per endpoint kind (SOURCES §2.5: >= 5 at "
                   "full fidelity)", lambda p: len(p["seeds"]) >= 2),
        Assumption("weight decay on where the paper has it", "eta > 0 in the configurations "
                   "with weight decay", lambda p: p["eta"] > 0 and p["eta_scarce"] > 0),
        Assumption("scarce below plentiful", "the scarce training fraction lies below the "
                   "code's memorisation line 2.7482 ln M / M and the plentiful one above it",
                   lambda p: p["p_scarce"] < 2.7482 * math.log(build_group(p["group"]).order)
                   / build_group(p["group"]).order < p["p_plentiful"]),
    ),
    # The group, width, step size, the two weight decays, the two fractions (across the
    # memorisation line and on one side of it), the budget and the seeds; each point costs
    # a few seconds.
    space={"group": Choice(("Z7", "Z11", "Z13")), "K": Choice((16, 32, 64)),
           "lr": LogUniform(2e-3, 1e-2), "eta": LogUniform(1e-3, 2e-2),
           "eta_scarce": LogUniform(5e-3, 5e-2), "p_plentiful": Choice((0.8, 0.9)),
           "p_scarce": Choice((0.15, 0.2, 0.3)), "epochs": IntRange(200, 600),
           "seeds": Choice(((0, 1, 2, 3), (4, 5, 6, 7), (0, 1)))},
    tags=("training",),
))
