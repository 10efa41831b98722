r"""Whether a training run learned its task, recorded with :meth:`verify.run.Run.ran`: the
training claims (``li2.thm6-training``, ``li2.sec6-deep``, ``li2.sec7-predictions``, ``li2.fig3``,
``li2.fig5``, ``li2.fig8``) read the
paper's statements off networks that trained, so a run that fitted nothing (a step size that
throws it about, a loss that blew up) makes their verdict inconclusive, whatever the evidence.

The criterion: every run's loss is finite and its training accuracy at the end is at least
halfway from chance :math:`1/M` (the accuracy of a guess that ignores the input) to a perfect
fit. A network near chance has fitted nothing its features, layers or grokking times could be
read from; one past halfway has learned most of its training set.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from verify import Run

#: The name under which the criterion is recorded.
TRAINED = "the network trained beyond chance"


def _values(x: torch.Tensor | Sequence[float]) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float64).flatten()


def record_trained(run: Run, M: int, train_accuracy: torch.Tensor | Sequence[float],
                   loss: torch.Tensor | Sequence[float] | None, *, where: str,
                   test_accuracy: torch.Tensor | Sequence[float] | None = None,
                   name: str = TRAINED) -> bool:
    """Record (and return) whether every run in ``train_accuracy`` and ``loss`` (one value
    per run, at the end of training; ``where`` says which runs and when) trained beyond
    chance on an ``M``-class task; ``test_accuracy``, when given, is reported beside. A
    sweep that keeps no loss passes ``loss=None`` (a NaN then shows in the accuracy)."""
    chance = 1 / M
    need = (1 + chance) / 2
    acc, has_loss = _values(train_accuracy), loss is not None
    loss = _values(loss if has_loss else [0.0])
    holds = bool(torch.isfinite(loss).all()) and bool((acc >= need).all())
    test = ""
    if test_accuracy is not None:
        t = _values(test_accuracy)
        test = f", test accuracy {float(t.min()):.3f} to {float(t.max()):.3f}"
    return run.ran(name, holds,
                   f"{where}: training accuracy {float(acc.min()):.3f} to "
                   f"{float(acc.max()):.3f} (needed >= {need:.3f}, halfway from chance to 1)"
                   f"{test}, chance {chance:.3f}"
                   + (f", largest loss {float(loss.max()):.3g}" if has_loss else ""))
