r"""The Muon direction (Li2 Lemma 2, §6): the inner product of the polar factor with the matrix.

For an SVD :math:`G = U D V^\top` the Muon direction is :math:`\hat G = U V^\top`, and

.. math:: \langle \hat G, G\rangle_F = \operatorname{tr}(V U^\top U D V^\top)
          = \operatorname{tr}(U^\top U\, D\, V^\top V) = \operatorname{tr} D = \|G\|_\ast .

Here the inner product is derived from its definition :math:`\sum_{ij} \hat G_{ij} G_{ij}`,
once for every real 2x2 matrix in angle form and once for symbolic factors of any size.
Also here: why the author's quintic Newton-Schulz steps (verify/claims/li2/SOURCES.md §6.4) can
never flip
the sign of a singular value.
"""
from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

from theory.derivation import Derivation
from theory.matrices import symbolic_matrix


def rotation(angle: sp.Expr) -> sp.Matrix:
    r""":math:`R(\alpha) = \begin{pmatrix}\cos\alpha & -\sin\alpha\\ \sin\alpha & \cos\alpha
    \end{pmatrix}`.

    >>> rotation(sp.Symbol("a"))[1, 0]
    sin(a)
    """
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def frobenius_inner(a: sp.Matrix, b: sp.Matrix) -> sp.Expr:
    r""":math:`\langle A, B\rangle_F = \sum_{ij} A_{ij} B_{ij}` (the definition, not a trace)."""
    if a.shape != b.shape:
        raise ValueError(f"a, b: shapes {a.shape} and {b.shape} differ")
    return sum((x * y for x, y in zip(a, b)), sp.Integer(0))


def derive_polar_inner_product_2x2(reflection: bool) -> Derivation:
    r"""Reduce :math:`\langle UV^\top, UDV^\top\rangle_F` to :math:`d_1 + d_2` for a real 2x2
    :math:`G` in angle form.

    Every real 2x2 matrix has an SVD :math:`G = U\,\mathrm{diag}(d_1, d_2)\,V^\top` with
    :math:`V = R(\varphi)`, :math:`U = R(\theta)` (``reflection=False``, :math:`\det G \ge 0`)
    or :math:`U = R(\theta)\,\mathrm{diag}(1,-1)` (``reflection=True``, :math:`\det G \le 0`),
    and :math:`d_1, d_2 \ge 0`. The reduction uses only expansion and the Pythagorean identity
    :math:`\sin^2 = 1 - \cos^2` in each angle. ``result`` is ``(inner, (d1, d2))``.
    """
    theta, phi = sp.symbols("theta phi", real=True)
    d1, d2 = sp.symbols("d_1 d_2", nonnegative=True)
    name = "R(theta) diag(1,-1)" if reflection else "R(theta)"
    d = Derivation(f"<U V^T, G> for 2x2 G = U diag(d1, d2) V^T, U = {name}, V = R(phi)")
    U = rotation(theta) * (sp.diag(1, -1) if reflection else sp.eye(2))
    V = rotation(phi)
    G = d.step("G = U diag(d1, d2) V^T", U * sp.diag(d1, d2) * V.T)
    G_hat = d.step("Muon direction G_hat = U V^T (drop D from the SVD)", U * V.T)
    inner = d.step("<G_hat, G> = sum_ij G_hat_ij G_ij, expanded",
                   sp.expand(frobenius_inner(G_hat, G)))
    d.step("grouped: every term carries (sin^2 + cos^2) in each angle", sp.factor(inner))
    for angle in (theta, phi):
        inner = d.step(f"sin^2({angle}) -> 1 - cos^2({angle}), expanded",
                       sp.expand(inner.subs(sp.sin(angle)**2, 1 - sp.cos(angle)**2)))
    d.result = (inner, (d1, d2))
    return d


def derive_trace_argument(rows: int, cols: int, rank: int) -> Derivation:
    r"""The general argument of Lemma 2 on symbolic factors of any size.

    :math:`U` (``rows x rank``) and :math:`V` (``cols x rank``) have independent symbolic
    entries and :math:`D = \mathrm{diag}(d_1,\dots,d_r)`. The definition
    :math:`\sum_{ij}(UV^\top)_{ij}(UDV^\top)_{ij}` is expanded as a polynomial; it equals
    :math:`\operatorname{tr}(A D B)` with the Gram matrices :math:`A = U^\top U`,
    :math:`B = V^\top V` for *every* :math:`U, V` (cyclicity of the trace). Orthonormal
    columns, :math:`A = B = I_r`, then leave :math:`\operatorname{tr} D`.

    ``result`` is ``(inner, gram_form, trace_D, U, D, V)``: the expanded definition, the
    Gram form (expanded, in the entries of U and V), the final :math:`\sum_i d_i`, and the
    symbolic factors (so a caller can evaluate the paper's proof expression on them).
    """
    for label, value in (("rows", rows), ("cols", cols), ("rank", rank)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{label}: {value!r} must be an integer >= 1")
    if rank > min(rows, cols):
        raise ValueError(f"rank: {rank} must be <= min(rows, cols) = {min(rows, cols)}")
    d = Derivation(f"<U V^T, U D V^T> = tr D for U {rows}x{rank}, V {cols}x{rank}")
    U, V = symbolic_matrix("U", rows, rank), symbolic_matrix("V", cols, rank)
    sv = sp.symbols(f"d_1:{rank + 1}", nonnegative=True)
    D = sp.diag(*sv)
    inner = d.step("<U V^T, U D V^T> = sum_ij (U V^T)_ij (U D V^T)_ij, expanded",
                   sp.expand(frobenius_inner(U * V.T, U * D * V.T)))
    A = symbolic_matrix("A", rank, rank)
    B = symbolic_matrix("B", rank, rank)
    trace_adb = d.step("cyclicity: tr(V U^T U D V^T) = tr(A D B), A = U^T U, B = V^T V",
                       (A * D * B).trace())
    gram_form = d.step("tr(A D B) with A, B written out in the entries of U and V",
                       sp.expand(trace_adb.subs(_entries(A, U.T * U) | _entries(B, V.T * V))))
    trace_d = d.step("orthonormal columns: A = B = I_r leaves tr D",
                     sp.expand(trace_adb.subs(_entries(A, sp.eye(rank))
                                              | _entries(B, sp.eye(rank)))))
    d.step("singular values d_i >= 0, so tr D = sum_i |d_i| = ||G||_* >= 0", trace_d)
    d.result = (inner, gram_form, trace_d, U, D, V)
    return d


def _entries(symbols: sp.Matrix, values: sp.Matrix) -> dict[sp.Symbol, sp.Expr]:
    return dict(zip(symbols, values))


def derive_newton_schulz_sign(coefficients: Sequence[tuple[sp.Rational, sp.Rational,
                                                          sp.Rational]]) -> Derivation:
    r"""Whether quintic Newton-Schulz steps keep every singular value positive.

    A step :math:`X \mapsto aX + b(XX^\top)X + c(XX^\top)^2X` acts on each singular value
    as :math:`\varphi(x) = x\,(a + b t + c t^2)` with :math:`t = x^2`; it maps :math:`x > 0`
    to :math:`\varphi(x) > 0` when :math:`a > 0, c > 0` and the quadratic has no real root,
    i.e. :math:`b^2 - 4ac < 0`. If every step does, :math:`\mathrm{NS}(G) = U p(D) V^\top`
    with :math:`p > 0` on :math:`(0, \infty)`, so
    :math:`\langle \mathrm{NS}(G), G\rangle = \sum_i p(d_i) d_i > 0` for :math:`G \ne 0`.
    ``result`` is True when every step is sign-preserving in this sense (a sufficient
    condition, exact in rational arithmetic).
    """
    if not coefficients:
        raise ValueError("coefficients: at least one (a, b, c) step is needed")
    d = Derivation("sign of each quintic Newton-Schulz step on a singular value x > 0")
    t = sp.Symbol("t", nonnegative=True)
    preserving = True
    for k, (a, b, c) in enumerate(coefficients, start=1):
        a, b, c = (sp.nsimplify(v, rational=True) for v in (a, b, c))
        disc = b**2 - 4 * a * c
        ok = bool(a > 0 and c > 0 and disc < 0)
        preserving &= ok
        d.step(f"step {k}: phi(x)/x in t = x^2; b^2 - 4ac = {disc} "
               f"{'< 0 with a, c > 0: positive for every x' if ok else 'allows a sign change'}",
               a + b * t + c * t**2)
    d.result = preserving
    return d
