r"""li2.eq6: decoupled Stage-II dynamics (Eq. 6): under :math:`G_F\propto\tilde Y\tilde Y^\top
\tilde F`, node :math:`j` moves by :math:`\dot{\mathbf w}_j=X^\top D_j\mathbf g_j` with
:math:`\mathbf g_j\propto\tilde Y\tilde Y^\top\sigma(X\mathbf w_j)`, so it depends only on itself.

Routes. Exact part: the paper's node update :math:`X^\top D_j\mathbf g_j` against autograd's
:math:`-\partial J/\partial\mathbf w_j` (chain rule), and, with :math:`G_F` replaced by the
stated direction, node :math:`j`'s update in the whole network against the same update with
every other node removed (decoupling); the stated direction against :math:`\tilde Y\tilde
Y^\top\tilde F`, per node up to a positive factor. Empirical part: along Adam training runs of
the paper's loss on modular addition, the angle :math:`\theta_j` between node :math:`j`'s actual
gradient step :math:`X^\top D_j\mathbf g_j` and the decoupled step :math:`X^\top D_j\tilde
Y\tilde Y^\top\tilde{\mathbf f}_j` (:math:`\propto\nabla\mathcal E(\mathbf w_j)`); the coupling
term is the part of the step orthogonal to it, of relative size :math:`\kappa_j=\tan\theta_j`;
the evidence compares :math:`\theta_j` (finite also when a node descends its energy) with
:math:`45^\circ`, where the two parts are equal. The runs go through the sweep API, one point
per seed (:func:`numerics.li2.stage2_angles.stage2_angles_point`: only per-epoch summaries
leave it, so a Dask worker can run it and the store keep it); the stated direction enters the
angle through the exact identity with :math:`\tilde Y\tilde Y^\top\tilde F`, so the control
and the mutants reuse the stored runs. On the same runs, the third party's independence proxy
(median :math:`|\cos(\mathbf g_j,\mathbf g_l)|`, "about 0.08 throughout", SOURCES §7.3) against
the points' ``pair_cos``, per condition.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from numerics.activations import activation
from numerics.li2.group_task import dense_inputs, group_task
from numerics.li2.stage2_angles import decoupled_direction, stage2_angles_point
from numerics.li2.sweep_points import decode
from numerics.li2.train_splits import train_count
from numerics.li2.two_layer import backprop_gradient as autograd_G_F
from numerics.li2.two_layer import loss as paper_loss
from numerics.random import make_generator, randn
from verify import (
    SEED,
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
    compare,
    compare_cases,
    draw,
    register,
    roundoff,
    undecided,
)
from verify.arrays import gate, transpose
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._trained import record_trained


def stated_node_update(X, d, g):
    r"""Eq. 6: :math:`\dot{\mathbf w}_j=X^\top D_j\mathbf g_j` with :math:`D_j=\mathrm{diag}(d)`."""
    return transpose(X) @ gate(d, g)


def stated_direction(Yt, Ft):
    r"""Stage II: :math:`G_F\propto\tilde Y\tilde Y^\top\tilde F`, column :math:`j` being node
    :math:`j`'s own :math:`\tilde Y\tilde Y^\top\tilde{\mathbf f}_j` (as
    :math:`\tilde Y(\tilde Y^\top\tilde F)`: :math:`O(nMK)`, not the :math:`O(n^2K)` of the
    :math:`n\times n` product)."""
    return Yt @ (transpose(Yt) @ Ft)


def stated_independence_proxy(M):
    r"""The third party (arXiv 2605.08119, SOURCES §7.3): the median :math:`|\cos(\mathbf g_j,
    \mathbf g_{j'})|` over node pairs "is about 0.08 throughout", at :math:`M=71`. Carried to
    another :math:`M` as the level it equals there, that of independent directions in the
    :math:`(M-1)`-dimensional label space that holds the columns of :math:`G_F` (median
    :math:`|\cos|\approx0.6745/\sqrt{M-1}`, 0.0806 at :math:`M=71`): :math:`0.08\sqrt{70/(M-1)}`,
    exactly 0.08 at their :math:`M`."""
    return 0.08 * label_space_scale(M)


def label_space_scale(M):
    r""":math:`\sqrt{70/(M-1)}`: how the median :math:`|\cos|` of independent directions in the
    :math:`(M-1)`-dimensional label space scales from the third party's :math:`M=71`."""
    return math.sqrt(70 / (M - 1))


def coupled_direction(Yt, Ft):
    r"""Planted error: node :math:`j` driven by its neighbour's projection
    :math:`\tilde Y\tilde Y^\top\tilde{\mathbf f}_{j-1}` (a coupled dynamics)."""
    return torch.roll(Yt @ (transpose(Yt) @ Ft), 1, dims=-1)


ACTIVATIONS = ("x2", "relu", "silu")
SPACE = {"group": Choice(("Z5", "Z6", "D3", "Z7")), "K": IntRange(1, 8),
         "activation": Choice(ACTIVATIONS), "seed": SEED}


# --- exact part ---------------------------------------------------------------------------------

def _problem(group: str, K: int, seed: int, run: Run):
    """A subsampled group task (dense X, Y), random W, V, float in the run's dtype."""
    g = make_generator(seed)
    task = group_task(build_group(group).table, ratio=0.6, generator=g)
    X, Y = dense_inputs(task, run.dtype)
    X, Y = X.to(run.device), Y.to(run.device)
    W = randn(X.shape[1], K, generator=g, device=run.device, dtype=run.dtype) * 0.5
    V = randn(K, Y.shape[1], generator=g, device=run.device, dtype=run.dtype) * 0.5
    return X, Y, W, V


def chain_rule_case(run: Run, group: str, K: int, name: str, seed: int):
    r"""(stated, measured): the paper's :math:`X^\top D_j\mathbf g_j` per node, with
    :math:`G_F=-\partial J/\partial F` by autograd, and autograd's :math:`-\partial J/\partial W`
    (:math:`J` of Eq. 1 through :math:`F=\sigma(XW)`)."""
    act = activation(name)
    X, Y, W, V = _problem(group, K, seed, run)
    W = W.requires_grad_(True)
    (gW,) = torch.autograd.grad(paper_loss(act(X @ W), V, Y), W)
    G = autograd_G_F(act(X @ W.detach()), V, Y)
    d = act.derivative(X @ W.detach())
    update = run.stated["node_update"]
    stated = torch.cat([update(X, d[:, j:j + 1], G[:, j:j + 1]) for j in range(K)], 1)
    return stated, -gW


def decoupling_case(run: Run, group: str, K: int, name: str, seed: int):
    r"""(whole network, node alone): node :math:`j`'s step under the stated :math:`G_F`
    direction, computed in the :math:`K`-node network and with only :math:`\mathbf w_j`."""
    act = activation(name)
    X, Y, W, _ = _problem(group, K, seed, run)
    Yt = Y - Y.mean(0, keepdim=True)

    def steps(Wc: torch.Tensor) -> torch.Tensor:
        F = act(X @ Wc)
        H = run.stated["direction"](Yt, F - F.mean(0, keepdim=True))
        return run.stated["node_update"](X, act.derivative(X @ Wc), H)

    whole = steps(W)
    alone = torch.cat([steps(W[:, j:j + 1]) for j in range(K)], 1)
    return whole, alone


def direction_case(run: Run, group: str, K: int, name: str, seed: int):
    r"""(stated, derived, dead): the stated Stage-II direction and :math:`\tilde Y\tilde Y^\top
    \tilde F` (:func:`numerics.li2.stage2_angles.decoupled_direction`, the direction the training
    route measures its angles against), each column scaled to unit length, over the live nodes:
    the angle does not see a positive factor per node. A node whose :math:`\tilde{\mathbf f}_j`
    is 0 (a ReLU node dead on every sample) has no direction at all, in either route: it is
    left out, and ``dead`` counts it (tests/claims/li2/test_eq6.py pins such a case).
    """
    act = activation(name)
    X, Y, W, _ = _problem(group, K, seed, run)
    F = act(X @ W)
    Yt, Ft = Y - Y.mean(0, keepdim=True), F - F.mean(0, keepdim=True)
    live = torch.linalg.vector_norm(Ft, dim=0) > 0

    def unit(A: torch.Tensor) -> torch.Tensor:
        A = A[:, live]
        return A / torch.linalg.vector_norm(A, dim=0, keepdim=True)

    return (unit(run.stated["direction"](Yt, Ft)), unit(decoupled_direction(Yt, Ft)),
            int((~live).sum()))


def _exact(run: Run) -> Iterator[Evidence]:
    rng = run.rng("exact")
    chain, dec, direction, dead = [], [], [], 0
    for _ in range(run.params["exact_cases"]):
        c = draw(SPACE, rng)
        args = (c["group"], c["K"], c["activation"], c["seed"])
        chain.append((c, *chain_rule_case(run, *args)))
        dec.append((c, *decoupling_case(run, *args)))
        stated, derived, dead_here = direction_case(run, *args)
        direction.append((c, stated, derived))
        dead += dead_here
    # Sums of at most n (<= 49) products in a chain of three products, in either route.
    tol = roundoff(run.dtype, 8 * 49, "sums of n <= 49 terms in three chained products")
    yield compare_cases(Route.PROPERTY, "Eq. 6 node update X^T D_j g_j vs autograd -dJ/dw_j",
                        chain, tolerance=tol, names=("stated", "measured"),
                        parameters={"space": str(SPACE)})
    yield compare_cases(Route.PROPERTY, "node j's step under G_F = direction(Yt, Ft): whole "
                        "network vs node j alone", dec, tolerance=tol,
                        names=("stated", "derived"), parameters={"space": str(SPACE)})
    # unit columns of two n x M x K products: as the chain above
    yield compare_cases(Route.PROPERTY, "the stated Stage-II direction vs Yt Yt^T Ft (the "
                        "direction the training route measures angles against), per live node "
                        "up to a positive factor", direction, tolerance=tol,
                        names=("stated", "derived"),
                        parameters={"space": str(SPACE), "dead nodes left out": dead})


# --- training runs ------------------------------------------------------------------------------

SIMULATION = ("M", "K", "p", "lr", "etas", "seeds", "epochs", "every")


@dataclass(frozen=True)
class Angles:
    """The training route's summaries, seeds x weight decays on the configuration axis ``B``:
    each array ``(T, B)`` over the logged ``epochs``."""

    epochs: torch.Tensor
    eta: list[float]
    seed: list[int]
    series: dict[str, torch.Tensor]


def _angles(run: Run) -> Angles:
    """One sweep point per seed, its weight decays on the batch axis (the stated forms do not
    enter: the control's run and the mutants reuse the stored points)."""
    p = run.params
    table = [list(row) for row in build_group(f"Z{p['M']}").table]
    points = [{"table": table, "seed": seed, "etas": list(p["etas"]), "p": p["p"],
               "lr": p["lr"], "K": p["K"], "epochs": p["epochs"], "every": p["every"],
               "device": str(run.device), "dtype": str(run.dtype).removeprefix("torch.")}
              for seed in p["seeds"]]
    results = run.sweep("stage-II angles", stage2_angles_point, points)
    names = [k for k in results[0] if k != "epochs"]
    series = {k: torch.cat([decode(r[k]) for r in results], 1) for k in names}
    return Angles(torch.tensor(results[0]["epochs"]), [e for _ in p["seeds"] for e in p["etas"]],
                  [s for s in p["seeds"] for _ in p["etas"]], series)


def _empirical(run: Run) -> Iterator[Evidence]:
    p = run.params
    a = _angles(run)
    train_acc, test_acc = a.series["train_acc"], a.series["test_acc"]
    # the Stage-II angles are read off nets that fitted their training set; the window below
    # already needs train accuracy 0.99, and this names a run that fitted nothing
    record_trained(run, p["M"], train_acc[-1], None,
                   where=f"every configuration at epoch {int(a.epochs[-1])}",
                   test_accuracy=test_acc[-1])
    median = a.series["median_theta"]                                            # (T, B)
    decay = torch.tensor([e > 0 for e in a.eta])
    window = (train_acc >= 0.99) & (test_acc < 0.5)                              # (T, B)
    chosen = window & decay[None, :]
    epochs = a.epochs
    run.assume("a Stage-II window in every decay run", bool(chosen.any(0)[decay].all()),
               "train accuracy >= 0.99 (the lazy stage has fit the labels) and test accuracy "
               "< 0.5 (features have not yet emerged) at some logged epoch",
               detail=str({f"seed {a.seed[b]}": epochs[chosen[:, b]].tolist()
                           for b in range(len(decay)) if decay[b]}))
    params = {k: p[k] for k in SIMULATION}
    tol = Tolerance(45.0, "Eq. 6 drops the coupling term; read as holding while the dropped "
                          "part of each node's step is smaller than the kept part: "
                          "tan(theta_j) < 1, i.e. theta_j < 45 degrees")
    quantity = ("angle (degrees) between node j's gradient step and the decoupled step "
                "X^T D_j Yt Yt^T ft_j, median over nodes, Stage-II epochs of the decay runs")
    if not chosen.any():
        yield undecided(Route.NUMERIC, quantity, "no logged epoch of a decay run has train "
                        "acc >= 0.99 and test acc < 0.5", tolerance=tol, parameters=params)
    else:
        measured = median[chosen]
        yield compare(Route.NUMERIC, quantity, stated=torch.zeros_like(measured),
                      measured=measured, metric="absolute", tolerance=tol,
                      parameters={**params, "epochs": epochs[chosen.any(1)].tolist(),
                                  "tan(theta) of the median": torch.tan(torch.deg2rad(
                                      measured)).tolist()})
    yield from _independence(run, a, decay)
    _figures(run, a, decay)


#: Half a unit in the last digit of their "about 0.08" (one significant digit: every value that
#: rounds to 0.08 lies within 0.005 of it), scaled with the stated level at another M.
PROXY_HALF_UNIT = 0.005


def _independence(run: Run, a: Angles, decay: torch.Tensor) -> Iterator[Evidence]:
    r"""The third party's independence proxy, median :math:`|\cos(\mathbf g_j,\mathbf g_l)|`
    over node pairs (``pair_cos``: 256 strided nodes, as exchangeable as all 2048), against
    their "about 0.08 throughout": at every logged epoch, the median over seeds, one item per
    condition run (decay; no decay where the fidelity trains it)."""
    p = run.params
    M = p["M"]
    stated = float(run.stated["independence_proxy"](M))
    rounding = PROXY_HALF_UNIT * label_space_scale(M)   # not from the stated form
    for tag, mask in (("decay", decay), ("no decay", ~decay)):
        if not mask.any():      # quick and medium fidelity train no eta = 0 runs
            continue
        values = a.series["pair_cos"][:, mask]                                   # (T, seeds)
        q = torch.quantile(values, torch.tensor([0.25, 0.5, 0.75], dtype=values.dtype), dim=1)
        iqr = float((q[2] - q[0]).max())
        measured = q[1]
        # Their number is one seed's (seed 0) rounded to one digit; ours is the median of our
        # seeds. The tolerance is their rounding plus our seeds' interquartile range (the
        # largest over the epochs: how far another draw of seeds moves the median, and how far
        # their single seed may sit from it), nothing else.
        tol = Tolerance(rounding + iqr, f"their rounding {rounding:.4g} (half a unit of the one "
                        f"digit of 'about 0.08'{'' if M == 71 else ', scaled to M = %d' % M}) + "
                        f"our {int(mask.sum())}-seed IQR {iqr:.3g} (largest over the epochs)")
        yield compare(Route.NUMERIC, f"the third party's independence proxy, median over node "
                      f"pairs of |cos(g_j, g_l)|, median over seeds at every logged epoch, "
                      f"{tag}: 'about 0.08 throughout'", stated=torch.full_like(measured, stated),
                      measured=measured, metric="absolute", tolerance=tol,
                      parameters={k: p[k] for k in SIMULATION} | {
                          "epochs": a.epochs.tolist(),
                          "range over epochs": [float(measured.min()), float(measured.max())]})


def _figures(run: Run, a: Angles, decay: torch.Tensor) -> None:
    s = a.series
    rows = {}
    for tag, mask in (("decay", decay), ("none", ~decay)):
        if not mask.any():      # quick fidelity trains no eta = 0 runs
            continue

        def over_seeds(x: torch.Tensor) -> list[float]:
            return x[:, mask].median(1).values.tolist()

        rows[f"median theta_j (degrees), {tag}"] = over_seeds(s["median_theta"])
        rows[f"fraction of nodes with tan(theta_j) < 1, {tag}"] = (
            s["fraction_tan_below_1"][:, mask].mean(1).tolist())
        rows[f"sample space: median cos(g_j, Yt Yt^T ft_j), {tag}"] = over_seeds(
            s["median_node_cos"])
        rows[f"||G_F - c Yt Yt^T Ft|| / ||G_F|| (best c), {tag}"] = over_seeds(
            (1 - s["global_cos"].square()).clamp(min=0).sqrt())
        rows[f"spread of per-node constants a_j (sd/mean), {tag}"] = over_seeds(s["scale_cv"])
        rows[f"median |cos(g_j, g_l)| (third party's proxy), {tag}"] = over_seeds(
            s["pair_cos"])
        rows[f"train acc, {tag}"] = over_seeds(s["train_acc"])
        rows[f"test acc, {tag}"] = over_seeds(s["test_acc"])
    epochs = a.epochs
    run.figure("along training (medians over seeds), at the logged epochs",
               {"epoch": epochs.tolist(), **rows})
    x = epochs.tolist()
    tags = [t for t in ("decay", "none") if f"train acc, {t}" in rows]
    run.plot(Plot("median angle theta_j between node j's step and the decoupled step, along "
                  "training (median over seeds)", x_label="epoch", y_label="degrees",
                  series={f"eta {'> 0' if t == 'decay' else '= 0'}":
                          (x, rows[f"median theta_j (degrees), {t}"]) for t in tags},
                  references=(Reference("45 degrees: coupling as large as the kept term",
                                        y=45.0),)))
    run.plot(Plot("training (dashed) and test (solid) accuracy along training (median over "
                  "seeds); Stage II: train >= 0.99, test < 0.5", x_label="epoch",
                  y_label="accuracy",
                  series={f"{kind}, eta {'> 0' if t == 'decay' else '= 0'}":
                          (x, rows[f"{kind} acc, {t}"]) for t in tags
                          for kind in ("train", "test")},
                  styles={f"train, eta {'> 0' if t == 'decay' else '= 0'}":
                          f"C{i}--" for i, t in enumerate(tags)}
                  | {f"test, eta {'> 0' if t == 'decay' else '= 0'}": f"C{i}-"
                     for i, t in enumerate(tags)},
                  references=(Reference("train 0.99", y=0.99), Reference("test 0.5", y=0.5))))
    M = run.params["M"]
    run.figure("independence proxy of random directions: median |cos| of two independent "
               "uniform vectors in the (M-1)-dim label space spanned by the columns of G_F",
               0.6745 / math.sqrt(M - 1))


def check(run: Run) -> Iterator[Evidence]:
    yield from _exact(run)
    yield from _empirical(run)


def _decay_matched(p) -> bool:
    n = train_count(p["M"], p["p"])
    return any(abs(n * e / 2 / 0.2016 - 1) < 0.1 for e in p["etas"])


CLAIM = register(Claim(
    id="li2.eq6",
    paper=PAPER,
    kind="equation",
    title="Decoupled Stage-II node dynamics: each node ascends its own energy",
    source="Eq. 6, §3 (SOURCES li2.eq6)",
    statement=r"G_F\propto\tilde Y\tilde Y^\top\tilde F\ \Rightarrow\ \dot{\mathbf w}_j="
              r"X^\top D_j\mathbf g_j,\quad \mathbf g_j\propto\tilde Y\tilde Y^\top"
              r"\sigma(X\mathbf w_j)",
    reading=r"Exact part: \dot{\mathbf w}_j=-\partial J/\partial\mathbf w_j with J of Eq. 1 "
            r"(sample centring, no decay in the F-derivative), D_j=\mathrm{diag}(\sigma'(X"
            r"\mathbf w_j)); with G_F replaced by \tilde Y\tilde Y^\top\tilde F node j's step "
            r"equals the step it takes alone. Empirical part: Adam (lr 10^{-3}, coupled decay "
            r"\eta, the paper's loss J scaled by 2/n) on Z_M addition; at logged epochs the "
            r"angle \theta_j between node j's gradient step X^\top D_j\mathbf g_j and "
            r"X^\top D_j\tilde Y\tilde Y^\top\tilde{\mathbf f}_j (the step Eq. 6 keeps, "
            r"\propto\nabla\mathcal E(\mathbf w_j)); the coupling term is the rest, of "
            r"relative size \tan\theta_j. Stage II: logged epochs with train accuracy "
            r"\ge 0.99 and test accuracy < 0.5 in the runs with decay (\eta=0 runs are "
            r"reported, not decided: the paper derives Stage II with \eta>0). Eq. 6 is read as "
            r"holding there when the median over nodes of \theta_j is below 45^\circ "
            r"(\tan\theta_j<1: the coupling term smaller than the kept term) at every such "
            r"epoch. Quick fidelity: M=29, K=512, p=0.6, decay runs only (the "
            r"\eta=0 runs decide nothing); full: the Fig. 3 setting with \eta=0 runs. The third "
            r"party's independence proxy (SOURCES §7.3: median over node pairs of "
            r"|\cos(\mathbf g_j,\mathbf g_l)|, 'about 0.08 throughout', their seed 0 at M=71): "
            r"on these runs (the paper's loss, 250 epochs; theirs the class-centred MSE, 400 "
            r"epochs), the median over seeds at every logged epoch, per condition run, within "
            r"half a unit of their one digit (0.005) plus our seeds' IQR; at another M their "
            r"0.08 is read as the level it equals at M=71, that of independent directions in the "
            r"(M-1)-dim label space, 0.08\sqrt{70/(M-1)}, its rounding scaled alike.",
    parameters={
        "quick": {"exact_cases": 12, "M": 29, "K": 512, "p": 0.6, "lr": 1e-3,
                  "etas": (8e-4,), "seeds": (0, 1), "epochs": 160, "every": 10},
        # the paper's size with one seed and one decay: its verdict (45.9 degrees, fail) shows
        # in 2 CPU-min
        "medium": {"exact_cases": 12, "M": 71, "K": 2048, "p": 0.4, "lr": 1e-3,
                   "etas": (2e-4,), "seeds": (0,), "epochs": 250, "every": 10},
        "full": {"exact_cases": 60, "M": 71, "K": 2048, "p": 0.4, "lr": 1e-3,
                 "etas": (2e-4, 0.0), "seeds": (0, 1, 2, 3, 4), "epochs": 250, "every": 10},
    },
    stated={"node_update": stated_node_update, "direction": stated_direction,
            "independence_proxy": stated_independence_proxy},
    equivalent_mutants={
        "independence_proxy:nudge": "x1.001 moves 'about 0.08' by 8e-5, inside the half unit "
                                    "(0.005) of its one digit that the tolerance allows",
        "direction:scale": "the Stage-II direction is compared by the angle between it and the "
                           "gradient step, which a positive factor does not change",
        "direction:nudge": "as direction:scale"},
    check=check,
    control=NegativeControl("coupled: node j driven by node j-1's Yt Yt^T ft_(j-1)",
                            {"direction": coupled_direction}),
    assumptions=(
        Assumption("weight decay in the decay runs", "eta > 0 for the runs that are decided; "
                   "n eta / 2 within 10% of the paper's 0.2016", _decay_matched),
    ),
    # The training run's width, step size, decay and seeds (a decay other than 8e-4, or none,
    # leaves the assumption); the seed draws the exact part's cases.
    space={"K": IntRange(32, 1024), "lr": LogUniform(2e-4, 5e-3),
           "etas": Choice(((8e-4,), (4e-4,), (1.6e-3,), (0.0,))),
           "seeds": Choice(((0, 1), (2, 3), (4, 5))), "seed": SEED},
))
