r"""li2.thm4's landscape threshold at full fidelity by a sequential design (issue 28): per
subsample, bisection on the statement Thm. 4 is about, "every irreducible vertex is retained",
instead of one bisection per vertex.

Thm. 4 (§4.3, proof App. A.3) bounds the ratio :math:`p` above which the empirical energy keeps
*all* the local maxima of the :math:`d_k`-dimensional irreps (a union bound over the irreps,
whence the :math:`\log M`). The per-vertex design
(:func:`numerics.li2.subsampled_energy.vertex_thresholds`) bisects every (subsample, vertex)
pair in one batch, so every bisection step ascends all :math:`S\times B` pairs for ``steps``
iterations; li2.thm4 then keeps only the largest threshold of each subsample. At
:math:`\mathbb Z_{127}` (:math:`B=126` vertices, 20 subsamples) a step costs about 1.9
one-thread CPU seconds and the ascents run their whole budget (measured: no batch converged
before its 600 steps at :math:`\mathbb Z_{41}`), so 7 bisections and a 2400-step recheck
cost about 12,700 CPU seconds for one energy.

:func:`all_retained_thresholds` locates the same quantity by
:func:`verify.design.bisect_threshold` on the statement itself, per subsample (and per class
of vertices: the vertices of one irrep dimension :math:`d_k`), to the same bracket ratio:

* the outcome at ratio :math:`x` is "every vertex of the class is retained" (the
  per-vertex criterion: monotone ascent from the vertex ends with purity at least
  ``purity_min`` in its component);
* retention is monotone in :math:`x` on a subsample (the masks :math:`[U<x]` are nested; the
  per-vertex bisection assumes the same), so a vertex retained at some ratio at or below
  :math:`x` is not ascended again, and a vertex lost at some ratio at or above :math:`x`
  decides the outcome without an ascent. Only the vertices lost at the bracket's lower end
  are ascended at a midpoint: the set shrinks as the bracket rises. They are ascended in
  chunks, those lost at the highest ratio first, and the first lost vertex ends the
  evaluation (early decision: one lost vertex decides "not every vertex retained");
* the upper end :math:`p=1` is the full data, where each vertex is a maximum by
  construction: retained without an ascent (the per-vertex design never tests it either);
* every ascent runs its whole step budget (:data:`WHOLE_BUDGET`), as the per-vertex design's
  batches do at full fidelity, so a decision does not depend on the batch;
* the recheck (``recheck_steps``) repeats the ascents of each bisection's last computed
  midpoint with the longer budget and counts the decisions that change.

The threshold of a subsample is the geometric midpoint of its class brackets' largest
(the per-vertex design's: the largest vertex midpoint); per :math:`d_k` the class's.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from numerics.li2.subsampled_energy import (
    ascend_monotone,
    component_purity,
    subsampled_energy_and_gradient,
)
from verify import design

#: A gradient floor no ascent reaches: every ascent runs its whole step budget (the per-vertex
#: design's batches of every (subsample, vertex) pair ran all 600 steps at full fidelity,
#: measured on Z41), so a vertex's decision does not depend on the vertices beside it.
WHOLE_BUDGET = 1e-300


def resolution_of(p_range: Sequence[float], bisections: int) -> float:
    """The bracket ratio the per-vertex design reaches with ``bisections`` halvings of
    ``p_range`` in log p, as a resolution for :func:`verify.design.bisect_threshold` (a hair
    above it, so that the same number of halvings reaches it in floating point)."""
    lo, hi = p_range
    return (hi / lo) ** (0.5 ** bisections) * (1 + 1e-9)


def all_retained_thresholds(right: torch.Tensor, vertices: torch.Tensor,
                            projectors: torch.Tensor, classes: Sequence[Sequence[int]],
                            uniforms: torch.Tensor, *, p_range: tuple[float, float],
                            bisections: int, lr: float, steps: int, purity_min: float,
                            square_terms: bool, recheck_steps: int | None,
                            chunk: int | None = 16
                            ) -> dict[str, Any]:
    """Per subsample ``s`` and class ``c`` (lists of vertex indices into ``vertices``,
    ``B x 2M``, with ``projectors`` ``B x M x M``; ``uniforms`` ``S x M x M``) the bracket of
    the ratio above which every vertex of the class is retained (module docstring).

    Returns ``threshold`` (``S x C``, geometric midpoints; an unbracketed class gets the end
    it lies beyond), ``below_range`` / ``above_range`` (``S x C`` bools: every vertex
    retained at the lowest ratio / some lost at the highest, which only a range ending
    below 1 can give), ``flips`` (decisions of the
    rechecked ascents that change; None without a recheck), ``rechecked`` (how many
    ascents were rechecked), ``statement_flips`` (rechecked midpoints whose outcome, every
    vertex retained, changes), ``brackets`` (per subsample, per class, the bracket's record),
    ``ascents`` (vertex ascents run) against ``per_vertex_ascents`` (what the per-vertex
    design runs, its recheck included). ``chunk``: vertices ascended together; a chunk with
    a lost vertex ends the evaluation (None: all at once)."""
    lo, hi = (float(x) for x in p_range)
    resolution = resolution_of(p_range, bisections)
    S = uniforms.shape[0]
    C = len(classes)
    threshold = torch.empty(S, C, dtype=torch.float64)
    below = torch.zeros(S, C, dtype=torch.bool)
    above = torch.zeros(S, C, dtype=torch.bool)
    brackets: list[list[dict[str, Any]]] = []
    ascents = 0
    flips, rechecked, statement_flips = 0, 0, 0

    def kept(rows: list[int], mask: torch.Tensor, budget: int) -> torch.Tensor:
        # the whole budget for every row, whichever rows share the batch (gtol would stop a
        # batch once all its rows converge, so a small batch could stop where the
        # per-vertex design's batch of every (subsample, vertex) goes on)
        start = vertices[rows]
        result = ascend_monotone(start, lambda x: subsampled_energy_and_gradient(
            x, right, mask, square_terms), lr, budget, WHOLE_BUDGET, with_gradient=True)
        return (component_purity(result.w, projectors[rows]) >= purity_min).cpu()

    for s in range(S):
        U = uniforms[s]
        row: list[dict[str, Any]] = []
        for c, members in enumerate(classes):
            kept_at = {b: math.inf for b in members}    # lowest ratio seen retained
            lost_at = {b: 0.0 for b in members}         # highest ratio seen lost
            last: dict[str, Any] = {}

            def outcome(x: float, members: Sequence[int] = members,
                        kept_at: dict[int, float] = kept_at,
                        lost_at: dict[int, float] = lost_at,
                        last: dict[str, Any] = last) -> bool:
                nonlocal ascents
                if x >= 1.0:    # the full data: each vertex is a maximum of its energy
                    return True
                if any(lost_at[b] >= x for b in members):
                    return False
                # the vertices lost at the highest ratio first: the likeliest to be lost
                # again, and one lost vertex decides the outcome
                todo = sorted((b for b in members if kept_at[b] > x),
                              key=lambda b: -lost_at[b])
                mask = (U < x).to(vertices.dtype)[None]
                size = chunk or max(len(todo), 1)
                rows: list[int] = []
                decided: list[bool] = []
                for i in range(0, len(todo), size):
                    part = todo[i:i + size]
                    got = kept(part, mask, steps).tolist()
                    ascents += len(part)
                    rows += part
                    decided += got
                    for b, k in zip(part, got):
                        if k:
                            kept_at[b] = min(kept_at[b], x)
                        else:
                            lost_at[b] = max(lost_at[b], x)
                    if not all(got):
                        break
                if rows:
                    last.update(rows=rows, mask=mask, kept=torch.tensor(decided))
                return all(decided)

            bracket = design.bisect_threshold(outcome, lo, hi, resolution, log=True)
            at_lo = dict(bracket.points).get(lo)
            at_hi = dict(bracket.points).get(hi)
            below[s, c] = bool(at_lo)
            above[s, c] = at_hi is False
            threshold[s, c] = (lo if below[s, c] else hi if above[s, c]
                               else math.sqrt(bracket.lo * bracket.hi))
            if recheck_steps is not None and last:
                again = kept(last["rows"], last["mask"], recheck_steps)
                flips += int((again != last["kept"]).sum())
                statement_flips += bool(again.all()) != bool(last["kept"].all())
                rechecked += len(last["rows"])
            row.append(bracket.as_record())
        brackets.append(row)
    B = sum(len(m) for m in classes)
    per_vertex = S * B * bisections + (S * B * recheck_steps // steps
                                       if recheck_steps is not None else 0)
    return {"threshold": threshold, "below_range": below, "above_range": above,
            "flips": flips if recheck_steps is not None else None, "rechecked": rechecked,
            "statement_flips": statement_flips if recheck_steps is not None else None,
            "brackets": brackets, "ascents": ascents,
            "recheck_ascents": rechecked * (recheck_steps or 0) // steps,
            "per_vertex_ascents": per_vertex, "resolution": resolution}
