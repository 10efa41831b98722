r"""li2.sec6-deep: §6, the extension to deeper networks (Eq. 11; claims, no theorem).

Network :math:`F_l=\sigma(F_{l-1}W_l)` (or the code's residual :math:`\sigma(F_{l-1}(I+W_l))`),
:math:`\hat Y=F_LV`, :math:`G_l=G_{F_l}` (:mod:`numerics.li2.deep_group_network`). §6:
:math:`G_{L-1}=D_LG_LW_L^\top=(D_L\tilde Y\tilde Y^\top D_L)F_{L-1}(W_LW_L^\top)\approx
D_L\tilde Y\tilde Y^\top D_LF_{L-1}` "using :math:`W_LW_L^\top\approx I` for random
:math:`W_L`"; learning proceeds bottom-up; in a residual network :math:`G_{{\rm res},1}=\sum_lG_l`
and the cleaner :math:`G_L` dominates.

Routes, at initialisation (float64, all pairs of a training split of :math:`\mathbb Z_M`, the
Stage-II top gradient :math:`G_L=\tilde Y\tilde Y^\top F_L`, i.e. the gradient of
:math:`\tfrac12\|\tilde Y^\top F_L\|^2`):

* the exact step: the paper's product, read per unit
  (:math:`C\sum_jD_j\tilde Y\tilde Y^\top D_jF_{L-1}\mathbf w_j\mathbf w_j^\top`, stated)
  against autograd's :math:`G_{L-1}` (measured), ReLU and :math:`x^2`, plain and residual;
* the approximation: :math:`1-\cos(G_{L-1},\tfrac1K\sum_jD_j\tilde Y\tilde Y^\top
  D_jF_{L-1})` along a geometric grid of widths, per activation: its fitted order in
  :math:`1/K` (t-interval over seeds) against the order 1 that the argument implies
  (:math:`W_LW_L^\top-I=O(K^{-1/2})`, and a cosine's deficit is quadratic in a perturbation);
* :math:`\|W_LW_L^\top-I\|_F/\|I\|_F` at the scale where :math:`\mathbb E[W_LW_L^\top]=I`
  (entries of variance :math:`1/K`): its order in :math:`1/K` against the law-of-large-numbers
  rate :math:`\tfrac12` that "approximately :math:`I` for random :math:`W_L`" needs;
* the cosine's independence of the init scale in the plain network (derived: every layer is
  positively homogeneous, so both sides scale by constants) against measured cosines;
* the residual decomposition: :math:`G_{{\rm res},1}` by autograd against the sum of the
  :math:`L` terms (the top gradient carried down the skips, and each layer's branch), and the
  top term's norm against the others';

and over training (Adam, ReLU, 3 layers, plain and residual): the epoch at which each layer's
irrep purity has covered a fixed fraction of the way from its initial value to 1
(:func:`numerics.li2.deep_group_network.rise_epochs`); bottom-up means the lowest layer's comes
first, then the next. A layer that never gets there within the budget is censored: its time is later
than the budget, which decides an order only against an observed time.

Fig. 9 (2-, 3- and 4-layer ReLU networks: deeper networks grok later, the lowest layer still
learns distorted Fourier features): one depth sweep (the code's residual hidden layers,
``other_layers`` = depth - 2; :func:`numerics.li2.init_sweep_points.depth_grokking_point`), the
seeds of each depth on its batch axis and paired across depths (the same split), each trained
until all its seeds reach test accuracy 0.5 or the budget ends. "Later": per step of depth the
mean over seeds of :math:`\log(t_{d+1}/t_d)` with its 95% Student-t interval against the stated
sign + (censored times as one-sided bounds). "Distorted Fourier": the lowest layer's mean node
purity when the run ends against :math:`\tfrac12`, the level above which one frequency holds the
majority of a node's varying power (a Fourier node has 1); the random initial layer is the
control (a random node :math:`u(h_1)+v(h_2)` has four Gaussian coordinates per frequency, so
its dominant share is the largest of :math:`R` Dirichlet(2, ..., 2) shares: 0.34 on average
for the :math:`R=6` frequencies of :math:`M=13`, 0.22 at :math:`M=23`, 0.54 at :math:`M=7`),
and a depth whose initial layer already reaches the level is undecided.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, fields

import torch

from numerics.activations import activation as activation_by_name
from numerics.li2.deep_group_network import (
    HOMOGENEITY,
    DeepConfig,
    centred_labels,
    cosine,
    effective,
    gated_approximation,
    identity_deviation,
    init_params,
    layer_gradients,
    residual_terms,
)
from numerics.errors import Diverged
from numerics.li2.group_task import group_task
from numerics.li2.init_sweep_points import (
    BELOW_AT_START,
    depth_grokking_point,
    earliest_crossing,
    paired_log_ratio,
)
from numerics.li2.sweep_points import decode, deep_rises_point, encode
from numerics.li2.trainer import Hyper
from numerics.li2.train_splits import random_splits
from verify import (
    LEVEL,
    SEED,
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
    at_least,
    compare,
    compare_cases,
    fit_trend,
    register,
    roundoff,
    trend_evidence,
    undecided,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group, float_projectors
from verify.claims.li2._paired import direction_evidence
from verify.claims.li2._trained import TRAINED, record_trained

# --- the paper's statements ---------------------------------------------------------------------


def stated_chain(D, Yt, F_prev, W, C):
    r""":math:`G_{L-1}=(D_L\tilde Y\tilde Y^\top D_L)F_{L-1}(W_LW_L^\top)` with one gate per
    unit: :math:`C\sum_jD_j\tilde Y\tilde Y^\top D_jF_{L-1}\mathbf w_j\mathbf w_j^\top`
    (:math:`C` from :math:`\sigma=C\sigma'x`; ``D``: ``(B, n, K)`` gates, ``W``: ``(B, K', K)``)."""
    out = torch.zeros_like(F_prev)
    for j in range(W.shape[-1]):
        d, w = D[:, :, j:j + 1], W[:, :, j:j + 1]
        out = out + (d * (Yt @ (Yt.mT @ (d * (F_prev @ w))))) @ w.mT
    return C * out


def one_sided_chain(D, Yt, F_prev, W, C):
    """Planted error: the gate on one side only, :math:`D_L\\tilde Y\\tilde Y^\\top F_{L-1}
    W_LW_L^\\top`."""
    out = torch.zeros_like(F_prev)
    for j in range(W.shape[-1]):
        d, w = D[:, :, j:j + 1], W[:, :, j:j + 1]
        out = out + (d * (Yt @ (Yt.mT @ (F_prev @ w)))) @ w.mT
    return C * out


def stated_width_order():
    r"""The approximation improves with width as :math:`W_LW_L^\top\approx I` predicts: with
    :math:`W_LW_L^\top-I=O(K^{-1/2})` the cosine deficit, quadratic in the perturbation, is
    :math:`O(K^{-1})`: order 1 in :math:`1/K`."""
    return 1.0


def stated_identity_order():
    r""":math:`W_LW_L^\top\approx I` for random :math:`W_L`: an average of :math:`K`
    independent rank-one terms approaches its mean at the rate :math:`K^{-1/2}`."""
    return 0.5


def stated_residual_sum(terms):
    r""":math:`G_{{\rm res},1}=\sum_lG_l` (each layer's contribution carried to layer 1)."""
    return sum(terms)


def stated_bottom_up():
    """Learning proceeds bottom-up: layer l's purity rises before layer l+1's (+1)."""
    return 1.0


def stated_deeper_later():
    r"""Fig. 9: deeper networks grok later: the sign of :math:`\log(t_{d+1}/t_d)` is +1 for
    each step of depth."""
    return 1.0


def stated_lowest_fourier():
    r"""Fig. 9: the lowest layer's features remain (distorted) Fourier bases, at every depth
    (+1 per seed: its purity ends at or above :data:`FOURIER_LEVEL`)."""
    return 1.0


#: A (distorted) Fourier layer: its nodes' mean purity (the dominant frequency's share of a
#: node's varying power) is at least 1/2, i.e. one frequency holds the majority of a node's
#: power. A Fourier node has purity 1; "distorted" allows the rest of the way down to 1/2. A
#: random first-layer node has about 0.34 at M = 13 (module docstring): the level is decided
#: only where the random initial layer lies below it.
FOURIER_LEVEL = 0.5


# --- at initialisation --------------------------------------------------------------------------

@dataclass(frozen=True)
class InitProblem:
    """One batch of networks at initialisation and the quantities the routes compare."""

    G_prev: torch.Tensor       # autograd G_{L-1}
    F_prev: torch.Tensor
    pre: torch.Tensor          # Z_L
    W_eff: torch.Tensor
    Yt: torch.Tensor


def _problem(run: Run, width: int, activation: str, residual: bool, scale: float
             ) -> InitProblem:
    p = run.params["init"]
    G = build_group(p["group"])
    seeds = [run.seed_for(f"init seed {s}") for s in range(p["seeds"])]
    hyper = Hyper.batch(seed=seeds, init_scale=scale, p=p["p"])
    config = DeepConfig(K=width, layers=p["layers"], activation=activation, residual=residual)
    task = group_task(G.table, device=run.device)
    S, _ = random_splits(task, hyper.p, hyper.data_seed, run.dtype)
    params = init_params(hyper, G.order, config, device=run.device, dtype=run.dtype)
    Gs, fw = layer_gradients(params, S, G.order, config, "energy")
    L = p["layers"]
    return InitProblem(Gs[L - 2], fw.F[L - 2], fw.pre[L - 1],
                       effective(params[f"W{L}"], residual), centred_labels(S, G.order))


def _chain_problems(run: Run) -> list[tuple[dict, InitProblem, torch.Tensor]]:
    """Per (activation, plain/residual, width): the problem and its gates (cached: the
    stated product is the only part the control changes)."""
    p = run.params["init"]

    def compute() -> list[tuple[dict, InitProblem, torch.Tensor]]:
        out = []
        for activation in p["activations"]:
            for residual in (False, True):
                for width in p["chain_widths"]:
                    pb = _problem(run, width, activation, residual, 1.0)
                    out.append(({"activation": activation, "residual": residual, "K": width},
                                pb, activation_by_name(activation).derivative(pb.pre)))
        return out

    return run.memo("chain problems", compute)


def _chain_cases(run: Run) -> Iterator[Evidence]:
    p = run.params["init"]
    chain = run.stated["chain"]
    cases = []
    worst_size = 0
    for config, pb, D in _chain_problems(run):
        stated = chain(D, pb.Yt, pb.F_prev, pb.W_eff, HOMOGENEITY[config["activation"]])
        cases.append((config, stated, pb.G_prev))
        worst_size = max(worst_size, pb.F_prev.shape[1] + 2 * config["K"])
    # each entry chains a width-K product, a length-n label sum and the sum over K units, in
    # another order than autograd's: forward error <= (n + 2K) u of the largest term, x4 for
    # the two routes and the gate products
    yield compare_cases(Route.NUMERIC, "G_(L-1) = C sum_j D_j Yt Yt^T D_j F_(L-1) w_j w_j^T "
                        "(the paper's product, one gate per unit) vs autograd", cases,
                        tolerance=roundoff(run.dtype, 4 * worst_size, "summation error"),
                        names=("stated", "measured"),
                        parameters={"group": p["group"], "layers": p["layers"],
                                    "seeds": p["seeds"], "G_L": "Yt Yt^T F_L"})


def _deficits(run: Run, activation: str, residual: bool, scale: float, widths,
              readings: tuple[str, ...] = ("unit_mean",)) -> list[torch.Tensor]:
    """1 - cos(G_{L-1}, approximation), seeds x widths, per reading of the approximation."""
    cols: list[list[torch.Tensor]] = [[] for _ in readings]
    for width in widths:
        pb = _problem(run, width, activation, residual, scale)
        for col, reading in zip(cols, readings):
            approx = gated_approximation(pb.F_prev, pb.pre, pb.Yt, activation, reading)
            col.append(1 - cosine(pb.G_prev, approx))
    return [torch.stack(col, 1) for col in cols]


def _approximation_data(run: Run, activation: str) -> tuple[torch.Tensor, ...]:
    """Deficits (both readings) along the widths, and at the first width per init scale
    (cached: the stated forms do not enter)."""
    p = run.params["init"]
    widths = list(p["widths"])

    def compute() -> tuple[torch.Tensor, ...]:
        deficit, mean_gate = _deficits(run, activation, False, 1.0, widths,
                                       ("unit_mean", "mean_gate"))
        scaled = torch.cat([_deficits(run, activation, False, s, widths[:1])[0]
                            for s in p["scales"]], 1)
        return deficit, mean_gate, scaled

    return run.memo("deficits", compute, key=activation)


def _approximation(run: Run) -> Iterator[Evidence]:
    p = run.params["init"]
    widths = list(p["widths"])
    figure = {}
    for activation in p["activations"]:
        deficit, mean_gate, scaled = _approximation_data(run, activation)
        fit = fit_trend(widths, deficit, limit="infinity")
        # the order item alone: the helper's monotone item allows a roundoff-floor rise
        # (20% per step), which would hide a slow growth like x^2's
        yield trend_evidence(
            f"{activation}: 1 - cos(G_(L-1), (1/K) sum_j D_j Yt Yt^T D_j F_(L-1)) vs width K",
            fit, stated_order=float(run.stated["width_order"]()),
            parameters={"widths": widths, "group": p["group"], "layers": p["layers"],
                        "cos (median per width)": (1 - deficit).median(0).values.tolist()})[0]
        figure[activation] = {"unit_mean cos": (1 - deficit).tolist(),
                              "mean_gate cos": (1 - mean_gate).tolist()}
        # the cosine does not depend on the init scale of a plain homogeneous network
        yield compare(Route.NUMERIC, f"{activation}: cosine independent of the init scale "
                      f"(plain network, scales {list(p['scales'])}, K={widths[0]})",
                      derived=(1 - deficit[:, :1]).expand_as(scaled), measured=1 - scaled,
                      tolerance=roundoff(run.dtype, 64 * widths[0], "the same cosine "
                                         "computed from rescaled weights: sums of K-term "
                                         "products, 4 roundings each"),
                      parameters={"scales": list(p["scales"])},
                      note="derived: sigma(s z) = s^q sigma(z) scales G_(L-1) and the "
                           "approximation by positive constants")
    residual = run.memo("residual deficits", lambda: {
        f"scale {s:g}": (1 - torch.cat([_deficits(run, a, True, s, widths[:1])[0]
                                        for a in p["activations"]], 1)).tolist()
        for s in p["residual_scales"]})
    figure["residual (code's other_layers), K = first width, [seed][activation]"] = residual
    run.figure("cos(G_(L-1), approximation) at initialisation, [seed][width]", figure)


def _identity(run: Run) -> Iterator[Evidence]:
    p = run.params["init"]
    widths = list(p["widths"])
    M = build_group(p["group"]).order
    rows, ops = [], []
    for width in widths:
        hyper = Hyper.batch(seed=[run.seed_for(f"init seed {s}") for s in range(p["seeds"])])
        config = DeepConfig(K=width, layers=p["layers"])
        params = init_params(hyper, M, config, device=run.device, dtype=run.dtype)
        W = params[f"W{p['layers']}"]
        dev = identity_deviation(W, 1.0 / (3 * width))    # U(+-1/sqrt(K)): variance 1/(3K)
        rows.append(dev["rel_fro"])
        ops.append(dev["op"])
    rel = torch.stack(rows, 1)
    fit = fit_trend(widths, rel, limit="infinity")
    # for entries of variance 1/K with E w^4 = 9/(5K^2) (uniform): E rel_fro^2 = (K - 0.2)/K
    derived = [math.sqrt((k - 0.2) / k) for k in widths]
    yield trend_evidence("||W_L W_L^T - I||_F / ||I||_F at the scale E[W_L W_L^T] = I",
                         fit, stated_order=float(run.stated["identity_order"]()),
                         parameters={"widths": widths, "measured (mean)": rel.mean(0).tolist(),
                                     "derived E[.]^(1/2) (square, uniform entries)": derived,
                                     "operator norm (mean)":
                                         torch.stack(ops, 1).mean(0).tolist()})[0]


@dataclass(frozen=True)
class ResidualData:
    """The residual decomposition per (activation, objective), the top term's and the largest
    branch term's norms per seed, and the dominance figure."""

    cases: list[tuple[dict, list[torch.Tensor], torch.Tensor]]   # (config, terms, G_res,1)
    tops: torch.Tensor
    others: torch.Tensor
    labels: list[str]
    figure: dict[str, list[float]]


def _residual_data(run: Run) -> ResidualData:
    p = run.params["init"]
    G = build_group(p["group"])
    task = group_task(G.table, device=run.device)
    cases, tops, others, labels = [], [], [], []
    seeds = [run.seed_for(f"init seed {s}") for s in range(p["seeds"])]
    for activation in p["activations"]:
        for objective in ("energy", "loss"):
            hyper = Hyper.batch(seed=seeds, p=p["p"])
            config = DeepConfig(K=p["chain_widths"][0], layers=p["layers"],
                                activation=activation, residual=True)
            S, _ = random_splits(task, hyper.p, hyper.data_seed, run.dtype)
            params = init_params(hyper, G.order, config, device=run.device, dtype=run.dtype)
            G1, terms = residual_terms(params, S, G.order, config, objective)
            cases.append(({"activation": activation, "objective": objective}, terms, G1))
            if objective == "energy":
                norms = torch.stack([torch.linalg.vector_norm(t, dim=(1, 2)) for t in terms], 1)
                tops.append(norms[:, 0])
                others.append(norms[:, 1:].max(1).values)
                labels.append(activation)
    figure = {}
    for scale in p["dominance_scales"]:
        hyper = Hyper.batch(seed=seeds, p=p["p"], init_scale=scale)
        S, _ = random_splits(task, hyper.p, hyper.data_seed, run.dtype)
        for activation in p["activations"]:
            config = DeepConfig(K=p["chain_widths"][0], layers=p["layers"],
                                activation=activation, residual=True)
            params = init_params(hyper, G.order, config, device=run.device, dtype=run.dtype)
            _, terms = residual_terms(params, S, G.order, config, "energy")
            norms = torch.stack([torch.linalg.vector_norm(t, dim=(1, 2)) for t in terms], 1)
            figure[f"{activation}, init scale {scale:g}"] = (
                norms[:, 0] / norms[:, 1:].max(1).values).tolist()
    return ResidualData(cases, torch.cat(tops), torch.cat(others), labels, figure)


def _residual(run: Run) -> Iterator[Evidence]:
    p = run.params["init"]
    # memoised: only the stated sum of the terms differs in the control
    r = run.memo("residual terms", lambda: _residual_data(run))
    cases = [(config, run.stated["residual_sum"](terms), G1) for config, terms, G1 in r.cases]
    yield compare_cases(Route.NUMERIC, "G_res,1 (autograd) = sum of the L terms (G_L down the "
                        "skips + each layer's branch)", cases,
                        tolerance=roundoff(run.dtype, 8 * p["layers"] * p["chain_widths"][0],
                                           "L vector-Jacobian products of width K, in another "
                                           "order"),
                        names=("stated", "measured"), parameters={"layers": p["layers"]})
    yield at_least(Route.NUMERIC, "the G_L term dominates: ||G_L carried down the skips|| >= "
                   "every branch term's norm (Stage-II top gradient, code's init), per seed",
                   measured=r.tops, bound=r.others,
                   tolerance=Tolerance(0.0, "an ordering of norms: no slack"),
                   parameters={"activations": r.labels, "K": p["chain_widths"][0]})
    run.figure("residual: ||G_L term|| / largest branch term, per seed, by hidden init scale",
               r.figure)


# --- over training ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rises:
    epochs: torch.Tensor     # (B, L): rise epochs (budget where never)
    reached: torch.Tensor    # (B, L)
    purity: torch.Tensor     # (D, B, L)
    purity_epochs: torch.Tensor
    t_half: torch.Tensor     # (B,) test accuracy 0.5 (budget where never)
    final_test: torch.Tensor
    final_train: torch.Tensor
    final_loss: torch.Tensor


def _training(run: Run) -> dict[str, Rises]:
    """Per architecture, its seeds trained on one batch axis: one point each of a sweep
    (:meth:`Run.sweep`: in this process or on a Dask cluster, stored as it finishes; memoised,
    so the control reuses them)."""
    p = run.params["train"]
    G = build_group(p["group"])
    setting = {"table": [list(row) for row in G.table],
               "projectors": encode(float_projectors(G)), "seeds": list(p["seeds"]),
               **{k: p[k] for k in ("eta", "lr", "p", "init_scale", "top_init", "K", "layers",
                                    "activation", "optimizer", "eval_every", "purity_every",
                                    "epochs", "fraction")},
               "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}
    archs = list(p["architectures"])
    results = run.sweep("training", deep_rises_point,
                        [{**setting, "residual": a == "residual"} for a in archs])
    out = {}
    for arch, r in zip(archs, results):
        if not r["finite"]:
            raise Diverged(f"deep network training diverged (residual={arch == 'residual'})")
        out[arch] = Rises(**{f.name: decode(r[f.name]) for f in fields(Rises)})
    return out


def _order(a: torch.Tensor, ra: torch.Tensor, b: torch.Tensor, rb: torch.Tensor
           ) -> torch.Tensor:
    """+1 if the rise ``a`` (reached ``ra``) comes before ``b``, -1 if after, 0 when the order
    is unknown: both censored (a censored time only exceeds the budget) or the same logged
    epoch (within one logging interval)."""
    out = torch.where(ra & rb, torch.sign(b - a), torch.zeros_like(a))
    out = torch.where(ra & ~rb, 1.0, out)
    return torch.where(~ra & rb, -1.0, out)


def _bottom_up(run: Run) -> Iterator[Evidence]:
    p = run.params["train"]
    stated = float(run.stated["bottom_up"]())
    figure = {}
    for arch, r in _training(run).items():
        record_trained(run, build_group(p["group"]).order, r.final_train, r.final_loss,
                       where=f"{arch}, epoch {p['epochs']}", test_accuracy=r.final_test,
                       name=f"{arch}: {TRAINED}")
        L = r.epochs.shape[1]
        params = {"architecture": arch, "rise epochs [seed][layer]": r.epochs.tolist(),
                  "reached": r.reached.tolist(), "fraction": p["fraction"],
                  "budget": p["epochs"], "logging interval": p["purity_every"]}
        for label, pairs in (("the lowest layer's purity rises first (t_1 < t_l, l >= 2)",
                              [(0, l) for l in range(1, L)]),
                             ("then the next (t_l < t_(l+1), l >= 2)",
                              [(l, l + 1) for l in range(1, L - 1)])):
            if not pairs:
                continue
            signs = torch.stack([_order(r.epochs[:, a], r.reached[:, a], r.epochs[:, b],
                                        r.reached[:, b]) for a, b in pairs], 1)
            quantity = f"{arch}: {label}, per seed"
            if bool((signs == 0).any()):
                yield undecided(Route.NUMERIC, quantity,
                                f"{int((signs == 0).sum())} (seed, pair): both layers never "
                                f"reach the purity level within {p['epochs']} epochs, or in "
                                f"the same logging interval: their order is unknown",
                                tolerance=Tolerance(0.0, "an order"), parameters=params)
                continue
            yield compare(Route.NUMERIC, quantity, stated=torch.full_like(signs, stated),
                          measured=signs, metric="absolute",
                          tolerance=Tolerance(0.0, "an order per seed: no slack"),
                          parameters=params)
        every = max(1, len(r.purity_epochs) // 16)
        figure[arch] = {"epoch": r.purity_epochs[::every].tolist(),
                        "purity [epoch][seed][layer]": r.purity[::every].tolist(),
                        "epoch test acc 0.5": r.t_half.tolist(),
                        "final test acc": r.final_test.tolist()}
        if not run.is_control:
            # the paper's bottom-up picture: each layer's purity along training, the median
            # over seeds, with the mean rise epochs in the legend
            median = r.purity.double().median(1).values                     # (D, L)
            run.plot(Plot(f"{arch}: irrep purity of each layer along training (median over "
                          f"{r.purity.shape[1]} seeds)", x_label="epoch", y_label="purity",
                          series={f"layer {layer + 1} ({_rise_label(r, layer, p['epochs'])})":
                                  (r.purity_epochs.tolist(), median[:, layer].tolist())
                                  for layer in range(median.shape[1])}))
    run.figure("layer purity over training", figure)


def _rise_label(r, layer: int, budget: int) -> str:
    """The median rise epoch over seeds, or that it did not rise within the budget (a run
    that never rises records the budget)."""
    t = float(r.epochs[:, layer].double().median())
    return f"not risen by epoch {budget}" if t >= budget else f"rises at epoch {t:g}"


# --- Fig. 9: depth ------------------------------------------------------------------------------

def _depths(run: Run) -> dict[int, dict]:
    """Per depth :math:`d` (``d - 1`` hidden layers), its seeds trained on one batch axis
    until each has grokked or the budget is spent: one point each of one sweep (memoised,
    so the control reuses them)."""
    p = run.params["depth"]
    G = build_group(p["group"])
    setting = {"table": [list(row) for row in G.table],
               "projectors": encode(float_projectors(G)), "seeds": list(p["seeds"]),
               **{k: p[k] for k in ("K", "p", "lr", "eta", "top_init", "activation", "residual",
                                    "optimizer", "loss", "budget", "chunk", "eval_every",
                                    "thresholds", "dtype")},
               "device": str(run.device)}
    results = run.sweep("depth", depth_grokking_point,
                        [{**setting, "layers": d - 1} for d in p["depths"]])
    out = {}
    for d, r in zip(p["depths"], results):
        if not r["finite"]:
            raise Diverged(f"deep network training diverged (depth {d})")
        out[d] = r
    return out


def _depth(run: Run) -> Iterator[Evidence]:
    p = run.params["depth"]
    M = build_group(p["group"]).order
    results = _depths(run)
    depths = list(p["depths"])
    for d, r in results.items():
        record_trained(run, M, decode(r["final_train"]), decode(r["final_loss"]),
                       where=f"depth {d}, the end of its run", name=f"depth {d}: {TRAINED}")
    table: dict[str, dict] = {}
    later = float(run.stated["deeper_later"]())
    earliest = earliest_crossing(list(results.values()))
    times_ran = run.ran(f"depth: {BELOW_AT_START}", earliest > 0,
                        f"earliest crossing at epoch {earliest:g} (0: the test accuracy was "
                        f"there before any step)")
    for i, a in enumerate(p["thresholds"] if times_ran else ()):
        times = {d: (decode(r["times"][i]["epochs"]), decode(r["times"][i]["censored"]))
                 for d, r in results.items()}
        for d in depths:
            t, c = times[d]
            table[f"depth {d}, t_{a:g}"] = {"median epochs": float(t.median()),
                                           "reached": f"{int((~c).sum())} of {c.numel()}",
                                           "epochs": t.tolist()}
        for lo_d, hi_d in zip(depths, depths[1:]):
            (t_hi, c_hi), (t_lo, c_lo) = times[hi_d], times[lo_d]
            pr = paired_log_ratio(t_hi, c_hi, t_lo, c_lo, LEVEL)
            R, interval = pr.ratio
            yield direction_evidence(
                f"depth {lo_d} -> {hi_d}, t_{a:g}: the deeper network groks later (sign of "
                f"mean log t_{hi_d} / t_{lo_d} over seeds)", pr, later,
                {"group": p["group"], "K": p["K"], "residual": p["residual"], "threshold": a,
                 "ratio": R, "interval": list(interval), "seeds": len(p["seeds"]),
                 "budget": p["budget"]})
    stated_fourier = float(run.stated["lowest_fourier"]())
    for d, r in results.items():
        start, end = decode(r["purity_start"])[:, 0], decode(r["purity_end"])[:, 0]
        table[f"depth {d}, lowest layer purity"] = {
            "random init": start.tolist(), f"epoch {r['purity_epoch']}": end.tolist(),
            "every layer at the end [seed][layer]": decode(r["purity_end"]).tolist()}
        quantity = (f"depth {d}: the lowest layer remains a (distorted) Fourier basis: mean "
                    f"node purity at epoch {r['purity_epoch']} >= {FOURIER_LEVEL:g} (+1), per seed")
        params = {"random init": start.tolist(), "at the end": end.tolist(),
                  "group": p["group"], "K": p["K"]}
        # the control: a random layer must fall below the level, or the level says nothing
        if bool((start >= FOURIER_LEVEL).any()):
            yield undecided(Route.NUMERIC, quantity,
                            f"the random initial layer already has purity >= "
                            f"{FOURIER_LEVEL:g} "
                            f"(max {float(start.max()):.3f}): the level does not separate "
                            f"learned Fourier features from random ones",
                            tolerance=Tolerance(0.0, "a level"), parameters=params)
            continue
        measured = torch.where(end >= FOURIER_LEVEL, 1.0, -1.0)
        yield compare(Route.NUMERIC, quantity, stated=torch.full_like(measured, stated_fourier),
                      measured=measured, metric="absolute",
                      tolerance=Tolerance(0.0, "a level per seed: no slack"),
                      parameters=params)
    run.figure("Fig. 9: grokking time and lowest-layer purity by depth", table)
    if times_ran and not run.is_control:
        a = p["thresholds"][0]
        run.plot(Plot(f"grokking time t_{a:g} against depth (each seed; the code's residual "
                      f"hidden layers, {p['group']}, K = {p['K']})", x_label="depth (layers)",
                      y_label="epochs", log_y=True,
                      series={f"seed {s}": (depths, [table[f"depth {d}, t_{a:g}"]["epochs"][j]
                                                     for d in depths])
                              for j, s in enumerate(p["seeds"])}))


def check(run: Run) -> Iterator[Evidence]:
    yield from _chain_cases(run)
    yield from _approximation(run)
    yield from _identity(run)
    yield from _residual(run)
    yield from _bottom_up(run)
    yield from _depth(run)


CLAIM = register(Claim(
    id="li2.sec6-deep",
    paper=PAPER,
    kind="remark",
    title="§6 deeper networks: G_(L-1) ~ D_L Yt Yt^T D_L F_(L-1), bottom-up learning, "
          "residual G_res,1 = sum_l G_l; Fig. 9: deeper nets grok later, lowest layer Fourier",
    source="§6, Eq. 11; Fig. 9 (SOURCES §3 li2.sec6-deep, §5, §6.2)",
    statement=r"G_{L-1}=D_LG_LW_L^\top=(D_L\tilde Y\tilde Y^\top D_L)F_{L-1}(W_LW_L^\top)"
              r"\approx D_L\tilde Y\tilde Y^\top D_LF_{L-1}\ (W_LW_L^\top\approx I);\ "
              r"\text{bottom-up learning};\ G_{{\rm res},1}=\sum_lG_l,\ G_L\text{ dominates};\ "
              r"\text{Fig. 9: deeper grok later, the lowest layer stays a distorted Fourier "
              r"basis}",
    reading=r"Gate per hidden unit: D_j=diag(\sigma'(Z_{L,:j})); the product read per unit, "
            r"C\sum_jD_j\tilde Y\tilde Y^\top D_jF_{L-1}w_jw_j^\top (C from "
            r"\sigma=C\sigma'x: 1 for ReLU, 1/2 for x^2), with G_L=\tilde Y\tilde Y^\top F_L "
            r"(the Stage-II form, the gradient of \tfrac12\|\tilde Y^\top F_L\|^2); the "
            r"approximation replaces w_jw_j^\top by its mean (1/K)I (exact in expectation for "
            r"entries of variance 1/K, \sqrt3 times nn.Linear's scale; the cosine does not "
            r"depend on the scale in a plain network), keeping the gate per unit; a shared "
            r"mean gate is reported too. 'Improves with width': the order of 1-\cos in 1/K "
            r"is at least 1 (t-interval over seeds widened by the data's "
            r"bend allowance, resolved to 10\%), as W_LW_L^\top-I=O(K^{-1/2}) "
            r"implies. Residual: the code's other_layers, "
            r"F_l=\sigma(F_{l-1}+F_{l-1}W_l); G_l carried to layer 1 through the skips "
            r"(gated by \prod D) plus each layer's branch. Bottom-up: purity of each layer's "
            r"pre-activations over the components of H\times H built from one irrep; a layer "
            r"'learns' when its purity has gone a quarter of the way from its initial value "
            r"to 1. Fig. 9 (depths 2, 3, 4; the code's residual hidden layers, other_layers = "
            r"d - 2, ReLU; settings not stated): 'deeper groks later' as the sign of the mean "
            r"over paired seeds of \log(t_{d+1}/t_d) (t = first logged epoch with test "
            r"accuracy \ge 0.5) by its 95% Student-t interval, for each step of depth; 'the "
            r"lowest layer remains a distorted Fourier basis' as its mean node purity \ge 1/2 "
            r"(one frequency holds the majority of a node's varying power) when the run ends "
            r"(all seeds grokked, or the budget), decided only where the random initial "
            r"layer lies below 1/2.",
    parameters={
        "quick": {
            # three widths: the orders measured on 32..256 (deficit -0.12 to 0.00, W W^T - I
            # 0.00, intervals +-0.06; ||W W^T - I||_F / ||I||_F -> 1 is derived) are far
            # from the stated 1 and 0.5, so 32..128 decides the same
            "init": {"group": "Z13", "p": 0.9, "layers": 3, "widths": (32, 64, 128),
                     "chain_widths": (16, 32), "seeds": 4, "activations": ("relu", "x2"),
                     "scales": (0.3, 3.0), "residual_scales": (1.0, 0.3, 0.1),
                     "dominance_scales": (0.3, 1.0, 2.0, 4.0)},
            "train": {"group": "Z11", "K": 64, "layers": 3, "p": 0.8, "lr": 1e-2,
                      # 200 epochs: the orders decided at 400 stay decided (residual: every
                      # rise by epoch 145; plain: layer 1 by 35, the upper layers censored
                      # at 400 but one rise at 315, so "then the next" is undecided either way)
                      "eta": 5e-3, "init_scale": 1.0, "top_init": 1.0, "epochs": 200,
                      "eval_every": 5, "purity_every": 5, "seeds": (0, 1, 2),
                      "fraction": 0.25, "architectures": ("plain", "residual"),
                      "activation": "relu", "optimizer": "adam"},
            # Fig. 9 (settings not stated): the code's residual hidden layers
            # (other_layers = d - 2), ReLU; Z_13 (a random first-layer node has purity ~0.33
            # there: 6 frequencies) at the width and steps of the training above, where
            # depths 2, 3, 4 grok at about 75, 130 and 230 epochs
            "depth": {"group": "Z13", "depths": (2, 3, 4), "K": 64, "p": 0.8, "lr": 1e-2,
                      "eta": 5e-3, "top_init": 1.0, "activation": "relu", "residual": True,
                      "optimizer": "adam", "loss": "mse_class", "seeds": tuple(range(6)),
                      "budget": 500, "chunk": 25, "eval_every": 5, "thresholds": (0.5,),
                      "dtype": "float32"}},
        "full": {
            "init": {"group": "Z23", "p": 0.9, "layers": 3,
                     "widths": (64, 128, 256, 512, 1024, 2048), "chain_widths": (32, 128),
                     "seeds": 8, "activations": ("relu", "x2"), "scales": (0.1, 0.3, 3.0, 10.0),
                     "residual_scales": (1.0, 0.3, 0.1, 0.03),
                     "dominance_scales": (0.3, 1.0, 2.0, 4.0)},
            "train": {"group": "Z23", "K": 512, "layers": 3, "p": 0.8, "lr": 5e-3,
                      "eta": 1e-3, "init_scale": 1.0, "top_init": 1.0, "epochs": 3000,
                      "eval_every": 10, "purity_every": 10, "seeds": tuple(range(5)),
                      "fraction": 0.25, "architectures": ("plain", "residual"),
                      "activation": "relu", "optimizer": "adam"},
            "depth": {"group": "Z23", "depths": (2, 3, 4), "K": 512, "p": 0.8, "lr": 5e-3,
                      "eta": 1e-3, "top_init": 1.0, "activation": "relu", "residual": True,
                      "optimizer": "adam", "loss": "mse_class", "seeds": tuple(range(5)),
                      "budget": 3000, "chunk": 50, "eval_every": 5, "thresholds": (0.5, 0.99),
                      "dtype": "float32"}},
    },
    stated={"chain": stated_chain, "width_order": stated_width_order,
            "identity_order": stated_identity_order, "residual_sum": stated_residual_sum,
            "bottom_up": stated_bottom_up, "deeper_later": stated_deeper_later,
            "lowest_fourier": stated_lowest_fourier},
    equivalent_mutants={f"deeper_later:{op}": "a direction: only its sign enters the decision "
                                              "(direction_evidence)" for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("the gate on one side only: D_L Yt Yt^T F_(L-1) W_L W_L^T",
                            {"chain": one_sided_chain}),
    assumptions=(
        Assumption("homogeneous activations", "sigma(x) = C sigma'(x) x (ReLU, x^2)",
                   lambda p: set(p["init"]["activations"]) <= set(HOMOGENEITY)),
        Assumption("three or more layers", "G_(L-1) of a hidden layer fed by random features",
                   lambda p: p["init"]["layers"] >= 3 and p["train"]["layers"] >= 3),
    ),
    # depth L from 2 (outside: G_(L-1) is then the first layer's, fed by the input), the
    # homogeneous activations, and the training's group, width, Adam step (a step that keeps
    # the network at chance is recorded by the "trained beyond chance" criterion) and weight
    # decay; non-homogeneous sigma has no constant C of sigma = C sigma' x
    space={"init.layers": IntRange(2, 4), "init.activations": Choice((("relu",), ("x2",),
                                                                     ("relu", "x2"))),
           "train.layers": IntRange(2, 4), "train.group": Choice(("Z7", "Z11", "Z13")),
           "train.K": IntRange(16, 128), "train.lr": LogUniform(1e-3, 1.0),
           "train.eta": LogUniform(1e-4, 5e-2), "depth.group": Choice(("Z13", "Z11", "Z17")),
           "depth.K": IntRange(32, 128), "seed": SEED},
    tags=("training",),
))
