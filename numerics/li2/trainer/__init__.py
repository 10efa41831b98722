r"""Full-batch training of Li2's two-layer network on a group task, many configurations at once.

Model (§2.1, the author's ``ModularAdditionNN``, verify/claims/li2/SOURCES.md §6.2): input
:math:`\mathbf x=[\mathbf e_{h_1};\mathbf e_{h_2}]`, output :math:`\beta\,\sigma(\mathbf x^\top
W)V` with :math:`W\in\mathbb R^{2M\times K}`, :math:`V\in\mathbb R^{K\times M}`, no biases. The
first layer is the gather :math:`W_{h_1}+W_{M+h_2}` and its backward an explicit
``index_add_`` (autograd's backward of advanced indexing is several times slower).

Speed (the step is bounded by its three top-layer GEMMs, each :math:`2nKM` flops, so what is
avoided is memory traffic over the :math:`n\times K` activations): the gather-and-add is one
``embedding_bag`` (bags of two rows) instead of two gathers and an add; the activation, its
derivative and the gradients are written into buffers allocated once (the gather's output
comes fresh, in pieces of at most 16 MiB on the CPU: glibc then serves them from its heap
instead of mapping and zero-filling new pages every step); the samples of each configuration
are sorted by pair, so the ``index_add_`` into the rows :math:`h_1` accumulates into one row at
a time; losses and accuracies come from the forward pass's buffers; Adam and AdamW use torch's
fused kernel (:mod:`numerics.optimizers`). The loop makes no host synchronisation. Matrix
products run in full float32 during training (TF32 off on CUDA, restored afterwards), for
verification. ``compile`` (off by default) compiles the fixed-shape gradient computation
with ``torch.compile``; it is used on the epochs that record nothing beyond the training loss
and accuracy (the others run the eager step, whose buffers the diagnostics read).

Everything that varies between configurations sits on a leading batch axis ``B``
(:class:`Hyper`): seed, data seed, weight decay :math:`\eta` (the optimiser's
``weight_decay``, as in the code: :math:`\eta_{\rm paper}=n\eta/2` for the MSE losses, SOURCES
§2.4),
learning rate, training fraction :math:`p`, the scales of :math:`W(0)` and :math:`V(0)`
(``top_init`` is the code's ``top_layer_init_multiplier``; 0 gives :math:`V(0)=0`) and the
output scale :math:`\beta`.

Initialisation: PyTorch's default ``nn.Linear`` init, :math:`U(\pm1/\sqrt{\rm fan\_in})`,
drawn in float32 from a CPU generator seeded with the configuration's seed, :math:`W^\top`
(``K x 2M``) first and then :math:`V^\top` (``M x K``): the draws ``torch.manual_seed(seed)``
followed by the two ``nn.Linear`` constructors make, i.e. the third party's initialisation.

Losses (per sample :math:`i`, outputs :math:`\mathbf o_i`, averaged over the :math:`n` training
samples, no ½, so the optimiser's weight decay means what it means in the author's code):

* ``mse_class``: the code's :math:`\|P_M^\perp\mathbf o_i-(\mathbf e_{y_i}-\tfrac1M\mathbf
  1)\|^2` (class centring, SOURCES §6.3);
* ``mse_sample``: the paper's :math:`\tfrac1n\|P_1^\perp(Y-\hat Y)\|_F^2 = \tfrac2n J` (sample
  centring, Eq. 1);
* ``cross_entropy``.

Top layer: ``trained``, or ``ridge`` (the code's ``set_weight_reg``, Fig. 12): before every
forward pass :math:`V` is replaced by :math:`(F^\top F+\lambda I)^{-1}F^\top Y_c` for the
uncentred :math:`F` and :math:`Y_c=Y-\tfrac1M`, held fixed in the backward pass, and only
:math:`W` is trained (MSE losses only, as in the code).

Schedule: epoch :math:`t` is the state after :math:`t` steps. The training loss and accuracy
of every epoch come free from the forward pass of the step (the code logs them before each
step, too); the test loss and accuracy every ``eval_every`` epochs; the groups of
:mod:`numerics.li2.training_diagnostics` every ``diag_every`` epochs (``group_every`` sets a
group's own interval); all of them also at the last epoch.

Modules: :mod:`~numerics.li2.trainer.config` (:class:`Hyper`, :class:`TrainConfig`),
:mod:`~numerics.li2.trainer.history` (:class:`History`), :mod:`~numerics.li2.trainer.init`
(the initial weights), :mod:`~numerics.li2.trainer.step` (the eager step's pieces,
:func:`full_float32`), :mod:`~numerics.li2.trainer.compiled` (``torch.compile`` options and
the compiled gradients), :mod:`~numerics.li2.trainer.trainer` (:class:`GroupTrainer`).
"""
from numerics.li2.trainer.compiled import COMPILE_MODES
from numerics.li2.trainer.config import (
    ACTIVATIONS,
    DEFAULT_DIAGNOSTICS,
    LOSSES,
    TOP_LAYERS,
    Hyper,
    TrainConfig,
)
from numerics.li2.trainer.history import History
from numerics.li2.trainer.step import full_float32
from numerics.li2.trainer.trainer import GroupTrainer

__all__ = ["ACTIVATIONS", "COMPILE_MODES", "DEFAULT_DIAGNOSTICS", "LOSSES", "TOP_LAYERS",
           "GroupTrainer", "History", "Hyper", "TrainConfig", "full_float32"]
