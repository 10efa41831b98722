r"""The landscape of :math:`\mathcal E` on the group task (:math:`\sigma(x)=x^2`, full data,
:math:`\|\mathbf w\|=1`), Thm. 2: the random-start projected ascent to its local maxima
(:func:`landscape`, memoised, with its settings :data:`ASCENT`), the maxima it finds
(:func:`maxima`), and :func:`tangent_inertia` (exact rank, float64 signs) of the Riemannian
Hessian at an exact point.

Used by ``li2.thm2`` (Thm. 2), ``li2.cor1`` (Cor. 1) and ``li2.cor2`` (Cor. 2): they share one
ascent per group, settings and seed (``run.memo`` with ``scope="process"``).
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from numerics.activations import activation
from numerics.li2.batched_ascent import ascend_sphere_active
from numerics.li2.group_task import group_task
from numerics.li2.landscape import Landscape, energy_hessian_by_rows, find_local_maxima
from numerics.random import make_generator
from theory.groups.cyc_linalg import rref
from theory.groups.cyclotomic import Cyc, CyclotomicField
from theory.li2.group_energy import ExactEnergy, tangent_hessian
from verify import Run, unit_roundoff
from verify.claims.li2._groups import build_group, float_projectors


def tangent_inertia(ex: ExactEnergy, w: Sequence[Cyc], F: CyclotomicField
                    ) -> tuple[int, int, int]:
    r"""(negative, zero, positive) eigenvalue counts of the Riemannian Hessian on the tangent
    space :math:`\mathbf w^\perp`: the zero count is exact (``2M - rank - 1`` by exact row
    reduction; the ``-1`` is the normal direction); the split of the rest into signs uses
    float64 eigenvalues of the exact matrix (they are far from 0: the rank fixes how many
    are non-zero)."""
    T = tangent_hessian(ex, w, F)
    _, pivots = rref(T, F)  # exact: fixes the zero count
    zero = ex.d - len(pivots) - 1
    values = torch.linalg.eigvalsh(torch.tensor([[complex(x).real for x in row] for row in T],
                                                dtype=torch.float64))
    order = values.abs().argsort(descending=True)[:len(pivots)]
    nonzero = values[order]
    return int((nonzero < 0).sum()), zero, int((nonzero > 0).sum())


# --- the landscape, shared by li2.thm2 and li2.cor1 -------------------------------------------

def landscape_seed(run: Run, name: str) -> int:
    """Seed of the random starts for group ``name``: fixed by the run seed and the group, not
    by the claim, so li2.thm2, li2.cor1 and their controls share one ascent."""
    digest = hashlib.sha256(f"{run.seed}:li2.group-landscape:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass(frozen=True)
class TimedLandscape:
    landscape: Landscape
    seconds: float
    lr: float
    gtol: float


#: Ascent settings; li2.cor1 uses the same ones, so both claims share one cached ascent.
ASCENT = {
    "quick": {"starts": 256, "lr_scale": 0.4, "max_steps": 3000, "gtol_u": 1e4,
              "hessian_samples": 2},
    "full": {"starts": 1024, "lr_scale": 0.4, "max_steps": 5000, "gtol_u": 1e4,
             "hessian_samples": 4},
}


def landscape(run: Run, name: str) -> TimedLandscape:
    """The ascent for group ``name``, memoised for every claim in the process: it depends on
    the group, the :data:`ASCENT` settings, :func:`landscape_seed`, device and dtype alone (not
    on the claim), so li2.thm2, li2.cor1, li2.cor2 and their controls share one."""
    p = run.params
    args = (name, p["starts"], p["lr_scale"], p["max_steps"], p["gtol_u"],
            p["hessian_samples"], landscape_seed(run, name))
    return run.memo("li2 group landscape",
                    lambda: _landscape(*args, str(run.device), str(run.dtype)), key=args,
                    scope="process")


def _landscape(name: str, starts: int, lr_scale: float, max_steps: int, gtol_u: float,
               hessian_samples: int, seed: int, device: str, dtype: str) -> TimedLandscape:
    G = build_group(name)
    dt = getattr(torch, dtype.removeprefix("torch."))
    dev = torch.device(device)
    task = group_task(G.table, device=dev)
    # lr: the tangent Hessian eigenvalues at the maxima lie in [-4M, 0) on the full task
    # (measured: -8E* with E* <= M/2); lr |lambda| < 2 is needed for stability, and
    # lr_scale = 0.4 gives lr |lambda| <= 1.6. The ascent records any decrease of E.
    lr = lr_scale / G.order
    # gtol: gradients near a maximum are computed to ~ sqrt(n) u |grad E| ~ M u; gtol_u M u
    # leaves a margin of gtol_u above that floor.
    gtol = gtol_u * unit_roundoff(dt) * G.order
    # Members of one maximum agree in E to ~ g^2/mu + n u (far below 100 sqrt(u): 1.5e-6 in
    # float64, 3.5e-2 in float32); distinct maxima differ by O(1) relative (E*/M = 1/(2 d_R)).
    energy_rtol = 100 * unit_roundoff(dt) ** 0.5
    start = time.perf_counter()
    # The active-set ascent steps each start until it meets gtol (as ascend_sphere on that
    # start alone) with the written-out grid gradient; the Hessians by reverse-over-reverse
    # autograd (no torch.func import). Both equal the autograd definitions to rounding.
    result = find_local_maxima(
        task, activation("x2"), starts, make_generator(seed), lr=lr, max_steps=max_steps,
        gtol=gtol, projectors=float_projectors(G, dev, dt), energy_rtol=energy_rtol,
        hessian_samples=hessian_samples, dtype=dt,
        chunk_elements=2**26 if dev.type == "cuda" else 2**18, ascend=ascend_sphere_active,
        hessian=energy_hessian_by_rows)
    return TimedLandscape(result, time.perf_counter() - start, lr, gtol)


def maxima(tl: TimedLandscape) -> list:
    """The classes that pass the second-order test, nontrivial component."""
    return [c for c in tl.landscape.classes if c.is_maximum and c.component > 0]
