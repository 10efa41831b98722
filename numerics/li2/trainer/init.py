"""Initial weights: PyTorch's default ``nn.Linear`` initialisation, float for float."""
from __future__ import annotations

import math

import torch

from numerics.random import make_generator


def _init_weights(seed: int, M: int, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`W` (``2M x K``) and :math:`V^\top` (``M x K``) as ``nn.Linear(2M, K)`` and
    ``nn.Linear(K, M)`` initialise them (kaiming-uniform with :math:`a=\sqrt5`), in float32."""
    g = make_generator(seed)

    def linear(fan_out: int, fan_in: int) -> torch.Tensor:
        # kaiming_uniform_(a=sqrt(5)) term by term (gain sqrt(2/(1+a^2)), bound sqrt(3) gain
        # / sqrt(fan_in)), so the floats, not only the law, are nn.Linear's
        bound = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + 5.0)) / math.sqrt(fan_in))
        return torch.empty(fan_out, fan_in, dtype=torch.float32).uniform_(-bound, bound,
                                                                            generator=g)

    W_t = linear(K, 2 * M)
    Vt = linear(M, K)
    return W_t.T.contiguous(), Vt

