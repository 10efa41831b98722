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
  with the gradient, Gram and update diagnostics; the history series the claim summarises.

A run that diverges is not an error of the point: its result says ``"finite": False`` and the
claim decides what that means (an inconclusive verdict).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from numerics.li2.deep_group_network import DeepConfig, DeepGroupTrainer, rise_epochs
from numerics.li2.grokking_time import grokking_times, train_until
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
    """The two-layer network of ``li2.thm6-training`` (x^2, class-centred MSE, Adam) on
    ``table`` with ``seeds`` on the batch axis, at the hyperparameters of ``point`` (``K``,
    ``p``, ``lr``, ``weight_decay``, ``eval_every``, ``device``, ``dtype``)."""
    hyper = Hyper.grid(seed=list(seeds), eta=[point["weight_decay"]], p=[point["p"]],
                       lr=[point["lr"]])
    config = TrainConfig(K=point["K"], activation="x2", loss="mse_class",
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
    interval."""
    hyper = Hyper.batch(seed=list(point["seeds"]),
                        **{k: point[k] for k in ("p", "eta", "lr", "top_init", "out_scale")})
    config = TrainConfig(K=point["K"], activation=point["activation"], loss=point["loss"],
                         optimizer=OptimizerSpec(point["optimizer"]),
                         eval_every=point["eval_every"], diag_every=point["eval_every"],
                         diagnostics=())
    trainer = GroupTrainer(point["table"], hyper, config, device=point["device"],
                           dtype=_dtype(point["dtype"]))
    return grokking_record(trainer.train, point)


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


# --- li2.fig8 ---------------------------------------------------------------------------------------

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


# --- li2.fig3 ---------------------------------------------------------------------------------------

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
