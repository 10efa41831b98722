r"""Activations by name, each with its derivative written out by hand.

The hand-written derivative is what a closed form such as :math:`D=\mathrm{diag}(\sigma'(Xw))`
(Li2, Thm. 1) needs; autograd differentiates :attr:`Activation.fn` itself, so comparing the
two is a real check. ReLU's derivative is the a.e. one, :math:`\mathbf 1[z>0]` (also what
torch's autograd returns at 0).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

Fn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Activation:
    """An elementwise activation :math:`\\sigma` and its derivative :math:`\\sigma'`."""

    name: str
    fn: Fn
    derivative: Fn

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        return self.fn(z)


def _silu_derivative(z: torch.Tensor) -> torch.Tensor:
    # d/dz z s(z) = s(z) + z s(z)(1 - s(z)) with s the logistic sigmoid.
    s = torch.sigmoid(z)
    return s * (1 + z * (1 - s))


def _sigmoid_derivative(z: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(z)
    return s * (1 - s)


ACTIVATIONS: dict[str, Activation] = {
    a.name: a for a in (
        Activation("linear", lambda z: z, torch.ones_like),
        Activation("x2", torch.square, lambda z: 2 * z),
        Activation("relu", torch.relu, lambda z: (z > 0).to(z.dtype)),
        Activation("silu", torch.nn.functional.silu, _silu_derivative),
        Activation("tanh", torch.tanh, lambda z: 1 - torch.tanh(z).square()),
        Activation("sigmoid", torch.sigmoid, _sigmoid_derivative),
    )
}


def activation(name: str) -> Activation:
    """The activation called ``name``; a ``ValueError`` lists the allowed names.

    >>> activation("x2").derivative(torch.tensor(3.0))
    tensor(6.)
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"activation: {name!r} is not one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]
