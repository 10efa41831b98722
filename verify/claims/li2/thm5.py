r"""li2.thm5: Theorem 5, the memorisation solution: on data that hold a single target
:math:`h` (samples :math:`(g,g^{-1}h)` with probabilities :math:`p_g`), the global optimum
of :math:`\mathcal E` is focused, :math:`\mathbf w=\tfrac1{\sqrt2}(\mathbf e_{g^\ast},
\mathbf e_{g^{\ast-1}h})`, when :math:`\phi=\sigma'/x` is nondecreasing (powers
:math:`x^q`, :math:`q\ge2`), and spread, :math:`\mathbf w=\tfrac12\sum_gs_g[\mathbf e_g,
\mathbf e_{g^{-1}h}]` with :math:`s_g=\phi^{-1}(2\lambda/p_g)`, when it is strictly
decreasing (ReLU, SiLU, tanh, sigmoid); there are no other local optima.

The single-target degeneracy. With the paper's sample centring every row of :math:`Y` is
:math:`\mathbf e_h`, so :math:`\tilde Y=P_1^\perp Y=0` and :math:`\mathcal E\equiv0`: every
:math:`\mathbf w` is a critical point and the theorem is void. The toolkit reads the energy
with uncentred labels, :math:`\mathcal E=\tfrac12\|Y^\top\sigma(X\mathbf w)\|^2`, the reading
under which App. A.4's reduction to :math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` holds; the
author's code (each label centred over the classes, :math:`\mathbf e_h-\tfrac1M\mathbf 1`)
gives :math:`(1-\tfrac1M)` times the same energy, so the same landscape. All three are derived
by sympy and the vanishing and the ratio are measured at the end points.

Routes: the theorem's maximiser and the paper's classification of each activation (stated);
sympy: the energy on the data from Eq. 7 (the reduction), the sign of :math:`\phi'` on
:math:`(0,\sqrt2]`, the exact second-order test at every focused point, and the optimum of
the reduced problem (derived); projected gradient ascent of the full energy on the unit
sphere in :math:`\mathbb R^{2M}` from many random starts, polished by Riemannian Newton
steps, with a second-order and a one-sided (kink) test of each end point (measured).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp
import torch

from numerics.activations import Activation
from numerics.li2.energy import (
    energy,
    energy_rounding_scale,
    gradient_rounding_scale,
    sphere_smoothness_bound,
)
from numerics.li2.memorisation import (
    SingleTargetData,
    ascend_energy,
    canonical_sign,
    distinct_rows,
    focused_profile,
    inverse_phi,
    lift,
    memorisation_activation,
    newton_polish,
    parity,
    phi_sensitivity,
    single_target_data,
    solve_budget,
    split_coordinates,
    strict_maximum,
)
from numerics.li2.two_layer import center
from numerics.random import make_generator, randn
from theory.derivation import Derivation
from theory.li2.energy import freeze_activation, sigma
from theory.li2.memorisation import (
    derive_phi,
    derive_power_family,
    derive_single_target_energy,
    derive_vertex_maxima,
)
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_most,
    compare,
    register,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import ONE_SMALL_GROUP, build_group
from verify.claims.li2._reduced_memorisation import (
    active_threshold,
    optimise_reduced,
    sigma_positive,
)

#: Thm. 5's list: powers x^q (q >= 2) focused; ReLU, SiLU, tanh, sigmoid spreading.
PAPER_ACTIVATIONS = ("x^2", "x^3", "x^4", "relu", "silu", "tanh", "sigmoid")
SPREADING = ("relu", "silu", "tanh", "sigmoid")
LABEL = {"focused": 1.0, "spreading": 0.0}


# --- the paper's statements -------------------------------------------------------------------

def stated_classification(name: str) -> str:
    r"""Thm. 5's list: :math:`x^q` with :math:`q\ge2` focused; ReLU, SiLU, tanh, sigmoid
    spreading."""
    if name in SPREADING:
        return "spreading"
    if name.startswith("x^") and float(name[2:]) >= 2:
        return "focused"
    raise ValueError(f"activation: {name!r} is not in Thm. 5's list (x^q with q >= 2, "
                     f"{', '.join(SPREADING)})")


def saturating_flipped(name: str) -> str:
    """Planted error: the saturating family (tanh, sigmoid) classified focused."""
    return "focused" if name in ("tanh", "sigmoid") else stated_classification(name)


def stated_objective(p, values):
    r"""App. A.4: :math:`F(\mathbf s)=\sum_gp_g\sigma(s_g)` (``values`` :math:`=\sigma(s_g)`)."""
    return sum((pg * v for pg, v in zip(p, values)), 0 * values[0])


def stated_maximiser(p: torch.Tensor, act: Activation, kind: str,
                     partner: torch.Tensor) -> torch.Tensor:
    r"""Thm. 5's optimum: focused :math:`\tfrac1{\sqrt2}(\mathbf e_{g^\ast},
    \mathbf e_{g^{\ast-1}h})`; spreading :math:`\tfrac12\sum_gs_g[\mathbf e_g,
    \mathbf e_{g^{-1}h}]`, :math:`s_g=\phi^{-1}(2\lambda/p_g)`, :math:`\sum_gs_g^2=2`."""
    if kind == "focused":
        s = focused_profile(p)
    else:
        lam = solve_budget(lambda lam: inverse_phi(act, 2 * lam / p), p)
        s = inverse_phi(act, 2 * lam / p)
    M = p.shape[-1]
    w = torch.zeros(p.shape[:-1] + (2 * M,), dtype=p.dtype, device=p.device)
    w[..., :M] = s / 2
    w[..., M + partner] = s / 2
    return w


# --- the data and the landscape (cached: the control reuses them) -----------------------------

def draw_counts(run: Run, group: str, M: int) -> tuple[tuple[int, ...], int]:
    r"""Sample counts :math:`c_g=1+\mathrm{Multinomial}(n-M,\mathbf q)`,
    :math:`\mathbf q\sim\mathrm{Dir}(\alpha)`, :math:`n=` samples_per_element :math:`\cdot M`,
    redrawn until :math:`\arg\max_gc_g` is unique (Thm. 5's hypothesis); and the draws
    needed."""
    rng = run.rng(f"counts:{group}")
    n = run.params["samples_per_element"] * M
    for tries in range(1, 101):
        q = rng.dirichlet(np.full(M, run.params["alpha"]))
        c = 1 + rng.multinomial(n - M, q)
        if (c == c.max()).sum() == 1:
            return tuple(int(x) for x in c), tries
    raise RuntimeError(f"{group}: no draw with a unique argmax in 100 tries")


@dataclass(frozen=True)
class MaximumFound:
    """One distinct strict local maximum: coordinates ``s``, the point ``w`` (canonical
    sign), its energy, how many starts reached it, its class, the gradient norm and the
    smallest tangent curvature at its first member."""

    s: torch.Tensor
    w: torch.Tensor
    energy: float
    starts: int
    kind: str
    grad_norm: float
    curvature: float
    gradient_scale: float


@dataclass(frozen=True)
class EnergyLandscape:
    maxima: tuple[MaximumFound, ...]
    starts: int
    dead: int
    not_maxima: int
    unconverged: int
    steps: int
    lr0: float
    largest_decrease: float
    sample_centred_max: float
    class_centred_ratio: float


def focus_class(s: torch.Tensor, tol: float) -> str:
    """'focused' when at most one coordinate exceeds ``tol`` in size, else 'spreading'."""
    return "focused" if int((s.abs() > tol).sum()) <= 1 else "spreading"


def landscape(run: Run, group: str, name: str, counts: tuple[int, ...]) -> EnergyLandscape:
    """The energy landscape's maxima for (group, activation, counts), memoised so the
    negative control reuses them."""
    p = run.params
    return run.memo("landscape", lambda: _landscape(
        group, name, counts, p["starts"], p["max_steps"], p["coarse_gtol_factor"],
        p["newton_iterations"], p["cluster_tol"], run.seed_for(f"starts:{group}"),
        str(run.device), str(run.dtype)), key=(group, name, counts))


def _landscape(group: str, name: str, counts: tuple[int, ...], starts: int, max_steps: int,
               coarse_gtol_factor: float, newton_iterations: int, cluster_tol: float,
               seed: int, device: str, dtype: str) -> EnergyLandscape:
    dt = getattr(torch, dtype.removeprefix("torch."))
    dev = torch.device(device)
    u = unit_roundoff(dt)
    G = build_group(group)
    data = single_target_data(G.table, G.order - 1, torch.tensor(counts), dt, dev)
    act = memorisation_activation(name)
    # Labels Y/n: E = 1/2 (sum_g p_g sigma(s_g))^2, the uncentred energy over n^2 (the same
    # maximisers; n-independent scale).
    labels = data.Y / data.n
    w0 = randn(starts, 2 * data.M, generator=make_generator(seed), device=dev, dtype=dt)
    lr0 = 1 / sphere_smoothness_bound(data.X, labels, act)
    # Gradient ascent to a Riemannian gradient of factor sqrt(u) (1.5e-6 in float64 at
    # factor 100), where Newton's quadratic convergence takes over.
    coarse = ascend_energy(w0, data.X, labels, act, lr0, max_steps,
                           coarse_gtol_factor * u**0.5)
    pol = newton_polish(coarse.w, data.X, labels, act, newton_iterations)
    s, _ = split_coordinates(pol.w, data)
    w, s = canonical_sign(pol.w, s, parity(act) != "none")
    e_scale = energy_rounding_scale(w, data.X, labels, act)
    g_scale = gradient_rounding_scale(w, data.X, labels, act).norm(dim=-1)
    # Converged: the Riemannian gradient within 1e3 u times the sum of absolute terms that
    # bounds its rounding error (Higham ch. 3; the sums are of length <= n + 2M < 1e3).
    converged = pol.grad_norm <= 1e3 * u * g_scale
    # E = 0 on an open set (ReLU with every x_i.w < 0): a plateau, no strict maximum.
    alive = pol.energy > 8 * (data.n + 2 * data.M) * u * e_scale
    # Slopes: a forward difference with step u^(1/3) errs by ~u E/step + step^2 |E'''|, both
    # far below sqrt(u) E; a one-sided ascent at a ReLU kink has slope ~ p_g F >= F/n.
    test = strict_maximum(w, data.X, labels, act, eigen_tol=u**0.5 * pol.spectra.abs().amax(-1)
                          .clamp(min=u), slope_step=u ** (1 / 3),
                          slope_tol=pol.grad_norm + u**0.5 * e_scale)
    is_max = converged & alive & test.is_maximum
    members = is_max.nonzero().flatten()
    maxima = []
    for cluster in distinct_rows(s[members], cluster_tol):
        i = members[cluster[0]]
        maxima.append(MaximumFound(
            s[i].cpu(), w[i].cpu(), float(pol.energy[i]), len(cluster),
            focus_class(s[i], cluster_tol), float(pol.grad_norm[i]),
            float(pol.spectra[i].abs().min()), float(g_scale[i])))
    maxima.sort(key=lambda m: -m.energy)
    best = w[members[0]] if len(members) else w[0]
    sample_centred = float(energy(w, data.X, center(data.Y), act).abs().max())
    classes = data.Y - 1 / data.M
    ratio = float(energy(best, data.X, classes / data.n, act) / energy(best, data.X, labels,
                                                                          act))
    return EnergyLandscape(tuple(maxima), starts, int((converged & ~alive).sum()),
                           int((converged & alive & ~test.is_maximum).sum()),
                           int((~converged).sum()), coarse.steps, lr0,
                           float(coarse.largest_decrease.max()), sample_centred, ratio)


def _reduced(group: str, name: str, counts: tuple[int, ...], random_starts: int,
             lr_scale: float, max_steps: int, gtol_factor: float, seed: int,
             device: str, dtype: str):
    """The reduced problem's optimum for the data's p (li2.lemma5's optimiser); memoised by
    its caller so the negative control reuses it."""
    dt = getattr(torch, dtype.removeprefix("torch."))
    p = torch.tensor(counts, dtype=dt, device=torch.device(device))
    return optimise_reduced((p / p.sum())[None], memorisation_activation(name), random_starts,
                            lr_scale, max_steps, gtol_factor, np.random.default_rng(seed))


# --- checks -----------------------------------------------------------------------------------

@cache
def _single_target_energy(group: str, counts: tuple[int, ...]) -> Derivation:
    """:func:`derive_single_target_energy` for ``group`` (target its last element), once per
    (group, counts): pure, so the control's run reuses it."""
    G = build_group(group)
    return derive_single_target_energy(G.table, G.order - 1, counts)


@cache
def _phi(name: str) -> Derivation:
    """:func:`derive_phi`, once per activation."""
    return derive_phi(name)


@cache
def _power_family() -> Derivation:
    """:func:`derive_power_family`, once per process."""
    return derive_power_family()


@cache
def _vertex_maxima(name: str, counts: tuple[int, ...], n: int) -> Derivation:
    """:func:`derive_vertex_maxima` at p = counts / n, once per (activation, counts)."""
    return derive_vertex_maxima(name, [sp.Rational(c, n) for c in counts])


def _reduction(run: Run, group: str, counts: tuple[int, ...]) -> Iterator[Evidence]:
    G = build_group(group)
    d = run.derivation(_single_target_energy(group, tuple(counts)))
    e = d.result
    n = e.n
    p = [sp.Rational(c, n) for c in counts]
    values = [sigma(e.u[g] + e.v[e.partner[g]]) for g in range(G.order)]
    F = run.stated["objective"](p, values)
    # Each sigma(u_g + v_b) as its own symbol (theory.li2.energy.freeze_activation): the identity
    # is polynomial in them, and a false one gets an exact rational witness.
    stated, derived = freeze_activation([sp.Matrix([sp.expand((n * F) ** 2 / 2)]),
                                         sp.Matrix([e.uncentred])])
    yield symbolic_identity(
        f"{group}: E (Eq. 7, uncentred labels) = 1/2 (n F(s))^2 with F(s) = sum_g p_g "
        f"sigma(u_g + v_(g^-1 h)) (generic sigma)",
        stated=stated, derived=derived,
        parameters={"group": group, "target": G.order - 1, "counts": list(counts), "n": n},
        note="App. A.4's reduction; with the paper's sample centring the derived energy is 0 "
             "(see the derivation), with class-centred labels (1 - 1/M) times this")


def _classification(run: Run, names: tuple[str, ...],
                    measured: dict[str, list[float]]) -> Iterator[Evidence]:
    classify = run.stated["classification"]
    for name in names:
        facts = run.derivation(_phi(name)).result
        derived = {"nondecreasing": "focused", "strictly decreasing": "spreading"}.get(
            facts.monotonicity)
        quantity = f"sigma = {name}: focused (1) or spreading (0)"
        params = {"sigma": name, "phi on (0, sqrt2]": facts.monotonicity,
                  "decided by": facts.method, "phi(0+)": str(facts.phi_at_zero)}
        if derived is None:
            yield undecided(Route.SYMBOLIC, quantity, f"phi is {facts.monotonicity}",
                            tolerance=Tolerance(0.0, "a label"), parameters=params)
            continue
        labels = measured[name]
        yield compare(
            Route.NUMERIC if labels else Route.SYMBOLIC, quantity,
            stated=[LABEL[classify(name)]] * max(len(labels), 1),
            derived=[LABEL[derived]] * max(len(labels), 1),
            measured=labels or None, metric="absolute", tolerance=Tolerance(0.0, "a label"),
            parameters={**params, "measured per group": run.params["groups"]},
            note="derived: Lemma 6's condition on the sign of x sigma'' - sigma' (sympy); "
                 "measured: the focus statistic of the global maximiser found by ascent "
                 "(focused: at most one |s_g| above the cluster tolerance)")
    family = run.derivation(_power_family()).result
    yield compare(
        Route.SYMBOLIC, "sigma = x^q for every q >= 2 (symbolic q): focused (1)",
        stated=[LABEL[classify("x^2")]],
        derived=[LABEL["focused" if family.monotonicity == "nondecreasing" else "spreading"]],
        metric="absolute", tolerance=Tolerance(0.0, "a label"),
        parameters={"x^2 phi'": str(family.numerator)})


def _maximiser_tolerance(run: Run, best: MaximumFound, reduced, act: Activation, M: int,
                         n: int, focused: bool) -> Tolerance:
    # Measured: a converged point is within (2g + rounding of the gradient)/mu of its
    # nondegenerate maximum (mu the smallest |tangent eigenvalue|; rounding (n+d) u times
    # the gradient's sum of absolute terms). Derived: the reduced optimum is within its
    # distance bound in s, half of it in w = s/2. Stated: bisections at float spacing
    # (li2.lemma6's bound), halved likewise.
    u = unit_roundoff(run.dtype)
    meas = (2 * best.grad_norm + 8 * (n + 2 * M) * u * best.gradient_scale) / best.curvature
    der = float(reduced.distance_bound().max()) / 2
    sens = 0.0 if focused else float(phi_sensitivity(act, reduced.s,
                                                     active_threshold(reduced)).max())
    stat = 4 * u if focused else 8 * (M + 2) * u * sens
    return Tolerance(meas + der + stat, f"measured (2g + rounding)/mu = {meas:.1e}; derived "
                                        f"distance bound/2 = {der:.1e}; stated bisections "
                                        f"{stat:.1e}")


def _landscape_evidence(run: Run, group: str, name: str, counts: tuple[int, ...],
                        labels: dict[str, list[float]]) -> Iterator[Evidence]:
    act = memorisation_activation(name)
    G = build_group(group)
    data: SingleTargetData = single_target_data(G.table, G.order - 1, torch.tensor(counts),
                                                run.dtype, run.device)
    M, n = data.M, data.n
    L = landscape(run, group, name, counts)
    u = unit_roundoff(run.dtype)
    params = {"group": group, "sigma": name, "counts": list(counts), "starts": L.starts}
    run.assume(f"{group}, {name}: ascent monotone", L.largest_decrease <= 1e3 * u,
               "E never decreased beyond rounding along the Armijo ascent",
               f"largest decrease {L.largest_decrease:.1e}")
    run.figure(f"{group}, {name}: end points (distinct strict maxima: E, starts, class, s)",
               {"maxima": [{"E": m.energy, "starts": m.starts, "class": m.kind,
                            "s": [round(x, 6) for x in m.s.tolist()]} for m in L.maxima],
                "dead plateau (E = 0)": L.dead, "converged, not a strict maximum":
                    L.not_maxima, "not converged": L.unconverged, "coarse steps": L.steps,
                "lr0": L.lr0})
    run.figure(f"{group}, {name}: label readings: max |E| with sample-centred labels over "
               f"all end points; E(class-centred)/E(uncentred) at the best (1 - 1/M = "
               f"{1 - 1 / M:.6g})", [L.sample_centred_max, L.class_centred_ratio])
    if not L.maxima:
        yield undecided(Route.NUMERIC, f"{group}, sigma = {name}: global maximiser of E",
                        "no start ended at a strict local maximum",
                        tolerance=Tolerance(0.0, "none"), parameters=params)
        return
    best = L.maxima[0]
    labels[name].append(LABEL[best.kind])
    kind = run.stated["classification"](name)
    stated = run.stated["maximiser"](data.p, act, kind, data.partner)
    p = run.params
    reduced = run.memo("reduced", lambda: _reduced(
        group, name, counts, p["reduced_random_starts"], p["lr_scale"], p["reduced_max_steps"],
        p["gtol_factor"], run.seed_for(f"reduced:{group}:{name}"), str(run.device),
        str(run.dtype)), key=(group, name, counts))
    yield compare(
        Route.NUMERIC, f"{group}, sigma = {name}: global maximiser w of E",
        stated=stated, derived=lift(reduced.s[0], data), measured=best.w.to(stated),
        metric="absolute",
        tolerance=_maximiser_tolerance(run, best, reduced, act, M, n, kind == "focused"),
        parameters={**params, "stated class": kind, "measured class": best.kind},
        note="measured: the highest strict maximum of the full energy found by ascent; "
             "derived: the reduced problem's optimum (App. A.4) lifted to w = [s; s]/2; "
             "sign canonical (sum_g s_g >= 0) where sigma is odd or even")
    yield at_most(
        Route.NUMERIC, f"{group}, sigma = {name}: distinct strict local maxima of E found "
                       f"(up to w -> -w for odd or even sigma)",
        measured=float(len(L.maxima)), bound=1.0, tolerance=Tolerance(0.0, "a count"),
        parameters={**params, "energies": [m.energy for m in L.maxima]},
        note="Thm. 5: no other local optima; a strict local maximum passes the tangent "
             "Hessian test and the one-sided slope test after Newton polishing")
    if kind == "focused" and name.startswith("x^"):
        vertex = run.derivation(_vertex_maxima(name, tuple(counts), n))
        yield compare(
            Route.SYMBOLIC, f"{group}, sigma = {name}: focused points that are strict local "
                            f"maxima of F (exact second-order test)",
            stated=1.0, derived=float(sum(vertex.result.strict)), metric="absolute",
            tolerance=Tolerance(0.0, "a count"), parameters=params,
            note="Thm. 5: the focused optimum at argmax p is the only local optimum")


def check(run: Run) -> Iterator[Evidence]:
    names = run.params["activations"]
    for name in names:
        sigma_positive(run, memorisation_activation(name))
    labels: dict[str, list[float]] = {name: [] for name in names}
    items = []
    for group in run.params["groups"]:
        G = build_group(group)
        counts, tries = draw_counts(run, group, G.order)
        run.assume(f"{group}: unique argmax of the sample counts", True,
                   "Thm. 5 assumes a unique g* = argmax p_g (redrawn until it holds)",
                   f"counts {list(counts)} after {tries} draw(s)")
        items += list(_reduction(run, group, counts))
        for name in names:
            items += list(_landscape_evidence(run, group, name, counts, labels))
    yield from _classification(run, names, labels)
    yield from items


CLAIM = register(Claim(
    id="li2.thm5",
    paper=PAPER,
    kind="theorem",
    title="Memorisation solution on single-target data: focused for x^q (q >= 2), spread "
          "for ReLU/SiLU/tanh/sigmoid, no other local optima",
    source="Thm. 5, §4.4; proof App. A.4 (Lemmas 5-6)",
    statement=r"\phi=\sigma'/x,\ \sigma'>0\ \text{on}\ x>0;\ \text{data}\ (g,g^{-1}h)\ "
              r"\text{w.p.}\ p_g,\ g^\ast=\arg\max p_g\ \text{unique}:\ \text{the global "
              r"optimum of}\ \mathcal E\ \text{is}\ \mathbf w=\tfrac1{\sqrt2}(\mathbf "
              r"e_{g^\ast},\mathbf e_{g^{\ast-1}h})\ (\phi\ \text{nondecreasing}),\ \mathbf w="
              r"\tfrac12\sum_gs_g[\mathbf e_g,\mathbf e_{g^{-1}h}],\ s_g=\phi^{-1}(2\lambda/"
              r"p_g),\ \sum_gs_g^2=2\ (\phi\ \text{strictly decreasing});\ \text{no other "
              r"local optima};\ x^q\ (q\ge2)\ \text{focused; ReLU, SiLU, tanh, sigmoid "
              r"spreading}",
    reading=r"Single-target centring: with P_1^\perp the labels vanish (\tilde Y=0, "
            r"\mathcal E\equiv0, derived and measured), so \mathcal E is read with uncentred "
            r"labels, \tfrac12\|Y^\top\sigma(X\mathbf w)\|^2 (scaled by 1/n^2); class-"
            r"centred labels (the author's code) give (1-1/M) times it. Data: a group's "
            r"Cayley table, target h = the last element, sample (g,g^{-1}h) repeated "
            r"c_g=1+\mathrm{Mult}(n-M,\mathrm{Dir}(\alpha)) times, p_g=c_g/n. 'Local "
            r"optima' are read as strict local maxima of \mathcal E on the unit sphere, up "
            r"to \mathbf w\to-\mathbf w when \sigma is odd or even (then \mathcal E(-\mathbf "
            r"w)=\mathcal E(\mathbf w)); the ReLU plateau where every x_i^\top\mathbf w<0 "
            r"(\mathcal E\equiv0 on an open set) is not counted. Found by Armijo projected "
            r"ascent from Gaussian starts and Riemannian Newton polishing; a point is a "
            r"strict maximum when its tangent Hessian is negative definite and no one-sided "
            r"slope along a coordinate direction is positive (the ReLU kinks). Classes: "
            r"'focused' when at most one |s_g| is nonzero, s_g=u_g+v_{g^{-1}h}.",
    parameters={
        "quick": {"groups": ("Z2", "S3"), "activations": PAPER_ACTIVATIONS,
                  "samples_per_element": 5, "alpha": 2.0, "starts": 32, "max_steps": 500,
                  "coarse_gtol_factor": 100.0, "newton_iterations": 4, "cluster_tol": 1e-6,
                  "reduced_random_starts": 8, "lr_scale": 1.0, "reduced_max_steps": 2500,
                  "gtol_factor": 4.0},
        "full": {"groups": ("Z2", "Z5", "S3", "D4"), "activations": PAPER_ACTIVATIONS,
                 "samples_per_element": 8, "alpha": 1.0, "starts": 256, "max_steps": 2000,
                 "coarse_gtol_factor": 100.0, "newton_iterations": 6, "cluster_tol": 1e-6,
                 "reduced_random_starts": 32, "lr_scale": 1.0, "reduced_max_steps": 40000,
                 "gtol_factor": 0.5},
    },
    stated={"classification": stated_classification, "maximiser": stated_maximiser,
            "objective": stated_objective},
    check=check,
    control=NegativeControl("tanh and sigmoid classified focused",
                            {"classification": saturating_flipped}),
    assumptions=(
        Assumption("activations from Thm. 5's list", "x^q with q >= 2, ReLU, SiLU, tanh, "
                   "sigmoid", lambda p: all(n in SPREADING or (n.startswith("x^") and
                                                              float(n[2:]) >= 2)
                                            for n in p["activations"])),
        Assumption("reduced ascent step within the descent-lemma range",
                   "lr = lr_scale / L with 0 < lr_scale <= 1", lambda p: 0 < p["lr_scale"] <= 1),
    ),
    # one group and one activation of the list per run, the Dirichlet concentration of the
    # p_g (small: peaked, large: near-uniform), the sample size, and the reduced ascent's step
    # past the descent-lemma range. Activations off the list have no stated class.
    space={"groups": ONE_SMALL_GROUP,
           "activations": Choice(tuple((a,) for a in PAPER_ACTIVATIONS)),
           "alpha": LogUniform(0.3, 5.0), "samples_per_element": IntRange(2, 8),
           "lr_scale": LogUniform(0.2, 4.0), "seed": SEED},
))
