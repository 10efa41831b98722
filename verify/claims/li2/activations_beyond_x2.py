r"""li2.x.activations: Thms. 2, 3, 4 and 7 beyond :math:`\sigma(x)=x^2`, a regime map over
activations and groups.

Thm. 2 is stated for :math:`x^2` and, by the paper, extends to :math:`\sigma(x)=ax+bx^2`,
:math:`b>0`, "because the linear part cancels under the zero-mean operators"; Thm. 3 is stated
for :math:`x^2` alone. For each activation in {:math:`x^2` (the anchor), :math:`ax+bx^2` for
several :math:`(a,b)`, ReLU, SiLU} and each group this claim evaluates

* **Thm. 2** with the routes of ``li2.thm2`` (:func:`verify.claims.li2._landscape.landscape`,
  the same random starts): the distinct local maxima found by projected ascent, their
  :math:`\mathcal E^\ast/M` against the stated :math:`M/(8d_k)`, :math:`M/(16d_k)` (times
  :math:`b^2` for :math:`ax+bx^2`, the extension's reading), their purity over the real
  isotypic components, and the extension's mechanism :math:`\mathcal E_{ax+bx^2}=b^2
  \mathcal E_{x^2}` at every end point and at random points.
* **Thm. 3** with the nodes of ``li2.thm3`` (:func:`verify.claims.li2._irrep_nodes.float_nodes`):
  the least-squares residual :math:`\|\hat Y-\tilde Y\|/\|\tilde Y\|` of the first :math:`K=2
  \sum_{k\ne0}m_k^2d_k^2` nodes :math:`[\mathbf u;\pm P\bar{\mathbf u}]` (complex, holomorphic
  :math:`\sigma`: the polynomial activations) and of the real nodes
  :math:`[\mathbf u;\pm P\mathbf u']`, with features :math:`\sigma(X\mathbf w)`.

The items of :math:`x^2` and, for Thm. 2, of :math:`ax+bx^2` decide the verdict, and so do
ReLU's and SiLU's (below); Thm. 3 for :math:`ax+bx^2` stays a probe (``run.assume(...,
probe=True)``). The map is drawn as heatmaps and figures, with the smallest group where each
statement breaks.

**ReLU and SiLU: how each statement reads for a non-quadratic** :math:`\sigma` (verdict items;
each says its reading in its note):

* **Thm. 2, reading A**: the same points, :math:`x^2`'s maxima :math:`[\mathbf u;\pm P
  \mathbf u]` (the shared ascent's classes), are local maxima of :math:`\mathcal E_\sigma`:
  critical to :math:`\sqrt u`, no positive tangent Hessian eigenvalue; for ReLU at a kink, every
  sampled one-sided tangent derivative negative (a positive one is an ascent direction, a
  counterexample). One item per (activation, group), one entry per maximum.
* **Thm. 2, reading B**: every local maximum of
  :math:`\mathcal E_\sigma` lies in one nontrivial isotypic component. Random-start ascent of
  :math:`\mathcal E_\sigma`, then saddle-free Newton steps to rounding
  (:func:`numerics.li2.sphere_newton.newton_polish`); the end points that pass the
  second-order test with a Newton distance :math:`g/\mu\le10^{-6}` are certified maxima, and
  the mass each has outside its dominant real component is compared with 0. The energies are
  not compared (:math:`M/(8d_k)` is :math:`x^2`'s). ReLU: its energies are quadratic on each
  region where no pre-activation changes sign, so a point is certified only when its critical
  point lies in the same open region and the Hessian is not 0 (a dead node, :math:`\mathcal
  E=0`, passes the test vacuously); its maxima sit on kinks, none is certified, the items are
  undecided.
* **Thm. 3**: the construction's real nodes :math:`[\mathbf u;\pm P\mathbf u']` with
  features :math:`\sigma(X\mathbf w)` reconstruct :math:`\tilde Y` (:math:`\eta=0`); a fit of
  rank :math:`n-1` memorises and is undecided.
* **Thm. 4** (samples needed to keep the irrep maxima): the law holds for :math:`\sigma` with a
  constant no larger than :math:`x^2`'s. From each maximum :math:`x^2` has, monotone ascent of
  the empirical energy :math:`\hat{\mathcal E}_\sigma`
  (:func:`numerics.li2.subsampled_energy.subsampled_energy` with ``act``) on the full data and
  on coupled Bernoulli subsamples at ratios :math:`c\ln M/M`; a start is retained when its end
  point keeps 0.9 of its norm in the maximum's real isotypic component (``li2.thm4``'s test).
  Refuted when an exact one-sided sign test on the discordant (subsample, maximum) pairs
  says :math:`\sigma` keeps fewer than :math:`x^2` on the same subsamples (Bonferroni over the
  items), or a start is lost at full data; confirmed when :math:`\sigma` keeps at least as
  many; undecided between, or where :math:`x^2` keeps none.
* **Thm. 7** (top-down modulation): the hidden layer has learned the first nontrivial real
  component (``li2.thm7``'s nodes :math:`[\mathbf b_a;\pm P\mathbf b_c]`), the top layer is the
  least-squares fit on the features :math:`\sigma(X\mathbf w)`, :math:`R` its residual; the
  local maxima of :math:`\mathcal E_{\mathcal S}=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2`
  (:func:`numerics.li2.top_down.modified_energy`) lie on missing components only. Ascent from
  random starts, Newton steps, the certified maxima's dominant components. :math:`x^2` is the
  anchor (it passes); ReLU as in reading B: nothing certified (kinks), undecided.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from numerics.activations import Activation, activation
from numerics.li2.activation_probe import (
    activation_features,
    quadratic,
    quadratic_rounding_scale,
    relu_directional_derivatives,
)
from numerics.li2.batched_ascent import ascend_sphere_active
from numerics.li2.group_task import GroupTask, first_layer, group_energy, group_task
from numerics.li2.landscape import (
    energy_and_riemannian_gradient,
    energy_hessian_by_rows,
    find_local_maxima,
    purity,
    riemannian_hessian,
    tangent_spectrum,
)
from numerics.li2.sphere_newton import newton_polish
from numerics.li2.subsampled_energy import (
    ascend_monotone,
    component_purity,
    pairs_by_target,
    subsampled_energy,
)
from numerics.li2.target_reconstruction import LeastSquares, centre, centred_targets, least_squares
from numerics.li2.top_down import (
    centred_labels,
    component_mass,
    modified_energy,
    subset_nodes,
    top_layer_fit,
)
from numerics.random import make_generator
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, real_irreps
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    FALSE_ALARM,
    Evidence,
    Heatmap,
    IntRange,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    conditioned,
    register,
    undecided,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import ONE_SMALL_GROUP, build_group, float_projectors
from verify.claims.li2._irrep_nodes import float_nodes
from verify.claims.li2._landscape import (
    ASCENT,
    TimedLandscape,
    landscape,
    landscape_seed,
    maxima,
)
from verify.claims.li2._printed_forms import (
    stated_max_energy,
    stated_node_count,
    stated_residual,
)

# --- the paper's forms ------------------------------------------------------------------------


def stated_energy_scale(a: float, b: float) -> float:
    r"""Thm. 2's extension: the linear part of :math:`ax+bx^2` cancels, so
    :math:`\mathcal E_{ax+bx^2}=b^2\,\mathcal E_{x^2}` (the maxima stay, the energies scale)."""
    return b * b


def linear_in_b_scale(a: float, b: float) -> float:
    r"""Planted error: the energy scales with :math:`|b|`, not :math:`b^2`."""
    return abs(b)


#: Activations with kinks: the energies are quadratic on each region where no pre-activation
#: changes sign, and a second-order test certifies a maximum only inside one
#: (:func:`_certified`); a maximum on a kink is left uncertified.
KINKED = ("relu",)

def stated_keeps_maxima() -> int:
    r"""Thm. 2 for :math:`\sigma` (reading A): each of :math:`x^2`'s maxima
    :math:`[\mathbf u;\pm P\mathbf u]` is a local maximum of :math:`\mathcal E_\sigma`
    (1: yes)."""
    return 1


def stated_leak() -> int:
    r"""Thm. 2 for :math:`\sigma` (reading B): the mass of a local maximum of
    :math:`\mathcal E_\sigma` outside its one isotypic component :math:`\mathcal H_k`."""
    return 0


def stated_retention_gap() -> int:
    r"""Thm. 4 for :math:`\sigma`: the fraction of irrep maxima :math:`\sigma` keeps on a
    subsample minus the fraction :math:`x^2` keeps on the same one is at least this."""
    return 0


def stated_missing_fraction() -> int:
    r"""Thm. 7 for :math:`\sigma`: the fraction of the local maxima of
    :math:`\mathcal E_{\mathcal S}` on missing irreps ("only on the missing irreps")."""
    return 1


#: The anchor, the stated activation: x^2 is ax + bx^2 with (a, b) = (0, 1).
ANCHOR = (0.0, 1.0)


def _label(a: float, b: float) -> str:
    return "x^2" if (a, b) == ANCHOR else quadratic(a, b).name


# --- Thm. 2, inside the statement: x^2 and ax + bx^2 ------------------------------------------


def _quadratic_landscape(run: Run, name: str, a: float, b: float) -> TimedLandscape:
    """The ascent of :func:`verify.claims.li2._landscape.landscape` (same starts, settings and
    seed) on the energy of ``ax + bx^2``; x^2 itself is that shared ascent."""
    if (a, b) == ANCHOR:
        return landscape(run, name)
    p = run.params
    args = (name, a, b, p["starts"], p["lr_scale"], p["max_steps"], p["gtol_u"],
            p["hessian_samples"], landscape_seed(run, name))
    return run.memo("li2 quadratic landscape",
                    lambda: _ascend_quadratic(*args, run.device, run.dtype), key=args,
                    scope="process")


def _ascend_quadratic(name: str, a: float, b: float, starts: int, lr_scale: float,
                      max_steps: int, gtol_u: float, hessian_samples: int, seed: int,
                      device: torch.device, dtype: torch.dtype) -> TimedLandscape:
    G = build_group(name)
    task = group_task(G.table, device=device)
    # E_{ax+bx^2} = b^2 E_{x^2} on the full task (the extension), so its gradient and Hessian
    # are b^2 times those of x^2: x^2's step and gradient floor (see _landscape) scaled by
    # 1/b^2 and b^2 keep lr |lambda| <= 1.6 and the margin above rounding. Should the scaling
    # fail, the monotonicity record (Run.ran) and the scaling item show it.
    scale = b * b
    lr = lr_scale / (scale * G.order)
    gtol = gtol_u * unit_roundoff(dtype) * G.order * scale
    start = time.perf_counter()
    result = find_local_maxima(
        task, quadratic(a, b), starts, make_generator(seed), lr=lr, max_steps=max_steps,
        gtol=gtol, projectors=float_projectors(G, device, dtype),
        energy_rtol=100 * unit_roundoff(dtype) ** 0.5, hessian_samples=hessian_samples,
        dtype=dtype, chunk_elements=2**26 if device.type == "cuda" else 2**18,
        ascend=ascend_sphere_active, hessian=energy_hessian_by_rows)
    return TimedLandscape(result, time.perf_counter() - start, lr, gtol)


@dataclass
class Cell:
    """One (activation, group) cell of the map: whether each statement held, and why."""

    thm2: bool | None = None  # the maxima's structure (irrep-supported; probes: survive)
    thm2_detail: str = ""
    thm2_energy: bool | None = None  # E* = stated (inside the statement only)
    thm2b: bool | None = None  # reading B: sigma's certified maxima in one component
    thm2b_detail: str = ""
    energy_ratio: float = float("nan")  # E* measured / stated, worst class
    thm3_real: float = float("nan")  # relative residual, real nodes [u; +-Pu']
    thm3_complex: float = float("nan")  # relative residual, first K complex nodes
    thm3: bool | None = None
    thm3_detail: str = ""
    thm4: bool | None = None  # irrep maxima retained on subsamples as often as with x^2
    thm4_retained: float = float("nan")  # fraction retained at the smallest ratio
    thm4_detail: str = ""
    thm7: bool | None = None  # the modulated energy's maxima on missing irreps only
    thm7_missing: float = float("nan")  # fraction of end points on a missing irrep
    thm7_detail: str = ""


def _energy_tolerance(run: Run, task: GroupTask, a: float, b: float, classes) -> Tolerance:
    # Rounding: E errs by at most about 2 (n + M + 4) u S, S = quadratic_rounding_scale (the
    # absolute sums of sigma's terms and of the centred label sums; Higham ch. 3), so relatively
    # 2 (n + M + 4) u S / E. Convergence: at Riemannian gradient norm g near a Morse-Bott
    # maximum whose smallest non-zero |eigenvalue| is mu, E* - E <= g^2 / (2 mu).
    u = unit_roundoff(run.dtype)
    worst = 0.0
    for c in classes:
        mu = float(c.spectra.abs()[c.spectra.abs() > c.null_threshold].min())
        w = c.representative.to(device=task.device, dtype=run.dtype)[None]
        S = float(quadratic_rounding_scale(w, task, a, b)[0])
        worst = max(worst, c.grad_norm**2 / (2 * mu * c.energy)
                    + 2 * (task.n + task.M + 4) * u * S / c.energy)
    return Tolerance(worst, f"rounding 2(n+M+4) u S/E (S: absolute sums of sigma's terms, "
                            f"u={u:.1e}) plus convergence g^2/(2 mu E), worst class")


def _thm2_inside(run: Run, G: FiniteGroup, name: str, a: float, b: float,
                 cell: Cell) -> Iterator[Evidence]:
    label = _label(a, b)
    tl = _quadratic_landscape(run, name, a, b)
    L, M = tl.landscape, G.order
    task = group_task(G.table, device=run.device)
    reals = real_irreps(G)
    converged = int(L.ascent.converged.sum())
    if not run.ran(f"{label}, {name}: ascent converged", converged == len(L.ascent.converged),
                   f"{converged} of {len(L.ascent.converged)} starts reached gtol in "
                   f"{L.ascent.steps} steps"):
        cell.thm2_detail = "ascent did not converge"
        return
    # as li2.thm2: E never decreased by more than rounding, 1e3 u M, times b^2 (E's scale)
    decrease = float(L.ascent.largest_decrease.max())
    if not run.ran(f"{label}, {name}: ascent monotone",
                   decrease <= 1e3 * unit_roundoff(run.dtype) * M * b * b,
                   f"largest decrease of E {decrease:.2e}"):
        cell.thm2_detail = "ascent not monotone"
        return
    found = maxima(tl)
    missing = sorted(set(range(1, len(reals))) - {c.component for c in found})
    run.assume(f"{label}, {name}: every nontrivial real irrep reached", not missing,
               "some start ended at a maximum in each nontrivial real isotypic component",
               f"components not reached: {missing}")
    if not found:
        return
    scale = run.stated["energy_scale"](a, b)
    stated = [float(scale * run.stated["E_star"](M, reals[c.component].source.dim,
                                                  reals[c.component].type)) / M for c in found]
    measured = [c.energy / M for c in found]
    energies = compare(
        Route.NUMERIC, f"{label}, {name}: E*/M at the distinct maxima found by ascent",
        stated=stated, measured=measured,
        tolerance=_energy_tolerance(run, task, a, b, found),
        parameters={"activation": label, "group": name, "starts": run.params["starts"],
                    "maxima": [(c.component, reals[c.component].type,
                                reals[c.component].source.dim) for c in found]},
        note="stated: Thm. 2's M/(8d_k) or M/(16d_k), times b^2 for ax + bx^2")
    yield energies
    # A maximum is "pure" when both blocks lie in one real component up to sqrt(u) (as in
    # li2.thm2: a converged point is within (g/mu)^2 + M u of its component, a mixed one
    # misses by O(1)).
    delta = unit_roundoff(run.dtype) ** 0.5
    impure = [c for c in found if min(c.purity_u, c.purity_v) < 1 - delta]
    yield compare(
        Route.NUMERIC, f"{label}, {name}: maxima not concentrated in one real isotypic "
                       f"component", stated=0.0, measured=float(len(impure)),
        metric="absolute", tolerance=Tolerance(0.0, "a count"),
        parameters={"activation": label, "group": name, "purity_tol": delta})
    ratios = [m / s for m, s in zip(measured, stated)]
    cell.energy_ratio = max(ratios, key=lambda r: abs(r - 1))
    cell.thm2 = not impure and not missing
    cell.thm2_energy = energies.ok
    # li2.thm2's form test (residual <= sqrt(u)), reported here, decided there
    form = sum(bool((L.form[c.members.to(L.form.device)] <= delta).all()) for c in found)
    cell.thm2_detail = (f"{len(found)} maxima, {len(impure)} impure, {form} of the form "
                        f"[u; +-Pu]; E*/stated {sorted({round(r, 6) for r in ratios})}")
    if (a, b) != ANCHOR:
        yield from _energy_scaling(run, task, name, a, b, L.ascent.w)


def _energy_scaling(run: Run, task: GroupTask, name: str, a: float, b: float,
                    ends: torch.Tensor) -> Iterator[Evidence]:
    """E_{ax+bx^2} = scale(a, b) E_{x^2} at the ascent's end points and at random points of
    the sphere (the extension's mechanism: the linear part cancels for every w)."""
    random = torch.randn(run.params["scaling_points"], 2 * task.M,
                         generator=run.generator(f"scaling:{name}"), dtype=torch.float64)
    w = torch.cat([ends.to(torch.float64).cpu(), random / random.norm(dim=-1, keepdim=True)])
    w = w.to(device=task.device, dtype=run.dtype)
    e_quadratic = group_energy(w, task, quadratic(a, b))
    e_square = group_energy(w, task, activation("x2"))
    scale = run.stated["energy_scale"](a, b)
    # each energy errs by 2 (n + M + 4) u S (see _energy_tolerance); relative to E, worst point
    u = unit_roundoff(run.dtype)
    n, M = task.n, task.M
    rel = (2 * (n + M + 4) * u * (quadratic_rounding_scale(w, task, a, b) / e_quadratic
                                  + quadratic_rounding_scale(w, task, 0.0, 1.0) / e_square))
    yield compare(
        Route.NUMERIC, f"{_label(a, b)}, {name}: E_(ax+bx^2)(w) vs stated scale x E_(x^2)(w), "
                       f"at every end point and {run.params['scaling_points']} random w",
        stated=(scale * e_square).tolist(), measured=e_quadratic.tolist(),
        tolerance=Tolerance(float(rel.max()), "rounding of both energies, 2(n+M+4) u S/E "
                                              "each, worst point"),
        parameters={"activation": _label(a, b), "group": name, "points": int(w.shape[0])},
        note="Thm. 2's extension: the linear part cancels under the centred labels")


# --- Thm. 2 for a non-quadratic sigma: ReLU, SiLU (verdict items) ----------------------------


def _thm2_sigma(run: Run, G: FiniteGroup, name: str, act: Activation, cell: Cell
                ) -> Iterator[Evidence]:
    """Reading A of Thm. 2 for sigma: do the maxima x^2 has (the shared ascent's classes) stay
    local maxima of E_sigma? A point that is not critical, or has a positive tangent Hessian
    eigenvalue, or (ReLU, at a kink) a tangent direction of positive one-sided derivative, is
    a counterexample (each is an ascent direction of E_sigma); a kink point whose sampled
    one-sided derivatives are all negative is a sharp maximum (on the sampled directions)."""
    found = maxima(landscape(run, name))
    if not found:
        cell.thm2_detail = "no x^2 maximum to test"
        return
    task = group_task(G.table, device=run.device)
    w = torch.stack([c.representative for c in found]).to(device=task.device, dtype=run.dtype)
    e, g = energy_and_riemannian_gradient(w, task, act)
    x = w.detach().requires_grad_(True)
    (full,) = torch.autograd.grad(group_energy(x, task, act).sum(), x)
    scale = full.norm(dim=-1).clamp(min=torch.finfo(run.dtype).tiny)
    spectra = tangent_spectrum(w, riemannian_hessian(w, task, act, energy_hessian_by_rows))
    # x^2's maxima are converged to g ~ 1e4 u M, so under sigma a point that stays critical
    # carries a gradient O(1e4 u M) relative to |grad E|, one that does not carries O(1):
    # sqrt(u) separates the two by orders of magnitude either way. The same threshold, times
    # |grad E|, separates a one-sided derivative from 0.
    u = unit_roundoff(run.dtype)
    ratio = g.norm(dim=-1) / scale
    top = spectra.max(-1).values
    smooth_max = (ratio <= u**0.5) & (top <= u**0.5 * spectra.abs().max(-1).values)
    verdicts: list[bool | None] = [bool(m) for m in smooth_max]
    z = w[:, task.left] + w[:, task.right + task.M]
    # a representative lies within ~g/mu (~1e-12) of its exact point: sqrt(u) max|z| catches
    # the pre-activations on ReLU's kink and no others (the rest are O(1/sqrt(M)))
    kinks = (z.abs() <= u**0.5 * z.abs().amax(-1, keepdim=True)).sum(-1)
    slopes = [float("nan")] * len(found)
    if act.name == "relu" and bool((kinks > 0).any()):
        xi = torch.randn(w.shape[0], run.params["probe_directions"], w.shape[1],
                         generator=run.generator(f"directions:{name}"), dtype=torch.float64)
        xi = torch.cat([g[:, None].cpu(), -g[:, None].cpu(), xi, -xi], 1).to(w)
        xi = xi - (xi * w[:, None]).sum(-1, keepdim=True) * w[:, None]
        xi = xi / xi.norm(dim=-1, keepdim=True)
        D = relu_directional_derivatives(w, xi, task, u**0.5 * float(z.abs().amax()))
        for i in (kinks > 0).nonzero().flatten().tolist():
            slopes[i] = float(D[i].max())
            tol = u**0.5 * float(scale[i])
            # every sampled slope < 0: a sharp maximum; one > 0: an ascent direction
            verdicts[i] = True if slopes[i] < -tol else False if slopes[i] > tol else None
    cell.thm2 = False if False in verdicts else None if None in verdicts else True
    reals = real_irreps(G)
    rows = [{"component": c.component, "type": reals[c.component].type,
             "d": reals[c.component].source.dim, "E_sigma/M": float(e[i]) / G.order,
             "|grad_R| / |grad|": float(ratio[i]),
             "largest tangent Hessian eigenvalue": float(top[i]),
             "pre-activations on the kink": int(kinks[i]) if act.name == "relu" else 0,
             "largest one-sided slope (kink points)": slopes[i],
             "local maximum": verdicts[i]} for i, c in enumerate(found)]
    kept = sum(v is True for v in verdicts)
    cell.thm2_detail = f"{kept} of {len(rows)} x^2 maxima stay local maxima of E_{act.name}: " \
        + ", ".join(f"{r['type']}{r['component']} (d={r['d']}): {r['local maximum']}"
                    for r in rows)
    run.figure(f"{act.name}, {name}: Thm. 2 (reading A) at x^2's maxima", rows)
    stated = float(run.stated["keeps_maxima"]())
    yield compare(
        Route.NUMERIC, f"{act.name}, {name}: each of x^2's maxima a local maximum of "
                       f"E_{act.name} (reading A; 1 yes, 0 no)",
        stated=[stated] * len(found),
        measured=[float("nan") if v is None else float(v) for v in verdicts],
        metric="absolute", tolerance=Tolerance(0.0, "yes/no per maximum, from the tests above "
                                                    "(critical to sqrt(u), no positive tangent "
                                                    "eigenvalue / one-sided slope)"),
        parameters={"activation": act.name, "group": name, "M": G.order,
                    "maxima": [f"{r['type']}{r['component']} (d={r['d']})" for r in rows]},
        note=f"Thm. 2 read for sigma as: the same points [u; +-Pu], u in H_k (x^2's maxima), "
             f"are local maxima of E_sigma. {cell.thm2_detail}")


def _sigma_landscape(run: Run, name: str, act: Activation) -> dict:
    """Random-start ascent of E_sigma, then saddle-free Newton to rounding
    (:func:`numerics.li2.sphere_newton.newton_polish`); per end point its energy, gradient
    norm, tangent spectrum and mass per real isotypic component (memoised: no stated form
    enters)."""
    p = run.params
    G = build_group(name)
    M = G.order
    task = group_task(G.table, device=run.device)
    opts = {"device": run.device, "dtype": run.dtype}
    w0 = torch.randn(p["sigma_starts"], 2 * M, generator=run.generator(f"sigma starts:{name}"),
                     dtype=torch.float64).to(**opts)
    w0 = w0 / w0.norm(dim=-1, keepdim=True)
    # step: x^2's lr_scale / M times E_x2 / E_sigma at the starts (the Hessian scales with E;
    # near 0 SiLU is x/2 + x^2/4 + O(x^4), pre-activations being O(1/sqrt M) on the sphere,
    # so the ratio is about 16); the ascent need not converge: the Newton steps finish the
    # job, and a start that does not reach a maximum is counted apart, never as one
    ratio = float(group_energy(w0, task, activation("x2")).max()
                  / group_energy(w0, task, act).max())
    lr = p["lr_scale"] / M * ratio
    result = ascend_sphere_active(w0, task, act, lr, p["sigma_steps"],
                                  unit_roundoff(run.dtype) ** 0.5,
                                  2**26 if run.device.type == "cuda" else 2**18)
    polished = newton_polish(result.w, lambda x: group_energy(x, task, act), p["newton_steps"])
    P = float_projectors(G, **opts)
    w = polished.w
    mass = (purity(w[:, :M], P) * w[:, :M].square().sum(-1, keepdim=True)
            + purity(w[:, M:], P) * w[:, M:].square().sum(-1, keepdim=True))
    return {"w": w.cpu(), "energy": polished.energy.cpu(), "grad": polished.grad_norm.cpu(),
            "kink_gap": first_layer(w, task).abs().amin(-1).cpu(),
            "spectrum": polished.spectrum.cpu(), "mass": mass.cpu(), "lr": lr,
            "newton_steps": polished.steps}


def _thm2_sigma_maxima(run: Run, G: FiniteGroup, name: str, act: Activation, cell: Cell
                       ) -> Iterator[Evidence]:
    """Reading B of Thm. 2 for sigma: every local maximum of E_sigma lies in one nontrivial
    real isotypic component (both blocks). The end points of ascent + Newton that pass
    :func:`_certified` (critical to rounding, no positive tangent Hessian eigenvalue, a
    nonzero Hessian; ReLU: inside one region without a kink) are certified local maxima; the
    mass each has outside its dominant component is compared with 0 (undecided when none is
    certified)."""
    L = run.memo("li2 sigma landscape", lambda: _sigma_landscape(run, name, act),
                 key=(name, act.name))
    u = unit_roundoff(run.dtype)
    spectrum, grad, mass = L["spectrum"], L["grad"], L["mass"]
    # certified: no tangent eigenvalue above sqrt(u) |lambda|_max (li2.thm2's test), and a
    # Newton step to the exact critical point, g / mu, below 1e-6 (far below the leaks)
    strict, ratio = _certified(spectrum, grad, u,
                               L["kink_gap"] if act.name in KINKED else None)
    quantity = (f"{act.name}, {name}: mass outside one real isotypic component at the "
                f"certified local maxima of E_{act.name} (reading B)")
    if not bool(strict.any()):
        yield undecided(Route.NUMERIC, quantity, f"none of {len(strict)} end points of ascent "
                        f"+ Newton is a certified local maximum of E_{act.name} (largest "
                        f"|grad_R| {float(grad.max()):.1e}; ReLU: maxima on a kink are not "
                        f"certified)", tolerance=Tolerance(0.0, "a mass"),
                        parameters={"activation": act.name, "group": name, "M": G.order})
        return
    reals = real_irreps(G)
    dominant = mass.argmax(-1)
    leak = 1 - mass.max(-1).values
    rows, stated, measured, tolerance = [], [], [], 0.0
    # distinct maxima: same dominant component, energies within 1e-9 (relative)
    seen: list[int] = []
    for i in L["energy"].argsort(descending=True).tolist():
        if not bool(strict[i]) or any(
                int(dominant[i]) == int(dominant[j])
                and abs(float(L["energy"][i] - L["energy"][j])) <= 1e-9 * float(L["energy"][i])
                for j in seen):
            continue
        seen.append(i)
        c = int(dominant[i])
        second = mass[i].clone()
        second[c] = -1
        to = int(second.argmax())
        # distance to the exact maximum <= g/mu (Newton); the leak is the squared distance to
        # the component's subspace, so it moves by at most 2 sqrt(leak) (g/mu) + (g/mu)^2,
        # and rounding of the projections adds ~10 M u
        r = float(ratio[i])
        tolerance = max(tolerance, 2 * float(leak[i].clamp(min=0)) ** 0.5 * r + r * r
                        + 10 * G.order * u)
        stated.append(float(run.stated["leak"]()))
        measured.append(float(leak[i]))
        rows.append({"component": f"{reals[c].type}{c} (d={reals[c].source.dim})",
                     "E_sigma/M": float(L["energy"][i]) / G.order, "leak": float(leak[i]),
                     "leak into the trivial component": float(mass[i, 0]),
                     "leak into other nontrivial components":
                     float(1 - mass[i, c] - mass[i, 0]) if c != 0 else float(leak[i]),
                     "smallest |pre-activation|": float(L["kink_gap"][i]),
                     "largest other component": f"{reals[to].type}{to}",
                     "|grad_R|": float(grad[i]), "largest tangent eigenvalue":
                     float(spectrum[i].max()), "Newton distance g/mu": float(ratio[i]),
                     "starts": int((dominant == c).logical_and(strict).sum())})
    run.figure(f"{act.name}, {name}: Thm. 2 (reading B), certified maxima of E_{act.name}",
               rows)
    bad = [r for r in rows if r["leak"] > tolerance]
    cell.thm2b = not bad
    cell.thm2b_detail = ", ".join(f"{r['component']}: leak {r['leak']:.2e} "
                                  f"({r['leak into the trivial component']:.2e} to the trivial "
                                  f"component), most to {r['largest other component']}"
                                  for r in rows)
    yield compare(
        Route.NUMERIC, quantity, stated=stated, measured=measured, metric="absolute",
        tolerance=Tolerance(tolerance, "Newton distance g/mu to the exact maximum moves the "
                                       "leak by 2 sqrt(leak) g/mu + (g/mu)^2; rounding 10 M u"),
        parameters={"activation": act.name, "group": name, "M": G.order,
                    "maxima": [r["component"] for r in rows],
                    "certified": int(strict.sum()), "starts": len(strict)},
        note=f"Thm. 2 read for sigma as: every local maximum of E_sigma lies in one "
             f"nontrivial isotypic component (u, v in H_k); energies not compared (M/(8d_k) "
             f"is x^2's). {cell.thm2b_detail}")


# --- Thm. 3 ------------------------------------------------------------------------------------


def _fit(run: Run, W: torch.Tensor, task: GroupTask, act: Activation) -> LeastSquares:
    # rcond sqrt(u) as li2.thm3: exact zeros of the spectrum come out near u s_max
    F = centre(activation_features(W, task, act))
    return least_squares(F, centred_targets(task, run.dtype), unit_roundoff(run.dtype) ** 0.5)


def _thm3(run: Run, G: FiniteGroup, name: str, acts: dict[str, tuple[Activation, bool]],
          cells: dict[str, Cell]) -> Iterator[Evidence]:
    task = group_task(G.table, device=run.device)
    K = run.stated["K"]([r.dim for r in irreps(G)][1:])
    complex_nodes, _ = float_nodes(G, task, "complex-conjugate", dtype=run.dtype)
    real_nodes, _ = float_nodes(G, task, "real-perturbed", run.generator(f"perturbation:{name}"),
                                run.dtype, run.params["perturbation"])
    yield compare(
        Route.NUMERIC, f"{name}: stated K vs the nodes [u; +-P conj(u)] the construction has",
        stated=float(K), measured=float(complex_nodes.shape[0]), metric="absolute",
        tolerance=Tolerance(0.0, "integers"), parameters={"group": name})
    residual = float(run.stated["residual"]())
    for label, (act, polynomial) in acts.items():
        cell = cells[label]
        fits = {"real": _fit(run, real_nodes, task, act)}
        if polynomial:
            fits["complex"] = _fit(run, complex_nodes[:K], task, act)
        cell.thm3_real = fits["real"].relative_residual
        cell.thm3_complex = fits["complex"].relative_residual if polynomial else float("nan")
        tolerances = {r: conditioned(run.dtype, ls.condition, task.n, f"{r} least squares")
                      for r, ls in fits.items()}
        # a rank of n - 1 (the centred sample space) fits any target: memorisation, which
        # decides nothing about Thm. 3 (e.g. Z3's 8 real nodes); a reading that misses the
        # targets breaks it, one that fits them below full rank upholds it
        trivial = {r: ls.rank >= task.n - 1 for r, ls in fits.items()}
        fitted = {r: ls.relative_residual <= tolerances[r].value for r, ls in fits.items()}
        cell.thm3 = (False if not all(fitted.values())
                     else True if any(not trivial[r] for r in fits) else None)
        cell.thm3_detail = "; ".join(
            f"{r}: residual {ls.relative_residual:.2e}, rank {ls.rank} of n - 1 = {task.n - 1}"
            f"{' (memorises)' if trivial[r] else ''}" for r, ls in fits.items())
        if label != "x^2" and polynomial:
            run.assume(f"{label}, {name}: Thm. 3's reconstruction (probe)", cell.thm3 is True,
                       f"Thm. 3 is stated for x^2; with {label} the same nodes give "
                       f"Yhat = Yt", cell.thm3_detail, probe=True)
            continue
        if not polynomial:
            # ReLU, SiLU: a verdict item with the real nodes, unless they memorise (rank
            # n - 1 fits any target: nothing about Thm. 3 is decided, e.g. Z3's 8 nodes)
            ls = fits["real"]
            quantity = (f"{label}, {name}: |Yhat - Yt|/|Yt| with the real nodes [u; +-Pu'] "
                        f"and features {label}(Xw)")
            detail = {"activation": label, "group": name, "M": G.order,
                      "K": int(real_nodes.shape[0]), "rank": ls.rank, "n - 1": task.n - 1}
            if trivial["real"]:
                yield undecided(Route.NUMERIC, quantity, f"the {real_nodes.shape[0]} nodes "
                                f"memorise (rank {ls.rank} = n - 1): any target is fitted",
                                tolerance=tolerances["real"], parameters=detail)
                continue
            yield compare(
                Route.NUMERIC, quantity, stated=residual, measured=ls.relative_residual,
                metric="absolute", tolerance=tolerances["real"], parameters=detail,
                note=f"Thm. 3 read for sigma as: the construction's nodes (u spanning each "
                     f"End(H_k), second block +-Pu' with u' a perturbation of u), features "
                     f"sigma(Xw), eta = 0 least squares, reconstruct Yt. {cell.thm3_detail}")
            continue
        described = {"complex": ("first K (stated) nodes [u; +-P conj(u)]", K),
                     "real": ("real nodes [u; +-Pu']", real_nodes.shape[0])}
        for r, ls in fits.items():
            run.assume(f"x^2, {name} ({r} nodes): numerical rank well separated",
                       ls.gap >= 1e3, "smallest kept singular value / largest dropped >= 1e3",
                       f"rank {ls.rank}, gap {ls.gap:.2e}")
            yield compare(
                Route.NUMERIC, f"x^2, {name}: |Yhat - Yt|/|Yt| with the {described[r][0]}",
                stated=residual, measured=ls.relative_residual, metric="absolute",
                tolerance=tolerances[r],
                parameters={"group": name, "K": int(described[r][1]), "rank": ls.rank})


# --- Thm. 4: samples needed to keep the irrep maxima -----------------------------------------


def _thm4_retention(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation],
                    found: list) -> tuple[list[float], dict[str, torch.Tensor], dict[str, dict]]:
    """The ratios, and per activation whether each (ratio, subsample, maximum) start is
    retained (``(R, S, B)``) with its figure row (memoised: no stated form enters)."""
    p, M = run.params, G.order
    opts = {"device": run.device, "dtype": run.dtype}
    right = pairs_by_target(G.table).to(run.device)
    projectors = float_projectors(G, **opts)[[c.component for c in found]]
    vertices = torch.stack([c.representative for c in found]).to(**opts)
    ratios = [1.0] + [min(1.0, c * math.log(M) / M) for c in p["thm4_multiples"]]
    S = p["thm4_subsamples"]
    gen = run.generator(f"thm4 subsamples:{name}")
    U = torch.rand(S, M, M, generator=gen, dtype=torch.float64)
    # the empirical energy needs at least 2 kept pairs (centred labels): a subsample that
    # keeps fewer at the smallest ratio (the masks are nested) is drawn again, so the
    # subsamples are Bernoulli ones conditioned on n >= 2 (at Z4: 1% of draws at c = 1, 20%
    # at c = 0.5; 7% at Z5 and 2% at M = 6 with c = 0.5)
    for _ in range(1000):
        short = ((U < min(ratios)).sum((-1, -2)) < 2).nonzero().flatten()
        if not len(short):
            break
        U[short] = torch.rand(len(short), M, M, generator=gen, dtype=torch.float64)
    U = U.to(**opts)
    mask = torch.stack([(U < r).to(run.dtype) for r in ratios])[:, :, None]  # (R, S, 1, M, M)
    start = vertices.expand(len(ratios), S, *vertices.shape)
    full = torch.ones(M, M, **opts)
    x2_scale = float(subsampled_energy(vertices, right, full).max())
    retained, rows = {}, {}
    for label, act in acts.items():
        # lr as li2.thm4 (lr_scale / M) for x^2, scaled by x^2's energy over sigma's at the
        # maxima (the Hessian scales with E); ascend_monotone halves any step that lowers E
        scale = float(subsampled_energy(vertices, right, full, act=act).max())
        lr = p["lr_scale"] / M * x2_scale / scale
        result = ascend_monotone(start, lambda x, a=act: subsampled_energy(x, right, mask, act=a),
                                 lr, p["thm4_steps"], p["thm4_gtol"])
        kept = component_purity(result.w, projectors) >= p["thm4_purity"]  # (R, S, B)
        retained[label] = kept
        rows[label] = {"ratios": ratios,
                       "fraction retained": kept.double().mean((1, 2)).tolist(),
                       "largest grad norm": float(result.grad_norm.max())}
    return ratios, retained, rows


def _sign_test(worse: int, better: int) -> float:
    """One-sided exact sign test on the discordant pairs: P(Bin(worse + better, 1/2) >=
    worse), the chance of at least ``worse`` of them going against sigma if sigma and x^2
    kept the maxima equally often."""
    n = worse + better
    return sum(math.comb(n, k) for k in range(worse, n + 1)) / 2**n if n else 1.0


def _thm4_sigma(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation],
                cells: dict[str, Cell]) -> Iterator[Evidence]:
    """Start at x^2's maxima (the shared ascent's classes) and ascend each activation's
    empirical energy on the full data and on coupled Bernoulli subsamples at ratios
    c ln M / M; a start is retained when the end point keeps >= purity_min of its norm in the
    maximum's real isotypic component (li2.thm4's test). Reading for sigma: the same law with
    no larger constant, i.e. on the same subsamples sigma keeps the maxima at least as often
    as x^2; decided by an exact sign test on the discordant (subsample, maximum) pairs."""
    found = maxima(landscape(run, name))
    if not found:
        return
    p = run.params
    ratios, retained, rows = run.memo(
        "thm4 beyond x^2", lambda: _thm4_retention(run, G, name, acts, found),
        key=(name, tuple(acts), p["thm4_subsamples"]))
    base = rows["x^2"]["fraction retained"][1:]
    # only ratios where x^2 keeps some maximum and loses some compare anything (at quick
    # sizes, M <= 8, the ratios c ln M / M are large fractions and x^2 itself may lose every
    # maximum)
    informative = [i for i, f in enumerate(base) if f > 0]
    level = float(run.stated["retention_gap"]())
    tests = max(1, (len(acts) - 1) * len(p["thm4_7_groups"]))
    alpha = FALSE_ALARM / tests
    for label, kept in retained.items():
        cell = cells[label]
        frac = rows[label]["fraction retained"]
        cell.thm4_retained = frac[-1] if len(frac) > 1 else float("nan")
        cell.thm4_detail = (f"retained at p = {', '.join(f'{r:.3g}' for r in ratios)}: "
                            f"{', '.join(f'{f:.2f}' for f in frac)}")
        if label == "x^2":
            continue
        quantity = (f"{label}, {name}: retention of x^2's irrep maxima on subsamples, "
                    f"{label} minus x^2 on the same subsamples (Thm. 4 reading)")
        detail = {"activation": label, "group": name, "M": G.order,
                  "ratios": [ratios[1 + i] for i in informative],
                  "maxima": [c.component for c in found], "subsamples": p["thm4_subsamples"]}
        full_kept = bool(kept[0].all())
        if not informative:
            cell.thm4 = None
            yield undecided(Route.MONTE_CARLO, quantity, "x^2 itself keeps none of its maxima "
                            "on these subsamples: the comparison decides nothing",
                            tolerance=Tolerance(0.0, "a sign"), parameters=detail)
            continue
        x2 = retained["x^2"][[1 + i for i in informative]]
        sg = kept[[1 + i for i in informative]]
        worse = int((x2 & ~sg).sum())
        better = int((sg & ~x2).sum())
        pairs = int(x2.numel())
        pvalue = _sign_test(worse, better)
        gap = (better - worse) / pairs  # sigma's retention minus x^2's
        detail |= {"x^2 kept, sigma lost": worse, "sigma kept, x^2 lost": better,
                   "pairs": pairs, "p (one-sided sign test)": pvalue, "alpha": alpha,
                   "kept at full data": full_kept}
        tol = Tolerance(0.0, f"a sign: refuted when an exact one-sided sign test on the "
                             f"discordant pairs rejects 'sigma keeps as often' at "
                             f"{FALSE_ALARM:g}/{tests} (Bonferroni); confirmed when sigma "
                             f"keeps at least as often and every start at full data")
        if full_kept and gap >= level:
            cell.thm4, discrepancy = True, 0.0
        elif not full_kept or pvalue < alpha:
            cell.thm4, discrepancy = False, max(level - gap, 1.0 - float(kept[0].double().mean()))
        else:
            cell.thm4 = None
            yield undecided(Route.MONTE_CARLO, quantity, f"{label} lost {worse} and kept "
                            f"{better} of the discordant pairs: p = {pvalue:.3g} >= "
                            f"{alpha:.2g}", tolerance=tol, parameters=detail)
            continue
        yield Evidence(
            route=Route.MONTE_CARLO, quantity=quantity, stated=level, derived=None,
            measured=gap, metric="sign", discrepancy=discrepancy, tolerance=tol,
            parameters=detail, finite=True, comparisons={"stated~measured": discrepancy},
            note=f"Thm. 4 read for sigma as: the sample-size law holds with a constant no "
                 f"larger than x^2's, so sigma keeps the irrep maxima on the subsamples where "
                 f"x^2 does. {cell.thm4_detail} (x^2: "
                 f"{', '.join(f'{f:.2f}' for f in [1.0, *base])})")
    run.figure(f"{name}: Thm. 4 for sigma, x^2's maxima on subsamples", {
        "subsamples": p["thm4_subsamples"], "steps": p["thm4_steps"],
        "purity_min": p["thm4_purity"], "components": [c.component for c in found], **rows})


# --- Thm. 7: top-down modulation ------------------------------------------------------------


def _thm7_ascents(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation]
                  ) -> dict[str, dict]:
    """Per activation: the figure row of the E_S ascents (memoised: no stated form enters)."""
    p, M = run.params, G.order
    opts = {"device": run.device, "dtype": run.dtype}
    task = group_task(G.table, device=run.device)
    projectors = float_projectors(G, **opts)
    nodes = subset_nodes(projectors[1:2], task)
    w0 = torch.randn(p["thm7_starts"], 2 * M, generator=run.generator(f"thm7 starts:{name}"),
                     dtype=torch.float64).to(**opts)
    w0 = w0 / w0.norm(dim=-1, keepdim=True)
    rows = {}
    for label, act in acts.items():
        R = top_layer_fit(nodes, task, act).residual
        # step of size ~ lr_scale / (largest E at the starts): the sphere's curvature term
        # in the Hessian is E-sized; ascend_monotone halves any step that lowers E
        lr = p["lr_scale"] / float(modified_energy(w0, task, R, act).max())
        result = ascend_monotone(w0, lambda x, a=act, r=R: modified_energy(x, task, r, a), lr,
                                 p["thm7_steps"], p["thm7_gtol"])
        polished = newton_polish(result.w, lambda x, a=act, r=R: modified_energy(x, task, r, a),
                                 p["newton_steps"])
        gap = (first_layer(polished.w, task).abs().amin(-1) if label in KINKED else None)
        ok, _ = _certified(polished.spectrum, polished.grad_norm, unit_roundoff(run.dtype), gap)
        mass = component_mass(polished.w, projectors, M)
        dominant = mass.argmax(-1)
        rows[label] = {"fraction on a missing component": float((dominant >= 2).double().mean()),
                       "dominant components": sorted(set(dominant.tolist())),
                       "certified": int(ok.sum()),
                       "certified on a missing component": int((ok & (dominant >= 2)).sum()),
                       "dominant components (certified)": sorted(set(dominant[ok].tolist())),
                       "largest mass on the learned component": float(mass[:, 1].max()),
                       "largest grad norm": float(polished.grad_norm.max()),
                       "residual / |Yt|": float(R.norm() / centred_labels(task, run.dtype).norm())}
    return rows


def _certified(spectrum: torch.Tensor, grad: torch.Tensor, u: float,
               kink_gap: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Which end points pass the second-order test (no tangent Hessian eigenvalue above
    sqrt(u) times the largest |eigenvalue|: as li2.thm2's) with a Newton distance g/mu to the
    critical point below 1e-6 (mu the smallest |eigenvalue| above that threshold), and g/mu.

    ``kink_gap`` (ReLU: the smallest |pre-activation| of each end point): the energy is then
    quadratic on each region without a sign change, and autograd's gradient and Hessian are
    that quadratic's; a point is certified only when the critical point within g/mu of it
    lies in the same open region, sqrt(2) g/mu < kink_gap (|X xi| <= sqrt(2) |xi| for the
    one-hot pairs), so that it is a local maximum of the energy itself."""
    scale = spectrum.abs().amax(-1)
    null = spectrum.abs() <= u**0.5 * scale[:, None]
    mu = torch.where(null, torch.full_like(spectrum, torch.inf), spectrum.abs()).amin(-1)
    r = grad / mu
    # scale > 0: a region where sigma is 0 on every pair (ReLU: a dead node) has E = 0 and a
    # zero Hessian, a flat minimum that passes the test vacuously; it is no maximum of E
    ok = (scale > 0) & (spectrum.amax(-1) <= u**0.5 * scale) & (r <= 1e-6)
    if kink_gap is not None:
        ok &= 2**0.5 * r < kink_gap
    return ok, r


def _thm7_sigma(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation],
                cells: dict[str, Cell]) -> Iterator[Evidence]:
    """Thm. 7 with the activation in place of x^2: the hidden layer has learned the first
    nontrivial real component (nodes [b_a; +-P b_c] of li2.thm7), the top layer is the
    least-squares fit on its features sigma(Xw), R the residual; ascend
    E_S(w) = 1/2 |R^T sigma(Xw)|^2 from random starts, take saddle-free Newton steps to
    rounding, and among the end points that pass the second-order test (local maxima) count
    those whose dominant component is a missing one (Thm. 7: all)."""
    if len(real_irreps(G)) < 3:
        for label in acts:
            cells[label].thm7_detail = "one nontrivial component: nothing is missing"
        return
    p = run.params
    rows = run.memo("thm7 beyond x^2", lambda: _thm7_ascents(run, G, name, acts),
                    key=(name, tuple(acts), p["thm7_starts"], p["newton_steps"]))
    stated = float(run.stated["missing_fraction"]())
    for label, row in rows.items():
        cell = cells[label]
        missing = row["fraction on a missing component"]
        cell.thm7_missing = missing
        certified = row["certified"]
        cell.thm7_detail = (f"{row['certified on a missing component']} of {certified} "
                            f"certified maxima ({p['thm7_starts']} starts) on a missing "
                            f"component; learned component's mass at most "
                            f"{row['largest mass on the learned component']:.2e}")
        quantity = (f"{label}, {name}: fraction of the local maxima of E_S (learned: "
                    f"component 1) whose dominant component is a missing one")
        detail = {"activation": label, "group": name, "M": G.order, "learned": [1],
                  "certified": certified, "starts": p["thm7_starts"],
                  "dominant components": row["dominant components (certified)"]}
        if not certified:
            cell.thm7 = None
            yield undecided(Route.NUMERIC, quantity, f"no end point of E_S's ascent passed "
                            f"the second-order test (largest |grad_R| "
                            f"{row['largest grad norm']:.1e}): nothing certified to be a local "
                            f"maximum",
                            tolerance=Tolerance(0.0, "a fraction of counts"), parameters=detail)
            continue
        measured = row["certified on a missing component"] / certified
        cell.thm7 = None if label == "x^2" else measured == stated
        yield compare(
            Route.NUMERIC, quantity, stated=stated, measured=measured, metric="absolute",
            tolerance=Tolerance(0.0, "a fraction of counts; each end point certified a local "
                                     "maximum (second-order test, Newton distance <= 1e-6) "
                                     "and its dominant component read from masses far from "
                                     "ties"), parameters=detail,
            note=f"{'the anchor (Thm. 7 as stated). ' if label == 'x^2' else ''}"
                 f"Thm. 7 read for sigma as: with the top layer fitted on sigma-features of "
                 f"the learned irreps, the modulated energy's local maxima lie on missing "
                 f"irreps only. {cell.thm7_detail}")
    run.figure(f"{name}: Thm. 7 for sigma, learned component 1, ascent of E_S", {
        "starts": p["thm7_starts"], "steps": p["thm7_steps"], **rows})


# --- the map --------------------------------------------------------------------------------


def _smallest_counterexamples(groups: list[str], cells: dict[tuple[str, str], Cell],
                              labels: list[str]) -> dict:
    out = {}
    order = sorted(groups, key=lambda g: (build_group(g).order, g))
    for label in labels:
        for part, what, detail in (("thm2", "Thm. 2 (maxima)", "thm2_detail"),
                                   ("thm2_energy", "Thm. 2 (E*)", "thm2_detail"),
                                   ("thm2b", "Thm. 2 reading B (sigma's own maxima)",
                                    "thm2b_detail"),
                                   ("thm3", "Thm. 3", "thm3_detail"),
                                   ("thm4", "Thm. 4 (subsampling)", "thm4_detail"),
                                   ("thm7", "Thm. 7 (top-down)", "thm7_detail")):
            ran = [g for g in order if getattr(cells[label, g], part) is not None]
            bad = [g for g in ran if getattr(cells[label, g], part) is False]
            if ran:
                out[f"{label}: {what}"] = (
                    {"group": bad[0], "why": getattr(cells[label, bad[0]], detail)}
                    if bad else "holds on every group run")
    return out


def _map(run: Run, groups: list[str], labels: list[str], cells: dict[tuple[str, str], Cell]
         ) -> None:
    def holds(x: bool | None) -> float:
        return float("nan") if x is None else float(x)

    run.plot(Heatmap("Thm. 2 beyond x^2: maxima irrep-supported and (ReLU, SiLU) x^2's "
                     "maxima stay maxima (reading A)", "group", "activation", groups, labels,
                     [[holds(cells[lab, g].thm2) for g in groups] for lab in labels],
                     "1 holds, 0 breaks (E* apart)", limits=(0.0, 1.0)))
    run.plot(Heatmap("Thm. 2 beyond x^2: E* / stated E* at the maxima (b^2-scaled)", "group",
                     "activation", groups, labels,
                     [[cells[lab, g].energy_ratio for g in groups] for lab in labels],
                     "measured / stated"))
    for reading, nodes in (("real", "real nodes [u; +-Pu']"),
                           ("complex", "first K nodes [u; +-P conj(u)]")):
        run.plot(Heatmap(f"Thm. 3 beyond x^2: relative residual, {nodes}", "group",
                         "activation", groups, labels,
                         [[getattr(cells[lab, g], f"thm3_{reading}") for g in groups]
                          for lab in labels], "|Yhat - Yt| / |Yt| (0: reconstructs)"))
    run.plot(Heatmap("Thm. 4 beyond x^2: fraction of x^2's maxima retained on subsamples at "
                     "the smallest ratio", "group", "activation", groups, labels,
                     [[cells[lab, g].thm4_retained for g in groups] for lab in labels],
                     "fraction retained", limits=(0.0, 1.0)))
    run.plot(Heatmap("Thm. 7 beyond x^2: fraction of E_S's ascents ending on a missing irrep",
                     "group", "activation", groups, labels,
                     [[cells[lab, g].thm7_missing for g in groups] for lab in labels],
                     "fraction on a missing irrep (Thm. 7: 1)", limits=(0.0, 1.0)))
    run.figure("regime map", {lab: {g: {
        "Thm. 2 (maxima)": cells[lab, g].thm2, "Thm. 2 (E*)": cells[lab, g].thm2_energy,
        "Thm. 2 reading B": cells[lab, g].thm2b, "Thm. 2 reading B detail":
        cells[lab, g].thm2b_detail,
        "Thm. 2 detail": cells[lab, g].thm2_detail,
        "Thm. 3": cells[lab, g].thm3, "Thm. 3 detail": cells[lab, g].thm3_detail,
        "Thm. 3 complex residual": cells[lab, g].thm3_complex,
        "Thm. 4": cells[lab, g].thm4, "Thm. 4 detail": cells[lab, g].thm4_detail,
        "Thm. 7": cells[lab, g].thm7, "Thm. 7 detail": cells[lab, g].thm7_detail}
        for g in groups}
        for lab in labels})
    run.figure("smallest counterexample per activation and theorem",
               _smallest_counterexamples(groups, cells, labels))


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    quadratics = [ANCHOR, *[tuple(q) for q in p["quadratics"]]]
    acts = {_label(a, b): (quadratic(a, b), True) for a, b in quadratics}
    acts.update({name: (activation(name), False) for name in p["sigmas"]})
    labels = list(acts)
    cells = {(lab, g): Cell() for lab in labels for g in p["groups"]}
    for name in p["groups"]:
        G = build_group(name)
        for a, b in quadratics:
            yield from _thm2_inside(run, G, name, a, b, cells[_label(a, b), name])
        for sigma in p["sigmas"]:
            yield from _thm2_sigma(run, G, name, activation(sigma), cells[sigma, name])
            yield from _thm2_sigma_maxima(run, G, name, activation(sigma), cells[sigma, name])
        yield from _thm3(run, G, name, acts, {lab: cells[lab, name] for lab in labels})
        if name in p["thm4_7_groups"]:
            beyond = {"x^2": activation("x2"), **{a: activation(a) for a in p["sigmas"]}}
            for part in (_thm4_sigma, _thm7_sigma):
                yield from part(run, G, name, beyond, {lab: cells[lab, name] for lab in beyond})
    _map(run, list(p["groups"]), labels, cells)


#: Thms. 4 and 7 probes, on the groups named (a cyclic and a non-abelian one at quick):
#: li2.thm4's ascent settings (steps, gtol, purity 0.9) and ratios c ln M / M, largest c first
#: (the last is the smallest ratio, the heatmap's); li2.thm7's ascent of E_S from random starts.
#: Z4 is the smallest group of both: on Z2 and Z3 a Bernoulli subsample at these ratios leaves
#: some target with fewer than 2 pairs (the empirical energy is not defined), and Thm. 7 needs
#: two nontrivial real components (Z3 has one).
THM4_7 = {
    "quick": {"thm4_7_groups": ("Z4", "S3"), "thm4_multiples": (2.0, 1.0),
              "thm4_subsamples": 32, "thm4_steps": 150, "thm4_gtol": 1e-6, "thm4_purity": 0.9,
              "thm7_starts": 8, "thm7_steps": 300, "thm7_gtol": 1e-6},
    "full": {"thm4_7_groups": ("Z4", "Z5", "Z7", "Z8", "Z3xZ3", "S3", "D4", "Q8", "D5", "A4"),
             "thm4_multiples": (2.0, 1.0, 0.5), "thm4_subsamples": 64, "thm4_steps": 600,
             "thm4_gtol": 1e-6, "thm4_purity": 0.9, "thm7_starts": 64, "thm7_steps": 1500,
             "thm7_gtol": 1e-6},
}

#: Thm. 2 for a smooth sigma (reading B): random starts of E_sigma's own ascent, its steps,
#: then saddle-free Newton steps (also
#: used for Thm. 7's E_S) that take each end point to its critical point to rounding.
SIGMA = {
    "quick": {"sigma_starts": 8, "sigma_steps": 300, "newton_steps": 40},
    "full": {"sigma_starts": 256, "sigma_steps": 3000, "newton_steps": 80},
}


CLAIM = register(Claim(
    id="li2.x.activations",
    paper=PAPER,
    kind="theorem",
    title="Thms. 2, 3, 4 and 7 beyond x^2: ax + bx^2 (Thm. 2's extension), ReLU and SiLU",
    source="Thm. 2 (its extension to ax + bx^2, b > 0) and Thm. 3, §4.2; Thm. 4, §4.3; "
           "Thm. 7, §5; App. A.1-A.3, B.2",
    statement=r"\sigma(x)=ax+bx^2,\ b>0:\ \text{Thm. 2 holds: the local maxima of }"
              r"\mathcal E\text{ are }[\mathbf u;\pm P\mathbf u],\ \mathbf u\in\mathcal H_k,"
              r"\ \text{since the linear part cancels: }\mathcal E_{ax+bx^2}=b^2\mathcal "
              r"E_{x^2};\ \text{Thm. 3 (stated for }x^2\text{): }K=2\sum_{k\ne0}m_k^2d_k^2"
              r"\text{ nodes give }\hat Y=\tilde Y",
    reading=r"Thm. 2 for ax+bx^2: the maxima of x^2 with \mathcal E^\ast=b^2M/(8d_k) "
            r"(real irrep) or b^2M/(16d_k) (complex pair), read as in li2.thm2 (type H like "
            r"a complex pair); the routes of li2.thm2 (the same random starts, the step and "
            r"gradient floor scaled by 1/b^2 and b^2) and \mathcal E_{ax+bx^2}(\mathbf w)="
            r"b^2\mathcal E_{x^2}(\mathbf w) at every end point and at random \mathbf w. "
            r"x^2 (a,b)=(0,1) is the anchor; its items and those of ax+bx^2 decide the "
            r"verdict (so li2.thm2's finding, \mathcal E^\ast four times the stated value, "
            r"fails it too). Thm. 3 with the nodes of li2.thm3: the first K (stated) nodes "
            r"[\mathbf u;\pm P\bar{\mathbf u}] with holomorphic \sigma, and the real nodes "
            r"[\mathbf u;\pm P\mathbf u'], features \sigma(X\mathbf w), minimum-norm least "
            r"squares; decisive for x^2, a probe for ax+bx^2; a fit with numerical rank n-1 "
            r"is memorisation and decides nothing. ReLU and SiLU (outside the statements, "
            r"verdict items, each with its reading for a non-quadratic \sigma): Thm. 2 "
            r"reading A, x^2's maxima [\mathbf u;\pm P\mathbf u] stay local maxima of "
            r"\mathcal E_\sigma\ (critical to \sqrt u, no positive tangent eigenvalue; ReLU at "
            r"a kink: no sampled positive one-sided slope); Thm. 2 reading B (SiLU), every "
            r"local maximum of \mathcal E_\sigma\ lies in one nontrivial isotypic component "
            r"(ascent, saddle-free Newton to rounding, second-order test, for ReLU only inside "
            r"a region without a kink and with a nonzero Hessian; its values are not "
            r"compared, M/(8d_k) being x^2's); Thm. 3, the same real nodes with features "
            r"\sigma(X\mathbf w) reconstruct \tilde Y; Thm. 4, the sample law holds with a "
            r"constant no larger than x^2's: on the same subsamples at c\ln M/M, ascent of "
            r"\hat{\mathcal E}_\sigma\ from x^2's maxima keeps them (purity 0.9, li2.thm4's "
            r"test) at least as often as x^2 does (exact sign test on the discordant pairs, "
            r"Bonferroni; undecided where x^2 keeps none); Thm. 7, with the top layer fitted on "
            r"\sigma-features of the learned component, the certified local maxima of "
            r"\mathcal E_{\mathcal S}=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2 lie on missing "
            r"components only (x^2 the anchor). Not decided: reading B and Thm. 7 for ReLU, "
            r"whose maxima sit on kinks where no second-order test applies (its items are "
            r"undecided).",
    parameters={
        "quick": {"groups": ("Z2", "Z3", "Z4", "Z5", "S3", "D4"),
                  "quadratics": ((1.0, 0.5), (-2.0, 2.0)),
                  "sigmas": ("relu", "silu"), "scaling_points": 16, "probe_directions": 32,
                  "perturbation": 0.1, **THM4_7["quick"], **SIGMA["quick"],
                  **ASCENT["quick"]},
        # Z2 at quick only: with 1024 starts one of x^2's ascents stalls there (the shared
        # landscape of li2.thm2, whose settings this claim does not change)
        "full": {"groups": ("Z3", "Z4", "Z2xZ2", "Z5", "Z6", "Z7", "Z8", "Z3xZ3", "S3", "D4",
                            "Q8", "D5", "A4"),
                 "quadratics": ((1.0, 0.5), (-2.0, 2.0), (0.5, 1.0), (3.0, 0.25)),
                 "sigmas": ("relu", "silu"), "scaling_points": 64, "probe_directions": 128,
                 "perturbation": 0.1, **THM4_7["full"], **SIGMA["full"], **ASCENT["full"]},
    },
    stated={"E_star": stated_max_energy, "energy_scale": stated_energy_scale,
            "K": stated_node_count, "residual": stated_residual,
            "keeps_maxima": stated_keeps_maxima, "leak": stated_leak,
            "retention_gap": stated_retention_gap, "missing_fraction": stated_missing_fraction},
    check=check,
    control=NegativeControl("the energy scales with |b|, not b^2",
                            {"energy_scale": linear_in_b_scale}),
    assumptions=(
        Assumption("b > 0", "Thm. 2's extension is stated for sigma = ax + bx^2 with b > 0",
                   lambda p: all(b > 0 for _, b in p["quadratics"])),
        Assumption("ascent step within the stability range",
                   "lr = lr_scale / (b^2 M) with lr_scale <= 0.5 keeps lr |lambda| < 2 at the "
                   "maxima", lambda p: 0 < p["lr_scale"] <= 0.5),
    ),
    # a group of each irrep type, the quadratic part's sign (b < 0 is outside the stated
    # extension) and the number of random starts that must reach every maximum
    space={"groups": ONE_SMALL_GROUP,
           "quadratics": Choice((((1.0, 0.5),), ((-2.0, 2.0),), ((0.5, 1.0),),
                                 ((1.0, -1.0),))),
           "starts": IntRange(16, 256), "seed": SEED},
))
