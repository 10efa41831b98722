r"""The two-layer network trained under the paper's objective or the author's code's, and the
top layer it reaches against the ridge fixed points of both (Li2 §2.1, App. C;
verify/claims/li2/SOURCES.md §2.4, §6.3-6.4).

The code's loss (class centring :math:`P_M^\perp` on each output, targets
:math:`\mathbf y_{c,i}=\mathbf e_{y_i}-\tfrac1M\mathbf 1`, mean over the :math:`n` samples, no
½) with Adam's coupled weight decay :math:`\eta` on :math:`V`:

.. math:: L(V)=\tfrac1n\|FVP_M^\perp-Y_c\|_F^2+\tfrac\eta2\|V\|_F^2,\qquad
          g(V)=\tfrac2n\big(F^\top FVP_M^\perp-F^\top Y_c\big)+\eta V .

Right-multiplying :math:`g=0` by :math:`\mathbf 1_M` (:math:`P_M^\perp\mathbf 1=0`,
:math:`Y_c\mathbf 1=0`) gives :math:`V\mathbf 1=0`, so :math:`VP_M^\perp=V` and the fixed point
is a ridge regression on the *uncentred* features,

.. math:: V^\ast_{\rm code}=(F^\top F+\lambda I)^{-1}F^\top Y_c,\qquad\lambda=\tfrac{n\eta}2 .

The paper's objective :math:`J=\tfrac12(\|\tilde Y-\tilde FV\|_F^2+\eta_p\|V\|_F^2)` (sample
centring) has :math:`V_{\rm ridge}=(\tilde F^\top\tilde F+\eta_pI)^{-1}\tilde F^\top\tilde Y`;
the trainer's ``mse_sample`` loss is :math:`\tfrac2nJ` without the penalty, so with Adam's
coupled decay its fixed point is :math:`V_{\rm ridge}` at :math:`\eta_p=n\eta/2`.

How far a trained :math:`V` is from :math:`V^\ast_{\rm code}` follows from its own gradient:
:math:`g(V)P_M^\perp=\tfrac2n(F^\top F+\lambda I)(VP_M^\perp-V^\ast)` and
:math:`g(V)\mathbf 1=\eta V\mathbf 1`, so, with :math:`\|(F^\top F+\lambda I)^{-1}\|\le1/\lambda`,

.. math:: \|V-V^\ast_{\rm code}\|_F\le\frac{\|g(V)P_M^\perp\|_F+\|g(V)\mathbf 1\mathbf 1^\top/M\|_F}
          {\eta}\le\frac{\sqrt2\,\|g(V)\|_F}\eta ;

the same bound holds for the paper's objective with :math:`\tilde F`, :math:`\tilde Y` and
:math:`g` its gradient (:func:`stationarity_bound`).

>>> import torch
>>> F = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)
>>> Y = torch.eye(3, dtype=torch.float64)[:, :2]
>>> V = ridge(F, Y, 0.5)
>>> bool(torch.allclose((F.T @ F + 0.5 * torch.eye(2, dtype=torch.float64)) @ V, F.T @ Y))
True
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from numerics import solves
from numerics.li2.grokking_time import grokking_times
from numerics.li2.ridge_inverse import ridge_matrix
from numerics.li2.sweep_points import _dtype, encode
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from numerics.optimizers import OptimizerSpec


def ridge(F: torch.Tensor, Y: torch.Tensor, lam: float) -> torch.Tensor:
    r""":math:`(F^\top F+\lambda I)^{-1}F^\top Y` (``K x M``) for ``F`` ``n x K``, ``Y``
    ``n x M``: :func:`numerics.li2.ridge_inverse.ridge_matrix` solved by Cholesky."""
    return solves.solve_spd(ridge_matrix(F, lam), F.T @ Y, name="ridge Gram matrix")


def centred(A: torch.Tensor) -> torch.Tensor:
    """``A`` minus its mean over samples (rows): :math:`P_1^\\perp A`."""
    return A - A.mean(0, keepdim=True)


def stationarity_bound(g: torch.Tensor, eta: float) -> float:
    r""":math:`\sqrt2\|g\|_F/\eta`: how far a top layer with penalised gradient ``g`` can be
    from its objective's fixed point (module docstring)."""
    return math.sqrt(2.0) * float(torch.linalg.matrix_norm(g)) / eta


def _trainer(point: Mapping[str, Any]) -> GroupTrainer:
    hyper = Hyper.batch(seed=list(point["seeds"]), p=point["p"], eta=point["eta"],
                        lr=point["lr"])
    config = TrainConfig(K=point["K"], activation="x2", loss=point["loss"],
                         optimizer=OptimizerSpec("adam"), top_layer=point["top_layer"],
                         ridge_lambda=point["ridge_lambda"], eval_every=point["eval_every"],
                         diag_every=point["eval_every"], diagnostics=())
    return GroupTrainer(point["table"], hyper, config, device=point["device"],
                        dtype=_dtype(point["dtype"]))


def _top_layers(trainer: GroupTrainer, eta: float, loss: str) -> list[dict[str, float]]:
    """Per run: the trained :math:`V` against :math:`V^\\ast_{\\rm code}` (λ = nη/2),
    :math:`V_{\\rm ridge}` at :math:`\\eta_p=n\\eta/2` and at :math:`\\eta_p=\\eta` (relative
    Frobenius distances), and the stationarity bound of its own objective, relative."""
    _, _, gV = trainer.gradients()
    snap = trainer.forward_snapshot()
    M = snap.M
    out = []
    for b in range(snap.F.shape[0]):
        real = snap.train.weight[b] > 0
        F = snap.F[b][real].to(torch.float64)
        Y = snap.Y[b][:, real].T.to(torch.float64)
        V = trainer.V[b].to(torch.float64)
        n = F.shape[0]
        code = ridge(F, Y - 1.0 / M, n * eta / 2)
        paper = ridge(centred(F), centred(Y), n * eta / 2)
        literal = ridge(centred(F), centred(Y), eta)
        g = gV[b].to(torch.float64) + eta * V

        def rel(A: torch.Tensor) -> float:
            return float(torch.linalg.matrix_norm(V - A) / torch.linalg.matrix_norm(A))

        own = code if loss == "mse_class" else paper
        out.append({"n": n, "to_code": rel(code), "to_paper": rel(paper),
                    "to_paper_literal_eta": rel(literal),
                    "bound": stationarity_bound(g, eta) / float(torch.linalg.matrix_norm(own)),
                    "code_to_paper": float(torch.linalg.matrix_norm(code - paper)
                                           / torch.linalg.matrix_norm(paper)),
                    "mean_feature_share": float(n * F.mean(0).square().sum()
                                                / F.square().sum())})
    return out


def objective_variant_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One objective (``loss``: ``mse_class``, the code's, or ``mse_sample``, the paper's;
    ``top_layer``: ``trained`` or ``ridge``, the code's ``set_weight_reg`` with
    ``ridge_lambda``) at weight decay ``eta``, its ``seeds`` on the batch axis, trained for
    ``epochs`` full-batch Adam steps (test accuracy every ``eval_every``). Returns whether the
    final losses are finite, the final training accuracy and loss, the grokking times per
    threshold, the test accuracy as logged (``test_epochs``, ``test_acc`` ``(D, B)``), and
    for a trained top layer at ``eta`` > 0 the comparison of :math:`V` with the fixed points
    (:func:`_top_layers`)."""
    trainer = _trainer(point)
    history = trainer.train(point["epochs"])
    _, loss = history.series("train_loss")
    times = []
    for a in point["thresholds"]:
        t = grokking_times(history, a)
        times.append({"epochs": encode(t.epochs), "censored": encode(t.censored),
                      "budget": t.budget, "resolution": t.resolution})
    epochs, test = history.series("test_acc")
    finite = bool(torch.isfinite(loss[-1]).all())
    top = (_top_layers(trainer, point["eta"], point["loss"])
           if finite and point["top_layer"] == "trained" and point["eta"] > 0 else None)
    return {"finite": finite, "final_train": encode(history.series("train_acc")[1][-1]),
            "final_loss": encode(loss[-1]), "times": times, "top_layer": top,
            "test_epochs": encode(epochs), "test_acc": encode(test)}
