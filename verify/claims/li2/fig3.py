r"""li2.fig3: Fig. 3, modular addition :math:`M=71`, :math:`K=2048`, :math:`n=2016`, weight decay
:math:`\eta=2\times10^{-4}` against :math:`\eta=0`, 15 seeds
(verify/claims/li2/SOURCES.md §5).

Routes: the paper's description, written as predictions (stated: grokking with decay and none
without; a larger :math:`\|G_F\|` with decay around epoch 100; first a large update of
:math:`V`, then of :math:`W`; :math:`\tilde F^\top\tilde F` and :math:`P_1^\perp FF^\top`
diagonal to within 8%); batched full-batch training of the two-layer network
(:mod:`verify.claims.li2._fig3_runs`, measured). The third party's numbers on the same runs
(SOURCES §7.3) are a claim about their report, ``li2.x.fig3-third-party``, so that their
reporting does not decide the paper's statements.

Quick fidelity is a scaled-down run (:math:`M=29`, :math:`K=512`, :math:`p=0.6`, 2 seeds): it
checks the qualitative statements, not the paper's numbers. Its weight decay keeps the paper's
:math:`\eta_{\rm paper}=n\eta/2\approx0.20` (SOURCES §2.4).
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import torch

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
    Reading,
    Reference,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    register,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._fig3_runs import SETTINGS, Summary, healthy, train

EXACT = Tolerance(0.0, "a qualitative statement: it must hold for every seed")

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


# --- evidence -----------------------------------------------------------------------------------

def _qualitative(run: Run, s: Summary) -> Iterator[Evidence]:
    p = run.params
    params = {"M": p["M"], "K": p["K"], "p": p["p"], "etas": p["etas"], "seeds": p["seeds"],
              "epochs": p["epochs"]}
    yield compare(Route.NUMERIC, f"grokking outcome per configuration (1: test acc >= 0.99 within "
                  f"{p['epochs']} epochs; 0: test acc < 0.5 throughout; 0.5: in between)",
                  stated=torch.tensor([run.stated["groks"](e) for e in s.eta]),
                  measured=s.stats["outcome"], tolerance=EXACT, metric="absolute",
                  parameters=params)
    gf_on = s.by_eta("window mean ||G_F||", True)
    gf_off = s.by_eta("window mean ||G_F||", False)
    sign = torch.sign((gf_on / gf_off).log())
    yield compare(Route.NUMERIC, f"sign of log(mean ||G_F|| with decay / without), epochs "
                  f"{p['gf_window'][0]}-{p['gf_window'][1]}, per seed",
                  stated=torch.full_like(sign, float(run.stated["gf_sign"]())),
                  measured=sign, tolerance=EXACT, metric="absolute",
                  parameters={**params, "ratios": (gf_on / gf_off).tolist()})
    order = torch.tensor(run.stated["stage_order"](), dtype=torch.float64)
    if p["stage_measure"] == COSINE:
        yield _stages_by_cosine(s, order, params)
    else:
        measured = torch.stack([s.by_eta("first update-size sign", True),
                                s.by_eta("later update-size sign", True)], 1)
        yield compare(Route.NUMERIC, "two stages with decay: sign of log of the relative "
                      "update size of V over that of W at the first step, then its least later "
                      "value, per seed", stated=order.expand_as(measured), measured=measured,
                      tolerance=EXACT, metric="absolute",
                      parameters={**params, "epoch W dominates": s.by_eta(
                          "epoch W update dominates", True).tolist()})
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


#: Reading B's measure of a "big update": the cosine distance of consecutive updates.
COSINE = "cosine distance"


def _stages_by_cosine(s: Summary, order: torch.Tensor, params: dict) -> Evidence:
    r"""Reading B of "the cosine distance between consecutive :math:`\Delta W` shows two stages:
    first a big update on :math:`V`, then on :math:`W`": a layer's update is big where its
    direction turns most, :math:`1-\cos(\Delta_t,\Delta_{t-1})`. The sign of
    :math:`\log(d_V/d_W)` at the first diagnostic epoch after the start, then its least later
    value, per decay run (the same pair of signs as the printed reading's relative sizes)."""
    decay = torch.tensor([e > 0 for e in s.eta])
    ratio = (s.trends["V update cosine distance"] / s.trends["W update cosine distance"]).log()
    ratio = ratio[:, decay]                                           # (D, decay runs); NaN at 0
    measured = torch.stack([torch.sign(ratio[1]),
                            torch.sign(ratio[2:].nan_to_num(math.inf).min(0).values)], 1)
    return compare(Route.NUMERIC, "two stages with decay (reading B): sign of log of the "
                   "cosine distance of consecutive V updates over that of W at the first "
                   "diagnostic epoch, then its least later value, per seed",
                   stated=order.expand_as(measured), measured=measured, tolerance=EXACT,
                   metric="absolute", parameters={
                       **params, "diagnostic epochs": s.diag_epochs[:3].tolist(),
                       "log(d_V/d_W) at the first diagnostic epoch": ratio[1].tolist()})


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
        run.figure(f"per seed, {tag}", {name: s.by_eta(name, positive).tolist()
                                        for name in s.stats})
    keep = {name: t for name, t in s.trends.items()}
    every = max(1, len(s.diag_epochs) // 12)
    run.figure("trends (median over seeds with decay / without), at diagnostic epochs", {
        "epoch": s.diag_epochs[::every].tolist(),
        **{f"{name}, {tag}": t[::every][:, torch.tensor([(e > 0) == pos for e in s.eta])]
           .nanmedian(1).values.tolist()
           for name, t in keep.items() for tag, pos in (("decay", True), ("none", False))}})
    run.figure("not measured on these runs", "the spectra of the Grams and the cosine of G_F "
               "with Yt Yt^T Ft: the runs' point (numerics.li2.sweep_points."
               "grokking_series_point) records no spectrum or coupling group, and its points "
               "are the stored paper-size runs; li2.eq6 measures the G_F cosines on its runs")
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
    s = train(run)
    if not healthy(run, s):
        return
    yield from _qualitative(run, s)
    _figures(run, s)


def _n(p) -> int:
    return train_count(p["M"], p["p"])


CLAIM = register(Claim(
    id="li2.fig3",
    paper=PAPER,
    kind="experiment",
    title="Fig. 3: grokking with weight decay, the growth of ||G_F||, two update stages and "
          "near-diagonal Grams",
    source="Fig. 3, §3 (SOURCES §5)",
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
            r"first step and falls below it later (reading B reads it by the consecutive-update "
            r"cosine distance the sentence names: the text does not say how that shows the "
            r"stages); 'first' is the first logged epoch after the start. "
            r"Diagonal: mean |off-diagonal| / mean |diagonal| (the code's "
            r"compute\_diag\_off\_diag\_avg) \le 0.08 at every logged epoch. Quick fidelity "
            r"(M=29, K=512, p=0.6, 260 epochs, 2 seeds, Grams and updates every 20 epochs, "
            r"\eta_{paper}=n\eta/2 kept at 0.20) checks the "
            r"qualitative statements with the same 8%, not the paper's numbers: there the "
            r"ratios of random features at initialisation are already 0.045-0.054 (they scale "
            r"as n^{-1/2} and K^{-1/2}; 0.026 at the paper's size) and that of "
            r"P_1^\perp FF^\top grows after grokking, so its margin is smaller. The third "
            r"party's numbers on these runs are li2.x.fig3-third-party's.",
    # medium: the paper's setting for seed 0 alone (8.3 CPU-min); full: its 15 seeds
    parameters={fidelity: {**setting, "stage_measure": "relative size"}
                for fidelity, setting in SETTINGS.items()},
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
    readings=(Reading("B (big update read as the cosine distance)", "the sentence names the "
                      "cosine distance between consecutive updates as what shows the two "
                      "stages: a layer's update read as big where its direction turns most "
                      "(1 - cos of consecutive updates), V's against W's, the same signs as "
                      "the printed reading's relative sizes",
                      parameters={"stage_measure": COSINE}, compares_only=True),),
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
