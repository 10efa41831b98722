r"""li2.cor2: Corollary 2, the local maxima of :math:`\mathcal E` for modular addition
:math:`\mathbb Z_M` (:math:`\sigma(x)=x^2`, full data, :math:`\|\mathbf w\|=1`).

Routes: the paper's energies :math:`M/16` (a frequency pair :math:`k`, :math:`2k\ne M`) and
:math:`M/8` (:math:`k=M/2`, even :math:`M`) (stated); :math:`\mathcal E` built from its
definition (Eq. 7) by sympy (:func:`theory.li2.group_energy.exact_energy`) and evaluated
exactly in :math:`\mathbb Q(\zeta_{\mathrm{lcm}(M,4)})` at
:math:`\mathbf u=a\cos(km\omega)+b\sin(km\omega)`, :math:`\mathbf w=[\mathbf u;\pm P\mathbf u]`,
for several rational phases :math:`(a,b)`, with its exact Riemannian gradient (derived); the
maxima found by projected gradient ascent from random starts (the cached landscape of
``li2.thm2``), their energies and their DFT power in the dominant frequency pair, and the
lowest point of the best path found between maxima of different frequencies (measured).
"""
from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache
from math import lcm

import sympy as sp
import torch

from numerics.activations import activation
from numerics.li2.group_task import group_task
from numerics.li2.maxima_paths import pairwise_pass_heights
from theory.derivation import Derivation
from theory.groups.cyclotomic import Cyc, cyclotomic_field, imaginary_unit
from theory.li2.group_energy import (
    exact_energy,
    normalised_energy,
    paper_form,
    riemannian_gradient,
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
    at_least,
    compare,
    register,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import build_group
from verify.claims.li2._landscape import ASCENT, landscape, maxima

#: Phases (a, b) of u = a cos + b sin: pure cosine, pure sine, and two mixed ones.
PHASES: tuple[tuple[Fraction, Fraction], ...] = (
    (Fraction(1), Fraction(0)), (Fraction(0), Fraction(1)), (Fraction(1), Fraction(1)),
    (Fraction(3), Fraction(-2)))


def stated_max_energy(M: int, k: int):
    r"""Cor. 2: :math:`\mathcal E^\ast=M/16` for a frequency pair :math:`k` (odd :math:`M`, and
    every :math:`k\ne M/2`), :math:`M/8` for :math:`k=M/2` (even :math:`M`)."""
    return sp.Rational(M, 8) if 2 * k == M else sp.Rational(M, 16)


def halved_energy(M: int, k: int):
    r"""Planted error: :math:`M/32` (and :math:`M/16` at :math:`k=M/2`)."""
    return stated_max_energy(M, k) / 2


def frequency_vector(M: int, k: int, a: Fraction, b: Fraction) -> list[Cyc]:
    r""":math:`u_m=a\cos(km\omega)+b\sin(km\omega)`, :math:`\omega=2\pi/M`, exactly in
    :math:`\mathbb Q(\zeta_N)`, :math:`N=\mathrm{lcm}(M,4)`: :math:`\cos=(z+\bar z)/2`,
    :math:`\sin=(z-\bar z)/(2i)` with :math:`z=\zeta_M^{km}`."""
    if M < 2:
        raise ValueError(f"M: {M} must be >= 2")
    if not 1 <= k <= M // 2:
        raise ValueError(f"k: {k} must lie in 1..{M // 2}")
    F = cyclotomic_field(lcm(M, 4))
    i = imaginary_unit(F)
    step = F.N // M
    out = []
    for m in range(M):
        z = F.root(step * ((k * m) % M))
        zc = z.conjugate()
        out.append((z + zc) * Fraction(a, 2) + (z - zc) * Fraction(b, 2) / i)
    return out


@lru_cache(maxsize=16)
def exact_frequency_values(M: int) -> tuple[tuple, Derivation]:
    """Exact E(w/|w|) and Riemannian gradients at w = [u_k; +-P u_k] for every frequency k and
    every phase in :data:`PHASES` (cached: the claim and its control share them)."""
    G = build_group(f"Z{M}")
    ex = exact_energy(G)
    F = cyclotomic_field(lcm(M, 4))
    d_ = Derivation(f"E at single frequencies of Z{M}, exact in Q(zeta_{F.N})")
    rows = []
    for k in range(1, M // 2 + 1):
        for a, b in PHASES:
            u = frequency_vector(M, k, a, b)
            if not any(u):
                continue  # sin at k = M/2 vanishes identically
            for sign in (1, -1):
                w = paper_form(G, u, sign)
                e = normalised_energy(ex, w, F).to_sympy()
                grad = tuple(x.to_sympy() for x in riemannian_gradient(ex, w, F))
                rows.append((k, (str(a), str(b)), sign, e, grad))
                d_.step(f"k={k}, u = {a} cos(k m w) + {b} sin(k m w), "
                        f"w = [u; {'+' if sign > 0 else '-'}P u]: E(w/|w|) =", e)
    return tuple(rows), d_


def _exact(run: Run, M: int) -> Iterator[Evidence]:
    stated = run.stated["E_star"]
    run.derivation(exact_energy(build_group(f"Z{M}")).derivation)
    rows, d_ = exact_frequency_values(M)
    run.derivation(d_)
    labels = [f"k={k}, (a,b)=({a},{b}), {'+' if s > 0 else '-'}" for k, (a, b), s, _, _ in rows]
    yield symbolic_identity(
        f"Z{M}: E at w = [u_k; +-P u_k], u_k = a cos(k m w) + b sin(k m w) (exact)",
        stated=sp.Matrix([stated(M, k) for k, *_ in rows]),
        derived=sp.Matrix([e for *_, e, _ in rows]),
        parameters={"M": M, "points": labels},
        note="derived: E from Eq. 7 (sympy), evaluated exactly in Q(zeta_lcm(M,4)), "
             "normalised by |w|^4 (degree-4 homogeneity)")
    yield symbolic_identity(
        f"Z{M}: Riemannian gradient at those points (exact)",
        stated=sp.zeros(len(rows), 2 * M), derived=sp.Matrix([g for *_, g in rows]),
        parameters={"M": M, "points": labels},
        note="the stated vectors are critical points on the sphere")


def dominant_frequency_power(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""For real rows ``x`` (``(B, M)``): the frequency :math:`k\in\{0..\lfloor M/2\rfloor\}`
    with the largest DFT power in the pair :math:`\{k,-k\}` and that power's fraction of
    :math:`\|\mathbf x\|^2` (Parseval: :math:`\sum_j|\hat x_j|^2=M\|\mathbf x\|^2`)."""
    M = x.shape[-1]
    power = torch.fft.fft(x, dim=-1).abs().square() / M
    ks = torch.arange(M // 2 + 1, device=x.device)
    # k = 0 and k = M/2 are their own conjugates: count them once.
    mirror = torch.where((ks == 0) | (2 * ks == M), ks.new_tensor(-1), (M - ks) % M)
    pair = power[..., ks] + torch.where(mirror >= 0, power[..., mirror.clamp(min=0)], 0.0)
    frac, k = (pair / x.square().sum(-1, keepdim=True)).max(-1)
    return k, frac


def _measured(run: Run, M: int) -> Iterator[Evidence]:
    stated = run.stated["E_star"]
    name = f"Z{M}"
    tl = landscape(run, name)
    L = tl.landscape
    found = maxima(tl)
    run.assume(f"{name}: ascent converged", bool(L.ascent.converged.all()),
               "every start reached Riemannian gradient norm <= gtol",
               f"{int(L.ascent.converged.sum())} of {len(L.ascent.converged)} starts")
    if not found:
        return
    u = unit_roundoff(run.dtype)
    w = L.ascent.w
    rows = []
    for c in found:
        members = c.members.to(w.device)
        ku, fu = dominant_frequency_power(w[members, :M])
        kv, fv = dominant_frequency_power(w[members, M:])
        rows.append({"E/M": c.energy / M, "starts": len(c.members),
                     "frequencies (u)": sorted(set(ku.tolist())),
                     "frequencies (v)": sorted(set(kv.tolist())),
                     "k": int(ku[0]), "min power fraction": float(torch.minimum(fu, fv).min()),
                     "same k in u and v": bool((ku == kv).all() and (ku == ku[0]).all()),
                     "grad norm": c.grad_norm})
    run.figure(f"{name}: maxima found by ascent", {
        "seconds": tl.seconds, "starts": len(L.ascent.converged), "steps": L.ascent.steps,
        "maxima": rows})
    # Tolerance as li2.thm2's measured route: convergence g^2/(2 mu E) plus rounding
    # 2 (n + M + 2) u M sqrt(2M/E) (Higham ch. 3 on the length-n sums).
    n = M * M
    tol = 0.0
    for c in found:
        mu = float(c.spectra.abs()[c.spectra.abs() > c.null_threshold].min())
        tol = max(tol, c.grad_norm**2 / (2 * mu * c.energy)
                  + 2 * (n + M + 2) * u * M * (2 * M / c.energy) ** 0.5)
    yield compare(
        Route.NUMERIC, f"{name}: E*/M at the distinct maxima found by ascent",
        stated=[float(stated(M, r["k"])) / M for r in rows],
        measured=[r["E/M"] for r in rows],
        tolerance=Tolerance(tol, "rounding 2(n+M+2) u M sqrt(2M/E) plus convergence "
                                 "g^2/(2 mu E) at the largest gradient norm g"),
        parameters={"M": M, "starts": run.params["starts"], "k": [r["k"] for r in rows]},
        note="stated value from the dominant DFT frequency pair of the maximum")
    # A converged point lies within (g/mu)^2 + M u of its frequency pair in power, far below
    # sqrt(u); a maximum mixing frequencies would miss by O(1).
    yield compare(
        Route.NUMERIC, f"{name}: DFT power fraction of u and v in one frequency pair, "
                       f"worst start of each maximum",
        stated=[1.0] * len(rows), measured=[r["min power fraction"] for r in rows],
        metric="absolute",
        tolerance=Tolerance(u**0.5, "sqrt(u): converged points are within (g/mu)^2 + M u"),
        parameters={"M": M, "k": [r["k"] for r in rows],
                    "same k in u and v": [r["same k in u and v"] for r in rows]},
        note="Cor. 2: every local maximum is a single frequency")
    # "Different maxima are disconnected" (reading as li2.thm2): every path tried between two
    # maxima of different frequencies dips below the lower end by more than twice the
    # energies' relative noise (tol: a dip is a difference of two energies over one).
    p = run.params
    across = run.memo("li2.cor2 pass heights", lambda: pairwise_pass_heights(
        [c.representative.to(device=w.device, dtype=run.dtype)
         for c in found[:p["path_classes"]]],
        group_task(build_group(name).table, device=w.device), activation("x2"),
        run.generator(f"paths:{name}"), points=p["path_points"], bends=p["path_bends"],
        lr=p["lr_scale"] / M, steps=p["string_steps"]), key=name)
    if across:
        pairs = [(rows[i]["k"], rows[j]["k"]) for (i, j), _ in across]
        run.figure(f"{name}: pass heights between maxima of different frequencies (E/M)", [
            {"k": list(k), "ends": [e / M for e in x.ends], "great circle": x.great_circle / M,
             "bent circle": x.bent / M, "climbed string": x.string / M, "relative dip": x.dip}
            for k, (_, x) in zip(pairs, across)])
        yield at_least(
            Route.NUMERIC, f"{name}: relative dip of the best path found between maxima of "
                           f"different frequencies", measured=[x.dip for _, x in across],
            bound=[2 * tol] * len(across),
            tolerance=Tolerance(0.0, "the bound is already the noise of the dips"),
            parameters={"M": M, "frequency pairs": pairs, "string steps": p["string_steps"]},
            note="great circle, bent circles and strings climbed from them "
                 "(numerics.li2.maxima_paths); a search, not a proof")


def check(run: Run) -> Iterator[Evidence]:
    for M in run.params["M"]:
        if M <= run.params["exact_max_order"]:
            yield from _exact(run, M)
        yield from _measured(run, M)


CLAIM = register(Claim(
    id="li2.cor2",
    paper=PAPER,
    kind="corollary",
    title="Modular addition: maxima are single frequencies, E* = M/16 (odd M), M/8 at k = M/2",
    source="Cor. 2, §4.2",
    statement=r"H=\mathbb Z_M,\ \sigma(x)=x^2:\ M\text{ odd: every local maximum is }"
              r"\mathbf u_k=a_k[\cos(km\omega)]_m+b_k[\sin(km\omega)]_m,\ \omega=2\pi/M,\ "
              r"\mathcal E^\ast=M/16;\ M\text{ even: }\mathbf u_{M/2}\propto[(-1)^m],\ "
              r"\mathcal E^\ast=M/8;\ \text{different maxima are disconnected}",
    reading=r"Setting of Thm. 2: real \mathbf w=[\mathbf u;\mathbf w_2] on the unit sphere, "
            r"\mathcal E=\tfrac12\|\tilde Y^\top(X\mathbf w)^{\circ2}\|^2 on all M^2 pairs, "
            r"\mathbf w=[\mathbf u_k;\pm P\mathbf u_k] normalised. For even M the frequencies "
            r"k\ne M/2 are read with the odd-M value M/16. Exact route: phases (a,b) in "
            r"{(1,0),(0,1),(1,1),(3,-2)}, every k in 1..\lfloor M/2\rfloor. Measured route: "
            r"maxima found by the ascent of li2.thm2 (same seeds, shared cache); frequency "
            r"content by the DFT power in the pair \{k,-k\}. 'Different maxima are "
            r"disconnected', read as in li2.thm2: maxima of different frequencies are not "
            r"joined by a path at constant height (checked between the 6 highest); the best "
            r"path found (great circle, bent circles, climbed strings) must dip below the "
            r"lower end by more than twice the energies' noise (a search, not a proof).",
    parameters={
        "quick": {"M": (5, 7, 8), "exact_max_order": 8, "path_points": 33, "path_bends": 1,
                  "string_steps": 20, "path_classes": 6, **ASCENT["quick"]},
        "full": {"M": (5, 7, 8, 11, 23, 71), "exact_max_order": 12, "path_points": 65,
                 "path_bends": 3, "string_steps": 200, "path_classes": 6,
                 **ASCENT["full"]},
    },
    stated={"E_star": stated_max_energy},
    check=check,
    control=NegativeControl("E* halved: M/32 (M/16 at k = M/2)", {"E_star": halved_energy}),
    assumptions=(
        Assumption("M >= 3", "Cor. 2 concerns nontrivial frequencies",
                   lambda p: all(M >= 3 for M in p["M"])),
        Assumption("ascent step within the stability range",
                   "lr = lr_scale / M with lr_scale <= 0.5 (as li2.thm2)",
                   lambda p: 0 < p["lr_scale"] <= 0.5),
    ),
    # M = 2 and lr_scale > 0.5 lie outside the assumptions; lr_scale stays below 0.6: above
    # it the ascent can stop converging (Z6 at 0.7: 195 of 256 starts) and runs out its
    # max_steps, minutes a point.
    space={"M": Choice(tuple((M,) for M in (2, 3, 4, 5, 6, 7, 8, 9, 11, 12))),
           "starts": IntRange(16, 256), "lr_scale": LogUniform(0.25, 0.6), "seed": SEED},
))
