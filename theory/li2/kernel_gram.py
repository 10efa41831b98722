r"""The infinite-width kernel Gram of Li2's first layer on the one-hot group task, exactly
(Lemma 1's input-geometry assumption against the group inputs; ICLR review point of reviewer
NQrJ).

The group task's inputs are :math:`\mathbf x_{(a,b)}=[\mathbf e_a;\mathbf e_b]\in\mathbb
R^{2M}`, one per pair :math:`(a,b)\in H\times H`, so :math:`\|\mathbf x\|^2=2` and the overlap
:math:`o=\mathbf x_{(a,b)}^\top\mathbf x_{(a',b')}=[a=a']+[b=b']\in\{0,1,2\}`; the normalised
correlation is :math:`\rho=o/2\in\{0,\tfrac12,1\}`. With Gaussian first-layer weights
:math:`\mathbf w\sim\mathcal N(0,I_{2M})`, :math:`(\mathbf w^\top\mathbf x,\mathbf w^\top
\mathbf x')` is a centred Gaussian pair of variances :math:`s^2=2` and correlation
:math:`\rho`, so the kernel :math:`\mathcal K=\mathbb E[\sigma(\mathbf w^\top\mathbf x)
\sigma(\mathbf w^\top\mathbf x')]` takes three values :math:`k_o=\mathbb E[\sigma(sZ_1)
\sigma(sZ_2)]`, :math:`\mathrm{corr}(Z_1,Z_2)=o/2` (:func:`kernel_values`).

Ordering the :math:`n=M^2` samples as :math:`(a,b)\mapsto aM+b`, the indicator matrices are
:math:`[a=a']=I\otimes J`, :math:`[b=b']=J\otimes I` (:math:`J=\mathbf 1\mathbf 1^\top`), so

.. math:: \mathcal K=k_0\,J\otimes J+(k_1-k_0)(I\otimes J+J\otimes I)
          +(k_2-2k_1+k_0)\,I\otimes I,

with three eigenspaces (:func:`gram_eigenvalues`): :math:`\mathbf 1\otimes\mathbf 1`;
the *marginal* space :math:`\mathbf 1^\perp\otimes\mathbf 1\oplus\mathbf 1\otimes\mathbf
1^\perp` (dimension :math:`2(M-1)`), eigenvalue :math:`\lambda_A=M(k_1-k_0)+k_2-2k_1+k_0`;
the *interaction* space :math:`\mathbf 1^\perp\otimes\mathbf 1^\perp` (dimension
:math:`(M-1)^2`), eigenvalue :math:`\lambda_B=k_2-2k_1+k_0`. Every centred label column
:math:`\tilde{\mathbf y}_c` (indicator of :math:`ab=c` minus its mean) has constant marginal
sums (each :math:`a` has exactly one :math:`b` with :math:`ab=c`), so it lies in the
interaction space (:func:`marginal_part_of_labels`).
"""
from __future__ import annotations

from functools import cache

import sympy as sp

from theory.derivation import Derivation
from theory.li2.gaussian_moments import expect_bivariate, z1, z2

#: The overlaps x^T x' of two group inputs, and the squared norm (the overlap with itself).
OVERLAPS = (0, 1, 2)
SQUARED_NORM = 2
theta = sp.Symbol("theta", real=True)
phi = sp.Symbol("phi", real=True)
r = sp.Symbol("r", positive=True)


@cache
def _relu_polar() -> sp.Expr:
    """The polar integral of :func:`relu_correlation` with the angle :math:`\varphi` left
    symbolic (integrated once)."""
    radial = sp.integrate(r**3 * sp.exp(-r**2 / 2), (r, 0, sp.oo))
    angular = sp.integrate(sp.cos(theta) * sp.cos(theta - phi), (theta, phi - sp.pi / 2,
                                                                    sp.pi / 2))
    return sp.simplify(radial * angular / (2 * sp.pi))


@cache
def relu_correlation(corr: sp.Expr) -> sp.Expr:
    r""":math:`\mathbb E[\mathrm{relu}(Z_1)\mathrm{relu}(Z_2)]` for standard normals of
    correlation ``corr`` in :math:`[-1, 1]`, by integration in polar coordinates: with
    :math:`\cos\varphi=\rho`, :math:`Z_1=R\cos\theta`, :math:`Z_2=R\cos(\theta-\varphi)`
    (:math:`R^2\sim\chi^2_2`, :math:`\theta` uniform), both are positive on
    :math:`\theta\in(\varphi-\pi/2,\pi/2)`.

    >>> relu_correlation(sp.Integer(1)), relu_correlation(sp.Integer(0))
    (1/2, 1/(2*pi))
    """
    return sp.simplify(_relu_polar().subs(phi, sp.acos(corr)))


def square_correlation(corr: sp.Expr) -> sp.Expr:
    r""":math:`\mathbb E[Z_1^2Z_2^2]` for standard normals of correlation ``corr``.

    >>> square_correlation(sp.Rational(1, 2))
    3/2
    """
    return expect_bivariate(z1**2 * z2**2, z1, z2, corr)


#: sigma(s z) = s^degree sigma(z) for both (homogeneous): the kernel scales by s^(2 degree).
ACTIVATIONS = {"x2": (square_correlation, 2), "relu": (relu_correlation, 1)}


@cache
def kernel_values(activation: str) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    r""":math:`(k_0,k_1,k_2)`, the kernel of ``activation`` (``"x2"`` or ``"relu"``) at overlaps
    0, 1, 2 of the group inputs: :math:`s^{2\deg}\,\mathbb E[\sigma(Z_1)\sigma(Z_2)]` at
    :math:`s^2=2`, :math:`\rho=o/2`.

    >>> kernel_values("x2")
    (4, 6, 12)
    """
    correlation, degree = ACTIVATIONS[activation]
    scale = sp.Integer(SQUARED_NORM) ** degree
    return tuple(sp.simplify(scale * correlation(sp.Rational(o, SQUARED_NORM)))
                 for o in OVERLAPS)


def gram_eigenvalues(k: tuple[sp.Expr, sp.Expr, sp.Expr], M: sp.Expr
                     ) -> dict[str, tuple[sp.Expr, sp.Expr]]:
    r"""The eigenvalues of :math:`\mathcal K` on the group task with their multiplicities
    (module docstring): ``"constant"``, ``"marginal"`` (:math:`\lambda_A`), ``"interaction"``
    (:math:`\lambda_B`).

    >>> gram_eigenvalues((4, 6, 12), sp.Integer(5))["marginal"]
    (14, 8)
    """
    k0, k1, k2 = k
    diagonal = k2 - 2 * k1 + k0
    return {"constant": (sp.expand(k0 * M**2 + 2 * (k1 - k0) * M + diagonal), sp.Integer(1)),
            "marginal": (sp.expand((k1 - k0) * M + diagonal), 2 * (M - 1)),
            "interaction": (sp.expand(diagonal), (M - 1) ** 2)}


def kernel_gram(k: tuple[sp.Expr, sp.Expr, sp.Expr], M: int) -> sp.Matrix:
    """The explicit ``M^2 x M^2`` Gram :math:`\\mathcal K_{(a,b),(a',b')}=k_o` from the
    overlaps, samples ordered ``aM + b``."""
    return sp.Matrix(M * M, M * M, lambda i, j: k[(i // M == j // M) + (i % M == j % M)])


def eigenspace_bases(M: int) -> dict[str, list[sp.Matrix]]:
    r"""Bases of the three eigenspaces (not orthogonal): :math:`\mathbf 1\otimes\mathbf 1`;
    :math:`(\mathbf e_0-\mathbf e_i)\otimes\mathbf 1` and :math:`\mathbf 1\otimes(\mathbf e_0-
    \mathbf e_i)`; :math:`(\mathbf e_0-\mathbf e_i)\otimes(\mathbf e_0-\mathbf e_j)`."""
    one = sp.ones(M, 1)

    def diff(i: int) -> sp.Matrix:
        v = sp.zeros(M, 1)
        v[0], v[i] = 1, -1
        return v

    def kron(x: sp.Matrix, y: sp.Matrix) -> sp.Matrix:
        return sp.Matrix([x[a] * y[b] for a in range(M) for b in range(M)])

    return {"constant": [kron(one, one)],
            "marginal": [kron(diff(i), one) for i in range(1, M)]
            + [kron(one, diff(i)) for i in range(1, M)],
            "interaction": [kron(diff(i), diff(j)) for i in range(1, M) for j in range(1, M)]}


@cache
def derive_gram_spectrum(M: int) -> Derivation:
    r"""Check, with symbolic :math:`k_0,k_1,k_2` and the explicit Gram of size :math:`M^2`,
    that each basis vector of :func:`eigenspace_bases` is an eigenvector with the eigenvalue
    of :func:`gram_eigenvalues`, and that the bases together have rank :math:`M^2`."""
    k = sp.symbols("k0 k1 k2")
    K = kernel_gram(k, M)
    eig = gram_eigenvalues(k, sp.Integer(M))
    d = Derivation(f"eigenspaces of the kernel Gram on the group task, M = {M}")
    bases = eigenspace_bases(M)
    for name, vectors in bases.items():
        off = sum(not sp.expand(K * v - eig[name][0] * v).is_zero_matrix for v in vectors)
        d.step(f"{name} space ({len(vectors)} vectors, multiplicity {eig[name][1]}): "
               f"vectors with K v != lambda v:", sp.Integer(off))
    rank = sp.Matrix.hstack(*[v for vs in bases.values() for v in vs]).rank()
    d.step("rank of all basis vectors together (n = M^2 when the spaces span R^n) =",
           sp.Integer(rank))
    return d


def marginal_part_of_labels(table: list[list[int]]) -> sp.Matrix:
    r"""The row and column sums over the grid :math:`(a,b)` of every centred label column
    :math:`\tilde{\mathbf y}_c`, minus their means: zero exactly when each
    :math:`\tilde{\mathbf y}_c` lies in the interaction space (``M x 2M`` rational matrix,
    row :math:`c`)."""
    M = len(table)
    rows = []
    for c in range(M):
        y = [[sp.Integer(int(table[a][b] == c)) - sp.Rational(1, M) for b in range(M)]
             for a in range(M)]
        by_a = [sum(y[a]) for a in range(M)]
        by_b = [sum(y[a][b] for a in range(M)) for b in range(M)]
        rows.append([x - sum(by_a) / M for x in by_a] + [x - sum(by_b) / M for x in by_b])
    return sp.Matrix(rows)
