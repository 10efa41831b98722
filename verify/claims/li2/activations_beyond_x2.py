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
  \mathcal E_{x^2}` at every end point and at random points. For ReLU and SiLU (outside the
  statement: probes) the test at each maximum :math:`x^2` has: is it still a local maximum of
  :math:`\mathcal E_\sigma` (critical, no positive tangent Hessian eigenvalue; for ReLU at a
  kink, every sampled one-sided tangent derivative negative)?
* **Thm. 3** with the nodes of ``li2.thm3`` (:func:`verify.claims.li2._irrep_nodes.float_nodes`):
  the least-squares residual :math:`\|\hat Y-\tilde Y\|/\|\tilde Y\|` of the first :math:`K=2
  \sum_{k\ne0}m_k^2d_k^2` nodes :math:`[\mathbf u;\pm P\bar{\mathbf u}]` (complex, holomorphic
  :math:`\sigma`: the polynomial activations) and of the real nodes
  :math:`[\mathbf u;\pm P\mathbf u']`, with features :math:`\sigma(X\mathbf w)`.

The items of :math:`x^2` and, for Thm. 2, of :math:`ax+bx^2` decide the verdict; everything
else (ReLU, SiLU, Thm. 3 for :math:`ax+bx^2`) is a probe: ``run.assume(..., probe=True)`` per
(activation, group, theorem), the map as heatmaps and figures, and the smallest group where
each statement breaks.

Thms. 4 and 7 (stated for :math:`x^2`) are probes for ReLU and SiLU, with :math:`x^2` as the
anchor, on the groups of ``thm4_7_groups``:

* **Thm. 4** (samples needed to keep the irrep maxima): from each maximum :math:`x^2` has (the
  shared ascent's classes), monotone projected ascent of the empirical energy
  :math:`\hat{\mathcal E}_\sigma` (:func:`numerics.li2.subsampled_energy.subsampled_energy`
  with ``act``) on the full data and on coupled Bernoulli subsamples at ratios
  :math:`c\ln M/M`; a start is retained when its end point keeps 0.9 of its norm in the
  maximum's real isotypic component (``li2.thm4``'s test). The probe holds when every start is
  retained at full data and, on the same subsamples, at least as large a fraction as with
  :math:`x^2` at each ratio where :math:`x^2` keeps any (none: undecided).
* **Thm. 7** (top-down modulation): the hidden layer has learned the first nontrivial real
  component (``li2.thm7``'s nodes :math:`[\mathbf b_a;\pm P\mathbf b_c]`), the top layer is the
  least-squares fit on the features :math:`\sigma(X\mathbf w)`, :math:`R` its residual; ascent
  of :math:`\mathcal E_{\mathcal S}=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2`
  (:func:`numerics.li2.top_down.modified_energy`) from random starts. The probe holds when
  every end point's dominant component is a missing one.
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
from numerics.li2.group_task import GroupTask, group_energy, group_task
from numerics.li2.landscape import (
    energy_and_riemannian_gradient,
    energy_hessian_by_rows,
    find_local_maxima,
    riemannian_hessian,
    tangent_spectrum,
)
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


# --- Thm. 2, outside the statement: ReLU, SiLU (probes) ---------------------------------------


def _thm2_probe(run: Run, G: FiniteGroup, name: str, act: Activation, cell: Cell) -> None:
    """Do the maxima x^2 has (the shared ascent's classes) stay local maxima of E_sigma? A
    point that is not critical, or has a positive tangent Hessian eigenvalue, or (ReLU, at a
    kink) a tangent direction of positive one-sided derivative, is a counterexample to
    Thm. 2 for sigma."""
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
    verdicts = [bool(m) for m in smooth_max]
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
    run.figure(f"{act.name}, {name}: Thm. 2 probe at x^2's maxima", rows)
    run.assume(f"{act.name}, {name}: Thm. 2's maxima survive (probe)", cell.thm2 is True,
               f"{act.name} is outside Thm. 2 (x^2, ax + bx^2): every local maximum of "
               f"E_(x^2) stays a local maximum of E_{act.name}", cell.thm2_detail, probe=True)


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
        if label != "x^2":
            run.assume(f"{label}, {name}: Thm. 3's reconstruction (probe)", cell.thm3 is True,
                       f"Thm. 3 is stated for x^2; with {label} the same nodes give "
                       f"Yhat = Yt", cell.thm3_detail, probe=True)
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
    U = torch.rand(S, M, M, generator=run.generator(f"thm4 subsamples:{name}"),
                   dtype=torch.float64).to(**opts)
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


def _thm4_probe(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation],
                cells: dict[str, Cell]) -> None:
    """Start at x^2's maxima (the shared ascent's classes) and ascend each activation's
    empirical energy on the full data and on coupled Bernoulli subsamples at ratios
    c ln M / M; a start is retained when the end point keeps >= purity_min of its norm in the
    maximum's real isotypic component (li2.thm4's test). Compared with x^2 on the same
    subsamples."""
    found = maxima(landscape(run, name))
    if not found:
        return
    p = run.params
    ratios, retained, rows = run.memo(
        "thm4 beyond x^2", lambda: _thm4_retention(run, G, name, acts, found),
        key=(name, tuple(acts)))
    base = rows["x^2"]["fraction retained"][1:]
    # only ratios where x^2 keeps some maximum compare anything (at quick sizes, M <= 8, the
    # ratios c ln M / M are large fractions and x^2 itself may lose every maximum)
    informative = [i for i, f in enumerate(base) if f > 0]
    for label, kept in retained.items():
        cell = cells[label]
        frac = rows[label]["fraction retained"]
        cell.thm4_retained = frac[-1] if len(frac) > 1 else float("nan")
        # every start retained at full data (sigma's own irrep maxima near x^2's), and on the
        # same subsamples at least as large a fraction retained as x^2 at each ratio
        as_x2 = all(frac[1 + i] >= base[i] for i in informative)
        cell.thm4 = (None if label == "x^2" or not informative
                     else bool(kept[0].all()) and as_x2)
        cell.thm4_detail = (f"retained at p = {', '.join(f'{r:.3g}' for r in ratios)}: "
                            f"{', '.join(f'{f:.2f}' for f in frac)}")
        if cell.thm4 is not None:
            run.assume(f"{label}, {name}: Thm. 4's irrep maxima survive subsampling as with "
                       f"x^2 (probe)", cell.thm4,
                       f"Thm. 4 is stated for x^2; with {label}, ascent from x^2's maxima "
                       f"stays in their irrep at full data, and on the same subsamples as "
                       f"often as with x^2", cell.thm4_detail, probe=True)
    run.figure(f"{name}: Thm. 4 probe, x^2's maxima on subsamples", {
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
        mass = component_mass(result.w, projectors, M)
        dominant = mass.argmax(-1)
        rows[label] = {"fraction on a missing component": float((dominant >= 2).double().mean()),
                       "dominant components": sorted(set(dominant.tolist())),
                       "largest mass on the learned component": float(mass[:, 1].max()),
                       "largest grad norm": float(result.grad_norm.max()),
                       "residual / |Yt|": float(R.norm() / centred_labels(task, run.dtype).norm())}
    return rows


def _thm7_probe(run: Run, G: FiniteGroup, name: str, acts: dict[str, Activation],
                cells: dict[str, Cell]) -> None:
    """Thm. 7 with the activation in place of x^2: the hidden layer has learned the first
    nontrivial real component (nodes [b_a; +-P b_c] of li2.thm7), the top layer is the
    least-squares fit on its features sigma(Xw), R the residual; ascend
    E_S(w) = 1/2 |R^T sigma(Xw)|^2 from random starts and count the end points whose dominant
    component is a missing one."""
    if len(real_irreps(G)) < 3:
        for label in acts:
            cells[label].thm7_detail = "one nontrivial component: nothing is missing"
        return
    p = run.params
    rows = run.memo("thm7 beyond x^2", lambda: _thm7_ascents(run, G, name, acts),
                    key=(name, tuple(acts)))
    for label, row in rows.items():
        cell = cells[label]
        missing = row["fraction on a missing component"]
        cell.thm7_missing = missing
        cell.thm7 = None if label == "x^2" else missing == 1.0
        cell.thm7_detail = (f"{missing:.2f} of {p['thm7_starts']} end points on a missing "
                            f"component; learned component's mass at most "
                            f"{row['largest mass on the learned component']:.2e}")
        if label != "x^2":
            run.assume(f"{label}, {name}: Thm. 7's modulated energy peaks on missing irreps "
                       f"only (probe)", cell.thm7 is True,
                       f"Thm. 7 is stated for x^2; with {label}, every ascent of E_S ends on a "
                       f"missing component", cell.thm7_detail, probe=True)
    run.figure(f"{name}: Thm. 7 probe, learned component 1, ascent of E_S", {
        "starts": p["thm7_starts"], "steps": p["thm7_steps"], **rows})


# --- the map --------------------------------------------------------------------------------


def _smallest_counterexamples(groups: list[str], cells: dict[tuple[str, str], Cell],
                              labels: list[str]) -> dict:
    out = {}
    order = sorted(groups, key=lambda g: (build_group(g).order, g))
    for label in labels:
        for part, what, detail in (("thm2", "Thm. 2 (maxima)", "thm2_detail"),
                                   ("thm2_energy", "Thm. 2 (E*)", "thm2_detail"),
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

    run.plot(Heatmap("Thm. 2 beyond x^2: maxima irrep-supported and (probes) x^2's maxima "
                     "stay maxima", "group", "activation", groups, labels,
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
    acts.update({name: (activation(name), False) for name in p["probes"]})
    labels = list(acts)
    cells = {(lab, g): Cell() for lab in labels for g in p["groups"]}
    for name in p["groups"]:
        G = build_group(name)
        for a, b in quadratics:
            yield from _thm2_inside(run, G, name, a, b, cells[_label(a, b), name])
        for probe in p["probes"]:
            _thm2_probe(run, G, name, activation(probe), cells[probe, name])
        yield from _thm3(run, G, name, acts, {lab: cells[lab, name] for lab in labels})
        if name in p["thm4_7_groups"]:
            beyond = {"x^2": activation("x2"), **{a: activation(a) for a in p["probes"]}}
            for probe in (_thm4_probe, _thm7_probe):
                probe(run, G, name, beyond, {lab: cells[lab, name] for lab in beyond})
    _map(run, list(p["groups"]), labels, cells)


#: Thms. 4 and 7 probes, on the groups named (a cyclic and a non-abelian one at quick):
#: li2.thm4's ascent settings (steps, gtol, purity 0.9) and ratios c ln M / M, largest c first
#: (the last is the smallest ratio, the heatmap's); li2.thm7's ascent of E_S from random starts.
THM4_7 = {
    "quick": {"thm4_7_groups": ("Z5", "D4"), "thm4_multiples": (2.0, 1.0),
              "thm4_subsamples": 4, "thm4_steps": 150, "thm4_gtol": 1e-6, "thm4_purity": 0.9,
              "thm7_starts": 8, "thm7_steps": 200, "thm7_gtol": 1e-6},
    "full": {"thm4_7_groups": ("Z5", "Z7", "Z8", "Z3xZ3", "S3", "D4", "Q8", "D5", "A4"),
             "thm4_multiples": (2.0, 1.0, 0.5), "thm4_subsamples": 16, "thm4_steps": 600,
             "thm4_gtol": 1e-6, "thm4_purity": 0.9, "thm7_starts": 64, "thm7_steps": 1500,
             "thm7_gtol": 1e-6},
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
            r"squares; decisive for x^2 only. Probes (reported, never deciding): ReLU and "
            r"SiLU in Thm. 2 (are x^2's maxima still critical points and local maxima of "
            r"\mathcal E_\sigma on the unit sphere?) and in Thm. 3 (real nodes), and ax+bx^2 "
            r"in Thm. 3; a fit with numerical rank n-1 is memorisation and decides nothing "
            r"(the cell is left open). Thms. 4 and 7, probes for ReLU and SiLU with x^2 as "
            r"the anchor: Thm. 4, ascent of the subsampled energy from x^2's maxima at "
            r"ratios c\ln M/M (li2.thm4's retention test, purity 0.9), compared with x^2 on "
            r"the same subsamples; Thm. 7, ascent of \mathcal E_{\mathcal S}=\tfrac12\|R^"
            r"\top\sigma(X\mathbf w)\|^2 with R the residual of the least-squares top layer "
            r"on the first component's nodes, end points' dominant component. Not checked: "
            r"other maxima ReLU or SiLU may have elsewhere (the probes start at x^2's).",
    parameters={
        "quick": {"groups": ("Z4", "Z5", "S3", "D4"), "quadratics": ((1.0, 0.5), (-2.0, 2.0)),
                  "probes": ("relu", "silu"), "scaling_points": 16, "probe_directions": 32,
                  "perturbation": 0.1, **THM4_7["quick"], **ASCENT["quick"]},
        "full": {"groups": ("Z3", "Z4", "Z5", "Z7", "Z8", "Z3xZ3", "S3", "D4", "Q8", "D5",
                            "A4"),
                 "quadratics": ((1.0, 0.5), (-2.0, 2.0), (0.5, 1.0), (3.0, 0.25)),
                 "probes": ("relu", "silu"), "scaling_points": 64, "probe_directions": 128,
                 "perturbation": 0.1, **THM4_7["full"], **ASCENT["full"]},
    },
    stated={"E_star": stated_max_energy, "energy_scale": stated_energy_scale,
            "K": stated_node_count, "residual": stated_residual},
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
