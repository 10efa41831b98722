"""Point functions of Li2's training claims: one unit of training that a worker runs alone,
JSON parameters in, JSON data out, so that ``verify.sweep.run_sweep`` can run it in this
process or on a Dask worker (which imports it by name) and store its result.

A point holds everything the training depends on: the group's Cayley table (and, for the
deep network, its isotypic projectors) as data, the seeds, the hyperparameters, the device
and the dtype as strings. Tensors travel as :func:`encode` records and come back through
:func:`decode` bit for bit (a float64 or float32 value is exactly a JSON float; the store
writes a non-finite one as the string ``'nan'``, ``'inf'`` or ``'-inf'``).

* :func:`checkpoint_weights_point` (``li2.thm6-training``): one seed of the two-layer network,
  its first-layer weights at each checkpoint; :func:`centred_features_at` rebuilds the
  sample-centred features from them;
* :func:`grokking_point` (``li2.sec7-predictions``): one configuration, its seeds on the batch
  axis, trained until every run has grokked; its grokking times;
* :func:`deep_rises_point` (``li2.sec6-deep``): one architecture of the deep network, its seeds
  on the batch axis; the epochs at which each layer's purity rises;
* :func:`optimiser_width_point` (``li2.fig8``): one optimiser at one width, its seeds x
  learning rates on the batch axis; the test curves and the final training fit;
* :func:`grokking_series_point` (``li2.fig3``): one seed, its weight decays on the batch axis,
  with the gradient, Gram and update diagnostics; the history series the claim summarises;
* :func:`lock_in_point` (``li2.x.lock-in``): one activation, its runs (seeds x weight decays x
  training fractions) on the batch axis, trained one step at a time; the third party's
  lock-in levels and level metric along training (:mod:`numerics.li2.lock_in`);
* :func:`gradient_spectrum_point` (``li2.thm7``): one configuration, its seeds on the batch
  axis; per checkpoint the spectrum of G_F over the target's irreps and the nodes per irrep.

A run that diverges is not an error of the point: its result says ``"finite": False`` and the
claim decides what that means (an inconclusive verdict).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from numerics.li2.deep_group_network import DeepConfig, DeepGroupTrainer, rise_epochs
from numerics.li2.gradient_spectrum import (
    Checkpointed,
    alignment,
    checkpoint_epochs,
    counts,
    node_components,
    target_power,
)
from numerics.li2.grokking_time import grokking_times, train_until
from numerics.li2.loss_hessian import TrainingPairs, sharpness
from numerics.li2.memorisation_kinds import classify
from numerics.li2.lock_in import UpdateWindow, gap_ratio, level_metric
from numerics.li2.repulsion_along_training import at_checkpoints, sample_centred_features
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec


def encode(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as JSON data: its dtype, its shape and its values as nested lists."""
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "values": t.detach().cpu().tolist()}


def decode(data: Mapping[str, Any]) -> torch.Tensor:
    """The CPU tensor that :func:`encode` wrote, non-finite values included."""
    dtype = getattr(torch, data["dtype"])
    if dtype.is_floating_point:
        # numpy reads the store's 'nan' / 'inf' / '-inf' strings back as floats
        values = torch.from_numpy(np.array(data["values"], dtype=np.float64)).to(dtype)
    else:
        values = torch.tensor(data["values"], dtype=dtype)
    return values.reshape(data["shape"])


def _dtype(name: str) -> torch.dtype:
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype: {name!r} must be 'float32' or 'float64'")
    return getattr(torch, name)


# --- li2.thm6-training ----------------------------------------------------------------------------

def thm6_trainer(table: Sequence[Sequence[int]], seeds: Sequence[int], point: Mapping[str, Any]
                 ) -> GroupTrainer:
    """The two-layer network of ``li2.thm6-training`` (x^2, or ``point["activation"]`` where
    given; class-centred MSE, Adam) on ``table`` with ``seeds`` on the batch axis, at the
    hyperparameters of ``point`` (``K``, ``p``, ``lr``, ``weight_decay``, ``eval_every``,
    ``device``, ``dtype``)."""
    hyper = Hyper.grid(seed=list(seeds), eta=[point["weight_decay"]], p=[point["p"]],
                       lr=[point["lr"]])
    config = TrainConfig(K=point["K"], activation=point.get("activation", "x2"),
                         loss="mse_class",
                         eval_every=point["eval_every"], diag_every=point["eval_every"],
                         diagnostics=())
    return GroupTrainer(table, hyper, config, device=point["device"],
                        dtype=_dtype(point["dtype"]))


def checkpoint_weights_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One seed (``point["seed"]``) of :func:`thm6_trainer` trained through the increasing
    ``checkpoints`` as one uninterrupted run
    (:func:`numerics.li2.repulsion_along_training.at_checkpoints`): per checkpoint the
    first-layer weights ``W`` (``(2M, K)``; the features are a function of them, and a
    fraction of their size) and the test accuracy; the training accuracy and loss at the last
    checkpoint."""
    trainer = thm6_trainer(point["table"], [point["seed"]], point)
    weights = at_checkpoints(trainer, point["checkpoints"], lambda t: encode(t.W[0]))
    last = max(weights)

    def at(name: str, epoch: int) -> float:
        logged, values = trainer.history.series(name)
        return values[logged.tolist().index(epoch), 0].item()

    return {"W": list(weights.values()),
            "test_acc": [at("test_acc", e) for e in weights],
            "train_acc": at("train_acc", last), "train_loss": at("train_loss", last)}


def centred_features_at(trainer: GroupTrainer, W: torch.Tensor) -> torch.Tensor:
    """:func:`~numerics.li2.repulsion_along_training.sample_centred_features` of ``trainer``
    with its first-layer weights set to ``W`` (``(B, 2M, K)``): the features of a network
    trained elsewhere (the second layer does not enter them)."""
    trainer.W.copy_(W)
    return sample_centred_features(trainer)


# --- li2.sec7-predictions -------------------------------------------------------------------------

def grokking_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration (``optimizer``, ``K``, ``p``, ``eta``, ``lr``, ``top_init``,
    ``out_scale``; ``activation``, ``loss``) with its ``seeds`` on the batch axis, trained in
    chunks of ``chunk`` epochs until every run has reached every threshold or ``budget``
    epochs have run (:func:`numerics.li2.grokking_time.train_until`). Returns whether the final
    losses are finite, the final training accuracy and loss, and per threshold (in the order of
    ``thresholds``) the grokking times, their censoring, the run's length and the logging
    interval. With ``alignment`` (``{"every", "window"}``, default none) also
    ``cos(G_F, Yt Yt^T Ft)`` and ``||G_F||`` (:func:`numerics.li2.gradient_spectrum.alignment`)
    every ``every`` epochs up to ``window`` and at each chunk's end after, as ``"alignment"``
    (``{"epochs", "global_cos", "gf_norm"}``, values ``(C, B)``); the training is the same."""
    hyper = Hyper.batch(seed=list(point["seeds"]),
                        **{k: point[k] for k in ("p", "eta", "lr", "top_init", "out_scale")})
    config = TrainConfig(K=point["K"], activation=point["activation"], loss=point["loss"],
                         optimizer=OptimizerSpec(point["optimizer"]),
                         eval_every=point["eval_every"], diag_every=point["eval_every"],
                         diagnostics=())
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    if point.get("alignment") is None:
        return grokking_record(trainer.train, point)
    a = point["alignment"]
    tracked = Checkpointed(trainer, checkpoint_epochs(a["every"], a["window"], point["chunk"],
                                                      point["budget"]), alignment)
    record = grokking_record(tracked.train, point)
    epochs, cos = tracked.series("global_cos")
    return {**record, "alignment": {"epochs": encode(epochs), "global_cos": encode(cos),
                                    "gf_norm": encode(tracked.series("gf_norm")[1])}}


def grokking_record(train: Any, point: Mapping[str, Any]) -> dict[str, Any]:
    """Train with ``train`` (a trainer's ``train``) until every run passes the point's
    ``thresholds`` or its ``budget`` ends (in ``chunk``-epoch pieces); the record the
    grokking-time claims read: whether the final training losses are finite, the final
    training accuracy and loss, and per threshold the grokking times, their censoring, the
    run's length and the logging interval."""
    history = train_until(train, budget=point["budget"], chunk=point["chunk"],
                          thresholds=point["thresholds"])
    _, loss = history.series("train_loss")
    times = []
    for a in point["thresholds"]:
        g = grokking_times(history, a)
        times.append({"epochs": encode(g.epochs), "censored": encode(g.censored),
                      "budget": g.budget, "resolution": g.resolution})
    return {"finite": bool(torch.isfinite(loss[-1]).all()),
            "final_train": encode(history.series("train_acc")[1][-1]),
            "final_loss": encode(loss[-1]), "times": times}


# --- li2.sec6-deep --------------------------------------------------------------------------------

def deep_rises_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One architecture of the deep network (``residual``; ``K``, ``layers``, ``activation``,
    ``optimizer``) with its ``seeds`` on the batch axis (``eta``, ``lr``, ``p``,
    ``init_scale``, ``top_init``), trained ``epochs`` epochs with each layer's irrep purity
    (``projectors``, an :func:`encode` record) logged every ``purity_every``. Returns
    ``{"finite": False}`` when a training loss is not finite; else the epochs at which each
    layer's purity covers ``fraction`` of the way to 1
    (:func:`numerics.li2.deep_group_network.rise_epochs`) and whether it did, the purity
    series, the epochs at which test accuracy 0.5 is reached, and the final test and training
    accuracy and loss."""
    hyper = Hyper.batch(seed=list(point["seeds"]), eta=point["eta"], lr=point["lr"],
                        p=point["p"], init_scale=point["init_scale"],
                        top_init=point["top_init"])
    config = DeepConfig(K=point["K"], layers=point["layers"], activation=point["activation"],
                        residual=point["residual"], optimizer=OptimizerSpec(point["optimizer"]))
    trainer = DeepGroupTrainer(point["table"], hyper, config,
                               projectors=decode(point["projectors"]),
                               eval_every=point["eval_every"], purity_every=point["purity_every"],
                               device=point["device"], dtype=_dtype(point["dtype"]))
    history = trainer.train(point["epochs"])
    _, loss = history.series("train_loss")
    if not bool(torch.isfinite(loss).all()):
        return {"finite": False}
    e, purity = history.series("purity")
    epochs, reached = rise_epochs(e, purity, point["fraction"])
    _, acc = history.series("test_acc")
    _, train_acc = history.series("train_acc")
    return {"finite": True, "epochs": encode(epochs), "reached": encode(reached),
            "purity": encode(purity), "purity_epochs": encode(e),
            "t_half": encode(grokking_times(history, 0.5).epochs), "final_test": encode(acc[-1]),
            "final_train": encode(train_acc[-1]), "final_loss": encode(loss[-1])}


# --- li2.fig8 -------------------------------------------------------------------------------------

def optimiser_width_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One optimiser (``"adam"`` or ``"muon"``) at width ``K`` on the group ``table``: every
    (seed, learning rate) of the point on the batch axis (``Hyper.grid``, seeds outer), x^2,
    class-centred MSE, full batch, ``epochs`` epochs with test metrics every ``eval_every``.
    Returns the logged epochs, the test loss and accuracy (epochs x seeds*lrs) and the final
    training accuracy and loss (seeds*lrs)."""
    hyper = Hyper.grid(seed=list(point["seeds"]), lr=list(point["lrs"]),
                       eta=[point["weight_decay"]], p=[point["p"]])
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_class",
                         optimizer=OptimizerSpec(name=point["optimizer"]),
                         eval_every=point["eval_every"], diag_every=point["epochs"],
                         diagnostics=())
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    trainer.train(point["epochs"])
    epochs, loss = trainer.history.series("test_loss")
    _, acc = trainer.history.series("test_acc")
    _, train_acc = trainer.history.series("train_acc")
    _, train_loss = trainer.history.series("train_loss")
    return {"epochs": encode(torch.as_tensor(epochs)), "test_loss": encode(loss),
            "test_acc": encode(acc), "train_acc": encode(train_acc[-1]),
            "train_loss": encode(train_loss[-1])}


# --- li2.fig3 -------------------------------------------------------------------------------------

#: The history series li2.fig3 reads: accuracy and loss curves, ||G_F||, the Gram ratios and
#: the relative update sizes and cosines of W and V.
GROKKING_SERIES = ("train_acc", "test_acc", "train_loss", "test_loss", "gf_norm", "ftf_ratio",
                   "fft_ratio", "fft_dist", "w_update_rel", "v_update_rel", "w_update_cos",
                   "v_update_cos")


def grokking_series_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One seed of the Fig. 3 recipe (x^2, class-centred MSE, Adam at ``lr``) on the group
    ``table`` with every weight decay of ``etas`` on the batch axis, ``epochs`` epochs, test
    metrics every ``eval_every``, Grams and updates every ``diag_every``, G_F every
    ``gradient_every``. Returns each of :data:`GROKKING_SERIES` as ``{"epochs", "values"}``
    (values ``(D, len(etas))``)."""
    hyper = Hyper.grid(seed=[point["seed"]], eta=list(point["etas"]), p=[point["p"]],
                       lr=[point["lr"]])
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_class",
                         eval_every=point["eval_every"], diag_every=point["diag_every"],
                         diagnostics=("gradient", "gram", "updates"),
                         group_every=(("gradient", point["gradient_every"]),),
                         gram_nodes=point["gram_subsample"],
                         gram_samples=point["gram_subsample"])
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    trainer.train(point["epochs"])
    out = {}
    for name in GROKKING_SERIES:
        epochs, values = trainer.history.series(name)
        out[name] = {"epochs": encode(epochs), "values": encode(values)}
    return out


# --- li2.x.lock-in -------------------------------------------------------------------------------

def lock_in_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """The runs ``point["runs"]`` (each ``{"seed", "eta", "p"}``) of the two-layer network
    (``activation``, class-centred MSE, Adam at ``lr``) on ``table`` for ``epochs`` steps, one
    at a time, so that every first-layer change enters a :class:`UpdateWindow` of the largest
    of ``windows``. Per epoch (row t: after t steps): test accuracy and
    :math:`\\sigma_2/\\sigma_3` of each window (``ratio[w]``, their ``eigvalsh`` route);
    :math:`\\rho` (the trainer's ``fft_dist``) every ``rho_every``. At the epochs
    ``checks`` (multiples of ``rho_every``): the same ratios by the SVD route with the
    rounding bound of their difference, and :math:`\\rho` recomputed in float64 from the
    features (both readings). Also the norm of every change (``norms``, row t - 1: step t)."""
    runs = point["runs"]
    hyper = Hyper.batch(seed=[r["seed"] for r in runs], eta=[r["eta"] for r in runs],
                        p=[r["p"] for r in runs], lr=point["lr"])
    config = TrainConfig(K=point["K"], activation=point["activation"], loss="mse_class",
                         eval_every=1, diag_every=point["rho_every"], diagnostics=("gram",))
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    B, windows, checks = len(runs), list(point["windows"]), set(point["checks"])
    if any(e % point["rho_every"] for e in checks):
        raise ValueError(f"checks: {sorted(checks)} must be multiples of rho_every")
    window = UpdateWindow(B, trainer.W[0].numel(), max(windows), device=trainer.device)
    nan = torch.full((B,), float("nan"), dtype=torch.float64)
    ratios = {w: [nan] for w in windows}
    svd = {w: {"epochs": [], "eig": [], "svd": [], "bound": []} for w in windows}
    rho_check = {"epochs": [], "raw": [], "centred": []}
    norms = []
    real = trainer.train_set.weight > 0
    for t in range(1, point["epochs"] + 1):
        before = trainer.W.to(torch.float64, copy=True)        # W is updated in place
        trainer.train(1, record_last=False)
        change = trainer.W.to(torch.float64) - before
        norms.append(torch.linalg.vector_norm(change, dim=(-2, -1)).cpu())
        window.push(change)
        for w in windows:
            ratios[w].append(gap_ratio(window.levels(w)).cpu())
            if t in checks:
                svd[w]["epochs"].append(t)
                svd[w]["eig"].append(ratios[w][-1])
                svd[w]["svd"].append(gap_ratio(window.levels_svd(w)).cpu())
                svd[w]["bound"].append(window.rounding(w).cpu())
        if t in checks:
            F = trainer.forward_snapshot().F.to(torch.float64)
            values = [level_metric(F[b][real[b]]) for b in range(B)]
            rho_check["epochs"].append(t)
            for k in ("raw", "centred"):
                rho_check[k].append(torch.stack([v[k] for v in values]).cpu())
    trainer.train(0)
    _, test_acc = trainer.history.series("test_acc")
    rho_epochs, rho = trainer.history.series("fft_dist")
    _, train_acc = trainer.history.series("train_acc")
    _, train_loss = trainer.history.series("train_loss")
    rho_at = {int(e): i for i, e in enumerate(rho_epochs)}

    def stacked(rows: list[torch.Tensor]) -> dict[str, Any]:
        return encode(torch.stack(rows) if rows else torch.zeros(0, B, dtype=torch.float64))

    return {"finite": bool(torch.isfinite(train_loss[-1]).all()),
            "test_acc": encode(test_acc), "train_acc": encode(train_acc[-1]),
            "train_loss": encode(train_loss[-1]),
            "rho": {"epochs": encode(rho_epochs), "values": encode(rho)},
            "ratio": {str(w): encode(torch.stack(r)) for w, r in ratios.items()},
            "norms": encode(torch.stack(norms)),
            "svd": {str(w): {"epochs": s["epochs"], **{k: stacked(s[k]) for k in
                                                      ("eig", "svd", "bound")}}
                    for w, s in svd.items()},
            "rho_check": {"epochs": rho_check["epochs"],
                          "raw": stacked(rho_check["raw"]),
                          "centred": stacked(rho_check["centred"]),
                          "trainer": stacked([rho[rho_at[e]] for e in rho_check["epochs"]])}}


# --- li2.thm7 -------------------------------------------------------------------------------------

def gradient_spectrum_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """The two-layer network (x^2, class-centred MSE, Adam at ``lr``, weight decay ``eta``,
    training fraction ``p``, width ``K``) on the group ``table`` with its ``seeds`` on the
    batch axis, ``epochs`` epochs; at the checkpoints (every ``every`` epochs up to ``window``,
    then every ``late_every``) the power of G_F per real component (``projectors``, an
    :func:`encode` record; :func:`numerics.li2.gradient_spectrum.target_power`), the nodes
    per component (:func:`~numerics.li2.gradient_spectrum.node_components`) and ||G_F||.
    Returns them (``(C, B, J)``, ``(C, B, J)``, ``(C, B)``) with the checkpoint epochs, the
    training accuracy there and the final training loss."""
    P = decode(point["projectors"])
    hyper = Hyper.batch(seed=list(point["seeds"]), eta=point["eta"], lr=point["lr"],
                        p=point["p"])
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_class",
                         eval_every=point["every"], diag_every=point["every"], diagnostics=())
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))

    def measure(s: Any) -> dict[str, torch.Tensor]:
        return {"power": target_power(s, P), "gf_norm": alignment(s)["gf_norm"],
                "nodes": counts(node_components(s.W, P), P.shape[0])}

    tracked = Checkpointed(trainer, checkpoint_epochs(point["every"], point["window"],
                                                      point["late_every"], point["epochs"]),
                           measure)
    history = tracked.train(point["epochs"])
    epochs, power = tracked.series("power")
    logged, acc = history.series("train_acc")
    at = [logged.tolist().index(e) for e in epochs.tolist()]
    _, loss = history.series("train_loss")
    return {"epochs": encode(epochs), "power": encode(power),
            "nodes": encode(tracked.series("nodes")[1]),
            "gf_norm": encode(tracked.series("gf_norm")[1]), "train_acc": encode(acc[at]),
            "final_loss": encode(loss[-1])}


# --- li2.sec8-discussion ------------------------------------------------------------------------

def endpoint_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration (``p``, ``eta``, ``lr``; x^2, class-centred MSE, ``optimizer``) at
    width ``K`` on the group ``table``, its ``seeds`` on the batch axis, trained ``epochs``
    epochs. Returns ``{"finite": False}`` when a final training loss is not finite; else per
    run the final training and test accuracy and training loss, the node kinds
    (:func:`numerics.li2.memorisation_kinds.classify`: shares, focus, initial alignment,
    training-pair share, kind) and, at the balanced weights, the ``top`` largest eigenvalues
    of the training loss's Hessian, its Euler floor and the squared norm
    (:func:`numerics.li2.loss_hessian.sharpness`, float64)."""
    hyper = Hyper.batch(seed=list(point["seeds"]), p=point["p"], eta=point["eta"],
                        lr=point["lr"])
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_class",
                         optimizer=OptimizerSpec(point["optimizer"]),
                         eval_every=point["epochs"], diag_every=point["epochs"],
                         diagnostics=())
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    W0 = trainer.W.clone()
    history = trainer.train(point["epochs"])
    _, loss = history.series("train_loss")
    if not bool(torch.isfinite(loss[-1]).all()):
        return {"finite": False}
    M, S = trainer.task.M, trainer.train_set
    W, V = trainer.W.cpu(), trainer.V.cpu()
    pairs = torch.zeros(len(hyper), M * M, dtype=torch.bool)
    runs = []
    for b in range(len(hyper)):
        real = S.weight[b] > 0
        index = S.index[b][real].cpu()
        pairs[b, index] = True
        data = TrainingPairs(index // M, index % M, S.target[b][real].cpu(), M)
        sh = sharpness(W[b], V[b], data, point["top"])
        runs.append({"eigenvalues": sh.eigenvalues.tolist(), "floor": sh.floor,
                     "norm_sq": sh.norm_sq})
    kinds = classify(W.double(), V.double(), W0.cpu().double(), pairs.view(-1, M, M))
    _, train_acc = history.series("train_acc")
    _, test_acc = history.series("test_acc")
    return {"finite": True, "train_acc": encode(train_acc[-1]), "test_acc": encode(test_acc[-1]),
            "train_loss": encode(loss[-1]), "thm5_share": encode(kinds.thm5_share),
            "random_share": encode(kinds.random_share), "focus": encode(kinds.focus),
            "alignment": encode(kinds.alignment), "pair_share": encode(kinds.pair_share),
            "kinds": list(kinds.kinds), "hessian": runs}
