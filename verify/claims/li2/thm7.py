r"""li2.thm7: Theorem 7, top-down modulation: when the hidden layer has learned only the irreps
:math:`\mathcal S`, the residual of the top layer drives new nodes to the missing irreps.

Routes: the paper's formulas (stated): :math:`\Pi_k=\tfrac{d_k}M\sum_g\overline{\chi_k(g)}R_g`,
:math:`\hat Y^{(k)}_{\text{block }h,h'}=\tfrac{d_k}M\chi_k(h'^{-1}h)\mathbf 1_M`, the operator
:math:`(\Phi_{\mathcal S}\otimes\mathbf 1_M)(\Phi_{\mathcal S}\otimes\mathbf 1_M)^*`,
:math:`\mathcal E_{\mathcal S}=\tfrac M2\sum_{k\ne0,k\notin\mathcal S}\tfrac1{d_k}
|\sum_r\mathrm{tr}\,\hat S_{k,r}|^2` and "local maxima only on the missing irreps";
the exact least-squares fit, residual and modified energy in :math:`\mathbb Q(\zeta_L)`
(:mod:`theory.li2.top_down`) and :math:`Q_kQ_k^*` from Eq. 8 (derived); the float64 fit on the
same kind of nodes, the modified energy, and projected ascent of it from random starts
(:mod:`numerics.li2.top_down`) (measured).

Training (the frequencies learned against :math:`G_F`'s spectrum): the two-layer network on
:math:`\mathbb Z_M` (x^2, class-centred MSE, Adam, a few nodes per frequency, seeds
on the batch axis, one sweep point per group:
:func:`numerics.li2.sweep_points.gradient_spectrum_point`); at
checkpoints the spectrum of :math:`G_F` over the target's real irreps (the power of its class
sums per component, what :math:`(\Phi_{\mathcal S}\otimes\mathbf 1_M)^\ast` reads:
:func:`numerics.li2.gradient_spectrum.target_power`) and the nodes per frequency (each node's
dominant nontrivial component). From the peak of :math:`\|G_F\|` on (its early rise over,
Prop. 1: the hidden layer has started to learn irreps), per seed the mean over checkpoints of
the Spearman correlation over frequencies of :math:`G_F`'s power with (a) the nodes held
there, stated negative (:math:`G_F` lies on the missing irreps), and (b) the nodes gained
from there to the end, stated positive (the frequencies learned follow :math:`G_F`'s
spectrum); each decided on the t-interval over seeds. A shuffled frequency assignment leaves
the interval around 0 (tests).
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
import torch

from numerics.li2.gradient_spectrum import rank_correlation
from numerics.li2.group_task import GroupTask, group_task
from numerics.li2.landscape import tangent_spectrum
from numerics.li2.top_down import (
    TopLayerFit,
    activation_matrix,
    ascend_modified,
    block_sums,
    component_mass,
    modified_energy,
    modified_riemannian_hessian,
    subset_nodes,
    top_layer_fit,
)
from numerics.li2.sweep_points import decode, encode, gradient_spectrum_point
from numerics.random import make_generator, randn
from theory.groups.cyclotomic import Cyc
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, real_irreps
from theory.li2.group_energy import character_points, irrep_points, paper_form
from theory.li2.top_down import (
    activation_matrix as exact_activation_matrix,
)
from theory.li2.top_down import (
    block_trace,
    common_field,
    decomposition_projector,
    embed_vector,
    exact_residual,
    power_basis,
)
from theory.li2.top_down import (
    modified_energy as exact_modified_energy,
)
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    LogUniform,
    NegativeControl,
    Plot,
    Reference,
    Route,
    Run,
    Tolerance,
    compare,
    conditioned,
    register,
    roundoff,
    symbolic_identity,
    undecided,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._float_irreps import X2, float_decomposition, float_points
from verify.claims.li2._groups import SMALL_GROUPS, build_group, float_projectors
from verify.claims.li2._interval_side import side_evidence
from verify.claims.li2._trained import record_trained

# --- the paper's formulas ---------------------------------------------------------------------
# Exact values are cyclotomic numbers (theory.groups.cyclotomic.Cyc) in nested lists; float values
# are complex torch tensors. Each formula takes either.

def _conj(x):
    return x.conjugate() if isinstance(x, Cyc) else x.conj()


def _abs2(x):
    return x * x.conjugate() if isinstance(x, Cyc) else x.abs().square()


def stated_projector(d: int, M: int, chars, table):
    r""":math:`\Pi_k=\tfrac{d_k}M\sum_g\overline{\chi_k(g)}R_g` with
    :math:`R_g\mathbf e_b=\mathbf e_{gb}` (App. B.2): ``chars[g]`` per element, ``table`` the
    Cayley table; ``(M, M)``."""
    if isinstance(chars, torch.Tensor):
        t = torch.as_tensor(table, device=chars.device)
        g, b = torch.meshgrid(torch.arange(M, device=t.device), torch.arange(M, device=t.device),
                              indexing="ij")
        out = torch.zeros(M, M, dtype=chars.dtype, device=chars.device)
        return out.index_put_((t[g, b].flatten(), b.flatten()),
                              chars.conj()[g.flatten()] * d / M, accumulate=True)
    F = chars[0].F
    out = [[F.zero] * M for _ in range(M)]
    for g in range(M):
        c = _conj(chars[g]) * d / M
        for b in range(M):
            out[table[g][b]][b] = out[table[g][b]][b] + c
    return out


def stated_reconstruction(M: int, dims: Sequence[int], chars, learned: Sequence[bool],
                          left_division):
    r""":math:`\sum_{k\in\mathcal S}\tfrac{d_k}M\chi_k(h'^{-1}h)`, entry ``[h, h']``: the value
    of :math:`\hat Y` in the block of target :math:`h`, column :math:`h'` (App. B.2).
    ``chars[k][g]`` over the nontrivial complex irreps, ``left_division[h][h']`` the index of
    :math:`h'^{-1}h`."""
    keep = [k for k, s in enumerate(learned) if s]
    if isinstance(chars, torch.Tensor):
        ld = torch.as_tensor(left_division, device=chars.device)
        weights = torch.tensor([dims[k] / M for k in keep], dtype=chars.dtype,
                               device=chars.device)
        return torch.einsum("k,khm->hm", weights, chars[keep][:, ld])
    F = chars[0][0].F
    return [[sum((chars[k][left_division[h][m]] * dims[k] / M for k in keep), F.zero)
             for m in range(M)] for h in range(M)]


def stated_phi(M: int, dims: Sequence[int], chars: torch.Tensor, learned: Sequence[bool]
               ) -> torch.Tensor:
    r""":math:`\Phi_{\mathcal S}=[\sqrt{d_k/M}\,\chi_k(\cdot)]_{k\ne0,k\notin\mathcal S}`
    (``(M, #missing)``; ``chars`` over the nontrivial complex irreps)."""
    keep = [k for k, s in enumerate(learned) if not s]
    scale = torch.tensor([math.sqrt(dims[k] / M) for k in keep], dtype=chars.dtype,
                         device=chars.device)
    return chars[keep].T * scale


def stated_modified_energy(M: int, dims: Sequence[int], traces, learned: Sequence[bool]):
    r""":math:`\mathcal E_{\mathcal S}=\tfrac M2\sum_{k\ne0,k\notin\mathcal S}\tfrac1{d_k}
    |\sum_r\mathrm{tr}\,\hat S_{k,r}|^2` (``traces[..., k]`` over the nontrivial complex
    irreps)."""
    keep = [k for k, s in enumerate(learned) if not s]
    if isinstance(traces, torch.Tensor):
        d = torch.tensor([dims[k] for k in keep], dtype=torch.float64, device=traces.device)
        return M / 2 * (_abs2(traces[..., keep]) / d.to(traces.real.dtype)).sum(-1)
    F = traces[0].F
    return sum((_abs2(traces[k]) / dims[k] for k in keep), F.zero) * M / 2


def stated_maxima_components(learned: Sequence[bool]) -> tuple[bool, ...]:
    r"""Thm. 7: the local maxima of :math:`\mathcal E_{\mathcal S}` lie only on the missing
    irreps: per real component, whether it may hold one (the trivial one never)."""
    return tuple(j > 0 and not s for j, s in enumerate(learned))


# The planted error: top-down modulation toward the learned irreps instead of the missing ones.

def _flip(learned: Sequence[bool]) -> list[bool]:
    return [not s for s in learned]


def learned_phi(M, dims, chars, learned):
    """Planted error: :math:`\\Phi` over the learned irreps."""
    return stated_phi(M, dims, chars, _flip(learned))


def learned_modified_energy(M, dims, traces, learned):
    """Planted error: :math:`\\mathcal E_{\\mathcal S}` summed over the learned irreps."""
    return stated_modified_energy(M, dims, traces, _flip(learned))


def learned_maxima_components(learned):
    """Planted error: the maxima on the learned irreps."""
    return tuple(j > 0 and s for j, s in enumerate(learned))


def stated_training_power_side():
    r"""Along training: :math:`G_F` lies on the missing irreps, so its power per frequency
    falls where the hidden layer holds more nodes: the rank correlation of the two is
    negative (side -1)."""
    return -1.0


def stated_training_follow_side():
    """Along training: nodes move to the frequencies G_F's spectrum points to (top-down
    modulation), so G_F's power per frequency ranks the nodes each frequency gains later:
    positive rank correlation (side +1)."""
    return 1.0


# --- group data shared by the routes ----------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One group and learned set: the real components learned, the flags of the nontrivial
    complex irreps (learned or not), their dimensions."""

    name: str
    G: FiniteGroup
    learned: tuple[int, ...]
    complex_learned: tuple[bool, ...]
    dims: tuple[int, ...]

    @property
    def real_learned(self) -> tuple[bool, ...]:
        return tuple(j in self.learned for j in range(len(real_irreps(self.G))))

    @property
    def label(self) -> str:
        return f"{self.name}, S = components {list(self.learned)}"


def setting(name: str, learned: Sequence[int]) -> Setting:
    """The :class:`Setting` of group ``name`` with the real components ``learned``."""
    G = build_group(name)
    reals = real_irreps(G)
    if not learned or any(not 1 <= j < len(reals) for j in learned):
        raise ValueError(f"learned: {list(learned)} must be nontrivial component indices of "
                         f"{name} (1..{len(reals) - 1})")
    inside = {k for j in learned for k in reals[j].complex_indices}
    reps = irreps(G)[1:]
    return Setting(name, G, tuple(learned), tuple(r.index in inside for r in reps),
                   tuple(r.dim for r in reps))


def left_division(G: FiniteGroup) -> list[list[int]]:
    r"""``[h][h']`` = the index of :math:`h'^{-1}h`."""
    return [[G.table[G.inverse[m]][h] for m in range(G.order)] for h in range(G.order)]


@lru_cache(maxsize=32)
def float_characters(G: FiniteGroup) -> torch.Tensor:
    """Characters of the nontrivial complex irreps, ``(K, M)`` complex128."""
    return torch.tensor([[complex(x) for x in r.exact_character] for r in irreps(G)[1:]],
                        dtype=torch.complex128)


# --- exact route ------------------------------------------------------------------------------

def _sympy(rows) -> sp.Matrix:
    """Exact values in the power basis of Q(zeta_L) (:func:`theory.li2.top_down.power_basis`)."""
    return sp.Matrix([[power_basis(x) for x in row] for row in rows])


def _exact(run: Run, s: Setting) -> Iterator[Evidence]:
    G, M = s.G, s.G.order
    L = common_field(G)
    reps = irreps(G)
    res = exact_residual(G, s.learned)
    run.derivation(res.derivation)
    chars = [[c.F.embed(c, L) for c in r.exact_character] for r in reps[1:]]

    projectors = [decomposition_projector(G, k) for k in range(len(reps))]
    stated_pi = [run.stated["projector"](r.dim, M, [c.F.embed(c, L) for c in r.exact_character],
                                         G.table) for r in reps]
    yield symbolic_identity(
        f"{G.name}: Pi_k = (d_k/M) sum_g conj(chi_k(g)) R_g vs Q_k Q_k^* from Eq. 8, every "
        f"complex irrep (exact)",
        stated=sp.Matrix.vstack(*(_sympy(p) for p in stated_pi)),
        derived=sp.Matrix.vstack(*(_sympy(p) for p in projectors)), parameters={"group": G.name},
        note="derived: Q_k = columns sqrt(d_k/M) conj(U_k(g)_ir) of the unitary irrep; the "
             "projectors are stacked; exact values as polynomials in zeta_L in the power "
             "basis of Q(zeta_L) (equal iff the polynomials are identical)")

    core = run.stated["reconstruction"](M, s.dims, chars, s.complex_learned, left_division(G))
    targets = [G.table[a][b] for a in range(M) for b in range(M)]
    yield symbolic_identity(
        f"{s.label}: Yhat = sum_(k in S) Yhat^(k), Yhat^(k) in the block of target h, column "
        f"h' = (d_k/M) chi_k(h'^-1 h) (exact least squares)",
        stated=_sympy([core[t] for t in targets]), derived=_sympy(res.fitted),
        parameters={"group": G.name, "learned": list(s.learned), "nodes": res.nodes,
                    "rank": res.rank},
        note="derived: Yhat = Ft V with Ft^T Ft V = Ft^T Yt solved exactly (eta -> 0) on the "
             "nodes [b_a; +-P b_c]; samples h1-major, block h = the M samples with h1 h2 = h")

    points, labels = [], []
    for pt in irrep_points(G):
        for sign in (1, -1):
            points.append(embed_vector(G, paper_form(G, pt.u, sign)))
            labels.append(f"{pt.label} of component {pt.component} "
                          f"({'in' if pt.component in s.learned else 'not in'} S), "
                          f"{'+' if sign > 0 else '-'}")
    for pt in character_points(G):
        points.append(embed_vector(G, paper_form(G, pt.u)))
        labels.append(f"chi of component {pt.component} "
                      f"({'in' if pt.component in s.learned else 'not in'} S)")
    stated, derived = [], []
    for w in points:
        norm2 = sum((x * x for x in w), L.zero)
        S = exact_activation_matrix(G, w)
        traces = [block_trace(projectors[k], S, L) for k in range(1, len(reps))]
        stated.append(run.stated["E_S"](M, s.dims, traces, s.complex_learned)
                      / (norm2 * norm2))
        derived.append(exact_modified_energy(res, w) / (norm2 * norm2))
    yield symbolic_identity(
        f"{s.label}: E_S at the vertices [u; +-Pu] (u in one component) and [chi; P chi] "
        f"(exact)",
        stated=_sympy([stated]).T, derived=_sympy([derived]).T,
        parameters={"group": G.name, "learned": list(s.learned), "points": labels},
        note="stated: (M/2) sum_(k not in S) |sum_r tr S^_(k,r)|^2/d_k with S^ = Q^* S Q, "
             "S_ij = (u_i + v_j)^2; derived: 1/2 |R^T sigma(X w)|^2 with the exact R; both "
             "divided by |w|^4")


# --- float route ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FloatFit:
    """The float task, the real isotypic projectors, the learned nodes and the top-layer fit."""

    task: GroupTask
    projectors: torch.Tensor
    nodes: torch.Tensor
    fit: TopLayerFit


@lru_cache(maxsize=32)
def _float_fit(name: str, learned: tuple[int, ...], eta: float, device: str, dtype: str
               ) -> FloatFit:
    G = build_group(name)
    dt = getattr(torch, dtype.removeprefix("torch."))
    task = group_task(G.table, device=device)
    P = float_projectors(G, device, dt)
    W = subset_nodes(P[list(learned)], task)
    return FloatFit(task, P, W, top_layer_fit(W, task, X2, eta))


def float_fit(run: Run, s: Setting, eta: float = 0.0) -> FloatFit:
    """The float fit of ``s`` in the run's dtype and device (cached: claim and control share
    it)."""
    return _float_fit(s.name, s.learned, eta, str(run.device), str(run.dtype))


def _energy_tolerance(run: Run, task: GroupTask, R: torch.Tensor, w: torch.Tensor,
                      energies: torch.Tensor) -> Tolerance:
    # Both routes chain sums of products: measured R^T sigma(Xw) (length n) then |.|^2
    # (length M); stated Q^* S Q (two length-M sums), the block traces and the weighted sum.
    # Each errs by at most (its length) u times its sum of absolute terms (Higham ch. 3);
    # the scale 1/2 sum_m (sum_i |R_im| sigma_i)^2 >= E bounds the terms of both (|Q| <= 1,
    # |S| the same activations). Relative to the largest energy compared.
    u = unit_roundoff(run.dtype)
    f = X2(_pre(w, task))
    scale = float((0.5 * (f @ R.abs()).square().sum(-1)).max())
    n, M = task.n, task.M
    ops = 2 * (n + 2 * M + M * M)
    top = float(energies.abs().max())
    return Tolerance(ops * u * scale / top if top > 0 else ops * u,
                     f"2(n + 2M + M^2) u times the rounding scale 1/2 sum_m (sum_i |R_im| "
                     f"sigma_i)^2 = {scale:.3g} over the largest energy {top:.3g} (n={n})")


def _pre(w: torch.Tensor, task: GroupTask) -> torch.Tensor:
    return w[..., task.left] + w[..., task.right + task.M]


def _float_route(run: Run, s: Setting) -> Iterator[Evidence]:
    G, M = s.G, s.G.order
    dt, dev = run.dtype, run.device
    ff = float_fit(run, s)
    task, fit = ff.task, ff.fit
    n = task.n
    chars = float_characters(G).to(dev)
    reps = irreps(G)

    # Pi_k: stated character formula vs Q_k Q_k^* from the float unitary irreps.
    Q, blocks = float_decomposition(G)
    Q = Q.to(dev)
    stated_pi = torch.stack([run.stated["projector"](
        r.dim, M, torch.tensor([complex(x) for x in r.exact_character], dtype=torch.complex128,
                               device=dev), G.table) for r in reps])
    columns = [[i for copy in c for i in copy] for c in blocks]
    derived_pi = torch.stack([Q[:, c] @ Q[:, c].conj().T for c in columns])
    blocks = blocks[1:]
    dmax = max(r.dim for r in reps)
    yield compare(
        Route.NUMERIC, f"{G.name}: Pi_k = (d_k/M) sum_g conj(chi_k(g)) R_g vs Q_k Q_k^* "
                       f"(float), every complex irrep",
        stated=stated_pi, derived=derived_pi,
        tolerance=roundoff(torch.float64, 4 * (dmax * dmax + M),
                           "d_k^2-term sums of the Q products and the rounding of up to M "
                           "cyclotomic terms per float value"),
        parameters={"group": G.name, "M": M})

    # Yhat: the character formula vs the float least-squares fit.
    core = run.stated["reconstruction"](M, s.dims, chars, s.complex_learned, left_division(G))
    stated_yhat = core.real.to(dt)[task.target]
    s_vals = fit.singular_values
    kappa = float(s_vals[0] / s_vals[fit.rank - 1])
    run.assume(f"{s.label}: rank gap of Ft", fit.rank == len(s_vals) or float(
        s_vals[fit.rank] / s_vals[0]) < 1e3 * n * unit_roundoff(dt),
        "the singular values of Ft dropped as zero are at rounding level (<= 1e3 n u of the "
        "largest), the kept ones O(1)",
        f"rank {fit.rank} of {len(s_vals)}; kept down to {float(s_vals[fit.rank - 1]):.3g}, "
        f"next {float(s_vals[fit.rank]) if fit.rank < len(s_vals) else 0:.3g}")
    tol_fit = conditioned(dt, kappa, n, "projection on the leading left singular vectors of Ft")
    yield compare(
        Route.NUMERIC, f"{s.label}: Yhat = sum_(k in S) (d_k/M) chi_k(h'^-1 h) in the block "
                       f"of target h vs the float least-squares fit (eta -> 0)",
        stated=stated_yhat, measured=fit.fitted, tolerance=tol_fit,
        parameters={"group": G.name, "learned": list(s.learned), "nodes": ff.nodes.shape[0],
                    "rank": fit.rank})

    # The operator of G_F (B ∝ I): R Yt^T vs (Phi ⊗ 1)(Phi ⊗ 1)^*, up to a positive constant.
    phi = run.stated["Phi"](M, s.dims, chars, s.complex_learned)
    core_op = (phi @ phi.conj().T).real.to(dt)
    stated_op = core_op[task.target][:, task.target]
    Yt = fit.residual + fit.fitted
    measured_op = fit.residual @ Yt.T
    yield compare(
        Route.NUMERIC, f"{s.label}: G_F operator R Yt^T vs (Phi_S ⊗ 1_M)(Phi_S ⊗ 1_M)^*, each "
                       f"divided by its Frobenius norm",
        stated=stated_op / torch.linalg.matrix_norm(stated_op),
        measured=measured_op / torch.linalg.matrix_norm(measured_op), tolerance=tol_fit,
        parameters={"group": G.name, "learned": list(s.learned),
                    "missing complex irreps": [k + 1 for k, x in enumerate(s.complex_learned)
                                               if not x]},
        note="G_F = R V^T with V ∝ Ft^T Yt (B ∝ I) is R Yt^T Ft; (Phi ⊗ 1_M) read as "
             "Phi's row h repeated over the M samples of target h (App. A.1's stacking)")

    # E_S at the vertices and at random points: stated trace form vs 1/2 |R^T sigma(Xw)|^2.
    wv, labels, comps = float_points(G)
    wr = randn(run.params["random_points"], 2 * M, generator=run.generator(f"w {s.label}"))
    wr = wr / wr.norm(dim=-1, keepdim=True)
    for w, what, extra in ((wv, "the vertices [u; +-Pu] and [chi; P chi]",
                            {"points": labels, "in S": [c in s.learned for c in comps]}),
                           (wr, "random unit w", {"points": wr.shape[0]})):
        w = w.to(device=dev, dtype=dt)
        traces, _ = block_sums(activation_matrix(w, task, X2).to(torch.float64), Q, blocks)
        stated_e = run.stated["E_S"](M, s.dims, traces, s.complex_learned)
        measured_e = modified_energy(w, task, fit.residual, X2)
        yield compare(
            Route.NUMERIC, f"{s.label}: E_S at {what}: stated trace form vs 1/2 |R^T sigma(Xw)|^2",
            stated=stated_e, measured=measured_e,
            tolerance=_energy_tolerance(run, task, fit.residual, w, measured_e),
            parameters={"group": G.name, "learned": list(s.learned), **extra},
            note="S^ = Q^* S Q with Eq. 8's Q from the float unitary irreps")


# --- ascent -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoints:
    """Random-start ascent of E_S: end points, energies, convergence, the largest decrease of
    E_S met, the mass per real component and the dominant one, and per dominant component
    the largest tangent Hessian eigenvalue at the sampled end points with its null threshold
    (sqrt(u) of the largest |eigenvalue|)."""

    w: torch.Tensor
    energy: torch.Tensor
    converged: torch.Tensor
    steps: int
    largest_decrease: float
    mass: torch.Tensor  # (B, J) fraction of |w|^2 per real component
    component: torch.Tensor
    max_eigenvalue: dict  # component -> largest tangent Hessian eigenvalue over the samples
    null_threshold: dict
    lr: float
    gtol: float


def _endpoints(name: str, learned: tuple[int, ...], eta: float, starts: int, lr_scale: float,
               max_steps: int, gtol_u: float, hessian_samples: int, seed: int,
               device: str, dtype: str) -> Endpoints:
    ff = _float_fit(name, learned, eta, device, dtype)
    task, R = ff.task, ff.fit.residual
    M = task.M
    dt = R.dtype
    w0 = randn(starts, 2 * M, generator=make_generator(seed), device=device, dtype=dt)
    # lr: the tangent Hessian eigenvalues at the maxima lie in [-4M, 0) (as for li2.thm2: E_S
    # is E restricted to the missing components); lr |lambda| < 2 needs lr_scale < 0.5.
    lr = lr_scale / M
    # gtol: gradients near a maximum are computed to ~ M u; gtol_u leaves a margin.
    gtol = gtol_u * unit_roundoff(dt) * M
    res = ascend_modified(w0, task, R, lr, max_steps, gtol)
    mass = component_mass(res.w, ff.projectors, M)
    comp = mass.argmax(-1)
    # Second-order test on up to `hessian_samples` end points per component, in one batch.
    picks = [(comp == c).nonzero().flatten()[:hessian_samples] for c in comp.unique()]
    sample = torch.cat(picks)
    spectra = tangent_spectrum(res.w[sample], modified_riemannian_hessian(res.w[sample], task, R))
    null = unit_roundoff(dt) ** 0.5
    max_eig, thresholds = {}, {}
    for c, part in zip(comp.unique().tolist(), spectra.split([len(x) for x in picks])):
        max_eig[c] = float(part.max())
        thresholds[c] = null * float(part.abs().amax(-1).min())
    return Endpoints(res.w, res.energy, res.converged, res.steps,
                     float(res.largest_decrease.max()), mass, comp, max_eig, thresholds, lr,
                     gtol)


def endpoints(run: Run, s: Setting, eta: float = 0.0, starts: int | None = None
              ) -> Endpoints:
    """Ascent end points for setting ``s`` (memoised: the negative control reuses them)."""
    p = run.params
    starts = starts or p["starts"]
    return run.memo("endpoints", lambda: _endpoints(
        s.name, s.learned, eta, starts, p["lr_scale"], p["max_steps"], p["gtol_u"],
        p["hessian_samples"], run.seed_for(f"starts {s.label} {eta}"), str(run.device),
        str(run.dtype)), key=(s.name, s.learned, s.label, eta, starts))


@lru_cache(maxsize=64)
def _vertex_test(name: str, learned: tuple[int, ...], eta: float, device: str, dtype: str
                 ) -> tuple[float, float, float, float]:
    r"""At the vertex :math:`[\mathbf u;P\mathbf u]` of the first learned component (unit
    norm): :math:`\mathcal E_{\mathcal S}/M`, the Riemannian gradient norm, the largest
    tangent Hessian eigenvalue and :math:`\sqrt u` times the largest :math:`|\lambda|`."""
    ff = _float_fit(name, learned, eta, device, dtype)
    task, R = ff.task, ff.fit.residual
    w_v, _, comps = float_points(build_group(name))
    w = w_v[comps.index(learned[0])][None].to(device=device, dtype=R.dtype)
    x = w.clone().requires_grad_(True)
    e = modified_energy(x, task, R, X2)
    (g,) = torch.autograd.grad(e.sum(), x)
    grad = g - (g * w).sum(-1, keepdim=True) * w
    spectra = tangent_spectrum(w, modified_riemannian_hessian(w, task, R))
    null = unit_roundoff(R.dtype) ** 0.5 * float(spectra.abs().max())
    return float(e.detach()) / task.M, float(grad.norm()), float(spectra.max()), null


def _ascent(run: Run, s: Setting) -> Iterator[Evidence]:
    G, M = s.G, s.G.order
    ep = endpoints(run, s)
    ff = float_fit(run, s)
    u = unit_roundoff(run.dtype)
    conv = int(ep.converged.sum())
    run.assume(f"{s.label}: ascent converged", conv == len(ep.converged),
               "every start reached Riemannian gradient norm <= gtol",
               f"{conv} of {len(ep.converged)} starts in {ep.steps} steps")
    run.assume(f"{s.label}: ascent monotone", ep.largest_decrease <= 1e3 * u * M,
               "E_S never decreased by more than rounding (1e3 u M)",
               f"largest decrease {ep.largest_decrease:.2e}")
    saddles = {c: v for c, v in ep.max_eigenvalue.items() if v > ep.null_threshold[c]}
    run.assume(f"{s.label}: end points are local maxima", not saddles,
               "no tangent Hessian eigenvalue above sqrt(u) of the largest at the sampled "
               "end points of each component", f"components with a positive eigenvalue: "
               f"{sorted(saddles)}")
    missing = [j for j in range(1, len(real_irreps(G))) if j not in s.learned]
    reached = sorted(set(ep.component[ep.converged].tolist()))
    run.assume(f"{s.label}: every missing component reached", set(missing) <= set(reached),
               "some start ended on each missing real component",
               f"missing {missing}, reached {reached}")
    counts = torch.bincount(ep.component[ep.converged], minlength=ep.mass.shape[1]).tolist()
    run.figure(f"{s.label}: ascent of E_S", {
        "starts": len(ep.converged), "steps": ep.steps, "lr": ep.lr, "gtol": ep.gtol,
        "end points per component": counts,
        "distinct E_S/M": sorted({round(x, 10) for x in (ep.energy[ep.converged] / M).tolist()}),
        "largest tangent Hessian eigenvalue per component": ep.max_eigenvalue})

    if not conv:  # e.g. a step past the stability range: no end point to judge
        yield undecided(Route.NUMERIC, f"{s.label}: the components holding the local maxima "
                        f"of E_S", f"no start converged in {ep.steps} steps",
                        tolerance=Tolerance(u**0.5, "sqrt(u)"))
        return
    allowed = torch.tensor(run.stated["maxima_on"](s.real_learned), device=ep.mass.device)
    outside = ep.mass[ep.converged][:, ~allowed].sum(-1)
    yield compare(
        Route.NUMERIC, f"{s.label}: largest fraction of |w|^2 outside the components stated "
                       f"to hold the local maxima, over the converged end points",
        stated=0.0, measured=float(outside.max()), metric="absolute",
        tolerance=Tolerance(u**0.5, "sqrt(u): a converged maximum holds (g/mu)^2 + M u of "
                                    "its mass elsewhere"),
        parameters={"group": G.name, "learned": list(s.learned), "starts": len(ep.converged),
                    "allowed components": [j for j, a in enumerate(allowed.tolist()) if a]},
        note="Thm. 7: local maxima of E_S only on the missing irreps")

    # E_S at the distinct maxima: stated trace form vs measured, at the same end points.
    Q, blocks = float_decomposition(G)
    blocks = blocks[1:]
    w = ep.w[ep.converged]
    keys = (ep.energy[ep.converged] / M * 1e6).round()
    pick = torch.stack([(keys == k).nonzero().flatten()[0] for k in keys.unique()])
    w = w[pick]
    traces, _ = block_sums(activation_matrix(w, ff.task, X2).to(torch.float64), Q.to(w.device),
                           blocks)
    measured = modified_energy(w, ff.task, ff.fit.residual, X2)
    yield compare(
        Route.NUMERIC, f"{s.label}: E_S at one end point per distinct maximum: stated trace "
                       f"form vs 1/2 |R^T sigma(Xw)|^2",
        stated=run.stated["E_S"](M, s.dims, traces, s.complex_learned), measured=measured,
        tolerance=_energy_tolerance(run, ff.task, ff.fit.residual, w, measured),
        parameters={"group": G.name, "learned": list(s.learned),
                    "components": ep.component[ep.converged][pick].tolist(),
                    "E_S/M": (measured / M).tolist()})


def _eta_probe(run: Run, s: Setting) -> None:
    r"""Beyond the assumptions: a ridge top layer, :math:`\eta>0`. The residual keeps part of
    the learned targets, so the learned vertices keep some energy and may be local maxima."""
    rows, holds = {}, True
    for eta in run.params["probe_etas"]:
        ep = endpoints(run, s, eta, starts=run.params["probe_starts"])
        on_learned = int(sum(int((ep.component[ep.converged] == j).sum()) for j in s.learned))
        e, grad, top, null = _vertex_test(s.name, s.learned, eta, str(run.device),
                                          str(run.dtype))
        local_max = top <= null
        rows[f"eta={eta:g}"] = {
            "random-start end points on learned components": on_learned,
            "of converged starts": int(ep.converged.sum()),
            f"vertex of learned component {s.learned[0]}: E_S/M": e,
            "its Riemannian gradient norm": grad,
            "its largest tangent Hessian eigenvalue": top,
            "null threshold": null, "local maximum": local_max}
        holds &= not local_max and on_learned == 0
    run.figure(f"{s.label}: probe eta > 0 (ridge top layer)", rows)
    run.assume(f"{s.label}: eta > 0 (probe): no local maximum on a learned irrep", holds,
               "Thm. 7 assumes eta -> 0; with eta > 0 the residual keeps part of the learned "
               "targets", str(rows), probe=True)


# --- training route ---------------------------------------------------------------------------

def _post_peak_correlations(e: torch.Tensor, power: torch.Tensor, nodes: torch.Tensor,
                            gf_norm: torch.Tensor, order: torch.Tensor | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Per seed, over the checkpoints from the peak of :math:`\|G_F\|` on (the end of its
    early rise, Prop. 1: the hidden layer has started to learn irreps, Thm. 7's premise):
    the mean rank correlation over the nontrivial components of :math:`G_F`'s power with the
    nodes held there, the same (before the last checkpoint) with the nodes gained from there
    to the end, and the peak epochs. ``order`` relabels the components of the power (a
    control: a shuffled assignment)."""
    pw = power[..., 1:] if order is None else power[..., order]
    held, gain = nodes[..., 1:].double(), (nodes[-1:] - nodes)[..., 1:].double()
    peak = gf_norm.argmax(0)
    now, later = rank_correlation(pw, held), rank_correlation(pw, gain)   # (C, S)
    idx = torch.arange(len(e))[:, None]
    after = idx >= peak[None, :]
    before_end = after & (idx < len(e) - 1)

    def mean(r: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask & torch.isfinite(r)    # a constant side (no node moves) has no ranking
        return torch.where(mask, r, 0.0).sum(0) / mask.sum(0)

    return mean(now, after), mean(later, before_end), e[peak]


def _training(run: Run) -> Iterator[Evidence]:
    t = run.params["training"]
    tol = Tolerance(0.0, "a sign: the whole 95% interval over seeds on the stated side of 0")
    for name in t["groups"]:
        G = build_group(name)
        P = float_projectors(G, "cpu", run.dtype)
        point = {"table": [list(r) for r in G.table], "seeds": list(t["seeds"]), "K": t["K"],
                 "p": t["p"], "eta": t["eta"], "lr": t["lr"], "epochs": t["epochs"],
                 "every": t["every"], "window": t["window"], "late_every": t["late_every"],
                 "projectors": encode(P), "device": str(run.device),
                 "dtype": str(run.dtype).removeprefix("torch.")}
        (r,) = run.sweep("training", gradient_spectrum_point, [point])
        e, power, nodes, norm = (decode(r[k]) for k in ("epochs", "power", "nodes", "gf_norm"))
        record_trained(run, G.order, decode(r["train_acc"])[-1], decode(r["final_loss"]),
                       where=f"{name}, the end of the training runs")
        now, later, peak = _post_peak_correlations(e, power, nodes, norm)
        params = {"group": name, **{k: t[k] for k in ("K", "p", "eta", "lr", "epochs")},
                  "peak epochs of ||G_F||": peak.tolist(),
                  "components": "the nontrivial real irreps (frequencies)"}
        yield side_evidence(
            f"{name} training: G_F lies on the missing irreps: rank correlation of its power "
            f"per frequency with the nodes there, mean over checkpoints after the peak of "
            f"||G_F||", now.tolist(), 0.0, float(run.stated["training_power_side"]()), tol,
            params)
        yield side_evidence(
            f"{name} training: the frequencies learned follow G_F's spectrum: rank "
            f"correlation of its power per frequency with the nodes gained from there to the "
            f"end, mean over checkpoints after the peak of ||G_F||", later.tolist(), 0.0,
            float(run.stated["training_follow_side"]()), tol, params)
        if run.is_control:
            continue
        run.figure(f"{name} training: G_F's power per frequency and the nodes per frequency "
                   f"(seed {t['seeds'][0]}; checkpoints x components, component 0 trivial)",
                   {"epochs": e.tolist(), "G_F power": power[:, 0].tolist(),
                    "nodes": nodes[:, 0].tolist()})
        c = int(peak[0].item())
        k = list(range(1, power.shape[-1]))
        at = int((e == c).nonzero()[0])
        run.plot(Plot(f"{name}, seed {t['seeds'][0]}: G_F's power per frequency at the peak of "
                      f"||G_F|| (epoch {c}) and the nodes per frequency", x_label="frequency "
                      "(nontrivial real irrep)", y_label="share of the total",
                      series={f"G_F power, epoch {c}": (k, _share(power[at, 0, 1:])),
                              f"nodes, epoch {c}": (k, _share(nodes[at, 0, 1:])),
                              f"nodes, epoch {int(e[-1])}": (k, _share(nodes[-1, 0, 1:]))}))
        pw, held = power[..., 1:], nodes[..., 1:].double()
        run.plot(Plot(f"{name}: rank correlation of G_F's power per frequency with the nodes "
                      f"(median over {len(t['seeds'])} seeds)", x_label="epoch",
                      y_label="Spearman correlation over frequencies",
                      series={"with the nodes held": (e.tolist(), rank_correlation(
                                  pw, held).nanmedian(1).values.tolist()),
                              "with the nodes gained to the end": (e.tolist(), rank_correlation(
                                  pw, (nodes[-1:] - nodes)[..., 1:].double()
                              ).nanmedian(1).values.tolist())},
                      references=(Reference("0", y=0.0),)))


def _share(x: torch.Tensor) -> list[float]:
    x = x.double()
    return (x / x.sum()).tolist()


def check(run: Run) -> Iterator[Evidence]:
    p = run.params
    for name, learned in p["cases"]:
        s = setting(name, learned)
        if name in p["exact"]:
            yield from _exact(run, s)
        yield from _float_route(run, s)
        yield from _ascent(run, s)
        if p["probe_etas"]:
            _eta_probe(run, s)
    if p.get("training"):
        yield from _training(run)


#: The training route: the two-layer network on Z_M with about three nodes per frequency
#: (they must share the frequencies out), Adam as in the paper's runs, G_F's spectrum and the nodes
#: per frequency every 5 epochs through the rise and fall of ||G_F|| (its peak near epoch 25
#: here), then every 25.
TRAINING = {"groups": ("Z23",), "K": 32, "p": 0.5, "eta": 1e-3, "lr": 1e-2, "epochs": 300,
            "seeds": tuple(range(8)), "every": 5, "window": 100, "late_every": 25}

ASCENT = {"starts": 128, "lr_scale": 0.4, "max_steps": 3000, "gtol_u": 1e4, "hessian_samples": 2}

CLAIM = register(Claim(
    id="li2.thm7",
    paper=PAPER,
    kind="theorem",
    title="Top-down modulation: the residual of a layer that learned irreps S drives new "
          "nodes to the missing irreps",
    source="Thm. 7, §5; proof App. B.2; along training: the frequencies learned vs G_F's spectrum",
    statement=r"\sigma(x)=x^2,\ \text{hidden layer has learned only the irreps }\mathcal S:\ "
              r"G_F\propto(\Phi_{\mathcal S}\otimes\mathbf 1_M)(\Phi_{\mathcal S}\otimes"
              r"\mathbf 1_M)^*F,\ \Phi_{\mathcal S}=[\sqrt{d_k/M}\,\chi_k(\cdot)]_{k\ne0,"
              r"k\notin\mathcal S};\ \mathcal E_{\mathcal S}=\tfrac12\|\Phi_{\mathcal S}^*"
              r"\mathbf z\|^2=\tfrac M2\sum_{k\ne0,k\notin\mathcal S}\tfrac1{d_k}|\sum_r"
              r"\mathrm{tr}\,\hat S_{k,r}|^2\text{ has local maxima only on the missing irreps; }"
              r"\Pi_k=\tfrac{d_k}M\sum_g\overline{\chi_k(g)}R_g,\ \hat Y^{(k)}_{\text{block }h,h'}"
              r"=\tfrac{d_k}M\chi_k(h'^{-1}h)\mathbf 1_M",
    reading=r"Full group task, samples (h_1,h_2) h_1-major. 'Learned \mathcal S': for each "
            r"learned real component \mathcal H_j the nodes [\mathbf b_a;\pm P\mathbf b_c] "
            r"over all pairs of a basis of \mathcal H_j (Thm. 3's real-domain form "
            r"[\mathbf u;\pm P\mathbf u']; exact [\mathbf u;\pm P\mathbf u] cannot span the "
            r"targets in \mathbb R); a complex irrep is in \mathcal S when its real component "
            r"is. Top layer: least squares, \eta\to0 (the projection of \tilde Y on "
            r"\mathrm{col}\,\tilde F). Residual sign: R=\tilde Y-\hat Y, so G_F=-\partial J/"
            r"\partial F=RV^\top. G_F tested: the Stage-II approximations B\propto I, "
            r"P_\eta\propto I give V\propto\tilde F^\top\tilde Y and G_F\propto R\tilde Y^\top"
            r"\tilde F (=RR^\top\tilde F), compared with the stated operator up to a positive "
            r"constant, (\Phi\otimes\mathbf 1_M) read as row h of \Phi repeated over the M "
            r"samples of target h. The modified energy is the one this G_F ascends: "
            r"\mathcal E_{\mathcal S}(\mathbf w)=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2; the "
            r"stated form is evaluated with \hat S=Q^*SQ (Eq. 8's Q), S_{ij}=\sigma(u_i+v_j), "
            r"\mathbf w=[\mathbf u;P\mathbf v], so \sum_r\mathrm{tr}\,\hat S_{k,r}="
            r"\mathrm{tr}(Q_k^*SQ_k). Block h of \hat Y: the M samples with target h. Vertices: "
            r"[\mathbf u;\pm P\mathbf u] with \mathbf u a matrix coefficient of one real irrep, "
            r"and [\chi_k;P\chi_k] for real irreps with d_k\ge2. 'Local maxima only on the "
            r"missing irreps': the converged end points of projected ascent from random starts "
            r"hold no mass outside the missing components. Probe beyond the assumptions: a "
            r"ridge top layer with \eta>0. Training: the statement read along training as "
            r"'G_F's power per frequency falls where the hidden layer holds more nodes, and "
            r"ranks the frequencies the nodes move to' (rank correlations after the peak of "
            r"\|G_F\|, t-interval over seeds).",
    parameters={
        "quick": {"cases": (("Z5", (1,)), ("Z7", (1,)), ("D3", (1,)), ("D4", (1, 2))),
                  "exact": ("Z5", "D3"), "random_points": 8, "probe_etas": (10.0,),
                  "probe_starts": 64, **ASCENT, "training": TRAINING},
        "full": {"cases": (("Z7", (1,)), ("Z11", (1, 3, 5)), ("Z23", (1, 3, 5, 7, 9, 11)),
                           ("D3", (1,)), ("D3", (2,)), ("D4", (1, 2)), ("D4", (1, 2, 4)),
                           ("D5", (2,)), ("D6", (1, 4))),
                 "exact": ("Z5", "Z7", "D3", "D4", "D5", "D6"), "random_points": 32,
                 "probe_etas": (0.01, 1.0, 10.0), "probe_starts": 128,
                 **ASCENT, "starts": 512, "hessian_samples": 4, "max_steps": 50000,
                 "training": {**TRAINING, "groups": ("Z23", "Z41"), "K": 64,
                              "seeds": tuple(range(16)), "epochs": 600}},
    },
    stated={"projector": stated_projector, "reconstruction": stated_reconstruction,
            "Phi": stated_phi, "E_S": stated_modified_energy,
            "maxima_on": stated_maxima_components,
            "training_power_side": stated_training_power_side,
            "training_follow_side": stated_training_follow_side},
    equivalent_mutants={
        **{f"{form}:{op}": "a direction: only its sign enters the decision"
           for form in ("training_power_side", "training_follow_side")
           for op in ("scale", "nudge")},
        "Phi:sign": "Phi enters only through (Phi ⊗ 1)(Phi ⊗ 1)^*, which its sign does not "
                    "change"},
    check=check,
    control=NegativeControl("modulation toward the learned irreps: Phi, E_S and the maxima "
                            "over k in S instead of k not in S",
                            {"Phi": learned_phi, "E_S": learned_modified_energy,
                             "maxima_on": learned_maxima_components,
                             "training_power_side": lambda: 1.0,
                             "training_follow_side": lambda: -1.0}),
    assumptions=(
        Assumption("ascent step within the stability range",
                   "lr = lr_scale / M with lr_scale <= 0.5 (as li2.thm2)",
                   lambda p: 0 < p["lr_scale"] <= 0.5),
        Assumption("a proper learned subset", "S is nonempty and misses some nontrivial irrep",
                   lambda p: all(len(set(ls)) < len(real_irreps(build_group(g))) - 1
                                 for g, ls in p["cases"])),
    ),
    # a group of each irrep type with its first nontrivial real component learned, two
    # components learned, outside when nothing is missing (Z3's only one, Z5's both), and the
    # ascent step past its stability range; the training route on other seeds, another group
    # and more nodes per frequency
    space={"cases": Choice(tuple(((g, (1,)),) for g in SMALL_GROUPS)
                           + ((("Z7", (1, 3)),), (("D4", (1, 2)),), (("Z5", (1, 2)),))),
           "lr_scale": LogUniform(0.1, 1.0), "seed": SEED,
           "training.seeds": Choice((tuple(range(8)), tuple(range(8, 16)))),
           "training.groups": Choice((("Z23",), ("Z19",))),
           "training.K": Choice((32, 48))},
))
