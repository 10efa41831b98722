r"""The fixed-sign parameter flow through its blow-up: the parameter flow on
:math:`f(x) = -Gx` from balanced factors, integrated in a time-changed variable (RK4 on a
step-halving ladder, memoised; :func:`fixed_sign_ladder`) on a (q, L, balance) grid
(:func:`fixed_sign_grid`), and the velocity of :math:`x = \prod_i w_i` by autograd
(:func:`velocity_of_x`).

Used by ``ns.cor4.12`` (Corollary 4.12, submitted numbering), ``ns.cor4.11`` (Corollary 4.11)
and ``ns.fig2-metric`` (Fig. 2).
"""
from __future__ import annotations

from typing import Any

import torch

from numerics.ns.blow_up import LinearObjective, balanced_start, clocked_trajectory
from numerics.ns.steepest_flows import ProductFlow
from verify import Run, ladder
from verify.claims.ns._ladders import Grid, grid


def fixed_sign_grid(axes: dict[str, Any], run: Run) -> Grid:
    """A (q, L, balance, ...) grid for the fixed-sign runs."""
    return grid(axes, L_max=max(axes["L"]), dtype=run.dtype, device=run.device)


def fixed_sign_ladder(run: Run, G: Grid, p: dict[str, Any]) -> list[torch.Tensor]:
    r"""The parameter flow on :math:`f(x) = -Gx` (one coordinate per entry) from
    :math:`w_i = a` (balance ``zero``) or :math:`w_1 = 0`, :math:`w_{i\ge2} = a` (``cor4.8``),
    integrated in the time-changed variable :math:`\tau \in [0, \tau_{end}]` (RK4, ladder
    ``p['steps'] * 2^k``, records every ``p['record']`` base steps). Per level, the records
    ``(R, L_max + 1, B, 1)``: factors, then the clock. Memoised for every claim that runs it
    (``scope="process"``): no stated form and no random draw enters, only the grid and these
    parameters."""
    keys = ("a", "G", "tau", "steps", "levels", "record")
    key = (str(G.labels), str([p[k] for k in keys]))

    def simulate() -> list[torch.Tensor]:
        a = torch.full((G.size, 1), float(p["a"]), dtype=run.dtype, device=run.device)
        first_zero = torch.tensor([[lab["balance"] == "cor4.8"] for lab in G.labels],
                                  device=run.device)
        W0 = balanced_start(G.mask, a, first_zero)
        objective = LinearObjective(torch.full_like(a, float(p["G"])))
        flow = ProductFlow(objective.grad, G.q, G.mask)
        return ladder(lambda n, every: clocked_trajectory(
            flow, W0, G.mask, tau=p["tau"], steps=n, record_every=every * p["record"]),
            p["steps"], p["levels"])

    return run.memo("ns fixed-sign clocked ladder", simulate, key=key, scope="process")


def velocity_of_x(W: torch.Tensor, velocity: torch.Tensor) -> torch.Tensor:
    r""":math:`\dot x = \sum_i \partial x/\partial w_i\,\dot w_i` for :math:`x = \prod_i w_i`
    (``W`` ``(L_max, ...)``), the partials by reverse-mode autograd of the product map (no
    formula for :math:`\dot x`; the entries of ``x`` are independent, so the gradient of their
    sum gives every partial)."""
    W = W.detach().requires_grad_(True)
    (partials,) = torch.autograd.grad(W.prod(0).sum(), W)
    return (partials * velocity).sum(0)
