r"""The author's complex-weight two-layer network (``use_complex_weights``, Li2 Fig. 11), batched
over configurations: :class:`ComplexGroupTrainer`.

The code (``ModularAdditionNN``, verify/claims/li2/SOURCES.md §6.2) builds the real network,
then casts :math:`W` and :math:`V` to ``cfloat``: the initial weights are the real
``nn.Linear`` draws with imaginary part 0. The one-hot inputs are cast too, the activation is
the complex square :math:`z^2` (``x.pow(2)``; ``relu`` is not defined on complex tensors), the
output :math:`\beta\,\sigma(\mathbf x^\top W)V` is complex, and the loss and the prediction use
its real part only (``compute_loss``, ``test_model``: ``o.real``). ``torch.optim.Adam`` treats a
complex parameter as the pair of its real and imaginary parts (``view_as_real``): the moments,
the weight decay (coupled, added to the gradient) and the step act on each part separately, and
the gradient of a real loss is :math:`\partial\mathcal L/\partial\Re+i\,\partial\mathcal L/
\partial\Im`. This module stores each weight as its two real parts and trains them with the
same optimiser as the real trainer (:class:`numerics.optimizers.BatchedOptimizer`), which is
that update.

With :math:`Z=Z_r+iZ_i`: :math:`F=Z^2=(Z_r^2-Z_i^2)+2iZ_rZ_i` and
:math:`\Re(FV)=F_rV_r-F_iV_i`. At a real point (:math:`W_i=V_i=0`) the imaginary parts get no
gradient: :math:`\partial\Re(FV)/\partial V_i=-F_i=0` and :math:`\partial\Re(FV)/\partial W_i`
goes through :math:`F_i=2Z_rZ_i` (gradient :math:`2Z_r\cdot(-G V_i^\top)=0`) and through
:math:`-Z_i^2` (gradient :math:`-2Z_i=0`). Adam with zero gradient and zero state leaves a zero
part at zero (its step is :math:`0/(0+\epsilon)`), and so does the coupled decay. So the
code's complex network stays real and follows the real network's trajectory exactly, in exact
arithmetic; in floating point every product with an exact zero is an exact zero, so the
imaginary parts stay exactly 0 there too.

Initial weights, split and loss are the real trainer's: the :class:`numerics.li2.trainer.
GroupTrainer` of the same ``hyper`` and ``config`` supplies :math:`W(0)`, :math:`V(0)` and the
train and test sets, so a complex run and a real run of one seed are paired (the same
initialisation and split); the loss is the code's class-centred MSE on the real output.
"""
from __future__ import annotations

import dataclasses

import torch

from numerics.li2.deep_group_network import loss_and_accuracy
from numerics.li2.train_splits import SampleSet
from numerics.li2.trainer import GroupTrainer, History, Hyper, TrainConfig
from numerics.optimizers import BatchedOptimizer

#: The parts of the weights, in the optimiser's order.
PARTS = ("W_re", "W_im", "V_re", "V_im")


class ComplexGroupTrainer:
    """A batch of the code's complex-weight two-layer networks on one group task (module
    docstring); :meth:`train` advances all of them.

    Records in :attr:`history`: ``train_loss``, ``train_acc`` every epoch; ``test_loss``,
    ``test_acc`` every ``config.eval_every`` epochs and at the end of each :meth:`train` call;
    epoch :math:`t` is the state after :math:`t` steps. ``config``: activation ``"x2"``,
    loss ``"mse_class"``, a trained top layer, optimiser ``sgd``, ``adam`` or ``adamw``.
    """

    def __init__(self, table, hyper: Hyper, config: TrainConfig, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> None:
        if config.activation != "x2":
            raise ValueError(f"activation: {config.activation!r}; complex weights need 'x2' "
                             f"(the code's sqr: relu is not defined on complex numbers)")
        if config.loss != "mse_class":
            raise ValueError(f"loss: {config.loss!r}; only the code's 'mse_class' is built")
        if config.top_layer != "trained":
            raise ValueError("top_layer: complex weights need a trained top layer")
        if config.optimizer.name == "muon":
            raise ValueError("optimizer: muon is not supported for complex weights")
        real = GroupTrainer(table, hyper, dataclasses.replace(config, diagnostics=()),
                            device=device, dtype=dtype)
        self.M, self.config = real.task.M, config
        self.train_set, self.test_set = real.train_set, real.test_set
        W, V = real.W.clone(), real.V.contiguous()
        # the code's cast to cfloat: the real draws, imaginary part 0
        self.params = {"W_re": W, "W_im": torch.zeros_like(W), "V_re": V,
                       "V_im": torch.zeros_like(V)}
        per = {"device": W.device, "dtype": dtype}
        self.beta = torch.tensor(hyper.out_scale, **per)
        self.optimizer = BatchedOptimizer(config.optimizer, self.params,
                                          lr=torch.tensor(hyper.lr, **per),
                                          wd=torch.tensor(hyper.eta, **per))
        self.epoch = 0
        self.history = History()
        self._recorded = -1

    def real_output(self, S: SampleSet, params: dict[str, torch.Tensor] | None = None
                    ) -> torch.Tensor:
        r""":math:`\beta\,\Re(\sigma(\mathbf x^\top W)V)` on the samples of ``S``
        (``(B, m, M)``)."""
        p = self.params if params is None else params
        B, _, K = p["W_re"].shape

        def gather(W: torch.Tensor) -> torch.Tensor:
            flat = W.reshape(-1, K)
            return (flat[S.rows_left] + flat[S.rows_right]).reshape(B, -1, K)

        Zr, Zi = gather(p["W_re"]), gather(p["W_im"])
        Fr, Fi = Zr * Zr - Zi * Zi, 2 * Zr * Zi
        return (Fr @ p["V_re"] - Fi @ p["V_im"]) * self.beta[:, None, None]

    def imaginary_size(self) -> torch.Tensor:
        """The largest :math:`|\\Im|` of any weight, per configuration (``(B,)``)."""
        return torch.stack([self.params[k].abs().amax((1, 2)) for k in ("W_im", "V_im")]
                           ).amax(0)

    def train(self, epochs: int) -> History:
        """Take ``epochs`` full-batch steps on every configuration; returns the history. The end
        of one call is the start of the next, recorded once."""
        if epochs < 0:
            raise ValueError(f"epochs: {epochs} must be >= 0")
        end, S = self.epoch + epochs, self.train_set
        while True:
            last = self.epoch == end
            new = self.epoch > self._recorded
            if new and (self.epoch % self.config.eval_every == 0 or last):
                with torch.no_grad():
                    loss, acc = loss_and_accuracy(self.real_output(self.test_set),
                                                  self.test_set, self.M, self.config.loss)
                self.history.add("test_loss", self.epoch, loss)
                self.history.add("test_acc", self.epoch, acc)
            with torch.set_grad_enabled(not last):
                leaves = {k: v.requires_grad_(not last) for k, v in self.params.items()}
                loss, acc = loss_and_accuracy(self.real_output(S, leaves), S, self.M,
                                              self.config.loss)
                grads = None if last else torch.autograd.grad(loss.sum(), list(leaves.values()))
            for v in self.params.values():
                v.requires_grad_(False)
            if new:
                self.history.add("train_loss", self.epoch, loss.detach())
                self.history.add("train_acc", self.epoch, acc.detach())
                self._recorded = self.epoch
            if last:
                return self.history
            self.optimizer.step(self.params, dict(zip(self.params, grads)), None)
            self.epoch += 1
