r"""li2.groups-defs: the group-arithmetic definitions of §4.2 (regular representation, inversion
operator, :math:`\sum_kd_k^2=M`, isotypic dimensions :math:`m_kd_k=d_k^2`, Eq. 8).

Routes: the paper's identities (stated); the exact library :mod:`theory.groups.irreps` in
:math:`\mathbb Q(\zeta_N)` (derived); float matrices built from the Cayley table alone by
torch scatters, Burnside's numerical character method and an eigendecomposition of a random
central element of the group algebra (measured).

"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import sympy as sp
import torch

from numerics.li2.group_task import (
    class_algebra_dimensions,
    inversion_matrix,
    isotypic_dimensions,
    regular_matrices,
)
from theory.groups.cyc_linalg import rref
from theory.groups.cyclotomic import Cyc
from theory.groups import (
    FiniteGroup,
)
from theory.groups.irreps import (
    inversion_operator,
    irreps,
    projector_coefficients,
    real_irreps,
    regular_representation,
)
from verify import (
    SEED,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    register,
    roundoff,
    symbolic_identity,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import SMALL_GROUPS, build_group

# --- the paper's identities -----------------------------------------------------------------

def stated_product(R: Sequence, table, a: int, b: int):
    r""":math:`R_{h_1}R_{h_2}=R_{h_1h_2}`: the matrix the product should equal."""
    return R[table[a][b]]


def swapped_product(R: Sequence, table, a: int, b: int):
    r"""Planted error: :math:`R_{h_1}R_{h_2}=R_{h_2h_1}` (true only for abelian groups)."""
    return R[table[b][a]]


def stated_isotypic_dimension(d: int, kind: str) -> int:
    r""":math:`\dim\mathcal H_k=m_kd_k` with :math:`m_k=d_k`; a real component of type C holds
    the conjugate pair, :math:`2d_k^2`."""
    return 2 * d * d if kind == "C" else d * d


def stated_dimension_sum(M: int) -> int:
    r""":math:`\sum_kd_k^2=M`."""
    return M


# --- checks -----------------------------------------------------------------------------------

def _exact_ints(mats) -> np.ndarray:
    return np.array([np.array(m.tolist(), dtype=np.int64) for m in mats])


def _homomorphism(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    stated = run.stated["product"]
    R = _exact_ints(regular_representation(G))
    M, t = G.order, G.table
    pairs = [(a, b) for a in range(M) for b in range(M)]
    want = np.stack([stated(R, t, a, b) for a, b in pairs])
    exact = np.stack([R[a] @ R[b] for a, b in pairs])  # integer arithmetic: exact
    Rf = regular_matrices(t, run.dtype, run.device)
    left = torch.tensor([a for a, _ in pairs], device=run.device)
    right = torch.tensor([b for _, b in pairs], device=run.device)
    measured = Rf[left] @ Rf[right]
    yield compare(Route.NUMERIC, f"{name}: R_h1 R_h2 = R_h1h2 for all {M * M} pairs",
                  stated=want.astype(np.float64), derived=exact.astype(np.float64),
                  measured=measured, metric="absolute",
                  tolerance=Tolerance(0.0, "0/1 matrices: products of permutation matrices are "
                                           "exact in integers and in floating point"),
                  parameters={"group": name, "M": M},
                  note="stated: R at the product (theory.groups.irreps.regular_representation); "
                       "derived: integer products of those matrices; measured: float "
                       "matrices scattered from the Cayley table, batched matmul")


def _inversion(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    M = G.order
    P = np.array(inversion_operator(G).tolist(), dtype=np.int64)
    Pf = inversion_matrix(G.table, run.dtype, run.device)
    eye = np.eye(M)
    yield compare(Route.NUMERIC, f"{name}: P^2 = I and P^T = P",
                  stated=np.stack([eye, P]), derived=np.stack([P @ P, P.T]).astype(np.float64),
                  measured=torch.stack([Pf @ Pf, Pf.T]), metric="absolute",
                  tolerance=Tolerance(0.0, "permutation matrices: exact arithmetic"),
                  parameters={"group": name, "M": M},
                  note="derived from theory.groups.irreps.inversion_operator; measured from the "
                       "table's inverses")


def _dimensions(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    M = G.order
    exact = sorted(r.dim for r in irreps(G))
    numeric = class_algebra_dimensions(G.table, run.generator(f"burnside:{name}"))
    # Computed in float64 whatever the run's dtype: these are properties of the group, not of
    # a network's precision. Burnside's eigenvalues come from a non-symmetric eig of an r x r
    # matrix (r classes): the error is about r^2 u times its condition number; 100 r^2 u
    # bounds the groups here (measured errors ~1e-15 relative).
    r = len(exact)
    tol = roundoff(torch.float64, 100 * r * r, "Burnside's method: eig of the r x r class "
                                             "algebra, r = number of classes")
    yield compare(Route.NUMERIC, f"{name}: sum_k d_k^2 = M",
                  stated=float(run.stated["dimension_sum"](M)),
                  derived=float(sum(d * d for d in exact)),
                  measured=float(numeric.square().sum()), tolerance=tol,
                  parameters={"group": name, "M": M, "classes": r},
                  note="derived: dims of theory.groups.irreps.irreps (exact); measured: Burnside's "
                       "method in float64 from the Cayley table, d_k^2 = M / sum_a "
                       "|omega_k(a)|^2/|C_a|")
    yield compare(Route.NUMERIC, f"{name}: irrep dimensions d_k", derived=np.array(exact, float),
                  measured=numeric, tolerance=tol, parameters={"group": name},
                  note="cross-check of the library's irreps against Burnside's method")
    reals = real_irreps(G)
    want = sorted(run.stated["isotypic_dimension"](r.source.dim, r.type) for r in reals)
    traces = []
    for coeffs in projector_coefficients(G, real=True):
        # tr Pi_k = M p_k(e): only R_e has a non-zero trace.
        traces.append((coeffs[G.identity] * M).to_fraction())
    measured = isotypic_dimensions(G.table, run.generator(f"central:{name}"))
    yield compare(Route.NUMERIC, f"{name}: real isotypic dimensions m_k d_k = d_k^2",
                  stated=np.array(want, float), derived=np.array(sorted(traces), float),
                  measured=measured, metric="absolute",
                  tolerance=Tolerance(0.0, "integer counts: traces of exact projectors and "
                                           "multiplicities of eigenvalue clusters"),
                  parameters={"group": name, "real_irreps": [(r.dim, r.type) for r in reals]},
                  note="derived: tr Pi_k of the exact real isotypic projectors; measured: "
                       "eigenvalue multiplicities of a random symmetric central element "
                       "sum_c a_c (K_c + K_c^T) of the float group algebra")


def eq8_exact(G: FiniteGroup, block=None) -> tuple[Cyc, int]:
    r"""Eq. 8 in exact arithmetic, without square roots: the sum over ``h`` of
    :math:`\|R_h\tilde Q-\tilde Q\,\bigoplus_k\bigoplus_{r\le d_k}C_k(h)\|_F^2` and the rank of
    :math:`\tilde Q`, whose column :math:`(k,r,i)` is :math:`g\mapsto C_k(g^{-1})_{ri}`.

    For any homomorphism :math:`C_k`, :math:`(R_h\tilde q_{kri})(g)=\tilde q_{kri}(h^{-1}g)=
    \sum_j\tilde q_{krj}(g)C_k(h)_{ji}`, so the residual is 0; with rank :math:`M` this is the
    block diagonalisation :math:`\tilde Q^{-1}R_h\tilde Q=\bigoplus_k\bigoplus_rC_k(h)`.
    ``block(rep, h)`` gives the block used for irrep ``rep`` (default: its matrix at ``h``;
    tests plant wrong ones).
    """
    block = block or (lambda rep, h: rep.exact_matrices[h])
    reps = irreps(G)
    F = reps[0].field
    M, t, inv = G.order, G.table, G.inverse
    cols = [(rep, r, i) for rep in reps for r in range(rep.dim) for i in range(rep.dim)]
    Qt = [[rep.exact_matrices[inv[g]][r][i] for (rep, r, i) in cols] for g in range(M)]
    residual = F.zero
    for h in range(M):
        hinv = inv[h]
        for c, (rep, r, i) in enumerate(cols):
            C = block(rep, h)
            base = c - i  # column of (k, r, 0)
            for g in range(M):
                rhs = F.zero
                for j in range(rep.dim):
                    if C[j][i]:
                        rhs = rhs + Qt[g][base + j] * C[j][i]
                diff = Qt[t[hinv][g]][c] - rhs
                residual = residual + diff * diff.conjugate()
    _, pivots = rref(Qt, F)
    return residual, len(pivots)


def _block_diagonal(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    """Eq. 8 exactly (a non-unitary basis, no square roots) and in complex128 (unitary)."""
    reps = irreps(G)
    F = reps[0].field
    M, t = G.order, G.table
    residual, rank = eq8_exact(G)
    yield symbolic_identity(
        f"{name}: Eq. 8, R_h Q = Q (+)_k (+)_(r<=d_k) C_k(h) for all h "
        f"(exact, sum of |residual|^2)",
        stated=sp.Integer(0), derived=residual.to_sympy(),
        parameters={"group": name, "field": f"Q(zeta_{F.N})"},
        note="Q column (k,r,i): g -> C_k(g^-1)_ri with the library's exact irreps")
    yield symbolic_identity(f"{name}: the basis Q of Eq. 8 is invertible (rank M)",
                            stated=sp.Integer(M), derived=sp.Integer(rank),
                            parameters={"group": name})
    # Unitary form in complex128: Q column (k,r,i) = sqrt(d_k/M) conj(C_k(g)_ir).
    mats = [torch.tensor(rep.to_complex(), dtype=torch.complex128) for rep in reps]
    Q = torch.cat([(rep.dim / M) ** 0.5 * m[:, :, r].conj()
                   for rep, m in zip(reps, mats) for r in range(rep.dim)], dim=1)
    R = regular_matrices(t, torch.float64).to(torch.complex128)
    block = torch.stack([torch.block_diag(*[m[h] for rep, m in zip(reps, mats)
                                            for _ in range(rep.dim)]) for h in range(M)])
    eye = torch.eye(M, dtype=torch.complex128)
    yield compare(Route.NUMERIC, f"{name}: Q*R_hQ = (+)_k (+)_(r<=d_k) C_k(h) and Q*Q = I "
                                 f"(complex128)",
                  stated=torch.cat([block, eye[None]]),
                  measured=torch.cat([Q.mH @ R @ Q, (Q.mH @ Q)[None]]), metric="absolute",
                  # Each entry is a length-M sum of products of unit-modulus-bounded numbers
                  # (|C_ij| <= 1, |Q_gj| <= 1), twice (Q* R Q), plus the rounding of the
                  # irreps' entries: 4 M u.
                  tolerance=roundoff(torch.float64, 4 * M, "two length-M complex sums"),
                  parameters={"group": name, "M": M})


def check(run: Run) -> Iterator[Evidence]:
    for name in run.params["groups"]:
        G = build_group(name)
        yield from _homomorphism(run, G, name)
        yield from _inversion(run, G, name)
        yield from _dimensions(run, G, name)
        if G.order <= run.params["exact_block_max_order"]:
            # No stated form enters Eq. 8's route: the negative control's run replays it.
            yield from run.memo_route("eq8", (),
                                      lambda G=G, name=name: _block_diagonal(run, G, name),
                                      key=name)


CLAIM = register(Claim(
    id="li2.groups-defs",
    aliases=("li2.def-group",),
    paper=PAPER,
    kind="definition",
    title="Group task definitions: regular representation, inversion operator, irreps (Eq. 8)",
    source="§4.2 definitions and Eq. 8",
    statement=r"R_{h_1}R_{h_2}=R_{h_1h_2},\ \mathbf e_{h_1h_2}=R_{h_1}\mathbf e_{h_2};\ "
              r"P\mathbf e_h=\mathbf e_{h^{-1}},\ P^2=I,\ P^\top=P;\ "
              r"R_h=Q\big(\bigoplus_k\bigoplus_{r=1}^{m_k}C_k(h)\big)Q^*\ (\text{Eq. 8}),\ "
              r"m_k=d_k,\ M=\sum_kd_k^2",
    reading=r"R_h is the left regular representation, (R_h)_{ab}=[a=hb]. Eq. 8 is checked "
            r"exactly as R_hQ=Q\,\bigoplus_k\bigoplus_{r\le d_k}C_k(h) with Q invertible "
            r"(columns g\mapsto C_k(g^{-1})_{ri}; the library's irreps, some non-unitary in "
            r"form D^{1/2}CD^{-1/2}), and in complex128 with the unitary Q of the paper "
            r"(columns \sqrt{d_k/M}\,\overline{C_k(g)_{ir}}). Dimensions of real isotypic "
            r"components: d_k^2 for types R and H, 2d_k^2 for a conjugate pair of type C "
            r"(the real component holds both members).",
    parameters={
        "quick": {"groups": ("Z7", "Z8", "Z3xZ3", "Z2xZ4", "S3", "D4", "Q8", "S4"),
                  "exact_block_max_order": 24},
        "full": {"groups": ("Z5", "Z7", "Z8", "Z12", "Z3xZ3", "Z2xZ4", "Z2xZ2xZ2", "S3", "D4",
                            "D5", "D6", "Q8", "A4", "S4"),
                 "exact_block_max_order": 24},
    },
    stated={"product": stated_product, "isotypic_dimension": stated_isotypic_dimension,
            "dimension_sum": stated_dimension_sum},
    check=check,
    control=NegativeControl("operands swapped: R_h1 R_h2 = R_h2h1", {"product": swapped_product}),
    # One group per run, of every irrep type, from Z2 to S4 (order 24, irreps up to d = 3);
    # the seed draws the float routes' random group-algebra elements.
    space={"groups": Choice((("Z2",), *((g,) for g in SMALL_GROUPS),
                             *((g,) for g in ("Z2xZ4", "Z2xZ2xZ2", "Z12", "D6", "A4", "S4")))),
           "seed": SEED},
))
