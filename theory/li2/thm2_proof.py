r"""The facts in the proof of Li2 Thm. 2 (App. A.1, Eqs. 13-25), derived from definitions on
small groups, exactly.

* **Eqs. 13-15.** For a node :math:`\mathbf w=[\mathbf u;P\mathbf v]` on the full task, the
  activation sums per target :math:`\mathbf z=Y^\top\sigma(X\mathbf w)` and their centred
  version :math:`\tilde Y^\top\sigma(X\mathbf w)`, with symbolic :math:`\mathbf u,\mathbf v`
  (:func:`derive_target_sums`), and :math:`\mathcal E` of Eq. 7 (:func:`energy_poly`).
* **Schur orthogonality (Cases 1-2).** The exact sums
  :math:`\sum_h\mathrm{vec}(U_k(h))\mathrm{vec}(U_{k'}(h))^*` and
  :math:`\sum_hU_k(h)\otimes\overline{U_k(h)}` over the unitary irreps
  (:func:`schur_outer_sum`, :func:`schur_kronecker_sum`); ``vec`` stacks rows.
* **Eq. 20.** For :math:`S_{ij}=\sigma(u_i+v_j)` and Eq. 8's :math:`Q`, the block sums
  :math:`T_k=\sum_r\hat S_{k,r}` of :math:`\hat S=Q^*SQ`, as polynomials in
  :math:`\mathbf u,\mathbf v` with coefficients in :math:`\mathbb Q(\zeta_L)`
  (:class:`CycPoly`): their traces (:func:`block_trace_polys`) and
  :math:`\|T_k\|_F^2` (:func:`block_frobenius_polys`).
"""
from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache

import sympy as sp

from theory.groups.cyclotomic import Cyc, CyclotomicField
from theory.derivation import Derivation
from theory.groups.finite_group import FiniteGroup
from theory.li2.group_energy import task_matrices
from theory.groups.irreps import inversion_operator, irreps
from theory.matrices import centering_matrix
from theory.li2.top_down import common_field, decomposition_projector


def node_symbols(M: int) -> tuple[sp.Matrix, sp.Matrix]:
    r"""Real column symbols :math:`\mathbf u=(u_0..u_{M-1})`, :math:`\mathbf v=(v_0..v_{M-1})`."""
    if M < 1:
        raise ValueError(f"M: {M} must be >= 1")
    return (sp.Matrix(sp.symbols(f"u0:{M}", real=True)),
            sp.Matrix(sp.symbols(f"v0:{M}", real=True)))


def activation_matrix(u: sp.Matrix, v: sp.Matrix) -> sp.Matrix:
    r""":math:`S_{ij}=\sigma(u_i+v_j)`, :math:`\sigma(x)=x^2` (the definition, §2.2)."""
    return sp.Matrix(len(u), len(v), lambda i, j: (u[i] + v[j]) ** 2)


@lru_cache(maxsize=16)
def derive_target_sums(G: FiniteGroup) -> Derivation:
    r""":math:`\mathbf z=Y^\top\sigma(X\mathbf w)` and :math:`\tilde Y^\top\sigma(X\mathbf w)`
    for :math:`\mathbf w=[\mathbf u;P\mathbf v]`, :math:`\sigma(x)=x^2`, on all :math:`M^2`
    pairs, from the task's definition. ``result = (z, q, u, v)``, columns."""
    M, n = G.order, G.order**2
    d_ = Derivation(f"Activation sums per target on the full {G.name} task (sympy)")
    u, v = node_symbols(M)
    w = u.col_join(sp.Matrix(inversion_operator(G)) * v)
    d_.step("w = [u; P v], (P v)_h = v_(h^-1):", w.T)
    X, Y = task_matrices(G)
    f = (X * w).applyfunc(lambda x: sp.expand(x**2))
    d_.step(f"sigma(X w) over the {n} pairs (h1, h2), h1-major: first entries", f[:3, :].T)
    z = (Y.T * f).applyfunc(sp.expand)
    d_.step("z = Y^T sigma(X w): z_0 =", z[0])
    q = ((centering_matrix(n) * Y).T * f).applyfunc(sp.expand)
    d_.step("Yt^T sigma(X w), Yt = P_1^perp Y: entry 0 =", q[0])
    d_.result = (z, q, u, v)
    return d_


def _vec(m: sp.Matrix) -> sp.Matrix:
    return sp.Matrix(list(m))  # row-major


def schur_outer_sum(G: FiniteGroup, k: int, k2: int) -> sp.Matrix:
    r""":math:`\sum_h\mathrm{vec}(U_k(h))\,\mathrm{vec}(U_{k'}(h))^*` exactly
    (:math:`d_k^2\times d_{k'}^2`), :math:`U` the unitary irreps of
    :func:`theory.groups.irreps.irreps`."""
    reps = irreps(G)
    A, B = reps[k].matrices, reps[k2].matrices
    out = sp.zeros(reps[k].dim ** 2, reps[k2].dim ** 2)
    for h in range(G.order):
        out += _vec(A[h]) * _vec(B[h]).H
    return out.applyfunc(lambda x: sp.nsimplify(sp.expand(x)))


def schur_kronecker_sum(G: FiniteGroup, k: int) -> sp.Matrix:
    r""":math:`\sum_hU_k(h)\otimes\overline{U_k(h)}` exactly (:math:`d_k^2\times d_k^2`)."""
    rep = irreps(G)[k]
    out = sp.zeros(rep.dim ** 2, rep.dim ** 2)
    for m in rep.matrices:
        out += sp.kronecker_product(m, m.conjugate())
    return out.applyfunc(lambda x: sp.nsimplify(sp.expand(x)))


# --- polynomials in u, v over Q(zeta_L) ----------------------------------------------------------

Monomial = tuple[int, ...]  # sorted variable indices: u_i -> i, v_j -> M + j


class CycPoly:
    r"""A polynomial in :math:`u_0..u_{M-1},v_0..v_{M-1}` (real variables) with coefficients
    in :math:`\mathbb Q(\zeta_L)` (:class:`Cyc`, or :class:`~fractions.Fraction` while they
    are rational, which is much faster): ``terms`` maps a sorted tuple of variable indices
    (:math:`u_i\to i`, :math:`v_j\to M+j`) to its coefficient. Supports ``+``, ``*`` (by
    polynomials, :class:`Cyc` and rationals), ``/`` by a rational and ``conjugate``
    (coefficients only: the variables are real), so the paper's formulas written for field
    elements apply to it unchanged.

    >>> from theory.groups.cyclotomic import cyclotomic_field
    >>> F = cyclotomic_field(4)
    >>> x = CycPoly.variable(F, 2, 0) * F.root(1)  # i u_0
    >>> (x * x.conjugate()).to_sympy(*node_symbols(2))
    u0**2
    """

    __slots__ = ("F", "M", "terms")

    def __init__(self, F: CyclotomicField, M: int, terms: Mapping[Monomial, Cyc]):
        self.F, self.M = F, M
        self.terms = {m: c for m, c in terms.items() if c}

    @classmethod
    def variable(cls, F: CyclotomicField, M: int, index: int) -> CycPoly:
        return cls(F, M, {(index,): Fraction(1)})

    def _coerce(self, other) -> CycPoly:
        if isinstance(other, CycPoly):
            return other
        return CycPoly(self.F, self.M, {(): other if isinstance(other, Cyc) else Fraction(other)})

    def __add__(self, other) -> CycPoly:
        o = self._coerce(other)
        out = dict(self.terms)
        for m, c in o.terms.items():
            out[m] = out[m] + c if m in out else c
        return CycPoly(self.F, self.M, out)

    __radd__ = __add__

    def __neg__(self) -> CycPoly:
        return CycPoly(self.F, self.M, {m: -c for m, c in self.terms.items()})

    def __sub__(self, other) -> CycPoly:
        return self + (-self._coerce(other))

    def __mul__(self, other) -> CycPoly:
        if isinstance(other, (int, Fraction, Cyc)):
            return CycPoly(self.F, self.M, {m: c * other for m, c in self.terms.items()})
        o = self._coerce(other)
        out: dict[Monomial, Cyc] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out[m] + c1 * c2 if m in out else c1 * c2
        return CycPoly(self.F, self.M, out)

    __rmul__ = __mul__

    def __truediv__(self, other) -> CycPoly:
        return self * (1 / Fraction(other))

    def conjugate(self) -> CycPoly:
        return CycPoly(self.F, self.M, {m: c.conjugate() for m, c in self.terms.items()})

    def coefficient(self, m: Monomial) -> sp.Rational:
        """The coefficient of ``m`` as a sympy Rational (``ValueError`` unless rational)."""
        c = self.terms.get(m, Fraction(0))
        if isinstance(c, Cyc):
            if not c.is_rational():
                raise ValueError(f"coefficient {c!r} of {m} is not rational")
            c = c.to_fraction()
        q = Fraction(c)
        return sp.Rational(q.numerator, q.denominator)

    def to_sympy(self, u: sp.Matrix, v: sp.Matrix) -> sp.Expr:
        """The sympy polynomial; raises ``ValueError`` unless every coefficient is rational
        (the quantities compared here are: real and fixed by the Galois group)."""
        gens = [*u, *v]
        return sp.Add(*[self.coefficient(m) * sp.Mul(*[gens[i] for i in m])
                        for m in self.terms])


def coefficient_vectors(*polys: CycPoly) -> tuple[list[Monomial], list[sp.Matrix]]:
    """The union of the monomials of ``polys`` (sorted) and each polynomial's rational
    coefficients on it: two polynomials are identical iff their vectors are."""
    monomials = sorted(set().union(*(p.terms for p in polys)), key=lambda m: (len(m), m))
    return monomials, [sp.Matrix([p.coefficient(m) for m in monomials]) for p in polys]


def _variables(G: FiniteGroup) -> tuple[list[CycPoly], list[CycPoly]]:
    L, M = common_field(G), G.order
    return ([CycPoly.variable(L, M, i) for i in range(M)],
            [CycPoly.variable(L, M, M + j) for j in range(M)])


@lru_cache(maxsize=16)
def energy_poly(G: FiniteGroup) -> tuple[CycPoly, Derivation]:
    r""":math:`\mathcal E=\tfrac12\|\tilde Y^\top\sigma(X\mathbf w)\|^2` (Eq. 7) for
    :math:`\mathbf w=[\mathbf u;P\mathbf v]` as a :class:`CycPoly`, from the task's definition:
    sample :math:`(h_1,h_2)` has :math:`\sigma=(u_{h_1}+v_{h_2^{-1}})^2` and label
    :math:`h_1h_2`; :math:`\tilde Y=Y-\tfrac1M` (every class holds :math:`M` of the
    :math:`M^2` samples)."""
    u, v = _variables(G)
    M, t, inv = G.order, G.table, G.inverse
    d_ = Derivation(f"E from Eq. 7 on the full {G.name} task, w = [u; P v] (exact polynomial)")
    f = {(a, b): (u[a] + v[inv[b]]) * (u[a] + v[inv[b]]) for a in range(M) for b in range(M)}
    total = sum(f.values(), CycPoly(common_field(G), M, {}))
    energy = CycPoly(common_field(G), M, {})
    for m in range(M):
        q = sum((f[a, b] for a in range(M) for b in range(M) if t[a][b] == m),
                CycPoly(common_field(G), M, {})) - total / M
        energy = energy + q * q
    energy = energy / 2
    us, vs = node_symbols(M)
    d_.step("q_0 = (Yt^T sigma(X w))_0 =", q.to_sympy(us, vs))
    d_.step("E = 1/2 sum_m q_m^2: number of monomials", sp.Integer(len(energy.terms)))
    return energy, d_


def activation_polys(G: FiniteGroup) -> list[list[CycPoly]]:
    r""":math:`S_{ab}=(u_a+v_b)^2` as :class:`CycPoly` over
    :func:`theory.li2.top_down.common_field`."""
    u, v = _variables(G)
    M = G.order
    return [[(u[a] + v[b]) * (u[a] + v[b]) for b in range(M)] for a in range(M)]


def block_trace_polys(G: FiniteGroup) -> list[CycPoly]:
    r"""Per complex irrep :math:`k`: :math:`\sum_r\mathrm{tr}\,\hat S_{k,r}=\mathrm{tr}(Q_k^*SQ_k)
    =\sum_{a,b}S_{ab}(Q_kQ_k^*)_{ba}`, with :math:`Q_kQ_k^*` exact from Eq. 8
    (:func:`theory.li2.top_down.decomposition_projector`)."""
    S = activation_polys(G)
    M = G.order
    out = []
    for k in range(len(irreps(G))):
        Pi = decomposition_projector(G, k)
        total = CycPoly(common_field(G), M, {})
        for a in range(M):
            for b in range(M):
                if Pi[b][a]:
                    total = total + S[a][b] * Pi[b][a]
        out.append(total)
    return out


def block_frobenius_polys(G: FiniteGroup) -> list[CycPoly]:
    r"""Per complex irrep :math:`k`: :math:`\|T_k\|_F^2`, :math:`T_k=\sum_r\hat S_{k,r}`.

    With :math:`Q_{g,(k,r,i)}=\sqrt{d_k/M}\,\overline{U_k(g)_{ir}}` (Eq. 8),
    :math:`(T_k)_{ij}=\tfrac{d_k}M\sum_{a,b}U_k(ab^{-1})_{ij}S_{ab}`, and for
    :math:`U_k=D^{1/2}C_kD^{-1/2}` (:attr:`theory.groups.irreps.Irrep.scale`)
    :math:`|(T_k)_{ij}|^2=\tfrac{D_i}{D_j}|\tfrac{d_k}M\sum_{a,b}C_k(ab^{-1})_{ij}S_{ab}|^2`:
    exact, no square roots."""
    S = activation_polys(G)
    L, M = common_field(G), G.order
    # W_g = sum_(a b^-1 = g) S_ab = sum_b S_(gb, b): the sum over a, b regrouped by a b^-1.
    W = [sum((S[G.table[g][b]][b] for b in range(M)), CycPoly(L, M, {})) for g in range(M)]
    out = []
    for rep in irreps(G):
        d = rep.dim
        C = [[[x.F.embed(x, L) for x in row] for row in m] for m in rep.exact_matrices]
        total = CycPoly(L, M, {})
        for i in range(d):
            for j in range(d):
                entry = sum((W[g] * C[g][i][j] for g in range(M) if C[g][i][j]),
                            CycPoly(L, M, {})) * Fraction(d, M)
                ratio = L.one
                if rep.scale is not None:
                    x = rep.scale[i] / rep.scale[j]
                    ratio = x.F.embed(x, L)
                total = total + entry * entry.conjugate() * ratio
        out.append(total)
    return out
