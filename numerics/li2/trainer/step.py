"""Pieces of the eager training step: scratch views of its buffers, the activation and its
derivative in place, and full float32 matrix products while it runs."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch

from numerics.device import precision_flags, verification_precision


def _scratch(buffer: torch.Tensor, *shape: int) -> torch.Tensor:
    """A contiguous tensor of ``shape`` on the front of ``buffer``'s storage."""
    return buffer.view(-1)[:math.prod(shape)].view(shape)


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """:func:`numerics.device.verification_precision` inside the block (TF32 off on CUDA: its
    10-bit mantissa would put about :math:`10^{-3}` relative error into every product of a
    verification run), the previous settings restored afterwards."""
    flags = precision_flags()
    verification_precision()
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(flags["float32_matmul_precision"])
        torch.backends.cuda.matmul.allow_tf32 = flags["cuda_matmul_allow_tf32"]
        torch.backends.cudnn.allow_tf32 = flags["cudnn_allow_tf32"]



def _activate(pre: torch.Tensor, out: torch.Tensor, name: str) -> None:
    r""":math:`\sigma(\mathrm{pre})` into ``out`` (x2 as a product: the same bits as
    ``square``, whose ``pow`` kernel is slower on the CPU)."""
    if name == "x2":
        torch.mul(pre, pre, out=out)
    elif name == "relu":
        torch.clamp(pre, min=0, out=out)
    else:
        torch.sigmoid(pre, out=out)
        out.mul_(pre)


def _times_derivative(pre: torch.Tensor, grad: torch.Tensor, name: str) -> None:
    r"""``grad`` :math:`\leftarrow` ``grad`` :math:`\odot\,\sigma'(\mathrm{pre})`, for x2 without
    its factor 2 (the caller folds it into the smaller output gradient); silu overwrites
    ``pre``."""
    if name == "x2":
        grad.mul_(pre)
    elif name == "relu":
        grad.mul_(pre > 0)
    else:
        # silu'(z) = s (1 + z (1 - s)), s = sigmoid(z)
        s = torch.sigmoid(pre)
        pre.addcmul_(pre, s, value=-1.0).add_(1.0)
        grad.mul_(s).mul_(pre)
