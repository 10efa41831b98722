r"""Flows that carry the running time integrals of the gradient (Never Saddle Thm 4.2):
:math:`\int_0^t\|\nabla f\|_2^2` and :math:`\int_0^t\|\nabla f\|_q^q` per coordinate, integrated
by the same scheme as the flow (so RK4 gives them at order 4, not a quadrature of records),
and the separable test objectives :math:`f(x) = \sum_k\tfrac{h_k}{k}|x_k - c_k|^k`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from numerics.ns.steepest_flows import check_exponent

Field = Callable[[float, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class SeparablePower:
    r""":math:`f(x) = \sum_k\tfrac{h_k}{p}|x_k - c_k|^{p}` with ``h``, ``c`` ``(B, d)`` and
    ``power`` :math:`p \ge 2` ``(B, 1)`` (2: a diagonal quadratic, :math:`\alpha = \min h`
    strongly convex; 4: convex, not strongly convex at its minimiser :math:`c`); ``f^\star = 0``.
    """

    h: torch.Tensor
    c: torch.Tensor
    power: torch.Tensor

    def __post_init__(self) -> None:
        if bool((self.h <= 0).any()):
            raise ValueError("h: curvatures must be > 0")
        if bool((self.power < 2).any()):
            raise ValueError("power: must be >= 2 (a C^1 convex objective)")

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        """Per-coordinate losses ``(B, d)``; sum over the last dim for f."""
        return self.h * (x - self.c).abs() ** self.power / self.power

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        e = x - self.c
        return self.h * torch.sign(e) * e.abs() ** (self.power - 1)


@dataclass(frozen=True)
class WithGradientIntegrals:
    r"""The field ``flow`` on a core state ``(R, B, d)`` extended by two rows: the running
    integrals of :math:`g_k^2` and :math:`|g_k|^q` with :math:`g = \nabla f(\text{to\_x(core)})`.

    The state is ``cat([core, I_2, I_q])`` along dim 0; :meth:`split` undoes it.
    """

    flow: Field
    to_x: Callable[[torch.Tensor], torch.Tensor]
    grad: Callable[[torch.Tensor], torch.Tensor]
    q: torch.Tensor

    def __post_init__(self) -> None:
        check_exponent(self.q)

    def initial(self, core: torch.Tensor) -> torch.Tensor:
        return torch.cat([core, core.new_zeros((2, *core.shape[1:]))])

    @staticmethod
    def split(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(core, I_2, I_q)`` of a state or of records (leading record dim kept)."""
        return y[..., :-2, :, :], y[..., -2, :, :], y[..., -1, :, :]

    def __call__(self, t: float, y: torch.Tensor) -> torch.Tensor:
        core = y[:-2]
        g = self.grad(self.to_x(core))
        return torch.cat([self.flow(t, core), (g * g)[None], (g.abs() ** self.q)[None]])
