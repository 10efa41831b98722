r"""Top-down modulation (Li2 Thm. 7) exactly: the least-squares residual of a hidden layer that
has learned only some irreps, the modified energy it induces, and the block traces of Eq. 20.

Everything is built from definitions, in exact cyclotomic arithmetic
(:math:`\mathbb Q(\zeta_L)`, :math:`L=\mathrm{lcm}(\text{exponent},4)`), on the full group task
(samples :math:`(h_1,h_2)`, :math:`h_1`-major; input :math:`[\mathbf e_{h_1};\mathbf e_{h_2}]`;
label :math:`\mathbf e_{h_1h_2}`):

* **the learned layer.** For each learned real isotypic component :math:`\mathcal H_j`, a
  basis :math:`\{\mathbf b_a\}` of :math:`\mathcal H_j` (the matrix coefficients
  :math:`g\mapsto\rho_j(g)_{ab}` of the real irrep, row-reduced) and the nodes
  :math:`[\mathbf b_a;\pm P\mathbf b_c]` for all :math:`a,c` (Thm. 3's real-domain form
  :math:`[\mathbf u;\pm P\mathbf u']`: exact :math:`[\mathbf u;\pm P\mathbf u]` cannot span the
  targets in :math:`\mathbb R`);
* **the top layer.** :math:`\hat Y=\tilde F V` with :math:`V` the least-squares solution
  (:math:`\eta\to0`): the orthogonal projection of :math:`\tilde Y` on the column space of
  :math:`\tilde F=P_1^\perp\sigma(XW)`, solved exactly by row reduction of the normal equations;
* **the residual.** :math:`R=\tilde Y-\hat Y` (the sign for which
  :math:`G_F=-\partial J/\partial F=RV^\top`);
* **the modified energy.** :math:`\mathcal E_{\mathcal S}(\mathbf w)=\tfrac12\|R^\top\sigma(X
  \mathbf w)\|^2`;
* **the block traces.** :math:`\sum_r\mathrm{tr}\,\hat S_{k,r}=\mathrm{tr}(Q_k^*SQ_k)` with
  :math:`Q_k` the columns of Eq. 8's :math:`Q` for the complex irrep :math:`k` (matrix
  coefficients of the unitary irrep, :func:`theory.groups.irreps.regular_decomposition`) and
  :math:`S_{ij}=\sigma(u_i+v_j)` for :math:`\mathbf w=[\mathbf u;P\mathbf v]`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.groups.cyc_linalg import rref
from theory.groups.cyclotomic import Cyc, CyclotomicField, cyclotomic_field
from theory.derivation import Derivation
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import irreps, real_irreps

Vector = list[Cyc]
Table = list[list[Cyc]]


def common_field(G: FiniteGroup) -> CyclotomicField:
    r""":math:`\mathbb Q(\zeta_L)`, :math:`L=\mathrm{lcm}(\text{exponent},4)`: it holds the
    characters, the complex irreps and the realified ones of ``G``."""
    return cyclotomic_field(math.lcm(G.exponent, 4))


def _embed(x: Cyc, L: CyclotomicField) -> Cyc:
    return x.F.embed(x, L)


def embed_vector(G: FiniteGroup, w: Sequence[Cyc]) -> Vector:
    """``w`` with every entry moved into :func:`common_field` of ``G``."""
    L = common_field(G)
    return [_embed(x, L) for x in w]


def power_basis(x: Cyc) -> sp.Expr:
    r""":math:`x=\sum_{k<\varphi(L)}c_k\zeta_L^k` as a polynomial in the symbol ``zeta_L``
    (the canonical power-basis coordinates). Two field elements are equal iff these
    polynomials are identical, so an exact identity in :math:`\mathbb Q(\zeta_L)` becomes a
    polynomial identity that prints compactly (no radicals).

    >>> from theory.groups.cyclotomic import cyclotomic_field
    >>> F = cyclotomic_field(3)
    >>> power_basis(F.root(2))
    -zeta_3 - 1
    """
    z = sp.Symbol(f"zeta_{x.F.N}")
    return sp.Add(*[sp.Rational(c.numerator, c.denominator) * z**k
                    for k, c in enumerate(x.coefficients) if c])


def _dot(a: Sequence[Cyc], b: Sequence[Cyc], L: CyclotomicField) -> Cyc:
    total = L.zero
    for x, y in zip(a, b):
        if x and y:
            total = total + x * y
    return total


def component_basis(G: FiniteGroup, j: int) -> list[Vector]:
    r"""A basis of the real isotypic component :math:`\mathcal H_j` (``j`` indexes
    :func:`theory.groups.irreps.real_irreps`): the matrix-coefficient functions
    :math:`g\mapsto\rho_j(g)_{ab}` of the real irrep, row-reduced (they span the component:
    the coefficients of :math:`C_k` and :math:`\bar C_k` span :math:`\mathcal H_k`)."""
    reals = real_irreps(G)
    if not 0 <= j < len(reals):
        raise ValueError(f"component: {j} must lie in 0..{len(reals) - 1}")
    L = common_field(G)
    rho = reals[j]
    rows = [[_embed(rho.exact_matrices[g][a][b], L) for g in range(G.order)]
            for a in range(rho.dim) for b in range(rho.dim)]
    basis, _ = rref(rows, L)
    return basis


def subset_nodes(G: FiniteGroup, learned: Sequence[int]) -> list[Vector]:
    r"""The nodes :math:`[\mathbf b_a;\pm P\mathbf b_c]` for every learned component, every
    pair of basis vectors and both signs, with :math:`(P\mathbf b)_h=b_{h^{-1}}`."""
    out = []
    for j in learned:
        basis = component_basis(G, j)
        for a in basis:
            for c in basis:
                second = [c[G.inverse[h]] for h in range(G.order)]
                for sign in (1, -1):
                    out.append(list(a) + [x * sign for x in second])
    return out


def sample_pairs(G: FiniteGroup) -> list[tuple[int, int]]:
    """All :math:`M^2` pairs :math:`(h_1,h_2)`, :math:`h_1`-major (the toolkit's order)."""
    return [(a, b) for a in range(G.order) for b in range(G.order)]


def node_activations(G: FiniteGroup, w: Sequence[Cyc]) -> Vector:
    r""":math:`\sigma(X\mathbf w)` with :math:`\sigma(x)=x^2`: :math:`(w_{h_1}+w_{M+h_2})^2`
    per sample."""
    M = G.order
    return [(w[a] + w[M + b]) * (w[a] + w[M + b]) for a, b in sample_pairs(G)]


def centred_labels(G: FiniteGroup) -> Table:
    r""":math:`\tilde Y=P_1^\perp Y`: on the full task every class has :math:`M` of the
    :math:`M^2` samples, so :math:`\tilde Y_{im}=[h_1h_2=m]-1/M`."""
    L = common_field(G)
    M = G.order
    return [[L.rational(int(G.table[a][b] == m)) - L.rational(1) / M for m in range(M)]
            for a, b in sample_pairs(G)]


def _centre_columns(F: Table, L: CyclotomicField) -> Table:
    n = len(F)
    means = [sum((row[k] for row in F), L.zero) / n for k in range(len(F[0]))]
    return [[x - mu for x, mu in zip(row, means)] for row in F]


def least_squares_fit(Ft: Table, Yt: Table, L: CyclotomicField) -> tuple[Table, int]:
    r""":math:`\hat Y=\tilde F V` with :math:`\tilde F^\top\tilde F V=\tilde F^\top\tilde Y`
    solved exactly (row reduction; free variables set to 0): the orthogonal projection of
    :math:`\tilde Y` on the column space of :math:`\tilde F`, i.e. the :math:`\eta\to0` limit
    of the ridge fit. Returns :math:`\hat Y` and the rank of :math:`\tilde F`."""
    K, M = len(Ft[0]), len(Yt[0])
    cols = [[row[k] for row in Ft] for k in range(K)]
    ycols = [[row[m] for row in Yt] for m in range(M)]
    gram = [[L.zero] * K for _ in range(K)]
    for a in range(K):
        for b in range(a, K):
            gram[a][b] = gram[b][a] = _dot(cols[a], cols[b], L)
    augmented = [gram[a] + [_dot(cols[a], ycols[m], L) for m in range(M)] for a in range(K)]
    rows, pivots = rref(augmented, L)
    if pivots and pivots[-1] >= K:
        raise ArithmeticError("the normal equations are inconsistent (cannot happen)")
    V = [[L.zero] * M for _ in range(K)]
    for row, p in zip(rows, pivots):
        V[p] = row[K:]
    Yhat = [[_dot(frow, [V[k][m] for k in range(K)], L) for m in range(M)] for frow in Ft]
    return Yhat, len(pivots)


@dataclass(frozen=True, eq=False)
class ExactResidual:
    r"""The exact top-layer fit of a layer that learned the components ``learned``:
    :math:`\hat Y` and :math:`R=\tilde Y-\hat Y` (``n x M``, samples :math:`h_1`-major),
    the number of nodes, the rank of :math:`\tilde F`, and the derivation."""

    G: FiniteGroup
    learned: tuple[int, ...]
    nodes: int
    rank: int
    fitted: Table
    residual: Table
    derivation: Derivation

    @property
    def field(self) -> CyclotomicField:
        return common_field(self.G)


def _core(G: FiniteGroup, rows: Table) -> sp.Matrix:
    """The rows of one sample per target (the sample ``(h, e)``, target ``h``), as sympy."""
    M = G.order
    return sp.Matrix(M, M, lambda h, m: rows[h * M + G.identity][m].to_sympy())


@lru_cache(maxsize=16)
def exact_residual(G: FiniteGroup, learned: tuple[int, ...]) -> ExactResidual:
    """:class:`ExactResidual` for ``learned`` (real component indices, trivial excluded)."""
    count = len(real_irreps(G))
    if not learned or any(not 1 <= j < count for j in learned) or len(set(learned)) < len(
            learned):
        raise ValueError(f"learned: {learned} must be distinct component indices in "
                         f"1..{count - 1}")
    L = common_field(G)
    d_ = Derivation(f"Least-squares top layer on the nodes of components {list(learned)} of "
                    f"{G.name} (exact in Q(zeta_{L.N}))")
    dims = {j: len(component_basis(G, j)) for j in learned}
    d_.step(f"dim H_j from the matrix coefficients of each learned real irrep: {dims}; nodes "
            f"[b_a; +-P b_c] for all pairs of basis vectors: count",
            sp.Integer(sum(2 * d * d for d in dims.values())))
    nodes = subset_nodes(G, learned)
    F = [list(col) for col in zip(*(node_activations(G, w) for w in nodes))]
    Ft = _centre_columns(F, L)
    Yt = centred_labels(G)
    fitted, rank = least_squares_fit(Ft, Yt, L)
    d_.step("rank of Ft = P sigma(X W) (exact row reduction of Ft^T Ft)", sp.Integer(rank))
    d_.step("Yhat = Ft V, Ft^T Ft V = Ft^T Yt: rows of the samples (h, e), one per target h "
            "(row h, column h')", _core(G, fitted))
    residual = [[y - f for y, f in zip(yrow, frow)] for yrow, frow in zip(Yt, fitted)]
    d_.step("R = Yt - Yhat, same rows", _core(G, residual))
    return ExactResidual(G, tuple(learned), len(nodes), rank, fitted, residual, d_)


def modified_energy(res: ExactResidual, w: Sequence[Cyc]) -> Cyc:
    r""":math:`\mathcal E_{\mathcal S}(\mathbf w)=\tfrac12\|R^\top\sigma(X\mathbf w)\|^2` for
    real ``w`` (not normalised)."""
    L = res.field
    f = node_activations(res.G, [_embed(x, L) for x in w])
    q = [_dot([row[m] for row in res.residual], f, L) for m in range(res.G.order)]
    return _dot(q, q, L) / 2


def decomposition_projector(G: FiniteGroup, k: int) -> Table:
    r""":math:`Q_kQ_k^*` with :math:`Q_k` the columns :math:`(k,r,i)` of Eq. 8's :math:`Q`,
    :math:`Q_{g,(k,r,i)}=\sqrt{d_k/M}\,\overline{U_k(g)_{ir}}` (unitary irrep
    :math:`U_k=D^{1/2}C_kD^{-1/2}`): the orthogonal projector on the isotypic subspace where
    :math:`R_h` acts by :math:`C_k`. Entry :math:`[a,b]=\tfrac{d_k}M\sum_{i,r}\frac{D_i}{D_r}
    \overline{C_k(a)_{ir}}C_k(b)_{ir}` (the square roots pair up), exact."""
    reps = irreps(G)
    if not 0 <= k < len(reps):
        raise ValueError(f"irrep: {k} must lie in 0..{len(reps) - 1}")
    L = common_field(G)
    rep, M = reps[k], G.order
    d = rep.dim
    C = [[[_embed(x, L) for x in row] for row in m] for m in rep.exact_matrices]
    ratio = [[L.one if rep.scale is None else _embed(rep.scale[i] / rep.scale[r], L)
              for r in range(d)] for i in range(d)]
    conj = [[[x.conjugate() for x in row] for row in m] for m in C]
    out = []
    for a in range(M):
        row = []
        for b in range(M):
            acc = L.zero
            for i in range(d):
                for r in range(d):
                    acc = acc + ratio[i][r] * conj[a][i][r] * C[b][i][r]
            row.append(acc * d / M)
        out.append(row)
    return out


def activation_matrix(G: FiniteGroup, w: Sequence[Cyc]) -> Table:
    r""":math:`S_{ij}=\sigma(u_i+v_j)`, :math:`\sigma(x)=x^2`, for :math:`\mathbf w=[\mathbf u;
    P\mathbf v]`, i.e. :math:`v_j=w_{M+j^{-1}}`: the activation of the sample
    :math:`(h_1,h_2)=(i,j^{-1})`, whose target is :math:`ij^{-1}` (Eq. 13)."""
    L = common_field(G)
    M = G.order
    w = [_embed(x, L) for x in w]
    v = [w[M + G.inverse[j]] for j in range(M)]
    return [[(w[i] + v[j]) * (w[i] + v[j]) for j in range(M)] for i in range(M)]


def block_trace(projector: Table, S: Table, L: CyclotomicField) -> Cyc:
    r""":math:`\sum_r\mathrm{tr}\,\hat S_{k,r}=\mathrm{tr}(Q_k^*SQ_k)=\sum_{a,b}S_{ab}
    (Q_kQ_k^*)_{ba}` (the diagonal blocks of :math:`\hat S=Q^*SQ` for irrep :math:`k`)."""
    M = len(S)
    return _dot([S[a][b] for a in range(M) for b in range(M)],
                [projector[b][a] for a in range(M) for b in range(M)], L)
