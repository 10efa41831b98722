# ruff: noqa: N999 - the module is named after the claim id li2.appA1
r"""li2.appA1 (alias li2.secA1): the facts in the proof of Theorem 2 (App. A.1, Eqs. 13-25).

The printed forms of Eqs. 13-25 are taken from the transcription in
verify/claims/li2/SOURCES.md ``li2.thm2`` and ``li2.secA1`` (the proof outline); each is compared
with the
toolkit's derivation from the definitions (:mod:`theory.li2.thm2_proof`, :mod:`theory.li2.top_down`)
and with float64 evaluations (:mod:`numerics.li2.group_task`, :mod:`numerics.li2.top_down`):

* Eq. 13, :math:`z_h=\langle R_h,S\rangle_F`; Eq. 14,
  :math:`\mathcal E=\tfrac12\sum_h(z_h-\bar z)^2`; Eq. 15,
  :math:`\mathcal E=\tfrac12\sum_h\langle\tilde R_h,S\rangle_F^2`;
* Case 1 and Case 2 of the Schur orthogonality step;
* Eq. 20, :math:`\mathcal E=\tfrac M2\sum_{k\ne0}\tfrac1{d_k}|\sum_r\mathrm{tr}\,\hat S_{k,r}|^2`,
  and its :math:`x^2` decomposition :math:`S=(\mathbf u\circ\mathbf u)\mathbf 1^\top+
  \mathbf 1(\mathbf v\circ\mathbf v)^\top+\mathbf u\mathbf v^\top`,
  :math:`\hat S_{k,r}=\hat{\mathbf u}_{k,r}\hat{\mathbf v}_{k,r}^*`;
* Eq. 21 (Cauchy-Schwarz), :math:`|\sum_r\mathrm{tr}\,\hat S_{k,r}|^2\le a_kb_k` with the
  printed :math:`\hat S_{k,r}`, at random points and with equality at the vertices;
* the first inequality of Eq. 22, :math:`\mathcal E\le\tfrac M2\sum_ka_kb_k/d_k`;
* Eq. 23, the simplex vertices are strict local maxima of Eq. 22's bound
  (:mod:`theory.li2.simplex_vertices`: vertex values and edge slopes, exactly);
* Eq. 25, the real domain's weights (:math:`\tfrac M2` for self-conjugate irreps, :math:`M` for
  one member of each conjugate pair), against Eq. 20 as printed and against :math:`\mathcal E`.

Eqs. 16-19 and 24 have no printed form in the transcription (verify/claims/li2/SOURCES.md gives
only Eqs. 13-15, 20-23 and 25): they are not checked.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction
from functools import lru_cache

import sympy as sp
import torch

from numerics.li2.group_task import group_energy, group_task, regular_matrices
from numerics.li2.top_down import activation_matrix, block_sums
from numerics.random import randn
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, regular_representation
from theory.li2.thm2_proof import (
    CycPoly,
    block_frobenius_polys,
    block_trace_polys,
    coefficient_vectors,
    derive_target_sums,
    energy_poly,
    node_symbols,
    schur_kronecker_sum,
    schur_outer_sum,
)
from theory.li2.thm2_proof import (
    activation_matrix as symbolic_activation_matrix,
)
from theory.li2.simplex_vertices import derive_vertex_edges
from theory.li2.top_down import common_field
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    IntRange,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    register,
    roundoff,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import eye, gate, ones, transpose
from verify.claims.li2 import PAPER
from verify.claims.li2._float_irreps import X2, float_decomposition, float_points
from verify.claims.li2._groups import ONE_SMALL_GROUP, SMALL_GROUPS, build_group

#: Stress groups for the exact polynomial routes: the polynomials in 2M variables grow fast
#: with M (D5's Eq. 20 takes several seconds), so orders up to 8.
SYMBOLIC_GROUPS = Choice(tuple((g,) for g in SMALL_GROUPS if build_group(g).order <= 8))

# --- the printed forms ------------------------------------------------------------------------


def _inner(R, S):
    r""":math:`\langle R,S\rangle_F` for one sympy matrix ``R``, or :math:`(\langle R_h,S_b
    \rangle_F)_{b,h}` for tensors ``R`` (``(M, M, M)``) and ``S`` (``(B, M, M)``)."""
    if isinstance(S, torch.Tensor):
        return torch.einsum("hij,bij->bh", R.to(S.dtype), S)
    return sp.Add(*[R[i, j] * S[i, j] for i, j in R.todok()])


def stated_target_sums(R, S):
    r"""Eq. 13: :math:`z_h=\langle R_h,S\rangle_F` (``R``: the :math:`R_h`)."""
    if isinstance(S, torch.Tensor):
        return _inner(R, S)
    return sp.Matrix([_inner(Rh, S) for Rh in R])


def stated_centred_target_sums(R, S):
    r"""Eq. 15's summands :math:`\langle\tilde R_h,S\rangle_F`, :math:`\tilde R_h=R_hP_1^\perp`,
    :math:`P_1^\perp=I-\tfrac1M\mathbf 1\mathbf 1^\top`."""
    if isinstance(S, torch.Tensor):
        M = S.shape[-1]
        centre = eye(M, S) - ones(M, S) @ transpose(ones(M, S)) / M
        return _inner(R.to(S.dtype) @ centre, S)
    M = S.shape[0]
    centre = eye(M, S) - ones(M, S) * transpose(ones(M, S)) / M
    return sp.Matrix([_inner(sp.SparseMatrix(Rh * centre), S) for Rh in R])


def uncentred_target_sums(R, S):
    """Planted error: Eq. 15 with :math:`R_h` in place of :math:`\\tilde R_h` (no centring)."""
    return stated_target_sums(R, S)


def stated_eq14(z):
    r"""Eq. 14's summands :math:`z_h-\bar z`."""
    M = z.shape[0]
    return z - ones(M, z) * (transpose(ones(M, z)) * z) / M


def stated_case1(d: int, d2: int) -> sp.Matrix:
    r"""Case 1, :math:`k\ne k'`: :math:`\sum_h\mathrm{vec}(C_k(h))\mathrm{vec}(C_{k'}(h))^*=0`."""
    return sp.zeros(d * d, d2 * d2)


def stated_case2(M: int, d: int) -> sp.Matrix:
    r"""Case 2, :math:`k=k'`: :math:`\sum_h\mathrm{vec}(C_k(h))\mathrm{vec}(C_k(h))^*=
    \tfrac M{d_k}\mathrm{vec}(I)\mathrm{vec}(I)^*`."""
    vec_i = sp.Matrix(list(sp.eye(d)))
    return sp.Rational(M, d) * vec_i * vec_i.T


def stated_s_x2(u, v):
    r"""Eq. 20's decomposition for :math:`\sigma=x^2`: :math:`S=(\mathbf u\circ\mathbf u)
    \mathbf 1^\top+\mathbf 1(\mathbf v\circ\mathbf v)^\top+\mathbf u\mathbf v^\top`
    (columns ``u``, ``v``)."""
    M = u.shape[0]
    return (gate(u, u) @ transpose(ones(M, u)) + ones(M, u) @ transpose(gate(v, v))
            + u @ transpose(v))


def _abs2(x):
    if isinstance(x, torch.Tensor):
        return x.abs().square()
    return x * x.conjugate()


def stated_eq20(M: int, dims: Sequence[int], traces):
    r"""Eq. 20: :math:`\mathcal E=\tfrac M2\sum_{k\ne0}\tfrac1{d_k}|\sum_r\mathrm{tr}\,
    \hat S_{k,r}|^2` (``traces[..., k]`` over the nontrivial complex irreps)."""
    if isinstance(traces, torch.Tensor):
        d = torch.tensor(dims, dtype=traces.real.dtype, device=traces.device)
        return M / 2 * (_abs2(traces) / d).sum(-1)
    return sum((_abs2(t) / d for t, d in zip(traces, dims)), 0) * Fraction(M, 2)


def stated_s_hat_x2(u_hat: torch.Tensor, v_hat: torch.Tensor) -> torch.Tensor:
    r"""Eq. 20 for :math:`x^2`: :math:`\hat S_{k,r}=\hat{\mathbf u}_{k,r}\hat{\mathbf v}_{k,r}^*`
    (``(..., d)`` blocks in, ``(..., d, d)`` out)."""
    return u_hat[..., :, None] * v_hat.conj()[..., None, :]


def stated_eq22(M: int, dims: Sequence[int], a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""Eq. 22 (first inequality): :math:`\mathcal E\le\tfrac M2\sum_ka_kb_k/d_k`,
    :math:`a_k=\sum_r|\hat{\mathbf u}_{k,r}|^2`, :math:`b_k=\sum_r|\hat{\mathbf v}_{k,r}|^2`
    (the right-hand side; ``a``, ``b``: ``(..., K)``)."""
    d = torch.tensor(dims, dtype=a.dtype, device=a.device)
    return M / 2 * (a * b / d).sum(-1)


def stated_eq21(a, b):
    r"""Eq. 21 (Cauchy-Schwarz), the right-hand side: :math:`|\sum_r\mathrm{tr}\,\hat S_{k,r}|^2
    \le a_kb_k` (``a``, ``b``: the block masses of :math:`\hat{\mathbf u}`,
    :math:`\hat{\mathbf v}`)."""
    return a * b


def stated_eq23_vertex(M, d):
    r"""Eq. 23: the vertex :math:`\mathbf e_{k_0}` of the simplex has the value
    :math:`f(\mathbf e_{k_0})=\tfrac M{8d_{k_0}}` of Eq. 22's bound :math:`\tfrac M8\sum_k
    c_k^2/d_k`."""
    return sp.Rational(M, 8) / d


def stated_eq23_slope_sign():
    """Eq. 23: each vertex is a *strict* local maximum along the simplex: the first-order
    change along every edge away from it is negative (sign -1)."""
    return -1


def stated_eq25_weight(M: int, d: int, self_conjugate: bool):
    r"""Eq. 25 (real domain): the weight of :math:`|t_k|^2` in :math:`\mathcal E` for real
    :math:`\mathbf w`, :math:`t_k=\sum_r\mathrm{tr}\,\hat S_{k,r}`: :math:`\tfrac M{2d_k}` for
    a self-conjugate (real) irrep, :math:`\tfrac M{d_k}` for the one member of a
    complex-conjugate pair that represents it (the other member is left out)."""
    return sp.Rational(M, 2 * d) if self_conjugate else sp.Rational(M, d)


def _exact(x) -> Fraction:
    """A weight as an exact rational (a float mutant keeps its binary value exactly)."""
    if isinstance(x, sp.Rational):
        return Fraction(int(x.p), int(x.q))
    return x if isinstance(x, (int, Fraction)) else Fraction(float(x))


def eq25_sum(run: Run, M: int, reps, traces):
    r"""Eq. 25's sum with the stated weights: self-conjugate irreps, and the lower-index member
    of each conjugate pair (``reps``: the nontrivial irreps, ``traces`` aligned with them)."""
    total = None
    for rep, t in zip(reps, traces):
        own = rep.conjugate_index == rep.index
        if not own and rep.conjugate_index < rep.index:
            continue
        w = run.stated["eq25_weight"](M, rep.dim, own)
        term = _abs2(t) * (float(w) if isinstance(t, torch.Tensor) else _exact(w))
        total = term if total is None else total + term
    return total


# --- exact route ------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def _sums_inputs(G: FiniteGroup) -> tuple:
    """z, q (derived), S_ij = (u_i + v_j)^2 expanded once (the printed forms are linear in
    S) and the regular representation, for Eqs. 13-15."""
    z, q, u, v = derive_target_sums(G).result
    S = symbolic_activation_matrix(u, v).applyfunc(sp.expand)
    return z, q, S, regular_representation(G)


def _expanded(m: sp.Matrix) -> sp.Matrix:
    return m.applyfunc(sp.expand)


def _symbolic_sums(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    """Eqs. 13 and 14 (the forms ``target_sums`` and Eq. 14's centring)."""
    run.derivation(derive_target_sums(G))
    z, q, S, R = _sums_inputs(G)
    params = {"group": G.name, "M": G.order}
    yield symbolic_identity(
        f"{G.name}: Eq. 13, z_h = <R_h, S>_F vs Y^T sigma(X w), w = [u; P v] (symbolic u, v)",
        stated=_expanded(run.stated["target_sums"](R, S)), derived=z, parameters=params,
        note="S_ij = (u_i + v_j)^2; derived: the one-hot task matrices, sigma = x^2")
    yield symbolic_identity(
        f"{G.name}: Eq. 14, z_h - mean(z) vs Yt^T sigma(X w) (symbolic)",
        stated=_expanded(stated_eq14(z)), derived=q, parameters=params,
        note="z from the task (derived); Yt = P_1^perp Y centres over the M^2 samples")


def _symbolic_eq15(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    _, q, S, R = _sums_inputs(G)
    params = {"group": G.name, "M": G.order}
    yield symbolic_identity(
        f"{G.name}: Eq. 15, <R_h P_1^perp, S>_F vs Yt^T sigma(X w) (symbolic)",
        stated=_expanded(run.stated["centred_target_sums"](R, S)), derived=q, parameters=params,
        note="E = 1/2 sum_h of the squares of these, so Eq. 15 holds iff they agree")


@lru_cache(maxsize=16)
def _eq20_polys(G: FiniteGroup) -> tuple[CycPoly, list[CycPoly], CycPoly]:
    """E (Eq. 7), the block traces and the corrected (Frobenius) Eq. 20, exactly."""
    energy, _ = energy_poly(G)
    traces = block_trace_polys(G)
    reps = irreps(G)
    frob = sum((f / reps[k].dim for k, f in enumerate(block_frobenius_polys(G)) if k),
               CycPoly(common_field(G), G.order, {})) * Fraction(G.order, 2)
    return energy, traces, frob


def _symbolic_eq20(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    M = G.order
    energy, traces, frob = _eq20_polys(G)
    run.derivation(energy_poly(G)[1])
    dims = [r.dim for r in irreps(G)[1:]]
    printed = run.stated["eq20"](M, dims, traces[1:])
    monomials, (stated, derived) = coefficient_vectors(printed, energy)
    yield symbolic_identity(
        f"{G.name}: Eq. 20 as printed, (M/2) sum_(k!=0) |sum_r tr S^_(k,r)|^2 / d_k, vs E from "
        f"Eq. 7 (exact polynomials in u, v)",
        stated=stated, derived=derived,
        parameters={"group": G.name, "M": M, "monomials": len(monomials)},
        note="coefficient vectors on the union of monomials (graded, by variable index u_i -> "
             "i, v_j -> M + j); S^ = Q^* S Q with Eq. 8's Q, sum_r tr S^_(k,r) = tr(S Q_k Q_k^*) "
             "exact in Q(zeta_L); S_ij = (u_i + v_j)^2")
    run.figure(f"{G.name}: corrected Eq. 20, (M/2) sum_(k!=0) ||sum_r S^_(k,r)||_F^2 / d_k, "
               f"minus E (exact)", {"identically zero": not (frob - energy).terms,
                                    "monomials of E": len(energy.terms)})


def _symbolic_eq25(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    r"""Eq. 25 from the exact block traces, against Eq. 20 as printed (the regrouping step:
    for real :math:`\mathbf w`, :math:`t_{\bar k}=\overline{t_k}`) and against
    :math:`\mathcal E` of Eq. 7 (the statement)."""
    M = G.order
    energy, traces, _ = _eq20_polys(G)
    reps = irreps(G)[1:]
    dims = [r.dim for r in reps]
    printed25 = eq25_sum(run, M, reps, traces[1:])
    printed20 = run.stated["eq20"](M, dims, traces[1:])
    params = {"group": G.name, "M": M, "dims": dims,
              "pairs": sum(1 for r in reps if r.conjugate_index > r.index)}
    for target, label in ((printed20, "Eq. 20 as printed (the regrouping step)"),
                          (energy, "E from Eq. 7")):
        monomials, (stated, derived) = coefficient_vectors(printed25, target)
        yield symbolic_identity(
            f"{G.name}: Eq. 25 (real w: self-conjugate irreps at M/2, one of each conjugate "
            f"pair at M) vs {label} (exact polynomials in real u, v)",
            stated=stated, derived=derived, parameters={**params, "monomials": len(monomials)},
            note="t_k = sum_r tr S^_(k,r) exact in Q(zeta_L); |t|^2 = t conj(t) with u, v real")


def _symbolic_eq23(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    r"""Eq. 23 on the simplex of the group's nontrivial irreps, from the definition of Eq.
    22's bound (:func:`theory.li2.simplex_vertices.derive_vertex_edges`)."""
    M = G.order
    dims = [r.dim for r in irreps(G)[1:]]
    edges = run.derivation(derive_vertex_edges(M, dims)).result
    if not edges:   # one nontrivial irrep: the simplex is a point
        return
    pairs = sorted(edges)
    params = {"group": G.name, "M": M, "dims": dims, "edges": len(pairs)}
    yield symbolic_identity(
        f"{G.name}: Eq. 23, f(e_k0) = M/(8 d_k0) at every vertex of the simplex of Eq. 22's "
        f"bound f(c) = M/8 sum_k c_k^2/d_k (exact)",
        stated=sp.Matrix([run.stated["eq23_vertex"](M, dims[k0]) for k0, _ in pairs]),
        derived=sp.Matrix([edges[e]["value"] for e in pairs]), parameters=params)
    yield symbolic_identity(
        f"{G.name}: Eq. 23, strict local maxima: sign of the slope g'(0) of f along every "
        f"edge from e_k0 towards e_j (exact)",
        stated=sp.Matrix([run.stated["eq23_slope_sign"]() for _ in pairs]),
        derived=sp.Matrix([sp.sign(edges[e]["slope"]) for e in pairs]), parameters=params,
        note="feasible directions at a vertex are nonnegative combinations of its edges; the "
             "first-order change is linear in the direction, so negative on every edge is "
             "negative on all")


def _schur(run: Run, G: FiniteGroup) -> Iterator[Evidence]:
    reps = irreps(G)
    M = G.order
    pairs = [(k, k2) for k in range(len(reps)) for k2 in range(len(reps)) if k != k2]
    stated1 = [run.stated["case1"](reps[k].dim, reps[k2].dim) for k, k2 in pairs]
    derived1 = [schur_outer_sum(G, k, k2) for k, k2 in pairs]
    yield symbolic_identity(
        f"{G.name}: Case 1, sum_h vec(C_k(h)) vec(C_k'(h))^* = 0 for k != k' (exact)",
        stated=sp.Matrix([x for m in stated1 for x in m]),
        derived=sp.Matrix([x for m in derived1 for x in m]),
        parameters={"group": G.name, "pairs": len(pairs)},
        note="unitary irreps; vec stacks rows; all ordered pairs flattened into one column")
    stated2 = [run.stated["case2"](M, r.dim) for r in reps]
    derived2 = [schur_outer_sum(G, k, k) for k in range(len(reps))]
    yield symbolic_identity(
        f"{G.name}: Case 2, sum_h vec(C_k(h)) vec(C_k(h))^* vs (M/d_k) vec(I) vec(I)^* (exact)",
        stated=sp.Matrix([x for m in stated2 for x in m]),
        derived=sp.Matrix([x for m in derived2 for x in m]),
        parameters={"group": G.name, "dims": [r.dim for r in reps]},
        note="every irrep, flattened; for d_k >= 2 the sum is (M/d_k) I_(d_k^2) (Schur)")
    run.figure(f"{G.name}: Case 2, what the sums are (exact)", {
        f"irrep {k} (d={r.dim})": {
            "sum_h vec(C) vec(C)^* == (M/d) I": derived2[k] == sp.Rational(M, r.dim)
            * sp.eye(r.dim**2),
            "sum_h C (x) conj(C) == (M/d) vec(I) vec(I)^*":
                schur_kronecker_sum(G, k) == stated_case2(M, r.dim)}
        for k, r in enumerate(reps)})
    # Float64: the same sums from the float unitary irreps.
    U = [torch.tensor(r.to_complex(), dtype=torch.complex128).reshape(M, -1) for r in reps]
    measured1 = torch.cat([(U[k].T @ U[k2].conj()).flatten() for k, k2 in pairs])
    measured2 = torch.cat([(U[k].T @ U[k].conj()).flatten() for k in range(len(reps))])
    tol = roundoff(torch.float64, 4 * M, "length-M sums of products of unitary entries")
    yield compare(Route.NUMERIC, f"{G.name}: Case 1 sums in float64",
                  stated=torch.tensor([complex(x) for m in stated1 for x in m]),
                  measured=measured1, tolerance=tol, metric="absolute",
                  parameters={"group": G.name}, note="absolute: the stated value is 0")
    yield compare(Route.NUMERIC, f"{G.name}: Case 2 sums in float64",
                  stated=torch.tensor([complex(x) for m in stated2 for x in m]),
                  measured=measured2, tolerance=tol, parameters={"group": G.name})


def _s_decomposition(run: Run) -> Evidence:
    M = run.params["decomposition_size"]
    u, v = node_symbols(M)
    return symbolic_identity(
        f"Eq. 20's S for sigma = x^2: (u o u) 1^T + 1 (v o v)^T + u v^T vs S_ij = (u_i + v_j)^2 "
        f"(M = {M}, symbolic)",
        stated=run.stated["S_x2"](u, v), derived=symbolic_activation_matrix(u, v),
        parameters={"M": M}, note="the definition S_ij = sigma(u_i + v_j), expanded")


# --- float route ------------------------------------------------------------------------------

def _energy_tolerance(run: Run, n: int, M: int, scale: float, top: float) -> Tolerance:
    # Each route chains sums of products (length n for the sums per target, M^2 for the
    # Frobenius products and Q^* S Q, M for the last sum); each errs by (its length) u times its
    # sum of absolute terms (Higham ch. 3), bounded by the rounding scale; relative to the
    # largest energy compared.
    u = unit_roundoff(run.dtype)
    ops = 2 * (n + 2 * M * M + M)
    return Tolerance(ops * u * scale / top,
                     f"2(n + 2M^2 + M) u times the rounding scale {scale:.3g} over the largest "
                     f"energy {top:.3g} (n={n}, M={M})")


def _rounding_scale(w: torch.Tensor, task) -> float:
    r""":math:`\tfrac12\sum_h(z_h+\tfrac1M\sum_gz_g)^2\ge\tfrac12\sum_h(\sum_i|\tilde Y_{ih}|
    \sigma_i)^2` (all :math:`\sigma_i\ge0` for :math:`x^2`; :math:`z_h` the sums per target):
    the sum of absolute terms behind the rounding of :math:`\mathcal E`, largest over ``w``."""
    f = X2(w[..., task.left] + w[..., task.right + task.M])
    z = torch.zeros(w.shape[0], task.M, dtype=f.dtype, device=f.device).index_add(
        1, task.target, f)
    return float((0.5 * (z + z.sum(-1, keepdim=True) / task.M).square().sum(-1)).max())


def _numeric(run: Run, name: str) -> Iterator[Evidence]:
    G = build_group(name)
    M, dt, dev = G.order, run.dtype, run.device
    task = group_task(G.table, device=dev)
    n = task.n
    w = randn(run.params["random_points"], 2 * M, generator=run.generator(f"w {name}"),
              device=dev, dtype=dt)
    w = w / w.norm(dim=-1, keepdim=True)
    measured = group_energy(w, task, X2)
    S = activation_matrix(w, task, X2)
    tol = _energy_tolerance(run, n, M, _rounding_scale(w, task), float(measured.max()))
    R = regular_matrices(G.table, dt, dev)
    centred = run.stated["centred_target_sums"](R, S)
    params = {"group": name, "M": M, "points": w.shape[0]}
    yield compare(Route.NUMERIC, f"{name}: Eq. 15, 1/2 sum_h <R_h P_1^perp, S>_F^2 vs E from "
                                 f"Eq. 7 at random unit w",
                  stated=0.5 * centred.square().sum(-1), measured=measured, tolerance=tol,
                  parameters=params, note="measured: numerics.li2.group_task.group_energy")

    Q, blocks = float_decomposition(G)
    Q = Q.to(dev)
    traces, frob = block_sums(S.to(torch.float64), Q, blocks[1:])
    dims = [r.dim for r in irreps(G)[1:]]
    yield compare(Route.NUMERIC, f"{name}: Eq. 20 as printed vs E from Eq. 7 at random unit w",
                  stated=run.stated["eq20"](M, dims, traces), measured=measured,
                  tolerance=tol, parameters=params,
                  note="S^ = Q^* S Q, Eq. 8's Q from the float unitary irreps")
    yield compare(Route.NUMERIC, f"{name}: Eq. 25 (real w: self-conjugate irreps at M/2, one of "
                                 f"each conjugate pair at M) vs E from Eq. 7 at random unit w",
                  stated=eq25_sum(run, M, irreps(G)[1:], traces.unbind(-1)), measured=measured,
                  tolerance=tol, parameters=params)
    run.figure(f"{name}: corrected Eq. 20 (Frobenius) / E at random unit w", {
        "max |ratio - 1|": float(((M / 2 * (frob / torch.tensor(dims, dtype=frob.dtype,
                                                                 device=dev)).sum(-1))
                                  / measured.to(frob.dtype) - 1).abs().max())})

    # Eq. 20 with the printed x^2 decomposition S^_(k,r) = u^_(k,r) v^_(k,r)^*.
    u, v = w[:, :M].to(torch.float64), w[:, M:][:, task.inverse].to(torch.float64)
    u_hat, v_hat = u.to(Q.dtype) @ Q.conj(), v.to(Q.dtype) @ Q.conj()  # Q^* u, rows
    printed, a, b = [], [], []
    for copies in blocks[1:]:
        tr = 0
        for cols in copies:
            block = run.stated["S_hat_x2"](u_hat[:, cols], v_hat[:, cols])
            tr = tr + torch.diagonal(block, dim1=-2, dim2=-1).sum(-1)
        printed.append(tr)
        a.append(sum(u_hat[:, c].abs().square().sum(-1) for c in copies))
        b.append(sum(v_hat[:, c].abs().square().sum(-1) for c in copies))
    # Eq. 21 on its own: |sum_r tr S^_(k,r)|^2 <= a_k b_k with the printed S^_(k,r) = u^ v^*
    # (the step, given the decomposition before it; with S^ = Q^* S Q from the definition the
    # left side is 4x larger, the factor 2 of S = ... + 2 u v^T, reported as a figure).
    a21, b21 = torch.stack(a, -1), torch.stack(b, -1)
    t21 = torch.stack(printed, -1)
    yield at_least(Route.NUMERIC, f"{name}: Eq. 21 (Cauchy-Schwarz), -|sum_r tr S^_(k,r)|^2 >= "
                                  f"-a_k b_k at random unit w, every nontrivial irrep, S^_(k,r) "
                                  f"= u^_(k,r) v^_(k,r)^* as printed",
                   measured=-t21.abs().square(), bound=-run.stated["eq21"](a21, b21),
                   tolerance=roundoff(dt, 4 * (M * M + M), "Q^* u, Q^* v and the block sums"),
                   parameters=params)
    run.figure(f"{name}: Eq. 21 with S^ = Q^* S Q from the definition: max over random w and "
               f"irreps of |sum_r tr S^_(k,r)|^2 / (a_k b_k)",
               float((traces.abs().square() / (a21 * b21)).max()))
    printed_e = run.stated["eq20"](M, dims, torch.stack(printed, -1))
    yield compare(Route.NUMERIC, f"{name}: Eq. 20 with the printed x^2 decomposition "
                                 f"S^_(k,r) = u^_(k,r) v^_(k,r)^* vs E from Eq. 7 at random unit w",
                  stated=printed_e, measured=measured, tolerance=tol, parameters=params)
    run.figure(f"{name}: E / Eq. 20 with S^_(k,r) = u^ v^*, at random unit w",
               {"min": float((measured / printed_e).min()),
                "max": float((measured / printed_e).max())})

    # Eq. 22 at the vertices of Thm. 2's simplex (where the paper says it is attained).
    wv, labels, _ = float_points(G)
    wv = wv.to(device=dev, dtype=dt)
    e_v = group_energy(wv, task, X2)
    u, v = wv[:, :M].to(torch.float64), wv[:, M:][:, task.inverse].to(torch.float64)
    u_hat, v_hat = u.to(Q.dtype) @ Q.conj(), v.to(Q.dtype) @ Q.conj()
    a = torch.stack([sum(u_hat[:, c].abs().square().sum(-1) for c in copies)
                     for copies in blocks[1:]], -1)
    b = torch.stack([sum(v_hat[:, c].abs().square().sum(-1) for c in copies)
                     for copies in blocks[1:]], -1)
    # Eq. 21's equality case, which Eq. 22's attainment needs: at [u; +-Pu], v^ = +-u^, so
    # |t_k|^2 = a_k b_k in every block (0 = 0 off the vertex's component).
    tv = torch.stack([sum(torch.diagonal(run.stated["S_hat_x2"](u_hat[:, c], v_hat[:, c]),
                                         dim1=-2, dim2=-1).sum(-1) for c in copies)
                      for copies in blocks[1:]], -1)
    yield compare(Route.NUMERIC, f"{name}: Eq. 21 with equality at the vertices [u; +-Pu], "
                                 f"[chi; P chi]: |sum_r tr S^_(k,r)|^2 vs a_k b_k (S^ as "
                                 f"printed)",
                  stated=run.stated["eq21"](a, b), measured=tv.abs().square(),
                  tolerance=roundoff(dt, 4 * (M * M + M), "Q^* S Q and the block masses"),
                  metric="absolute", parameters={"group": name, "points": labels},
                  note="absolute: off the vertex's component both sides are 0")
    bound = run.stated["eq22"](M, dims, a, b)
    yield at_least(Route.NUMERIC, f"{name}: Eq. 22, -E >= -(M/2) sum_k a_k b_k / d_k at the "
                                  f"vertices [u; +-Pu], [chi; P chi] (i.e. E <= the bound)",
                   measured=-e_v, bound=-bound,
                   tolerance=roundoff(dt, 4 * (n + M * M), "sums of the energy and of |Q^* u|^2"),
                   parameters={"group": name, "points": labels},
                   note="a_k = sum_r |u^_(k,r)|^2 = |Pi_k u|^2, b_k likewise, over the nontrivial "
                        "complex irreps")
    run.figure(f"{name}: E / Eq. 22's bound at the vertices",
               {lab: float(x) for lab, x in zip(labels, e_v / bound)})


def check(run: Run) -> Iterator[Evidence]:
    # The negative control swaps only Eq. 15's form: its run replays the evidence of the
    # routes that do not read it (run.memo_route), keyed by the forms they read.
    p = run.params
    for name in p["symbolic_groups"]:
        G = build_group(name)
        yield from run.memo_route("sums", ("target_sums",),
                                  lambda G=G: _symbolic_sums(run, G), key=name)
        yield from _symbolic_eq15(run, G)
        yield from run.memo_route("eq20", ("eq20",), lambda G=G: _symbolic_eq20(run, G),
                                  key=name)
    for name in p["schur_groups"]:
        yield from run.memo_route("schur", ("case1", "case2"),
                                  lambda name=name: _schur(run, build_group(name)), key=name)
    for name in p["symbolic_groups"]:
        G = build_group(name)
        yield from run.memo_route("eq25", ("eq25_weight", "eq20"),
                                  lambda G=G: _symbolic_eq25(run, G),
                                  key=name)
        yield from run.memo_route("eq23", ("eq23_vertex", "eq23_slope_sign"),
                                  lambda G=G: _symbolic_eq23(run, G), key=name)
    yield from run.memo_route("S", ("S_x2",), lambda: iter([_s_decomposition(run)]))
    for name in p["numeric_groups"]:
        yield from _numeric(run, name)


CLAIM = register(Claim(
    id="li2.appA1",
    aliases=("li2.secA1",),
    paper=PAPER,
    kind="equation",
    title="Facts in the proof of Thm. 2 (Eqs. 13-25): target sums, Schur cases, Eqs. 20-23, "
          "Eq. 25",
    source="App. A.1, Eqs. 13-25",
    statement=r"z_h=\langle R_h,S\rangle_F\ (13),\ \mathcal E=\tfrac12\sum_h(z_h-\bar z)^2\ (14)"
              r"=\tfrac12\sum_h\langle\tilde R_h,S\rangle_F^2\ (15);\ \text{Case 1: }\sum_h"
              r"\mathrm{vec}(C_k)\mathrm{vec}(C_{k'})^*=0\ (k\ne k');\ \text{Case 2: }\sum_h"
              r"\mathrm{vec}(C_k(h))\mathrm{vec}(C_k(h))^*=\tfrac M{d_k}\mathrm{vec}(I)"
              r"\mathrm{vec}(I)^*;\ \mathcal E=\tfrac M2\sum_{k\ne0}\tfrac1{d_k}|\sum_r"
              r"\mathrm{tr}\,\hat S_{k,r}|^2\ (20);\ x^2:\ S=(\mathbf u\circ\mathbf u)"
              r"\mathbf 1^\top+\mathbf 1(\mathbf v\circ\mathbf v)^\top+\mathbf u\mathbf v^\top,\ "
              r"\hat S_{k,r}=\hat{\mathbf u}_{k,r}\hat{\mathbf v}_{k,r}^*;\ \mathcal E\le"
              r"\tfrac M2\sum_ka_kb_k/d_k\ (22);\ |\sum_r\mathrm{tr}\,\hat S_{k,r}|^2\le "
              r"a_kb_k\ (21);\ \mathbf e_{k_0}\text{ strict local maxima on the simplex (23)};\ "
              r"\text{real }\mathbf w:\ \tfrac M2\text{ real irreps},\ M\text{ one of each "
              r"complex pair (25)}",
    reading=r"The printed forms are the SOURCES file's transcription (not the paper's text "
            r"verbatim). Full task, \mathbf w=[\mathbf u;P\mathbf v], S_{ij}=\sigma(u_i+v_j), "
            r"\sigma(x)=x^2; R_h\mathbf e_b=\mathbf e_{hb}, \tilde R_h=R_hP_1^\perp "
            r"(M\times M centring). \hat S=Q^*SQ with Eq. 8's Q (columns (k,r,i), unitary "
            r"irreps U_k), \hat{\mathbf u}=Q^*\mathbf u, \hat{\mathbf v}=Q^*\mathbf v; blocks "
            r"(k,r) are the diagonal d_k\times d_k blocks; the sums over k run over the "
            r"nontrivial complex irreps; vec stacks rows; C_k(h) read as the unitary U_k(h). "
            r"a_k=\sum_r|\hat{\mathbf u}_{k,r}|^2. Eq. 22 is tested at the vertices where the "
            r"paper says it is attained. Eq. 21 is checked as the step it is, with the printed "
            r"\hat S_{k,r}=\hat{\mathbf u}_{k,r}\hat{\mathbf v}_{k,r}^* (with \hat S=Q^*SQ from "
            r"the definition the left side is 4x larger: the factor 2 of S=\dots+2\mathbf u"
            r"\mathbf v^\top, a figure), at random points and with equality at the vertices. "
            r"Eq. 23 is read on Eq. 22's bound f(c)=\tfrac M8\sum_kc_k^2/d_k over the "
            r"nontrivial complex irreps: f(\mathbf e_{k_0})=M/(8d_{k_0}) and a negative slope "
            r"along every edge (strict). Eq. 25: 'real irreps' read as self-conjugate ones "
            r"(quaternionic included: their t_k is real too), the pair represented by its "
            r"lower-index member; compared with Eq. 20 as printed (the step) and with "
            r"\mathcal E (the statement; it inherits Eq. 20's trace-for-Frobenius error where "
            r"d_k\ge2). Eqs. 16-19 and 24 have no printed form in the transcription and are not "
            r"checked.",
    parameters={
        "quick": {"symbolic_groups": ("Z3", "D3"), "schur_groups": ("D3", "D4"),
                  "decomposition_size": 3, "numeric_groups": ("Z7", "D3", "D4"),
                  "random_points": 16},
        "full": {"symbolic_groups": ("Z3", "Z4", "Z5", "D3", "D4"),
                 "schur_groups": ("D3", "D4", "D5", "Q8", "A4"), "decomposition_size": 5,
                 "numeric_groups": ("Z7", "Z11", "Z23", "Z3xZ3", "D3", "D4", "D5", "A4", "Q8"),
                 "random_points": 64},
    },
    stated={"target_sums": stated_target_sums, "centred_target_sums": stated_centred_target_sums,
            "case1": stated_case1, "case2": stated_case2, "S_x2": stated_s_x2,
            "eq20": stated_eq20, "S_hat_x2": stated_s_hat_x2, "eq22": stated_eq22,
            "eq21": stated_eq21, "eq23_vertex": stated_eq23_vertex,
            "eq23_slope_sign": stated_eq23_slope_sign, "eq25_weight": stated_eq25_weight},
    equivalent_mutants={
        "S_hat_x2:sign": "S^_(k,r) enters only through Eq. 20's |sum_r tr S^_(k,r)|^2, which a "
                         "sign flip of every block leaves as is"},
    check=check,
    control=NegativeControl("Eq. 15 with R_h in place of R_h P_1^perp (centring dropped)",
                            {"centred_target_sums": uncentred_target_sums}),
    space={"symbolic_groups": SYMBOLIC_GROUPS, "schur_groups": ONE_SMALL_GROUP,
           "numeric_groups": ONE_SMALL_GROUP, "decomposition_size": IntRange(2, 8),
           "seed": SEED},
))
