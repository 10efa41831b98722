r"""The Li2 energy on a full group task as an exact object (a derivation from Eq. 7).

:math:`\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|^2` with
:math:`\sigma(x)=x^2` is built by sympy as an exact polynomial from the task's definition
(inputs :math:`[\mathbf e_{h_1};\mathbf e_{h_2}]`, target :math:`h_1h_2`) and evaluated, with its
Riemannian gradient, Hessian and inertia on the sphere, in exact cyclotomic arithmetic at irrep
vectors. Used by ``li2.thm2`` and ``li2.cor1``; nothing of Thm. 2's closed form enters.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp
from sympy.polys.matrices import DomainMatrix

from theory.groups.cyclotomic import Cyc, CyclotomicField
from theory.derivation import Derivation
from theory.li2.energy import symbolic_activation
from theory.groups.finite_group import FiniteGroup
from theory.groups.irreps import real_irreps
from theory.matrices import centering_matrix

Vector = list[Cyc]


@dataclass(frozen=True, eq=False)
class ExactEnergy:
    r""":math:`\mathcal E(\mathbf w)=\tfrac12\sum_mq_m(\mathbf w)^2` on the full group task,
    :math:`\mathbf q=\tilde Y^\top\sigma(X\mathbf w)`, :math:`\sigma(x)=x^2`.

    Each :math:`q_m` is a homogeneous quadratic, :math:`q_m=\tfrac12\mathbf w^\top A_m\mathbf w`
    with :math:`A_m=\nabla^2q_m` a constant rational matrix (``A[m]``, from sympy). Then
    exactly, at any point with coordinates in :math:`\mathbb Q(\zeta_N)`,
    :math:`\nabla\mathcal E=\sum_mq_mA_m\mathbf w` and
    :math:`\nabla^2\mathcal E=\sum_m(A_m\mathbf w)(A_m\mathbf w)^\top+q_mA_m` (the chain
    rule for :math:`\tfrac12\|\mathbf q\|^2`).
    """

    M: int
    A: tuple[tuple[tuple[tuple[int, Fraction], ...], ...], ...]  # A[m][i] = ((j, a_mij), ...)
    derivation: Derivation

    @property
    def d(self) -> int:
        return 2 * self.M

    def _products(self, w: Sequence[Cyc], F: CyclotomicField) -> list[Vector]:
        out = []
        for rows in self.A:
            aw = []
            for row in rows:
                acc = F.zero
                for j, a in row:
                    acc = acc + w[j] * a
                aw.append(acc)
            out.append(aw)
        return out

    def q(self, w: Sequence[Cyc], F: CyclotomicField) -> Vector:
        r""":math:`q_m(\mathbf w)` (no conjugation: also the holomorphic extension)."""
        return [_dot(w, aw, F) / 2 for aw in self._products(w, F)]

    def energy(self, w: Sequence[Cyc], F: CyclotomicField) -> Cyc:
        r""":math:`\mathcal E(\mathbf w)` for real ``w`` (not normalised)."""
        q = self.q(w, F)
        return _dot(q, q, F) / 2

    def gradient(self, w: Sequence[Cyc], F: CyclotomicField) -> Vector:
        aws = self._products(w, F)
        g = [F.zero] * self.d
        for aw in aws:
            qm = _dot(w, aw, F) / 2
            g = [gi + qm * x for gi, x in zip(g, aw)]
        return g

    def hessian(self, w: Sequence[Cyc], F: CyclotomicField) -> list[Vector]:
        H = [[F.zero] * self.d for _ in range(self.d)]
        for rows, aw in zip(self.A, self._products(w, F)):
            qm = _dot(w, aw, F) / 2
            for i in range(self.d):
                Hi = H[i]
                for j in range(self.d):
                    if aw[i] and aw[j]:
                        Hi[j] = Hi[j] + aw[i] * aw[j]
                for j, a in rows[i]:
                    Hi[j] = Hi[j] + qm * a
        return H


@lru_cache(maxsize=32)
def exact_energy(G: FiniteGroup) -> ExactEnergy:
    r"""Build :math:`\mathbf q=\tilde Y^\top\sigma(X\mathbf w)` from the definition (Eq. 7)
    in :math:`\mathbb Q[w_0,\dots,w_{2M-1}]`, for every pair :math:`(h_1,h_2)`:
    :math:`\mathbf x=[\mathbf e_{h_1};\mathbf e_{h_2}]`, label :math:`\mathbf e_{h_1h_2}`,
    :math:`\tilde Y=P_1^\perp Y`; then :math:`A_m=\nabla^2q_m` from the coefficients of
    :math:`q_m`. Cached per group.

    Built as elements of sympy's sparse polynomial ring and with an exact ``DomainMatrix``
    product for :math:`\tilde Y`: the same :math:`A_m` as ``Matrix`` arithmetic on
    expressions followed by ``Poly``, in about half the time."""
    M, n = G.order, G.order**2
    d_ = Derivation(f"E(w) on the full {G.name} task from Eq. 7 (sympy, exact)")
    R = sp.ring(",".join(f"w{i}" for i in range(2 * M)), sp.QQ)[0]
    pairs = [(a, b) for a in range(M) for b in range(M)]
    X = sp.zeros(n, 2 * M)
    Y = sp.zeros(n, M)
    for i, (a, b) in enumerate(pairs):
        X[i, a] = X[i, M + b] = 1
        Y[i, G.table[a][b]] = 1
    # P_1^perp = I_n - 1 1^T / n (theory.matrices.centering_matrix), as an exact QQ matrix.
    P = (DomainMatrix.eye(n, sp.QQ)
         - DomainMatrix.ones((n, n), sp.QQ) * sp.QQ(1, n))
    Yt = (P * DomainMatrix.from_Matrix(Y).convert_to(sp.QQ)).to_Matrix()
    act, _ = symbolic_activation("x2")
    symbols = [sp.Symbol(str(g)) for g in R.gens]
    # sigma(x_i^T w), x_i^T w read from the row of X; sigma applied as the symbolic activation
    # and brought into the ring (an exact expansion).
    sig = [R(sp.expand(act(sum(X[i, j] * symbols[j] for j in range(2 * M) if X[i, j]))))
           for i in range(n)]
    q = []
    for m in range(M):
        qm = R.zero
        for i in range(n):
            if Yt[i, m]:
                qm += R.domain.convert(Yt[i, m]) * sig[i]
        q.append(qm)
    d_.step(f"q = Yt^T sigma(X w) over the {n} inputs [e_h1; e_h2], Yt = P Y, sigma = x^2: "
            f"q_0 =", q[0].as_expr())
    orders = {max(sum(mon) for mon in p.monoms()) for p in q if p} | {
        min(sum(mon) for mon in p.monoms()) for p in q if p}
    if orders != {2}:
        raise ArithmeticError(f"{G.name}: q is not homogeneous quadratic (orders {orders})")
    d_.step("every q_m is a homogeneous quadratic, so E = 1/2 sum_m q_m^2 is homogeneous of "
            "degree", sp.Integer(4))
    A = []
    for p in q:
        # A_m = Hessian of q_m, read off its coefficients: c w_i^2 -> A_ii = 2c,
        # c w_i w_j -> A_ij = A_ji = c.
        entries: dict[tuple[int, int], Fraction] = {}
        for monom, coeff in p.terms():
            c = Fraction(int(coeff.numerator), int(coeff.denominator))
            idx = [i for i, e in enumerate(monom) for _ in range(e)]
            if idx[0] == idx[1]:
                entries[idx[0], idx[0]] = 2 * c
            else:
                entries[idx[0], idx[1]] = entries[idx[1], idx[0]] = c
        A.append(tuple(tuple((j, entries[i, j]) for j in range(2 * M) if (i, j) in entries)
                       for i in range(2 * M)))
    d_.step("A_m = Hessian of q_m (sympy), so q_m = w^T A_m w / 2; grad E = sum_m q_m A_m w, "
            "Hess E = sum_m (A_m w)(A_m w)^T + q_m A_m. A_0 =",
            sp.Matrix(2 * M, 2 * M, lambda i, j: dict(A[0][i]).get(j, 0)))
    return ExactEnergy(M, tuple(A), d_)


def _dot(a: Sequence[Cyc], b: Sequence[Cyc], F: CyclotomicField) -> Cyc:
    total = F.zero
    for x, y in zip(a, b):
        if x and y:
            total = total + x * y
    return total


def normalised_energy(ex: ExactEnergy, w: Sequence[Cyc], F: CyclotomicField) -> Cyc:
    r""":math:`\mathcal E(\mathbf w/\|\mathbf w\|)=\mathcal E(\mathbf w)/\|\mathbf w\|^4` for
    real ``w`` (degree-4 homogeneity; no square root needed)."""
    s = _dot(w, w, F)
    return ex.energy(w, F) / (s * s)


def riemannian_gradient(ex: ExactEnergy, w: Sequence[Cyc], F: CyclotomicField) -> Vector:
    r""":math:`\nabla\mathcal E-(\mathbf w^\top\nabla\mathcal E/\|\mathbf w\|^2)\mathbf w`: zero
    iff :math:`\mathbf w/\|\mathbf w\|` is a critical point on the sphere."""
    g = ex.gradient(w, F)
    ratio = _dot(w, g, F) / _dot(w, w, F)
    return [gi - ratio * wi for gi, wi in zip(g, w)]


def tangent_hessian(ex: ExactEnergy, w: Sequence[Cyc], F: CyclotomicField) -> list[Vector]:
    r""":math:`P_T(\nabla^2\mathcal E(\mathbf w)-(\mathbf w^\top\nabla\mathcal E/\|\mathbf w\|^2)I)
    P_T`, :math:`P_T=I-\mathbf w\mathbf w^\top/\|\mathbf w\|^2`: :math:`\|\mathbf w\|^2` times
    the Riemannian Hessian at :math:`\mathbf w/\|\mathbf w\|` (degree-4 homogeneity), so it
    has the same inertia; :math:`\mathbf w` itself is in its kernel."""
    d = ex.d
    s = _dot(w, w, F)
    H = ex.hessian(w, F)
    lam = _dot(w, ex.gradient(w, F), F) / s
    B = [[H[i][j] - (lam if i == j else F.zero) for j in range(d)] for i in range(d)]
    # P B P with P = I - w w^T / s, as B - w (w^T B)/s - (B w) w^T/s + w (w^T B w) w^T / s^2.
    Bw = [_dot(row, w, F) for row in B]
    wBw = _dot(w, Bw, F)
    return [[B[i][j] - (w[i] * Bw[j] + Bw[i] * w[j]) / s + w[i] * w[j] * wBw / (s * s)
             for j in range(d)] for i in range(d)]


def complex_domain_energy(ex: ExactEnergy, w: Sequence[Cyc], F: CyclotomicField) -> Cyc:
    r"""The complex-domain reading :math:`\tfrac12\sum_m|q_m(\mathbf w)|^2/\|\mathbf w\|^4`
    (holomorphic :math:`\sigma(z)=z^2`, Hermitian norms), for complex ``w``."""
    q = ex.q(w, F)
    s = _dot(w, [x.conjugate() for x in w], F)
    return _dot(q, [x.conjugate() for x in q], F) / (2 * s * s)


@dataclass(frozen=True)
class IrrepPoint:
    r"""A vector of one real isotypic component: ``u[g]`` for each element ``g``.

    ``component``: index in :func:`theory.groups.irreps.real_irreps`; ``kind``: R, C or H; ``dim``:
    the complex dimension :math:`d_k` of the irrep it comes from; ``label``: how it was
    built."""

    component: int
    kind: str
    dim: int
    real_dim: int
    u: tuple[Cyc, ...]
    label: str


def irrep_points(G: FiniteGroup) -> list[IrrepPoint]:
    r"""One vector per nontrivial real irrep: the matrix coefficient :math:`u_g=C_k(g)_{00}`
    (type R) or :math:`2\,\mathrm{Re}\,C_k(g)_{00}` (types C and H), which lies in the real
    isotypic component (diagonal entries need no square roots)."""
    out = []
    for j, r in enumerate(real_irreps(G)):
        if j == 0:
            continue
        coeff = [m[0][0] for m in r.source.exact_matrices]
        u = coeff if r.type == "R" else [x + x.conjugate() for x in coeff]
        label = "C(g)_00" if r.type == "R" else "2 Re C(g)_00"
        out.append(IrrepPoint(j, r.type, r.source.dim, r.dim, tuple(u), label))
    return out


def character_points(G: FiniteGroup) -> list[IrrepPoint]:
    r"""For each real irrep of type R with :math:`d_k\ge2`, the character
    :math:`u_g=\chi_k(g)`: also in :math:`\mathcal H_k`, with a full-rank Fourier coefficient."""
    return [IrrepPoint(j, r.type, r.dim, r.dim, tuple(r.source.exact_character), "chi(g)")
            for j, r in enumerate(real_irreps(G)) if j and r.type == "R" and r.dim >= 2]


def paper_form(G: FiniteGroup, u: Sequence[Cyc], sign: int = 1,
               conjugate: bool = False) -> list[Cyc]:
    r""":math:`[\mathbf u;\pm P\mathbf u]` (or :math:`[\mathbf u;\pm P\bar{\mathbf u}]`), with
    :math:`(P\mathbf u)_h=u_{h^{-1}}`."""
    second = [u[G.inverse[h]] for h in range(G.order)]
    if conjugate:
        second = [x.conjugate() for x in second]
    return list(u) + [x * sign for x in second]


def translate(G: FiniteGroup, u: Sequence[Cyc], g: int) -> list[Cyc]:
    r""":math:`R_g\mathbf u`, :math:`(R_g\mathbf u)_b=u_{g^{-1}b}`."""
    return [u[G.table[G.inverse[g]][b]] for b in range(G.order)]


# --- the linear activation: the LDA remark ---------------------------------------------------

def task_matrices(G: FiniteGroup, pairs: list[tuple[int, int]] | None = None
                  ) -> tuple[sp.Matrix, sp.Matrix]:
    r"""Exact :math:`X` (rows :math:`[\mathbf e_{h_1};\mathbf e_{h_2}]`) and one-hot :math:`Y`
    (column :math:`h_1h_2`) over ``pairs`` (default: all :math:`M^2`, :math:`h_1`-major)."""
    M = G.order
    pairs = [(a, b) for a in range(M) for b in range(M)] if pairs is None else pairs
    if not pairs:
        raise ValueError("pairs: needs at least one pair")
    X, Y = sp.zeros(len(pairs), 2 * M), sp.zeros(len(pairs), M)
    for i, (a, b) in enumerate(pairs):
        X[i, a] = X[i, M + b] = 1
        Y[i, G.table[a][b]] = 1
    return X, Y


@lru_cache(maxsize=32)
def exact_full_cross(G: FiniteGroup) -> tuple[sp.Matrix, sp.Expr, Derivation]:
    r""":math:`\tilde Y^\top X` and :math:`\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top X
    \mathbf w\|^2` (expanded, symbolic :math:`\mathbf w`) on the full task, exactly."""
    M, n = G.order, G.order**2
    d_ = Derivation(f"Yt^T X on the full {G.name} task (sympy, exact)")
    X, Y = task_matrices(G)
    d_.step(f"Y^T X (class m, coordinate): the number of the {n} pairs with h1 h2 = m and "
            f"that coordinate; each class has one pair per h1 and one per h2:", Y.T * X)
    Yt = centering_matrix(n) * Y
    cross = (Yt.T * X).applyfunc(sp.nsimplify)
    d_.step("Yt = (I - 11^T/n) Y; Yt^T X =", cross)
    w = sp.Matrix(sp.symbols(f"w0:{2 * M}", real=True))
    energy = sp.expand(((cross * w).T * (cross * w))[0, 0] / 2)
    d_.step("E(w) = 1/2 |Yt^T X w|^2 (sigma linear) =", energy)
    return cross, energy, d_
