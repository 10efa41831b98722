r"""Paths on the unit sphere between two local maxima of Li2's energy (Thm. 2, Cor. 2:
"different maxima are not connected"), and the lowest point along each.

Two maxima :math:`\mathbf w_0,\mathbf w_1` are separated when every path between them dips
below :math:`\min(\mathcal E(\mathbf w_0),\mathcal E(\mathbf w_1))`. The quantity is the pass
height :math:`h=\sup_\gamma\min_t\mathcal E(\gamma(t))` over paths :math:`\gamma` from
:math:`\mathbf w_0` to :math:`\mathbf w_1`. Every path gives a lower bound on :math:`h`; no
finite search gives an upper bound, so a low pass found here is evidence of separation, not a
proof. This module searches three kinds of path (each point of a path is an image; the lowest
image stands for the path's lowest point):

* the great circle (:func:`great_circle`);
* the great circle bent by a random tangent bump :math:`a\sin(\pi t)\boldsymbol\xi(t)`;
* a string (E, Ren and Vanden-Eijnden, J. Chem. Phys. 126, 2007), started from each of those:
  the interior images climb :math:`\mathcal E` by projected gradient ascent and are
  re-spaced to equal arc length after every step (:func:`climb_string`); it converges to the
  path of highest minimum near its start (a mountain-pass path, through an index-1 saddle of
  :math:`-\mathcal E`), so its lowest image estimates :math:`h`.

:func:`pass_heights` runs all of them for one pair and reports the best (highest) lowest
point. A pass height equal to the lower end's energy (to rounding) means the two points are
joined by a path at constant height, as the members of one family of maxima are (the flat
directions of Cor. 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.activations import Activation
from numerics.li2.group_task import GroupTask, group_energy
from numerics.li2.landscape import energy_and_riemannian_gradient


def great_circle(w0: torch.Tensor, w1: torch.Tensor, points: int) -> torch.Tensor:
    r"""``points`` equally spaced points of the shorter great-circle arc from each unit row of
    ``w0`` to the same row of ``w1`` (``(P, d)`` in, ``(P, points, d)`` out; the ends are
    ``w0`` and ``w1``). Antipodal ends have no unique arc: a ValueError."""
    if points < 2:
        raise ValueError(f"points: {points} must be >= 2")
    angle = torch.arccos((w0 * w1).sum(-1).clamp(-1.0, 1.0))[:, None, None]
    if bool((angle > torch.pi - 1e-6).any()):
        raise ValueError("great_circle: some ends are antipodal, the arc is not unique")
    t = torch.linspace(0.0, 1.0, points, dtype=w0.dtype, device=w0.device)[None, :, None]
    # sin(t a)/sin(a) -> t as a -> 0: the chord, exact at a = 0
    sin = torch.sin(angle)
    small = sin < torch.finfo(w0.dtype).eps
    a0 = torch.where(small, 1 - t, torch.sin((1 - t) * angle) / torch.where(small, 1.0, sin))
    a1 = torch.where(small, t, torch.sin(t * angle) / torch.where(small, 1.0, sin))
    path = a0 * w0[:, None] + a1 * w1[:, None]
    return path / path.norm(dim=-1, keepdim=True)


def bent(path: torch.Tensor, generator: torch.Generator, amplitude: float) -> torch.Tensor:
    r"""Each path of ``path`` (``(P, N, d)``, unit rows) pushed off by
    :math:`a\sin(\pi t)\boldsymbol\xi`, one random unit direction :math:`\boldsymbol\xi` per
    path (drawn on the CPU from ``generator``, made tangent at each point), renormalised: the
    ends stay, the middle moves by about ``a``."""
    P, N, d = path.shape
    xi = torch.randn(P, 1, d, generator=generator, dtype=torch.float64).to(path)
    xi = xi - (path * xi).sum(-1, keepdim=True) * path
    xi = xi / xi.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(path.dtype).tiny)
    t = torch.linspace(0.0, 1.0, N, dtype=path.dtype, device=path.device)[None, :, None]
    moved = path + amplitude * torch.sin(torch.pi * t) * xi
    return moved / moved.norm(dim=-1, keepdim=True)


def respace(path: torch.Tensor) -> torch.Tensor:
    """Each polygon of ``path`` (``(P, N, d)``) resampled at ``N`` points equally spaced in
    chord length, ends kept, projected back onto the sphere."""
    P, N, _ = path.shape
    seg = (path[:, 1:] - path[:, :-1]).norm(dim=-1)
    s = torch.cat([seg.new_zeros(P, 1), seg.cumsum(-1)], -1)
    target = torch.linspace(0.0, 1.0, N, dtype=path.dtype, device=path.device) * s[:, -1:]
    i = torch.searchsorted(s.contiguous(), target.contiguous(), right=True).clamp(1, N - 1)
    lo, hi = s.gather(1, i - 1), s.gather(1, i)
    frac = ((target - lo) / (hi - lo).clamp(min=torch.finfo(path.dtype).tiny))[..., None]
    left = path.gather(1, (i - 1)[..., None].expand_as(path))
    right = path.gather(1, i[..., None].expand_as(path))
    out = left + frac * (right - left)
    out[:, 0], out[:, -1] = path[:, 0], path[:, -1]
    return out / out.norm(dim=-1, keepdim=True)


def climb_string(path: torch.Tensor, task: GroupTask, act: Activation, lr: float,
                 steps: int) -> torch.Tensor:
    r"""The string method for paths of highest minimum, all paths of ``path`` (``(P, N, d)``)
    at once: ``steps`` rounds of one projected ascent step
    :math:`\mathbf w\leftarrow(\mathbf w+\mathrm{lr}\,P_T\nabla\mathcal E)/\|\cdot\|` on every
    interior image, then :func:`respace`. The ends are held (they are maxima)."""
    if steps < 0 or lr <= 0:
        raise ValueError(f"steps: {steps} must be >= 0 and lr: {lr} > 0")
    w = path.clone()
    P, N, d = w.shape
    for _ in range(steps):
        inner = w[:, 1:-1].reshape(-1, d)
        _, g = energy_and_riemannian_gradient(inner, task, act)
        inner = inner + lr * g
        inner = (inner / inner.norm(dim=-1, keepdim=True)).reshape(P, N - 2, d)
        w = respace(torch.cat([w[:, :1], inner, w[:, -1:]], 1))
    return w


@dataclass(frozen=True)
class PassEstimate:
    """For one pair of ends: their energies, the lowest energy along the great circle, along
    the best bent circle and along the best climbed string (each the highest over its
    starts). ``best``: the highest of the three, the estimate of the pass height; ``dip``:
    ``(min(ends) - best) / min(ends)``, the relative depth of the best path's lowest point."""

    ends: tuple[float, float]
    great_circle: float
    bent: float
    string: float

    @property
    def best(self) -> float:
        return max(self.great_circle, self.bent, self.string)

    @property
    def dip(self) -> float:
        low = min(self.ends)
        return (low - self.best) / low


def pass_heights(w0: torch.Tensor, w1: torch.Tensor, task: GroupTask, act: Activation,
                 generator: torch.Generator, *, points: int = 33, bends: int = 1,
                 amplitude: float = 0.5, lr: float, steps: int) -> list[PassEstimate]:
    r"""Estimates of the pass height between each unit row of ``w0`` and the same row of
    ``w1`` (``(P, d)`` each; module docstring): the great circle, ``bends`` bent circles
    (:func:`bent`, ``amplitude``), and the string climbed from each of them
    (:func:`climb_string`, ``lr``, ``steps``), ``points`` images a path, all in one batch."""
    if bends < 0:
        raise ValueError(f"bends: {bends} must be >= 0")
    P, d = w0.shape
    circle = great_circle(w0, w1, points)
    paths = torch.cat([circle] + [bent(circle, generator, amplitude) for _ in range(bends)])

    def lowest(p: torch.Tensor) -> torch.Tensor:  # (1 + bends, P): lowest image per path
        return group_energy(p.reshape(-1, d), task, act).reshape(1 + bends, P, points).amin(-1)

    low = lowest(paths)
    climbed = lowest(climb_string(paths, task, act, lr, steps)).amax(0)
    bent_low = low[1:].amax(0) if bends else low[0]
    ends = group_energy(torch.stack([w0, w1], 1), task, act)
    return [PassEstimate((float(ends[i, 0]), float(ends[i, 1])), float(low[0, i]),
                         float(bent_low[i]), float(climbed[i])) for i in range(P)]


def pairwise_pass_heights(maxima: list[torch.Tensor], task: GroupTask, act: Activation,
                          generator: torch.Generator, **settings
                          ) -> list[tuple[tuple[int, int], PassEstimate]]:
    r""":func:`pass_heights` (``settings``: its keyword arguments) between every two of the unit
    vectors ``maxima``, all pairs in one batch. :math:`\mathcal E` is even for
    :math:`\sigma=x^2` (and :math:`-\mathbf w` a maximum with :math:`\mathbf w`), so the far end
    is taken as :math:`\pm\mathbf w_j`, whichever is nearer to :math:`\mathbf w_i`."""
    pairs = [(i, j) for i in range(len(maxima)) for j in range(i + 1, len(maxima))]
    if not pairs:
        return []
    w0 = torch.stack([maxima[i] for i, _ in pairs])
    w1 = torch.stack([maxima[j] * (1.0 if float(maxima[i] @ maxima[j]) >= 0 else -1.0)
                      for i, j in pairs])
    return list(zip(pairs, pass_heights(w0, w1, task, act, generator, **settings)))
