r"""li2.fig3: Fig. 3, modular addition :math:`M=71`, :math:`K=2048`, :math:`n=2016`, weight decay
:math:`\eta=2\times10^{-4}` against :math:`\eta=0`, 15 seeds
(verify/claims/li2/SOURCES.md §5, §7).

Routes: the paper's description, written as predictions (stated: grokking with decay and none
without; a larger :math:`\|G_F\|` with decay around epoch 100; first a large update of
:math:`V`, then of :math:`W`; :math:`\tilde F^\top\tilde F` and :math:`P_1^\perp FF^\top`
diagonal to within 8%); batched full-batch training of the two-layer network
(:class:`numerics.li2.trainer.GroupTrainer`, measured). At full fidelity also the third
party's replication (arXiv 2605.08119, SOURCES §7.3) as a reference route: same initial weights and
split for the same seed (their code draws both from ``torch`` generators seeded with the seed,
and so does the trainer), so seed 0 is the same run up to float arithmetic.

Quick fidelity is a scaled-down run (:math:`M=29`, :math:`K=512`, :math:`p=0.6`, 2 seeds): it
checks the qualitative statements, not the paper's numbers. Its weight decay keeps the paper's
:math:`\eta_{\rm paper}=n\eta/2\approx0.20` (SOURCES §2.4).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch

from numerics.li2.grokking_time import grokking_outcome
from numerics.li2.sweep_points import decode, grokking_series_point
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
    compare,
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained

EXACT = Tolerance(0.0, "a qualitative statement: it must hold for every seed")

#: The third party's seed-0 replication (SOURCES §7.3): (eta > 0, eta = 0); None = never.
THIRD_PARTY_SEED0 = {
    "epoch train acc = 1": (25, 25),
    "epoch test acc >= 0.5": (101, None),
    "epoch test acc >= 0.99": (139, None),
    "peak ||G_F||": (71.2, 63.6),
    "epoch of peak ||G_F||": (57, 49),
    "max off/diag of Ft^T Ft": (0.033, 0.028),
}
#: Half a unit in the last digit they report (their rounding).
REPORTED_HALF_UNIT = {"peak ||G_F||": 0.05, "max off/diag of Ft^T Ft": 0.0005}
#: Their 15 seeds: median [IQR] epoch of test acc 0.5 with decay; 0/15 controls reach it.
THIRD_PARTY_T50 = (102.0, 99.0, 102.0)


# --- the paper's statements, as predictions ---------------------------------------------------

def stated_groks(eta):
    """Fig. 3: grokking with weight decay (1), none without (0)."""
    return 1.0 if eta > 0 else 0.0


def reversed_groks(eta):
    """Planted error: grokking without weight decay, none with it."""
    return 1.0 if eta == 0 else 0.0


def stated_gf_sign():
    r"""Weight decay gives a *larger* :math:`\|G_F\|` around epoch 100 (+1)."""
    return 1.0


def stated_stage_order():
    r"""First a big update on :math:`V`, then on :math:`W`: the sign of
    :math:`\log\big(\tfrac{\|\Delta V\|/\|V\|}{\|\Delta W\|/\|W\|}\big)` is + first, then -."""
    return (1.0, -1.0)


def stated_diagonal():
    r""":math:`\tilde F^\top\tilde F` and :math:`P_1^\perp FF^\top` stay diagonal within 8%."""
    return 0.08


# --- the runs -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    """Per configuration (seed-major, then eta): the statistics the evidence compares."""

    eta: tuple[float, ...]
    seed: tuple[int, ...]
    stats: dict[str, torch.Tensor]        # name -> (B,) float64 (inf = never)
    trends: dict[str, torch.Tensor]       # name -> (D, B) along the diagnostic epochs
    diag_epochs: torch.Tensor
    #: name -> (epochs (E,), values (E, B)): accuracy and loss along training, for the plots
    curves: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)


def _first(epochs: torch.Tensor, values: torch.Tensor, threshold: float) -> torch.Tensor:
    """First epoch with ``values >= threshold`` per column (inf if none)."""
    hit = values >= threshold
    idx = hit.double().argmax(0)
    out = epochs[idx].double()
    return torch.where(hit.any(0), out, torch.full_like(out, math.inf))


def summarise(series: Callable[[str], tuple[torch.Tensor, torch.Tensor]],
              eta: Sequence[float], seed: Sequence[int], window: tuple[int, int]) -> Summary:
    """Thresholds, peaks and maxima of every configuration's history (``series(name)``:
    ``(epochs, values (D, B))``, as ``History.series``; ``eta``, ``seed`` per column)."""
    et, train_acc = series("train_acc")
    ee, test_acc = series("test_acc")
    eg, gf = series("gf_norm")
    ed, ftf = series("ftf_ratio")
    _, fft = series("fft_ratio")
    _, dist = series("fft_dist")
    _, w_rel = series("w_update_rel")
    _, v_rel = series("v_update_rel")
    _, w_cos = series("w_update_cos")
    _, v_cos = series("v_update_cos")
    in_window = (eg >= window[0]) & (eg <= window[1])
    peak = gf.argmax(0)
    stats = {
        "epoch train acc = 1": _first(et, train_acc, 1.0),
        "epoch train acc >= 0.99": _first(et, train_acc, 0.99),
        "epoch test acc >= 0.5": _first(ee, test_acc, 0.5),
        "epoch test acc >= 0.99": _first(ee, test_acc, 0.99),
        "final test acc": test_acc[-1],
        "final train acc": train_acc[-1],
        "outcome": grokking_outcome(test_acc),
        "peak ||G_F||": gf.max(0).values,
        "epoch of peak ||G_F||": eg[peak].double(),
        "window mean ||G_F||": (gf * in_window[:, None]).sum(0) / in_window.sum(),
        "max off/diag of Ft^T Ft": ftf.max(0).values,
        "max off/diag of P FF^T": fft.max(0).values,
        "initial off/diag of Ft^T Ft": ftf[0],
        "initial off/diag of P FF^T": fft[0],
    }
    ratio = (v_rel / w_rel).log()                                    # NaN at epoch 0
    stats["first update-size sign"] = torch.sign(ratio[1])
    stats["later update-size sign"] = torch.sign(ratio[2:].nan_to_num(math.inf).min(0).values)
    later_w = (ratio[2:] < 0)
    stats["epoch W update dominates"] = torch.where(
        later_w.any(0), ed[2:][later_w.double().argmax(0)].double(),
        torch.full_like(ratio[1], math.inf))
    trends = {"log update-size ratio V/W": ratio, "W update cosine distance": 1 - w_cos,
              "V update cosine distance": 1 - v_cos, "off/diag P FF^T": fft,
              "off/diag Ft^T Ft": ftf, "fft_dist (fit_diag_11)": dist}
    curves = {"train accuracy": (et, train_acc), "test accuracy": (ee, test_acc),
              "train loss": series("train_loss"), "test loss": series("test_loss")}
    return Summary(eta=tuple(eta), seed=tuple(seed), stats=stats, trends=trends,
                   diag_epochs=ed, curves=curves)


def _train(run: Run) -> Summary:
    """Every seed a sweep point (``run.sweep``: in this process or on the Dask cluster ``check
    --backend`` names), its etas on the batch axis; the per-seed series joined seed-major, as
    one grid of all seeds would order them. Memoised for the process: the stated forms do
    not enter, so the control's run reuses it."""
    p = run.params
    table = torch.as_tensor(build_group(f"Z{p['M']}").table).tolist()
    common = {k: p[k] for k in ("K", "p", "lr", "epochs", "eval_every", "diag_every",
                                "gradient_every", "gram_subsample")}
    points = [{"table": table, "seed": seed, "etas": list(p["etas"]), **common,
               "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}
              for seed in p["seeds"]]
    results = run.sweep("training", grokking_series_point, points)

    def series(name: str) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [(decode(r[name]["epochs"]), decode(r[name]["values"])) for r in results]
        return parts[0][0], torch.cat([v for _, v in parts], dim=1)

    seeds = [s for s in p["seeds"] for _ in p["etas"]]
    etas = [e for _ in p["seeds"] for e in p["etas"]]
    return summarise(series, etas, seeds, tuple(p["gf_window"]))


# --- evidence -----------------------------------------------------------------------------------

def _by_eta(s: Summary, name: str, positive: bool) -> torch.Tensor:
    keep = torch.tensor([(e > 0) == positive for e in s.eta])
    return s.stats[name][keep]


def _qualitative(run: Run, s: Summary) -> Iterator[Evidence]:
    p = run.params
    params = {"M": p["M"], "K": p["K"], "p": p["p"], "etas": p["etas"], "seeds": p["seeds"],
              "epochs": p["epochs"]}
    yield compare(Route.NUMERIC, f"grokking outcome per configuration (1: test acc >= 0.99 within "
                  f"{p['epochs']} epochs; 0: test acc < 0.5 throughout; 0.5: in between)",
                  stated=torch.tensor([run.stated["groks"](e) for e in s.eta]),
                  measured=s.stats["outcome"], tolerance=EXACT, metric="absolute",
                  parameters=params)
    gf_on = _by_eta(s, "window mean ||G_F||", True)
    gf_off = _by_eta(s, "window mean ||G_F||", False)
    sign = torch.sign((gf_on / gf_off).log())
    yield compare(Route.NUMERIC, f"sign of log(mean ||G_F|| with decay / without), epochs "
                  f"{p['gf_window'][0]}-{p['gf_window'][1]}, per seed",
                  stated=torch.full_like(sign, float(run.stated["gf_sign"]())),
                  measured=sign, tolerance=EXACT, metric="absolute",
                  parameters={**params, "ratios": (gf_on / gf_off).tolist()})
    order = torch.tensor(run.stated["stage_order"](), dtype=torch.float64)
    measured = torch.stack([_by_eta(s, "first update-size sign", True),
                            _by_eta(s, "later update-size sign", True)], 1)
    yield compare(Route.NUMERIC, "two stages with decay: sign of log of the relative update "
                  "size of V over that of W at the first step, then its least later value, "
                  "per seed", stated=order.expand_as(measured), measured=measured,
                  tolerance=EXACT, metric="absolute",
                  parameters={**params, "epoch W dominates": _by_eta(
                      s, "epoch W update dominates", True).tolist()})
    bound = float(run.stated["diagonal"]())
    for gram in ("Ft^T Ft", "P FF^T"):
        top = s.stats[f"max off/diag of {gram}"]
        yield at_least(Route.NUMERIC, f"-(max over epochs of mean |off-diag| / mean |diag| of "
                       f"{gram}) >= -{bound:g}, every configuration",
                       measured=-top, bound=torch.full_like(top, -bound),
                       tolerance=EXACT if p["gram_subsample"] is None else Tolerance(
                           0.01, "Grams estimated on a strided subset of "
                           f"{p['gram_subsample']} nodes/samples: about 1% sampling error"),
                       parameters={**params, "at initialisation": s.stats[
                           f"initial off/diag of {gram}"].tolist()},
                       note="an upper bound written as -value >= -bound")


def _spread(values: torch.Tensor) -> float:
    q = torch.quantile(values, torch.tensor([0.25, 0.75], dtype=values.dtype))
    return float(q[1] - q[0])


def _resolution(name: str, p) -> float:
    """The logging interval behind an epoch statistic (0 for values)."""
    if name.startswith("epoch test"):
        return float(p["eval_every"])
    if name.startswith("epoch of peak"):
        return float(p["gradient_every"])
    return 1.0 if name.startswith("epoch") else 0.0


def _third_party(run: Run, s: Summary) -> Iterator[Evidence]:
    p = run.params
    beyond = float(p["epochs"] + 1)      # "never" compares as one epoch past the budget
    seed0 = torch.tensor([sd == 0 for sd in s.seed])
    for name, reported in THIRD_PARTY_SEED0.items():
        for positive, value in zip((True, False), reported):
            keep = torch.tensor([(e > 0) == positive for e in s.eta])
            ours = s.stats[name][keep & seed0]
            label = f"third party seed 0, eta {'> 0' if positive else '= 0'}: {name}"
            if value is None:
                yield compare(Route.NUMERIC, f"{label} is never (within {p['epochs']} epochs)",
                              stated=torch.tensor([1.0]), measured=torch.isinf(ours).double(),
                              tolerance=EXACT, metric="absolute")
                continue
            all_seeds = s.stats[name][keep]
            finite = all_seeds[torch.isfinite(all_seeds)]
            spread = _spread(finite) if len(finite) > 1 else 0.0
            resolution = _resolution(name, p)
            rounding = REPORTED_HALF_UNIT.get(name, 0.0)
            yield compare(Route.NUMERIC, label, stated=torch.tensor([float(value)]),
                          measured=ours.nan_to_num(posinf=beyond), metric="absolute",
                          tolerance=Tolerance(spread + resolution + rounding,
                                              f"our {len(finite)}-seed IQR {spread:.3g} (same "
                                              f"seed: same init and split, only float "
                                              f"arithmetic differs, less than a change of "
                                              f"seed) + logging interval {resolution:g} + "
                                              f"their rounding {rounding:g}"))
    t50 = _by_eta(s, "epoch test acc >= 0.5", True)
    median, lo, hi = THIRD_PARTY_T50
    finite = t50[torch.isfinite(t50)]
    ours_spread = _spread(finite) if len(finite) > 1 else 0.0
    yield compare(Route.NUMERIC, f"third party, {len(t50)} seeds with decay: median epoch of "
                  f"test acc 0.5", stated=torch.tensor([median]),
                  measured=t50.nan_to_num(posinf=beyond).median().reshape(1), metric="absolute",
                  tolerance=Tolerance(max(hi - lo, ours_spread) + _resolution("epoch test", p),
                                      "the larger IQR of the two 15-seed samples (two medians "
                                      "of 15 draws differ by about 0.35 IQR: ~3 sd) + logging "
                                      "interval"))
    never = torch.isinf(_by_eta(s, "epoch test acc >= 0.5", False)).double()
    yield compare(Route.NUMERIC, "third party, controls (eta = 0): fraction that never reaches "
                  "test acc 0.5", stated=torch.tensor([1.0]), measured=never.mean().reshape(1),
                  tolerance=EXACT, metric="absolute")


def _curves(s: Summary, what: str) -> dict[str, tuple[list[float], list[float]]]:
    """Train and test ``what`` (accuracy, loss) against the epoch, the mean over seeds per
    eta, at most about 200 epochs per curve."""
    out = {}
    for eta in sorted(set(s.eta), reverse=True):
        keep = torch.tensor([e == eta for e in s.eta])
        for split in ("train", "test"):
            epochs, values = s.curves[f"{split} {what}"]
            every = max(1, len(epochs) // 200)
            mean = values[:, keep].mean(1)
            mean = torch.where(mean.isfinite(), mean, math.nan)   # a gap, not an error
            out[f"{split}, eta = {eta:g}"] = (epochs[::every].tolist(), mean[::every].tolist())
    return out


def _plots(run: Run, s: Summary) -> None:
    """Fig. 3's panels a reader expects: accuracy and loss against the epoch, with decay and
    without (one colour per eta; training dashed, test solid)."""
    seeds = len(set(s.seed))
    accuracy, loss = _curves(s, "accuracy"), _curves(s, "loss")
    styles = {name: f"C{i // 2}{'--' if name.startswith('train') else '-'}"
              for i, name in enumerate(accuracy) if i < 20}
    run.plot(Plot(f"training (dashed) and test (solid) accuracy, mean over {seeds} seeds: "
                  f"grokking with weight decay only", x_label="epoch", y_label="accuracy",
                  series=accuracy, styles=styles,
                  references=(Reference("grokked: test accuracy 0.99", y=0.99),
                              Reference("none: stays below 0.5", y=0.5))))
    positive = all(v > 0 for _, ys in loss.values() for v in ys if not math.isnan(v))
    run.plot(Plot(f"training (dashed) and test (solid) loss, mean over {seeds} seeds",
                  x_label="epoch", y_label="loss" + (" (log scale)" if positive else ""),
                  series=loss, styles=styles, log_y=positive))


def _figures(run: Run, s: Summary) -> None:
    _plots(run, s)
    for positive in (True, False):
        tag = "eta > 0" if positive else "eta = 0"
        run.figure(f"per seed, {tag}", {name: _by_eta(s, name, positive).tolist()
                                        for name in s.stats})
    keep = {name: t for name, t in s.trends.items()}
    every = max(1, len(s.diag_epochs) // 12)
    run.figure("trends (median over seeds with decay / without), at diagnostic epochs", {
        "epoch": s.diag_epochs[::every].tolist(),
        **{f"{name}, {tag}": t[::every][:, torch.tensor([(e > 0) == pos for e in s.eta])]
           .nanmedian(1).values.tolist()
           for name, t in keep.items() for tag, pos in (("decay", True), ("none", False))}})
    run.figure("note on the third party's update cosine", "their code compares the last update "
               "with itself (both are W_t - W_(t-1) when logged), so its consecutive-update "
               "cosine distance is 0 up to rounding; the values here compare Delta_t with "
               "Delta_(t-1)")


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    paper = (p["M"], p["K"], train_count(p["M"], p["p"])) == (71, 2048, 2016)
    run.assume("the paper's size: M = 71, K = 2048, n = 2016, 400 epochs", paper,
               detail=f"M = {p['M']}, K = {p['K']}, n = {train_count(p['M'], p['p'])}",
               probe=not paper)
    s = _train(run)
    # Every run of Fig. 3 fits its training set by epoch ~25; one that fits nothing (a step
    # size that throws it about) neither groks nor memorises, which says nothing about decay.
    _, loss = s.curves["train loss"]
    record_trained(run, p["M"], s.stats["final train acc"], loss[-1],
                   where=f"epoch {p['epochs']}, every (seed, eta)",
                   test_accuracy=s.stats["final test acc"])
    finite = torch.stack([torch.isfinite(s.stats[k]) for k in ("final test acc",
                                                               "peak ||G_F||")]).all(0)
    if not finite.all():
        run.ran("every run stayed finite", False,
                f"{int((~finite).sum())} of {finite.numel()} runs reached NaN/Inf")
        return
    yield from _qualitative(run, s)
    if p["third_party"]:
        yield from _third_party(run, s)
    _figures(run, s)


def _n(p) -> int:
    return train_count(p["M"], p["p"])


CLAIM = register(Claim(
    id="li2.fig3",
    paper=PAPER,
    kind="experiment",
    title="Fig. 3: grokking with weight decay, the growth of ||G_F||, two update stages and "
          "near-diagonal Grams",
    source="Fig. 3, §3 (SOURCES §5, third-party replication §7)",
    statement=r"M=71,\ K=2048,\ n=2016:\ \eta=2\times10^{-4}\ \text{groks},\ \eta=0\ "
              r"\text{does not};\ \|G_F\|\ \text{larger with}\ \eta\ \text{around epoch 100};"
              r"\ \text{first a big update on}\ V,\ \text{then on}\ W;\ "
              r"\tilde F^\top\tilde F,\ P_1^\perp FF^\top\ \text{diagonal within}\ 8\%",
    reading=r"The author's code as the third party ran it: Adam lr 10^{-3} with coupled weight "
            r"decay \eta on W and V, \sigma(x)=x^2, the code's class-centred MSE, default "
            r"nn.Linear init, full batch, 400 epochs, epoch t = after t steps (logged before "
            r"the next). Groks: test accuracy \ge 0.99 within the budget; none: test accuracy "
            r"< 0.5 throughout. \|G_F\|=\|P_1^\perp(Y-\hat Y)V^\top\|_F; 'around epoch 100': "
            r"its mean over epochs 50-150, compared seed by seed. 'Big update' is read as "
            r"relative size: \|\Delta V_t\|/\|V_t\| exceeds \|\Delta W_t\|/\|W_t\| after the "
            r"first step and falls below it later (the consecutive-update cosine distance is "
            r"reported, not decided: the text does not say how it shows the stages); 'first' is "
            r"the first logged epoch after the start. "
            r"Diagonal: mean |off-diagonal| / mean |diagonal| (the code's "
            r"compute\_diag\_off\_diag\_avg) \le 0.08 at every logged epoch. Quick fidelity "
            r"(M=29, K=512, p=0.6, 260 epochs, 2 seeds, Grams and updates every 20 epochs, "
            r"\eta_{paper}=n\eta/2 kept at 0.20) checks the "
            r"qualitative statements with the same 8%, not the paper's numbers: there the "
            r"ratios of random features at initialisation are already 0.045-0.054 (they scale "
            r"as n^{-1/2} and K^{-1/2}; 0.026 at the paper's size) and that of "
            r"P_1^\perp FF^\top grows after grokking, so its margin is smaller. Full fidelity "
            r"also compares with the third party's numbers.",
    parameters={
        "quick": {"M": 29, "K": 512, "p": 0.6, "lr": 1e-3, "etas": (8e-4, 0.0),
                  "seeds": (0, 1), "epochs": 260, "eval_every": 5, "diag_every": 20,
                  "gradient_every": 5, "gram_subsample": None, "gf_window": (50, 150),
                  "third_party": False},
        # the Fig. 3 setting for seed 0 alone, the seed whose numbers the third party reports:
        # 8.3 CPU-min; the same seed-0 figures as full to the last bit, and the same fail,
        # on one more item (eta > 0: epoch of train accuracy 1), since one seed has no seed
        # spread to add to that item's tolerance
        "medium": {"M": 71, "K": 2048, "p": 0.4, "lr": 1e-3, "etas": (2e-4, 0.0),
                   "seeds": (0,), "epochs": 400, "eval_every": 1, "diag_every": 5,
                   "gradient_every": 1, "gram_subsample": None, "gf_window": (50, 150),
                   "third_party": True},
        "full": {"M": 71, "K": 2048, "p": 0.4, "lr": 1e-3, "etas": (2e-4, 0.0),
                 "seeds": tuple(range(15)), "epochs": 400, "eval_every": 1, "diag_every": 5,
                 "gradient_every": 1, "gram_subsample": None, "gf_window": (50, 150),
                 "third_party": True},
    },
    stated={"groks": stated_groks, "gf_sign": stated_gf_sign,
            "stage_order": stated_stage_order, "diagonal": stated_diagonal},
    # a larger bound is a weaker statement: a run that meets 8% meets 8.4% too, so a check of
    # an upper bound cannot reject it (a tighter or sign-flipped bound is rejected)
    equivalent_mutants={"diagonal:scale": "an upper bound made looser is met whenever the "
                                          "stated one is",
                        "diagonal:nudge": "as diagonal:scale"},
    check=check,
    control=NegativeControl("weight decay's role reversed: grokking without it, none with it",
                            {"groks": reversed_groks}),
    assumptions=(
        Assumption("a decay run and a control", "the etas include one > 0 and 0",
                   lambda p: any(e > 0 for e in p["etas"]) and 0.0 in p["etas"]),
        Assumption("weight decay matched to the paper's", "n eta / 2 within 10% of the paper's "
                   "2016 x 2e-4 / 2 = 0.2016 for the decay run",
                   lambda p: any(abs(_n(p) * e / 2 / 0.2016 - 1) < 0.1 for e in p["etas"])),
    ),
    # Width, step size, decay (halved or doubled leaves the matched-decay assumption; every
    # choice keeps its eta = 0 control, which the comparisons need) and seeds; K at most the
    # quick 512 keeps a point to seconds.
    space={"K": IntRange(128, 512), "lr": LogUniform(3e-4, 3e-2),
           "etas": Choice(((8e-4, 0.0), (4e-4, 0.0), (1.6e-3, 0.0))),
           "seeds": Choice(((0, 1), (2, 3), (4, 5)))},
    tags=("training",),
))
