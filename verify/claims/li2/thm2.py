r"""li2.thm2: Theorem 2, the local maxima of :math:`\mathcal E` on the group task
(:math:`\sigma(x)=x^2`, full data, :math:`\|\mathbf w\|=1`).

Routes: the paper's energies :math:`M/(8d_k)` (real irreps) and :math:`M/(16d_k)` (complex
pairs) (stated); :math:`\mathcal E` built from its definition (Eq. 7) as an exact polynomial
by sympy and evaluated in :math:`\mathbb Q(\zeta_N)` at irrep vectors
:math:`\mathbf w=[\mathbf u;\pm P\mathbf u]`, with its exact Riemannian gradient (derived);
projected gradient ascent from many random starts, the distinct maxima it finds, their
energies, purity over the real isotypic components, form and Hessian (measured); the
separation of different maxima, "not connected": the lowest point of the best path found
between two maxima of different classes (great circle, bent circles, climbed strings,
:mod:`numerics.li2.maxima_paths`) against the lower end (measured).

The exact energy lives in :mod:`theory.li2.group_energy`; the pieces the group-landscape claims
share, :func:`tangent_inertia` (exact rank, float64 signs) and :func:`landscape` (cached, so
``li2.cor1`` and the negative control reuse one ascent), in :mod:`verify.claims.li2._landscape`.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
import torch

from numerics.activations import activation
from numerics.li2.group_task import group_task
from numerics.li2.landscape import Landscape, MaximumClass
from numerics.li2.maxima_paths import pairwise_pass_heights, pass_heights
from theory.derivation import Derivation
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, real_irreps
from theory.li2.group_energy import (
    IrrepPoint,
    character_points,
    complex_domain_energy,
    exact_energy,
    irrep_points,
    normalised_energy,
    paper_form,
    riemannian_gradient,
    translate,
)
from verify import (
    SEED,
    Assumption,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import ONE_SMALL_GROUP, build_group
from verify.claims.li2._landscape import ASCENT, landscape, maxima, tangent_inertia
from verify.claims.li2._printed_forms import stated_max_energy

# --- the paper's formulas ---------------------------------------------------------------------

def squared_dimension_energy(M: int, d: int, kind: str):
    r"""Planted error: :math:`d_k^2` in place of :math:`d_k`."""
    return sp.Rational(M, 8 * d * d) if kind == "R" else sp.Rational(M, 16 * d * d)


# --- checks -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExactValues:
    """Exact E/|w|^4 and Riemannian gradients at the irrep points of one group (cached: the
    claim and its control share them), plus the figures on other forms and readings."""

    points: tuple[tuple[IrrepPoint, int], ...]  # (point, sign of the second block)
    energies: tuple[sp.Expr, ...]
    gradients: tuple[tuple[sp.Expr, ...], ...]
    characters: tuple[tuple[IrrepPoint, sp.Expr, bool, tuple[int, int, int]], ...]
    # (point, E, critical?, tangent Hessian inertia (negative, zero, positive))
    off_form: dict
    complex_domain: dict
    derivation: Derivation


@lru_cache(maxsize=32)
def exact_values(G: FiniteGroup) -> ExactValues:
    ex = exact_energy(G)
    F = irreps(G)[0].field
    M = G.order
    d_ = Derivation(f"E at irrep vectors of {G.name}, exact in Q(zeta_{F.N})")
    points, energies, gradients = [], [], []
    for pt in irrep_points(G):
        for sign in (1, -1):
            w = paper_form(G, pt.u, sign)
            e = normalised_energy(ex, w, F).to_sympy()
            points.append((pt, sign))
            energies.append(e)
            gradients.append(tuple(x.to_sympy() for x in riemannian_gradient(ex, w, F)))
            d_.step(f"u = {pt.label} of real irrep {pt.component} (type {pt.kind}, "
                    f"d={pt.dim}), w = [u; {'+' if sign > 0 else '-'}P u]: E(w/|w|) =", e)
    characters = []
    for pt in character_points(G):
        w = paper_form(G, pt.u)
        e = normalised_energy(ex, w, F).to_sympy()
        critical = all(not x for x in riemannian_gradient(ex, w, F))
        inertia = tangent_inertia(ex, w, F)
        characters.append((pt, e, critical, inertia))
        d_.step(f"u = chi of real irrep {pt.component} (d={pt.dim}), w = [u; P u]: "
                f"critical point: {critical}; tangent Hessian (negative, zero, positive) = "
                f"{inertia}; E(w/|w|) =", e)
    off_form = {}
    for pt in irrep_points(G):
        u = list(pt.u)
        g = next((g for g in range(M) if translate(G, u, g) not in (u, [-x for x in u])), None)
        if g is None:
            continue
        w = u + paper_form(G, translate(G, u, g))[M:]
        off_form[f"component {pt.component} ({pt.kind}, d={pt.dim}), g = {G.label(g)}"] = {
            "E/M": str(normalised_energy(ex, w, F).to_sympy() / M),
            "E/M at [u; Pu]": str(normalised_energy(ex, paper_form(G, u), F).to_sympy() / M),
            "critical point": all(not x for x in riemannian_gradient(ex, w, F))}
    complex_domain = {}
    for rep in irreps(G):
        if rep.type != "C" or rep.conjugate_index < rep.index:
            continue
        u = [m[0][0] for m in rep.exact_matrices]
        complex_domain[f"complex irrep {rep.index} (d={rep.dim})"] = {
            "[u; P u]": str(complex_domain_energy(ex, paper_form(G, u), F).to_sympy() / M),
            "[u; P conj(u)]": str(complex_domain_energy(
                ex, paper_form(G, u, conjugate=True), F).to_sympy() / M)}
    return ExactValues(tuple(points), tuple(energies), tuple(gradients), tuple(characters),
                       off_form, complex_domain, d_)


def _exact(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    stated = run.stated["E_star"]
    M = G.order
    run.derivation(exact_energy(G).derivation)
    ev = exact_values(G)
    run.derivation(ev.derivation)
    labels = [f"{pt.kind}{pt.component} (d={pt.dim}), {'+' if sign > 0 else '-'}"
              for pt, sign in ev.points]
    yield symbolic_identity(
        f"{name}: E at w = [u; +-Pu], u in each nontrivial real isotypic component (exact)",
        stated=sp.Matrix([stated(M, pt.dim, pt.kind) for pt, _ in ev.points]),
        derived=sp.Matrix(ev.energies), parameters={"group": name, "M": M, "points": labels},
        note="u = C_k(g)_00 (type R) or 2 Re C_k(g)_00 (types C, H); derived: E from Eq. 7 "
             "(sympy), evaluated exactly in Q(zeta_N)")
    yield symbolic_identity(
        f"{name}: Riemannian gradient at those points (exact)",
        stated=sp.zeros(len(ev.gradients), 2 * M), derived=sp.Matrix(ev.gradients),
        parameters={"group": name, "points": labels},
        note="grad E - (w.grad E / |w|^2) w, grad E = sum_m q_m A_m w (sympy A_m)")
    if ev.characters:
        yield symbolic_identity(
            f"{name}: E at w = [chi_k; P chi_k] (u in H_k with a full-rank Fourier "
            f"coefficient), real irreps of dimension >= 2 (exact)",
            stated=sp.Matrix([stated(M, pt.dim, pt.kind) for pt, *_ in ev.characters]),
            derived=sp.Matrix([e for _, e, _, _ in ev.characters]),
            parameters={"group": name,
                        "components": [pt.component for pt, *_ in ev.characters],
                        "critical points": [c for _, _, c, _ in ev.characters],
                        "tangent Hessian (negative, zero, positive)": [
                            i for *_, i in ev.characters]},
            note="Thm. 2 takes any u in H_k; the character is one such u (a critical point; "
                 "a positive tangent eigenvalue makes it a saddle)")
    if ev.off_form:
        run.figure(f"{name}: exact E/M at w = [u; P R_g u] (second block not +-Pu), with "
                   f"R_g u != +-u", ev.off_form)
    if ev.complex_domain:
        run.figure(f"{name}: complex-domain reading, exact E/M at u = C_k(g)_00 (complex) "
                   f"with second block P u or P conj(u)", ev.complex_domain)


def _measured_tolerance(run: Run, n: int, M: int, classes) -> Tolerance:
    # Rounding. On the unit sphere sum_i sigma_i = sum_(a,b) (u_a + v_b)^2
    # = M(|u|^2 + |v|^2) + 2 (1.u)(1.v) <= 2M, and |Yt_im| <= 1, so each c_m = (Yt^T sigma)_m
    # errs by at most (n + M + 2) u 2M (a length-n sum, the centring, sigma itself; Higham
    # ch. 3). E = 1/2 sum c_m^2 then errs by sum |c_m| |dc_m| <= sqrt(2 M E) (n + M + 2) u 2M,
    # i.e. relatively 2 (n + M + 2) u M sqrt(2M / E).
    # Convergence: at Riemannian gradient norm g near a Morse-Bott maximum whose smallest
    # non-zero |eigenvalue| is mu, E* - E <= g^2 / (2 mu).
    u = unit_roundoff(run.dtype)
    worst = 0.0
    for c in classes:
        mu = float(c.spectra.abs()[c.spectra.abs() > c.null_threshold].min())
        conv = c.grad_norm**2 / (2 * mu * c.energy)
        rounding = 2 * (n + M + 2) * u * M * (2 * M / c.energy) ** 0.5
        worst = max(worst, conv + rounding)
    return Tolerance(worst, f"rounding 2(n+M+2) u M sqrt(2M/E) (n={n}, u={u:.1e}) plus "
                            f"convergence g^2/(2 mu E) at the largest gradient norm g")


def _measured(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    stated = run.stated["E_star"]
    tl = landscape(run, name)
    L, M, n = tl.landscape, G.order, G.order**2
    reals = real_irreps(G)
    found = maxima(tl)
    converged = int(L.ascent.converged.sum())
    run.assume(f"{name}: ascent converged", converged == len(L.ascent.converged),
               "every start reached Riemannian gradient norm <= gtol",
               f"{converged} of {len(L.ascent.converged)} starts in {L.ascent.steps} steps")
    u = unit_roundoff(run.dtype)
    decrease = float(L.ascent.largest_decrease.max())
    run.assume(f"{name}: ascent monotone", decrease <= 1e3 * u * M,
               "E never decreased by more than rounding (1e3 u M) along the ascent",
               f"largest decrease {decrease:.2e}")
    missing = sorted(set(range(1, len(reals))) - {c.component for c in found})
    run.assume(f"{name}: every nontrivial real irrep reached", not missing,
               "some start ended at a maximum in each nontrivial real isotypic component",
               f"components not reached: {missing}")
    saddles = [c for c in L.classes if not c.is_maximum or c.component == 0]
    run.figure(f"{name}: landscape", {
        "seconds": tl.seconds, "starts": len(L.ascent.converged), "steps": L.ascent.steps,
        "lr": tl.lr, "gtol": tl.gtol, "largest decrease of E": decrease,
        "critical points that are not maxima (or trivial component)": len(saddles),
        "maxima": [{
            "component": c.component, "type": reals[c.component].type,
            "d": reals[c.component].source.dim, "E/M": c.energy / M,
            "stated E/M": float(stated(M, reals[c.component].source.dim,
                                       reals[c.component].type)) / M,
            "starts": len(c.members), "grad norm": c.grad_norm,
            "purity u, v": [c.purity_u, c.purity_v],
            "form residual min, max": list(c.form_residual),
            "hessian (negative, zero, positive)": [
                int((c.spectra[0] < -c.null_threshold).sum()), c.nullity[0],
                int((c.spectra[0] > c.null_threshold).sum())],
            "hessian eigenvalues / M (min, max nonzero)": [
                float(c.spectra[0].min()) / M,
                float(c.spectra[0][c.spectra[0].abs() > c.null_threshold].max()) / M],
        } for c in found]})
    if not found:
        return
    yield compare(
        Route.NUMERIC, f"{name}: E*/M at the distinct maxima found by ascent",
        stated=[float(stated(M, reals[c.component].source.dim, reals[c.component].type)) / M
                for c in found],
        measured=[c.energy / M for c in found],
        tolerance=_measured_tolerance(run, n, M, found),
        parameters={"group": name, "starts": run.params["starts"],
                    "maxima": [(c.component, reals[c.component].type,
                                reals[c.component].source.dim) for c in found]},
        note="maxima grouped by dominant real isotypic component and energy; stated value "
             "from the component's type and d_k")
    # A maximum is "pure" when both blocks lie in one real component up to sqrt(u): a
    # converged point is within (g/mu)^2 + M u of its component (far below sqrt(u)); a
    # genuinely mixed maximum would miss by O(1).
    delta = u**0.5
    impure = [c for c in found if min(c.purity_u, c.purity_v) < 1 - delta]
    yield compare(
        Route.NUMERIC, f"{name}: maxima not concentrated in one real isotypic component",
        stated=0.0, measured=float(len(impure)), metric="absolute",
        tolerance=Tolerance(0.0, "a count"), parameters={"group": name, "purity_tol": delta},
        note="Thm. 2: no local maxima other than those in one H_k (or H_k + H_kbar)")
    fractions = [float((L.form[c.members.to(L.form.device)] <= delta).double().mean())
                 for c in found]
    yield compare(
        Route.NUMERIC, f"{name}: fraction of each maximum's starts of the form [u; +-Pu]",
        stated=[1.0] * len(found), measured=fractions, metric="absolute",
        tolerance=Tolerance(0.0, "fractions of starts classified with residual <= sqrt(u) "
                                 "(converged points of that form are within g/mu + u)"),
        parameters={"group": name, "components": [c.component for c in found],
                    "form_tol": delta},
        note="residual min_+-|w_2 -+ P u| / |u|; Thm. 2 states the maxima are [u; +-Pu]")


def _farthest_member(L: Landscape, c: MaximumClass) -> torch.Tensor:
    """The member of class ``c`` least aligned with its representative (sign chosen so the
    two are not antipodal): the far end of the family, for the within-family path."""
    w = L.ascent.w[c.members.to(L.ascent.w.device)]
    dots = w @ c.representative.to(w)
    far = int(dots.abs().argmin())
    return w[far] * (1.0 if float(dots[far]) >= 0 else -1.0)


def _paths(run: Run, G: FiniteGroup, name: str, found: list[MaximumClass]) -> tuple:
    """Pass heights between the first ``path_classes`` maxima (highest energy first) and,
    within each class, from its representative to its farthest member (memoised: the stated
    forms do not enter)."""
    L, M, p = landscape(run, name).landscape, G.order, run.params
    task, x2 = group_task(G.table, device=run.device), activation("x2")
    settings = {"points": p["path_points"], "bends": p["path_bends"], "lr": p["lr_scale"] / M,
                "steps": p["string_steps"]}
    reps = [c.representative.to(device=run.device, dtype=run.dtype) for c in found]
    across = pairwise_pass_heights(reps[:p["path_classes"]], task, x2,
                                   run.generator(f"paths:{name}"), **settings)
    inside = [k for k, c in enumerate(found) if len(c.members) > 1]
    far = [_farthest_member(L, found[k]).to(reps[k]) for k in inside]
    within = pass_heights(torch.stack([reps[k] for k in inside]), torch.stack(far), task, x2,
                          run.generator(f"family paths:{name}"), **settings) if inside else []
    cosines = [float(reps[k] @ f) for k, f in zip(inside, far)]
    return settings, across, inside, cosines, within


def _separation(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    """Thm. 2, "different maxima are not connected": between every two maxima found in
    different classes, the best path found (great circle, bent circles, climbed strings) dips
    below the lower end by more than the energies' noise."""
    found = maxima(landscape(run, name))
    if len(found) < 2:
        return
    M = G.order
    settings, across, inside, cosines, within = run.memo(
        "li2.thm2 pass heights", lambda: _paths(run, G, name, found), key=name)
    # Each energy errs relatively by the measured route's tolerance (rounding plus the ends'
    # convergence gap); a dip is a difference of two energies over one of them, so noise
    # reaches at most twice that. A path at constant height gives a dip of that size or less.
    noise = 2 * _measured_tolerance(run, M * M, M, found).value
    label = [f"{found[i].component}-{found[j].component}" for (i, j), _ in across]
    run.figure(f"{name}: pass heights between maxima (E/M)", {
        "noise (relative dip)": noise,
        "across classes": [{"components": lab, "ends": [e / M for e in x.ends],
                            "great circle": x.great_circle / M, "bent circle": x.bent / M,
                            "climbed string": x.string / M, "relative dip": x.dip}
                           for lab, (_, x) in zip(label, across)],
        "within a class (representative to its farthest member)": [
            {"component": found[k].component, "cos angle": cos, "relative dip": x.dip,
             "dip <= noise (a constant-height path found)": x.dip <= noise}
            for k, cos, x in zip(inside, cosines, within)]})
    yield at_least(
        Route.NUMERIC, f"{name}: relative dip of the best path found between maxima of "
                       f"different classes", measured=[x.dip for _, x in across],
        bound=[noise] * len(across),
        tolerance=Tolerance(0.0, "the bound is already the noise of the dips"),
        parameters={"group": name, "pairs (components)": label, **settings},
        note="dip = (min E(ends) - highest lowest point over the paths tried) / min E(ends); "
             "> noise: the maxima are not joined at constant height along any path tried")


def check(run: Run) -> Iterator[Evidence]:
    for name in run.params["groups"]:
        G = build_group(name)
        if G.order <= run.params["exact_max_order"]:
            yield from _exact(run, G, name)
        yield from _measured(run, G, name)
        yield from _separation(run, G, name)


CLAIM = register(Claim(
    id="li2.thm2",
    paper=PAPER,
    kind="theorem",
    title="Local maxima of E on the group task: [u; +-Pu] with E* = M/(8d_k) or M/(16d_k)",
    source="Thm. 2, §4.2; proof App. A.1 (Eqs. 13-25)",
    statement=r"\sigma(x)=x^2,\ n=M^2,\ \|\mathbf w\|=1:\ \text{the local maxima of }"
              r"\mathcal E\text{ are }\mathbf w^\ast=[\mathbf u;\pm P\mathbf u];\ "
              r"\mathbf u\in\mathcal H_k\ (\text{real irrep}):\ \mathcal E^\ast=M/(8d_k);\ "
              r"\mathbf u\in\mathcal H_k\oplus\mathcal H_{\bar k}\ (\text{complex pair}):\ "
              r"\mathcal E^\ast=M/(16d_k);\ \text{no other local maxima}",
    reading=r"Real domain: \mathbf w=[\mathbf u;\mathbf w_2]\in\mathbb R^{2M} on the unit "
            r"sphere, \mathcal E=\tfrac12\|\tilde Y^\top(X\mathbf w)^{\circ2}\|^2 on all M^2 "
            r"pairs, \tilde Y=P_1^\perp Y. d_k is the complex dimension of the irrep; "
            r"\mathcal H_k the real isotypic component (a conjugate pair is one component). "
            r"Type H (e.g. Q_8), which the theorem does not name, is read like a complex "
            r"pair: its real irrep has dimension 2d_k, so the stated value is M/(16d_k) "
            r"(equivalently M/(8d_R) for every type, d_R the real dimension). Exact route: "
            r"\mathbf u=C_k(g)_{00} (type R) or 2\,\mathrm{Re}\,C_k(g)_{00} (C, H), which "
            r"lies in \mathcal H_k, and also \mathbf u=\chi_k for real irreps with d_k\ge2. "
            r"Measured route: maxima found by projected gradient ascent, grouped by dominant "
            r"component and energy; a point is a maximum when the Riemannian gradient is "
            r"below gtol and no tangent Hessian eigenvalue exceeds sqrt(u) of the largest. "
            r"The complex-domain reading (second block P\mathbf u or P\bar{\mathbf u}, "
            r"holomorphic \sigma, Hermitian norms) is evaluated exactly and reported as a "
            r"figure. 'Different maxima are not connected': the maxima form families (Cor. "
            r"1's flat directions), so a single maximum is not an isolated point; read as: two "
            r"maxima of different classes (dominant component and energy) are not joined by "
            r"a path at constant height, i.e. every path between them dips below the lower "
            r"end. Measured between the (up to) 6 highest maxima classes, by the best of the "
            r"great circle, bent circles and strings climbed from them "
            r"(numerics.li2.maxima_paths): its relative dip must exceed twice the energies' "
            r"noise; a search, not a proof that no higher path exists. "
            r"Within one class, representative to farthest member, reported as a figure. "
            r"Not checked: the extension to \sigma=ax+bx^2 (li2.x.activations).",
    parameters={
        "quick": {"groups": ("Z3", "Z4", "Z7", "Z8", "Z3xZ3", "S3", "D4", "Q8"),
                  "exact_max_order": 9, "path_points": 33, "path_bends": 1,
                  "string_steps": 20, "path_classes": 6, **ASCENT["quick"]},
        "full": {"groups": ("Z3", "Z4", "Z7", "Z8", "Z11", "Z12", "Z23", "Z71", "Z3xZ3",
                            "Z2xZ4", "S3", "D4", "D5", "A4", "S4", "Q8"),
                 "exact_max_order": 12, "path_points": 65, "path_bends": 3,
                 "string_steps": 200, "path_classes": 6, **ASCENT["full"]},
    },
    stated={"E_star": stated_max_energy},
    check=check,
    control=NegativeControl("d_k^2 in place of d_k: M/(8d_k^2), M/(16d_k^2)",
                            {"E_star": squared_dimension_energy}),
    assumptions=(
        Assumption("ascent step within the stability range",
                   "lr = lr_scale / M with lr_scale <= 0.5 keeps lr |lambda| < 2 at the maxima "
                   "(tangent Hessian eigenvalues in [-4M, 0))",
                   lambda p: 0 < p["lr_scale"] <= 0.5),
    ),
    # a group of each irrep type, the ascent step past its stability range (lr_scale > 0.5)
    # and the number of random starts that must reach every maximum
    space={"groups": ONE_SMALL_GROUP, "lr_scale": LogUniform(0.1, 1.0),
           "starts": IntRange(16, 256), "seed": SEED},
))
