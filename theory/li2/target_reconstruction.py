r"""Li2 Thm. 3 (target reconstruction) and the facts of its proof (App. A.2), derived from the
definitions in exact arithmetic.

The definitions (§2, §4.2), nothing of the paper's closed forms: samples
:math:`(h_1,h_2)\in H\times H` (all :math:`n=M^2`), input :math:`[\mathbf e_{h_1};
\mathbf e_{h_2}]`, label :math:`\mathbf e_{h_1h_2}`; a node :math:`\mathbf w=[\mathbf u;
\mathbf v]` has the feature :math:`f(h_1,h_2)=\sigma(u_{h_1}+v_{h_2})`, :math:`\sigma(z)=z^2`
(holomorphic: no conjugation inside the network); :math:`\tilde F=P_1^\perp F`,
:math:`\tilde Y=P_1^\perp Y`; :math:`V` by least squares with :math:`\eta=0`, over
:math:`\mathbb C` when the features are complex (Hermitian normal equations
:math:`\tilde F^\ast\tilde FV=\tilde F^\ast\tilde Y`).

The readings of :math:`\mathbf w=[\mathbf u;\pm P\mathbf u]` (:data:`READINGS`) differ in the
second block; the exact residual :math:`\|\hat Y-\tilde Y\|_F^2/\|\tilde Y\|_F^2` of each is
computed in :math:`\mathbb Q(\zeta_L)`, :math:`L=\mathrm{lcm}(\exp H,4)`, by row reduction of
the normal equations (:func:`derive_reconstruction`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from theory.groups.cyc_linalg import rref
from theory.groups.cyclotomic import Cyc, CyclotomicField, cyclotomic_field, imaginary_unit
from theory.derivation import Derivation
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import (
    irreps,
    projector_coefficients,
    real_irreps,
    regular_representation,
)

Vector = list[Cyc]

#: The readings of Thm. 3's nodes (second block of each pair), with what they mean.
READINGS: dict[str, str] = {
    "complex-conjugate": r"[u; ±P conj(u)], u over N^2 vectors of each complex H_k whose u u^* "
                         r"are a basis of End(H_k) (b_a, b_a + b_b, b_a + i b_b)",
    "complex-plain": r"[u; ±P u], the same u (no conjugation)",
    "real-exact": r"[u; ±P u], real u: cos/sin of each frequency for cyclic groups, else "
                  r"b_a, b_a + b_b (their u u^T span the symmetric matrices of each real "
                  r"component)",
    "real-perturbed": r"[u; ±P u'], real u over N^2 vectors b_a, b_a ± b_b of each real "
                      r"component (N its dimension), u' = u + d/10 with d a fixed integer "
                      r"combination of the component's basis",
    "real-perturbed-complex-count": r"as real-perturbed, but only the paper's count "
                                    r"sum m_k^2 d_k^2 of pairs per real component (N^2/2 for "
                                    r"a conjugate pair of complex irreps)",
}


def field_for(G: FiniteGroup) -> CyclotomicField:
    r""":math:`\mathbb Q(\zeta_L)`, :math:`L=\mathrm{lcm}(\exp G,4)`: holds the characters,
    :math:`i` and the cosines and sines of the cyclic groups."""
    return cyclotomic_field(math.lcm(G.exponent, 4))


def _projector(G: FiniteGroup, coeffs: Sequence[Cyc], F: CyclotomicField) -> list[Vector]:
    r""":math:`\Pi=\sum_gp(g)R_g`: entry ``[a][b]`` is :math:`p(ab^{-1})`."""
    src = coeffs[0].F
    c = [src.embed(x, F) for x in coeffs]
    t, inv = G.table, G.inverse
    return [[c[t[a][inv[b]]] for b in range(G.order)] for a in range(G.order)]


def _range_basis(P: list[Vector]) -> list[Vector]:
    """Independent columns of ``P`` spanning its range (the pivot columns of its rref)."""
    F = P[0][0].F
    _, pivots = rref(P, F)
    return [[row[p] for row in P] for p in pivots]


def complex_bases(G: FiniteGroup) -> list[tuple[int, list[Vector]]]:
    r"""``(k, basis)`` of the complex isotypic subspace :math:`\mathcal H_k=\mathrm{range}\,
    \Pi_k`, :math:`\Pi_k=\frac{d_k}{M}\sum_g\overline{\chi_k(g)}R_g`, for every nontrivial
    irrep ``k``, exactly in :func:`field_for`."""
    F = field_for(G)
    coeffs = projector_coefficients(G)
    return [(k, _range_basis(_projector(G, coeffs[k], F))) for k in range(1, len(coeffs))]


def real_bases(G: FiniteGroup) -> list[tuple[int, list[Vector]]]:
    r"""``(j, basis)`` of each nontrivial real isotypic component (real projectors, a
    conjugate pair of complex irreps summed); for a cyclic group the basis is
    :math:`\cos(km\omega),\sin(km\omega)` (or :math:`(-1)^m` at :math:`k=M/2`) over
    :math:`g^m`, :math:`g` a generator, in the order of ``real_irreps``."""
    F = field_for(G)
    coeffs = projector_coefficients(G, real=True)
    bases = [(j, _range_basis(_projector(G, coeffs[j], F))) for j in range(1, len(coeffs))]
    generator = next((g for g in range(G.order) if G.element_order(g) == G.order), None)
    if generator is None:
        return bases
    return [(j, _cos_sin(G, generator, basis, F)) for j, basis in bases]


def _cos_sin(G: FiniteGroup, g: int, basis: list[Vector], F: CyclotomicField) -> list[Vector]:
    """The cosine and sine of the frequency whose real component ``basis`` spans."""
    M = G.order
    m_of = {}
    x = G.identity
    for m in range(M):
        m_of[x] = m
        x = G.table[x][g]
    step = F.N // M
    for k in range(1, M // 2 + 1):
        cos = [(F.root(step * k * m_of[e]) + F.root(-step * k * m_of[e])) / 2
               for e in range(M)]
        if _in_span(cos, basis):
            if 2 * k == M:
                return [cos]
            i = imaginary_unit(F)
            sin = [(F.root(step * k * m_of[e]) - F.root(-step * k * m_of[e])) / (2 * i)
                   for e in range(M)]
            return [cos, sin]
    raise ArithmeticError(f"{G.name}: no frequency spans this real component")


def _in_span(x: Vector, basis: list[Vector]) -> bool:
    F = x[0].F
    _, with_x = rref([list(col) for col in zip(*basis, x)], F)
    return len(with_x) == len(basis)


# --- the nodes of each reading ----------------------------------------------------------------

def _polarisation(basis: list[Vector], F: CyclotomicField) -> list[Vector]:
    i = imaginary_unit(F)
    out = list(basis)
    for a in range(len(basis)):
        for b in range(a + 1, len(basis)):
            out.append([x + y for x, y in zip(basis[a], basis[b])])
            out.append([x + i * y for x, y in zip(basis[a], basis[b])])
    return out


def _sums(basis: list[Vector], signs: tuple[int, ...]) -> list[Vector]:
    out = list(basis)
    for a in range(len(basis)):
        for b in range(a + 1, len(basis)):
            out += [[x + s * y for x, y in zip(basis[a], basis[b])] for s in signs]
    return out


def _offset(basis: list[Vector], index: int) -> Vector:
    """A fixed integer combination of the basis, different for each ``index``: the
    perturbation direction of the real-perturbed reading."""
    F = basis[0][0].F
    out = [F.zero] * len(basis[0])
    for a, b in enumerate(basis):
        c = (7 * index + 3 * a + 1) % 5 - 2
        out = [x + y * c for x, y in zip(out, b)]
    return out


def _inverse_gather(G: FiniteGroup, u: Vector) -> Vector:
    """:math:`P\\mathbf u`, :math:`(P\\mathbf u)_h=u_{h^{-1}}`."""
    return [u[G.inverse[h]] for h in range(G.order)]


@dataclass(frozen=True)
class Node:
    """A node :math:`[\\mathbf u;\\mathbf v]` as exact vectors, with its component label."""

    component: int
    u: tuple[Cyc, ...]
    v: tuple[Cyc, ...]


def reading_nodes(G: FiniteGroup, reading: str) -> list[Node]:
    r"""The pairs :math:`[\mathbf u;\pm\mathbf s]` of ``reading`` (:data:`READINGS`), ``+`` then
    ``-`` for each :math:`\mathbf u`, component by component."""
    if reading not in READINGS:
        raise ValueError(f"reading: {reading!r} is not one of {', '.join(READINGS)}")
    F = field_for(G)
    pairs: list[tuple[int, Vector, Vector]] = []
    if reading.startswith("complex"):
        for k, basis in complex_bases(G):
            for u in _polarisation(basis, F):
                second = [x.conjugate() for x in u] if reading == "complex-conjugate" else u
                pairs.append((k, u, _inverse_gather(G, second)))
    elif reading == "real-exact":
        cyclic = any(G.element_order(g) == G.order for g in range(G.order))
        for j, basis in real_bases(G):
            for u in (basis if cyclic else _sums(basis, (1,))):
                pairs.append((j, u, _inverse_gather(G, u)))
    else:
        reals = real_irreps(G)
        for j, basis in real_bases(G):
            us = _sums(basis, (1, -1))
            if reading == "real-perturbed-complex-count" and reals[j].type == "C":
                us = us[:len(us) // 2]
            for idx, u in enumerate(us):
                u2 = [x + y / 10 for x, y in zip(u, _offset(basis, idx))]
                pairs.append((j, u, _inverse_gather(G, u2)))
    nodes = []
    for comp, u, s in pairs:
        nodes.append(Node(comp, tuple(u), tuple(s)))
        nodes.append(Node(comp, tuple(u), tuple(-x for x in s)))
    return nodes


# --- features, targets and the exact least squares --------------------------------------------

def features(G: FiniteGroup, node: Node) -> Vector:
    r""":math:`f(h_1,h_2)=(u_{h_1}+v_{h_2})^2` over the samples, :math:`h_1`-major, centred
    (:math:`P_1^\perp`)."""
    M = G.order
    pre = [node.u[a] + node.v[b] for a in range(M) for b in range(M)]
    f = [x * x for x in pre]
    mean = sum(f, f[0].F.zero) / len(f)
    return [x - mean for x in f]


def centred_targets(G: FiniteGroup) -> list[list[Fraction]]:
    r""":math:`\tilde Y=P_1^\perp Y` over the samples (rows, :math:`h_1`-major) and classes
    (columns), from the labels :math:`\mathbf e_{h_1h_2}`."""
    M = G.order
    labels = [G.table[a][b] for a in range(M) for b in range(M)]
    means = [Fraction(labels.count(c), len(labels)) for c in range(M)]
    return [[(1 if y == c else 0) - means[c] for c in range(M)] for y in labels]


@dataclass(frozen=True)
class ExactFit:
    r"""The exact least-squares fit: :math:`\|\hat Y-\tilde Y\|^2/\|\tilde Y\|^2`
    (``residual_sq``), the rank of :math:`\tilde F`, the number of nodes and, when asked
    for, :math:`\hat Y` (rows samples, columns classes)."""

    residual_sq: Cyc
    rank: int
    nodes: int
    fitted: list[Vector] | None


def exact_fit(columns: list[Vector], targets: list[list[Fraction]],
              keep_fitted: bool = False) -> ExactFit:
    r"""Least squares :math:`\min_V\|\tilde Y-\tilde FV\|_F` over :math:`\mathbb Q(\zeta_L)`
    with complex :math:`V`: row-reduce :math:`[\tilde F^\ast\tilde F\mid\tilde F^\ast\tilde Y]`
    (consistent for normal equations), take any solution :math:`X`, and use
    :math:`\|\tilde{\mathbf y}-\tilde F\mathbf x\|^2=\|\tilde{\mathbf y}\|^2-\mathbf b^\ast
    \mathbf x` (:math:`\tilde F^\ast\tilde F\mathbf x=\mathbf b`)."""
    if not columns:
        raise ValueError("columns: needs at least one feature column")
    F = columns[0][0].F
    K, n, C = len(columns), len(columns[0]), len(targets[0])
    conj = [[x.conjugate() for x in col] for col in columns]
    gram = [[F.zero] * K for _ in range(K)]
    for i in range(K):
        for j in range(i, K):
            acc = F.zero
            for x, y in zip(conj[i], columns[j]):
                if x and y:
                    acc = acc + x * y
            gram[i][j] = acc
            gram[j][i] = acc.conjugate()
    rhs = [[sum((conj[i][s] * targets[s][c] for s in range(n) if targets[s][c]), F.zero)
            for c in range(C)] for i in range(K)]
    rows, pivots = rref([gram[i] + rhs[i] for i in range(K)], F)
    if any(p >= K for p in pivots):
        raise ArithmeticError("normal equations inconsistent: impossible in exact arithmetic")
    X = [[F.zero] * C for _ in range(K)]
    for row, p in zip(rows, pivots):
        X[p] = row[K:]
    total = sum((t * t for row in targets for t in row), Fraction(0))
    explained = F.zero
    for i in range(K):
        for c in range(C):
            if rhs[i][c] and X[i][c]:
                explained = explained + rhs[i][c].conjugate() * X[i][c]
    fitted = None
    if keep_fitted:
        fitted = [[sum((columns[i][s] * X[i][c] for i in range(K) if X[i][c]), F.zero)
                   for c in range(C)] for s in range(n)]
    return ExactFit((F.rational(total) - explained) / total, len(pivots), K, fitted)


@dataclass(frozen=True)
class Reconstruction:
    """The exact outcome of one reading on one group."""

    reading: str
    residual_sq: sp.Expr
    rank: int
    nodes: int


@lru_cache(maxsize=32)
def _reconstruction(G: FiniteGroup, reading: str) -> Reconstruction:
    nodes = reading_nodes(G, reading)
    fit = exact_fit([features(G, w) for w in nodes], centred_targets(G))
    return Reconstruction(reading, fit.residual_sq.to_sympy(), fit.rank, fit.nodes)


def feature_parts() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    r"""The feature of :math:`[\mathbf u;\pm\mathbf v]` at one sample, symbolically:
    :math:`f_+=(u+v)^2`, the cross part :math:`(f_+-f_-)/2` and the square part
    :math:`(f_++f_-)/2`."""
    u, v = sp.symbols("u_{h_1} v_{h_2}")
    plus, minus = sp.expand((u + v) ** 2), sp.expand((u - v) ** 2)
    return plus, sp.expand((plus - minus) / 2), sp.expand((plus + minus) / 2)


def derive_reconstruction(G: FiniteGroup, readings: Sequence[str]) -> Derivation:
    r"""Thm. 3 on ``G`` from the definitions, exactly, for each reading: the nodes, the rank of
    :math:`\tilde F` and :math:`\|\hat Y-\tilde Y\|^2/\|\tilde Y\|^2`. ``result`` maps each
    reading to its :class:`Reconstruction`."""
    d = Derivation(f"Thm. 3 on {G.name}: exact least-squares residual of each reading "
                   f"(Q(zeta_{field_for(G).N}))")
    plus, cross, square = feature_parts()
    d.step("feature of [u; +v] at (h1, h2): sigma(x^T w) = (u_h1 + v_h2)^2 =", plus)
    d.step("a pair [u; +v], [u; -v]: cross part (f+ - f-)/2 =", cross)
    d.step("square part (f+ + f-)/2 (a function of h1 plus one of h2) =", square)
    d.step("with v = P s, v_h2 = s_{h2^-1}: the cross part is 2 (u s^T)_{h1, h2^-1}; for "
           "s = conj(u) it is 2 (u u^*)_{h1, h2^-1}, the matrix the theorem's End(H_k) basis "
           "is made of")
    d.step("target column h' over (h1, h2^-1): [h1 = h' h2^-1] - 1/M, i.e. "
           "(R_h' - 11^T/M)[h1, h2^-1]; Yt from the labels, V from the normal equations "
           "Ft^* Ft V = Ft^* Yt (row reduction)")
    out = {}
    for reading in readings:
        r = _reconstruction(G, reading)
        out[reading] = r
        d.step(f"{reading}: {READINGS[reading]}; K = {r.nodes} nodes, rank Ft = {r.rank}; "
               f"|Yhat - Yt|^2 / |Yt|^2 =", r.residual_sq)
    d.result = out
    return d


# --- counts and the antisymmetric part --------------------------------------------------------

@lru_cache(maxsize=64)
def derive_node_count(G: FiniteGroup) -> Derivation:
    r"""The number of nodes of the construction, :math:`2\sum_{k\ne0}(\dim\mathcal H_k)^2`
    (one pair per element of a basis of :math:`\mathrm{End}(\mathcal H_k)`), with
    :math:`\dim\mathcal H_k=\mathrm{tr}\,\Pi_k=M\,p_k(e)` exactly; ``result`` is
    ``(K, kappa, dims)``."""
    d = Derivation(f"node count of the Thm. 3 construction on {G.name}")
    coeffs = projector_coefficients(G)
    dims = [int((c[G.identity] * G.order).to_fraction()) for c in coeffs]
    d.step("dim H_k = tr Pi_k = M p_k(e) for the irreps k (trivial first):",
           sp.Matrix([dims]))
    K = 2 * sum(x * x for x in dims[1:])
    d.step("K = 2 sum_{k != 0} (dim H_k)^2 =", sp.Integer(K))
    d.result = (K, len(dims) - 1, tuple(dims))
    return d


@lru_cache(maxsize=64)
def derive_antisymmetric_residual(G: FiniteGroup) -> Derivation:
    r"""The least residual any set of real nodes :math:`[\mathbf u;\pm P\mathbf u]` can reach.

    Their cross parts are :math:`\pm2\mathbf u\mathbf u^\top` over :math:`(h_1,h_2^{-1})`:
    symmetric, so orthogonal to the antisymmetric part
    :math:`A_{h'}=(R_{h'}-R_{h'}^\top)/2` of the target :math:`T_{h'}=R_{h'}-\Pi_0`; the square
    parts :math:`\mathbf a\mathbf 1^\top+\mathbf 1\mathbf b^\top` are orthogonal to every
    :math:`A_{h'}` too (:math:`R\mathbf 1=R^\top\mathbf 1=\mathbf 1`). Hence
    :math:`\|\hat Y-\tilde Y\|^2/\|\tilde Y\|^2\ge\sum_{h'}\|A_{h'}\|^2/\sum_{h'}\|T_{h'}\|^2`,
    with equality when the :math:`\mathbf u\mathbf u^\top` span the symmetric matrices of each
    component. ``result`` is that ratio (exact rational)."""
    d = Derivation(f"antisymmetric part of the targets on {G.name} (unreachable by real "
                   f"[u; ±Pu])")
    M = G.order
    R = regular_representation(G)
    Pi0 = sp.ones(M, M) / M
    anti = sum((sum(x * x for x in (Rh - Rh.T) / 2) for Rh in R), sp.Integer(0))
    total = sum((sum(x * x for x in (sp.Matrix(Rh) - Pi0)) for Rh in R), sp.Integer(0))
    d.step("sum_h' |(R_h' - R_h'^T)/2|_F^2 =", anti)
    d.step("sum_h' |R_h' - 11^T/M|_F^2 = |Yt|_F^2 =", total)
    d.result = d.step("least residual^2 of real [u; ±Pu] nodes (relative) =",
                      sp.nsimplify(anti / total))
    return d


# --- the facts of App. A.2, symbolically -------------------------------------------------------

def _vector(name: str, M: int) -> sp.Matrix:
    return sp.Matrix(sp.symbols(f"{name}0:{M}"))


def _by_target(G: FiniteGroup, values: dict[tuple[int, int], sp.Expr]) -> sp.Matrix:
    r"""``[h, a]``: the value at the sample :math:`(h_1,h_2)=(ha,a^{-1})`."""
    M = G.order
    return sp.Matrix(M, M, lambda h, a: values[G.table[h][a], G.inverse[a]])


@lru_cache(maxsize=32)
def derive_cross_feature(G: FiniteGroup) -> Derivation:
    r"""The cross part of a pair :math:`[\mathbf u;\pm\mathbf v]` (symbolic complex
    :math:`\mathbf u,\mathbf v`) from the network's features, arranged by target
    (``[h, a]`` at the sample :math:`(ha,a^{-1})`). ``result`` is ``(C, U)`` with
    :math:`U=\mathbf u(P\mathbf v)^\top`, :math:`U_{ab}=u_av_{b^{-1}}`."""
    M = G.order
    d = Derivation(f"cross feature of a node pair on {G.name}, from (u_h1 + v_h2)^2")
    u, v = _vector("u", M), _vector("v", M)
    cross = {(a, b): sp.expand(((u[a] + v[b]) ** 2 - (u[a] - v[b]) ** 2) / 2)
             for a in range(M) for b in range(M)}
    C = d.step("cross part (f[u;v] - f[u;-v])/2 at the samples (h a, a^-1), rows h, "
               "columns a:", _by_target(G, cross))
    U = d.step("U = u (P v)^T, U_ab = u_a v_{b^-1}:",
               sp.Matrix(M, M, lambda a, b: u[a] * v[G.inverse[b]]))
    d.result = (C, U)
    return d


@lru_cache(maxsize=32)
def derive_cross_gram(G: FiniteGroup) -> Derivation:
    r""":math:`\sum_{(h_1,h_2)}c(h_1,h_2)\,\overline{c'(h_1,h_2)}` for the cross parts of two
    pairs :math:`[\mathbf u;\pm\mathbf v]`, :math:`[\mathbf x;\pm\mathbf y]` (symbolic
    complex), summed over all samples from the network's features. ``result`` is
    ``(value, U, V)`` with :math:`U=\mathbf u(P\mathbf v)^\top`, :math:`V=\mathbf x
    (P\mathbf y)^\top`."""
    M = G.order
    d = Derivation(f"inner product of two cross features on {G.name}, summed over samples")
    u, v, x, y = (_vector(s, M) for s in "uvxy")
    total = sp.Integer(0)
    for a in range(M):
        for b in range(M):
            c1 = ((u[a] + v[b]) ** 2 - (u[a] - v[b]) ** 2) / 2
            c2 = ((x[a] + y[b]) ** 2 - (x[a] - y[b]) ** 2) / 2
            total += c1 * sp.conjugate(c2)
    value = d.step("sum over (h1, h2) of c_uv conj(c_xy), <a, b> = sum a conj(b) =",
                   sp.expand(total))
    U = sp.Matrix(M, M, lambda a, b: u[a] * v[G.inverse[b]])
    V = sp.Matrix(M, M, lambda a, b: x[a] * y[G.inverse[b]])
    d.result = (value, U, V)
    return d


@lru_cache(maxsize=32)
def derive_square_decoupling(G: FiniteGroup) -> Derivation:
    r"""The centred square part :math:`\tilde s` of a pair :math:`[\mathbf u;\pm\mathbf v]`
    (symbolic): its inner products with every column of :math:`\tilde Y` and with the cross
    part of a pair :math:`[\mathbf x;\pm\mathbf y]` with :math:`\mathbf 1^\top\mathbf x=
    \mathbf 1^\top\mathbf y=0` (no trivial component: every node of Thm. 3). ``result`` is
    the vector of those :math:`M+1` inner products, expanded."""
    M = G.order
    d = Derivation(f"square parts against the targets and the cross parts on {G.name}")
    u, v, x, y = (_vector(s, M) for s in "uvxy")
    # no trivial component: x_0 = -(x_1 + ... ), y_0 likewise
    x = x.subs(x[0], -sum(x[1:], sp.Integer(0)))
    y = y.subs(y[0], -sum(y[1:], sp.Integer(0)))
    samples = [(a, b) for a in range(M) for b in range(M)]
    square = [u[a] ** 2 + v[b] ** 2 for a, b in samples]
    mean = sum(square, sp.Integer(0)) / len(samples)
    s = [e - mean for e in square]
    Yt = centred_targets(G)
    with_targets = [sp.expand(sum((s[i] * sp.Rational(Yt[i][c].numerator, Yt[i][c].denominator)
                                   for i in range(len(samples))), sp.Integer(0)))
                    for c in range(M)]
    d.step("<s~, Yt_h'> for each class h' (square part u_h1^2 + v_h2^2, centred):",
           sp.Matrix([with_targets]))
    with_cross = sp.expand(sum((s[i] * sp.conjugate(2 * x[a] * y[b])
                                for i, (a, b) in enumerate(samples)), sp.Integer(0)))
    d.step("<s~, 2 x_h1 y_h2> with 1^T x = 1^T y = 0:", with_cross)
    d.result = sp.Matrix([*with_targets, with_cross])
    return d


@lru_cache(maxsize=32)
def derive_target_blocks(G: FiniteGroup) -> Derivation:
    r"""The centred target column :math:`h'` as an :math:`M\times M` matrix over
    :math:`(h_1,h_2^{-1})`, from the labels; ``result`` is the list over :math:`h'`."""
    M = G.order
    d = Derivation(f"centred targets of {G.name} over (h1, h2^-1)")
    Yt = centred_targets(G)
    blocks = []
    for c in range(M):
        T = sp.zeros(M, M)
        for a in range(M):
            for b in range(M):
                T[a, G.inverse[b]] = sp.Rational(Yt[a * M + b][c].numerator,
                                                 Yt[a * M + b][c].denominator)
        blocks.append(T)
    d.step(f"Yt column h' = {G.label(1)} over (h1, h2^-1):", blocks[1])
    d.result = blocks
    return d


@lru_cache(maxsize=32)
def isotypic_projector_matrices(G: FiniteGroup) -> list[sp.Matrix]:
    r""":math:`\Pi_k` for every complex irrep (trivial first) as exact sympy matrices."""
    F = irreps(G)[0].field
    return [sp.Matrix([[x.to_sympy() for x in row] for row in _projector(G, c, F)])
            for c in projector_coefficients(G)]


@lru_cache(maxsize=32)
def derive_irrep_fit(G: FiniteGroup, k: int) -> Derivation:
    r"""The least-squares fit of :math:`\tilde Y` by the nodes of irrep ``k`` alone (reading
    complex-conjugate), exactly; ``result`` is :math:`\hat Y^{(k)}` rearranged as
    ``[h*M + a, h']`` (sample :math:`(ha,a^{-1})`), a sympy matrix."""
    M = G.order
    d = Derivation(f"fit of Yt by the nodes of irrep {k} of {G.name} (exact)")
    nodes = [w for w in reading_nodes(G, "complex-conjugate") if w.component == k]
    fit = exact_fit([features(G, w) for w in nodes], centred_targets(G), keep_fitted=True)
    d.step(f"{len(nodes)} nodes, rank {fit.rank}; |Yhat^(k) - Yt|^2/|Yt|^2 =",
           fit.residual_sq.to_sympy())
    rows = [fit.fitted[G.table[h][a] * M + G.inverse[a]] for h in range(M) for a in range(M)]
    d.result = d.step("Yhat^(k) at the samples (h a, a^-1), rows (h, a), columns h':",
                      sp.Matrix([[x.to_sympy() for x in row] for row in rows]))
    return d
